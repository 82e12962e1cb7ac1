"""A throughput bound that sees the copies at a loadable's border, by a DP over the regions between separators.

The LP relaxation (optimizer.solver._bounds) is fluid: a group split between engines pays no copy, so it cannot
see that every loadable's inputs and outputs are moved by the GPU (ResNet-50 on orin-agx: about 100 of the
plan's 325 us of GPU time). This bound keeps each group whole on the GPU or the DLA and relaxes everything
else: which core and loadable (both cores' time is pooled, each used core pays one launch), loadable count,
convexity and connectivity, DLA-to-DLA copies and precision changes (all non-negative), each group at its
cheapest option on its device and each copy at its cheapest precision. A separator (a group every path passes)
is the only producer whose tensors leave the region before it, so a DP over the regions in order, with the
separator's device and the DLA time so far as its state, finds the least GPU time for every amount of DLA
time exactly (DLA time counted down to whole QUANTUM_NS steps, so it stays a bound). Every plan's busiest
engine is at least max(GPU time, DLA time / cores + launch) for its device choice, hence at least the
minimum of that over the DP's states.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from optimizer.latency import LatencyModel, tensor_routes
from optimizer.solver._bounds import _option_ns, _options
from optimizer.solver._decompose import separators, topological_order
from optimizer.solver._request import PlanRequest

QUANTUM_NS = 100  # DLA time steps of the DP's state (each group's DLA time rounded down: still a bound)
MAX_REGION = 14  # DLA-capable groups of one region enumerated (2^14 device choices); past it, no bound
MAX_STEPS = 200_000  # DLA time steps of the state; past it, no bound


def region_bound_ns(lm: LatencyModel, request: PlanRequest) -> int | None:
    """The bound for a throughput request on a target whose copies and reformats are GPU work and whose DLA
    cores are engines of their own; None where it does not apply or a region is too large to enumerate."""
    backend = lm.backend
    if request.objective != "throughput" or not backend.loadables or backend.transfer_engine != "gpu" \
            or lm.target.cores < 1 or not lm.groups.groups:
        return None
    n = len(lm.groups.groups)
    gpu = np.zeros(n)
    dla_steps = np.full(n, -1, dtype=np.int64)  # -1: no DLA option
    for g in range(n):
        costs: dict[str, int] = {}
        for option in _options(lm, g, request):
            ns = _option_ns(lm, g, option)
            costs[option.device] = min(costs.get(option.device, ns), ns)
        if "gpu" not in costs or set(costs) - {"gpu", "dla"}:
            return None
        gpu[g] = costs["gpu"]
        if "dla" in costs:
            dla_steps[g] = costs["dla"] // QUANTUM_NS
    order = topological_order(lm.groups)
    position = {g: p for p, g in enumerate(order)}
    # per tensor: producer position, consumer positions, cheapest copy GPU->DLA and DLA->GPU
    tensors: dict[int, list[tuple[list[int], float, float]]] = {}
    for tensor, src, consumers in tensor_routes(lm):
        if src < 0:
            continue
        precisions = {o.precision for o in _options(lm, src, request)}
        to_dla = min(lm.transfer(tensor, "gpu", "dla", p)[1] for p in sorted(precisions))
        to_gpu = min(lm.transfer(tensor, "dla", "gpu", p)[1] for p in sorted(precisions))
        tensors.setdefault(position[src], []).append(([position[v] for v in consumers], to_dla, to_gpu))
    cuts = separators(lm.groups, order)
    bounds = [*cuts, n - 1] if cuts[-1] != n - 1 else cuts
    steps = int(dla_steps[dla_steps > 0].sum()) + 1
    if steps > MAX_STEPS:
        return None
    # state[kind of the last separator][DLA steps] = least GPU time; kind 1 = DLA
    first = order[0]
    state = np.full((2, steps), math.inf)
    state[0, 0] = gpu[first]
    if dla_steps[first] >= 0:
        state[1, dla_steps[first]] = 0.0
    for start, end in itertools.pairwise(bounds):
        region = list(range(start + 1, end + 1))
        advanced = _advance(state, start, region, [order[p] for p in region], gpu, dla_steps, tensors)
        if advanced is None:
            return None
        state = advanced
    launch = lm.launch_ns()
    used = np.arange(steps) * QUANTUM_NS / lm.target.cores + launch
    used[0] = 0.0  # no DLA time: the all-GPU plan (or DLA groups under one step: GPU time still bounds them)
    value = float(np.min(np.maximum(state.min(axis=0), used)))
    return None if math.isinf(value) else math.ceil(value - 1e-6)


def _advance(state: np.ndarray, start: int, region: list[int], groups: list[int], gpu: np.ndarray,
             dla_steps: np.ndarray, tensors: dict[int, list[tuple[list[int], float, float]]]) -> np.ndarray | None:
    """The DP's step over one region (the positions after separator `start` up to and including the next):
    every device choice of its DLA-capable groups, for each device of `start`, kept as the least GPU time per
    DLA time and per device of the region's last group."""
    capable = [k for k, g in enumerate(groups) if dla_steps[g] >= 0]
    if len(capable) > MAX_REGION:
        return None
    choices = np.array([[(c >> b) & 1 for b in range(len(capable))] for c in range(1 << len(capable))],
                       dtype=bool).reshape(1 << len(capable), len(capable))
    on_dla = np.zeros((len(choices), len(region) + 1), dtype=bool)  # column 0: the separator `start`
    on_dla[:, [k + 1 for k in capable]] = choices
    column = {p: k + 1 for k, p in enumerate(region)}
    column[start] = 0
    gpu_time = (~on_dla[:, 1:]) @ gpu[groups]
    dla_time = on_dla[:, 1:] @ np.maximum(dla_steps[groups], 0)
    out = np.full_like(state, math.inf)
    for kind in (0, 1):
        if np.isinf(state[kind]).all():
            continue
        on = on_dla.copy()
        on[:, 0] = bool(kind)
        copies = np.zeros(len(choices))
        for p in [start, *region[:-1]]:
            for consumers, to_dla, to_gpu in tensors.get(p, ()):
                if any(c not in column for c in consumers):
                    return None  # not a region between separators (cannot happen in a topological order)
                src = on[:, column[p]]
                dst = on[:, [column[c] for c in consumers]]
                copies += to_dla * (~src & dst.any(axis=1)) + to_gpu * (src & (~dst).any(axis=1))
        total = gpu_time + copies
        last = on[:, -1].astype(int)
        for end_kind in (0, 1):
            rows = last == end_kind
            if not rows.any():
                continue
            for d, g_ns in _frontier(dla_time[rows], total[rows]):
                shifted = state[kind, :state.shape[1] - d] + g_ns
                out[end_kind, d:] = np.minimum(out[end_kind, d:], shifted)
    return out


def _frontier(dla: np.ndarray, gpu: np.ndarray) -> list[tuple[int, float]]:
    """The (DLA steps, GPU time) pairs no other pair beats in both."""
    keep: list[tuple[int, float]] = []
    for d, g in sorted(zip(dla.tolist(), gpu.tolist())):
        if not keep or g < keep[-1][1]:
            keep.append((int(d), float(g)))
    return keep
