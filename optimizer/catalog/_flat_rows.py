"""RKNN verdict for a Pad of a batch of flat rows (every SoC).

rknn-toolkit2 holds a rank-2 tensor of rows [B, L] (B > 1) as (B, L, 1, 1): the row length L is the channel of
its 4-D form (RKNN-BATCHED-ROWS reads the same form). A constant Pad of the last axis then extends that channel,
which the NPU Pad does only from whole channel groups: BoTNet's and HaloNet's relative-logit rows of 96 to 2048
elements pad on the NPU, HaloRegNetZ's rows of 154 on the CPU. The measurements are in the rule's source
(constraints/rockchip_rknn.toml, RKNN-ROWS-PAD).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView


def _row_pad(view: LayerView) -> tuple[int, int, int, int] | None:
    """(B, L, before, after) of a constant Pad that pads only the last axis of rows [B, L] with B > 1, else None."""
    graph, node = view.graph, view.node
    if node.op_type != "Pad" or len(node.inputs) < 2 or not node.inputs[1]:
        return None
    if (node.attrs.get("mode") or "constant") != "constant" or (len(node.inputs) > 3 and node.inputs[3]):
        return None  # opset-18 axes: not measured
    shape = static_shape(graph, node.inputs[0], rank=2)
    pads = graph.constants.get(node.inputs[1])
    if shape is None or pads is None or pads.size != 4 or shape[0] <= 1:
        return None
    begin_rows, begin_len, end_rows, end_len = (int(v) for v in pads.reshape(-1))
    if begin_rows or end_rows or not (begin_len or end_len) or min(begin_len, end_len) < 0:  # a crop: not measured
        return None
    return shape[0], shape[1], begin_len, end_len


def rows_pad(rule: Rule, view: LayerView) -> str | None:
    """A Pad of the row length of rows [B, L] (held as (B, L, 1, 1)) extends the 4-D form's channel: a CPU Pad
    unless L fills whole channel groups (`align` per SoC and precision)."""
    found = _row_pad(view)
    if found is None:
        return None
    rows, length, before, after = found
    aligns = rule.params["align"]
    align = int(aligns.get(view.target.rules_id, aligns["default"])[view.precision])
    if length % align == 0:
        return None
    return (f"Pad ({before}, {after}) of rows [{rows}, {length}] (held as ({rows},{length},1,1)) extends a channel "
            f"of {length}, not a multiple of {align}: a CPU Pad")
