"""Subgraphs: the units that get built. One per DLA loadable; other devices' groups merge into
convex connected regions (no path leaves a region and re-enters it), so the regions run in order.

The merge is greedy in group order. Whether a and b may merge ("is there another path from a to b?")
is answered within a topological order of the contracted graph: only units placed before b can lie on
such a path, so the search stays between a and b, and each merge repairs the order locally (the units
between a and b that lead to b move before the merged unit, those reachable from a after it). Each
answer is the one an unbounded search gives, so the regions are the same, in near-linear time."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from optimizer.fusion import Contraction, GroupGraph
from optimizer.latency import Placement


@dataclass(frozen=True)
class Subgraph:
    id: int
    device: str
    groups: tuple[int, ...]
    loadable: int  # DLA slot, -1 elsewhere


def _other_path(c: Contraction, a: int, b: int) -> bool:
    """Is b reachable from a other than by the direct edge? (Unbounded: for a contracted graph with a
    cycle, which only a non-convex loadable makes, where no topological order exists.)"""
    stack = [n for n in c.succ[a] if n != b]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n == b:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(c.succ[n])
    return False


def _positions(c: Contraction, units: list[int]) -> dict[int, int] | None:
    """A topological position per unit (smallest index first among the ready ones), None on a cycle."""
    indeg = {u: len(c.pred[u]) for u in units}
    ready = [u for u in units if indeg[u] == 0]
    heapq.heapify(ready)
    pos: dict[int, int] = {}
    while ready:
        u = heapq.heappop(ready)
        pos[u] = len(pos)
        for v in c.succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    return pos if len(pos) == len(units) else None


def _reach_before(c: Contraction, pos: dict[int, int], a: int, b: int) -> set[int] | None:
    """The units reachable from a that sit before b; None when one of them leads to b (another path)."""
    limit = pos[b]
    seen: set[int] = set()
    stack = [s for s in c.succ[a] if s != b and pos[s] < limit]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        for y in c.succ[x]:
            if y == b:
                return None
            if pos[y] < limit and y not in seen:
                stack.append(y)
    return seen


def _merge(c: Contraction, pos: dict[int, int], a: int, b: int, forward: set[int]) -> int:
    """Contracts a->b and keeps pos topological: b's ancestors after a first, the merged unit, then the
    units reachable from a, in the slots these units held (ancestors move earlier, descendants later)."""
    low = pos[a]
    backward: set[int] = set()
    stack = [p for p in c.pred[b] if pos[p] > low]
    while stack:
        x = stack.pop()
        if x not in backward:
            backward.add(x)
            stack.extend(p for p in c.pred[x] if pos[p] > low and p not in backward)
    slots = sorted([low, pos[b], *(pos[x] for x in backward), *(pos[x] for x in forward)])
    first = sorted(backward, key=pos.__getitem__)
    last = sorted(forward, key=pos.__getitem__)
    root = c.merge(a, b)
    del pos[b if root == a else a]
    for slot, x in zip(slots, first):
        pos[x] = slot
    pos[root] = slots[len(first)]
    for slot, x in zip(slots[len(slots) - len(last):], last):
        pos[x] = slot
    return root


def build_subgraphs(groups: GroupGraph, placements: tuple[Placement, ...]) -> tuple[Subgraph, ...]:
    n = len(placements)
    c = Contraction(n, groups.group_edges())
    for slot in sorted({p.loadable for p in placements if p.loadable >= 0}):
        slot_members = [g for g, p in enumerate(placements) if p.loadable == slot]
        for g in slot_members[1:]:  # the solver made each loadable convex and connected
            c.merge(slot_members[0], g)
    mergeable = [p.loadable < 0 for p in placements]
    device = [p.device for p in placements]
    pos = _positions(c, [g for g in range(n) if c.find(g) == g])
    queue = sorted(range(n), reverse=True)
    while queue:
        a = c.find(queue.pop())
        for b in sorted(c.succ.get(a, ())):
            if not (mergeable[a] and mergeable[b]) or device[a] != device[b]:
                continue
            if pos is None:
                if not _other_path(c, a, b):
                    queue.append(c.merge(a, b))
                    break
                continue
            forward = _reach_before(c, pos, a, b)
            if forward is not None:
                queue.append(_merge(c, pos, a, b, forward))
                break
    members: dict[int, list[int]] = {}
    for g in range(n):
        members.setdefault(c.find(g), []).append(g)
    indeg = {u: len(c.pred[u]) for u in members}
    ready = sorted(u for u, d in indeg.items() if d == 0)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in c.succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    order += sorted(set(members) - set(order))  # only a non-convex loadable leaves units unordered
    return tuple(Subgraph(id=k, device=placements[u].device, groups=tuple(sorted(members[u])),
                          loadable=placements[u].loadable) for k, u in enumerate(order))
