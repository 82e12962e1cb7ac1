"""Shapes that resolve: every tensor of a static model gets concrete dims, and what stays unknown has a cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import REPO, needs_zoo, zoo_models
from tests.ir import shape_patterns as patterns

CORPUS = REPO / "corpus" / "models"


def _unknown(graph) -> dict[str, str]:
    """Every tensor whose shape is not fully concrete, with its cause."""
    return {name: graph.shape_causes.get(name, "no cause") for name, info in graph.tensors.items()
            if not info.is_static}


def _static_inputs(graph) -> bool:
    return not graph.dynamic_dims


@pytest.mark.parametrize("name", sorted(patterns.PATTERNS))
def test_shape_arithmetic_patterns_resolve(tmp_path, name):
    graph = load_model(patterns.PATTERNS[name](tmp_path / f"{name}.onnx"))
    assert _unknown(graph) == {}


def test_tf_same_padding_resolves_through_every_stage(tmp_path):
    # 57 -> 29 -> 15 -> 8 -> 4 -> 2 -> 1 with stride 2 and 'same' padding: ceil(in / 2) at every stage
    graph = load_model(patterns.tf_same_padding(tmp_path / "m.onnx", stages=6, size=57))
    convs = [n for n in graph.nodes if n.op_type == "Conv"]
    assert [graph.shape(c.outputs[0])[2] for c in convs] == [29, 15, 8, 4, 2, 1]
    pads = [n for n in graph.nodes if n.op_type == "Pad"]
    assert [graph.shape(p.outputs[0])[2] for p in pads] == [59, 31, 17, 9, 5, 3]


def test_window_attention_pads_to_a_multiple_of_the_window(tmp_path):
    graph = load_model(patterns.window_attention(tmp_path / "m.onnx", blocks=2, size=30, window=7))
    pads = [n for n in graph.nodes if n.op_type == "Pad"]
    assert {graph.shape(p.outputs[0]) for p in pads} == {(1, 35, 35, 96)}
    windows = [n for n in graph.nodes if n.op_type == "Reshape" and len(graph.shape(n.outputs[0])) == 3]
    assert {graph.shape(w.outputs[0]) for w in windows} == {(25, 49, 96)}
    assert graph.shape(graph.outputs[0]) == (1, 30, 30, 96)


def test_constant_if_takes_its_branch(tmp_path):
    graph = load_model(patterns.constant_if(tmp_path / "m.onnx"))  # x is 1x16x6 and 16 > 8: then-branch (-1, 4)
    assert graph.shape(graph.outputs[0]) == (24, 4)


def test_range_length_and_structure_only_weights(tmp_path):
    graph = load_model(patterns.range_positions(tmp_path / "m.onnx", seq=50))
    [gather] = [n for n in graph.nodes if n.op_type == "Gather" and graph.shape(n.outputs[0]) == (50, 64)]
    assert gather.inputs[0] not in graph.constants  # the embedding table has no bytes in the file


@pytest.mark.parametrize("name", sorted(patterns.DATA_DEPENDENT))
def test_data_dependent_sizes_are_named_as_such(tmp_path, name):
    graph = load_model(patterns.DATA_DEPENDENT[name](tmp_path / f"{name}.onnx"))
    unknown = _unknown(graph)
    assert unknown and set(unknown.values()) == {"data-dependent"}
    origin_ops = {graph.node(graph.shape_origins[t]).op_type for t in unknown}
    assert origin_ops == {"NonZero" if name == "nonzero_gather" else "TopK"}


def test_topk_with_a_static_k_is_not_data_dependent(tmp_path):
    graph = load_model(patterns.topk_static_k(tmp_path / "m.onnx"))
    assert _unknown(graph) == {}
    assert graph.shape(graph.outputs[0]) == (1, 300)


def test_dynamic_input_is_dynamic_not_data_dependent(tmp_path):
    path = patterns.dynamic_reshape(tmp_path / "m.onnx")
    graph = load_model(path)
    assert set(_unknown(graph).values()) == {"dynamic"}
    assert all(graph.shape_origins[t] == "x" for t in _unknown(graph))
    assert _unknown(load_model(path, {"x": (2, 4, 8)})) == {}


@pytest.mark.parametrize(("target", "static", "data"), [("rk3588", "RKNN-STATIC", "RKNN-DATA-DEP"),
                                                        ("orin-agx", "DLA-STATIC", "DLA-DATA-DEP")])
def test_rules_for_data_dependent_and_dynamic_sizes(tmp_path, catalog, target, static, data):
    report = check_graph(load_model(patterns.nonzero_gather(tmp_path / "nz.onnx")), catalog, target)
    relu = next(v for v in report.verdicts if v.op_type == "Relu")
    rules = {v.rule for v in relu.violations}
    assert data in rules and static not in rules
    message = next(v.message for v in relu.violations if v.rule == data)
    assert "NonZero" in message and "--input-shape" not in message
    report = check_graph(load_model(patterns.dynamic_reshape(tmp_path / "dyn.onnx")), catalog, target)
    relu = next(v for v in report.verdicts if v.op_type == "Relu")
    rules = {v.rule for v in relu.violations}
    assert static in rules and data not in rules
    assert "--input-shape" in next(v.message for v in relu.violations if v.rule == static)
    report = check_graph(load_model(patterns.topk_static_k(tmp_path / "k.onnx")), catalog, target)
    assert not any(v.rule in (static, data) for verdict in report.verdicts for v in verdict.violations)


def _assert_resolved(path: Path) -> None:
    graph = load_model(path)
    assert graph.nodes
    if not _static_inputs(graph):
        pytest.skip("dynamic inputs")
    left = {t: c for t, c in _unknown(graph).items() if c != "data-dependent"}
    assert left == {}, f"{len(left)} tensors unresolved, e.g. {sorted(left)[:5]}"


@needs_zoo
@pytest.mark.parametrize("path", zoo_models(), ids=lambda p: p.name)
def test_every_static_zoo_model_resolves(path):
    _assert_resolved(path)


@needs_zoo
def test_ssdlite_unknown_sizes_all_come_from_nonzero():
    from tests.conftest import ZOO

    graph = load_model(ZOO / "tv_ssdlite320_mobilenet_v3_large.onnx")
    unknown = _unknown(graph)
    assert unknown and set(unknown.values()) == {"data-dependent"}
    assert {graph.node(graph.shape_origins[t]).op_type for t in unknown} == {"NonZero"}


@pytest.mark.skipif(not CORPUS.exists(), reason="corpus/models is not present")
@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.onnx")) if CORPUS.exists() else [], ids=lambda p: p.name)
def test_every_static_corpus_model_resolves(path):
    _assert_resolved(path)


@pytest.mark.parametrize(("target", "static"), [("rk3588", "RKNN-STATIC"), ("orin-agx", "DLA-STATIC")])
def test_an_unresolvable_size_is_unresolved_not_dynamic(tmp_path, catalog, target, static):
    from optimizer.check import unknown_sizes

    graph = load_model(patterns.shape_from_missing_weights(tmp_path / "m.onnx"))
    assert set(_unknown(graph).values()) == {"unresolved"}
    assert {graph.shape_origins[t] for t in _unknown(graph)} == {"Reshape_1"}
    sizes = unknown_sizes(graph)
    assert sizes["needs_shapes"] is True and sizes["nodes"]["unresolved"] == 2
    relu = next(v for v in check_graph(graph, catalog, target).verdicts if v.op_type == "Relu")
    message = next(v.message for v in relu.violations if v.rule == static)
    assert "could not be resolved" in message and "Reshape_1" in message and "--input-shape" not in message
