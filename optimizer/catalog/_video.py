"""RKNN verdicts for the 5-D maps of video models: a Conv3d map [1, C, T, H, W] flattened into tokens.

rknn-toolkit2 holds a 5-D map with its frames stacked into rows; flattening frames and pixels into one token axis
is a relabel only where each frame's pixels fill whole 16-byte rows (rk3588), and a CPU Reshape on rk3566. The
measurements are in the rule's source (constraints/rockchip_rknn.toml, RKNN-VIDEO-FLATTEN).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView


def video_flatten(rule: Rule, view: LayerView) -> str | None:
    """A Reshape of a map [1, C, T, H, W] with T > 1 into tokens [1, C, T*H*W]: CPU unless the target's
    `align` (elements per precision) divides H*W; a target without `align` always."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src = static_shape(graph, node.inputs[0], 5)
    dst = static_shape(graph, node.outputs[0], 3)
    if src is None or dst is None:
        return None
    _, channels, frames, height, width = src
    if src[0] != 1 or frames == 1 or dst != (1, channels, frames * height * width):
        return None
    align = view.per_target(rule.params.get("align", {}))
    if align and (height * width) % int(align) == 0:
        return None
    why = f"{height}x{width} pixels a frame are not whole 16-byte rows" if align else "on this NPU always"
    return (f"Reshape flattens the video map {list(src)} into tokens {list(dst)}: a CPU relayout ({why})")
