"""Subgraphs: the units that get built. One per DLA loadable; other devices' groups merge into
convex connected regions (no path leaves a region and re-enters it), so the regions run in order."""

from __future__ import annotations

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
    """Is b reachable from a other than by the direct edge? Then merging a and b would make a cycle."""
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


def build_subgraphs(groups: GroupGraph, placements: tuple[Placement, ...]) -> tuple[Subgraph, ...]:
    n = len(placements)
    c = Contraction(n, groups.group_edges())
    for slot in sorted({p.loadable for p in placements if p.loadable >= 0}):
        members = [g for g, p in enumerate(placements) if p.loadable == slot]
        for g in members[1:]:  # the solver made each loadable convex and connected
            c.merge(members[0], g)
    mergeable = [p.loadable < 0 for p in placements]
    queue = sorted(range(n), reverse=True)
    while queue:
        a = c.find(queue.pop())
        for b in sorted(c.succ.get(a, ())):
            if not (mergeable[a] and mergeable[b]) or placements[a].device != placements[b].device:
                continue
            if not _other_path(c, a, b):
                queue.append(c.merge(a, b))
                break
    members: dict[int, list[int]] = {}
    for g in range(n):
        members.setdefault(c.find(g), []).append(g)
    indeg = {u: len(c.pred[u]) for u in members}
    ready = sorted(u for u, d in indeg.items() if d == 0)
    order = []
    while ready:
        u = ready.pop(0)
        order.append(u)
        for v in sorted(c.succ[u]):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
                ready.sort()
    order += sorted(set(members) - set(order))  # only a non-convex loadable leaves units unordered
    return tuple(Subgraph(id=k, device=placements[u].device, groups=tuple(sorted(members[u])),
                          loadable=placements[u].loadable) for k, u in enumerate(order))
