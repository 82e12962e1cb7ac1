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

from optimizer.fusion import Contraction, GroupGraph, merge_if_convex, topological_positions
from optimizer.latency import Placement


@dataclass(frozen=True)
class Subgraph:
    id: int
    device: str
    groups: tuple[int, ...]
    loadable: int  # DLA slot, -1 elsewhere


def build_subgraphs(groups: GroupGraph, placements: tuple[Placement, ...]) -> tuple[Subgraph, ...]:
    n = len(placements)
    c = Contraction(n, groups.group_edges())
    for slot in sorted({p.loadable for p in placements if p.loadable >= 0}):
        slot_members = [g for g, p in enumerate(placements) if p.loadable == slot]
        for g in slot_members[1:]:  # the solver made each loadable convex and connected
            c.merge(slot_members[0], g)
    mergeable = [p.loadable < 0 for p in placements]
    device = [p.device for p in placements]
    pos = topological_positions(c, [g for g in range(n) if c.find(g) == g])
    queue = sorted(range(n), reverse=True)
    while queue:
        a = c.find(queue.pop())
        for b in sorted(c.succ.get(a, ())):
            if not (mergeable[a] and mergeable[b]) or device[a] != device[b]:
                continue
            root = merge_if_convex(c, pos, a, b)
            if root is not None:
                queue.append(root)
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
