"""Every edit: onnxruntime gives the same outputs, and check no longer reports the rule on the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.edits import candidate_edits, edit, suggest
from optimizer.errors import BadInputError
from optimizer.ir import load_model
from tests.conftest import ZOO, needs_zoo, save_model, value

pytest.importorskip("onnxruntime")
CATALOG = load_catalog()
RNG = np.random.default_rng(3)


def w(name, shape):
    return numpy_helper.from_array(RNG.normal(0, 0.2, shape).astype(np.float32), name)


def _ids(path, target="orin-agx"):
    return {e.id: e for e in candidate_edits(check_graph(load_model(path), CATALOG, target))}


def _applied(tmp_path, path, edit_id, target="orin-agx"):
    out = tmp_path / "edited.onnx"
    result = edit(str(path), [edit_id], str(out), target=target)
    assert result["verification"]["numerical"].startswith("max abs difference")
    assert load_model(out).nodes
    return out, result


def test_explicit_pad(tmp_path):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[3, 3, 3, 3])
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 10, 10])], [value("y", None)],
                      [w("w", (8, 4, 3, 3)), w("b", (8,))])
    edits = _ids(path)
    assert "pad-op@conv" in edits and edits["pad-op@conv"].rule == "DLA-CONV-PAD-LT-KERNEL"
    out, result = _applied(tmp_path, path, "pad-op@conv")
    verdict = check_graph(load_model(out), CATALOG, "orin-agx").verdict("conv")
    assert not {v.rule for v in verdict.violations} & {"DLA-CONV-PAD-LT-KERNEL", "DLA-CONV-PAD"}
    assert result["verification"]["rules"][0]["rule"] == "DLA-CONV-PAD-LT-KERNEL"


@pytest.mark.parametrize(("op", "hw"), [("GlobalAveragePool", 14), ("GlobalMaxPool", 16), ("GlobalAveragePool", 56)])
def test_split_global_pool(tmp_path, op, hw):
    path = save_model(tmp_path / "m.onnx", [helper.make_node(op, ["x"], ["y"], name="pool")],
                      [value("x", [1, 8, hw, hw])], [value("y", None)])
    out, _ = _applied(tmp_path, path, "split-pool@pool")
    graph = load_model(out)
    assert [n.op_type for n in graph.nodes] == (["AveragePool"] * 2 if "Average" in op else ["MaxPool"] * 2)
    assert "DLA-POOL-WINDOW" not in {v.rule for v in check_graph(graph, CATALOG, "orin-agx").verdict("pool").violations}


def test_split_pool_too_wide_is_advice(tmp_path):
    path = save_model(tmp_path / "m.onnx", [helper.make_node("GlobalAveragePool", ["x"], ["y"], name="pool")],
                      [value("x", [1, 8, 112, 112])], [value("y", None)])
    assert not _ids(path)["split-pool@pool"].applicable
    with pytest.raises(BadInputError, match="advice only"):
        edit(str(path), ["split-pool@pool"], str(tmp_path / "o.onnx"), target="orin-agx")


@pytest.mark.parametrize(("kernel", "stride", "pads"), [((33, 3), (1, 1), (16, 1, 16, 1)),
                                                        ((40, 40), (2, 2), (0, 0, 0, 0)),
                                                        ((3, 65), (1, 3), (1, 5, 1, 5))])
def test_split_kernel(tmp_path, kernel, stride, pads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=list(kernel),
                            strides=list(stride), pads=list(pads))
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 3, 80, 80])], [value("y", None)],
                      [w("w", (4, 3, *kernel)), w("b", (4,))])
    out, _ = _applied(tmp_path, path, "split-kernel@conv")
    graph = load_model(out)
    convs = [n for n in graph.nodes if n.op_type == "Conv"]
    assert len(convs) > 1 and all(max(n.attrs["kernel_shape"]) <= 32 for n in convs)
    assert "DLA-CONV-KERNEL" not in {v.rule for v in check_graph(graph, CATALOG, "orin-agx").verdict("conv").violations}


def test_pad_channels(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Exp", ["a"], ["e"], name="exp"),
             helper.make_node("Conv", ["a", "w1", "b1"], ["y"], name="c1", kernel_shape=[1, 1])]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None), value("e", None)],
                      [w("w0", (24, 8, 3, 3)), w("w1", (4, 24, 1, 1)), w("b1", (4,))])
    from optimizer.rewrite._rewrite import _channel_edits
    report = check_graph(load_model(path), CATALOG, "orin-agx")
    assert _channel_edits(report, ["a"]) == []  # "exp" also reads "a": zero channels would change its output
    # a conv-only fan-out gets the edit:
    nodes2 = [nodes[0], nodes[2]]
    path2 = save_model(tmp_path / "m2.onnx", nodes2, [value("x", [1, 8, 8, 8])], [value("y", None)],
                       [w("w0", (24, 8, 3, 3)), w("w1", (4, 24, 1, 1)), w("b1", (4,))])
    report2 = check_graph(load_model(path2), CATALOG, "orin-agx")
    [edit2] = _channel_edits(report2, ["a"])
    assert edit2.params["channels"] == 32 and edit2.rule == "DLA-IO-CPAD"
    from optimizer.edits import apply_edits
    from optimizer.ir._safety import parse_model, read_model_bytes
    proto = parse_model(read_model_bytes(path2), str(path2))
    edited = apply_edits(proto, load_model(path2), [edit2])
    import onnxruntime as ort
    feeds = {"x": RNG.normal(0, 1, (1, 8, 8, 8)).astype(np.float32)}
    a = ort.InferenceSession(proto.SerializeToString()).run(None, feeds)[0]
    b = ort.InferenceSession(edited.SerializeToString()).run(None, feeds)[0]
    assert np.max(np.abs(a - b)) <= 1e-4
    shapes = onnx.shape_inference.infer_shapes(edited)
    assert [d.dim_value for d in next(v for v in shapes.graph.value_info if v.name == "a").type.tensor_type.shape.dim][1] == 32


def test_fix_dims(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = save_model(tmp_path / "m.onnx", [node], [value("x", ["N", 4, 8, 8])], [value("y", None)],
                      [w("w", (4, 4, 3, 3))])
    out, _ = _applied(tmp_path, path, "fix-dims@x")
    assert load_model(out).dynamic_dims == ()


def test_unknown_edit_id(tmp_path):
    path = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], name="r")],
                      [value("x", [1, 4, 4, 4])], [value("y", None)])
    with pytest.raises(BadInputError, match="no edit 'pad-op@r'"):
        edit(str(path), ["pad-op@r"], str(tmp_path / "o.onnx"))


def test_suggest_predicts_gain_by_replanning(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = save_model(tmp_path / "m.onnx", [node], [value("x", ["N", 64, 56, 56])], [value("y", None)],
                      [w("w", (64, 64, 3, 3))])
    base, suggestions = suggest(str(path), "orin-agx")
    [fix] = [s for s in suggestions if s.edit.kind == "fix-dims"]
    assert fix.gain_ms is not None and base is not None


@needs_zoo
def test_advice_on_xavier_yolo():
    ids = _ids(ZOO / "yolov8n.onnx", "xavier-agx")
    advice = [e for e in ids.values() if e.kind == "advice"]
    assert {"DLA-SOFTMAX-ORIN", "DLA-CONCAT-AXIS"} <= {e.rule for e in advice}
    assert not any(e.applicable for e in advice)


def test_optimize_with_edits_chooses_an_edit_as_a_decision(tmp_path):
    """A conv with padding >= kernel cannot run on DLA; with DLA made cheap, --with-edits takes the
    explicit-pad edit and puts the conv on DLA, beating the unedited optimum."""
    from optimizer.plan import optimize, validate_plan
    from optimizer.solver import PlanRequest
    from tests.solver.conftest import FAVOUR_DLA
    profile = tmp_path / "favour.toml"
    profile.write_text(FAVOUR_DLA)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w1"], ["b"], name="wide", kernel_shape=[3, 3], pads=[3, 3, 3, 3]),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="c2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 16, 32, 32])], [value("y", None)],
                      [w("w0", (16, 16, 3, 3)), w("w1", (16, 16, 3, 3)), w("w2", (16, 16, 3, 3))])
    plain = optimize(str(path), "orin-agx", PlanRequest(), profile_path=str(profile))
    edited = optimize(str(path), "orin-agx", PlanRequest(with_edits=True), profile_path=str(profile))
    assert edited.plan.edits == ("pad-op@wide",)
    layers = {layer.node: layer for layer in edited.plan.layers}
    assert layers["wide"].device == "dla0" and layers["wide"].edit == "pad-op@wide"
    assert edited.plan.predicted.latency_ms < plain.plan.predicted.latency_ms
    assert edited.plan.solver.status == "OPTIMAL"
    assert validate_plan(edited.plan, CATALOG, str(path)) == []
    assert any("edgeplan edit" in w for w in edited.plan.warnings)


def _standardised(tmp_path, opset=17, read_running=False, name="ws.onnx"):
    """Two weight-standardised Convs (BatchNormalization(training_mode=1) over each reshaped weight, as timm's
    StdConv2d exports), and optionally a graph output reading the first one's running mean."""
    nodes, inits, outputs = [], [], [value("y", None)]
    source = "x"
    for i, (cout, cin) in enumerate(((8, 4), (8, 8))):
        bn_out = [f"wn{i}", f"rm{i}", f"rv{i}"] if opset >= 14 else [f"wn{i}", f"rm{i}", f"rv{i}", f"sm{i}", f"sv{i}"]
        nodes += [helper.make_node("Reshape", [f"w{i}", f"flat{i}"], [f"wf{i}"], name=f"wflat{i}"),
                  helper.make_node("BatchNormalization", [f"wf{i}", f"ones{i}", f"zeros{i}", f"zeros{i}", f"ones{i}"],
                                   bn_out, name=f"ws{i}", epsilon=1e-5,
                                   **({"training_mode": 1} if opset >= 14 else {})),
                  helper.make_node("Reshape", [f"wn{i}", f"wshape{i}"], [f"wk{i}"], name=f"wback{i}"),
                  helper.make_node("Conv", [source, f"wk{i}"], ["y" if i else "c0"], name=f"conv{i}",
                                   kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
        inits += [w(f"w{i}", (cout, cin, 3, 3)), numpy_helper.from_array(np.array([1, cout, cin * 9], np.int64),
                                                                        f"flat{i}"),
                  numpy_helper.from_array(np.array([cout, cin, 3, 3], np.int64), f"wshape{i}"),
                  numpy_helper.from_array(np.ones(cout, np.float32), f"ones{i}"),
                  numpy_helper.from_array(np.zeros(cout, np.float32), f"zeros{i}")]
        source = "c0"
    if read_running:
        outputs.append(value("rm0", None))
    return save_model(tmp_path / name, nodes, [value("x", [1, 4, 8, 8])], outputs, inits, opset=opset)


@pytest.mark.parametrize("opset", [14, 17, 18])
def test_fold_statistics_stores_the_standardised_weights(tmp_path, opset):
    """Both edits in one run (the second must find its node after the first rewrote the graph); onnxruntime
    would normalise by the running statistics, so the proof runs in onnx.reference."""
    path = _standardised(tmp_path, opset)
    edits = _ids(path, "rk3588")
    ids = ["fold-statistics@ws0", "fold-statistics@ws1"]
    assert all(edits[i].applicable and edits[i].rule == "RKNN-BN-TRAINING" for i in ids)
    out = tmp_path / "edited.onnx"
    result = edit(str(path), ids, str(out), target="rk3588")
    assert "onnx.reference" in result["verification"]["numerical"]
    edited = load_model(out)
    assert [n.op_type for n in edited.nodes] == ["Conv", "Conv"]  # the weights are plain initializers now
    report = check_graph(edited, CATALOG, "rk3588")
    assert not any(v.rule == "RKNN-BN-TRAINING" for verdict in report.verdicts for v in verdict.violations)


def test_fold_statistics_keeps_a_running_mean_the_graph_returns(tmp_path):
    path = _standardised(tmp_path, read_running=True)
    out = tmp_path / "edited.onnx"
    result = edit(str(path), ["fold-statistics@ws0"], str(out), target="rk3588")
    assert "onnx.reference" in result["verification"]["numerical"]
    assert [o.name for o in onnx.load(out).graph.output] == ["y", "rm0"]


def test_fold_statistics_needs_the_weights(tmp_path):
    path = _standardised(tmp_path)
    model = onnx.load(path)
    for tensor in model.graph.initializer:
        if tensor.name in ("w0", "w1"):
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", "missing.weights"
    structure = tmp_path / "structure.onnx"
    onnx.save(model, structure)
    edits = _ids(structure, "rk3588")
    assert "weighted model" in edits["fold-statistics@ws0"].rationale
    with pytest.raises(BadInputError, match="are not in the file"):
        edit(str(structure), ["fold-statistics@ws0"], str(tmp_path / "out.onnx"), target="rk3588")
    assert not (tmp_path / "out.onnx").exists()


def test_fold_statistics_is_no_edit_for_the_dla(tmp_path):
    assert not any(e.kind == "fold-statistics" for e in _ids(_standardised(tmp_path), "orin-agx").values())
