"""What a run of layout ops does to the data, composed as the RKNN compiler composes it.

rknn-toolkit2 merges consecutive layout ops (Transpose, Reshape, Squeeze, Unsqueeze, Flatten) and lowers the
run once; ops whose composition leaves every element where it was (a transpose and its inverse around a
reshape that only regroups axes) lower to nothing. Whether a composition moves data is a property of the
shapes and permutations alone, so it is decided exactly here by pushing element indices through the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from optimizer.ir import Graph, Node

LAYOUT_OPS = frozenset({"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})
RESHAPES = LAYOUT_OPS - {"Transpose"}  # the layout ops that keep the element order
_MAX_ELEMENTS = 1 << 22  # index arrays above this are not built (4M int32: 16 MB); such a run is left undecided
METADATA_READERS = frozenset({"Shape", "Size"})


def einsum_equation(node: Node) -> str | None:
    """An Einsum's equation as text (onnx may hand the attribute over as bytes), else None."""
    equation = node.attrs.get("equation") if node.op_type == "Einsum" else None
    if isinstance(equation, bytes):
        equation = equation.decode("utf-8", "replace")
    return equation if isinstance(equation, str) else None


def einsum_permutation(node: Node) -> tuple[int, ...] | None:
    """The axis permutation a one-operand Einsum with distinct labels, all kept, writes ("nhwpqc->nchpwq"), else
    None: the toolkit lowers it as a Transpose."""
    equation = einsum_equation(node)
    if equation is None or "->" not in equation:
        return None
    source, _, target = (part.strip() for part in equation.partition("->"))
    if "," in source or "." in source or len(set(source)) != len(source) or sorted(source) != sorted(target):
        return None
    return tuple(source.index(label) for label in target)


def spaced_einsum_operand(node: Node) -> tuple[int, str] | None:
    """rknn-toolkit2 reads an Einsum equation character by character, blanks included: an operand term with two
    blanks repeats a label, and the toolkit keeps that Einsum as a CPU layer (RKNN-EINSUM-LABELS; rk3588's and
    rk3566's operand hand-overs follow from it). The first such operand (index, subscripts), else None."""
    equation = einsum_equation(node)
    if equation is None:
        return None
    for i, term in enumerate(equation.partition("->")[0].split(",")):
        if term.count(" ") > 1:
            return i, term
    return None


def reduce_axes(graph: Graph, node: Node) -> list[int] | None:
    """A Reduce* node's axes as written, from the attribute (opset < 18, ReduceSum < 13) or the constant second
    input."""
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.constants.get(node.inputs[1])
        axes = None if value is None else value.reshape(-1).tolist()
    return None if axes is None else [int(a) for a in axes]


def static_shape(graph: Graph, tensor: str, rank: int | None = None) -> tuple[int, ...] | None:
    """A tensor's dims when all are known (and it has `rank` of them, if given)."""
    shape = graph.shape(tensor)
    if shape is None or (rank is not None and len(shape) != rank) or not all(isinstance(d, int) for d in shape):
        return None
    return tuple(int(d) for d in shape)


def data_users(graph: Graph, tensor: str) -> tuple[Node, ...]:
    """The consumers that read a tensor's data: a Shape or Size reads only its dims, which the toolkit folds
    into constants, so it neither holds the tensor in a layout nor forces one."""
    return tuple(u for u in graph.consumers(tensor) if u.op_type not in METADATA_READERS)


def only_user(graph: Graph, tensor: str) -> Node | None:
    """The tensor's one data user, or None."""
    users = data_users(graph, tensor)
    return users[0] if len(users) == 1 else None


def layout_run(graph: Graph, node: Node, limit: int = 8) -> list[Node]:
    """The linear run of layout ops `node` sits in: each member the only data user of the one before it."""
    if node.op_type not in LAYOUT_OPS or not node.inputs or not node.outputs:
        return []
    run = [node]
    current = node
    while len(run) < limit:
        producer = graph.producer(current.inputs[0])
        if producer is None or producer.op_type not in LAYOUT_OPS or not producer.inputs:
            break
        if only_user(graph, current.inputs[0]) is not current or len(producer.outputs) != 1:
            break
        run.insert(0, producer)
        current = producer
    current = node
    while len(run) < 2 * limit:
        user = only_user(graph, current.outputs[0])
        if user is None or user.op_type not in LAYOUT_OPS or user.inputs[0] != current.outputs[0]:
            break
        run.append(user)
        current = user
    return run


def _apply(graph: Graph, node: Node, data: np.ndarray) -> np.ndarray | None:
    out = static_shape(graph, node.outputs[0])
    if out is None or int(np.prod(out, dtype=np.int64)) != data.size:
        return None
    if node.op_type == "Transpose":
        perm = node.attrs.get("perm") or tuple(reversed(range(data.ndim)))
        if len(perm) != data.ndim:
            return None
        data = np.transpose(data, [int(p) for p in perm])
        return data if data.shape == out else None
    return data.reshape(out)


def composes_to_reshape(graph: Graph, members: Sequence[Node]) -> bool:
    """The members, applied in order, leave every element at its row-major position (the composition is a
    reshape) and end with the innermost axis they started with, so the NPU's channel-innermost layout is
    unchanged too."""
    if not members:
        return False
    src = static_shape(graph, members[0].inputs[0])
    dst = static_shape(graph, members[-1].outputs[0])
    if src is None or dst is None or not src or not dst or src[-1] != dst[-1]:
        return False
    size = int(np.prod(src, dtype=np.int64))
    if size > _MAX_ELEMENTS or size <= 1:
        return False
    data: np.ndarray | None = np.arange(size, dtype=np.int32).reshape(src)
    for member in members:
        assert data is not None
        data = _apply(graph, member, data)
        if data is None:
            return False
    assert data is not None
    return bool(np.array_equal(data.reshape(-1), np.arange(size, dtype=np.int32)))


def moves_data(graph: Graph, node: Node) -> bool:
    """A Transpose that reorders non-unit axes (a data move on its own)."""
    src = static_shape(graph, node.inputs[0])
    if node.op_type != "Transpose" or src is None:
        return False
    perm = node.attrs.get("perm") or tuple(reversed(range(len(src))))
    moved = [int(axis) for axis in perm if src[int(axis)] != 1]
    return moved != sorted(moved)


def in_identity_run(graph: Graph, node: Node) -> bool:
    """`node` lies inside a stretch of its layout run that contains a data-moving Transpose and composes to a
    reshape keeping the innermost axis (e.g. Sequencer's (0,2,1,3), Reshape, (1,0,2) that turn [1,H,W,C] into
    [H,W,C] with W and H swapped twice): the toolkit lowers that stretch to nothing."""
    run = layout_run(graph, node)
    if len(run) < 2:
        return False
    at = run.index(node)
    for start in range(at, -1, -1):
        for end in range(max(at, start + 1), len(run)):
            stretch = run[start:end + 1]
            if any(moves_data(graph, m) for m in stretch) and composes_to_reshape(graph, stretch):
                return True
    return False


def channel_permutation(graph: Graph, node: Node) -> bool:
    """`node` ends a stretch of its layout run that takes a map [1, C, H, W] to the same shape with whole channels
    reordered and nothing else moved (ShuffleNet's channel shuffle: Reshape [1, G, C/G, H, W], Transpose
    (0, 2, 1, 3, 4), Reshape back). The toolkit lowers such a permutation as a channel gather folded into a 1x1
    convolution, which runs on the NPU."""
    run = layout_run(graph, node)
    dst = static_shape(graph, node.outputs[0], 4) if node.outputs else None
    if node not in run or dst is None or dst[0] != 1 or dst[1] <= 1:
        return False
    pixels = dst[2] * dst[3]
    size = dst[1] * pixels
    if size > _MAX_ELEMENTS:
        return False
    at = run.index(node)
    for start in range(at):
        stretch = run[start:at + 1]
        if static_shape(graph, stretch[0].inputs[0]) != dst or not any(moves_data(graph, m) for m in stretch):
            continue
        data: np.ndarray | None = np.arange(size, dtype=np.int32).reshape(dst)
        for member in stretch:
            assert data is not None
            data = _apply(graph, member, data)
            if data is None:
                break
        if data is None:
            continue
        rows = data.reshape(dst[1], pixels)
        first = rows[:, :1]
        if (first % pixels == 0).all() and np.array_equal(rows, first + np.arange(pixels, dtype=np.int32)):
            return True
    return False
