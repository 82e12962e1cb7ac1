"""RK3566/RK3568 verdicts that follow from an op the toolkit does not rewrite into its NPU forms.

When rknn-toolkit2 does not recognise an op's pattern (global pooling, an Einsum it can turn into exMatMul),
it lowers the op generically, and on rk3566 every relayout that generic lowering needs runs on the CPU: the
relayout of the op's input is a layer named after the op that made that input, so the producer's verdict
changes too, not only the op's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import RESHAPES, data_users, only_user, reduce_axes, spaced_einsum_operand

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

def unpooled_reduce(graph: Graph, node: Node) -> bool:
    """A reduce over both pixel axes of a 4-D map that the toolkit does not turn into global pooling: it pools
    only a ReduceMean written (2, 3) (negative axes normalised first), so a ReduceMean written (3, 2), as the
    dynamo exporter writes dim=[-1, -2], and a ReduceSum or ReduceL2 over the pixels in either order become a
    token MatMul between CPU transposes (probe tools/probe_rknn_rk3566.py spmean). A ReduceMax is a CPU layer of
    its own and needs no rule here."""
    if node.op_type not in ("ReduceMean", "ReduceSum", "ReduceL2") or not node.inputs:
        return False
    shape = graph.shape(node.inputs[0])
    axes = reduce_axes(graph, node)
    if shape is None or len(shape) != 4 or axes is None or not all(isinstance(d, int) for d in shape):
        return False
    if int(shape[2]) * int(shape[3]) <= 1:
        return False
    written = [a % 4 for a in axes]
    return written == [3, 2] if node.op_type == "ReduceMean" else sorted(written) == [2, 3]


def _back_reshape(graph: Graph, reduce: Node) -> Node | None:
    """The reshape that reads the reduce's result alone: the transpose back is named after it."""
    if not reduce.outputs:
        return None
    user = only_user(graph, reduce.outputs[0])
    return user if user is not None and user.op_type in RESHAPES else None


def pixel_reduce(rule: Rule, view: LayerView) -> str | None:
    """The nodes an unpooled pixel reduce costs on the CPU: the op making the map (its relayout into tokens),
    the reduce (the transpose of its one-wide result back), or instead a reshape that alone reads the result,
    which takes that transpose's name."""
    graph, node = view.graph, view.node
    if unpooled_reduce(graph, node):
        if _back_reshape(graph, node) is not None:
            return None
        return (f"{node.op_type} over axes {reduce_axes(graph, node)} is not lowered as global pooling (only a "
                "ReduceMean over (2, 3) is): a token MatMul whose result is transposed back on the CPU")
    if node.op_type in RESHAPES and node.inputs:
        reduce = graph.producer(node.inputs[0])
        if reduce is not None and unpooled_reduce(graph, reduce) and _back_reshape(graph, reduce) is node:
            return (f"reshapes the result of {reduce.name}, a pixel reduce not lowered as global pooling: the "
                    "transpose of its one-wide result back runs on the CPU")
        return None
    for out in node.outputs:
        reduces = [u for u in data_users(graph, out) if unpooled_reduce(graph, u)]
        if reduces:
            first = reduces[0]
            return (f"its map feeds {first.name}, a {first.op_type} over axes {reduce_axes(graph, first)} that is "
                    "not lowered as global pooling: the map's relayout into tokens runs on the CPU")
    return None


def einsum_operands(rule: Rule, view: LayerView) -> str | None:
    """Each op (other than a Softmax) making an operand of rank 5 or more for a CPU Einsum: rk3566 reshapes the
    NPU's 4-D result into that operand with a CPU layer named after the op, whatever the innermost axis (rk3588
    needs it only for an innermost axis that is not whole 16-byte groups, RKNN-EINSUM-RELAYOUT)."""
    graph, node = view.graph, view.node
    if node.op_type == "Softmax":
        return None  # its own verdict decides (the 5-D reshape of a Softmax result is an NPU layer, measured)
    for out in node.outputs:
        shape = graph.shape(out)
        if shape is None or len(shape) < 5:
            continue
        einsums = [u for u in data_users(graph, out) if spaced_einsum_operand(u)]
        if einsums:
            return (f"makes a rank-{len(shape)} operand of {einsums[0].name}, a CPU Einsum: the reshape into it runs "
                    "on the CPU")
    return None
