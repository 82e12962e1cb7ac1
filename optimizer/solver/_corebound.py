"""A throughput bound that knows each DLA core's load: the region DP of optimizer.solver._cutbound with the two
cores apart.

The region DP pools both cores: with D of DLA work its busiest core carries (D + launches) / 2, as if any DLA
run could be halved. A run is one loadable or it is cut, and a cut between cores is a copy of that very tensor
on the GPU. So here each DLA-capable group of a region goes to the GPU, core A or core B (3^m choices), a
tensor from one core to the other pays its own DLA-to-DLA copy, the groups joined by edges on one core are
one loadable at least (each pays a launch on that core, and the parts count towards the DLA-LOADABLES limit),
and the state is the pair of core loads: state[device of the last separator, parts, load A, load B] = least
GPU time. Everything else is relaxed as in the region DP (convexity, copies between loadables of one core,
each group at its cheapest option per device, each copy at its cheapest precision), and each region's load is
rounded down to whole steps, so the minimum over the states of the busiest engine bounds every plan.

It needs an upper bound (a plan's busiest engine): a state past it on any engine is no better plan, so the
grid spans [0, upper] only, 240 steps a side (480 where that leaves a gap). Each cell keeps the least GPU time and
the least remainders of both loads past its steps, so rounding does not pile up from region to region. The two
cores are interchangeable, so the first group never starts on core B. A region of more than MAX_REGION
DLA-capable groups gives no bound (None): taken in chunks as in the region DP (copies between chunks and the
chunks' parts left out) it stayed below the LP on the four zoo cases measured (DenseNet-121, YOLOv5nu, YOLOv8n,
GhostNet).
"""

from __future__ import annotations

import math

import numpy as np

from optimizer.latency import LatencyModel
from optimizer.solver._cutbound import Instance, Tensor, instance
from optimizer.solver._request import PlanRequest

QUANTUM_NS = 100  # the least step of a core's load
CELLS = (240, 480)  # load steps a side, tried in turn: the step is upper / cells or QUANTUM_NS, whichever is more
MAX_REGION = 8  # DLA-capable groups of one region enumerated (3^8 device choices); past it, no bound
MAX_PARTS = 8  # loadables counted exactly without a limit; the last count then means "this many or more"



def core_bound_ns(lm: LatencyModel, request: PlanRequest, limit: int | None, upper_ns: int) -> int | None:
    """The bound for a throughput request on a two-core DLA target whose copies are GPU work, for plans of at
    most `limit` loadables (None: no limit) given a plan whose busiest engine is `upper_ns`; None where it does
    not apply."""
    inst = instance(lm, request) if lm.target.cores == 2 and upper_ns > 0 else None
    if inst is None:
        return None
    order, regions, dla = inst.order, inst.regions, inst.dla
    if any(sum(dla[order[p]] >= 0 for p in region) > MAX_REGION for region in regions):
        return None
    bound = 0
    for cells in CELLS:  # a coarse grid first: where it already meets the plan the finer one is not needed
        value = _bound_on_grid(upper_ns, cells, inst, lm.launch_ns(), limit)
        bound = max(bound, value)
        if bound >= upper_ns:
            break
    return bound


def _bound_on_grid(upper_ns: int, most: int, inst: Instance, launch: int, limit: int | None) -> int:
    """The DP on a grid of at most `most` load steps a side."""
    order, gpu, dla = inst.order, inst.gpu, inst.dla
    quantum = max(QUANTUM_NS, -(-upper_ns // most))
    cells = upper_ns // quantum + 1
    capped = limit is not None and limit <= MAX_PARTS
    top = min(limit, MAX_PARTS) if limit is not None else MAX_PARTS
    # [device of the last separator (0 GPU, 1 core A, 2 core B), parts, load A step, load B step]: the least GPU
    # time, and the least remainders of the two loads past their steps (each cell stands for every state in it)
    shape = (3, top + 1, cells, cells)
    rest: type = np.int32 if 2 * quantum < 2**31 else np.int64  # remainders stay below two steps
    exact: type = np.float32 if upper_ns < 2**24 else np.float64  # whole ns below 2^24 are exact in float32
    state: State = (np.full(shape, math.inf, dtype=exact), np.full(shape, quantum, dtype=rest),
             np.full(shape, quantum, dtype=rest))
    first = order[0]
    state[0][0, 0, 0, 0] = gpu[first]
    state[1][0, 0, 0, 0] = state[2][0, 0, 0, 0] = 0
    if dla[first] >= 0 and top >= 1 and dla[first] + launch <= upper_ns:
        step, more = divmod(int(dla[first] + launch), quantum)
        state[0][1, 1, step, 0] = 0.0  # core B is core A's mirror image
        state[1][1, 1, step, 0], state[2][1, 1, step, 0] = more, 0
    for start, region in zip(inst.bounds, inst.regions):
        state = _advance(state, start, region, [order[p] for p in region], gpu, dla, inst.tensors, inst.edges, launch,
                         quantum, capped, upper_ns)
    gpu_ns, rest_a, rest_b = state
    if np.isinf(gpu_ns).all():
        return upper_ns  # no plan of the relaxation beats the given one
    steps = np.arange(cells) * quantum
    busiest = np.maximum(gpu_ns, np.maximum(steps[:, None] + rest_a, steps[None, :] + rest_b))
    return min(math.ceil(float(busiest[np.isfinite(gpu_ns)].min()) - 1e-6), upper_ns)



State = tuple[np.ndarray, np.ndarray, np.ndarray]


def _advance(state: State, start: int, region: list[int], groups: list[int], gpu: np.ndarray,
             dla: np.ndarray, tensors: dict[int, list[Tensor]], edges: dict[int, list[int]], launch: int,
             quantum: int, capped: bool, upper: int) -> State:
    """The DP's step over one region (the positions after separator `start` up to and including the next): every
    device of its DLA-capable groups (GPU, core A, core B), for each device of `start`, kept as the least GPU time
    per device of the region's last group, loadables and the two cores' loads. A part through `start` is
    counted (and launched) already."""
    capable = [k for k, g in enumerate(groups) if dla[g] >= 0]
    devices = np.stack(np.meshgrid(*[np.arange(3, dtype=np.int8)] * len(capable), indexing="ij"),
                       axis=-1).reshape(-1, len(capable)) if capable else np.zeros((1, 0), dtype=np.int8)
    dev = np.zeros((len(devices), len(region) + 1), dtype=np.int8)  # column 0: the separator `start`
    dev[:, [k + 1 for k in capable]] = devices
    column = {p: k + 1 for k, p in enumerate(region)}
    column[start] = 0
    work = np.maximum(dla[groups], 0)
    gpu_time = (dev[:, 1:] == 0) @ gpu[groups]
    work_a = (dev[:, 1:] == 1) @ work
    work_b = (dev[:, 1:] == 2) @ work
    gpu_ns, rest_a, rest_b = state
    out = (np.full_like(gpu_ns, math.inf), np.full_like(rest_a, quantum), np.full_like(rest_b, quantum))
    cells = gpu_ns.shape[2]
    for kind in (0, 1, 2):
        finite = np.isfinite(gpu_ns[kind])
        if not finite.any():
            continue
        on = dev.copy()
        on[:, 0] = kind
        copies = np.zeros(len(on))
        for p in [start, *region[:-1]]:
            for consumers, to_dla, to_gpu, across in tensors.get(p, ()):
                src = on[:, column[p]]
                dst = on[:, [column[c] for c in consumers]]
                on_a, on_b, on_gpu = (dst == 1).any(axis=1), (dst == 2).any(axis=1), (dst == 0).any(axis=1)
                copies += np.where(src == 0, to_dla * (on_a.astype(int) + on_b), to_gpu * on_gpu
                                   + across * np.where(src == 1, on_b, on_a))
        parts_a, parts_b = _parts(on, [start, *region], column, edges)
        parts_a -= int(kind == 1)
        parts_b -= int(kind == 2)
        added = parts_a + parts_b
        load_a = work_a + launch * parts_a
        load_b = work_b + launch * parts_b
        total = gpu_time + copies
        keep = (total <= upper) & (load_a <= upper) & (load_b <= upper)
        if capped:
            keep &= added <= gpu_ns.shape[1] - 1  # past the limit: no plan
        last = on[:, -1]
        cell = np.nonzero(finite)  # the states as lists: parts, load A step, load B step
        source = (cell, gpu_ns[kind][cell], rest_a[kind][cell], rest_b[kind][cell])
        for end in (0, 1, 2):
            for k in np.unique(added[keep & (last == end)]).tolist():
                rows = keep & (last == end) & (added == k)
                for da, db, g_ns in _frontier(load_a[rows], load_b[rows], total[rows], quantum):
                    _shift(out, end, source, k, da, db, g_ns, quantum, capped)
    gpu_out, rest_a_out, rest_b_out = out
    steps = (np.arange(cells) * quantum)
    past = (gpu_out > upper) | (steps[:, None] + rest_a_out > upper) | (steps[None, :] + rest_b_out > upper)
    gpu_out[past] = math.inf
    _prune(gpu_out)
    return out


def _prune(gpu_ns: np.ndarray) -> None:
    """A state is no better than one with no more parts, a lower step of both loads (so less of each) and no
    more GPU time: it is dropped (its cell set to infinity)."""
    best = np.minimum.accumulate(np.minimum.accumulate(np.minimum.accumulate(gpu_ns, axis=1), axis=2), axis=3)
    below = np.full_like(best, math.inf)
    below[:, :, 1:, 1:] = best[:, :, :-1, :-1]
    gpu_ns[below <= gpu_ns] = math.inf


Cells = tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray, np.ndarray]  # indices, GPU time, both remainders


def _shift(out: State, end: int, source: Cells, k: int, da: int, db: int, g_ns: float, quantum: int,
           capped: bool) -> None:
    """Every state of `source` plus one region's choice (k more parts, loads da and db, GPU time g_ns) into `out`
    at the device `end`: each state's remainders carry into the next step where they pass a whole one."""
    (parts, step_a, step_b), gpu_ns, rest_a, rest_b = source
    top = out[0].shape[1] - 1
    cells = out[0].shape[2]
    ra = rest_a + da % quantum
    rb = rest_b + db % quantum
    carry_a = ra >= quantum
    carry_b = rb >= quantum
    ia = step_a + da // quantum + carry_a
    ib = step_b + db // quantum + carry_b
    pk = parts + k
    keep = (ia < cells) & (ib < cells)
    if capped:
        keep &= pk <= top  # past the limit: no plan
    else:
        pk = np.minimum(pk, top)  # the last count saturates
    if not keep.any():
        return
    flat = np.ravel_multi_index((np.full(int(keep.sum()), end), pk[keep], ia[keep], ib[keep]), out[0].shape)
    np.minimum.at(out[0].reshape(-1), flat, gpu_ns[keep] + g_ns)
    np.minimum.at(out[1].reshape(-1), flat, (ra - quantum * carry_a)[keep])
    np.minimum.at(out[2].reshape(-1), flat, (rb - quantum * carry_b)[keep])


def _parts(on: np.ndarray, positions: list[int], column: dict[int, int], edges: dict[int, list[int]]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per device choice (a row of `on`: 0 GPU, 1 core A, 2 core B), the connected parts its groups on each core
    form among `positions` along the edges with both ends on that core."""
    width = on.shape[1]
    label = np.where(on > 0, np.arange(width)[None, :], width)
    pairs = [(column[low], column[high]) for high in positions for low in edges.get(high, ()) if low in column]
    if pairs:
        a = np.array([p for p, _ in pairs])
        b = np.array([q for _, q in pairs])
        joined = (on[:, a] == on[:, b]) & (on[:, a] > 0)
        for _ in range(width):
            low = np.where(joined, np.minimum(label[:, a], label[:, b]), width)
            new = label.copy()
            np.minimum.at(new.T, a, low.T)
            np.minimum.at(new.T, b, low.T)
            if (new == label).all():
                break
            label = new
    root = label == np.arange(width)[None, :]
    return np.asarray((root & (on == 1)).sum(axis=1)), np.asarray((root & (on == 2)).sum(axis=1))


def _frontier(load_a: np.ndarray, load_b: np.ndarray, gpu: np.ndarray, quantum: int) -> list[tuple[int, int, float]]:
    """(load A, load B, GPU time) triples that stand for every choice: the choices whose loads fall in the same
    steps become one triple, the least of each (it beats every one of them), and a triple another beats in all
    three is left out."""
    cell = (load_a // quantum) * (int(load_b.max()) // quantum + 1) + load_b // quantum
    keys, index = np.unique(cell, return_inverse=True)
    triples = np.full((len(keys), 3), np.inf)
    for column, values in enumerate((load_a, load_b, gpu)):
        np.minimum.at(triples[:, column], index, values)
    kept = np.ones(len(triples), dtype=bool)
    for lo in range(0, len(triples), 512):
        chunk = triples[lo:lo + 512]
        beaten = ((triples[None, :, 0] <= chunk[:, None, 0]) & (triples[None, :, 1] <= chunk[:, None, 1])
                  & (triples[None, :, 2] <= chunk[:, None, 2]))
        beaten[np.arange(len(chunk)), np.arange(lo, lo + len(chunk))] = False
        # of two equal triples (none here: each stands for its own steps) both would go
        kept[lo:lo + len(chunk)] = ~beaten.any(axis=1)
    return [(int(a), int(b), float(g)) for a, b, g in triples[kept]]
