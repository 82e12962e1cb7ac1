"""Layer groups: vendor fusions, free layout ops, fallback-only regions; every group convex."""

from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import helper

import optimizer.fusion
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import Contraction, build_groups, merge_ordered, other_path, reach_before, topological_positions
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


def test_bounded_search_answers_like_brute_force_and_keeps_the_order():
    """reach_before (searching only between a and b) against an unbounded search, over random merges of
    random DAGs; after every merge the positions are still a topological order of the contracted graph."""
    rng = random.Random(11)
    answers = {True: 0, False: 0}
    for _ in range(300):
        n = rng.randint(2, 30)
        label = list(range(n))
        rng.shuffle(label)  # node numbers need not be a topological order
        density = rng.choice([0.08, 0.15, 0.3, 0.5])
        c = Contraction(n, [(label[i], label[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < density])
        pos = topological_positions(c, list(range(n)))
        assert pos is not None
        for _ in range(3 * n):
            edges = sorted((a, b) for a in c.succ for b in c.succ[a])
            if not edges:
                break
            a, b = rng.choice(edges)
            forward = reach_before(c, pos, a, b)
            answers[forward is None] += 1
            assert (forward is None) == other_path(c, a, b)
            if forward is None:
                continue
            merge_ordered(c, pos, a, b, forward)
            assert sorted(pos) == sorted(c.succ) and len(set(pos.values())) == len(pos)
            assert all(pos[x] < pos[y] for x in c.succ for y in c.succ[x])
    assert min(answers.values()) > 100  # both answers were exercised


def _random_dag(path, rng: random.Random, size: int):
    """Convolutions, ReLUs, a non-DLA op and two-operand sums wired to random recent tensors."""
    nodes, inits, tensors = [], [], ["x"]
    for i in range(size):
        kind = rng.choice(("conv", "conv", "conv", "relu", "sin", "add", "add"))
        a = rng.choice(tensors[-6:])
        if kind == "conv":
            inits.append(weight(f"w{i}", [8, 8, 3, 3]))
            nodes.append(helper.make_node("Conv", [a, f"w{i}"], [f"t{i}"], name=f"n{i}", kernel_shape=[3, 3],
                                          pads=[1, 1, 1, 1]))
        elif kind == "add" and len(tensors) > 2:
            b = rng.choice([t for t in tensors[-8:] if t != a] or tensors[:1])
            nodes.append(helper.make_node("Add", [a, b], [f"t{i}"], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Sin" if kind == "sin" else "Relu", [a], [f"t{i}"], name=f"n{i}"))
        tensors.append(f"t{i}")
    used = {t for n in nodes for t in n.input}
    outputs = [value(t, [1, 8, 8, 8]) for t in tensors[1:] if t not in used]
    return save_model(path, nodes, [value("x", [1, 8, 8, 8])], outputs, inits)


def _shape_of(groups):
    return ([(g.members, g.attached, g.fused, g.support) for g in groups.groups], groups.edges,
            dict(groups.node_group))


def _unbounded(monkeypatch, path, target):
    """The groups the unbounded search gives (no topological order: the fallback for a cyclic graph)."""
    with monkeypatch.context() as patch:
        patch.setattr(optimizer.fusion, "topological_positions", lambda c, units: None)
        return _groups(path, target)


def test_residual_sums_match_the_unbounded_search_on_random_dags(tmp_path, monkeypatch):
    rng = random.Random(3)
    sums = fused = 0
    for k in range(40):
        path = _random_dag(tmp_path / f"r{k}.onnx", rng, rng.randint(8, 40))
        for target in ("orin-agx", "xavier-agx"):
            groups = _groups(path, target)
            assert _shape_of(groups) == _shape_of(_unbounded(monkeypatch, path, target))
            adds = [n.name for n in groups.graph.nodes if n.op_type == "Add"]
            sums += len(adds)
            fused += sum(groups.groups[groups.node_group[a]].anchor != a for a in adds)
    assert 0.2 * sums < fused < 0.95 * sums  # sums were fused and others left alone


@needs_zoo
@pytest.mark.parametrize("name", ["tv_resnet50", "tv_densenet121", "yolov8n", "rtdetr_l", "tv_mobilenet_v2"])
def test_residual_sums_match_the_unbounded_search_on_the_zoo(monkeypatch, name):
    path = ZOO / f"{name}.onnx"
    assert _shape_of(_groups(path)) == _shape_of(_unbounded(monkeypatch, path, "orin-agx"))
