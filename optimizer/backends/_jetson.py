"""NVIDIA Jetson with TensorRT: a GPU and 0-2 DLA cores, each core an engine of its own built as loadables.

Boundary formats are the DLA's (DLA-IO-IN/OUT, padded per format), a GPU/DLA hand-over pays a sync and a
reformat where the GPU cannot read the DLA's layout, and exports are trtexec / builder-API scripts for the
chosen TensorRT major."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import onnx

from optimizer.backends._base import Backend, BaselineSpec, BuildFiles, CostView, ExportInputs, OptionView
from optimizer.backends._boundary_facts import dla_facts, dla_hwc4_stride
from optimizer.backends._submodels import SubModel, link_external_data, value_infos
from optimizer.backends._tensorrt_files import boundary_io, build_script, builder_script
from optimizer.backends._tensorrt_typed import calibrate_script, check_opset, plan_typing, typed_submodel
from optimizer.catalog import Catalog, Target
from optimizer.errors import BadInputError
from optimizer.fileio import FileData, dumps_json, safe_name
from optimizer.ir import BYTES_PER_ELEMENT, Graph, node_names
from optimizer.ir._graph import Shape


def padded_bytes(shape: Shape, elements: int, fmt: str, precision: str, hwc4_stride: int) -> int:
    """Bytes of a tensor in a DLA format (DLA-IO-CPAD, DLA-IO-LINEAR-W, DLA-IO-HWC4-STRIDE)."""
    bpe = BYTES_PER_ELEMENT[precision]
    if shape is None or len(shape) != 4 or not all(isinstance(d, int) for d in shape):
        return elements * bpe
    n, c, h, w = (int(d) for d in shape)
    if fmt in ("chw16", "chw32"):
        vec = 16 if fmt == "chw16" else 32
        return n * math.ceil(c / vec) * vec * h * w * bpe
    if fmt == "chw4":
        return n * math.ceil(c / 4) * 4 * h * w * bpe
    if fmt == "linear":
        return n * c * h * w * bpe
    if fmt == "dla_linear":
        step = 64 // bpe
        return n * c * h * math.ceil(w / step) * step * bpe
    if fmt == "dla_hwc4":
        cp = 1 if c == 1 else 4
        row = math.ceil(w * cp * bpe / hwc4_stride) * hwc4_stride
        return n * h * row
    return n * c * h * w * bpe


def dla_formats(catalog: Catalog, target: Target) -> Mapping[str, Any]:
    """DLA-IO-IN/OUT: which I/O formats each DLA type allows, per side."""
    standard: Mapping[str, Any] = catalog.family_of(target).formats.get("standard", {})
    return standard


class JetsonBackend(Backend):
    name: ClassVar[str] = "tensorrt"
    host_device: ClassVar[str] = "gpu"  # every TensorRT engine, DLA ones too, is enqueued on a CUDA stream
    transfer_engine: ClassVar[str] = "gpu"
    reformat_engine: ClassVar[str] = "gpu"
    baselines: ClassVar[tuple[BaselineSpec, ...]] = (
        BaselineSpec("gpu_only", "fallback_fastest"),
        BaselineSpec("trt_default", "accelerator_core0_loadables", default_formats=True))
    static_rule: ClassVar[str] = "DLA-STATIC"
    cores_are_engines: ClassVar[bool] = True
    loadables: ClassVar[bool] = True
    managed_sram: ClassVar[bool] = True
    monotone_precisions: ClassVar[bool] = True
    residual_sum_fusion: ClassVar[bool] = True
    layer_edits: ClassVar[bool] = True
    power_figures: ClassVar[bool] = True

    def tensorrt_rules(self, catalog: Catalog) -> str:
        return catalog.tensorrt

    def loadable_limit(self, catalog: Catalog, target: Target) -> int:
        return int(catalog.rule("DLA-LOADABLES").params["max"]) if target.has_accelerator else 0

    def hwc4_stride(self, catalog: Catalog, target: Target) -> int:
        return dla_hwc4_stride(catalog, target)

    def int8_upgrade_ops(self, catalog: Catalog) -> frozenset[str]:
        return frozenset(catalog.rule("DLA-ACT-INT8-UPGRADE").params["ops"])

    def sub_layer_ops(self, catalog: Catalog, target: Target) -> tuple[frozenset[str], int]:
        """DLA-ELTWISE-XAVIER-SUB: on Xavier an elementwise Sub runs as a Scale plus a Sum."""
        rule = catalog.rule("DLA-ELTWISE-XAVIER-SUB")
        if target.generation not in rule.generations:
            return frozenset(), 1
        return frozenset(rule.params["ops"]), int(rule.params["layers"])

    def boundary_facts(self, graph: Graph, catalog: Catalog, target: Target,
                       verdicts: Mapping[str, Any]) -> dict[str, Any]:
        return dla_facts(graph, catalog, target, verdicts)

    # ---- boundary formats and transfers --------------------------------------------------------------
    def input_format(self, model: CostView, tensor: str, option: OptionView,
                     default_formats: bool = False) -> tuple[str, float]:
        """The cheapest DLA input format (DLA-IO-IN, DLA-IO-HWC4-C)."""
        info = model.graph.tensors[tensor]
        dense = (info.num_elements or 0) * model.batch * BYTES_PER_ELEMENT[option.precision]
        if default_formats:  # trtexec without --inputIOFormats: a linear FP32 tensor reformatted on the GPU
            return "dla_linear", (_reformat_s(model, tensor, "dla_linear", option.precision)
                                  + _thin_input_s(model, tensor, option, "dla_linear"))
        allowed = list(model.formats[model.capability]["input"][option.precision])
        entry = next((e for e in model.io.get("inputs", ()) if e["tensor"] == tensor), None)
        if entry is None or not entry.get(f"dla_hwc4_{option.precision}", False):
            allowed = [f for f in allowed if f != "dla_hwc4"]
        costs = {f: max((padded_bytes(info.shape, info.num_elements or 0, f, option.precision, model.hwc4_stride)
                         * model.batch - dense) / model.bandwidth, 0.0) + _thin_input_s(model, tensor, option, f)
                 for f in allowed}
        best = min(allowed, key=lambda f: (costs[f], allowed.index(f)))
        return best, costs[best]

    def output_format(self, model: CostView, tensor: str, option: OptionView,
                      default_formats: bool = False) -> tuple[str, float]:
        info = model.graph.tensors[tensor]
        dense = (info.num_elements or 0) * model.batch * BYTES_PER_ELEMENT[option.precision]
        if default_formats:
            return "dla_linear", _reformat_s(model, tensor, "dla_linear", option.precision)
        allowed = list(model.formats[model.capability]["output"][option.precision])
        costs = {f: (padded_bytes(info.shape, info.num_elements or 0, f, option.precision, model.hwc4_stride)
                     * model.batch - dense) / model.bandwidth for f in allowed}
        best = min(allowed, key=lambda f: (costs[f], allowed.index(f)))
        return best, max(costs[best], 0.0)

    def transfer(self, model: CostView, tensor: str, src: str, dst: str, precision: str,
                 default_formats: bool = False) -> tuple[str, float]:
        """The cheapest DLA-side format of a GPU/DLA hand-over (TensorRT's kDLA_LINEAR with default_formats)."""
        info = model.graph.tensors[tensor]
        elements = info.num_elements or 0
        dense = elements * model.batch * BYTES_PER_ELEMENT[precision]
        profile = model.profile
        sync = profile.sync_us.get(f"{src}->{dst}", 0.0) * 1e-6
        dla_side_precision = precision if precision in ("int8", "fp16") else "fp16"
        direction = "output" if src == "dla" else "input"
        allowed = [f for f in model.formats[model.capability][direction][dla_side_precision] if f != "dla_hwc4"]
        if default_formats:
            allowed = ["dla_linear"]
        best_fmt, best = "", math.inf
        for fmt in allowed:
            padded = padded_bytes(info.shape, elements, fmt, dla_side_precision, model.hwc4_stride) * model.batch
            seconds = sync + padded / model.bandwidth
            if fmt in ("dla_linear", "chw4") and "gpu" in (src, dst):  # DLA-IO-REFORMAT: GPU kernels cannot read it
                seconds += profile.reformat_us * 1e-6 + 2 * dense / model.bandwidth
            if seconds < best:
                best_fmt, best = fmt, seconds
        return best_fmt, best

    # ---- export ----------------------------------------------------------------------------------
    def export(self, inputs: ExportInputs) -> BuildFiles:
        """build.sh (trtexec) and build_trt.py (builder API) for the TensorRT major; under 11 the sub-models
        carry the plan's precisions as Q/DQ and Cast nodes, with the whole model typed the same way."""
        plan, graph, tensorrt = inputs.plan, inputs.graph, inputs.tensorrt
        formats = dla_formats(inputs.catalog, inputs.target)
        subs, typed = inputs.subs, list[tuple[str, FileData]]()
        if tensorrt == "11":
            subs, typed = _strongly_typed(inputs.model, plan, subs, graph, inputs.model_file, inputs.out, formats)
        for layer in plan["layers"]:  # trtexec takes layer names on its command line: argv cannot hold NUL
            if "\0" in layer["node"]:
                raise BadInputError("a node name with a NUL byte cannot reach trtexec's command line; rename the "
                                    "node", file=str(inputs.model_file), node=layer["node"])
        keep = frozenset(graph.inputs) | frozenset(graph.outputs) if tensorrt == "11" else frozenset()
        io = boundary_io(subs, plan, keep, formats)
        whole = typed[0][0] if typed else os.path.relpath(inputs.model_file.resolve(), inputs.out.resolve())
        files: list[tuple[str, FileData]] = [("build.sh", (build_script(subs, plan, whole, tensorrt, io), 0o755)),
                                             ("build_trt.py", builder_script(subs, plan, tensorrt, io)), *typed]
        return BuildFiles(subs=subs, files=files, manifest={
            "tensorrt": tensorrt, "build": ["build.sh", "build_trt.py", *(name for name, _ in typed)]})


def _reformat_s(model: CostView, tensor: str, fmt: str, precision: str) -> float:
    info = model.graph.tensors[tensor]
    elements = info.num_elements or 0
    padded = padded_bytes(info.shape, elements, fmt, precision, model.hwc4_stride) * model.batch
    elements *= model.batch
    return float(model.profile.reformat_us * 1e-6 + (padded + elements * 4) / model.bandwidth)


def _thin_input_s(model: CostView, tensor: str, option: OptionView, fmt: str) -> float:
    """DLA convolutions take input channels in 32-byte atoms: a thin planar input (C=3) wastes most of
    the first convolution, which kDLA_HWC4's image mode packs into C'=4 (DLA-IO-HWC4-C; assumed cost)."""
    shape = model.graph.shape(tensor)
    if option.device != "dla" or shape is None or len(shape) != 4 or not isinstance(shape[1], int):
        return 0.0
    channels = shape[1]
    atom = 32 // BYTES_PER_ELEMENT[option.precision]
    packed = (1 if channels == 1 else 4) if fmt == "dla_hwc4" else math.ceil(channels / atom) * atom
    if packed <= channels:
        return 0.0
    waste = packed / channels - 1.0
    convs = [c for c in model.graph.consumers(tensor) if c.op_type == "Conv"]
    return waste * sum(model._node_compute_s(c, "dla", option.precision) for c in convs)


def _strongly_typed(model: onnx.ModelProto, plan: dict[str, Any], subs: list[SubModel], graph: Graph,
                    model_file: Path, out: Path, formats: Mapping[str, Any]
                    ) -> tuple[list[SubModel], list[tuple[str, FileData]]]:
    """TensorRT 11: the sub-models with the plan's precisions as tensor types, the whole model typed the same
    way (the single-engine alternative) and the INT8 scales they hold (qdq_scales.json)."""
    check_opset(model, any(layer["precision"] == "int8" for layer in plan["layers"]), str(model_file))
    io = boundary_io(subs, plan, frozenset(graph.inputs) | frozenset(graph.outputs), formats)
    infos = value_infos(model)
    typing = plan_typing(model, plan, subs, infos, io)
    typed = [typed_submodel(sub, typing) for sub in subs]
    source = onnx.ModelProto()
    source.CopyFrom(model)
    for value in source.graph.output:  # inferred shapes, as the sub-models have, so the checker can type it
        if value.name in infos:
            value.CopyFrom(infos[value.name])
    everything = SubModel(index=-1, device="gpu", name=f"{safe_name(model_file.stem)}_typed.onnx",
                          inputs=tuple(graph.inputs), outputs=tuple(graph.outputs),
                          nodes=tuple(node_names(model)), precision="mixed", model=source)
    whole = typed_submodel(everything, typing, whole=True)
    link_external_data(model_file.parent, out, whole.model)
    scales: dict[str, dict[str, Any]] = {}
    for sub in (*typed, whole):
        for tensor in sub.model.graph.initializer:
            base = tensor.name[:-len("__edgeplan_scale")]
            if tensor.name.endswith("__edgeplan_scale") and base in typing.scales:
                scales[base] = {"initializer": tensor.name, "value": typing.scales[base],
                                "from": "weights" if base in typing.weights else "placeholder"}
    listing = {"schema": "edgeplan.qdq-scales/v1", "note": "INT8 scales in the engine ONNX files; 'placeholder' "
               "ones (1.0) are for timing only: python calibrate_qdq.py samples.txt sets them (max|x|/127)",
               "scales": dict(sorted(scales.items()))}
    placeholders = {t: s["initializer"] for t, s in sorted(scales.items()) if s["from"] == "placeholder"}
    original = os.path.relpath(model_file.resolve(), out.resolve())
    script = calibrate_script(original, graph.inputs, placeholders, [sub.name for sub in (*typed, whole)])
    return typed, [(whole.name, whole.model.SerializeToString()), ("qdq_scales.json", dumps_json(listing)),
                   ("calibrate_qdq.py", script)]
