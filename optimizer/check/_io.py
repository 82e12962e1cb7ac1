"""Network-boundary facts: DLA HWC4 input eligibility and RKNN zero-copy layouts and alignment."""

from __future__ import annotations

from typing import Any

from optimizer.catalog import Catalog, Target
from optimizer.ir import Graph


def _rule_params(catalog: Catalog, rule_id: str) -> Any:
    return catalog.rule(rule_id).params


def dla_hwc4_ok(graph: Graph, tensor: str, catalog: Catalog, target: Target, precision: str,
                verdicts: dict[str, Any]) -> tuple[bool, str]:
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


def io_facts(graph: Graph, catalog: Catalog, target: Target, verdicts: dict[str, Any]) -> dict[str, Any]:
    inputs, outputs = [], []
    if target.accelerator == "dla":
        stride = _rule_params(catalog, "DLA-IO-HWC4-STRIDE")[target.generation]
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
    align = int(target.features["zero_copy_align"])
    for name in graph.inputs:
        shape = graph.shape(name) or ()
        static = all(isinstance(d, int) for d in shape)
        entry = {"tensor": name, "shape": list(shape), "align_bytes": align}
        if len(shape) == 4 and static and shape[1] in (1, 3, 4):
            row = shape[3] * shape[1]
            entry.update(native_layout="NHWC", zero_copy=row % align == 0, row_bytes_uint8=row,
                         rule="RKNN-ZC-ALIGN" if row % align else "")
        elif len(shape) == 4:
            entry.update(native_layout="NC1HWC2", zero_copy=static, rule="RKNN-ZC-LAYOUT")
        else:
            total = 1
            for d in shape:
                total *= d if isinstance(d, int) else 0
            entry.update(native_layout="UNDEFINED", zero_copy=static and total % align == 0,
                         rule="RKNN-ZC-ALIGN")
        inputs.append(entry)
    for name in graph.outputs:
        shape = graph.shape(name) or ()
        outputs.append({"tensor": name, "shape": list(shape),
                        "native_layout": "NC1HWC2" if len(shape) == 4 else "UNDEFINED",
                        "int8_model_types": list(target.features["zc_int8_out"])})
    return {"inputs": inputs, "outputs": outputs}


