"""A fixed deployment (accelerator, precision, batch, cores, metric) and the figure it is predicted to reach.

Published measurements come from what a vendor tool did in one situation, not from edgeplan's best plan.
Reproducing them needs that tool's placement, scored by the planner's own latency model, so a good fit
here means the planner's costs are right. A Scenario keeps each group's Work apart from the constants so
calibration can rescore it under new constants without rebuilding anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from optimizer.catalog import Catalog, Target
from optimizer.check import CheckReport, check_graph
from optimizer.errors import BadInputError
from optimizer.fusion import GroupGraph, build_groups
from optimizer.ir import load_model
from optimizer.latency import (
    DeviceConstants,
    LatencyModel,
    Option,
    Placement,
    Profile,
    evaluate,
)
from optimizer.latency._contention import slowdown
from optimizer.latency._model import Work, dram_bytes, inference_work, work_seconds
from optimizer.latency._postprocess import nms_seconds
from optimizer.plan._baselines import gpu_only, trt_default

ACCELERATORS = ("gpu", "dla", "npu", "cpu", "auto")
METRICS = ("latency", "throughput")
GPU_SHARE_CAP = 0.9  # a GPU engine beside DLA engines keeps at least this share of the GPU for itself


@dataclass(frozen=True)
class Situation:
    accelerator: str  # gpu | dla (with GPU fallback) | npu (with CPU fallback) | auto (the planner's plan)
    precision: str
    batch: int = 1
    cores: int = 1  # DLA cores, one engine each, all fed; or NPU cores one inference is split over
    metric: str = "latency"
    sparse: bool = False  # RKNN sparse-weight build
    gpu_batch: int = 0  # > 0: a GPU engine at this batch runs beside the DLA engines (MLPerf Offline)
    io_included: bool = True  # False: model I/O layout conversion is outside the timed region (rknn eval)
    tf32: bool = True  # False: TensorRT built with --noTF32 (FP32 layers on CUDA cores, not tensor cores)
    nms: bool = False  # the timed region also runs box decoding + NMS on the GPU (MLPerf detection harnesses)
    separate_runs: bool = False  # each DLA core's engine was timed on its own and the rates added (DLA-SW)
    host_timed: bool = True  # False: the figure is the engine's GPU-side time alone (trtexec "GPU latency")
    default_formats: bool = False  # TensorRT's default I/O formats (trtexec without --inputIOFormats/--outputIOFormats)

    def command(self, model: str, target: str) -> str:
        """The `edgeplan predict` command line that reproduces this situation's figure."""
        parts = ["edgeplan", "predict", model, "--target", target, "--accelerator", self.accelerator, "--precision",
                 self.precision, "--batch", str(self.batch), "--cores", str(self.cores), "--metric", self.metric]
        if self.gpu_batch:
            parts += ["--gpu-batch", str(self.gpu_batch)]
        if self.sparse:
            parts.append("--sparse")
        if not self.io_included:
            parts.append("--no-io")
        if not self.tf32:
            parts.append("--noTF32")
        if self.nms:
            parts.append("--nms")
        if self.separate_runs:
            parts.append("--separate-runs")
        if not self.host_timed:
            parts.append("--engine-time")
        if self.default_formats:
            parts.append("--default-formats")
        return " ".join(parts)

    def describe(self) -> str:
        text = f"{self.accelerator} {self.precision} batch {self.batch}"
        if self.accelerator in ("dla", "npu"):
            text += f", {self.cores} core{'s' if self.cores > 1 else ''}"
        if self.gpu_batch:
            text += f" + GPU engine at batch {self.gpu_batch}"
        if not self.tf32 and self.precision == "fp32":
            text += ", no TF32"
        if self.nms:
            text += ", GPU NMS"
        if self.separate_runs:
            text += ", cores timed apart"
        if not self.host_timed:
            text += ", engine time"
        if self.default_formats:
            text += ", default formats"
        return text + (", sparse weights" if self.sparse else "")


@dataclass(frozen=True)
class Stage:
    """One engine (one stream): each group's device kind and Work, plus the costs no constant changes."""

    works: tuple[tuple[str, Work], ...]
    fixed_s: float  # transfers, precision changes, loadable launches
    fixed_busy_s: Mapping[str, float]  # the same, by the engine that does them
    key: str  # the target's calibration key
    bandwidth: float
    sram_bytes: int
    generation: str = ""  # the target's hardware generation: a fold without the key's rows borrows from it


@dataclass(frozen=True)
class Scenario:
    situation: Situation
    target: str
    stage: Stage
    gpu_stage: Stage | None
    accelerator_share: float  # of the model's MACs, on the accelerator


@dataclass(frozen=True)
class Figure:
    latency_s: float  # one inference of the whole batch, one stream
    throughput: float  # items per second over every stream

    def value(self, metric: str) -> float:
        return self.latency_s * 1e3 if metric == "latency" else self.throughput


Constants = Callable[[str, str], DeviceConstants]  # (calibration key, device kind) -> constants


def stage_times(stage: Stage, constants: Constants) -> tuple[float, dict[str, float]]:
    """(latency in s, busy seconds per device kind) of one engine under the given constants."""
    busy = dict(stage.fixed_busy_s)
    total = stage.fixed_s
    for device, work in stage.works:
        seconds = work_seconds(work, constants(stage.key, device), stage.bandwidth, stage.sram_bytes)
        if not work.launches:  # the per-inference overhead is host work, on no engine
            busy[device] = busy.get(device, 0.0) + seconds
        total += seconds
    return total, busy


def stage_dram_bytes(stage: Stage, constants: Constants) -> float:
    return sum(dram_bytes(work, constants(stage.key, device), stage.sram_bytes) for device, work in stage.works)


def streams_of(situation: Situation) -> int:
    return situation.cores if situation.accelerator == "dla" else 1


def running_together(situation: Situation) -> int:
    """DLA streams that run at the same time, sharing the DRAM and the GPU: all of them, or one when each
    core's engine was timed on its own and the figures added (`separate_runs`)."""
    return 1 if situation.separate_runs else streams_of(situation)


def concurrent(situation: Situation) -> bool:
    """Several engines share the DRAM: a throughput over DLA streams run together, or a GPU engine beside them."""
    return situation.metric == "throughput" and (running_together(situation) > 1 or situation.gpu_batch > 0)


def _period(situation: Situation, latency: float, busy: Mapping[str, float]) -> tuple[float, float]:
    """(period of one accelerator stream, the share of the GPU its fallback work takes)."""
    together = running_together(situation)
    period = max(latency, together * busy.get("gpu", 0.0))
    return period, min(GPU_SHARE_CAP, together * busy.get("gpu", 0.0) / period)


def combine(situation: Situation, latency: float, busy: Mapping[str, float],
            gpu_latency: float | None = None) -> Figure:
    """Streams in parallel: each DLA core runs its own engine, and they share the GPU for fallback work."""
    streams = streams_of(situation)
    period, dla_share = _period(situation, latency, busy)
    throughput = streams * situation.batch / period
    if gpu_latency is not None:
        throughput += (1.0 - dla_share) * situation.gpu_batch / gpu_latency
    return Figure(latency_s=latency, throughput=throughput)


def contention(situation: Situation, stream_rate: float, gpu_rate: float, bandwidth: float) -> tuple[float, float]:
    """(time factor of each accelerator stream, of the GPU engine) while they run together: PCCS's slowdown
    (optimizer/latency/_contention.py) at the DRAM throughput each one's co-runners demand on their own,
    in percent of the DRAM peak. `stream_rate`, `gpu_rate`: bytes/s of one stream, of the GPU engine."""
    streams = running_together(situation)
    kind = "dla" if situation.accelerator == "dla" else "gpu"
    stream_x = 100.0 * ((streams - 1) * stream_rate + gpu_rate) / bandwidth
    gpu_x = 100.0 * streams * stream_rate / bandwidth
    return slowdown(kind, stream_x), (slowdown("gpu", gpu_x) if situation.gpu_batch else 1.0)


def score(scenario: Scenario, constants: Constants) -> Figure:
    latency, busy = stage_times(scenario.stage, constants)
    gpu_stage = scenario.gpu_stage
    gpu_latency = stage_times(gpu_stage, constants)[0] if gpu_stage else None
    situation = scenario.situation
    if not concurrent(situation):
        return combine(situation, latency, busy, gpu_latency)
    stream_rate = stage_dram_bytes(scenario.stage, constants) / latency
    gpu_rate = stage_dram_bytes(gpu_stage, constants) / gpu_latency if gpu_stage and gpu_latency else 0.0
    slow, gpu_slow = contention(situation, stream_rate, gpu_rate, scenario.stage.bandwidth)
    figure = combine(situation, latency * slow, {k: v * slow for k, v in busy.items()},
                     gpu_latency * gpu_slow if gpu_latency is not None else None)
    return Figure(latency_s=latency, throughput=figure.throughput)  # latency: one inference on its own


# ---- building a scenario --------------------------------------------------------------------------
def _check(situation: Situation, target: Target, where: str) -> None:
    acc = situation.accelerator
    if acc not in ACCELERATORS:
        raise BadInputError(f"--accelerator must be one of {', '.join(ACCELERATORS)}, got '{acc}'", file=where)
    if situation.metric not in METRICS:
        raise BadInputError(f"--metric must be one of {', '.join(METRICS)}, got '{situation.metric}'", file=where)
    if acc in ("dla", "npu") and target.accelerator != acc:
        raise BadInputError(f"{target.id} has no {acc.upper()}; its accelerator is {target.accelerator}", file=where)
    if acc in ("dla", "npu") and not target.has_accelerator:
        raise BadInputError(f"{target.id} has no {acc.upper()}: use --accelerator {target.fallback}", file=where)
    if acc == "gpu" and "gpu" not in target.precisions:
        raise BadInputError(f"{target.id} has no GPU", file=where)
    if acc == "cpu" and "cpu" not in target.precisions:
        raise BadInputError(f"--accelerator cpu (the whole model on the SoC's CPU) is modelled for RKNN targets, "
                            f"not {target.id}", file=where)
    device = {"auto": target.accelerator if target.has_accelerator else target.fallback}.get(acc, acc)
    if situation.precision not in target.precisions.get(device, ()):
        raise BadInputError(f"{device} on {target.id} offers {', '.join(target.precisions.get(device, ()))}, "
                            f"not {situation.precision}", file=where)
    most = 1 if acc in ("gpu", "cpu") else max(target.cores, 1)  # a GPU-only module still runs its one GPU engine
    if not 1 <= situation.cores <= most:
        raise BadInputError(f"--cores must be 1..{most} on {target.id}, got {situation.cores}", file=where)
    if situation.batch < 1 or situation.gpu_batch < 0:
        raise BadInputError(f"--batch must be >= 1, got {situation.batch}", file=where)
    if situation.sparse and not (acc == "npu" and target.features.get("sparse")):
        raise BadInputError(f"sparse weights are modelled for the NPU of RK3576/RV1126B only, not {acc} on "
                            f"{target.id}", file=where)
    if situation.gpu_batch and acc != "dla":
        raise BadInputError("a concurrent GPU engine (gpu_batch) goes with --accelerator dla", file=where)
    if situation.separate_runs and (acc != "dla" or situation.gpu_batch or situation.metric != "throughput"):
        raise BadInputError("--separate-runs (each DLA core timed on its own, the rates added) goes with "
                            "--accelerator dla --metric throughput and no --gpu-batch", file=where)
    if not situation.host_timed and acc not in ("gpu", "dla"):
        raise BadInputError("--engine-time (the TensorRT engine's GPU-side time, no host enqueue/sync) goes with "
                            "--accelerator gpu or dla", file=where)
    if situation.default_formats and acc not in ("gpu", "dla"):
        raise BadInputError("--default-formats (TensorRT's FP32 linear model I/O, reformatted on the GPU) goes "
                            "with --accelerator gpu or dla", file=where)
    if situation.nms and "gpu" not in target.precisions:
        raise BadInputError(f"--nms runs NMS on the GPU; {target.id} has none", file=where)


def _npu(model: LatencyModel, situation: Situation) -> tuple[Placement, ...]:
    """rknn-toolkit2's default placement, split over the requested cores where the layer allows it."""
    out = []
    for group in model.groups.groups:
        if ("npu", situation.precision) not in group.support:
            out.append(Placement(Option("cpu", "fp32")))
            continue
        cores = situation.cores if group.multicore else 1
        option = Option("npu", situation.precision, cores=cores)
        sparse = [m for m in group.sparsity_modes if m != "dense"] if situation.sparse else []
        if sparse and cores == 1:
            option = min((Option("npu", situation.precision, 1, m) for m in sparse),
                         key=lambda o: (model.option_ns(group, o), o.sparsity))
        out.append(Placement(option))
    return tuple(out)


def _placements(model: LatencyModel, situation: Situation, catalog: Catalog,
                planned: tuple[Placement, ...] | None) -> tuple[Placement, ...]:
    allowed = frozenset({situation.precision})
    if situation.accelerator == "auto":
        assert planned is not None
        return planned
    if situation.accelerator == "gpu":
        return gpu_only(model, allowed)
    if situation.accelerator == "dla":
        return trt_default(model, int(catalog.rule("DLA-LOADABLES").params["max"]), allowed)
    if situation.accelerator == "cpu":  # the whole model on the CPU: no hand-over, no NPU layout
        return tuple(Placement(Option("cpu", situation.precision)) for _ in model.groups.groups)
    return _npu(model, situation)


def _nms_s(model: LatencyModel) -> float:
    """GPU seconds of decoding + NMS over every model output, per inference of the whole batch
    (optimizer/latency/_postprocess.py)."""
    graph = model.graph
    elements = sum(graph.tensors[t].num_elements or 0 for t in graph.outputs if t in graph.tensors) * model.batch
    gpu = model.constants("gpu")
    return nms_seconds(elements, model.bandwidth, gpu.bandwidth_efficiency, gpu.layer_overhead_us)


def _stage(model: LatencyModel, placements: tuple[Placement, ...], nms: bool = False,
           host_timed: bool = True, default_formats: bool = False) -> Stage:
    """The evaluator's breakdown, split into what constants change (each group's Work) and what they do not
    (transfers, precision changes, launches: whatever each engine is busy with beyond its groups).
    `host_timed` False leaves out the per-inference host overhead: a harness that reports trtexec's GPU-side
    time (CUDA events recorded on the stream around the engine) never sees the enqueue and the stream sync.
    `default_formats` scores the DLA I/O and hand-overs in TensorRT's defaults (kDLA_LINEAR, FP32 model I/O
    reformatted on the GPU) and a GPU engine's FP32 linear model I/O reformatted to its precision: what
    trtexec builds without --inputIOFormats/--outputIOFormats."""
    breakdown = evaluate(model, placements, default_formats)
    on_groups: dict[str, int] = {}
    for p, ns in zip(placements, breakdown.group_ns):
        on_groups[p.device] = on_groups.get(p.device, 0) + ns
    fixed_busy: dict[str, float] = {}
    for device, ns in breakdown.busy_ns.items():
        extra = ns - on_groups.get(device, 0)
        if extra:
            kind = "dla" if device.startswith("dla") else device
            fixed_busy[kind] = fixed_busy.get(kind, 0.0) + extra / 1e9
    works = tuple((p.option.device, model.work(g, p.option, default_formats))
                  for g, p in zip(model.groups.groups, placements))
    if host_timed:
        works += ((model.host_device, inference_work()),)  # fitted with the host device's constants
    fixed_ns: float = breakdown.total_ns - sum(breakdown.group_ns) - breakdown.inference_ns
    if nms:  # host-visible GPU work of every inference, wherever the network ran
        post = _nms_s(model)
        fixed_ns += post * 1e9
        fixed_busy["gpu"] = fixed_busy.get("gpu", 0.0) + post
    return Stage(works=works, fixed_s=fixed_ns / 1e9,
                 fixed_busy_s=MappingProxyType(fixed_busy), key=model.target.calibration,
                 bandwidth=model.bandwidth, sram_bytes=model.sram_bytes, generation=model.target.generation)


def _accelerator_share(model: LatencyModel, placements: tuple[Placement, ...]) -> float:
    graph = model.graph
    total = on = 0
    for group, p in zip(model.groups.groups, placements):
        macs = sum(graph.node(m).macs for m in group.members)
        total += macs
        on += macs if p.option.device in ("dla", "npu") else 0
    return on / total if total else 0.0


@dataclass(frozen=True)
class Checked:
    """A model checked on a target, reusable across situations (calibration scores many per model)."""

    path: str
    report: CheckReport
    groups: GroupGraph


def check_model(model_path: str | Path, target_id: str, catalog: Catalog,
                input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Checked:
    graph = load_model(model_path, input_shapes)
    report = check_graph(graph, catalog, target_id)
    return Checked(path=str(model_path), report=report, groups=build_groups(report))


def prepare(model_path: str | Path, target_id: str, situation: Situation, catalog: Catalog, profile: Profile,
            *, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
            planned: tuple[Placement, ...] | None = None, checked: Checked | None = None) -> Scenario:
    """The scenario of one situation; `planned` carries the planner's placements for accelerator auto."""
    target = catalog.target(target_id)
    _check(situation, target, str(model_path))
    checked = checked or check_model(model_path, target_id, catalog, input_shapes)
    exported = checked.report.graph.batch_size
    if situation.batch % exported or (situation.gpu_batch and situation.gpu_batch % exported):
        raise BadInputError(f"the model is exported at batch {exported}; --batch must be a multiple of it",
                            file=str(model_path))
    report, groups = checked.report, checked.groups

    # the whole model on the CPU: an RKNN output relayout's node runs there too, not on the NPU
    io = {**report.io, "cpu_relayout": {}} if situation.accelerator == "cpu" else report.io

    def latency_model(batch: int) -> LatencyModel:
        return LatencyModel(groups, catalog, target, profile, io=io, batch=batch // exported,
                            io_costs=situation.io_included, tf32=situation.tf32,
                            fp32_model_io=situation.default_formats)

    model = latency_model(situation.batch)
    placements = _placements(model, situation, catalog, planned)
    gpu_stage = None
    if situation.gpu_batch:
        gpu_model = latency_model(situation.gpu_batch)
        gpu_stage = _stage(gpu_model, gpu_only(gpu_model, frozenset({situation.precision})), situation.nms,
                           situation.host_timed, situation.default_formats)
    return Scenario(situation=situation, target=target_id,
                    stage=_stage(model, placements, situation.nms, situation.host_timed,
                                 situation.default_formats),
                    gpu_stage=gpu_stage,
                    accelerator_share=_accelerator_share(model, placements))
