"""Rockchip RKNN2 with rknn-toolkit2: one NPU engine whose cores split a layer, and CPU fallback.

Boundary formats are the zero-copy layouts of seed 003 §3.1.6 (NC1HWC2 on the NPU side, FP32 NCHW on the
CPU side), an NPU/CPU hand-over pays rknn_mem_sync and a CPU layout conversion, and exports are a
convert.py for rknn-toolkit2 with hybrid-quantization layers and runtime settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from optimizer.backends._base import Backend, BaselineSpec, BuildFiles, CostView, ExportInputs, OptionView
from optimizer.backends._boundary_facts import rknn_io
from optimizer.backends._rknn_files import convert_script, hybrid_yaml, rknn_settings
from optimizer.catalog import Catalog, Target
from optimizer.fileio import dumps_json, safe_name
from optimizer.ir import BYTES_PER_ELEMENT, Graph

OUTPUT_RELAYOUT = "RKNN-OUTPUT-RELAYOUT"


def cpu_relayouts(verdicts: Mapping[str, Any], accelerator: str) -> dict[str, list[str]]:
    """Per NPU precision, the nodes whose only NPU violation is RKNN-OUTPUT-RELAYOUT: the toolkit runs them on the
    NPU and only the Reshape it appends to their output on the CPU (optimizer/latency/_rknn.py prices that)."""
    out: dict[str, list[str]] = {}
    for name in sorted(verdicts):
        rules: dict[str, set[str]] = {}
        for v in verdicts[name].violations:
            if v.accelerator == accelerator:
                rules.setdefault(v.precision, set()).add(v.rule)
        for precision, found in sorted(rules.items()):
            if found == {OUTPUT_RELAYOUT}:
                out.setdefault(precision, []).append(name)
    return out


def precision_npu(precision: str) -> str:
    """The NPU-side precision of a tensor a CPU layer hands back (the NPU has no FP32)."""
    return precision if precision in ("int8", "fp16") else "fp16"


class RknnBackend(Backend):
    name: ClassVar[str] = "rknn"
    host_device: ClassVar[str] = "npu"  # every RKNN inference is one rknn_run
    transfer_engine: ClassVar[str] = "cpu"
    reformat_engine: ClassVar[str] = "npu"
    baselines: ClassVar[tuple[BaselineSpec, ...]] = (BaselineSpec("npu_default", "accelerator_one_precision"),)
    static_rule: ClassVar[str] = "RKNN-STATIC"
    build_time_folding: ClassVar[bool] = True
    layer_extras: ClassVar[bool] = True

    def boundary_facts(self, graph: Graph, catalog: Catalog, target: Target,
                       verdicts: Mapping[str, Any]) -> dict[str, Any]:
        facts = rknn_io(graph, catalog, target)
        facts["cpu_relayout"] = cpu_relayouts(verdicts, target.accelerator)
        return facts

    def input_format(self, model: CostView, tensor: str, option: OptionView,
                     default_formats: bool = False) -> tuple[str, float]:
        """The RKNN zero-copy cost: none, or a CPU conversion when the input cannot be passed as it is."""
        info = model.graph.tensors[tensor]
        dense = (info.num_elements or 0) * model.batch * BYTES_PER_ELEMENT[option.precision]
        entry = next((e for e in model.io.get("inputs", ()) if e["tensor"] == tensor), None)
        if entry is not None and not entry.get("zero_copy", False):
            return "cpu_convert", float(dense / (model.profile.layout_convert_gbps * 1e9))
        if entry is not None and entry.get("native_layout") == "NC1HWC2" and not model.pass_through:
            # seed 003 §3.1.6: with pass_through=0 the runtime converts NHWC -> NC1HWC2 on the CPU
            return "nhwc->nc1hwc2", float(dense / (model.profile.layout_convert_gbps * 1e9))
        if entry is not None and not model.pass_through:
            # seed 003 §3.1.6, general API: even a zero-copy-ready input is copied by the CPU into the model's
            # input buffer (read + write at DRAM speed), then synced to the device (seed 001, CPU->NPU)
            return entry["native_layout"], float(2 * dense / model.bandwidth + model.profile.memsync_us * 1e-6)
        return entry["native_layout"] if entry else "native", 0.0

    def output_format(self, model: CostView, tensor: str, option: OptionView,
                      default_formats: bool = False) -> tuple[str, float]:
        info = model.graph.tensors[tensor]
        shape = info.shape or ()
        # RKNN-ZC-LAYOUT: native NC1HWC2 output; the caller's NCHW FP32 output (rknn_outputs_get with
        # want_float, seed 003 §3.1.6: "the interface calls the CPU for the type conversion") is written
        # by the CPU at 4 bytes an element, whatever the NPU precision
        fp32 = (info.num_elements or 0) * model.batch * BYTES_PER_ELEMENT["fp32"]
        if len(shape) == 4:
            return "nc1hwc2->nchw", float(fp32 / (model.profile.layout_convert_gbps * 1e9))
        return "undefined", (float(fp32 / (model.profile.layout_convert_gbps * 1e9)) if option.precision != "fp32"
                             else 0.0)

    def transfer(self, model: CostView, tensor: str, src: str, dst: str, precision: str,
                 default_formats: bool = False) -> tuple[str, float]:
        """RKNN-MEMSYNC + RKNN-ZC-LAYOUT: the CPU side is FP32 NCHW."""
        info = model.graph.tensors[tensor]
        elements = info.num_elements or 0
        dense = elements * model.batch * BYTES_PER_ELEMENT[precision]
        profile = model.profile
        cpu_bytes = elements * model.batch * BYTES_PER_ELEMENT["fp32"]
        npu_bytes = dense if src == "npu" else elements * model.batch * BYTES_PER_ELEMENT[precision_npu(precision)]
        seconds = ((profile.memsync_us + profile.handover_us) * 1e-6 + (npu_bytes + cpu_bytes) / model.bandwidth
                   + cpu_bytes / (profile.layout_convert_gbps * 1e9))
        return "nchw", float(seconds)

    def export(self, inputs: ExportInputs) -> BuildFiles:
        """convert.py for rknn-toolkit2 with the whole model, the layers kept in FP16 and the runtime settings."""
        settings = rknn_settings(inputs.plan, inputs.graph, inputs.boundary_facts(), inputs.target.toolkit_platform)
        copy = f"{safe_name(inputs.model_file.stem)}.onnx"
        return BuildFiles(subs=inputs.subs, files=[
            (copy, inputs.model.SerializeToString()), ("convert.py", convert_script(settings, copy)),
            ("custom_quantize_layers.yaml", hybrid_yaml(settings)), ("runtime.json", dumps_json(settings))],
            manifest={"build": ["convert.py", "custom_quantize_layers.yaml", "runtime.json"]})
