"""RK3566/RK3568 verdicts for factorised attention (CoaT's FactorAttnConvRelPosEnc, linear attention with the
softmax over the keys' token axis): softmax(K) over the tokens, K^T.V first, then Q.(K^T.V).

rknn-toolkit2 lowers the q/k/v unbind of such an attention in one of two forms (probe
tools/probe_rknn_rk3566.py factor, FP16 and INT8):
- tokens that carry a class token (a Concat along the token axis upstream of the qkv MatMul): one qkv
  convolution, a CPU Reshape into (3, heads, d, N) and an NPU Split, so every operand is held heads-major with
  the tokens in W; q, K^T and V are then transposed into exMatMul's (heads, ., 1, .) forms on the CPU, the
  convolutional position term's product is transposed on the CPU (named after it), and the heads are joined back
  on the CPU;
- tokens without one: three qkv convolutions (the split-weights lowering), heads in the batch axis; only the
  transposes of K^T and V follow the 8-byte rule.
Each function returns the CPU reason for a node, or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import RESHAPES, data_users, only_user, static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

_UNBIND = frozenset({"Squeeze", "Split", "Transpose", "Gather", "Reshape"})
_STREAM = frozenset({"LayerNormalization", "Add", "Sub", "Mul", "Div", "Identity"})
_ELEMENTWISE = frozenset({"Mul", "Add", "Sub", "Div"})
_CUTS = frozenset({"Slice", "Split", "Squeeze", "Unsqueeze", "Gather"})


def _last_two_swap(graph: Graph, node: Node | None) -> bool:
    return (node is not None and node.op_type == "Transpose" and bool(node.inputs)
            and tuple(node.attrs.get("perm") or ()) == (0, 1, 3, 2))


def token_softmax_transpose(graph: Graph, node: Node) -> int | None:
    """`node` is the Transpose (0, 1, 3, 2) of keys [b, h, N, d] softmaxed over their token axis (axis 2) that is
    the first operand of a MatMul with an activation (K^T.V): the token count N, else None."""
    if not _last_two_swap(graph, node):
        return None
    softmax = graph.producer(node.inputs[0])
    shape = static_shape(graph, node.inputs[0], 4)
    if softmax is None or softmax.op_type != "Softmax" or shape is None:
        return None
    if int(softmax.attrs.get("axis", -1)) % 4 != 2:
        return None
    users = data_users(graph, node.outputs[0])
    if len(users) != 1 or users[0].op_type != "MatMul" or users[0].inputs[0] != node.outputs[0]:
        return None
    if graph.is_constant(users[0].inputs[1]):
        return None
    return shape[2]


def _kv_matmul(graph: Graph, transpose: Node) -> Node:
    return data_users(graph, transpose.outputs[0])[0]


def _q_matmul(graph: Graph, kv: Node) -> Node | None:
    """The MatMul Q.(K^T.V): the one data user of K^T.V, reading it as its second operand."""
    user = only_user(graph, kv.outputs[0])
    return user if user is not None and user.op_type == "MatMul" and user.inputs[1] == kv.outputs[0] else None


def _unbind_reshape(graph: Graph, tensor: str, depth: int = 5) -> Node | None:
    """The head-split Reshape [1, N, C] -> [1, N, 3, h, d] that q/k/v were unbound from (through Squeeze, Split,
    Gather, Transpose), else None."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None or node.op_type not in _UNBIND or not node.inputs:
            return None
        if node.op_type == "Reshape":
            src = graph.shape(node.inputs[0])
            dst = graph.shape(node.outputs[0])
            return node if src is not None and dst is not None and len(src) == 3 and len(dst) == 5 else None
        tensor = node.inputs[0]
    return None


def _class_token_stream(graph: Graph, tensor: str, limit: int = 24) -> bool:
    """The tokens [1, N, C] reach back, through the residual stream's norms and element-wise ops, to a Concat
    along the token axis (a class token put in front)."""
    frontier, seen = [tensor], {tensor}
    while frontier and len(seen) <= limit:
        node = graph.producer(frontier.pop(0))
        if node is None:
            continue
        if node.op_type == "Concat":
            shape = graph.shape(node.outputs[0])
            if shape is not None and len(shape) == 3 and int(node.attrs.get("axis", 0)) % 3 == 1:
                return True
            continue
        if node.op_type in ("MatMul", "Gemm") and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]):
            if node.inputs[0] not in seen:  # a qkv/proj linear: follow its input, the stream it reads
                seen.add(node.inputs[0])
                frontier.append(node.inputs[0])
            continue
        if node.op_type not in _STREAM:
            continue
        for name in node.inputs:
            if name and name not in seen and not graph.is_constant(name):
                seen.add(name)
                frontier.append(name)
    return False


def _qkv_tokens(graph: Graph, reshape: Node, depth: int = 3) -> str | None:
    """The tokens the qkv MatMul reads (through its bias Add)."""
    tensor = reshape.inputs[0]
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return None
        if node.op_type == "MatMul" and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]):
            return node.inputs[0]
        if node.op_type != "Add":
            return None
        out = graph.shape(node.outputs[0])
        tensor = next((i for i in node.inputs if i and graph.shape(i) == out), "")  # not the bias
    return None


def _attention_of(graph: Graph, transpose: Node) -> tuple[int, Node, Node, Node] | None:
    """(N, the qkv unbind Reshape, the K^T.V MatMul, the Q.(K^T.V) MatMul) of a factorised attention whose tokens
    carry a class token, from its keys' Transpose; else None."""
    n = token_softmax_transpose(graph, transpose)
    if n is None:
        return None
    kv = _kv_matmul(graph, transpose)
    qm = _q_matmul(graph, kv)
    softmax = graph.producer(transpose.inputs[0])
    if qm is None or softmax is None:
        return None
    reshape = _unbind_reshape(graph, softmax.inputs[0])
    tokens = None if reshape is None else _qkv_tokens(graph, reshape)
    if reshape is None or tokens is None or not _class_token_stream(graph, tokens):
        return None
    return n, reshape, kv, qm


_LAST: list[tuple[Graph, list[tuple[int, Node, Node, Node]]]] = []  # one graph's attentions (checks run graph by graph)


def _attentions(graph: Graph) -> list[tuple[int, Node, Node, Node]]:
    """Every class-token factorised attention of the graph, found from the keys' Transposes (the last graph's
    list is kept: the checks visit one graph's nodes in a row)."""
    if _LAST and _LAST[0][0] is graph:
        return _LAST[0][1]
    found = []
    for node in graph.nodes:
        if node.op_type == "Transpose":
            hit = _attention_of(graph, node)
            if hit is not None:
                found.append(hit)
    _LAST[:] = [(graph, found)]
    return found


def _q_side(graph: Graph, qm: Node) -> tuple[Node | None, set[str]]:
    """q's producer in the unbind (its Squeeze/Gather: the layer its transpose is named after) and the tensors
    holding q (q and Slices of it)."""
    q = qm.inputs[0]
    held = {q}
    for user in data_users(graph, q):
        if user.op_type == "Slice":
            held.add(user.outputs[0])
    producer = graph.producer(q)
    return (producer if producer is not None and producer.op_type in ("Squeeze", "Gather") else None), held


def _head_join(graph: Graph, qm: Node, depth: int = 6) -> Node | None:
    """The Reshape joining the heads back into tokens after Q.(K^T.V) (through the scale, the position term's Add
    and the Transpose (0, 2, 1, 3))."""
    tensor = qm.outputs[0]
    for _ in range(depth):
        user = only_user(graph, tensor)
        if user is None:
            return None
        if user.op_type in RESHAPES:
            src = graph.shape(user.inputs[0])
            dst = graph.shape(user.outputs[0])
            return user if src is not None and dst is not None and len(src) == 4 and len(dst) == 3 else None
        if user.op_type not in ("Mul", "Add", "Transpose"):
            return None
        tensor = user.outputs[0]
    return None


def factorised_attention(rule: Rule, view: LayerView) -> str | None:
    """The CPU relayouts of a factorised attention: K^T's transpose unless N is whole 8-byte groups (both
    lowerings); with a class token (the one-convolution lowering) also the qkv head split, q's transpose, the
    position term's product and the head join, while N is not whole groups."""
    graph, node = view.graph, view.node
    align = int(rule.params["align"][view.precision])
    if node.op_type == "Transpose":
        n = token_softmax_transpose(graph, node)
        if n is not None and n % align:
            return (f"transposes keys softmaxed over their {n} tokens into K^T for K^T.V; {n} is not a multiple of "
                    f"{align} ({view.precision}: 8-byte groups), so the relayout runs on the CPU")
        return None
    if node.op_type not in ("Reshape", "Squeeze", "Gather") and node.op_type not in _ELEMENTWISE:
        return None
    for n, reshape, _kv, qm in _attentions(graph):
        if n % align == 0:
            continue
        if node is reshape:
            return (f"splits the qkv of a factorised attention over {n} tokens with a class token: one qkv "
                    "convolution, reshaped into (3, heads, d, N) on the CPU")
        q_node, held = _q_side(graph, qm)
        if node is q_node:
            return (f"q of a factorised attention over {n} tokens (class token): held heads-major, it is transposed "
                    "into exMatMul's operand form on the CPU")
        if node.op_type in _ELEMENTWISE and node is not qm and any(i in held for i in node.inputs):
            return (f"multiplies q of a factorised attention over {n} tokens (class token) element-wise: its result "
                    "is transposed into exMatMul's form on the CPU")
        if node is _head_join(graph, qm):
            return (f"joins the heads of a factorised attention over {n} tokens (class token) back into tokens: a CPU "
                    "transpose and reshape")
    return None


def transpose_into_reshape(graph: Graph, node: Node) -> bool:
    """A 4-D Transpose whose one data user is a Reshape into a feature map: the toolkit merges the two and
    lowers them as one layer named after the Reshape (CoaT's position term: v's pixel tokens (0, 1, 3, 2) then
    Reshape [1, C, H, W]: no Transpose layer, a CPU Reshape; probe factor, every case), so the Transpose has no
    layer of its own and the Reshape's verdict carries the move. Only a Transpose of a tensor cut out by a layout op
    (Slice, Split, Squeeze, Gather): after EfficientViT's CPU Div the Transpose and the Reshape are two CPU layers."""
    if node.op_type != "Transpose" or not node.inputs or not node.outputs:
        return False
    src = graph.shape(node.inputs[0])
    user = only_user(graph, node.outputs[0])
    producer = graph.producer(node.inputs[0])
    if producer is None or producer.op_type not in _CUTS:
        return False  # after a computing op (EfficientViT's CPU Div + Cast) the Transpose keeps its own layer
    if src is None or len(src) != 4 or user is None or user.op_type != "Reshape":
        return False
    dst = graph.shape(user.outputs[0])
    return dst is not None and len(dst) == 4 and not any(u.op_type in ("Transpose", *RESHAPES)
                                                        for u in data_users(graph, user.outputs[0]))


_GRID_MERGE = (0, 3, 1, 4, 2, 5)
_LAYOUT = frozenset({"Transpose", *RESHAPES})


def _grid_merge_transpose(graph: Graph, node: Node) -> bool:
    """MaxViT's grid reverse [1, nh, nw, gh, gw, C] -> (0,3,1,4,2,5) with more than one window on each axis (one
    window per axis is a relabel)."""
    if node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != _GRID_MERGE or not node.inputs:
        return False
    shape = graph.shape(node.inputs[0])
    return (shape is not None and len(shape) == 6 and all(isinstance(d, int) for d in shape)
            and all(int(d) > 1 for d in shape[1:5]))


def _run_from(graph: Graph, tensor: str, limit: int = 6) -> list[Node]:
    """The linear run of layout ops reading `tensor` (each the only data user of the one before)."""
    run: list[Node] = []
    while len(run) < limit:
        user = only_user(graph, tensor)
        if user is None or user.op_type not in _LAYOUT or not user.outputs:
            break
        run.append(user)
        tensor = user.outputs[0]
    return run


def _grid_merge_run(graph: Graph, node: Node) -> list[Node] | None:
    """The run of layout ops holding a grid merge that starts at the result of `node` (a linear layer, through its
    bias Add), else None."""
    if node.op_type not in ("MatMul", "Gemm", "Conv") or not node.outputs:
        return None
    tensor = node.outputs[0]
    user = only_user(graph, tensor)
    if user is not None and user.op_type == "Add" and any(graph.is_constant(i) for i in user.inputs):
        tensor = user.outputs[0]
    run = _run_from(graph, tensor)
    return run if any(_grid_merge_transpose(graph, m) for m in run) else None


def _window_side(graph: Graph, reshape: Node) -> int | None:
    """The in-window W of the windows [B, gh, gw, C] a grid-merge run starts from."""
    shape = graph.shape(reshape.inputs[0]) if reshape.inputs else None
    if shape is None or len(shape) != 4 or not isinstance(shape[2], int):
        return None
    return int(shape[2])


def grid_merge_ends(rule: Rule, view: LayerView) -> str | None:
    """rk3566 lowers MaxViT's grid reverse (the linear layer's windows [B, gh, gw, C] reshaped to
    [1, nh, nw, gh, gw, C], Transpose (0,3,1,4,2,5), Reshape to the map) without exWindow: the reshape of the
    linear layer's result into the grid is a CPU layer, named after the linear layer when the window side is whole
    8-byte groups (merged into it) and after the run's first Reshape otherwise (probe gridrev), and the transpose
    with the reshape back are CPU layers named after the layout ops after it in the run (the corpus' last Reshape;
    in the probe, its Reshape and the NCHW Transpose after it); the Transpose itself has no layer."""
    graph, node = view.graph, view.node
    align = int(rule.params["align"][view.precision])
    run = _grid_merge_run(graph, node)
    if run is not None:
        side = _window_side(graph, run[0])
        if side is None or side % align:
            return None  # the reshape into the grid is a layer of its own, named after the run's first Reshape
        return (f"its result enters the grid merge {run[-1].name} (perm (0,3,1,4,2,5)), which has no exWindow form on "
                f"rk3566: the reshape into the grid runs on the CPU, merged into this layer (window side {side}, whole "
                "8-byte groups)")
    if node.op_type not in _LAYOUT or not node.inputs:
        return None
    producer = graph.producer(node.inputs[0])
    if node.op_type in RESHAPES and producer is not None and producer.op_type not in _LAYOUT:
        side = _window_side(graph, node)
        into = _run_from(graph, node.outputs[0]) if node.outputs else []
        if side is not None and side % align and any(_grid_merge_transpose(graph, m) for m in into):
            return (f"reshapes windows of side {side} into the grid merge {into[-1].name} (no exWindow form): "
                    f"{side} is not a multiple of {align} ({view.precision}: 8-byte groups), so this reshape is a CPU "
                    "layer of its own")
    if _grid_merge_transpose(graph, node):
        return None  # no layer of its own: the ops after it in the run carry the move
    current: Node | None = producer
    for _ in range(4):
        if current is None or current.op_type not in _LAYOUT:
            return None
        if _grid_merge_transpose(graph, current):
            return (f"ends the grid merge {current.name} (perm (0,3,1,4,2,5)), which has no exWindow form on rk3566: "
                    "a CPU transpose and reshape")
        current = graph.producer(current.inputs[0]) if current.inputs else None
    return None


_MERGE_LAST = (0, 1, 3, 4, 2, 5)


def _channels_last_merge(graph: Graph, node: Node | None) -> bool:
    """timm Swin's patch merging Transpose: [b, H/2, 2, W/2, 2, C] -> (0,1,3,4,2,5), the 2x2 neighbours moved
    next to the channel of a channels-last map (each phase and the half-width axis non-unit)."""
    if node is None or node.op_type != "Transpose" or not node.inputs:
        return False
    if tuple(node.attrs.get("perm") or ()) != _MERGE_LAST:
        return False
    shape = graph.shape(node.inputs[0])
    return (shape is not None and len(shape) == 6 and all(isinstance(d, int) for d in shape)
            and int(shape[2]) > 1 and int(shape[3]) > 1 and int(shape[4]) > 1)


def _is_transpose(node: Node | None) -> bool:
    return node is not None and node.op_type == "Transpose"


def channels_last_merge(rule: Rule, view: LayerView) -> str | None:
    """rk3566 has no space-to-depth form for a patch merging written on a channels-last map as Reshape +
    Transpose (0,1,3,4,2,5) + Reshape (timm Swin/SwinV2-cr): the split Reshape and the Transpose are CPU layers,
    and a LayerNorm reading the joined [1, H/2, W/2, 4C] map gets a CPU transpose into its NPU form (probe
    mergelast). The split Reshape's layer is named after a Transpose making its input, when one does."""
    graph, node = view.graph, view.node
    if _channels_last_merge(graph, node):
        return ("Transpose (0,1,3,4,2,5) joins the 2x2 neighbours of a channels-last map into the channel (patch "
                "merging): no NPU form on rk3566, a CPU layer")
    for out in node.outputs[:1]:
        user = only_user(graph, out)
        carrier = user
        if user is not None and user.op_type == "Reshape" and node.op_type == "Transpose":
            carrier = only_user(graph, user.outputs[0])
        elif node.op_type != "Reshape" or _is_transpose(graph.producer(node.inputs[0]) if node.inputs else None):
            carrier = None  # not the split Reshape, or one whose layer is named after the Transpose before it
        if _channels_last_merge(graph, carrier):
            return ("splits a channels-last map into the 2x2 neighbours of a patch merging (Transpose (0,1,3,4,2,5)), "
                    "which has no NPU form on rk3566: a CPU reshape")
    if node.op_type == "LayerNormalization" and node.inputs:
        join = graph.producer(node.inputs[0])
        if join is not None and join.op_type in RESHAPES and join.inputs and _channels_last_merge(
                graph, graph.producer(join.inputs[0])):
            return ("normalises a patch merging's joined map, which the CPU transpose left channels-last: a CPU "
                    "transpose into exNorm's form")
    return None


def pooled_heads_flatten(graph: Graph, node: Node) -> bool:
    """A Reshape flattening the pixels of a batch of per-head maps [B, d, H, W] (MViTv2's pooled q/k/v, heads in
    the batch of a depthwise pooling Conv) into [1, B, d, H*W]: the toolkit keeps d as the channel and relabels
    (an NPU Reshape in every block of corpus timm_mvitv2_tiny, B 1-8, H*W 49-3136, FP16 and INT8), also when a
    Transpose (0, 1, 3, 2) to tokens follows, which keeps its own layer."""
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if src is None or dst is None or len(src) != 4 or len(dst) != 4:
        return False
    if not all(isinstance(d, int) for d in (*src, *dst)):
        return False
    producer = graph.producer(node.inputs[0])
    if producer is None or producer.op_type not in ("Conv", "MaxPool", "AveragePool"):
        return False
    b, d, h, w = (int(x) for x in src)
    return tuple(int(x) for x in dst) == (1, b, d, h * w) and h * w > 1


def _value_of_pv(graph: Graph, tensor: str, depth: int = 3) -> bool:
    """`tensor` reaches, through LayerNormalization only, the second operand of P.V (a MatMul whose first operand
    is a Softmax)."""
    for _ in range(depth):
        user = only_user(graph, tensor)
        if user is None:
            return False
        if user.op_type == "MatMul" and len(user.inputs) > 1 and user.inputs[1] == tensor:
            probs = graph.producer(user.inputs[0])
            return probs is not None and probs.op_type == "Softmax"
        if user.op_type != "LayerNormalization" or not user.outputs:
            return False
        tensor = user.outputs[0]
    return False


def _pooled_value(graph: Graph, node: Node) -> tuple[int, int] | None:
    """(N, d) when `node` is the pooled-map flatten Reshape of V or the Transpose (0, 1, 3, 2) after it that takes
    V [1, h, d, N] to tokens [1, h, N, d] for P.V (MViTv2)."""
    reshape = node
    if _last_two_swap(graph, node):
        producer = graph.producer(node.inputs[0])
        if producer is None:
            return None
        reshape = producer
    if not pooled_heads_flatten(graph, reshape):
        return None
    transpose = only_user(graph, reshape.outputs[0])
    if not _last_two_swap(graph, transpose) or (node is not reshape and transpose is not node):
        return None
    assert transpose is not None
    shape = graph.shape(transpose.outputs[0])
    if shape is None or not _value_of_pv(graph, transpose.outputs[0]):
        return None
    return int(shape[2]), int(shape[3])


def pooled_value(rule: Rule, view: LayerView) -> str | None:
    """MViTv2's pooled V, flattened from its pooling map [h, d, H, W] into [1, h, d, N] and transposed to tokens
    for P.V: both layers are CPU unless N and d are whole 8-byte groups (V's transpose into exMatMul's form,
    RKNN-EXMATMUL-B's rule, here through the pooled map and its LayerNorm)."""
    hit = _pooled_value(view.graph, view.node)
    if hit is None:
        return None
    n, d = hit
    align = int(rule.params["align"][view.precision])
    if n % align == 0 and d % align == 0:
        return None
    return (f"{view.node.op_type} of the pooled V [1, h, {d}, {n}] into P.V's tokens: N = {n} or d = {d} is not a "
            f"multiple of {align} ({view.precision}: 8-byte groups), so V's relayout runs on the CPU")


def _kv_unbind(graph: Graph, split: Node) -> tuple[Node, int] | None:
    """(the kv head-split Reshape, heads) when `split` unbinds k and v alone ([1, M, 2, h, d] -> Transpose
    (2,0,3,1,4) -> Split in two): keys and values projected apart from the queries (PVTv2, Twins)."""
    if split.op_type != "Split" or len(split.outputs) != 2 or not split.inputs:
        return None
    transpose = graph.producer(split.inputs[0])
    if transpose is None or transpose.op_type != "Transpose" or tuple(transpose.attrs.get("perm") or ()) != (
            2, 0, 3, 1, 4):
        return None
    reshape = graph.producer(transpose.inputs[0])
    shape = graph.shape(transpose.inputs[0])
    if reshape is None or reshape.op_type != "Reshape" or shape is None or len(shape) != 5 or shape[2] != 2:
        return None
    return (reshape, int(shape[3])) if isinstance(shape[3], int) else None


def _keys_end(graph: Graph, split: Node) -> Node | None:
    """The scale Mul on K^T before Q.K^T (K's Squeeze -> Transpose (0,1,3,2) -> Mul), the op the CPU transpose
    is named after (probe srattn, corpus attn/Mul_1)."""
    squeeze = only_user(graph, split.outputs[0])
    if squeeze is None or squeeze.op_type != "Squeeze":
        return None
    transpose = only_user(graph, squeeze.outputs[0])
    if not _last_two_swap(graph, transpose):
        return None
    assert transpose is not None
    end = only_user(graph, transpose.outputs[0])
    if end is None or end.op_type != "Mul" or not any(graph.is_constant(i) for i in end.inputs):
        return None  # K^T unscaled (GCViT): its transpose has no layer of its own; not claimed
    user = only_user(graph, end.outputs[0])
    return end if user is not None and user.op_type == "MatMul" and user.inputs[1] == end.outputs[0] else None


def _product(dims: tuple[object, ...]) -> int | None:
    a, b = dims[0], dims[1]
    return a * b if isinstance(a, int) and isinstance(b, int) else None


def _map_rows_before(graph: Graph, reshape: Node, depth: int = 6) -> Node | None:
    """The Reshape flattening the map a strided Conv reduced, [1, C, H, W] -> [1, C, H*W], that the kv
    projection's tokens come from (through its bias, a LayerNorm and the (0, 2, 1) Transpose), else None (a
    position-encoding Conv's map in the last Twins stage is not: its flatten stays NPU)."""
    tensor = reshape.inputs[0]
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return None
        src = graph.shape(node.inputs[0]) if node.inputs else None
        dst = graph.shape(node.outputs[0])
        if node.op_type == "Reshape" and src is not None and dst is not None and len(src) == 4 and len(dst) == 3:
            after = only_user(graph, node.outputs[0])
            rows = tuple(dst) == (src[0], src[1], _product(src[2:]))
            conv = graph.producer(node.inputs[0])
            strides = conv.attrs.get("strides") or () if conv is not None else ()
            reduced = conv is not None and conv.op_type == "Conv" and any(int(v) > 1 for v in strides)
            return node if rows and reduced and after is not None and after.op_type == "Transpose" else None
        if node.op_type not in ("Add", "MatMul", "LayerNormalization", "Transpose"):
            return None
        if node.op_type == "Add" and len([i for i in node.inputs if i and not graph.is_constant(i)
                                          and graph.shape(i) == dst]) > 1:
            return None  # a residual Add: the tokens come from the stream, not from a reduced map
        tensor = next((i for i in node.inputs if i and not graph.is_constant(i) and graph.shape(i) is not None
                       and len(graph.shape(i) or ()) == 3), "")
    return None


def kv_heads(rule: Rule, view: LayerView) -> str | None:
    """Multi-head attention whose keys and values are projected apart from the queries (a kv unbind in two):
    rk3566 lowers the kv head split as a CPU reshape into (2, h, d, M) (named after the Reshape flattening the
    reduced map when the tokens come from one, else after the head split itself) and transposes K^T into
    exMatMul's form on the CPU (named after the op on K^T before Q.K^T), whatever M; one head needs neither."""
    graph, node = view.graph, view.node
    for split in graph.nodes:
        if split.op_type != "Split":
            continue
        hit = _kv_unbind(graph, split)
        if hit is None or hit[1] < 2:
            continue
        reshape, heads = hit
        if node is _keys_end(graph, split):
            return (f"K^T of a {heads}-head attention with keys projected apart from the queries: transposed into "
                    "exMatMul's form on the CPU")
        rows = _map_rows_before(graph, reshape)
        if node is (rows if rows is not None else reshape) and _keys_end(graph, split) is not None:
            return (f"carries the kv head split of a {heads}-head attention with keys projected apart from the "
                    "queries: a CPU reshape into (2, heads, d, M)")
    return None


_UNBIND_STEPS = frozenset({"Transpose", "Split", "Squeeze", "Gather"})


def _unbound(graph: Graph, reshape: Node, depth: int = 3) -> list[str]:
    """The q/k/v tensors unbound from a head-split Reshape's result (through its Transpose, Split, Squeeze or
    constant-index Gather): the tensors no further unbind step reads."""
    frontier, found = [reshape.outputs[0]], []
    for _ in range(depth):
        nxt: list[str] = []
        for name in frontier:
            users = data_users(graph, name)
            steps = [u for u in users if u.op_type in _UNBIND_STEPS]
            if not steps:
                found.append(name)
            for user in steps:
                nxt += [o for o in user.outputs if o]
        frontier = nxt
    return found + frontier


def cosine_window_split(graph: Graph, node: Node) -> bool:
    """`node` is the head-split Reshape [B, N, 3C] -> [B, N, 3, h, d] of windowed tokens (B > 1 windows in the
    batch axis) whose q or k is L2-normalised over d (SwinV2's cosine attention: ReduceL2 -> Clip -> Expand ->
    Div, one exNorm). rk3566 splits such heads through a CPU relayout named after the unbind Transpose and the
    tokens' Reshape, not after this Reshape (measured: rknn-toolkit2 2.5.0, corpus tv_swin_v2_t Reshape_7 and
    timm_swinv2_cr_tiny_ns_224 attn/Reshape: no layer)."""
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    src, dst = static_shape(graph, node.inputs[0], 3), static_shape(graph, node.outputs[0], 5)
    if src is None or dst is None or src[0] <= 1 or dst[2] != 3:
        return False
    return any(u.op_type in ("ReduceL2", "LpNormalization")
               for t in _unbound(graph, node) for u in data_users(graph, t))


def _cosine_split_of(graph: Graph, tensor: str, depth: int = 6) -> Node | None:
    """The cosine head split (cosine_window_split) `tensor` comes from through the unbind and the q/k
    normalisation (Div by the expanded norm, the k Transpose), else None."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None or not node.inputs:
            return None
        if cosine_window_split(graph, node):
            return node
        if node.op_type not in _UNBIND_STEPS | {"Div", "Reshape"}:
            return None
        tensor = node.inputs[0]
    return None


def cosine_window_operands(rule: Rule, view: LayerView) -> str | None:
    """The ops making the operands of windowed cosine attention's two MatMuls (Q, K^T and V, not the softmax):
    rk3566 holds the normalised heads as (B, d, h, N) and relays each into exMatMul's (B*h, ., 1, .) form by a
    CPU transpose and reshape named after the op making the operand, whatever the token count (corpus
    tv_swin_v2_t: N 64; timm_swinv2_cr_tiny_ns_224: N 49)."""
    graph, node = view.graph, view.node
    for out in node.outputs[:1]:
        for user in data_users(graph, out):
            if user.op_type != "MatMul" or len(user.inputs) < 2 or graph.is_constant(user.inputs[1]):
                continue
            if out not in user.inputs[:2] or node.op_type == "Softmax":
                continue
            split = _cosine_split_of(graph, out)
            if split is not None:
                return (f"makes an operand of {user.name} in cosine attention split by {split.name} over windows in "
                        "the batch: its relayout out of the normalised heads' form runs on the CPU")
    return None


def relpos_query_split(rule: Rule, view: LayerView) -> str | None:
    """A Reshape splitting the token axis of attention heads [1, h, H*W, d] into [1, h, H, W, d] for Einsums
    only (MViTv2's decomposed relative positions, 'byhwc,hkc->byhwk' and 'byhwc,wkc->byhwk'): rk3566 lowers
    each Einsum as an exMatMul over one pixel axis and brings q into its form with a CPU transpose (and
    reshape) named after this Reshape, one per Einsum (measured: rknn-toolkit2 2.5.0, corpus timm_mvitv2_tiny
    attn/Reshape_7 in all 10 blocks, (1,56,56,96) -> (56,96,1,56) and (4,14,14,96) -> (14,96,4,14), Target CPU in
    FP16 and INT8)."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = static_shape(graph, node.inputs[0], 4), static_shape(graph, node.outputs[0], 5)
    if src is None or dst is None or dst[:2] != src[:2] or dst[4] != src[3] or dst[2] * dst[3] != src[2]:
        return None
    if dst[2] <= 1 or dst[3] <= 1:
        return None
    users = data_users(graph, node.outputs[0])
    if not users or any(u.op_type != "Einsum" for u in users):
        return None
    return (f"splits the tokens of heads {list(src)} into pixels {list(dst)} for {len(users)} Einsum(s) over one "
            "pixel axis each: q's transpose into each exMatMul form runs on the CPU")
