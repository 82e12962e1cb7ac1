"""What the vendor tools do by default, as assignments scored by the same latency model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

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
    fallback = model.target.fallback  # the GPU of a Jetson
    option = _fastest(model, g, fallback, allowed) or _fastest(model, g, fallback, ALL)
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
    return accelerator_one_precision(model, 0, allowed)


def accelerator_one_precision(model: LatencyModel, limit: int, allowed: frozenset[str] = ALL
                              ) -> tuple[Placement, ...]:
    """One accelerator core, one global precision (INT8 when allowed, else FP16), FP32 fallback for the rest."""
    accelerator, fallback = model.target.accelerator, model.target.fallback
    precision = "int8" if "int8" in allowed and "int8" in model.target.precisions[accelerator] else "fp16"
    placements = []
    for group in model.groups.groups:
        if (accelerator, precision) in group.support:
            placements.append(Placement(Option(accelerator, precision, cores=1)))
        else:
            placements.append(Placement(Option(fallback, "fp32")))
    return tuple(placements)


Baselines = Mapping[str, tuple[tuple[Placement, ...], Breakdown]]  # name -> (placements, breakdown)


Strategy = Callable[[LatencyModel, int, frozenset[str]], tuple[Placement, ...]]
STRATEGIES: Mapping[str, Strategy] = MappingProxyType({  # what a backend's BaselineSpec.strategy names
    "fallback_fastest": lambda model, limit, allowed: gpu_only(model, allowed),
    "accelerator_core0_loadables": trt_default,
    "accelerator_one_precision": accelerator_one_precision,
})


def baselines(model: LatencyModel, limit: int, allowed: frozenset[str] = ALL) -> Baselines:
    """What the vendor tools would do by default (the backend's list), each as (placements, breakdown) under
    the same latency model."""
    out = {}
    for spec in model.backend.baselines:
        placements = STRATEGIES[spec.strategy](model, limit, allowed)
        out[spec.name] = (placements, evaluate(model, placements, spec.default_formats))
    return out
