"""What the vendor tools do by default, as assignments scored by the same latency model."""

from __future__ import annotations

from collections.abc import Mapping

from optimizer.enums import PRECISIONS
from optimizer.latency import Breakdown, LatencyModel, Option, Placement, evaluate, group_options
from optimizer.plan._subgraphs import build_subgraphs

ALL = frozenset(PRECISIONS)


def _fastest(model: LatencyModel, g: int, device: str, allowed: frozenset[str]) -> Option | None:
    options = [o for o in group_options(model, g, allowed) if o.device == device and o.cores == 1
               and o.sparsity == "dense"]
    if not options:
        return None
    group = model.groups.groups[g]
    return min(options, key=lambda o: (model.option_ns(group, o), o.precision))


def _on_gpu(model: LatencyModel, g: int, allowed: frozenset[str]) -> Placement:
    """The fastest allowed GPU precision; the GPU runs everything, so with none allowed, any."""
    option = _fastest(model, g, "gpu", allowed) or _fastest(model, g, "gpu", ALL)
    assert option is not None  # every layer has a GPU option
    return Placement(option)


def gpu_only(model: LatencyModel, allowed: frozenset[str] = ALL) -> tuple[Placement, ...]:
    return tuple(_on_gpu(model, g, allowed) for g in range(len(model.groups.groups)))


def trt_default(model: LatencyModel, limit: int, allowed: frozenset[str] = ALL) -> tuple[Placement, ...]:
    """Every DLA-capable layer on DLA core 0 (INT8 where it can, else FP16), GPU fallback for the rest;
    subgraphs past the loadable limit fall back to the GPU, as TensorRT does."""
    placements = []
    for g, group in enumerate(model.groups.groups):
        dla = [p for p in ("int8", "fp16") if p in allowed and ("dla", p) in group.support]
        if dla:
            placements.append(Placement(Option("dla", dla[0]), core=0, loadable=0))
        else:
            placements.append(_on_gpu(model, g, allowed))
    return assign_loadables(model, tuple(placements), limit, allowed)


def assign_loadables(model: LatencyModel, placements: tuple[Placement, ...], limit: int,
                     allowed: frozenset[str] = ALL) -> tuple[Placement, ...]:
    """Labels convex connected DLA regions as loadables in topological order; past the limit -> GPU.

    One pass, as TensorRT does it: the regions are formed once and those past the limit fall back."""
    unlabelled = tuple(Placement(p.option, p.core, -1) for p in placements)
    regions = [s for s in build_subgraphs(model.groups, unlabelled) if s.device.startswith("dla")]
    label = {g: k for k, region in enumerate(regions[:limit]) for g in region.groups}
    spill = {g for region in regions[limit:] for g in region.groups}
    return tuple(_on_gpu(model, g, allowed) if g in spill else Placement(p.option, p.core, label.get(g, -1))
                 for g, p in enumerate(placements))


def npu_default(model: LatencyModel, allowed: frozenset[str] = ALL) -> tuple[Placement, ...]:
    """rknn-toolkit2's default: one NPU core, one global precision (INT8 when quantizing), CPU for the rest."""
    precision = "int8" if "int8" in allowed and "int8" in model.target.precisions["npu"] else "fp16"
    placements = []
    for group in model.groups.groups:
        if ("npu", precision) in group.support:
            placements.append(Placement(Option("npu", precision, cores=1)))
        else:
            placements.append(Placement(Option("cpu", "fp32")))
    return tuple(placements)


Baselines = Mapping[str, tuple[tuple[Placement, ...], Breakdown]]  # name -> (placements, breakdown)


def baselines(model: LatencyModel, limit: int, allowed: frozenset[str] = ALL) -> Baselines:
    """What the vendor tools would do by default, each as (placements, breakdown) under the same latency model."""
    if model.target.accelerator == "dla":
        gpu = gpu_only(model, allowed)
        trt = trt_default(model, limit, allowed)
        return {"gpu_only": (gpu, evaluate(model, gpu)), "trt_default": (trt, evaluate(model, trt, True))}
    npu = npu_default(model, allowed)
    return {"npu_default": (npu, evaluate(model, npu))}
