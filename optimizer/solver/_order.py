"""Topological order and separators of the layer-group graph: where every path passes one group, so the
exact model and the decomposition both know which groups no loadable can span."""

from __future__ import annotations

import heapq

from optimizer.errors import InfeasibleError
from optimizer.fusion import GroupGraph


def topological_order(groups: GroupGraph) -> list[int]:
    """Group indices in a topological order, smallest index first among the ready ones (deterministic)."""
    n = len(groups.groups)
    succ: dict[int, list[int]] = {}
    indegree = [0] * n
    for a, b in groups.group_edges():
        succ.setdefault(a, []).append(b)
        indegree[b] += 1
    ready = [g for g in range(n) if indegree[g] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        g = heapq.heappop(ready)
        order.append(g)
        for b in succ.get(g, ()):
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    if len(order) != n:
        raise InfeasibleError("the layer-group graph has a cycle; it cannot be split into regions")
    return order


def separators(groups: GroupGraph, order: list[int]) -> list[int]:
    """Positions p in `order` whose group every path passes: no edge from before p to after p."""
    position = {g: p for p, g in enumerate(order)}
    reach = [p for p in range(len(order))]  # the furthest position each position's group feeds
    for a, b in groups.group_edges():
        reach[position[a]] = max(reach[position[a]], position[b])
    out, furthest = [], -1
    for p in range(len(order)):
        if furthest <= p:
            out.append(p)
        furthest = max(furthest, reach[p])
    return out
