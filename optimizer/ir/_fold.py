"""Folding of constant shape arithmetic, so Reshape targets and Resize scales become known.

Only small shape-arithmetic ops are folded, with onnx's reference implementations; anything
that could allocate a large array is sized before it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference.ops import load_op

from optimizer.ir._graph import Graph, Shape, is_static

MAX_FOLD_ELEMENTS = 1 << 16

FOLDABLE = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Add", "Sub",
    "Mul", "Div", "Mod", "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Reshape", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "Min", "Max",
    "ConstantOfShape", "Range", "Expand", "Identity", "ReduceProd", "ReduceSum", "ReduceMax",
    "ReduceMin", "Transpose", "Flatten", "Split", "Tile", "Pow", "Reciprocal", "Sign", "Constant",
    "GatherElements", "CastLike", "Round",
    # further ops exporters put in shape arithmetic (TF 'same' padding clips, torch index updates, masks)
    "Clip", "ScatterND", "ScatterElements", "CumSum", "Trilu", "ArgMax", "ArgMin", "ReduceMean", "NonZero",
    "TopK", "Xor", "Pad", "OneHot", "Compress", "Unique", "IsNaN", "IsInf", "Sum", "Mean", "BitShift",
    "GatherND",
})


def constant_node_value(node: onnx.NodeProto) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            if attr.t.data_location == onnx.TensorProto.EXTERNAL:
                return None
            return numpy_helper.to_array(attr.t)
        if attr.name == "value_float":
            return np.array(attr.f, dtype=np.float32)
        if attr.name == "value_floats":
            return np.array(list(attr.floats), dtype=np.float32)
        if attr.name == "value_int":
            return np.array(attr.i, dtype=np.int64)
        if attr.name == "value_ints":
            return np.array(list(attr.ints), dtype=np.int64)
    return None


def _static_shape(shapes: Mapping[str, Shape], name: str) -> tuple[int, ...] | None:
    shape = shapes.get(name)
    return tuple(shape) if is_static(shape) else None


def _fits(node: onnx.NodeProto, values: list[np.ndarray], most: int = MAX_FOLD_ELEMENTS) -> bool:
    """Rejects folds whose output size is data-dependent and could be huge."""
    op = node.op_type
    try:
        if op == "ConstantOfShape":
            return int(np.prod(values[0])) <= most
        if op == "Range":
            start, limit, delta = (float(v) for v in values[:3])
            return delta != 0 and abs((limit - start) / delta) <= most
        if op == "Expand":
            out = np.broadcast_shapes(values[0].shape, tuple(int(d) for d in values[1]))
            return int(np.prod(out)) <= most
        if op == "Tile":
            return values[0].size * int(np.prod(values[1])) <= most
    except (ValueError, TypeError, OverflowError):
        return False
    return all(v.size <= most for v in values)


def fold_node(node: onnx.NodeProto, opset: int, known: Mapping[str, np.ndarray],
              shapes: Mapping[str, Shape]) -> list[np.ndarray] | None:
    """The node's output values if they are build-time constants, else None."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in FOLDABLE:
        return None
    if node.op_type == "Constant":
        value = constant_node_value(node)
        return None if value is None else [value]
    if node.op_type in ("Shape", "Size"):
        shape = _static_shape(shapes, node.input[0]) if node.input else None
        if shape is None:
            return None
        if node.op_type == "Size":
            return [np.array(int(np.prod(shape)), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return [np.array(shape[slice(start, end)], dtype=np.int64)]
    names = list(node.input)
    if not names or any(n and n not in known for n in names):
        return None
    return _run_reference(node, opset, [known[n] if n else None for n in names], MAX_FOLD_ELEMENTS)


def _run_reference(node: onnx.NodeProto, opset: int, values: list[np.ndarray | None],
                   most: int) -> list[np.ndarray] | None:
    """The node's outputs by onnx's reference op, sized before it runs (`_fits`) and after; None when it
    would be too large or the reference op cannot run this instance (the value simply stays unknown)."""
    if not _fits(node, [v for v in values if v is not None], most):
        return None
    try:
        op = load_op("", node.op_type, opset)(
            node, {"log": lambda *_: None, "opsets": {"": opset}, "verbose": 0, "new_ops": None})
        result = op.run(*values)
    except Exception:
        return None
    outputs = [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]
    return None if any(o.size > most for o in outputs) else outputs


BUILD_TIME_MAX_ELEMENTS = 1 << 23  # 64 MiB of int64: the largest index grid in the corpus (MViTv2) is 4.9M


def _proto_attrs(op_type: str, opset: int, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The IR's normalised attributes that the op's schema at this opset declares (the normaliser lifts some
    inputs, such as Unsqueeze's axes, into attributes the op no longer takes), as make_node accepts them."""
    try:
        allowed = onnx.defs.get_schema(op_type, opset).attributes
    except onnx.defs.SchemaError:
        return {}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()
            if k in allowed and isinstance(v, (int, float, str, tuple))}


def build_time_value(graph: Graph, tensor: str, max_elements: int = BUILD_TIME_MAX_ELEMENTS) -> np.ndarray | None:
    """The value of a tensor computed from constants only, evaluated with onnx's reference ops even when it is
    too large for the import's folding (torch writes the indices of a slice assignment as Expand/Unsqueeze/Concat
    of small constants, millions of elements); None when it reads a run-time tensor or a value the IR did not
    keep, or any step would exceed `max_elements`."""
    values: dict[str, np.ndarray] = {}
    order: list[str] = []
    pending, seen = [tensor], set()
    while pending:  # collect the producers to evaluate, depth first
        name = pending.pop()
        if name in seen or name in graph.constants:
            continue
        seen.add(name)
        producer = graph.producer(name)
        if producer is None or producer.opaque or producer.domain not in ("", "ai.onnx"):
            return None
        order.append(producer.name)
        pending.extend(t for t in producer.inputs if t)
    nodes = [graph.node(n) for n in dict.fromkeys(reversed(order))]
    while nodes:
        ready = [n for n in nodes if all(not t or t in graph.constants or t in values for t in n.inputs)]
        if not ready:
            return None
        for node in ready:
            nodes.remove(node)
            args = [None if not t else graph.constants[t] if t in graph.constants else values[t] for t in node.inputs]
            if sum(a.size for a in args if a is not None) > max_elements:
                return None  # sized before it runs: nothing a model holds can make it allocate more
            proto = onnx.helper.make_node(node.op_type, list(node.inputs), list(node.outputs),
                                          **_proto_attrs(node.op_type, graph.opset, node.attrs))
            outputs = _run_reference(proto, graph.opset, args, max_elements)
            if outputs is None:
                return None
            values.update({name: out for name, out in zip(node.outputs, outputs) if name})
    return graph.constants.get(tensor, values.get(tensor))
