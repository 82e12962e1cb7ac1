"""Huge hostile models written straight as protobuf bytes (linear time, no Python recursion): a chain of
a million nodes, and If bodies nested far deeper than any exporter writes."""

from __future__ import annotations

from onnx import TensorProto, helper


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (strings, sub-messages)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _model_with_graph(graph: bytes) -> bytes:
    model = helper.make_model(helper.make_graph([], "g", [], []), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.ClearField("graph")
    return model.SerializeToString() + _field(7, graph)  # ModelProto.graph = 7


def relu_chain(nodes: int) -> bytes:
    """x -> Relu -> Relu -> ... -> y (GraphProto: node=1, name=2, input=11, output=12)."""
    x = helper.make_tensor_value_info(f"t{0:07d}", TensorProto.FLOAT, [1, 4]).SerializeToString()
    y = helper.make_tensor_value_info(f"t{nodes:07d}", TensorProto.FLOAT, [1, 4]).SerializeToString()
    # fixed-width names: every node record has the same layout, so one template serves them all
    slot = b"\xff" * 7
    a, b, c, d = _field(1, _field(1, b"t" + slot) + _field(2, b"t" + slot) + _field(3, b"n" + slot)
                        + _field(4, b"Relu")).split(slot)
    digits = [b"%07d" % i for i in range(nodes + 1)]
    body = b"".join(a + digits[i] + b + digits[i + 1] + c + digits[i] + d for i in range(nodes))
    return _model_with_graph(body + _field(2, b"chain") + _field(11, x) + _field(12, y))


def nested_ifs(depth: int) -> bytes:
    """`depth` If nodes, each the only node of its parent's then_branch."""
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, None).SerializeToString()
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["o"], name="leaf")], "b", [],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)]).SerializeToString()
    graph_type = _varint(20 << 3) + _varint(5)  # AttributeProto.type = GRAPH
    else_attr = _field(1, b"else_branch") + _field(6, leaf) + graph_type
    node_head = _field(1, b"c") + _field(2, b"o") + _field(4, b"If")
    node_tail = _field(5, else_attr)
    graph_tail = _field(2, b"g") + _field(12, out)
    then_name = _field(1, b"then_branch")
    sizes, inner = [], len(leaf)
    for _ in range(depth):  # sizes from the inside out; bytes are then written from the outside in
        attr = len(then_name) + len(_varint(6 << 3 | 2)) + len(_varint(inner)) + inner + len(graph_type)
        node = len(node_head) + len(_varint(5 << 3 | 2)) + len(_varint(attr)) + attr + len(node_tail)
        sizes.append((inner, attr, node))
        inner = len(_varint(1 << 3 | 2)) + len(_varint(node)) + node + len(graph_tail)
    head = [_varint(1 << 3 | 2) + _varint(node) + node_head + _varint(5 << 3 | 2) + _varint(attr) + then_name
            + _varint(6 << 3 | 2) + _varint(graph) for graph, attr, node in reversed(sizes)]
    tail = graph_type + node_tail + graph_tail
    return _model_with_graph(b"".join(head) + leaf + tail * depth)
