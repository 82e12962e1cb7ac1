"""The rknn-toolkit2 build-log parser, on logs captured from real toolkit 2.5.0 runs (tests/corpus/data)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import rknn_log

DATA = Path(__file__).resolve().parent / "data"
SQUEEZENET = DATA / "rknn_build_squeezenet1_1_rk3588_int8.log"
YOLO_FAILURE = DATA / "rknn_build_yolov8n_rk3588_fp16_failure.log"


def test_layer_table_rows_and_columns():
    layers = rknn_log.parse_layer_table(SQUEEZENET.read_text())
    assert [la.index for la in layers] == list(range(42))
    first_conv = layers[1]
    assert (first_conv.op_type, first_conv.data_type, first_conv.target) == ("ConvRelu", "INT8", "NPU")
    assert first_conv.input_shapes == "(1,3,224,224),(64,3,3,3),(64)"
    assert first_conv.output_shapes == "(1,64,111,111)"
    assert (first_conv.cycles_ddr, first_conv.cycles_npu, first_conv.cycles_total) == (40112, 222048, 222048)
    assert first_conv.full_name == "Conv:/features/features.0/Conv"
    assert first_conv.onnx_op_type == "Conv" and first_conv.derived_name == "/features/features.0/Conv"
    assert layers[0].op_type == "InputOperator" and layers[0].input_shapes == "\\"
    assert layers[-1].op_type == "OutputOperator" and layers[-1].output_shapes == "\\"
    assert all(la.cycles_total == max(la.cycles_ddr, la.cycles_npu) for la in layers)


def test_ansi_codes_do_not_change_the_table():
    text = SQUEEZENET.read_text()
    assert rknn_log.parse_layer_table(text) == rknn_log.parse_layer_table(rknn_log.strip_ansi(text))


def test_last_table_wins_when_a_log_holds_two_builds():
    text = SQUEEZENET.read_text()
    second = text.replace("(1,64,111,111)", "(1,64,7,7)")
    layers = rknn_log.parse_layer_table(text + "\n" + second)
    assert layers[1].output_shapes == "(1,64,7,7)"


def test_no_table_gives_no_rows():
    assert rknn_log.parse_layer_table(YOLO_FAILURE.read_text()) == []
    assert rknn_log.parse_layer_table("") == []


def test_error_lines_and_summary_of_a_real_toolkit_failure():
    text = YOLO_FAILURE.read_text()
    assert rknn_log.error_lines(text)[0] == "E build: Traceback (most recent call last):"
    assert rknn_log.error_summary(text) == ("IndexError: list index out of range "
                                            "(in rknn.api.rules.conv._p_seperate_conv_rs_split)")
    assert rknn_log.disable_rule_advice(text) == "seperate_conv_rs_split"
    assert rknn_log.disable_rule_advice(SQUEEZENET.read_text()) == ""


def test_error_lines_are_deduplicated_without_timestamps():
    text = "E RKNN: [11:05:05.538] Unkown op target: 0\nE RKNN: [11:05:06.001] Unkown op target: 0\nD RKNN: x\n"
    assert rknn_log.error_lines(text) == ["E RKNN: Unkown op target: 0"]


NODES = {"/features/features.0/Conv": "Conv", "/avgpool/GlobalAveragePool": "GlobalAveragePool",
         "/classifier/classifier.0/Gemm": "Gemm", "/blocks/Mul": "Mul", "/blocks/Mul_1": "Mul"}
OUTPUTS = {"/classifier/classifier.0/Gemm_output_0": "/classifier/classifier.0/Gemm", "117": "/final/Softmax",
           "input": ""}


@pytest.mark.parametrize(("derived", "expected"), [
    ("/features/features.0/Conv", ("/features/features.0/Conv", "exact")),
    ("/avgpool/GlobalAveragePool_2conv1", ("/avgpool/GlobalAveragePool", "prefix")),
    ("/blocks/Mul_1", ("/blocks/Mul_1", "exact")),
    ("/blocks/Mul_1_tp", ("/blocks/Mul_1", "prefix")),  # the longest node name wins, not "/blocks/Mul"
    ("/classifier/classifier.0/Gemm_output_0", ("/classifier/classifier.0/Gemm", "tensor")),
    ("/classifier/classifier.0/Gemm_output_0_mm_tp_rs", ("/classifier/classifier.0/Gemm", "prefix")),
    ("117_rs", ("/final/Softmax", "tensor-prefix")),
    ("input_rs", ("", "graph-input")),
    ("/unknown/node", ("", "unmapped")),
    ("", ("", "unmapped")),
    ("/features/features.0/ConvX", ("", "unmapped")),  # a name that only shares a prefix is not a match
])
def test_map_to_onnx(derived, expected):
    assert rknn_log.map_to_onnx(derived, NODES, OUTPUTS) == expected


def test_empty_cells_keep_columns_aligned():
    """rk3576 tables add SparseRatio, empty on non-conv layers; RW(KB) and FullName must not shift into it."""
    layers = rknn_log.parse_layer_table((DATA / "rknn_build_resnet18_rk3576_fp16_sparseratio.log").read_text())
    assert len(layers) == 33
    pool = next(la for la in layers if la.op_type == "MaxPool")
    assert (pool.rw_kb, pool.full_name, pool.extra) == ("1568", "MaxPool:/maxpool/MaxPool", "SparseRatio=")
    conv = layers[1]
    assert (conv.rw_kb, conv.full_name, conv.extra) == ("318", "Conv:/conv1/Conv", "SparseRatio=0%")
    assert all(":" in la.full_name for la in layers)


def test_abort_lines_of_a_real_toolkit_crash():
    """The last 20 lines of rknn-toolkit2 2.5.0 dying with SIGABRT on corpus nn_conv3d_block (rk3588 FP16)."""
    text = (DATA / "rknn_build_nn_conv3d_block_rk3588_fp16_crash_tail.log").read_text()
    assert rknn_log.abort_lines(text) == [
        "terminate called after throwing an instance of 'std::out_of_range'",
        "what():  vector::_M_range_check: __n (which is 2) >= this->size() (which is 3)"]
    assert rknn_log.abort_lines(SQUEEZENET.read_text()) == []
