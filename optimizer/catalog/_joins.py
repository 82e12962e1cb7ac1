"""RKNN verdicts for block joins that have no 4-D form: the inverse of a window partition written without a batch
axis (HaloNet's block join), and the unpatchify of a diffusion transformer's tokens. Every SoC.

rknn-toolkit2 rewrites a window *partition* of a map into exWindow at rank 5 or 6, and the *join* back into a map
into transposed convolutions, but the join only in its rank-6 form [1,C,bs,bs,nb,nb] -> [1,C,nb,bs,nb,bs]. The same
join with the channels (or batch x channels) in axis 0, [C,bs,bs,nb,nb] -> [C,nb,bs,nb,bs], keeps five runs of axes
and is lowered as a Transpose of its own, which runs on the CPU even with a Reshape on both sides. The measurements
are in the rule's source (constraints/rockchip_rknn.toml, RKNN-BLOCK-JOIN-5D).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import einsum_permutation, only_user, static_shape
from optimizer.catalog._partitions import axis_runs, transpose_perm

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

_RANK = 5  # the rank-6 join with a unit batch in front is rewritten (probe tp5_halojoin_b1: NPU)
_UNPATCH_PERM = (0, 5, 1, 3, 2, 4)  # [1, h, w, p, q, c] -> [1, c, h, p, w, q]


def _joined_map(graph: Graph, node: Node) -> tuple[int, ...] | None:
    """The map [1, A, H, W] a rank-5 Transpose's only user reshapes its result [A, Y, y, X, x] into, when that
    Reshape merges axes (1, 2) into H and (3, 4) into W (a block join), else None."""
    if not node.outputs:
        return None
    out = static_shape(graph, node.outputs[0])
    back = only_user(graph, node.outputs[0])
    if out is None or len(out) != _RANK or back is None or back.op_type != "Reshape" or not back.outputs:
        return None
    merged = static_shape(graph, back.outputs[0])
    if merged != (1, out[0], out[1] * out[2], out[3] * out[4]):
        return None
    return merged


def block_join_5d(rule: Rule, view: LayerView) -> str | None:
    """A rank-5 Transpose with five runs of axes (no 4-D form) whose result a Reshape merges into a map, two axes
    into H and two into W, with every block axis wider than one (the join of a window partition held without a
    batch axis: HaloNet's block join), is a CPU Transpose."""
    graph, node = view.graph, view.node
    if node.op_type != "Transpose" or not node.inputs:
        return None
    shape = static_shape(graph, node.inputs[0])
    if shape is None or len(shape) != _RANK:
        return None
    perm = transpose_perm(node, _RANK)
    out = tuple(shape[p] for p in perm)
    if any(d == 1 for d in out[1:]) or axis_runs(shape, perm) < _RANK:
        return None
    merged = _joined_map(graph, node)
    if merged is None:
        return None
    return (f"Transpose {list(shape)} perm {list(perm)} joins blocks into the map {list(merged)} without a batch "
            "axis (no 4-D form, no transposed-convolution rewrite at rank 5): a CPU Transpose")


def _permutation(node: Node, rank: int) -> tuple[int, ...] | None:
    if node.op_type == "Transpose":
        return transpose_perm(node, rank)
    return einsum_permutation(node)


def _unpatchified(graph: Graph, reshape: Node | None) -> tuple[Node, tuple[int, ...]] | None:
    """(the permutation, the patch grid [1, h, w, p, q, c]) when `reshape` cuts tokens [1, h*w, p*q*c] into
    patches that its only user permutes to [1, c, h, p, w, q] with p*q > 1 (diffusers' unpatchify), else None."""
    if reshape is None or reshape.op_type != "Reshape" or not reshape.inputs or not reshape.outputs:
        return None
    src = static_shape(graph, reshape.inputs[0], 3)
    grid = static_shape(graph, reshape.outputs[0], 6)
    user = only_user(graph, reshape.outputs[0])
    if src is None or grid is None or user is None or user.op_type not in ("Transpose", "Einsum"):
        return None
    _, h, w, p, q, c = grid
    if (src[0] != 1 or grid[0] != 1 or src[1] != h * w or src[2] != p * q * c or p * q == 1
            or _permutation(user, 6) != _UNPATCH_PERM):
        return None
    return user, grid


def _merge_after_unpatchify(rule: Rule, view: LayerView) -> str | None:
    """On the targets in `merge_targets`, the Reshape merging the permuted patches into the map is a CPU layer too."""
    graph, node = view.graph, view.node
    if view.target.rules_id not in rule.params.get("merge_targets", ()) or not node.inputs:
        return None
    permutation = graph.producer(node.inputs[0])
    cut = graph.producer(permutation.inputs[0]) if permutation is not None and permutation.inputs else None
    found = _unpatchified(graph, cut)
    if found is None or found[0] is not permutation:
        return None
    return (f"Reshape merging the unpatchified patches {list(found[1])} into the map: on this NPU a CPU relayout "
            "after the CPU Transpose")


def token_unpatchify(rule: Rule, view: LayerView) -> str | None:
    """Tokens cut into patches and permuted back into a map (the departition order, channel first) without a
    window partition before them: no exWindow rewrite, the permutation is a Transpose layer of its own on the
    CPU, named after the Transpose node, or after the Reshape when an Einsum wrote the permutation."""
    graph, node = view.graph, view.node
    if node.op_type == "Transpose" and node.inputs:
        found = _unpatchified(graph, graph.producer(node.inputs[0]))
        if found is None or found[0] is not node:
            return None
    elif node.op_type == "Reshape":
        found = _unpatchified(graph, node)
        if found is None or found[0].op_type != "Einsum":
            return _merge_after_unpatchify(rule, view)
    else:
        return None
    return (f"unpatchify: tokens cut into patches {list(found[1])} and permuted to [1, c, h, p, w, q] have no 4-D "
            "form and no window rewrite: a CPU Transpose")
