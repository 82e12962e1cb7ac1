"""RKNN verdicts for interleaved pairs: the last axis of a tensor cut into (d/2, 2) and joined back, as rotary
position embeddings over interleaved pairs write it (GPT-J style; V-JEPA 2).

rknn-toolkit2 keeps the pair axis of two as the innermost one; on rk3588 that Reshape is a relabel only when the
cut axis fills whole 16-byte rows, and on rk3566 it is a CPU Reshape at every size. A join whose pairs were never
cut (even and odd elements taken by strided Slices and stacked: timm's ViT-RoPE, EVA-02, DETR's sine embedding)
is another pattern: the toolkit folds the slices, stack and join into one NPU convolution. The measurements are in
the rule's source (constraints/rockchip_rknn.toml, RKNN-PAIR-SPLIT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

CUT_DEPTH = 8  # V-JEPA 2's rotation: cut, Split, Squeeze, Neg, Unsqueeze, Concat, join

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node


def _paired(whole: tuple[int, ...], pairs: tuple[int, ...]) -> bool:
    """`pairs` is `whole` with its last axis cut into (d/2, 2)."""
    return (len(pairs) == len(whole) + 1 and pairs[-1] == 2 and pairs[:-2] == whole[:-1]
            and 2 * pairs[-2] == whole[-1] > 2)


def _from_cut(graph: Graph, node: Node, depth: int = CUT_DEPTH) -> bool:
    """Some producer of `node` within `depth` steps is a Reshape that cuts a last axis into pairs."""
    frontier, seen = [node], {node.name}
    for _ in range(depth):
        upstream = []
        for current in frontier:
            for tensor in graph.runtime_inputs(current):
                producer = graph.producer(tensor)
                if producer is None or producer.name in seen:
                    continue
                seen.add(producer.name)
                if producer.op_type == "Reshape":
                    src, dst = static_shape(graph, producer.inputs[0]), static_shape(graph, producer.outputs[0])
                    if src is not None and dst is not None and _paired(src, dst):
                        return True
                upstream.append(producer)
        frontier = upstream
    return False


def pair_split(rule: Rule, view: LayerView) -> str | None:
    """A Reshape of a rank >= 4 tensor [.., d] into [.., d/2, 2], or back from pairs that such a cut made: CPU
    unless the target's `align` (elements per precision) divides d; a target without `align` always."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = static_shape(graph, node.inputs[0]), static_shape(graph, node.outputs[0])
    if src is None or dst is None or min(len(src), len(dst)) < 4:
        return None
    if _paired(src, dst):
        whole, verb = src, "cuts"
    elif _paired(dst, src) and _from_cut(graph, node):
        whole, verb = dst, "joins"
    else:
        return None
    width = whole[-1]
    align = view.per_target(rule.params.get("align", {}))
    if align and width % int(align) == 0:
        return None
    why = f"{width} elements are not whole 16-byte rows" if align else "on this NPU always"
    return f"Reshape {verb} the last axis of {list(whole)} into interleaved pairs: a CPU relayout ({why})"
