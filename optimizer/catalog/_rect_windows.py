"""RKNN verdicts for 2-D window partitions and reverses whose windows are rectangles (CRAFT, DAT, RGT: 4 x 16 or
8 x 16 windows), as opposed to Swin's squares.

rknn-toolkit2 lowers a square-window partition [b, nH, w, nW, w, C] -> [b, nH, nW, w, w, C] and its reverse as
exWindow on the NPU; with wh != ww there is no exWindow form: the toolkit composes the whole run of layout ops
around the window Transpose (the channels-last Transpose before it, the attention heads' split after it) into one
Transpose of five or more axes, which runs on the CPU on every SoC and is named after the run's last Transpose.
The measurements are in the rule's source (constraints/rockchip_rknn.toml, RKNN-RECT-WINDOW).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import layout_run, static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node

WINDOW_PERM = (0, 1, 3, 2, 4, 5)
CHANNELS_FIRST_CUT = (0, 2, 4, 3, 5, 1)  # [b, C, nH, wh, nW, ww] -> [b, nH, nW, wh, ww, C] (CRAFT, DAT, RGT)


def _rect(graph: Graph, node: Node) -> tuple[str, int, int, tuple[int, ...]] | None:
    """(cuts/merges, wh, ww, shape) of a 2-D window Transpose with wh != ww, else None."""
    perm = tuple(node.attrs.get("perm") or ()) if node.op_type == "Transpose" and node.inputs else ()
    if perm == CHANNELS_FIRST_CUT:
        src = static_shape(graph, node.inputs[0], 6)
        if src is None or src[2] * src[4] == 1 or src[3] == src[5]:
            return None
        return "cuts", src[3], src[5], src
    if perm != WINDOW_PERM:
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
    if src[3] == src[4] or (map_like and src[2] == src[4]):
        return None  # square windows under one of the two readings of a map: shapes alone cannot rule out exWindow
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
    """The last Transpose of a run of layout ops holding a Transpose that cuts a map into wh x ww windows
    ((0, 1, 3, 2, 4, 5) of [b, nH, wh, nW, ww, C], or (0, 2, 4, 3, 5, 1) of [b, C, nH, wh, nW, ww]) or merges such
    windows back, with wh != ww: the toolkit lowers the run as one CPU Transpose named after that last one."""
    graph, node = view.graph, view.node
    if node.op_type != "Transpose":
        return None
    transposes = [m for m in layout_run(graph, node) if m.op_type == "Transpose"]
    if not transposes or transposes[-1] is not node:
        return None
    for member in transposes:
        found = _rect(graph, member)
        if found is None:
            continue
        verb, height, width, src = found
        if member is node:
            return (f"Transpose {verb} {height} x {width} windows {list(src)}: rectangular windows have no exWindow "
                    "form, a Transpose of five or more axes on the CPU")
        return (f"Transpose ends the layout run of {member.name}, which {verb} {height} x {width} windows "
                f"{list(src)}: rectangular windows have no exWindow form, and the run is one CPU Transpose named "
                "after its last")
    return None
