"""RKNN verdicts for interleaved pairs: the last axis of a tensor cut into (d/2, 2) and joined back, as rotary
position embeddings over interleaved pairs write it (GPT-J style; V-JEPA 2).

rknn-toolkit2 keeps the pair axis of two as the innermost one; on rk3588 that Reshape is a relabel only when the
cut axis fills whole 16-byte rows, and on rk3566 it is a CPU Reshape at every size. The measurements are in the
rule's source (constraints/rockchip_rknn.toml, RKNN-PAIR-SPLIT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView


def _paired(whole: tuple[int, ...], pairs: tuple[int, ...]) -> bool:
    """`pairs` is `whole` with its last axis cut into (d/2, 2)."""
    return (len(pairs) == len(whole) + 1 and pairs[-1] == 2 and pairs[:-2] == whole[:-1]
            and 2 * pairs[-2] == whole[-1] > 2)


def pair_split(rule: Rule, view: LayerView) -> str | None:
    """A Reshape of a rank >= 4 tensor [.., d] into [.., d/2, 2], or back: CPU unless the target's `align`
    (elements per precision) divides d; a target without `align` always."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = static_shape(graph, node.inputs[0]), static_shape(graph, node.outputs[0])
    if src is None or dst is None or min(len(src), len(dst)) < 4:
        return None
    if _paired(src, dst):
        whole, verb = src, "cuts"
    elif _paired(dst, src):
        whole, verb = dst, "joins"
    else:
        return None
    width = whole[-1]
    align = view.per_target(rule.params.get("align", {}))
    if align and width % int(align) == 0:
        return None
    why = f"{width} elements are not whole 16-byte rows" if align else "on this NPU always"
    return f"Reshape {verb} the last axis of {list(whole)} into interleaved pairs: a CPU relayout ({why})"
