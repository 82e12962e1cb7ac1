"""Lower bounds computed before any CP-SAT model is built: each group at its cheapest option, nothing else.

Every other term of the objective (transfers, reformats, loadable launches) is non-negative, and the
request's constraints only remove options, so these bound every plan the exact model could return. When
the best baseline already meets the bound it is proven optimal with no model at all, and past the exact
model's size the bound gives the handed-over baseline a real gap instead of 100%.
"""

from __future__ import annotations

from optimizer.latency import LatencyModel, group_options
from optimizer.solver._request import PlanRequest


def _dual_stream_factor(device: str) -> int:
    """Dual-stream counts two frames: each DLA core one, the shared engines (GPU, NPU, CPU) both."""
    return 1 if device == "dla" else 2


def _cheapest(lm: LatencyModel, g: int, request: PlanRequest, weighted: bool) -> int:
    group = lm.groups.groups[g]
    pools: list[int | None] = [*sorted(set(lm.loadable_sram))] or [None]
    best = None
    for option in group_options(lm, g, request.allowed_precisions):
        if request.sparsity == "off" and option.sparsity != "dense":
            continue
        if option.device == "dla":
            ns = min(lm.option_ns(group, option, sram_bytes=pool) if pool is not None
                     else lm.option_ns(group, option) for pool in pools)
        else:
            ns = lm.option_ns(group, option)
        if weighted:
            ns *= _dual_stream_factor(option.device)
        best = ns if best is None else min(best, ns)
    return 0 if best is None else int(best)


def engine_count(lm: LatencyModel) -> int:
    """Engines that can share the work of one frame: the GPU, each DLA core, the NPU (its cores are one
    engine: a split layer's cost already counts them), the CPU."""
    return max(len(lm.target.devices), 1)


def cheapest_bound_ns(lm: LatencyModel, request: PlanRequest) -> int:
    """A lower bound on the objective CP-SAT minimises for this request (latency: every group in sequence;
    throughput: the busiest engine carries at least its share of the cheapest work and the costliest group;
    dual-stream: the same with each option's frame count)."""
    groups = range(len(lm.groups.groups))
    if request.objective == "latency":
        # the per-inference overhead is in every plan's latency, whatever the placement
        return sum(_cheapest(lm, g, request, weighted=False) for g in groups) + lm.inference_ns()
    weighted = request.objective == "dual-stream"
    cheapest = [_cheapest(lm, g, request, weighted) for g in groups]
    if not cheapest:
        return 0
    engines = engine_count(lm) - (1 if weighted and "dla1" in lm.target.devices else 0)
    return max(max(cheapest), -(-sum(cheapest) // max(engines, 1)))
