"""RK3566/RK3568 verdicts that follow from an op the toolkit does not rewrite into its NPU forms.

When rknn-toolkit2 does not recognise an op's pattern (global pooling, an Einsum it can turn into exMatMul),
it lowers the op generically, and on rk3566 every relayout that generic lowering needs runs on the CPU: the
relayout of the op's input is a layer named after the op that made that input, so the producer's verdict
changes too, not only the op's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from optimizer.catalog._layout import (
    RESHAPES,
    data_users,
    only_user,
    reduce_axes,
    spaced_einsum_operand,
    static_shape,
)

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

ChannelOf = Callable[["Graph", str], "int | None"]  # the toolkit's channel axis of a tensor, or None


def unpooled_reduce(graph: Graph, node: Node, channel_of: ChannelOf) -> bool:
    """A reduce over both pixel axes of a 4-D map that the toolkit does not turn into global pooling: it pools
    only a ReduceMean written (2, 3) (negative axes normalised first), so a ReduceMean written (3, 2), as the
    dynamo exporter writes dim=[-1, -2], and a ReduceSum or ReduceL2 over the pixels in either order become a
    token MatMul between CPU transposes (probe tools/probe_rknn_rk3566.py spmean). A ReduceMax is a CPU layer of
    its own and needs no rule here. A ReduceL2 over the pixels (1, 2) of a channels-last map (ConvNeXt-V2's
    response norm after its token MatMul) is the same token MatMul (probe nhwc_reducel2_pixels)."""
    if node.op_type not in ("ReduceMean", "ReduceSum", "ReduceL2") or not node.inputs:
        return False
    shape = graph.shape(node.inputs[0])
    axes = reduce_axes(graph, node)
    if shape is None or len(shape) != 4 or axes is None or not all(isinstance(d, int) for d in shape):
        return False
    written = [a % 4 for a in axes]
    if node.op_type == "ReduceL2" and sorted(written) == [1, 2] and channel_of(graph, node.inputs[0]) == 3:
        return int(shape[1]) * int(shape[2]) > 1
    if int(shape[2]) * int(shape[3]) <= 1:
        return False
    return written == [3, 2] if node.op_type == "ReduceMean" else sorted(written) == [2, 3]


def _back_reshape(graph: Graph, reduce: Node) -> Node | None:
    """The reshape that reads the reduce's result alone: the transpose back is named after it."""
    if not reduce.outputs:
        return None
    user = only_user(graph, reduce.outputs[0])
    return user if user is not None and user.op_type in RESHAPES else None


def pixel_reduce(rule: Rule, view: LayerView, channel_of: ChannelOf) -> str | None:
    """The nodes an unpooled pixel reduce costs on the CPU: the op making the map (its relayout into tokens),
    the reduce (the transpose of its one-wide result back), or instead a reshape that alone reads the result,
    which takes that transpose's name. `channel_of` is the toolkit's channel axis of a tensor (check channel_axis)."""
    graph, node = view.graph, view.node
    if unpooled_reduce(graph, node, channel_of):
        if _back_reshape(graph, node) is not None:
            return None
        return (f"{node.op_type} over axes {reduce_axes(graph, node)} is not lowered as global pooling (only a "
                "ReduceMean over (2, 3) is): a token MatMul whose result is transposed back on the CPU")
    if node.op_type in RESHAPES and node.inputs:
        reduce = graph.producer(node.inputs[0])
        if reduce is not None and unpooled_reduce(graph, reduce, channel_of) and _back_reshape(graph, reduce) is node:
            return (f"reshapes the result of {reduce.name}, a pixel reduce not lowered as global pooling: the "
                    "transpose of its one-wide result back runs on the CPU")
        return None
    for out in node.outputs:
        reduces = [u for u in data_users(graph, out) if unpooled_reduce(graph, u, channel_of)]
        if reduces:
            first = reduces[0]
            return (f"its map feeds {first.name}, a {first.op_type} over axes {reduce_axes(graph, first)} that is "
                    "not lowered as global pooling: the map's relayout into tokens runs on the CPU")
    return None


def einsum_operands(rule: Rule, view: LayerView) -> str | None:
    """Each op (other than a Softmax) making an operand of rank 5 or more for a CPU Einsum: rk3566 reshapes the
    NPU's 4-D result into that operand with a CPU layer named after the op, whatever the innermost axis (rk3588
    needs it only for an innermost axis that is not a multiple of 4, RKNN-EINSUM-HANDOVER)."""
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


_HEAD_PATH = frozenset({"Slice", "Split", "Reshape", "Transpose", "Mul", "Div"})


def _cpu_einsum_operand(graph: Graph, tensor: str, depth: int = 5) -> Node | None:
    """The CPU Einsum (RKNN-EINSUM-LABELS) that `tensor` reaches as a rank>=5 operand through channel cuts,
    a head-split Reshape into rank 5 or more, transposes and scalings by a constant, else None. The head split
    must lie on the path that reaches the Einsum: each frontier tensor carries whether its own path passed one
    (a rank-5 Reshape on a sibling branch does not make another branch's operand a head split)."""
    frontier: list[tuple[str, bool]] = [(tensor, False)]
    for _ in range(depth):
        nxt: list[tuple[str, bool]] = []
        for name, split in frontier:
            for user in data_users(graph, name):
                if spaced_einsum_operand(user) is not None and split:
                    return user
                if user.op_type not in _HEAD_PATH:
                    continue
                if user.op_type in ("Mul", "Div") and not any(graph.is_constant(i) for i in user.inputs if i != name):
                    continue
                heads = split
                if user.op_type == "Reshape":
                    shape = graph.shape(user.outputs[0])
                    if shape is None or len(shape) < 5:
                        continue
                    heads = True
                nxt += [(o, heads) for o in user.outputs if o]
        frontier = nxt
    return None


def weight_constant(graph: Graph, tensor: str) -> bool:
    """A constant, or an Identity of one (exporters deduplicate shared weights that way)."""
    if graph.is_constant(tensor):
        return True
    producer = graph.producer(tensor)
    return (producer is not None and producer.op_type == "Identity" and bool(producer.inputs)
            and graph.is_constant(producer.inputs[0]))


def weight_matmul(graph: Graph, node: Node | None) -> bool:
    return (node is not None and node.op_type in ("MatMul", "Gemm") and len(node.inputs) > 1
            and weight_constant(graph, node.inputs[1]))


def bias_add(graph: Graph, matmul: Node) -> Node | None:
    """The bias Add that alone reads a weight MatMul's result, else None."""
    user = only_user(graph, matmul.outputs[0])
    if user is None or user.op_type != "Add":
        return None
    other = [i for i in user.inputs if i != matmul.outputs[0]]
    return user if len(other) == 1 and weight_constant(graph, other[0]) else None


def _join_of_cpu_einsum(graph: Graph, node: Node) -> Node | None:
    """`node` is a Reshape merging axes of a CPU Einsum's rank>=5 result through one Transpose (the head join):
    that Einsum, else None. A Reshape reading the Einsum directly is not claimed (NPU after corpus tv_maxvit_t's
    Einsum_1)."""
    if node.op_type != "Reshape" or not node.inputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if src is None or dst is None or len(dst) >= len(src) or len(src) < 5:
        return None
    transpose = graph.producer(node.inputs[0])
    if transpose is None or transpose.op_type != "Transpose" or not transpose.inputs:
        return None
    producer = graph.producer(transpose.inputs[0])
    return producer if producer is not None and spaced_einsum_operand(producer) is not None else None


def _matmul_of(graph: Graph, node: Node) -> Node | None:
    """`node` itself when it is a weight MatMul, the weight MatMul it is the bias Add of, else None."""
    if node.op_type != "Add":
        return node if weight_matmul(graph, node) else None
    matmul = next((p for p in map(graph.producer, node.inputs) if weight_matmul(graph, p)), None)
    return matmul if matmul is not None and bias_add(graph, matmul) is node else None


def einsum_heads(rule: Rule, view: LayerView) -> str | None:
    """The q/k/v hand-over into and out of CPU Einsums (torchvision MaxViT's spaced equations): the weight MatMul
    whose result is cut into heads for a CPU Einsum is reshaped into (B, 3h, d, P) on the CPU (named after its
    bias Add, or the MatMul without one) and transposed to (B, 3h, P, d) on the CPU (named after the MatMul);
    the Reshape joining the heads of a CPU Einsum's result back into tokens is a CPU transpose and reshape
    (probe tools/probe_rknn_rk3566.py einattn). With exMatMul consumers instead these fold away."""
    graph, node = view.graph, view.node
    if node.op_type == "Reshape":
        einsum = _join_of_cpu_einsum(graph, node)
        if einsum is None:
            return None
        return (f"joins the heads of {einsum.name}'s result, a CPU Einsum, back into tokens: the transpose and "
                "reshape out of the Einsum's layout run on the CPU")
    matmul = _matmul_of(graph, node)
    if matmul is None:
        return None
    bias = bias_add(graph, matmul)
    out = (bias or matmul).outputs[0]
    einsum = _cpu_einsum_operand(graph, out)
    if einsum is None:
        return None
    return (f"its result is cut into heads for {einsum.name}, a CPU Einsum: the head split's reshape and "
            "transpose out of the convolution layout run on the CPU")


def _map_swap(graph: Graph, node: Node) -> bool:
    """A Transpose (0,2,1,3) of a map [1, A, B, C] with A, B > 1: the rows and columns of a channels-last map
    swapped (not the direction join (0,2,1,3) of Y [seq, 2, batch, hidden], whose first axis is the sequence)."""
    if node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != (0, 2, 1, 3) or not node.inputs:
        return False
    shape = static_shape(graph, node.inputs[0], 4)
    return shape is not None and shape[0] == 1 and shape[1] > 1 and shape[2] > 1


def _lstm_concat(graph: Graph, lstm: Node, depth: int = 8) -> tuple[Node, bool] | None:
    """(the Concat a bidirectional LSTM's Y reaches through a chain of layout ops, whether the chain swaps the
    map's rows and columns), else None."""
    if lstm.op_type not in ("LSTM", "GRU") or lstm.attrs.get("direction") != "bidirectional" or not lstm.outputs:
        return None
    tensor, swapped = lstm.outputs[0], False
    for _ in range(depth):
        user = only_user(graph, tensor)
        if user is None:
            return None
        if user.op_type == "Concat":
            return user, swapped
        if user.op_type not in RESHAPES | {"Transpose"} or not user.outputs:
            return None
        swapped = swapped or _map_swap(graph, user)
        tensor = user.outputs[0]
    return None


def _lstm_before(graph: Graph, tensor: str, depth: int = 8) -> Node | None:
    """The LSTM/GRU a tensor comes from through layout ops only, else None."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return None
        if node.op_type in ("LSTM", "GRU"):
            return node
        if node.op_type not in RESHAPES | {"Transpose"} or not node.inputs:
            return None
        tensor = node.inputs[0]
    return None


def swapped_lstm_join(rule: Rule, view: LayerView) -> str | None:
    """Sequencer2D's token mixer: a bidirectional LSTM over the columns (the map's rows and columns swapped
    before and after it) concatenated with one over the rows. rk3566 writes the column LSTM's result with its
    directions already joined, (seq, batch, 2*hidden), and reshapes it back into the row LSTM's
    (seq, batch, 2, hidden) for the Concat on the CPU, a layer named after the LSTM (probe
    tools/probe_rknn_rk3566.py seqmix:8:8:32:16:1 v_lstm#1_rs; seqmix:8:8:32:16:0, two row LSTMs: none)."""
    graph, node = view.graph, view.node
    found = _lstm_concat(graph, node)
    if found is None or not found[1]:
        return None
    concat = found[0]
    for name in concat.inputs:
        other = _lstm_before(graph, name) if name else None
        if other is None or other is node:
            continue
        joined = _lstm_concat(graph, other)
        if joined is not None and joined[0] is concat and not joined[1]:
            return (f"its result, swapped back from the map's columns, is concatenated by {concat.name} with "
                    f"{other.name}'s over the rows: the reshape into the other LSTM's direction-split form runs on "
                    "the CPU")
    return None
