"""A throughput bound that sees the copies at a loadable's border, by a DP over the regions between separators.

The LP relaxation (optimizer.solver._bounds) is fluid: a group split between engines pays no copy, so it cannot
see that every loadable's inputs and outputs are moved by the GPU (ResNet-50 on orin-agx: about 100 of the
plan's 325 us of GPU time). This bound keeps each group whole on the GPU or the DLA and relaxes everything
else: which core and loadable (both cores' time is pooled), convexity, DLA-to-DLA copies and precision changes
(all non-negative), each group at its cheapest option on its device and each copy at its cheapest precision.
It keeps what decides how finely DLA work can be spread: a loadable is connected, so a plan has at least as
many loadables as its DLA groups have connected parts, each paying a launch on its core, and at most the
DLA-LOADABLES limit of them. A separator (a group every path passes) is the only group with edges on both
sides of it, so a DP over the regions in order, with the separator's device, the connected parts so far and the
DLA time so far as its state, finds the least GPU time for every such triple exactly (DLA time counted down
to whole steps of QUANTUM_NS or more, so it stays a bound). A region of more than MAX_REGION DLA-capable groups
is swept group by group with every copy charged and its parts left out (_sweep), or where that state is too
large, taken in chunks, relaxed (see _advance). With k parts run as p >= k loadables and D of DLA work, a plan's
busiest DLA core carries at least (D + p x launch) / min(p, cores) (_busiest), so its busiest engine is at
least that or its GPU time, whichever is more; the minimum over the DP's states bounds every plan.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from optimizer.fusion import topological_order
from optimizer.latency import LatencyModel, tensor_routes
from optimizer.solver._bounds import _option_ns, _options
from optimizer.solver._decompose import separators
from optimizer.solver._request import PlanRequest

QUANTUM_NS = 100  # DLA time steps of the DP's state (each group's DLA time rounded down: still a bound)
MAX_STEPS = 50_000  # DLA time steps of the state; past it, the step grows (RT-DETR-L on xavier-agx: 400 ns)
MAX_REGION = 14  # DLA-capable groups of one region enumerated (2^14 device choices); past it, relaxed
MAX_PARTS = 8  # connected DLA parts counted exactly; the state's last count means "this many or more"
SWEEP_KEYS = 4096  # device states of the open tensors a large region's sweep keeps at once; past it, chunks


# a tensor: consumer positions, cheapest copy GPU->DLA, DLA->GPU, DLA->DLA (between loadables or cores)
Tensor = tuple[list[int], float, float, float]


@dataclass(frozen=True)
class Instance:
    """What the region DPs read off a throughput request, once: each group at its cheapest option per device,
    each tensor's copies at their cheapest precision, keyed by topological position."""

    gpu: np.ndarray  # per group: least GPU ns
    dla: np.ndarray  # per group: least DLA ns, -1 where the group has no DLA option
    order: list[int]  # topological order of the groups
    tensors: dict[int, list[Tensor]]  # by the producer's position
    edges: dict[int, list[int]]  # by the later end's position: the earlier ends' positions
    bounds: list[int]  # the separators' positions, ending with the last position

    @property
    def regions(self) -> list[list[int]]:
        """The positions after each separator up to and including the next."""
        return [list(range(start + 1, end + 1)) for start, end in itertools.pairwise(self.bounds)]


def instance(lm: LatencyModel, request: PlanRequest) -> Instance | None:
    """None where a region DP does not apply: not throughput, no loadables, copies not GPU work, a device
    other than the GPU and the DLA, or no groups."""
    backend = lm.backend
    if request.objective != "throughput" or not backend.loadables or backend.transfer_engine != "gpu" \
            or not lm.groups.groups:
        return None
    n = len(lm.groups.groups)
    gpu = np.zeros(n)
    dla = np.full(n, -1, dtype=np.int64)
    for g in range(n):
        costs: dict[str, int] = {}
        for option in _options(lm, g, request):
            ns = _option_ns(lm, g, option)
            costs[option.device] = min(costs.get(option.device, ns), ns)
        if "gpu" not in costs or set(costs) - {"gpu", "dla"}:
            return None
        gpu[g] = costs["gpu"]
        if "dla" in costs:
            dla[g] = costs["dla"]
    order = topological_order(lm.groups)
    position = {g: p for p, g in enumerate(order)}
    tensors: dict[int, list[Tensor]] = {}
    for tensor, src, consumers in tensor_routes(lm):
        if src < 0:
            continue
        precisions = sorted({o.precision for o in _options(lm, src, request)})
        tensors.setdefault(position[src], []).append((
            [position[v] for v in consumers],
            min(lm.transfer(tensor, "gpu", "dla", p)[1] for p in precisions),
            min(lm.transfer(tensor, "dla", "gpu", p)[1] for p in precisions),
            min(lm.transfer(tensor, "dla", "dla", p)[1] for p in precisions)))
    edges: dict[int, list[int]] = {}
    for a, b in lm.groups.group_edges():
        low, high = sorted((position[a], position[b]))
        edges.setdefault(high, []).append(low)
    cuts = separators(lm.groups, order)
    bounds = [*cuts, n - 1] if cuts[-1] != n - 1 else cuts
    return Instance(gpu, dla, order, tensors, edges, bounds)


def region_bound_ns(lm: LatencyModel, request: PlanRequest, limit: int | None = None) -> int | None:
    """The bound for a throughput request on a target whose copies and reformats are GPU work and whose DLA
    cores are engines of their own, for plans of at most `limit` loadables (None: no limit); None where it
    does not apply."""
    inst = instance(lm, request) if lm.target.cores >= 1 else None
    if inst is None:
        return None
    gpu, dla_ns, order, tensors, edges, bounds = (inst.gpu, inst.dla, inst.order, inst.tensors, inst.edges,
                                                  inst.bounds)
    quantum = max(QUANTUM_NS, -(-int(dla_ns[dla_ns > 0].sum()) // MAX_STEPS))
    dla_steps = np.where(dla_ns >= 0, dla_ns // quantum, -1)
    # the cheapest copy between two loadables: what cutting a connected DLA part costs at least
    split = min((across for p, routes in tensors.items() if dla_ns[order[p]] >= 0
                 for consumers, _, _, across in routes if any(dla_ns[order[c]] >= 0 for c in consumers)),
                default=math.inf)
    steps = int(dla_steps[dla_steps > 0].sum()) + 1
    parts_cap = MAX_PARTS if limit is None else min(limit, MAX_PARTS)
    # state[kind of the last separator, connected DLA parts, DLA steps] = least GPU time; kind 1 = DLA
    first = order[0]
    state = np.full((2, parts_cap + 1, steps), math.inf)
    state[0, 0, 0] = gpu[first]
    if dla_steps[first] >= 0:
        state[1, 1, dla_steps[first]] = 0.0
    relaxed = False
    for start, region in zip(bounds, inst.regions):
        chunks = _chunks(region, dla_steps[[order[p] for p in region]] >= 0)
        relaxed = relaxed or len(chunks) > 1
        if len(chunks) > 1:
            swept = _sweep(state, start, region, inst, quantum)
            if swept is not None:
                state = swept
                continue
        for k, chunk in enumerate(chunks):
            advanced = _advance(state, start, chunk, [order[p] for p in chunk], gpu, dla_steps, tensors, edges,
                                limit is not None and limit <= MAX_PARTS, len(chunks) == 1, k == len(chunks) - 1)
            if advanced is None:
                return None
            state = advanced
    # a relaxed region's parts are not counted: the count is then only a floor, so no cut is charged
    value = _busiest(state.min(axis=0), lm.launch_ns(), lm.target.cores, 0.0 if relaxed else split,
                     limit if limit is not None else MAX_PARTS, quantum)
    return None if math.isinf(value) else math.ceil(value - 1e-6)


def _busiest(gpu: np.ndarray, launch: int, cores: int, split: float, limit: int, quantum: int = QUANTUM_NS
             ) -> float:
    """The least busiest engine over the DP's final states (`gpu`[parts, DLA steps] = least GPU time). A plan
    whose DLA groups form k connected parts runs them as p >= k loadables, p up to the limit: each loadable
    pays a launch on its core, and each cut of a part is at least one copy between loadables, GPU work. With p
    loadables on at most min(p, cores) cores the busiest DLA core carries at least (D + p x launch) / min(p,
    cores); past `cores` both terms grow with p, so p stops there. Past MAX_PARTS the state counts "k or
    more" and p starts at k."""
    work = np.arange(gpu.shape[1]) * quantum
    # no part counted: the all-GPU plan, or DLA work in relaxed regions (at least one loadable per core used)
    idle = np.where(work > 0, work / cores + launch, 0.0)
    best = float(np.min(np.maximum(gpu[0], idle)))
    for k in range(1, gpu.shape[0]):
        for p in range(k, min(max(k, cores), max(limit, k)) + 1):
            if p > k and math.isinf(split):
                break  # no DLA-to-DLA tensor: a part cannot be cut
            dla = (work + p * launch) / min(p, cores)
            extra = (p - k) * split if p > k else 0.0
            best = min(best, float(np.min(np.maximum(gpu[k] + extra, dla))))
    return best


def _chunks(region: list[int], capable: np.ndarray) -> list[list[int]]:
    """The region whole if it has at most MAX_REGION DLA-capable groups, else cut in the topological order
    into runs of that many."""
    chunks: list[list[int]] = [[]]
    count = 0
    for p, able in zip(region, capable.tolist()):
        if able and count == MAX_REGION:
            chunks.append([])
            count = 0
        chunks[-1].append(p)
        count += int(able)
    return chunks


def _advance(state: np.ndarray, start: int, region: list[int], groups: list[int], gpu: np.ndarray,
             dla_steps: np.ndarray, tensors: dict[int, list[Tensor]],
             edges: dict[int, list[int]], capped: bool, whole: bool = True, final: bool = True) -> np.ndarray | None:
    """The DP's step over one region (the positions after separator `start` up to and including the next):
    every device choice of its DLA-capable groups, for each device of `start`, kept as the least GPU time per
    connected DLA parts and DLA time and per device of the region's last group. `capped`: the state's last
    part count is the loadable limit (more parts are no plan), else it stands for that many or more.

    A region too large to enumerate goes chunk by chunk (`whole` False), relaxed: a chunk's tensors pay their
    copies as far as its own groups see them (the first chunk also charges `start`'s), it adds no connected
    part, and the state keeps `start`'s device until the `final` chunk sets the region's last group's."""
    capable = [k for k, g in enumerate(groups) if dla_steps[g] >= 0]
    if len(capable) > MAX_REGION:
        return None
    choices = ((np.arange(1 << len(capable))[:, None] >> np.arange(len(capable))[None, :]) & 1).astype(bool)
    on_dla = np.zeros((len(choices), len(region) + 1), dtype=bool)  # column 0: the separator `start`
    on_dla[:, [k + 1 for k in capable]] = choices
    column = {p: k + 1 for k, p in enumerate(region)}
    column[start] = 0
    gpu_time = (~on_dla[:, 1:]) @ gpu[groups]
    dla_time = on_dla[:, 1:] @ np.maximum(dla_steps[groups], 0)
    out = np.full_like(state, math.inf)
    finite = np.flatnonzero(np.isfinite(state).any(axis=(0, 1)))
    reach = int(finite[-1]) + 1 if len(finite) else 0
    for kind in (0, 1):
        if np.isinf(state[kind]).all():
            continue
        on = on_dla.copy()
        on[:, 0] = bool(kind)
        copies = np.zeros(len(choices))
        first = whole or region[0] == start + 1  # the first chunk starts right after `start`
        for p in [start, *region[:-1]] if whole else [*([start] if first else []), *region]:
            for consumers, to_dla, to_gpu, _ in tensors.get(p, ()):
                if whole and any(c not in column for c in consumers):
                    return None  # not a region between separators (cannot happen in a topological order)
                seen = [column[c] for c in consumers if c in column]
                if not seen:
                    continue
                src = on[:, column[p]]
                dst = on[:, seen]
                copies += to_dla * (~src & dst.any(axis=1)) + to_gpu * (src & (~dst).any(axis=1))
        total = gpu_time + copies
        # a part through `start` is counted already; a chunk counts none
        added = _parts(on, [start, *region], column, edges) - kind if whole else np.zeros(len(choices), np.int64)
        last = on[:, -1].astype(int) if final else np.full(len(choices), kind)
        top = state.shape[1] - 1
        for end_kind in (0, 1):
            for k in np.unique(added).tolist():
                rows = (last == end_kind) & (added == k)
                if not rows.any():
                    continue
                if k > top and capped:
                    continue
                k = min(k, top)
                for d, g_ns in _frontier(dla_time[rows], total[rows]):
                    if d >= state.shape[2]:
                        break
                    width = min(reach, state.shape[2] - d)  # past `reach` the state is all infinite
                    shifted = state[kind, :, :width] + g_ns
                    if k and capped:
                        shifted = shifted[:top + 1 - k]  # past the limit: no plan
                    elif k:  # the last count saturates
                        shifted = np.concatenate([shifted[:top - k], shifted[top - k:].min(axis=0, keepdims=True)])
                    out[end_kind, k:, d:d + width] = np.minimum(out[end_kind, k:, d:d + width], shifted)
    return out


def _parts(on: np.ndarray, positions: list[int], column: dict[int, int], edges: dict[int, list[int]]) -> np.ndarray:
    """Per device choice (a row of `on`), the connected parts its DLA groups form among `positions`: labels
    spread along the edges whose ends are both on the DLA until they settle; a part is a group keeping its own."""
    label = np.where(on, np.arange(on.shape[1])[None, :], on.shape[1])
    pairs = [(column[low], column[high]) for high in positions for low in edges.get(high, ()) if low in column]
    if not pairs:
        return np.asarray(on.sum(axis=1))
    a = np.array([p for p, _ in pairs])
    b = np.array([q for _, q in pairs])
    both = on[:, a] & on[:, b]
    for _ in range(on.shape[1]):
        low = np.where(both, np.minimum(label[:, a], label[:, b]), on.shape[1])
        new = label.copy()
        np.minimum.at(new.T, a, low.T)
        np.minimum.at(new.T, b, low.T)
        if (new == label).all():
            break
        label = new
    return np.asarray((on & (label == np.arange(on.shape[1])[None, :])).sum(axis=1))


def _frontier(dla: np.ndarray, gpu: np.ndarray) -> list[tuple[int, float]]:
    """The (DLA steps, GPU time) pairs no other pair beats in both."""
    keep: list[tuple[int, float]] = []
    for d, g in sorted(zip(dla.tolist(), gpu.tolist())):
        if not keep or g < keep[-1][1]:
            keep.append((int(d), float(g)))
    return keep


def _sweep(state: np.ndarray, start: int, region: list[int], inst: Instance, quantum: int) -> np.ndarray | None:
    """A region too large to enumerate, walked group by group in topological order with every copy charged: the
    state of the walk is the device of each tensor still to be consumed (GPU, DLA, or copied already) and,
    for each such state, the (DLA time, GPU time) pairs no other pair beats in both. A tensor from the GPU pays
    its copy to the DLA at its first consumer there, one from the DLA its copy back at its first consumer on
    the GPU: what the enumeration charges. The region adds no connected part (parts are relaxed as in the
    chunks), so the result is the whole-region enumeration without part counts. None where the walk's state
    would pass SWEEP_KEYS (many tensors open at once, e.g. a DenseNet block): the region goes in chunks."""
    order, gpu, dla, tensors = inst.order, inst.gpu, inst.dla, inst.tensors
    produced: dict[int, list[int]] = {}  # position -> indices of its tensors in `routes`
    routes: list[Tensor] = []
    inside = set(region)
    for p in [start, *region[:-1]]:
        for route in tensors.get(p, ()):
            if any(c not in inside for c in route[0]):
                return None  # not a region between separators (cannot happen in a topological order)
            produced.setdefault(p, []).append(len(routes))
            routes.append(route)
    last_use = [max(r[0]) for r in routes]
    consumers = [set(r[0]) for r in routes]
    out = np.full_like(state, math.inf)
    for kind in (0, 1):
        if np.isinf(state[kind]).all():
            continue
        live = produced.get(start, [])
        layer: dict[tuple[int, ...], list[tuple[np.ndarray, np.ndarray]]] = {
            tuple(kind for _ in live): [(np.zeros(1, dtype=np.int64), np.zeros(1))]}
        ends: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for q in region:
            g = order[q]
            keep = [k for k, t in enumerate(live) if last_use[t] > q]
            fresh = produced.get(q, []) if q != region[-1] else []
            devices = (0, 1) if dla[g] >= 0 else (0,)
            following: dict[tuple[int, ...], list[tuple[np.ndarray, np.ndarray]]] = {}
            for key, pairs in layer.items():
                frontier = _pareto(pairs, quantum)
                for device in devices:
                    extra = float(gpu[g]) if device == 0 else 0.0
                    status = list(key)
                    for k, t in enumerate(live):
                        if q in consumers[t] and status[k] != 2 and status[k] != device:
                            _, to_dla, to_gpu, _ = routes[t]
                            extra += to_dla if status[k] == 0 else to_gpu
                            status[k] = 2  # copied: later consumers on either device pay nothing more
                    # each group's DLA time in whole steps, as the state counts it (its width holds their sum)
                    shifted = (frontier[0] + (int(dla[g]) // quantum * quantum if device == 1 else 0),
                               frontier[1] + extra)
                    if q == region[-1]:
                        ends.setdefault(device, []).append(shifted)
                        continue
                    following.setdefault((*[status[k] for k in keep], *[device] * len(fresh)), []).append(shifted)
            if len(following) > SWEEP_KEYS:
                return None
            layer = following
            live = [live[k] for k in keep] + fresh
        for end, pairs in ends.items():
            d_ns, g_ns = _pareto(pairs, quantum)
            steps = d_ns // quantum
            for d, extra in zip(steps.tolist(), g_ns.tolist()):
                if d >= state.shape[2]:
                    break
                width = state.shape[2] - d
                out[end, :, d:] = np.minimum(out[end, :, d:], state[kind, :, :width] + extra)
    return out


def _pareto(pairs: list[tuple[np.ndarray, np.ndarray]], quantum: int) -> tuple[np.ndarray, np.ndarray]:
    """The (DLA ns, GPU ns) pairs no other beats in both; pairs whose DLA time falls in the same step of
    `quantum` become one, the least of each (it beats all of them, so the sweep stays a bound)."""
    d_ns = np.concatenate([d for d, _ in pairs])
    g_ns = np.concatenate([g for _, g in pairs])
    step = d_ns // quantum
    keys, index = np.unique(step, return_inverse=True)
    low_d = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
    low_g = np.full(len(keys), math.inf)
    np.minimum.at(low_d, index, d_ns)
    np.minimum.at(low_g, index, g_ns)
    better = np.concatenate(([True], low_g[1:] < np.minimum.accumulate(low_g)[:-1]))
    return low_d[better], low_g[better]
