"""Models rknn-toolkit2 refuses to convert at all, at the edges the probes and the corpus showed: casts into
element types it cannot convert to (RKNN-CAST-UINT8, RKNN-CAST-INT8: which target type, which source type,
run-time or constant, on which SoC) and zero-size data tensors (RKNN-EMPTY-TENSOR)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight

EDGEPLAN = shutil.which("edgeplan") or str(Path(sys.executable).parent / "edgeplan")
SOCS = ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"]


def _cast(tmp_path, source: str, to: int, constant: bool = False):
    """x -> Relu -> [ArgMax (int64 source) | Cast(uint8) (uint8 source)] -> Cast(to) as the graph output; with
    constant, the Cast reads an initializer instead."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    if source == "int64":
        nodes.append(helper.make_node("ArgMax", ["r"], ["s"], name="argmax", axis=1, keepdims=1))
    elif source == "uint8":
        nodes.append(helper.make_node("Cast", ["r"], ["s"], name="first", to=TensorProto.UINT8))
    else:
        nodes.append(helper.make_node("Identity", ["r"], ["s"], name="same"))
    inits = [const("k", np.zeros((1, 1, 4, 4), np.float32))] if constant else []
    nodes.append(helper.make_node("Cast", ["k" if constant else "s"], ["y"], name="cast", to=to))
    return save_model(tmp_path / f"cast_{source}_{to}_{constant}.onnx", nodes, [value("x", [1, 8, 4, 4])],
                      [value("y", None, to)], inits)


def _rules(catalog, path, soc, node="cast"):
    return {v.rule for v in check_graph(load_model(path), catalog, soc).verdict(node).violations}


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("source", ["float32", "int64"])
def test_a_cast_to_uint8_of_a_run_time_tensor_is_refused_everywhere(catalog, tmp_path, soc, source):
    """probes argmax_cast_u8_out, cast_u8_out: the converter aborts on all five SoCs (corpus yolo26n_sem_320)."""
    assert "RKNN-CAST-UINT8" in _rules(catalog, _cast(tmp_path, source, TensorProto.UINT8), soc)


@pytest.mark.parametrize("soc", SOCS)
def test_a_uint8_to_uint8_cast_and_a_constant_cast_are_not_refused(catalog, tmp_path, soc):
    """QDQ models' uint8 -> uint8 Casts are removed by the toolkit; a constant is cast at build time."""
    assert "RKNN-CAST-UINT8" not in _rules(catalog, _cast(tmp_path, "uint8", TensorProto.UINT8), soc)
    assert "RKNN-CAST-UINT8" not in _rules(catalog, _cast(tmp_path, "float32", TensorProto.UINT8, constant=True), soc)


@pytest.mark.parametrize("to", [TensorProto.INT8, TensorProto.INT32, TensorProto.FLOAT16])
def test_other_target_types_are_not_the_uint8_rule(catalog, tmp_path, to):
    for soc in SOCS:
        assert "RKNN-CAST-UINT8" not in _rules(catalog, _cast(tmp_path, "int64", to), soc)


@pytest.mark.parametrize(("soc", "refused"), [("rk3566", True), ("rk3568", True), ("rk3562", True),
                                              ("rk3588", False), ("rk3576", False), ("rv1126b", False)])
def test_a_float_cast_to_int8_is_refused_where_the_converter_dies(catalog, tmp_path, soc, refused):
    """probe cast_i8_out: SIGSEGV on rk3566 and rk3562, an NPU Cast on rk3588, rk3576 and rv1126b."""
    assert ("RKNN-CAST-INT8" in _rules(catalog, _cast(tmp_path, "float32", TensorProto.INT8), soc)) is refused


def test_an_integer_cast_to_int8_converts_on_rk3566(catalog, tmp_path):
    """probe argmax_cast_i8_out: ArgMax's int64 map cast to int8 converts on every SoC (a CPU Cast)."""
    for soc in ("rk3566", "rk3562"):
        assert "RKNN-CAST-INT8" not in _rules(catalog, _cast(tmp_path, "int64", TensorProto.INT8), soc)


def test_the_refusal_names_the_tensor_and_the_fix(catalog, tmp_path):
    report = check_graph(load_model(_cast(tmp_path, "int64", TensorProto.UINT8)), catalog, "rk3588")
    message = next(v.message for v in report.verdict("cast").violations if v.rule == "RKNN-CAST-UINT8")
    assert "run-time tensor s to uint8" in message and "cast it on the host" in message


def test_check_warns_that_the_converter_refuses_and_says_where(tmp_path):
    """The user sees the refusal before converting: a warning line and summary.refused_by in the JSON."""
    path = _cast(tmp_path, "int64", TensorProto.UINT8)
    out = tmp_path / "check.json"
    run = subprocess.run([EDGEPLAN, "check", str(path), "--target", "rk3588", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "warning: the rk3588 converter refuses the whole model: RKNN-CAST-UINT8 at cast" in run.stdout + run.stderr
    assert json.loads(out.read_text())["summary"]["refused_by"] == [
        {"rule": "RKNN-CAST-UINT8", "nodes": 1, "first_node": "cast"}]
    run = subprocess.run([EDGEPLAN, "check", str(_cast(tmp_path, "int64", TensorProto.INT32)), "--target", "rk3588"],
                         capture_output=True, text=True, timeout=600)
    assert "refuses the whole model" not in run.stdout + run.stderr


@pytest.mark.parametrize(("length", "refused"), [(0, True), (1, False)])
def test_an_empty_activation_slice_is_refused(catalog, tmp_path, length, refused):
    """corpus tv_swin3d_t: Slice_4 of the activations [1, 0, 28, 28, 96] ('is abnormal', every SoC)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Slice", ["r", "st", "en", "ax"], ["y"], name="cut")]
    inits = [const("st", np.array([2], np.int64)), const("en", np.array([2 + length], np.int64)),
             const("ax", np.array([1], np.int64))]
    path = save_model(tmp_path / f"empty{length}.onnx", nodes, [value("x", [1, 4, 8, 8])], [value("y", None)], inits)
    for soc in SOCS:
        assert ("RKNN-EMPTY-TENSOR" in _rules(catalog, path, soc, node="cut")) is refused


def test_an_empty_shape_vector_is_not_refused(catalog, tmp_path):
    """rtdetr_l_320, tv_swin_t and 12 more converted corpus models slice shape vectors down to (0,)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Slice", ["s", "st", "en"], ["none"], name="cut"),
             helper.make_node("Concat", ["s", "none"], ["s2"], name="join", axis=0),
             helper.make_node("Reshape", ["x", "s2"], ["y"], name="same")]
    inits = [const("st", np.array([4], np.int64)), const("en", np.array([4], np.int64))]
    path = save_model(tmp_path / "vec.onnx", nodes, [value("x", [1, 2, 8, 8])], [value("y", None)], inits)
    report = check_graph(load_model(path), catalog, "rk3588")
    assert not any(v.rule == "RKNN-EMPTY-TENSOR" for verdict in report.verdicts for v in verdict.violations)


@pytest.mark.parametrize(("op", "kernel", "refused"), [("MaxPool", [2, 2, 2], True), ("MaxPool", [1, 3, 3], True),
                                                       ("AveragePool", [2, 2, 2], False)])
@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"])
def test_a_volume_max_pool_aborts_the_converter(catalog, tmp_path, op, kernel, refused, target):
    # corpus nn_conv3d_block; probes maxpool3d_k222, maxpool3d_k133 (abort), avgpool3d_k222 (converts)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1, 1]),
             helper.make_node(op, ["c"], ["y"], name="n", kernel_shape=kernel, strides=[1, 2, 2])]
    path = save_model(tmp_path / f"{op}{kernel[0]}.onnx", nodes, [value("x", [1, 3, 4, 16, 16])], [value("y", None)],
                      [weight("w", (16, 3, 1, 1, 1))])
    assert ("RKNN-MAXPOOL-3D" in violations(catalog, path, target)) is refused


def test_a_2d_max_pool_is_no_volume_pool(catalog, build):
    path = build.op("MaxPool", [1, 8, 8, 8], kernel_shape=[2, 2], strides=[2, 2])
    assert "RKNN-MAXPOOL-3D" not in violations(catalog, path, "rk3588")
