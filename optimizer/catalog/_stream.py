"""RK3566/RK3568: a channels-last residual stream whose map rows the toolkit moves into the batch axis.

A channels-last region opens with a Transpose (0,2,3,1) of a conv map [1,C,H,W] and closes with a Transpose
(0,3,1,2) back; inside, a residual stream [1,H,W,C] goes through LayerNorms and constant-weight MatMuls, and (in
MambaOut's gated CNN) mixes tokens with a depthwise Conv between a Transpose pair of its own. rknn-toolkit2 folds
such a region into NCHW when it can (catalog._checks' channels-last pair); measured on corpus sub-graphs of
timm_test_mambaout (tools/probe_rknn_subgraph.py: the model's stage 2 with its input size changed, rk3566),
it does not when the region holds two or more of those blocks and the map has at most 16 rows: the stream's
linears are then held as (H, C, 1, W), H in the batch axis (as MaxViT's windows at <= 16, catalog._partitions), and
every relayout between that form and a map or channels-last tensor is a CPU layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import data_users, only_user

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

_TO_NHWC = (0, 2, 3, 1)
_TO_NCHW = (0, 3, 1, 2)
_MAX_ROWS = 16  # corpus sub-graph probe: 10, 14 and 16 rows in the batch axis, 17, 18 and 20 folded into NCHW
_MIN_BLOCKS = 2  # one block alone (10 x 10) folds into NCHW; two and three do not
_LIMIT = 4096  # nodes visited per walk


def _perm(node: Node) -> tuple[int, ...]:
    return tuple(int(p) for p in node.attrs.get("perm") or ())


def _same_shape_depthwise(graph: Graph, conv: Node) -> bool:
    if conv.op_type != "Conv" or not conv.inputs or not conv.outputs:
        return False
    src, dst = graph.shape(conv.inputs[0]), graph.shape(conv.outputs[0])
    return (src is not None and src == dst and len(src) == 4 and isinstance(src[1], int)
            and int(conv.attrs.get("group", 1)) == src[1] > 1)


def inner_pair(graph: Graph, closer: Node) -> Node | None:
    """The Transpose (0,2,3,1) bringing a depthwise Conv's map back into the stream, when `closer` is the
    Transpose (0,3,1,2) taking stream channels into that Conv (a token mixer inside the region), else None."""
    if closer.op_type != "Transpose" or _perm(closer) != _TO_NCHW or not closer.outputs:
        return None
    conv = only_user(graph, closer.outputs[0])
    if conv is None or not _same_shape_depthwise(graph, conv):
        return None
    back = only_user(graph, conv.outputs[0])
    return back if back is not None and back.op_type == "Transpose" and _perm(back) == _TO_NHWC else None


def _is_inner_back(graph: Graph, node: Node) -> bool:
    conv = graph.producer(node.inputs[0]) if node.inputs else None
    closer = graph.producer(conv.inputs[0]) if conv is not None and conv.inputs else None
    return closer is not None and inner_pair(graph, closer) is node


def _opener(graph: Graph, node: Node) -> bool:
    return node.op_type == "Transpose" and _perm(node) == _TO_NHWC and not _is_inner_back(graph, node)


def _region_opener(graph: Graph, node: Node) -> Node | None:
    """The one region opener every path up from `node` reaches (walking producers, not past an opener)."""
    frontier, seen, found = [node], {node.name}, []
    while frontier and len(seen) < _LIMIT:
        current = frontier.pop()
        if _opener(graph, current):
            found.append(current)
            continue
        if current.op_type == "Transpose" and _perm(current) == _TO_NCHW and inner_pair(graph, current) is None:
            return None  # the walk left a channels-last region through its exit
        for name in current.inputs:
            producer = graph.producer(name) if name and not graph.is_constant(name) else None
            if producer is not None and producer.name not in seen:
                seen.add(producer.name)
                frontier.append(producer)
    return found[0] if len({n.name for n in found}) == 1 else None


def _blocks(graph: Graph, opener: Node) -> int:
    """How many depthwise token mixers (inner Transpose pairs) the region opened by `opener` holds."""
    frontier, seen, pairs = [opener], {opener.name}, 0
    while frontier and len(seen) < _LIMIT:
        current = frontier.pop()
        if current.op_type == "Transpose" and _perm(current) == _TO_NCHW:
            if inner_pair(graph, current) is None:
                continue  # an exit
            pairs += 1
        for out in current.outputs:
            for user in data_users(graph, out):
                if user.name not in seen:
                    seen.add(user.name)
                    frontier.append(user)
    return pairs


def _rows(graph: Graph, opener: Node) -> int | None:
    shape = graph.shape(opener.outputs[0]) if opener.outputs else None
    if shape is None or len(shape) != 4 or not isinstance(shape[1], int):
        return None
    return int(shape[1])


def _role(graph: Graph, node: Node) -> str | None:
    """What relayout out of or into the batch-held form `node` is charged with, if it is one of them."""
    if node.op_type == "Transpose" and inner_pair(graph, node) is not None:
        return "takes stream channels into a depthwise Conv"
    if node.op_type == "Transpose" and _is_inner_back(graph, node):
        return "brings a depthwise Conv's map back into the stream"
    if node.op_type == "MatMul" and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]) and node.outputs:
        out = node.outputs[0]
        users = data_users(graph, out)
        if len(users) == 1 and users[0].op_type == "Add" and users[0].outputs:
            users = data_users(graph, users[0].outputs[0])  # the bias
        if users and all(u.op_type == "Split" for u in users):
            return "its result is split in channels-last form"
    if node.op_type == "Mul" and node.outputs and all(not graph.is_constant(i) for i in node.inputs):
        users = data_users(graph, node.outputs[0])
        if users and all(u.op_type == "MatMul" and len(u.inputs) > 1 and graph.is_constant(u.inputs[1])
                         for u in users):
            return "its gated product is taken back into the linears' form"
    if node.op_type == "LayerNormalization" and node.inputs and node.outputs and any(
            _constant_matmul(graph, u) for u in data_users(graph, node.outputs[0])):
        producer = graph.producer(node.inputs[0])
        while producer is not None and producer.op_type == "LayerNormalization" and producer.inputs:
            producer = graph.producer(producer.inputs[0])  # a downsample's own norm before the first block's
        if producer is not None and _opener(graph, producer):
            return "takes the region's input map into the linears' form"
    return None


def _constant_matmul(graph: Graph, node: Node) -> bool:
    return node.op_type == "MatMul" and len(node.inputs) > 1 and graph.is_constant(node.inputs[1])


def batch_rows_stream(rule: Rule, view: LayerView) -> str | None:
    """The relayouts of a channels-last stream held with its map rows in the batch axis: the depthwise mixer's
    Transpose pair, a linear whose result is split, the gate product into the next linear and the region's first
    LayerNorm."""
    graph, node = view.graph, view.node
    role = _role(graph, node)
    if role is None:
        return None
    opener = _region_opener(graph, node)
    if opener is None:
        return None
    rows = _rows(graph, opener)
    if rows is None or rows > _MAX_ROWS:
        return None
    blocks = _blocks(graph, opener)
    if blocks < _MIN_BLOCKS:
        return None
    return (f"{role}: the channels-last stream opened by {opener.name} ({blocks} blocks, {rows} map rows) is held with "
            "its rows in the batch axis, and this relayout runs on the CPU")
