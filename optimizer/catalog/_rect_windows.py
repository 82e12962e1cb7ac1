"""RKNN verdicts for 2-D window partitions and reverses whose windows are rectangles (CRAFT, DAT, RGT: 4 x 16 or
8 x 16 windows), as opposed to Swin's squares.

rknn-toolkit2 lowers a square-window partition [b, nH, w, nW, w, C] -> [b, nH, nW, w, w, C] and its reverse as
exWindow on the NPU; with wh != ww there is no exWindow form and the 6-D Transpose (merged with the channels-last
Transpose next to it) runs on the CPU on every SoC. The measurements are in the rule's source
(constraints/rockchip_rknn.toml, RKNN-RECT-WINDOW).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

WINDOW_PERM = (0, 1, 3, 2, 4, 5)


def _rect(graph: Graph, node: Node) -> tuple[str, int, int, tuple[int, ...]] | None:
    """(cuts/merges, wh, ww, shape) of a 2-D window Transpose with wh != ww, else None."""
    if node.op_type != "Transpose" or not node.inputs or tuple(node.attrs.get("perm") or ()) != WINDOW_PERM:
        return None
    src = static_shape(graph, node.inputs[0])
    split = graph.producer(node.inputs[0])
    before = static_shape(graph, split.inputs[0]) if split is not None and split.op_type == "Reshape" else None
    if src is None or before is None or len(src) != 6:
        return None
    map_like = len(before) == 4 and before[:3] == (src[0], src[1] * src[2], src[3] * src[4]) and before[3] == src[5]
    batched = before[0] == src[0] * src[1] * src[2] and src[1] * src[2] > 1
    if map_like and _to_channels_first(graph, node) is None:
        verb, height, width = "cuts", src[2], src[4]
    elif map_like or batched:  # windows listed in axis 1 read like a map: what follows tells them apart
        verb, height, width = "merges", src[3], src[4]
    else:
        return None
    if src[2] == src[4] or src[3] == src[4]:
        return None  # square windows under one of the two readings: shapes alone cannot rule out exWindow
    return verb, height, width, src


def _to_channels_first(graph: Graph, reverse: Node) -> Node | None:
    """The Transpose (0, 3, 1, 2) that takes the merged map [b, H, W, C] straight from the reverse's Reshape."""
    users = graph.consumers(reverse.outputs[0]) if reverse.outputs else ()
    if len(users) != 1 or users[0].op_type != "Reshape":
        return None
    after = graph.consumers(users[0].outputs[0]) if users[0].outputs else ()
    if len(after) == 1 and after[0].op_type == "Transpose" and tuple(after[0].attrs.get("perm") or ()) == (0, 3, 1, 2):
        return after[0]
    return None


def rect_window(rule: Rule, view: LayerView) -> str | None:
    """A Transpose (0, 1, 3, 2, 4, 5) that cuts a map [b, H, W, C] into wh x ww windows, or merges such windows
    [b*nH*nW, ..] back, with wh != ww. A merge followed by the map's Transpose back to channels-first is one CPU
    Transpose named after that one, which carries the verdict."""
    graph, node = view.graph, view.node
    found = _rect(graph, node)
    if found is not None:
        verb, height, width, src = found
        if verb == "merges" and _to_channels_first(graph, node) is not None:
            return None
        return (f"Transpose {verb} {height} x {width} windows {list(src)}: rectangular windows have no exWindow "
                "form, a 6-D Transpose on the CPU")
    if node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != (0, 3, 1, 2) or not node.inputs:
        return None
    reshape = graph.producer(node.inputs[0])
    reverse = graph.producer(reshape.inputs[0]) if reshape is not None and reshape.inputs else None
    if reverse is None or _to_channels_first(graph, reverse) is not node:
        return None
    found = _rect(graph, reverse)
    if found is None or found[0] != "merges":
        return None
    return (f"Transpose takes the merge of {found[1]} x {found[2]} windows ({reverse.name}) into the channels-first "
            "map: rectangular windows have no exWindow form, one CPU Transpose")
