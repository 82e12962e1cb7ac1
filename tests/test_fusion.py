"""Layer groups: vendor fusions, free layout ops, fallback-only regions; every group convex."""

from __future__ import annotations

import numpy as np
from onnx import helper

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from tests.conftest import ZOO, const, needs_zoo, save_model, value, weight

CATALOG = load_catalog()


def _groups(path, target="orin-agx"):
    return build_groups(check_graph(load_model(path), CATALOG, target))


def test_conv_bn_relu_fuse(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    inits = [weight("w", [8, 8, 3, 3])] + [const(k, np.ones(8, np.float32)) for k in "sbmv"]
    groups = _groups(save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)], inits))
    assert len(groups.groups) == 1
    assert groups.groups[0].anchor == "conv" and groups.groups[0].members == ("conv", "bn", "relu")
    assert groups.groups[0].attached == ()


def test_silu_triangle_fuses(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="mul")]
    groups = _groups(save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)],
                                [weight("w", [8, 8, 1, 1])]))
    assert len(groups.groups) == 1


def _residual(tmp_path):
    """x -> conv1 -> relu -> conv2 (+ x) -> relu: a ResNet basic block."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x0"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu2")]
    stem = helper.make_node("Relu", ["x"], ["x0"], name="stem")
    return save_model(tmp_path / "res.onnx", [stem, *nodes[:1], *nodes[1:]], [value("x", [1, 8, 8, 8])],
                      [value("y", None)], [weight("w1", [8, 8, 3, 3]), weight("w2", [8, 8, 3, 3])])


def test_tensorrt_fuses_a_residual_sum_into_the_convolution_before_it(tmp_path):
    """TensorRT: Convolution + ElementWise sum -> one kernel; the sum's other operand is read on the fly."""
    path = _residual(tmp_path)
    members = [g.members for g in _groups(path).groups]
    assert ("conv2", "add", "relu2") in members and all(g.fused for g in _groups(path).groups)
    assert ("conv2",) in [g.members for g in _groups(path, "rk3588").groups]  # RKNN keeps the sum apart


def test_different_eligibility_does_not_fuse(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("HardSwish", ["c"], ["y"], name="hs")]
    groups = _groups(save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)],
                                [weight("w", [8, 8, 1, 1])]))
    assert len(groups.groups) == 2  # HardSwish is not a DLA activation: the solver decides the cut


def test_constants_join_their_consumer(tmp_path):
    nodes = [helper.make_node("Constant", [], ["k"], name="k", value=helper.make_tensor("v", 7, [2], [1, 8])),
             helper.make_node("Reshape", ["x", "k"], ["y"], name="r")]
    groups = _groups(save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 1, 1])], [value("y", None)]))
    assert groups.node_group["k"] == groups.node_group["r"]


@needs_zoo
def test_groups_are_convex_on_the_zoo():
    for name in ("tv_ssdlite320_mobilenet_v3_large.onnx", "tv_vit_b_16.onnx", "yolov8n.onnx"):
        for target in ("orin-agx", "rk3588"):
            groups = _groups(ZOO / name, target)
            succ: dict[int, set[int]] = {}
            for e in groups.edges:
                if e.src >= 0:
                    succ.setdefault(e.src, set()).add(e.dst)
            for g in range(len(groups.groups)):  # no group reaches itself through another group
                seen, stack = set(), list(succ.get(g, ()))
                while stack:
                    n = stack.pop()
                    assert n != g, (name, target, groups.groups[g].anchor)
                    if n not in seen:
                        seen.add(n)
                        stack.extend(succ.get(n, ()))
            assert len(groups.groups) < len(groups.graph.nodes)
