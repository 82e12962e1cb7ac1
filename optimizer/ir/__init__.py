"""Graph IR: ONNX models as typed, normalised, shape-annotated nodes."""

from optimizer.ir._graph import BYTES_PER_ELEMENT, Graph, Node, TensorInfo
from optimizer.ir._onnx_import import (
    CONTROL_FLOW,
    apply_input_shapes,
    load_model,
    node_names,
    outer_refs,
    parse_input_shapes,
)

__all__ = ["BYTES_PER_ELEMENT", "CONTROL_FLOW", "Graph", "Node", "TensorInfo", "apply_input_shapes", "load_model",
           "node_names", "outer_refs", "parse_input_shapes"]
