"""Latency plans past the exact model's size: regions between cut groups, each solved exactly, then a
knapsack over regions for the shared loadable budget.

A cut group is one that every path through its position in a topological order passes (no edge jumps over
it), held on its cheapest non-DLA option. The regions between consecutive cuts then share nothing but the
cut groups: every edge lies inside one region (counted in the region of its consumer), no path leaves a
region and comes back (so a loadable inside a region is convex and connected for the whole graph too), and
the latency is the sum of the regions'. Each region is solved by the exact model with at most k loadables
for a few k, and a knapsack picks one solution per region with at most the plan's loadables in all.

The bound stays honest: each region's LP relaxation with its cut groups free, the left cut's option cost
left to the region before, so every option and edge is counted once and the sum bounds every plan of the
whole graph (fixing the cuts only restricts the plans searched, never the bound).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from optimizer.catalog import Catalog
from optimizer.check import CheckReport
from optimizer.enums import PRECISIONS
from optimizer.errors import InfeasibleError
from optimizer.fusion import Edge, GroupGraph, topological_order
from optimizer.latency import LatencyModel, Placement, evaluate, group_options
from optimizer.solver._bounds import cheapest_bound_ns, lp_bound_ns
from optimizer.solver._cpsat import PlanModel, SolveResult
from optimizer.solver._outcome import Budget, Outcome, Stop
from optimizer.solver._request import PlanRequest

MIN_SHARE_S = 0.05  # deterministic seconds a region solve needs to be worth building (a 100-group one: 0.1 s)
REGION_GROUPS = 100  # groups per region: the exact model proves one in about 0.1 s (400: nothing found in 0.5 det s)


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


def _held_option(lm: LatencyModel, g: int, request: PlanRequest) -> Placement | None:
    """The cheapest option off the DLA (a cut group holds no loadable), None if it has none."""
    group = lm.groups.groups[g]
    options = [o for o in group_options(lm, g, request.allowed_precisions)
               if o.device != "dla" and o.edit is None and (request.sparsity != "off" or o.sparsity == "dense")]
    if not options:
        return None
    return Placement(min(options, key=lambda o: (lm.option_ns(group, o), o.device, o.precision)))


def choose_cuts(lm: LatencyModel, order: list[int], request: PlanRequest, size: int,
                prefer: tuple[Placement, ...] | None = None) -> list[int]:
    """Cut positions about `size` apart: in the last half of each window, a separator whose group has no DLA
    option (an exact cut) if there is one, else the one whose held option costs least over its cheapest.
    With `prefer` (the best baseline), separators it keeps off the DLA come first."""
    seps = [p for p in separators(lm.groups, order) if 0 < p < len(order) - 1
            and _held_option(lm, order[p], request) is not None]

    cuts: list[int] = []
    start, k = 0, 0
    while k < len(seps):
        if len(order) - start <= size:
            break
        window = []
        while k < len(seps) and seps[k] - start <= size:
            if seps[k] - start >= size // 2:
                window.append(seps[k])
            k += 1
        if not window:
            if k < len(seps):  # no separator in the window's second half: cut at the next one
                window = [seps[k]]
                k += 1
            else:
                break

        def penalty(p: int) -> tuple[int, int, int, int]:
            g = order[p]
            held = _held_option(lm, g, request)
            assert held is not None
            options = group_options(lm, g, request.allowed_precisions)
            dla = any(o.device == "dla" for o in options)
            group = lm.groups.groups[g]
            cheapest = min(lm.option_ns(group, o) for o in options)
            on_dla = prefer is not None and prefer[g].option.device == "dla"
            return (int(on_dla), int(dla), lm.option_ns(group, held.option) - cheapest, -p)

        cut = min(window, key=penalty)
        cuts.append(cut)
        start = cut
        k = bisect.bisect_right(seps, cut)
    return cuts


class _LocalIndex(Mapping[str, int]):
    """node -> its group's position in a region, -1 outside the region (read as "not a runtime producer")."""

    def __init__(self, node_group: Mapping[str, int], local: Mapping[int, int]) -> None:
        self.node_group = node_group
        self.local = local

    def __getitem__(self, node: str) -> int:
        return self.local.get(self.node_group[node], -1)

    def __iter__(self) -> Iterator[str]:
        return iter(self.node_group)

    def __len__(self) -> int:
        return len(self.node_group)


@dataclass(frozen=True)
class Region:
    members: tuple[int, ...]  # global group indices, in topological order; cuts at the ends
    model: LatencyModel
    held: Mapping[int, Placement]  # cut groups (global index) and the option they are held on
    lp_ns: int  # LP bound of this region's share of the objective (left cut's option cost not counted)
    left_ns: int  # the left cut's option cost: with lp_ns and the per-inference cost, the region's floor
    without_dla_ns: int | None  # the same LP share for plans that leave the DLA unused (None: some group needs it)


def _region(lm: LatencyModel, members: list[int], held: Mapping[int, Placement], first: bool,
            request: PlanRequest, into: Mapping[int, list[int]]) -> Region:
    local = {g: k for k, g in enumerate(members)}
    inside = members[0 if first else 1:]  # edges are counted in the region of their consumer
    kept = sorted(i for g in inside for i in into.get(g, ()))  # in the whole graph's order
    edges = tuple(Edge(e.tensor, local[e.src] if e.src >= 0 else -1, local[e.dst])
                  for e in (lm.groups.edges[i] for i in kept) if e.src < 0 or e.src in local)
    outputs = {t: local[g] for t, g in lm.groups.outputs.items() if g in local}
    sub = GroupGraph(lm.graph, tuple(lm.groups.groups[g] for g in members), edges,
                     _LocalIndex(lm.groups.node_group, local), outputs)
    model = LatencyModel(sub, lm.catalog, lm.target, lm.profile, lm.sram_bytes, io=lm.io,
                         standalone=lm.capability == "standalone", batch=lm.batch, io_costs=lm.io_costs,
                         loadable_sram=lm.loadable_sram, tf32=lm.tf32, pass_through=lm.pass_through)
    model._works = lm._works  # the same groups cost the same: share the memo (keyed by global group index)
    model._elements = lm._elements
    uncounted = frozenset() if first else frozenset({0})
    free = replace(request, pins={})
    lp = lp_bound_ns(model, free, uncounted=uncounted)
    lp_ns = (lp - model.inference_ns()) if lp is not None else 0
    without = lp_bound_ns(model, free, uncounted=uncounted, without_dla=True)
    without_ns = (without - model.inference_ns()) if without is not None else None
    cut = held.get(members[0]) if not first else None
    # a DLA cut's cost depends on its loadable's SRAM pool when slots have their own: no floor share then
    left = 0 if cut is None or (cut.option.device == "dla" and lm.loadable_sram) else \
        lm.option_ns(lm.groups.groups[members[0]], cut.option)
    return Region(tuple(members), model, held, max(lp_ns, 0), left, without_ns)


def regions(lm: LatencyModel, request: PlanRequest, size: int = REGION_GROUPS,
            prefer: tuple[Placement, ...] | None = None) -> list[Region]:
    """Regions of at most about `size` groups; a cut is held as `prefer` places it (on the DLA too: its
    loadable then joins the two regions' loadables holding it), else on its cheapest option off the DLA, so
    that `prefer` itself stays among the plans the regions can return."""
    order = topological_order(lm.groups)
    cuts = choose_cuts(lm, order, request, size, prefer)
    held = {}
    for p in cuts:
        g = order[p]
        option = Placement(prefer[g].option, prefer[g].core) if prefer is not None else _held_option(lm, g, request)
        if option is not None:
            held[g] = option
    bounds = [0, *cuts, len(order) - 1]
    into: dict[int, list[int]] = {}  # consumer group -> the indices of its edges
    for i, e in enumerate(lm.groups.edges):
        into.setdefault(e.dst, []).append(i)
    out = []
    for r in range(len(bounds) - 1):
        members = order[bounds[r]:bounds[r + 1] + 1] if r < len(bounds) - 2 else order[bounds[r]:]
        out.append(_region(lm, members, {g: held[g] for g in members if g in held}, r == 0, request, into))
    return out


@dataclass(frozen=True)
class _Option:
    loadables: int
    cost_ns: int
    placements: tuple[Placement, ...]  # region-local
    proven: bool


def _solve_region(region: Region, report: CheckReport, catalog: Catalog, request: PlanRequest, k: int,
                  budget: Budget, share_s: float, hint: tuple[Placement, ...]) -> _Option | None:
    pins = {region.model.groups.groups[local].anchor: h.option.device
            for local, g in enumerate(region.members) if (h := region.held.get(g)) is not None}
    sub_request = replace(request, pins=pins, max_loadables=k, deterministic_limit_s=None)
    phase = Budget(budget.time_limit_s, deterministic_s=max(min(share_s, budget.deterministic_left()), 1e-3))
    phase.deadline = budget.deadline
    try:
        floor = region.lp_ns + region.left_ns + region.model.inference_ns()
        hint_ns = evaluate(region.model, hint).total_ns
        result = PlanModel(region.model, report, catalog, sub_request).solve(hint, phase, floor, hint_ns)
    except InfeasibleError:
        return None
    finally:
        budget.used_s += phase.used_s
        budget.wall_fired = budget.wall_fired or phase.wall_fired
    if result.outcome is Outcome.NOT_FOUND:
        return None
    cost = evaluate(region.model, result.placements).total_ns
    return _Option(len({p.loadable for p in result.placements if p.loadable >= 0}), cost, result.placements,
                   result.outcome is Outcome.EXACT)


def _knapsack(options: list[list[_Option]], limit: int) -> list[_Option]:
    """One option per region, at most `limit` loadables in all, least total cost (ties: earlier options)."""
    best: dict[int, tuple[int, list[int]]] = {0: (0, [])}
    for region_options in options:
        nxt: dict[int, tuple[int, list[int]]] = {}
        for used, (cost, picks) in sorted(best.items()):
            for i, option in enumerate(region_options):
                total = used + option.loadables
                if total > limit:
                    continue
                candidate = (cost + option.cost_ns, [*picks, i])
                if total not in nxt or candidate < nxt[total]:
                    nxt[total] = candidate
        best = nxt
    _, picks = min(best.values())
    return [region_options[i] for region_options, i in zip(options, picks)]


def _dla_cuts(region: Region) -> list[int]:
    """Region-local positions of the cuts held on the DLA (the first and/or the last member)."""
    return [k for k, g in enumerate(region.members) if g in region.held and region.held[g].option.device == "dla"]


def _part(region: Region, plan: tuple[Placement, ...]) -> _Option | None:
    """A whole plan's share of a region, when it holds the region's cuts as the region does."""
    local = tuple(plan[g] for g in region.members)
    if any(plan[g].option != h.option or plan[g].core != h.core for g, h in region.held.items()):
        return None
    return _labelled(region, local, False)


def _labelled(region: Region, local: tuple[Placement, ...], proven: bool) -> _Option:
    """Loadables numbered 0.. by first member; a DLA cut without a loadable (the fall-back plan) gets its own."""
    free = max((p.loadable for p in local), default=-1) + 1
    for k in _dla_cuts(region):
        if local[k].loadable < 0:
            local = tuple(Placement(p.option, p.core, free) if i == k else p for i, p in enumerate(local))
            free += 1
    slots = sorted({p.loadable for p in local if p.loadable >= 0},
                   key=lambda s: min(i for i, p in enumerate(local) if p.loadable == s))
    label = {s: k for k, s in enumerate(slots)}
    local = tuple(Placement(p.option, p.core, label[p.loadable]) if p.loadable >= 0 else p for p in local)
    return _Option(len(slots), evaluate(region.model, local).total_ns, local, proven)


def decomposed_solve(lm: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest,
                     start: tuple[Placement, ...], limit: int, budget: Budget, size: int | None = None,
                     prefer: tuple[Placement, ...] | None = None) -> tuple[SolveResult, int]:
    """The latency plan by regions, and how many regions; `start` is a valid plan without loadables (the
    all-GPU baseline) each region falls back to, `prefer` a valid plan (the best baseline) whose cut
    placements the regions hold, so that it stays among the plans they can return. A cut held on the DLA
    joins one loadable of each of its two regions, so the plan has (sum of the regions' loadables) - (such
    cuts) loadables. EXACT only when the plan meets the bound; `bound_ns` is the bound itself."""
    size = size or REGION_GROUPS
    parts = regions(lm, request, size, prefer)
    shared = sum(len(_dla_cuts(r)) for r in parts) // 2  # each DLA cut is in two regions
    options: list[list[_Option]] = []
    for region in parts:
        local = tuple(region.held.get(g, start[g]) for g in region.members)
        options.append([_labelled(region, local, False)])
        kept = _part(region, prefer) if prefer is not None else None
        if kept is not None and kept.cost_ns < options[-1][0].cost_ns:
            options[-1].append(kept)
    candidates = [r for r, region in enumerate(parts)
                  if limit and len(region.members) <= 4 * size
                  and any(o.device == "dla" for g in range(len(region.members))
                          for o in group_options(region.model, g, request.allowed_precisions))]
    # As many solves as the budget gives MIN_SHARE_S each (building a model for less finds nothing), the
    # regions whose fall-back plans lie furthest above their floors first: a function of the graph only.
    affordable = max(int(budget.deterministic_left() / MIN_SHARE_S) - min(limit, len(candidates)), 0)
    if len(candidates) > affordable:
        def room(r: int) -> tuple[int, int]:
            floor = parts[r].lp_ns + parts[r].left_ns + parts[r].model.inference_ns()
            return (floor - min(o.cost_ns for o in options[r]), r)

        candidates = sorted(sorted(candidates, key=room)[:affordable])
    solves = len(candidates) + min(limit, len(candidates))
    for r in candidates:  # one loadable more than the DLA cuts need
        share = budget.deterministic_left() / max(solves, 1)
        solves -= 1
        k = len(_dla_cuts(parts[r])) + 1
        warm = min(options[r], key=lambda o: (o.cost_ns, o.loadables))
        found = _solve_region(parts[r], report, catalog, request, k, budget, share, warm.placements)
        if found is not None and found.cost_ns < min(o.cost_ns for o in options[r] if o.loadables <= k):
            options[r].append(found)
    gains = sorted(candidates, key=lambda r: (min(o.cost_ns for o in options[r]) - options[r][0].cost_ns, r))
    for r in gains[:limit] if limit > 1 else []:  # the regions that gain most may use every loadable
        if len(options[r]) < 2:
            continue
        share = budget.deterministic_left() / max(solves, 1)
        solves -= 1
        k = len(_dla_cuts(parts[r])) + limit
        warm = min(options[r], key=lambda o: (o.cost_ns, o.loadables))
        found = _solve_region(parts[r], report, catalog, request, k, budget, share, warm.placements)
        if found is not None and found.cost_ns < warm.cost_ns:
            options[r].append(found)
    picks = _knapsack(options, limit + shared)
    plan = _assemble(parts, picks, start)
    objective = evaluate(lm, plan).total_ns
    bound = max(cheapest_bound_ns(lm, request), _regions_bound(lm, parts))
    exact = objective <= bound
    return SolveResult(placements=plan, status="OPTIMAL" if exact else "FEASIBLE", objective_ns=objective,
                       bound_ns=bound, total_ns=objective, wall_s=0.0, iterations=0,
                       num_variables=0, num_constraints=0, choices=tuple(() for _ in plan),
                       outcome=Outcome.EXACT if exact else Outcome.BEST_FOUND,
                       stop=budget.stop(Stop.PROVEN if exact else Stop.DETERMINISTIC_LIMIT),
                       deterministic_s=round(budget.used_s, 6)), len(parts)


def _regions_bound(lm: LatencyModel, parts: list[Region]) -> int:
    """Every edge and option counted once over the regions' LPs, raised as latency_lp_ns raises the LP: a plan
    using the DLA pays at least one launch, one that does not is bounded by the LPs without DLA options."""
    lp = sum(r.lp_ns for r in parts)
    launch = lm.launch_ns() if lm.backend.loadables else 0
    if launch > 0 and any(any(o.device == "dla" for g in range(len(r.members))
                              for o in group_options(r.model, g, frozenset(PRECISIONS))) for r in parts):
        without = [r.without_dla_ns for r in parts]
        raised = lp + launch
        lp = raised if any(w is None for w in without) else min(raised, max(sum(w or 0 for w in without), lp))
    return lp + lm.inference_ns()


def _assemble(parts: list[Region], picks: list[_Option], start: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """The regions' plans as one: a DLA cut's loadable continues the one holding it in the region before;
    loadables numbered 0.. by their first group, as the exact model numbers them."""
    placements: list[Placement] = list(start)
    carried: dict[int, int] = {}  # DLA cut (global group) -> its loadable's global label
    label = 0
    for region, pick in zip(parts, picks):
        local_to_global: dict[int, int] = {}
        for k in _dla_cuts(region):
            g = region.members[k]
            if g in carried:
                local_to_global[pick.placements[k].loadable] = carried[g]
        for s in sorted({p.loadable for p in pick.placements if p.loadable >= 0}):
            if s not in local_to_global:
                local_to_global[s] = label
                label += 1
        for g, p in zip(region.members, pick.placements):
            placements[g] = Placement(p.option, p.core, local_to_global[p.loadable]) if p.loadable >= 0 else p
        for k in _dla_cuts(region):
            carried[region.members[k]] = local_to_global[pick.placements[k].loadable]
    order = sorted({p.loadable for p in placements if p.loadable >= 0},
                   key=lambda s: min(g for g, p in enumerate(placements) if p.loadable == s))
    renumber = {old: new for new, old in enumerate(order)}
    return tuple(Placement(p.option, p.core, renumber[p.loadable]) if p.loadable >= 0 else p for p in placements)
