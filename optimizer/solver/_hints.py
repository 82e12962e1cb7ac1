"""A load-balanced starting plan for the pipelined objectives, from a baseline's loadables.

The all-GPU baseline is a poor start for balancing engines, and TensorRT's default puts every loadable on
DLA0. Moving whole loadables between DLA0, DLA1 and the GPU keeps every loadable convex and connected (no
new path leaves one and re-enters it), so each step stays a valid plan; a greedy descent on the objective
the solver minimises (scored by the evaluator) gives CP-SAT a hint near a balanced pipeline.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping

import numpy as np

from optimizer.enums import PRECISIONS
from optimizer.fusion import topological_order
from optimizer.latency import (
    Breakdown,
    LatencyModel,
    Option,
    Placement,
    evaluate,
    group_options,
    reformat_engine,
    tensor_routes,
    transfer_engine,
)
from optimizer.solver._cpsat import components, group_neighbours


def _on_gpu(lm: LatencyModel, g: int, allowed: frozenset[str]) -> Placement | None:
    group = lm.groups.groups[g]
    options = [o for o in group_options(lm, g, allowed) if o.device == "gpu" and o.edit is None]
    return Placement(min(options, key=lambda o: (lm.option_ns(group, o), o.precision))) if options else None


def balanced_hint(lm: LatencyModel, start: tuple[Placement, ...], allowed: frozenset[str],
                  score: Callable[[Breakdown], int], cores: int) -> tuple[Placement, ...]:
    """Greedy descent over whole loadables: each move puts one loadable on another DLA core or on the GPU;
    the best improving move is taken until none improves. Deterministic (moves tried in slot order)."""
    current = start
    best = score(evaluate(lm, current))
    while True:
        slots = sorted({p.loadable for p in current if p.loadable >= 0})
        moves = []
        for slot in slots:
            members = [g for g, p in enumerate(current) if p.loadable == slot]
            core = current[members[0]].core
            for target_core in range(cores):
                if target_core != core:
                    moves.append(tuple(Placement(p.option, target_core, p.loadable) if p.loadable == slot else p
                                       for p in current))
            gpu = {g: _on_gpu(lm, g, allowed) for g in members}
            if all(p is not None for p in gpu.values()):
                moves.append(tuple(gpu.get(g) or p for g, p in enumerate(current)))
        scored = [(score(evaluate(lm, m)), k, m) for k, m in enumerate(moves)]
        if not scored:
            return current
        value, _, move = min(scored)
        if value >= best:
            return _relabel(current)
        current, best = move, value


def _relabel(placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """Loadables numbered 0.. in order of their first group (slots freed by moves to the GPU close up)."""
    order = sorted({p.loadable for p in placements if p.loadable >= 0},
                   key=lambda s: min(g for g, p in enumerate(placements) if p.loadable == s))
    label = {old: new for new, old in enumerate(order)}
    return tuple(Placement(p.option, p.core, label[p.loadable]) if p.loadable >= 0 else p for p in placements)


# Interval hint: makespans tried (geometric, from a fair share of the all-GPU time up to all of it), the DP's
# Lagrange weights (GPU time saved against DLA time spent), how many candidate plans the evaluator scores, and
# how far the refinement moves an interval's ends.
INTERVAL_TARGETS = 24
INTERVAL_WEIGHTS = (0.05, 0.3)
INTERVAL_SCORED = 8
INTERVAL_STEPS = 3
INTERVAL_MAX = 8  # loadables the DP places at most (TensorRT 11 allows 16 per core; a pipeline needs few)
INTERVAL_MAX_GROUPS = 400  # the DP time grows as n^2 (0.6 CPU s at 318 groups, rtdetr_l)


def _fastest(lm: LatencyModel, g: int, device: str, allowed: frozenset[str]) -> Option | None:
    """The fastest dense option on the device; on a tie the lowest precision, the one the exact model keeps
    when precisions are monotone (optimizer.solver._cpsat.dominant_precisions), so the hint stays in its model."""
    group = lm.groups.groups[g]
    options = [o for o in group_options(lm, g, allowed) if o.device == device and o.edit is None
               and o.sparsity == "dense" and o.cores == 1]
    return min(options, key=lambda o: (lm.option_ns(group, o), PRECISIONS.index(o.precision))) if options else None


class _Intervals:
    """Costs of putting one interval [i, j] of the topological order on a DLA core, everything else on the
    GPU: the GPU time it saves (its groups' GPU time less the copies and precision changes at its border,
    which TensorRT runs on the GPU) and the DLA time it takes. Border costs are 2-D rectangles in (i, j), so
    all intervals' costs come from one difference array."""

    def __init__(self, lm: LatencyModel, order: list[int], gpu: list[Option], dla: list[Option | None],
                 launch: float, cores: int) -> None:
        n = len(order)
        self.launch = launch
        self.cores = cores
        pos = {g: p for p, g in enumerate(order)}
        groups = lm.groups.groups
        gpu_ns = np.array([lm.option_ns(groups[g], gpu[g]) for g in order], dtype=float)
        dla_ns = np.array([lm.option_ns(groups[g], o) if (o := dla[g]) is not None else math.inf for g in order])
        self.gpu_prefix = np.concatenate(([0.0], np.cumsum(gpu_ns)))
        finite = np.where(np.isfinite(dla_ns), dla_ns, 0.0)
        self.dla_prefix = np.concatenate(([0.0], np.cumsum(finite)))
        # the first position at or after p that cannot run on the DLA
        blocked = np.full(n + 1, n)
        for p in range(n - 1, -1, -1):
            blocked[p] = p if not np.isfinite(dla_ns[p]) else blocked[p + 1]
        self.blocked = blocked
        border = np.zeros((n + 1, n + 1))

        def add(i0: int, i1: int, j0: int, j1: int, value: float) -> None:
            if value and i0 <= i1 and j0 <= j1:
                border[i0, j0] += value
                border[i0, j1 + 1] -= value
                border[i1 + 1, j0] -= value
                border[i1 + 1, j1 + 1] += value

        for tensor, src, consumers in tensor_routes(lm):
            if src < 0:
                continue
            s = pos[src]
            cs = sorted(pos[v] for v in consumers)
            src_dla = dla[src]
            if src_dla is not None:  # produced inside, consumed after the interval: one copy out
                add(0, s, s, cs[-1] - 1, lm.transfer(tensor, "dla", "gpu", src_dla.precision)[1])
            copy_in = lm.transfer(tensor, "gpu", "dla", gpu[src].precision)[1]
            for r, c in enumerate(cs):  # produced before, first consumed inside at c: one copy in
                add(s + 1 if r == 0 else cs[r - 1] + 1, c, c, n - 1, copy_in)
            change = lm.precision_change_ns(tensor)
            for v in consumers:
                c, dst_dla = pos[v], dla[v]
                base = change * (gpu[src].precision != gpu[v].precision)
                if src_dla is not None and dst_dla is not None:
                    add(0, s, c, n - 1, change * (src_dla.precision != dst_dla.precision) - base)
                if src_dla is not None:
                    add(0, s, s, c - 1, change * (src_dla.precision != gpu[v].precision) - base)
                if dst_dla is not None:
                    add(s + 1, c, c, n - 1, change * (gpu[src].precision != dst_dla.precision) - base)
        self.border = border.cumsum(axis=0).cumsum(axis=1)[:n, :n]
        self.n = n
        self.gpu_total = float(self.gpu_prefix[-1])

    def saved(self, i: int, j: int) -> float:
        return float(self.gpu_prefix[j + 1] - self.gpu_prefix[i] - self.border[i, j])

    def dla(self, i: int, j: int) -> float:
        return float(self.dla_prefix[j + 1] - self.dla_prefix[i])

    def busiest(self, intervals: tuple[tuple[int, int], ...], on: tuple[int, ...]) -> tuple[float, float]:
        """(busiest engine, all engines' time) of a plan of intervals on cores `on`, by the border-cost model."""
        gpu = self.gpu_total - sum(self.saved(i, j) for i, j in intervals)
        busy = [0.0] * self.cores
        for (i, j), core in zip(intervals, on):
            busy[core] += self.dla(i, j) + self.launch
        return max(gpu, *busy), gpu + sum(busy)

    def assign(self, intervals: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
        """The intervals and the split over the cores (the first on DLA0) that leaves the busiest engine least
        busy."""
        splits = [(0, *rest) for rest in itertools.product(range(self.cores), repeat=len(intervals) - 1)]
        return intervals, min(splits, key=lambda on: self.busiest(intervals, on))

    def refine(self, intervals: tuple[tuple[int, int], ...], on: tuple[int, ...]
               ) -> tuple[tuple[float, float], tuple[tuple[int, int], ...], tuple[int, ...]]:
        """Moves one end of one interval at a time by up to INTERVAL_STEPS positions (intervals stay disjoint,
        on the DLA and non-empty), or one interval to another core (the first stays on DLA0), while the plan's
        (busiest engine, total) falls; a descent, deterministic."""
        best = self.busiest(intervals, on)
        while True:
            moves = []
            for k, (i, j) in enumerate(intervals):
                low = intervals[k - 1][1] + 1 if k else 0
                high = intervals[k + 1][0] - 1 if k + 1 < len(intervals) else self.n - 1
                for step in range(-INTERVAL_STEPS, INTERVAL_STEPS + 1):
                    for a, b in ((i + step, j), (i, j + step)):
                        if step and low <= a <= b <= high and self.blocked[a] > b:
                            moved = (*intervals[:k], (a, b), *intervals[k + 1:])
                            moves.append((self.busiest(moved, on), moved, on))
                for core in range(self.cores):
                    if k and core != on[k]:
                        spread = (*on[:k], core, *on[k + 1:])
                        moves.append((self.busiest(intervals, spread), intervals, spread))
            if not moves:
                return best, intervals, on
            value, moved, spread = min(moves)
            if value >= best:
                return best, intervals, on
            best, intervals, on = value, moved, spread

    def select(self, weight: float, cap: float, most: int) -> tuple[tuple[int, int], ...]:
        """At most `most` disjoint intervals maximising GPU time saved less `weight` times DLA time taken,
        each taking at most `cap` DLA time: a DP over prefixes of the order (best[k][p]: k intervals in the
        first p positions)."""
        n = self.n
        i = np.arange(n)[:, None]
        j = np.arange(n)[None, :]
        dla = self.dla_prefix[1:][None, :] - self.dla_prefix[:-1][:, None] + self.launch
        value = self.gpu_prefix[1:][None, :] - self.gpu_prefix[:-1][:, None] - self.border - weight * dla
        value = np.where((j >= i) & (j < self.blocked[:-1][:, None]) & (dla <= cap), value, -math.inf)
        best = np.full((most + 1, n + 1), -math.inf)
        best[:, 0] = 0.0
        start = np.full((most + 1, n + 1), -1)
        for p in range(1, n + 1):
            best[0, p] = 0.0
            column = value[:p, p - 1]
            for k in range(1, most + 1):
                through = best[k - 1, :p] + column
                s = int(np.argmax(through))
                if through[s] > best[k, p - 1]:
                    best[k, p], start[k, p] = through[s], s
                else:
                    best[k, p] = best[k, p - 1]
        intervals = []
        k, p = int(np.argmax(best[:, n])), n
        while k > 0 and p > 0:
            if start[k, p] < 0:
                p -= 1
                continue
            s = int(start[k, p])
            intervals.append((s, p - 1))
            k, p = k - 1, s
        return tuple(sorted(intervals))


def interval_hint(lm: LatencyModel, allowed: frozenset[str], score: Callable[[Breakdown], int], cores: int,
                  limit: int) -> tuple[Placement, ...] | None:
    """A throughput start that cuts the topological order into DLA intervals, the rest on the GPU.

    Intervals of a topological order are convex (a path leaving one cannot come back before its end), so each
    of an interval's connected parts is a valid loadable. For each makespan T tried, a DP picks intervals of
    at most T (or T/2) DLA time each, one per core or up to the loadable limit; each set is spread over the
    DLA cores (every split tried), its ends moved while the border-cost model says the busiest engine gets
    less busy, and the best sets are relabelled into loadables and scored by the evaluator. None when the
    target has no DLA, copies are not GPU work (the costs assume both) or the graph is past INTERVAL_MAX_GROUPS."""
    groups = lm.groups.groups
    if not groups or len(groups) > INTERVAL_MAX_GROUPS or cores < 1 or not lm.backend.loadables \
            or transfer_engine(lm.target) != "gpu" or reformat_engine(lm.target) != "gpu":
        return None
    gpu = [_fastest(lm, g, "gpu", allowed) for g in range(len(groups))]
    if any(o is None for o in gpu):
        return None
    gpu_options = [o for o in gpu if o is not None]
    dla = [_fastest(lm, g, "dla", allowed) for g in range(len(groups))]
    if all(o is None for o in dla):
        return None
    order = topological_order(lm.groups)
    costs = _Intervals(lm, order, gpu_options, dla, float(lm.launch_ns()), cores)
    most = min(limit, INTERVAL_MAX)
    low = costs.gpu_total / (cores + 1) / 2
    targets = [low * (costs.gpu_total / low) ** (k / (INTERVAL_TARGETS - 1)) for k in range(INTERVAL_TARGETS)]
    sets = {costs.select(w, cap, picks) for t in targets for w in INTERVAL_WEIGHTS
            for picks, cap in ((min(cores, most), t), (most, t), (most, t / 2))}
    ranked = sorted(costs.refine(*costs.assign(s)) for s in sorted(sets) if s)
    neighbours = group_neighbours(lm.groups)
    plans: list[tuple[int, int, tuple[Placement, ...]]] = []
    for _, intervals, on in sorted(set(ranked))[:INTERVAL_SCORED]:
        placements = _interval_plan(order, intervals, on, gpu_options, dla, neighbours, limit)
        plans.append((score(evaluate(lm, placements)), len(plans), placements))
    return min(plans)[2] if plans else None


def _interval_plan(order: list[int], intervals: tuple[tuple[int, int], ...], on: tuple[int, ...],
                   gpu: list[Option], dla: list[Option | None], neighbours: Mapping[int, set[int]], limit: int
                   ) -> tuple[Placement, ...]:
    """Each interval's connected parts as loadables on its core; past the limit the smallest parts go back to
    the GPU."""
    parts = [(part, core) for (i, j), core in zip(intervals, on)
             for part in components(set(order[i:j + 1]), neighbours)]
    parts.sort(key=lambda pc: (-len(pc[0]), min(pc[0])))
    placements = [Placement(o) for o in gpu]
    for slot, (part, core) in enumerate(parts[:limit]):
        for g in part:
            option = dla[g]
            assert option is not None
            placements[g] = Placement(option, core, slot)
    return _relabel(tuple(placements))


BORDER_ROUNDS = 64  # improving moves the border descent takes at most


def border_descent(lm: LatencyModel, start: tuple[Placement, ...], allowed: frozenset[str],
                   score: Callable[[Breakdown], int], cores: int, limit: int) -> tuple[Placement, ...]:
    """A plan's loadables grown and shrunk one group at a time, scored by the evaluator itself.

    The interval hint is built on a border-cost model and only moves whole interval ends; CP-SAT on one worker
    runs no neighbourhood search, so a plan one group away can stay unfound (GhostNet on xavier-agx: the hint is
    the final plan). Each move adds a GPU group next to a loadable to it, returns a member whose loss keeps the
    loadable connected to the GPU, moves a member into a neighbouring loadable, starts a loadable of one GPU group
    (within the limit), or puts a loadable on another core; a move keeps every loadable convex (no path leaves
    it and comes back) and connected. The best move by the objective, then the engines' times from the busiest
    down (so a tie at the top can be undone one engine at a time), is taken while it beats
    the plan, at most BORDER_ROUNDS times; deterministic (moves in slot and group order)."""
    succ: dict[int, list[int]] = {}
    for a, b in lm.groups.group_edges():
        succ.setdefault(a, []).append(b)
    neighbours = group_neighbours(lm.groups)
    n = len(lm.groups.groups)
    on_dla = [_fastest(lm, g, "dla", allowed) for g in range(n)]
    on_gpu = [_fastest(lm, g, "gpu", allowed) for g in range(n)]

    def key(placements: tuple[Placement, ...]) -> tuple[int, ...]:
        b = evaluate(lm, placements)  # leximax: a tie at the top is broken by the next busiest engine
        return score(b), *sorted(b.busy_ns.values(), reverse=True)

    current, best = start, key(start)
    start_score = best[0]
    for _ in range(BORDER_ROUNDS):
        moves: list[tuple[Placement, ...]] = []
        for slot in sorted({p.loadable for p in current if p.loadable >= 0}):
            members = {g for g, p in enumerate(current) if p.loadable == slot}
            core = current[min(members)].core
            for g in sorted({v for m in members for v in neighbours.get(m, ())} - members):
                option = on_dla[g]
                if current[g].option.device == "gpu" and option is not None and _convex(members | {g}, succ):
                    moves.append(_put(current, g, Placement(option, core, slot)))
                elif current[g].loadable >= 0 and _convex(members | {g}, succ):  # from a neighbouring loadable
                    rest = {v for v, p in enumerate(current) if p.loadable == current[g].loadable} - {g}
                    if rest and len(components(rest, neighbours)) == 1 and _convex(rest, succ):
                        moves.append(_put(current, g, Placement(current[g].option, core, slot)))
            for g in sorted(members) if len(members) > 1 else []:
                option = on_gpu[g]
                rest = members - {g}
                if option is not None and len(components(rest, neighbours)) == 1 and _convex(rest, succ):
                    moves.append(_put(current, g, Placement(option)))
            for other in range(cores):
                if other != core:
                    moves.append(tuple(Placement(p.option, other, slot) if p.loadable == slot else p
                                       for p in current))
        slots = {p.loadable for p in current if p.loadable >= 0}
        if len(slots) < limit:  # a group on the GPU as a loadable of its own (one group is convex)
            fresh = max(slots, default=-1) + 1
            for g in range(n):
                option = on_dla[g]
                if current[g].option.device == "gpu" and option is not None:
                    moves.extend(_put(current, g, Placement(option, core, fresh)) for core in range(cores))
        scored = [(key(m), k) for k, m in enumerate(moves)]
        if not scored or min(scored)[0] >= best:
            break
        best, k = min(scored)
        current = moves[k]
    # a plan only as good at the top is no better start: the hint (and so the search) stays as it was
    return _relabel(current) if best[0] < start_score else start


def _put(placements: tuple[Placement, ...], g: int, placement: Placement) -> tuple[Placement, ...]:
    return (*placements[:g], placement, *placements[g + 1:])


def _convex(members: set[int], succ: Mapping[int, list[int]]) -> bool:
    """No path leaves `members` and comes back: nothing reached from outside the set after leaving it is in it."""
    stack = [b for a in members for b in succ.get(a, ()) if b not in members]
    seen: set[int] = set()
    while stack:
        g = stack.pop()
        if g in members:
            return False
        if g not in seen:
            seen.add(g)
            stack.extend(succ.get(g, ()))
    return True
