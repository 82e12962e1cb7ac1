"""RKNN verdict for a sliding-window unfold written as two Gathers (rk3588).

torch.export writes `Tensor.unfold` on both pixel axes (HaloNet's halo windows, VOLO's outlook windows, TNT's
pixel patches) as a Gather of a constant [n, k] index on H, then on W. rknn-toolkit2 gathers the n*k rows and
columns into a (1, C, n*k, n*k) map and cuts it into (C*n, k, n, k) pieces with a Reshape named after the second
Gather: the cut of each map row of n*k pixels that RKNN-WIDTH-SPLIT measured, an NPU Reshape only when the row
fills whole 16-byte groups. The measurements are in the rule's source (RKNN-UNFOLD-ROWS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.catalog._layout import static_shape

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.catalog._view import LayerView
    from optimizer.ir import Graph, Node


def _window_index(graph: Graph, node: Node) -> tuple[int, int] | None:
    """(n, k) of a Gather on a pixel axis (not batch or channel of a map of rank 4 or more) whose indices are a
    build-time [n, k] table with n, k > 1 (n windows of k pixels)."""
    if node.op_type != "Gather" or len(node.inputs) < 2:
        return None
    index = graph.constants.get(node.inputs[1])
    if index is None or index.ndim != 2 or min(index.shape) < 2:
        return None
    data = static_shape(graph, node.inputs[0])
    axis = int(node.attrs.get("axis", 0))
    if data is None or len(data) < 4 or (axis % len(data)) < 2:
        return None
    return int(index.shape[0]), int(index.shape[1])


def _after_window_gather(graph: Graph, tensor: str, depth: int = 4) -> bool:
    """`tensor` is made by another window Gather, directly or through Transposes (the unfold of the other axis)."""
    producer = graph.producer(tensor)
    while producer is not None and producer.op_type == "Transpose" and depth > 0:
        producer = graph.producer(producer.inputs[0]) if producer.inputs else None
        depth -= 1
    return producer is not None and _window_index(graph, producer) is not None


def unfold_rows(rule: Rule, view: LayerView) -> str | None:
    """The second Gather of a two-axis window unfold is lowered with a Reshape cutting the gathered map rows of n*k
    pixels into (n, k) pieces: a CPU Reshape unless n*k is a multiple of `align` (whole 16-byte groups)."""
    graph, node = view.graph, view.node
    found = _window_index(graph, node)
    if found is None or static_shape(graph, node.inputs[0]) is None or not _after_window_gather(graph, node.inputs[0]):
        return None
    windows, width = found
    row = windows * width
    align = int(rule.params["align"][view.precision])
    if row % align == 0:
        return None
    return (f"unfolds {windows} windows of {width} pixels on the second axis: the gathered map rows of {row} pixels "
            f"are cut into ({windows}, {width}) pieces, and {row} is not a multiple of {align}")
