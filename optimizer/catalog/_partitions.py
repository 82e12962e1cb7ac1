"""RKNN verdicts for layout runs that have no 4-D form and no exWindow rewrite (rk3588, rk3576, rk3562, rv1126b).

rknn-toolkit2 holds every tensor in a 4-D form. A rank-5/6 Transpose is either merged with the layout ops around
it (a q/k/v unbind into a Split, a window partition or departition of a map into exWindow) or lowered as a
Transpose of its own, which the NPU cannot do when its non-unit axes form more than four runs. A MaxViT grid
partition (a window partition whose windows and tokens are swapped after it) has no exWindow form at all: the
toolkit cuts each map row into pieces, and on rk3588 those Reshapes need whole 16-byte rows. The measurements are
in each rule's source (constraints/rockchip_rknn.toml).
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from optimizer.catalog._layout import LAYOUT_OPS, data_users, only_user, static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

_UNBIND_OPS = frozenset({"Split", "Gather", "Slice", "Squeeze"})  # ops a transpose folds into (q/k/v unbind)
_PARTITION_PERM = (0, 2, 4, 3, 5, 1)  # [1,C,nh,p,nw,p] -> [1,nh,nw,p,p,C] (torchvision MaxViT)
_DEPARTITION_PERM = (0, 5, 1, 3, 2, 4)  # [1,nh,nw,p,p,C] -> [1,C,nh,p,nw,p]
_SWAP = (0, 2, 1, 3)  # windows <-> tokens: the grid form of a window partition
_BATCH_WINDOWS = 16  # probe tvblk_attn_C_NH_P: 4 and 16 windows are held in the batch axis, 25 to 64 are not


def transpose_perm(node: Node, rank: int) -> tuple[int, ...]:
    """A Transpose's perm, ONNX's reversed axes when it has none."""
    perm = node.attrs.get("perm")
    return tuple(int(p) for p in perm) if perm else tuple(reversed(range(rank)))


def axis_runs(shape: Sequence[int], perm: Sequence[int]) -> int:
    """How many runs of consecutive source axes the permutation leaves, unit axes dropped: a transpose the NPU
    can do as a 4-D one has at most four."""
    kept = [p for p in perm if shape[p] != 1]
    order = {axis: i for i, axis in enumerate(sorted(kept))}
    seq = [order[p] for p in kept]
    return 1 + sum(1 for a, b in itertools.pairwise(seq) if b != a + 1) if seq else 0


def _lone_runs(graph: Graph, node: Node) -> int | None:
    """The run count of a Transpose with five or more runs that no layout op or unbind can absorb: its input is
    not made by a layout op and no data user is a layout op or a q/k/v unbind; else None."""
    if node.op_type != "Transpose" or not node.inputs or not node.outputs:
        return None
    shape = static_shape(graph, node.inputs[0])
    if shape is None:
        return None
    runs = axis_runs(shape, transpose_perm(node, len(shape)))
    producer = graph.producer(node.inputs[0])
    if runs <= 4 or producer is None or producer.op_type in LAYOUT_OPS:
        return None
    users = data_users(graph, node.outputs[0])
    if not users or any(u.op_type in LAYOUT_OPS or u.op_type in _UNBIND_OPS for u in users):
        return None
    return runs


def lone_transpose_runs(rule: Rule, view: LayerView) -> str | None:
    """A Transpose with five or more runs that no layout op or unbind can absorb (BoTNet's relative logits
    (0,3,1,4,2) after an Expand, before an Add) is lowered alone, as a CPU Transpose. On the SoCs in
    `producer_socs` (rk3566) the reshape of its producer's 4-D result into the rank-5 input is a CPU layer too,
    named after the producer."""
    graph, node = view.graph, view.node
    runs = _lone_runs(graph, node)
    if runs is not None:
        shape = static_shape(graph, node.inputs[0]) or ()
        producer = graph.producer(node.inputs[0])
        perm = list(transpose_perm(node, len(shape)))
        return (f"Transpose {list(shape)} perm {perm} keeps {runs} runs of axes (no 4-D "
                f"form) and no layout op beside it to merge with ({producer.op_type if producer else '?'} before "
                "it): a CPU Transpose")
    if view.target.rules_id not in rule.params.get("producer_socs", ()):
        return None
    for out in node.outputs:
        for user in data_users(graph, out):
            if _lone_runs(graph, user) is not None:
                return (f"makes the rank-{len(graph.shape(out) or ())} input of {user.name}, a lone CPU Transpose: "
                        "the reshape into it runs on the CPU")
    return None


def _departition(graph: Graph, transpose: Node) -> tuple[int, int] | None:
    """(windows, map width) of a window departition Transpose [1,nh,nw,p,p,C] -> [1,C,nh,p,nw,p] whose result is
    reshaped into the map [1,C,nh*p,nw*p], with windows wider than one pixel, else None."""
    if transpose.op_type != "Transpose" or not transpose.inputs or not transpose.outputs:
        return None
    shape = static_shape(graph, transpose.inputs[0])
    if shape is None or len(shape) != 6 or shape[0] != 1 or transpose_perm(transpose, 6) != _DEPARTITION_PERM:
        return None
    back = only_user(graph, transpose.outputs[0])
    out = static_shape(graph, back.outputs[0]) if back is not None and back.op_type == "Reshape" else None
    if out is None or out != (1, shape[5], shape[1] * shape[3], shape[2] * shape[4]) or shape[4] == 1:
        return None
    return shape[1] * shape[2], out[3]


def _map_back(graph: Graph, transpose: Node) -> Node | None:
    user = only_user(graph, transpose.outputs[0])
    return user if user is not None and user.op_type == "Reshape" else None


def _partition(graph: Graph, reshape: Node) -> tuple[Node, Node] | None:
    """(Transpose, token Reshape) of a window partition starting at `reshape`: a map [1,C,H,W] reshaped to
    [1,C,H/p,p,W/p,p], Transpose (0,2,4,3,5,1), Reshape to [1,G,N,C]."""
    if reshape.op_type != "Reshape" or not reshape.inputs or not reshape.outputs:
        return None
    src, dst = static_shape(graph, reshape.inputs[0]), static_shape(graph, reshape.outputs[0])
    if src is None or dst is None or len(src) != 4 or len(dst) != 6 or dst[:2] != src[:2]:
        return None
    if dst[2] * dst[3] != src[2] or dst[4] * dst[5] != src[3] or dst[5] == 1:
        return None  # one-pixel windows (MaxViT's grid on a 7x7 map) cut nothing
    transpose = only_user(graph, reshape.outputs[0])
    if transpose is None or transpose.op_type != "Transpose" or transpose_perm(transpose, 6) != _PARTITION_PERM:
        return None
    tokens = only_user(graph, transpose.outputs[0])
    if tokens is None or tokens.op_type != "Reshape":
        return None
    shape = static_shape(graph, tokens.outputs[0])
    if shape is None or len(shape) != 4:
        return None
    return transpose, tokens


def _swapped(graph: Graph, tensor: str) -> bool:
    """The tensor is read only by a windows/tokens swap Transpose (0,2,1,3): the grid form."""
    user = only_user(graph, tensor)
    return user is not None and user.op_type == "Transpose" and transpose_perm(user, 4) == _SWAP


def window_batch_merge(rule: Rule, view: LayerView) -> str | None:
    """Windows held in the batch axis (at most 16 of them) departitioned straight into another partition (a
    MaxViT window block followed by its grid block): the toolkit merges the two layout runs, finds no exWindow
    form and lowers the departition as a rank-5 CPU Transpose; on the SoCs listed in `reshape_socs` the Reshape
    making the windows [1,nh,nw,p,p,C] goes with it."""
    graph, node = view.graph, view.node
    transpose = node
    if node.op_type == "Reshape" and node.outputs and view.target.rules_id in rule.params.get("reshape_socs", ()):
        user = only_user(graph, node.outputs[0])
        transpose = user if user is not None else node
    found = _departition(graph, transpose)
    if found is None:
        return None
    windows, _ = found
    back = _map_back(graph, transpose)
    if not 1 < windows <= _BATCH_WINDOWS or back is None:
        return None
    nxt = only_user(graph, back.outputs[0])
    if nxt is None or _partition(graph, nxt) is None:
        return None
    what = "its Transpose" if transpose is not node else "it"
    return (f"departs {windows} windows held in the batch axis straight into the partition {nxt.name}: the merged "
            f"layout run has no exWindow form and {what} is lowered as a rank-5 CPU relayout")


def _width(graph: Graph, partition: Node) -> int:
    """The map width a partition Reshape (checked by _partition) cuts."""
    shape = static_shape(graph, partition.inputs[0])
    assert shape is not None
    return shape[3]


class GridRole(enum.Enum):
    """Which of the four nodes a grid partition or its reverse lowers to rows a node is; the value is the
    message fragment the rules build from it."""

    CUTS = "cuts the map rows into grid pieces"
    TOKENS = "makes the grid tokens"
    JOINS = "joins the grid pieces back into map rows"
    SWAPPED_BACK = "is swapped back from grid tokens (its relayout)"


def _grid_nodes(graph: Graph, node: Node) -> tuple[int, GridRole] | None:
    """(map width, role) when `node` is one of the four nodes a grid partition or its reverse lowers to rows:
    the partition's first Reshape and its token Reshape (read by the swap), the op making the tensor the swap
    back reads, and the departition's Reshape back to the map."""
    if node.op_type == "Reshape":
        part = _partition(graph, node)
        if part is not None and _swapped(graph, part[1].outputs[0]):
            return _width(graph, node), GridRole.CUTS
        producer = graph.producer(node.inputs[0]) if node.inputs else None
        if producer is not None and producer.op_type == "Transpose" and producer.inputs:
            cutter = graph.producer(producer.inputs[0])
            part = _partition(graph, cutter) if cutter is not None and cutter.op_type == "Reshape" else None
            if cutter is not None and part is not None and part[1] is node and _swapped(graph, node.outputs[0]):
                return _width(graph, cutter), GridRole.TOKENS
            found = _departition(graph, producer)
            if found is not None and _map_back(graph, producer) is node and _swap_before(graph, producer):
                return found[1], GridRole.JOINS
    for out in node.outputs:
        swap = only_user(graph, out)
        if swap is None or swap.op_type != "Transpose" or transpose_perm(swap, 4) != _SWAP:
            continue
        windows = only_user(graph, swap.outputs[0])
        if windows is None or windows.op_type != "Reshape":
            continue
        transpose = only_user(graph, windows.outputs[0])
        found = _departition(graph, transpose) if transpose is not None else None
        if found is not None:
            return found[1], GridRole.SWAPPED_BACK
    return None


def _swap_before(graph: Graph, transpose: Node) -> bool:
    windows = graph.producer(transpose.inputs[0])
    swap = graph.producer(windows.inputs[0]) if windows is not None and windows.op_type == "Reshape" else None
    return swap is not None and swap.op_type == "Transpose" and transpose_perm(swap, 4) == _SWAP


def grid_rows(rule: Rule, view: LayerView) -> str | None:
    """A MaxViT grid partition of an NCHW map, or its reverse, has no exWindow form: the toolkit cuts each map row
    of W pixels into (W/g, g) pieces, an NPU Reshape only when W fills whole 16-byte groups (as RKNN-WIDTH-SPLIT)."""
    found = _grid_nodes(view.graph, view.node)
    if found is None:
        return None
    width, role = found
    align = int(rule.params["align"][view.precision])
    if width % align == 0:
        return None
    return f"{role.value}: a grid partition's map rows of {width} pixels are not a multiple of {align}"


def batched_rows(rule: Rule, view: LayerView) -> str | None:
    """A batch of flat rows [B, L] (held as (B, L, 1, 1)) reshaped into [B, A, W] rows or back (BoTNet's padded
    relative logits unflattened into (W+1, 2W-1)) moves each row's L elements into pixels: an NPU Reshape only
    when both L and the pixel rows W fill whole 16-byte groups (HaloNet's W = 24 rows: NPU in FP16 only)."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = static_shape(graph, node.inputs[0]), static_shape(graph, node.outputs[0])
    if src is None or dst is None or math.prod(src) != math.prod(dst):
        return None
    for flat, rows in ((src, dst), (dst, src)):
        if len(flat) == 2 and len(rows) == 3 and flat[0] == rows[0] > 1 and rows[1] > 1 and rows[2] > 1:
            aligns = rule.params["align"]
            align = int(aligns.get(view.target.rules_id, aligns)[view.precision])
            if flat[1] % align:
                return (f"Reshape {list(src)} -> {list(dst)} moves rows of {flat[1]} elements into "
                        f"({rows[1]}, {rows[2]}) pixels: {flat[1]} is not a multiple of {align}")
            if rows[2] % align:
                return (f"Reshape {list(src)} -> {list(dst)} moves rows of {flat[1]} elements into "
                        f"({rows[1]}, {rows[2]}) pixels: the pixel rows of {rows[2]} are not a multiple of {align}")
    return None


def _heads_from_pv(graph: Graph, tensor: str) -> bool:
    """`tensor` is attention's P.V brought heads-after-tokens: a Transpose (0,2,1,3) of a MatMul of two activations."""
    transpose = graph.producer(tensor)
    if transpose is None or transpose.op_type != "Transpose" or transpose_perm(transpose, 4) != (0, 2, 1, 3):
        return False
    matmul = graph.producer(transpose.inputs[0]) if transpose.inputs else None
    return (matmul is not None and matmul.op_type == "MatMul" and len(matmul.inputs) > 1
            and not graph.is_constant(matmul.inputs[1]))


def window_head_join(rule: Rule, view: LayerView) -> str | None:
    """Attention's heads joined back into 4-D windows [B, ws, ws, C] held in the batch axis (2 to 16 windows, timm's
    MaxViT): the toolkit merges the windows into the map rows for the projection with a channel/batch Transpose
    (B, C, ws, ws) -> (C, B, ws, ws), an NPU layer only when ws is a multiple of 4 (a window plane of whole 16-byte
    groups)."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = static_shape(graph, node.inputs[0]), static_shape(graph, node.outputs[0])
    if src is None or dst is None or len(src) != 4 or len(dst) != 4:
        return None
    windows, ws = dst[0], dst[1]
    if not 1 < windows <= _BATCH_WINDOWS or dst[2] != ws or src[0] != windows or src[1] != ws * ws:
        return None
    if src[2] * src[3] != dst[3] or src[2] == 1 or not _heads_from_pv(graph, node.inputs[0]):
        return None
    align = int(rule.params["window_align"])
    if ws % align == 0:
        return None
    return (f"joins attention heads into {windows} windows of {ws}x{ws} held in the batch axis: the channel/batch "
            f"transpose of a {ws}x{ws} window plane runs on the CPU (window not a multiple of {align})")


def _grid_tokens_reader(graph: Graph, node: Node) -> bool:
    """`node` reads the swapped tokens of a grid partition (windows wider than one pixel): its input is the swap
    Transpose (0,2,1,3) of the token Reshape of a partition run. Of a pre-norm block's two readers only the
    LayerNormalization takes the transpose's name (the residual Add has no layer: corpus tv_maxvit_t
    grid_attention/Add), so with several readers only a LayerNormalization counts."""
    for name in node.inputs:
        swap = graph.producer(name) if name else None
        if swap is None or swap.op_type != "Transpose" or transpose_perm(swap, 4) != _SWAP or not swap.inputs:
            continue
        if len(data_users(graph, name)) > 1 and node.op_type != "LayerNormalization":
            continue
        tokens = graph.producer(swap.inputs[0])
        transpose = graph.producer(tokens.inputs[0]) if tokens is not None and tokens.inputs else None
        cutter = graph.producer(transpose.inputs[0]) if transpose is not None and transpose.inputs else None
        part = _partition(graph, cutter) if cutter is not None else None
        if part is not None and part[1] is tokens:
            return True
    return False


def grid_unswap(graph: Graph, node: Node) -> bool:
    """`node` is the windows/tokens swap back (0,2,1,3) of a grid block whose only user starts a departition
    (a Reshape to [1,nh,nw,p,p,C] read by the Transpose (0,5,1,3,2,4)): the toolkit merges it into that run,
    which is lowered from the op before it, so it has no layer of its own (measured: rknn-toolkit2 2.5.0 on
    rk3566, corpus tv_maxvit_t grid_attention/departition_swap/Transpose: no layer in any of the 11 layers)."""
    if node.op_type != "Transpose" or not node.outputs or transpose_perm(node, 4) != _SWAP:
        return False
    windows = only_user(graph, node.outputs[0])
    if windows is None or windows.op_type != "Reshape" or not windows.outputs:
        return False
    transpose = only_user(graph, windows.outputs[0])
    if transpose is None or transpose.op_type != "Transpose" or not transpose.inputs:
        return False
    shape = static_shape(graph, transpose.inputs[0], 6)
    return shape is not None and transpose_perm(transpose, 6) == _DEPARTITION_PERM


def grid_swap_ends(rule: Rule, view: LayerView) -> str | None:
    """rk3566's lowering of a torchvision MaxViT grid block (window partition of an NCHW map, windows/tokens swap,
    ..., swap back, departition) with windows wider than one pixel: the grid partition's transpose is a CPU layer
    named after the op reading the swapped tokens, the swap back is a CPU relayout named after the op before it,
    and the departition's Transpose is a CPU layer of its own, whatever the map width (rk3588's RKNN-GRID-ROWS
    has a width condition; rk3566 does not)."""
    graph, node = view.graph, view.node
    if _grid_tokens_reader(graph, node):
        return "reads a grid partition's swapped tokens: the partition's transpose, named after it, runs on the CPU"
    if node.op_type == "Transpose" and node.inputs and _departition(graph, node) is not None \
            and _swap_before(graph, node):
        return "the departition Transpose of a grid block runs on the CPU (no exWindow form)"
    found = _grid_nodes(graph, node)
    if found is not None and found[1] is GridRole.SWAPPED_BACK:
        return "is swapped back from grid tokens: the relayout, named after it, runs on the CPU"
    return None


def window_batch_split(rule: Rule, view: LayerView) -> str | None:
    """The op making an NCHW map that a window partition (no swap after it) cuts into 2 to 16 windows: rk3566
    lowers the partition as exWindow (1,C,G,N) on the NPU and moves the windows into the batch axis, (G,C,1,N),
    with a CPU Transpose named after this op; 64 windows stay in (1,C,G,N) with no transpose."""
    graph, node = view.graph, view.node
    for out in node.outputs:
        for user in data_users(graph, out):
            part = _partition(graph, user)
            if part is None or _swapped(graph, part[1].outputs[0]):
                continue
            shape = static_shape(graph, part[1].outputs[0])
            if shape is not None and 1 < shape[1] <= _BATCH_WINDOWS:
                return (f"its map is cut into {shape[1]} windows held in the batch axis by {user.name}: the "
                        "transpose of the exWindow result into the batch runs on the CPU, named after it")
    return None
