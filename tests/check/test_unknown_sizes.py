"""Unknown sizes are never silent, through the CLI as a user runs it: check, optimize, batch, suggest, edit;
and a model below opset 7 is converted and says so."""

from __future__ import annotations

import csv
import json

import numpy as np
from onnx import helper

from tests.conftest import const, save_model, value
from tests.ir import shape_patterns as patterns
from tests.test_cli import run


def _dynamic_conv(tmp_path):
    """Conv + Relu with a symbolic batch and real weights, so edit can verify outputs in onnxruntime."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    weights = np.random.default_rng(0).normal(0, 1, (8, 4, 3, 3)).astype(np.float32)
    return save_model(tmp_path / "dyn.onnx", nodes, [value("x", ["N", 4, 16, 16])], [value("y", None)],
                      [const("w", weights)])


def _static_conv(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return save_model(tmp_path / "static.onnx", nodes, [value("x", [1, 4, 16, 16])], [value("y", None)],
                      [const("w", np.zeros((8, 4, 3, 3), np.float32))])


def test_check_reports_dynamic_sizes_in_text_and_json(tmp_path):
    out = tmp_path / "c.json"
    result = run("check", str(_dynamic_conv(tmp_path)), "--target", "rk3588", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "warning: 2 node verdict(s) depend on dynamic input dims (x[0]=N)" in result.stdout
    sizes = json.loads(out.read_text())["unknown_sizes"]
    assert sizes["needs_shapes"] is True
    assert sizes["nodes"] == {"dynamic": 2, "unresolved": 0, "data-dependent": 0}
    assert sizes["dynamic_inputs"] == [{"tensor": "x", "axis": 0, "symbol": "N"}]


def test_check_on_a_static_model_is_quiet(tmp_path):
    out = tmp_path / "c.json"
    result = run("check", str(_static_conv(tmp_path)), "--target", "rk3588", "--json", str(out))
    assert result.returncode == 0 and "warning" not in result.stdout
    sizes = json.loads(out.read_text())["unknown_sizes"]
    assert sizes["needs_shapes"] is False and sum(sizes["nodes"].values()) == 0


def test_check_names_data_dependent_sizes_without_input_shape_advice(tmp_path):
    out = tmp_path / "c.json"
    result = run("check", str(patterns.nonzero_gather(tmp_path / "nz.onnx")), "--target", "rk3588", "--json", str(out))
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("warning:"))
    assert "data decides" in line and "NonZero_3" in line and "--input-shape" not in line
    data = json.loads(out.read_text())
    # NonZero and the three nodes after it touch the data-decided size
    assert data["unknown_sizes"]["needs_shapes"] is False and data["unknown_sizes"]["nodes"]["data-dependent"] == 4
    assert {"rule": "RKNN-DATA-DEP", "nodes": 4} in data["summary"]["blocking_rules"]


def test_optimize_warns_and_marks_the_plan(tmp_path):
    model = _dynamic_conv(tmp_path)
    result = run("optimize", str(model), "--target", "rk3588", "--out", str(tmp_path / "p"), "--time-limit", "5")
    assert result.returncode == 0, result.stderr
    assert "warning: 2 node verdict(s) depend on dynamic input dims" in result.stdout
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["unknown_sizes"]["needs_shapes"] is True
    assert any("dynamic input dims" in w for w in plan["warnings"])
    fixed = run("optimize", str(model), "--target", "rk3588", "--out", str(tmp_path / "q"), "--time-limit", "5",
                "--input-shape", "x=1x4x16x16")
    assert fixed.returncode == 0 and "warning" not in fixed.stdout
    assert json.loads((tmp_path / "q" / "plan.json").read_text())["unknown_sizes"]["needs_shapes"] is False


def test_batch_status_is_needs_shapes(tmp_path):
    dynamic, static = _dynamic_conv(tmp_path), _static_conv(tmp_path)
    result = run("batch", str(dynamic), str(static), "--target", "rk3588", "--out", str(tmp_path / "b"),
                 "--time-limit", "5")
    assert result.returncode == 0, result.stderr  # the plans were written; the summary says what they rest on
    assert "1 needs-shapes" in result.stdout and "edgeplan: needs-shapes: " in result.stderr
    rows = {r["model"].rsplit("/", 1)[-1]: r for r in csv.DictReader((tmp_path / "b" / "summary.csv").open())}
    assert rows["dyn.onnx"]["status"] == "needs-shapes" and rows["dyn.onnx"]["unknown_sizes"] == "dynamic: 2 nodes"
    assert rows["static.onnx"]["status"] == "ok" and rows["static.onnx"]["unknown_sizes"] == ""
    assert "needs-shapes" in (tmp_path / "b" / "summary.html").read_text()


def test_suggest_offers_fix_dims_from_input_shape_and_edit_applies_it(tmp_path):
    model = _dynamic_conv(tmp_path)
    out = tmp_path / "s.json"
    result = run("suggest", str(model), "--target", "rk3588", "--input-shape", "x=2x4x16x16", "--json", str(out))
    assert result.returncode == 0, result.stderr
    [fix] = [e for e in json.loads(out.read_text())["edits"] if e["id"] == "fix-dims@x"]
    assert fix["applicable"] and fix["params"]["dims"] == [2, 4, 16, 16]
    assert "--input-shape x=2x4x16x16" in result.stdout  # the apply hint repeats the shapes it was given
    edited = tmp_path / "fixed.onnx"
    applied = run("edit", str(model), "--target", "rk3588", "--apply", "fix-dims@x", "--input-shape", "x=2x4x16x16",
                  "--out", str(edited))
    assert applied.returncode == 0, applied.stderr
    assert "max abs difference" in applied.stdout and "RKNN-STATIC (fix-dims@x)" in applied.stdout
    check = run("check", str(edited), "--target", "rk3588", "--json", str(tmp_path / "c.json"))
    assert check.returncode == 0 and "warning" not in check.stdout
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["dynamic_dims"] == [] and data["unknown_sizes"]["needs_shapes"] is False


def test_edit_fix_dims_without_the_sizes_is_one_clear_error(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    model = save_model(tmp_path / "m.onnx", nodes, [value("x", ["N", "C"])], [value("y", None)])
    result = run("edit", str(model), "--target", "rk3588", "--apply", "fix-dims@x", "--out", str(tmp_path / "o.onnx"))
    assert result.returncode == 2 and "give the sizes with --input-shape" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.onnx").exists()


def _opset6(tmp_path, op: str = "Relu", **attrs):
    nodes = [helper.make_node(op, ["x"], ["y"], name="n", **attrs)]
    return save_model(tmp_path / f"{op}6.onnx", nodes, [value("x", [1, 4, 8, 8])], [value("y", None)], opset=6)


def test_opset_6_is_converted_and_reported(tmp_path):
    out = tmp_path / "c.json"
    model = _opset6(tmp_path)
    result = run("check", str(model), "--target", "orin-agx", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "warning: the model declares opset 6; it was converted to opset 7" in result.stdout
    assert json.loads(out.read_text())["opset_conversion"] == {"from": 6, "to": 7, "by": "onnx.version_converter"}
    planned = run("optimize", str(model), "--target", "orin-agx", "--out", str(tmp_path / "p"), "--time-limit", "5")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["opset_conversion"]["from"] == 6 and any("opset 6" in w for w in plan["warnings"])


def test_opset_7_is_read_as_it_is(tmp_path):
    out = tmp_path / "c.json"
    model = save_model(tmp_path / "m7.onnx", [helper.make_node("Relu", ["x"], ["y"], name="n")],
                       [value("x", [1, 4, 8, 8])], [value("y", None)], opset=7)
    result = run("check", str(model), "--target", "orin-agx", "--json", str(out))
    assert result.returncode == 0 and "warning" not in result.stdout
    assert json.loads(out.read_text())["opset_conversion"] is None


def test_an_unconvertible_old_opset_is_one_line_exit_2(tmp_path):
    model = save_model(tmp_path / "pad1.onnx", [helper.make_node("Pad", ["x"], ["y"], name="p", paddings=[0, 1, 0, 1])],
                       [value("x", [1, 4])], [value("y", None)], opset=1)
    result = run("check", str(model), "--target", "orin-agx")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "pad1.onnx" in line and "opset 1 is below 7" in line and "Traceback" not in result.stderr
