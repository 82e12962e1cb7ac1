"""Seed 003 §3.1.6 zero-copy facts in the check's `io` section: native layout by rank, dtype and channels,
the CPU conversions at the boundary (for the latency model to price), settable types and output configs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import save_model, value

DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "uint8": TensorProto.UINT8,
          "int8": TensorProto.INT8, "int64": TensorProto.INT64, "bool": TensorProto.BOOL, "int32": TensorProto.INT32}


def _model(tmp_path: Path, dtype: str, shape: list[int]) -> Path:
    """x (dtype) -> Cast to float -> Relu -> y: the input's type and layout are what is under test."""
    nodes = [helper.make_node("Cast", ["x"], ["c"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Relu", ["c"], ["y"], name="n")]
    return save_model(tmp_path / f"{dtype}_{'x'.join(map(str, shape))}.onnx", nodes,
                      [value("x", shape, DTYPES[dtype])], [value("y", shape)])


def _io(catalog, path: Path, target: str = "rk3588") -> dict:
    return check_graph(load_model(path), catalog, target).io


@pytest.mark.parametrize(("dtype", "shape", "layout"), [
    ("float32", [1, 3, 16, 16], "NHWC"), ("uint8", [1, 4, 16, 16], "NHWC"), ("float16", [1, 1, 16, 16], "NHWC"),
    ("float32", [1, 5, 16, 16], "NC1HWC2"), ("int8", [1, 2, 16, 16], "NC1HWC2"), ("float16", [1, 8, 16, 16], "NC1HWC2"),
    ("int64", [1, 3, 16, 16], "NCHW"), ("int64", [1, 8, 16, 16], "NCHW"), ("bool", [1, 1, 16, 16], "NCHW"),
    ("bool", [1, 8, 16, 16], "NCHW"), ("int32", [1, 3, 16, 16], "NCHW"),
    ("float32", [1, 3, 16], "UNDEFINED"), ("int64", [1, 16], "UNDEFINED")])
def test_native_input_layout_by_rank_dtype_and_channels(catalog, tmp_path, dtype, shape, layout):
    entry = _io(catalog, _model(tmp_path, dtype, shape))["inputs"][0]
    assert entry["dtype"] == dtype
    assert entry["native_layout"] == layout


def test_nc1hwc2_input_reports_the_cpu_conversion(catalog, tmp_path):
    """pass_through=0: the user passes NHWC and the runtime converts to NC1HWC2 on the CPU, every frame."""
    entry = _io(catalog, _model(tmp_path, "float32", [1, 5, 16, 16]))["inputs"][0]
    elements = 5 * 16 * 16
    assert entry["conversion"] == {"on": "cpu", "from": "NHWC", "to": "NC1HWC2", "when": "pass_through=0",
                                   "elements": elements, "bytes": {"int8": elements, "fp16": 2 * elements},
                                   "rule": "RKNN-ZC-LAYOUT"}
    assert entry["pass_through_layout"] == "NC1HWC2"
    for dtype, shape in (("float32", [1, 4, 16, 16]), ("int64", [1, 8, 16, 16]), ("float32", [1, 64])):
        assert _io(catalog, _model(tmp_path, dtype, shape))["inputs"][0]["conversion"] is None


def test_bool_and_int64_inputs_keep_their_type(catalog, tmp_path):
    """表3-3: an int64 (or bool) input is queried as itself; only that type may be set. Float inputs take the
    model's type, settable from uint8 or float32 too (a CPU type conversion)."""
    floats = _io(catalog, _model(tmp_path, "float32", [1, 3, 16, 16]))["inputs"][0]
    assert floats["native_types"] == {"int8": "int8", "fp16": "float16"}
    assert floats["user_types"] == {"int8": ["int8", "uint8", "float32"], "fp16": ["float16", "uint8", "float32"]}
    for dtype in ("int64", "bool"):
        entry = _io(catalog, _model(tmp_path, dtype, [1, 3, 16, 16]))["inputs"][0]
        assert entry["native_types"] == {"int8": dtype, "fp16": dtype}
        assert entry["user_types"] == {"int8": [dtype], "fp16": [dtype]}
        assert entry["zero_copy"] is True and entry["rule"] == "RKNN-ZC-LAYOUT"
    int8_only = _io(catalog, _model(tmp_path, "float32", [1, 3, 16, 16]), "rv1106")["inputs"][0]
    assert set(int8_only["user_types"]) == {"int8"}


@pytest.mark.parametrize(("target", "int8_types", "fp16_types"), [
    ("rk3588", ["int8", "fp16", "fp32"], ["fp16", "fp32"]), ("rk3566", ["int8", "fp16", "fp32"], ["fp16", "fp32"]),
    ("rv1106", ["int8", "fp16"], []), ("rv1103", ["int8", "fp16"], [])])
def test_output_types_and_layouts_per_tables_3_6_and_3_7(catalog, tmp_path, target, int8_types, fp16_types):
    four_d = _io(catalog, _model(tmp_path, "float32", [1, 8, 4, 4]), target)["outputs"][0]
    assert four_d["int8_model_types"] == int8_types and four_d["fp16_model_types"] == fp16_types
    assert four_d["native_layout"] == "NC1HWC2" and four_d["layouts"] == ["NC1HWC2", "NCHW", "NHWC"]
    assert four_d["conversion"]["from"] == "NC1HWC2" and four_d["conversion"]["to"] == "NCHW"
    assert four_d["conversion"]["elements"] == 8 * 4 * 4
    flat = _io(catalog, _model(tmp_path, "float32", [1, 128]), target)["outputs"][0]
    assert flat["native_layout"] == "UNDEFINED" and flat["layouts"] == ["UNDEFINED"] and flat["conversion"] is None


def test_check_json_carries_the_io_facts(tmp_path):
    edgeplan = shutil.which("edgeplan") or str(Path(sys.executable).parent / "edgeplan")
    out = tmp_path / "check.json"
    model = _model(tmp_path, "int64", [1, 8, 16, 16])
    result = subprocess.run([edgeplan, "check", str(model), "--target", "rk3588", "--json", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    entry = json.loads(out.read_text())["io"]["inputs"][0]
    assert entry["native_layout"] == "NCHW" and entry["conversion"] is None
