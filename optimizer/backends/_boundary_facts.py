"""Network-boundary facts: DLA HWC4 input eligibility and RKNN zero-copy layouts, types, alignment and the
CPU conversions the runtime does at the boundary (which the latency model prices)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optimizer.catalog import Catalog, Target
from optimizer.ir import Graph
from optimizer.ir._graph import Dim


def _rule_params(catalog: Catalog, rule_id: str) -> Any:
    return catalog.rule(rule_id).params


def dla_hwc4_ok(graph: Graph, tensor: str, catalog: Catalog, target: Target, precision: str,
                verdicts: Mapping[str, Any]) -> tuple[bool, str]:
    """DLA-IO-HWC4-C: C in {1,3,4}, every consumer a convolution that meets the DLA conv limits."""
    shape = graph.shape(tensor)
    channels = _rule_params(catalog, "DLA-IO-HWC4-C")["channels"]
    if shape is None or len(shape) != 4 or shape[1] not in channels:
        return False, f"DLA-IO-HWC4-C: C must be one of {list(channels)}, dims {list(shape or [])}"
    for consumer in graph.consumers(tensor):
        if consumer.op_type != "Conv":
            return False, f"DLA-IO-HWC4-C: first layer {consumer.name} is {consumer.op_type}, not a convolution"
        if not verdicts[consumer.name].runs_on("dla", precision):
            return False, f"DLA-IO-HWC4-C: first convolution {consumer.name} fails the DLA limits in {precision}"
    return True, ""


def dla_hwc4_stride(catalog: Catalog, target: Target) -> int:
    """DLA-IO-HWC4-STRIDE for the target's generation (a module of a GPU-only family has none: 64, unused)."""
    strides = _rule_params(catalog, "DLA-IO-HWC4-STRIDE")
    if target.generation not in strides and not target.has_accelerator:
        return 64
    return int(strides[target.generation])


def dla_facts(graph: Graph, catalog: Catalog, target: Target, verdicts: Mapping[str, Any]) -> dict[str, Any]:
    """Per model input: whether each DLA precision can read it as kDLA_HWC4, and the row stride it needs."""
    inputs = []
    stride = dla_hwc4_stride(catalog, target)
    for name in graph.inputs:
        entry: dict[str, Any] = {"tensor": name, "shape": list(graph.shape(name) or [])}
        for precision in target.precisions.get("dla", ()):
            ok, why = dla_hwc4_ok(graph, name, catalog, target, precision, verdicts)
            entry[f"dla_hwc4_{precision}"] = ok
            if not ok:
                entry[f"dla_hwc4_{precision}_why"] = why
        entry["hwc4_w_stride_bytes"] = stride
        inputs.append(entry)
    return {"inputs": inputs}


BYTES = {"int8": 1, "fp16": 2}


def _elements(shape: tuple[Dim, ...]) -> int:
    total = 1
    for d in shape:
        total *= d if isinstance(d, int) else 0
    return total


def native_input_layout(dtype: str, shape: tuple[Dim, ...], params: Any) -> str:
    """RKNN-ZC-LAYOUT: the layout rknn_query(NATIVE_INPUT_ATTR) reports, by rank, dtype and channels."""
    if len(shape) != 4:
        return "UNDEFINED"
    if dtype in params["nhwc_dtypes"] and shape[1] in params["nhwc_channels"]:
        return "NHWC"
    if dtype in params["nc1hwc2_dtypes"]:
        return "NC1HWC2"
    return "NCHW"  # bool/int64 by the seed; other integer dtypes alike (assumed): passed as ONNX lays them out


def _conversion(src: str, dst: str, shape: tuple[Dim, ...], when: str) -> dict[str, Any]:
    """A CPU layout conversion the runtime does on every frame, for the latency model to price."""
    elements = _elements(shape)
    return {"on": "cpu", "from": src, "to": dst, "when": when, "elements": elements,
            "bytes": {p: elements * b for p, b in BYTES.items()}, "rule": "RKNN-ZC-LAYOUT"}


def _model_types(dtype: str) -> dict[str, str]:
    """The tensor type rknn_query reports per model precision: float and 8-bit inputs take the model's."""
    if dtype in ("float32", "float16", "int8", "uint8", "bfloat16", "float64"):
        return {"int8": "int8", "fp16": "float16"}
    return {"int8": dtype, "fp16": dtype}


def rknn_io(graph: Graph, catalog: Catalog, target: Target) -> dict[str, Any]:
    """Seed 003 §3.1.6: per model input its native layout, zero-copy alignment (表3-2), the types a user may
    set (表3-3) and the CPU conversion pass_through=0 costs; per output the native layout, the zero-copy
    types per model precision (表3-6/3-7) and layouts (表3-4), and the conversion to ONNX's NCHW."""
    align = int(target.features["zero_copy_align"])
    layout = _rule_params(catalog, "RKNN-ZC-LAYOUT")
    precisions = [p for p in ("int8", "fp16") if p in target.precisions["npu"]]
    inputs, outputs = [], []
    for name in graph.inputs:
        shape = tuple(graph.shape(name) or ())
        dtype = graph.tensors[name].dtype
        static = bool(shape) and all(isinstance(d, int) for d in shape)
        native = native_input_layout(dtype, shape, layout)
        types = {p: t for p, t in _model_types(dtype).items() if p in precisions}
        entry: dict[str, Any] = {
            "tensor": name, "shape": list(shape), "dtype": dtype, "align_bytes": align, "native_layout": native,
            "native_types": types,
            "user_types": {p: list(layout["input_user_types"].get(t, [t])) for p, t in types.items()},
            "conversion": None}
        if native == "NHWC":
            row = int(shape[3]) * int(shape[1]) if static else 0
            entry.update(zero_copy=static and row % align == 0, row_bytes_uint8=row,
                         rule="RKNN-ZC-ALIGN" if not static or row % align else "")
        elif native == "NC1HWC2":
            entry.update(zero_copy=static, rule="RKNN-ZC-LAYOUT", pass_through_layout="NC1HWC2",
                         conversion=_conversion("NHWC", "NC1HWC2", shape, "pass_through=0") if static else None)
        elif native == "NCHW":
            entry.update(zero_copy=static, rule="RKNN-ZC-LAYOUT")
        else:
            total = _elements(shape)
            entry.update(zero_copy=static and total % align == 0, rule="RKNN-ZC-ALIGN")
        inputs.append(entry)
    fp16_types = list(_rule_params(catalog, "RKNN-ZC-OUT")["fp16_model_types"])
    for name in graph.outputs:
        shape = tuple(graph.shape(name) or ())
        four_d = len(shape) == 4
        static = bool(shape) and all(isinstance(d, int) for d in shape)
        outputs.append({
            "tensor": name, "shape": list(shape), "native_layout": "NC1HWC2" if four_d else "UNDEFINED",
            "layouts": list(layout["output_layouts_4d"]) if four_d else ["UNDEFINED"],
            "int8_model_types": list(target.features["zc_int8_out"]),
            "fp16_model_types": fp16_types if "fp16" in precisions else [],
            "conversion": _conversion("NC1HWC2", "NCHW", shape, "NCHW output requested") if four_d and static
            else None})
    return {"inputs": inputs, "outputs": outputs}
