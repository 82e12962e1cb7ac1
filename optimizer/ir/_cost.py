"""Work per node: MACs for the matrix ops, one op per output element (times the window) otherwise."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from optimizer.ir._graph import Shape, is_static


def _elements(shape: Shape) -> int:
    if not is_static(shape):
        return 0
    return math.prod(shape) if shape else 1


def node_work(op_type: str, attrs: Mapping[str, Any], in_shapes: list[Shape],
              out_shapes: list[Shape]) -> tuple[int, int]:
    """(macs, elementwise_ops) at the model's batch; zero where shapes are unknown."""
    out = out_shapes[0] if out_shapes else None
    out_elems = _elements(out)
    weight = in_shapes[1] if len(in_shapes) > 1 else None
    if op_type == "Conv" and weight is not None and out_elems:
        return out_elems * _elements(weight[1:]), 0
    if op_type == "ConvTranspose" and weight is not None and in_shapes[0] is not None:
        group = int(attrs.get("group", 1) or 1)
        per_input = _elements(weight) // max(_elements(weight[:1]), 1) * group if weight else 0
        return _elements(in_shapes[0]) * per_input // max(group, 1), 0
    if op_type == "Gemm" and in_shapes[0] is not None and out_elems:
        a = in_shapes[0]
        k = a[0] if attrs.get("transA") else a[-1]
        return out_elems * (k if isinstance(k, int) else 0), 0
    if op_type in ("MatMul", "MatMulInteger", "QLinearMatMul") and in_shapes[0] and out_elems:
        k = in_shapes[0][-1]
        return out_elems * (k if isinstance(k, int) else 0), 0
    if op_type in ("LSTM", "GRU", "RNN") and in_shapes[0] is not None and weight is not None:
        seq_batch = _elements(in_shapes[0]) // max(in_shapes[0][-1] if isinstance(in_shapes[0][-1], int) else 1, 1)
        recurrence = in_shapes[2] if len(in_shapes) > 2 else None
        return seq_batch * (_elements(weight) + _elements(recurrence)), 0
    if op_type in ("MaxPool", "AveragePool", "LpPool") and attrs.get("kernel_shape"):
        return 0, out_elems * math.prod(attrs["kernel_shape"])
    if op_type in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean", "ReduceSum",
                   "ReduceMax", "ReduceMin", "ReduceL2", "ReduceProd", "Softmax", "LogSoftmax",
                   "LayerNormalization", "InstanceNormalization", "LRN"):
        return 0, max(_elements(in_shapes[0]) if in_shapes else 0, out_elems)
    return 0, out_elems
