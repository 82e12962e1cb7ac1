"""RK3566/RK3568 verdicts that follow from an op the toolkit does not rewrite into its NPU forms.

When rknn-toolkit2 does not recognise an op's pattern (global pooling, an Einsum it can turn into exMatMul),
it lowers the op generically, and on rk3566 every relayout that generic lowering needs runs on the CPU: the
relayout of the op's input is a layer named after the op that made that input, so the producer's verdict
changes too, not only the op's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import data_users, only_user

if TYPE_CHECKING:
    from optimizer.catalog._checks import LayerView
    from optimizer.catalog._schema import Rule
    from optimizer.ir import Graph, Node

_RESHAPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})


def _reduce_axes(graph: Graph, node: Node) -> list[int] | None:
    """The axes as written (attribute before opset 18, else the constant second input)."""
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.constants.get(node.inputs[1])
        axes = None if value is None else value.reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def unpooled_mean(graph: Graph, node: Node) -> bool:
    """A ReduceMean over both pixel axes of a 4-D map written in descending order, (3, 2) as the dynamo exporter
    writes dim=[-1, -2]: the toolkit pools only (2, 3) (negative axes normalised first), so this mean becomes a
    token MatMul between CPU transposes (probe tools/probe_rknn_rk3566.py spmean)."""
    if node.op_type != "ReduceMean" or not node.inputs:
        return False
    shape = graph.shape(node.inputs[0])
    axes = _reduce_axes(graph, node)
    if shape is None or len(shape) != 4 or axes is None or not all(isinstance(d, int) for d in shape):
        return False
    if int(shape[2]) * int(shape[3]) <= 1:
        return False
    return [a % 4 for a in axes] == [3, 2]


def _back_reshape(graph: Graph, mean: Node) -> Node | None:
    """The reshape that reads the mean's result alone: the transpose back is named after it."""
    if not mean.outputs:
        return None
    user = only_user(graph, mean.outputs[0])
    return user if user is not None and user.op_type in _RESHAPES else None


def pixel_mean(rule: Rule, view: LayerView) -> str | None:
    """The three nodes an unpooled spatial mean costs on the CPU: the op making the map (its relayout into
    tokens), the mean (the transpose of its one-wide result back), or instead a reshape that alone reads the
    result, which takes that transpose's name."""
    graph, node = view.graph, view.node
    if unpooled_mean(graph, node):
        if _back_reshape(graph, node) is not None:
            return None
        return (f"ReduceMean over axes {_reduce_axes(graph, node)} is not lowered as global pooling (only (2, 3) is): "
                "a token MatMul whose result is transposed back on the CPU")
    if node.op_type in _RESHAPES and node.inputs:
        mean = graph.producer(node.inputs[0])
        if mean is not None and unpooled_mean(graph, mean) and _back_reshape(graph, mean) is node:
            return (f"reshapes the result of {mean.name}, a spatial mean not lowered as global pooling: the transpose "
                    "of its one-wide result back runs on the CPU")
        return None
    for out in node.outputs:
        means = [u for u in data_users(graph, out) if unpooled_mean(graph, u)]
        if means:
            return (f"its map feeds {means[0].name}, a spatial mean over axes {_reduce_axes(graph, means[0])} that is "
                    "not lowered as global pooling: the map's relayout into tokens runs on the CPU")
    return None


def spaced_einsum_node(node: Node) -> bool:
    """An Einsum whose equation holds whitespace (torchvision's MaxViT: 'B G H I D, B G H J D -> B G H I J'):
    the toolkit's Einsum rewrite does not parse it and keeps a CPU Einsum layer."""
    equation = node.attrs.get("equation") if node.op_type == "Einsum" else None
    if isinstance(equation, bytes):
        equation = equation.decode("utf-8", "replace")
    return isinstance(equation, str) and any(ch.isspace() for ch in equation)


def spaced_einsum(rule: Rule, view: LayerView) -> str | None:
    """The spaced Einsum itself, and each op (other than a CPU Softmax) making one of its operands of rank 5 or
    more: the NPU's 4-D result is reshaped into the CPU Einsum's operand by a CPU layer named after that op."""
    graph, node = view.graph, view.node
    if spaced_einsum_node(node):
        return (f"Einsum equation {node.attrs.get('equation')!r} holds spaces: the toolkit does not rewrite it into "
                "exMatMul and runs a CPU Einsum")
    if node.op_type == "Softmax":
        return None  # its own verdict decides (the 5-D reshape of a Softmax result is an NPU layer, measured)
    for out in node.outputs:
        shape = graph.shape(out)
        if shape is None or len(shape) < 5:
            continue
        einsums = [u for u in data_users(graph, out) if spaced_einsum_node(u)]
        if einsums:
            return (f"makes a rank-{len(shape)} operand of {einsums[0].name}, a CPU Einsum: the reshape into it runs "
                    "on the CPU")
    return None
