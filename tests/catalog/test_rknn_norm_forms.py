"""Norm layers as timm writes them outside LayerNorm, each at the edge of the limit the toolkit showed on
the corpus: a reciprocal Div (RmsNorm2d, FRN), EvoNorm-S0's rank-5 Sqrt, and weight standardisation's
training-mode BatchNormalization (RKNN-BN-TRAINING)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, weight

SOCS = ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"]


def _on_npu(catalog, path, target, precision, node):
    return check_graph(load_model(path), catalog, target).verdict(node).runs_on("npu", precision)


def _reciprocal_norm(tmp_path, constant_dividend: bool, shape=(1, 16, 8, 8)):
    """FRN as timm's torch export writes it: x * (1 / Sqrt(mean(float(x^2)) + eps)) over H, W (the same-type
    Cast included); with constant_dividend False the Div is x / Sqrt(..)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Mul", ["a", "a"], ["q0"], name="square"),
             helper.make_node("Cast", ["q0"], ["q"], name="float", to=1),
             helper.make_node("ReduceMean", ["q"], ["m"], name="mean", axes=[2, 3], keepdims=1),
             helper.make_node("Add", ["m", "eps"], ["me"], name="addeps"),
             helper.make_node("Sqrt", ["me"], ["sd"], name="sqrt")]
    if constant_dividend:
        nodes += [helper.make_node("Div", ["one", "sd"], ["r"], name="div"),
                  helper.make_node("Mul", ["a", "r"], ["n"], name="scale")]
    else:
        nodes += [helper.make_node("Div", ["a", "sd"], ["n"], name="div")]
    nodes.append(helper.make_node("Relu", ["n"], ["y"], name="tail"))
    inits = [const("eps", np.float32(1e-6)), const("one", np.float32(1))]
    return save_model(tmp_path / f"frn{constant_dividend}.onnx", nodes, [value("x", list(shape))],
                      [value("y", None)], inits)


@pytest.mark.parametrize("target", SOCS)
def test_a_reciprocal_div_is_cpu_in_fp16_and_a_plain_one_is_not(catalog, tmp_path, target):
    """corpus timm_resnetv2_50d_frn / timm_convnext_zepto_rms: 1 / Sqrt(..) is a FLOAT Div on the CPU in
    FP16 on every SoC; x / Sqrt(..) of the same tensors is NPU in FP16."""
    reciprocal = _reciprocal_norm(tmp_path, True)
    assert not _on_npu(catalog, reciprocal, target, "fp16", "div")
    assert not _on_npu(catalog, reciprocal, target, "int8", "div")
    assert _on_npu(catalog, reciprocal, target, "fp16", "scale")
    assert _on_npu(catalog, _reciprocal_norm(tmp_path, False), target, "fp16", "div")


def test_the_reciprocal_div_names_its_rule_and_operand(catalog, tmp_path):
    verdict = check_graph(load_model(_reciprocal_norm(tmp_path, True)), catalog, "rk3588").verdict("div")
    lines = [v.line() for v in verdict.violations if v.precision == "fp16"]
    assert lines and all("RKNN-OP-NPU" in line for line in lines)
    assert any("constant by a run-time tensor [1, 16, 1, 1]" in line for line in lines)


def test_a_div_of_two_runtime_tensors_or_by_a_constant_stays_on_the_npu_in_fp16(catalog, build):
    by_constant = build.op("Div", [1, 8, 4, 4], inputs=["x", "k"], inits=[const("k", np.float32(3))])
    assert _on_npu(catalog, by_constant, "rk3588", "fp16", "n")
    two = build.op("Div", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert _on_npu(catalog, two, "rk3588", "fp16", "n")


def test_the_token_rms_norm_reciprocal_is_absorbed_by_exnorm(catalog, tmp_path):
    """corpus nn_rope_swiglu_block: x * (1 / Sqrt(mean(x^2) + eps)) over the token channel has no layer."""
    nodes = [helper.make_node("Pow", ["x", "two"], ["q"], name="sq"),
             helper.make_node("ReduceMean", ["q"], ["m"], name="mean", axes=[-1], keepdims=1),
             helper.make_node("Add", ["m", "eps"], ["me"], name="addeps"),
             helper.make_node("Sqrt", ["me"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["one", "sd"], ["r"], name="div"),
             helper.make_node("Mul", ["x", "r"], ["y"], name="scale")]
    path = save_model(tmp_path / "tokrms.onnx", nodes, [value("x", [1, 64, 32])], [value("y", None)],
                      [const("two", np.float32(2)), const("eps", np.float32(1e-6)), const("one", np.float32(1))],
                      opset=13)
    for precision in ("fp16", "int8"):
        assert _on_npu(catalog, path, "rk3588", precision, "div")


@pytest.mark.parametrize("target", SOCS)
@pytest.mark.parametrize(("rank", "npu"), [(4, True), (5, False)])
def test_sqrt_above_rank_4_is_cpu_in_fp16(catalog, build, target, rank, npu):
    """EvoNorm-S0's group std: Sqrt on [1, G, 1, 1, 1] is CPU in FP16; on [1, G, 1, 1] it is NPU."""
    path = build.op("Sqrt", [1, 8, 1, 1, 1][:rank])
    assert _on_npu(catalog, path, target, "fp16", "n") is npu


def _bn_outputs(training: int, opset: int) -> list[str]:
    """Before opset 14 training mode is the five-output form (running and saved statistics)."""
    if not training:
        return ["wn"]
    return ["wn", "rm", "rv"] if opset >= 14 else ["wn", "rm", "rv", "sm", "sv"]


def _weight_standardised_conv(tmp_path, training: int, opset: int = 17):
    """StdConv2d as torch exports it: BatchNormalization(training_mode) over the reshaped conv weight."""
    nodes = [helper.make_node("Reshape", ["w", "flat"], ["wf"], name="wflat"),
             helper.make_node("BatchNormalization", ["wf", "ones", "zeros", "zeros", "ones"],
                              _bn_outputs(training, opset), name="ws", epsilon=1e-5,
                              **({"training_mode": training} if opset >= 14 else {})),
             helper.make_node("Reshape", ["wn", "wshape"], ["w2"], name="wback"),
             helper.make_node("Conv", ["x", "w2"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    inits = [weight("w", [8, 4, 3, 3]), const("flat", np.array([1, 8, 36], np.int64)),
             const("wshape", np.array([8, 4, 3, 3], np.int64)), const("ones", np.ones(8, np.float32)),
             const("zeros", np.zeros(8, np.float32))]
    return save_model(tmp_path / f"ws{training}_{opset}.onnx", nodes, [value("x", [1, 4, 16, 16])],
                      [value("y", None)], inits, opset=opset)


@pytest.mark.parametrize("target", SOCS)
@pytest.mark.parametrize(("training", "opset"), [(1, 17), (0, 17), (1, 14), (0, 13)])
def test_a_training_mode_batchnorm_is_refused_even_on_constants(catalog, tmp_path, target, training, opset):
    """corpus timm_eca_nfnet_l0, timm_nf_regnet_b0, timm_test_nfnet: the toolkit's loader refuses the model
    ('... is in Training mode, which is not supperted'); an inference-mode one over the same weight folds."""
    report = check_graph(load_model(_weight_standardised_conv(tmp_path, training, opset)), catalog, target)
    verdict = report.verdict("ws")
    rules = {v.rule for v in verdict.violations}
    assert ("RKNN-BN-TRAINING" in rules) is bool(training)
    assert (verdict.kind == "constant") is (not training)
    if training:
        assert any("refuses to load the model" in v.line() for v in verdict.violations)


def test_a_training_mode_batchnorm_is_no_rule_for_the_dla(catalog, tmp_path):
    report = check_graph(load_model(_weight_standardised_conv(tmp_path, 1)), catalog, "orin-agx")
    assert "RKNN-BN-TRAINING" not in {v.rule for v in report.verdict("ws").violations}


def _evonorm_std(tmp_path, groups: int, last: int):
    """EvoNorm-S0's group std: Sqrt(ReduceMean(d^2) + eps) kept at rank 5, its eps Add the op making the
    rank-5 operand; `last` is that operand's innermost axis."""
    shape = [1, groups, 1, 1, last]
    nodes = [helper.make_node("Relu", ["x"], ["v"], name="head"),
             helper.make_node("Add", ["v", "eps"], ["ve"], name="addeps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Relu", ["sd"], ["y"], name="tail")]
    return save_model(tmp_path / f"evo{groups}_{last}.onnx", nodes, [value("x", shape)], [value("y", None)],
                      [const("eps", np.float32(1e-5))])


def _rank5_rules(catalog, path, target, precision):
    report = check_graph(load_model(path), catalog, target)
    return {v.rule for v in report.verdict("addeps").violations if v.precision == precision}


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_the_op_making_a_rank_5_sqrt_operand_is_cpu_on_rk3566(catalog, tmp_path, precision):
    for last in (1, 16):
        assert "RKNN-RANK5-OPERAND" in _rank5_rules(catalog, _evonorm_std(tmp_path, 8, last), "rk3566", precision)
    for target in ("rk3576", "rk3562", "rv1126b"):
        assert "RKNN-RANK5-OPERAND" not in _rank5_rules(catalog, _evonorm_std(tmp_path, 8, 1), target, precision)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize(("last", "cpu"), [(1, True), (2, False), (8, False)])
def test_rk3588_relays_out_a_per_group_statistic_only(catalog, tmp_path, precision, last, cpu):
    """probe sqrt_rank5_stat: [1,4,1,1,1] CPU on rk3588; sqrt_rank5: a map's [1,4,8,8,8] NPU there."""
    rules = _rank5_rules(catalog, _evonorm_std(tmp_path, 8, last), "rk3588", precision)
    assert ("RKNN-RANK5-OPERAND" in rules) is cpu


def test_rk3566_reshapes_the_rank_5_result_back_on_the_cpu(catalog, tmp_path):
    """probe sqrt_rank5: map -> Reshape [1,4,8,8,8] -> Sqrt -> Reshape back: both Reshapes CPU on rk3566 only."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "s5"], ["v"], name="to5"),
             helper.make_node("Sqrt", ["v"], ["u"], name="sqrt"),
             helper.make_node("Reshape", ["u", "s4"], ["y"], name="back")]
    path = save_model(tmp_path / "sq5.onnx", nodes, [value("x", [1, 32, 8, 8])], [value("y", None)],
                      [const("s5", np.array([1, 4, 8, 8, 8], np.int64)), const("s4", np.array([1, 32, 8, 8], np.int64))])
    for target, cpu in (("rk3566", True), ("rk3588", False), ("rk3576", False)):
        report = check_graph(load_model(path), catalog, target)
        for node in ("to5", "back"):
            rules = {v.rule for v in report.verdict(node).violations}
            assert ("RKNN-RANK5-OPERAND" in rules) is cpu, (target, node)


def test_a_rank_4_sqrt_operand_is_no_hand_over(catalog, tmp_path):
    nodes = [helper.make_node("Add", ["x", "eps"], ["ve"], name="addeps"),
             helper.make_node("Sqrt", ["ve"], ["y"], name="sqrt")]
    path = save_model(tmp_path / "sqrt4.onnx", nodes, [value("x", [1, 8, 1, 1])], [value("y", None)],
                      [const("eps", np.float32(1e-5))])
    for target in ("rk3566", "rk3588"):
        assert "RKNN-RANK5-OPERAND" not in _rank5_rules(catalog, path, target, "fp16")


def _group_stats(tmp_path, axes):
    """EvoNorm-S0's group mean: a [1, G, C/G, H, W] view of a map, reduced over `axes`."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "gshape"], ["g"], name="group"),
             helper.make_node("Cast", ["g"], ["gf"], name="n", to=1),
             helper.make_node("ReduceMean", ["gf"], ["m"], name="mean", axes=axes, keepdims=1),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    return save_model(tmp_path / f"gstats{''.join(map(str, axes))}.onnx", nodes, [value("x", [1, 32, 8, 8])],
                      [value("y", None)], [const("gshape", np.array([1, 4, 8, 8, 8], np.int64))])


@pytest.mark.parametrize(("axes", "cpu"), [([2, 3, 4], True), ([-3, -2, -1], True), ([3, 4], False)])
def test_rk3566_flattens_a_group_reduce_into_rows_on_the_cpu(catalog, tmp_path, axes, cpu):
    path = _group_stats(tmp_path, axes)
    report = check_graph(load_model(path), catalog, "rk3566")
    rules = {v.rule for v in report.verdict("n").violations if "group" in v.message}
    assert bool(rules) is cpu
    assert not any("rank-5 tensor" in v.message for v in report.verdict("mean").violations)
    for target in ("rk3588", "rk3576"):
        other = check_graph(load_model(path), catalog, target).verdict("n")
        assert not any("one row per group" in v.message for v in other.violations)


@pytest.mark.parametrize(("attrs", "refused"), [({"layout": 0}, True), ({"layout": 1}, True), ({}, False)])
def test_an_lstm_with_a_layout_attribute_is_refused(catalog, tmp_path, attrs, refused):
    """corpus nn_lstm_1x64_dynamo (layout=0 written out): 'Unrecognized attribute: layout for operator LSTM'."""
    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=8, **attrs)
    shape = [1, 4, 8] if attrs.get("layout") == 1 else [4, 1, 8]
    path = save_model(tmp_path / f"lstm{attrs}.onnx", [node], [value("x", shape)], [value("y", None)],
                      [weight("w", [1, 32, 8]), weight("r", [1, 32, 8])], opset=14)
    rules = {v.rule for v in check_graph(load_model(path), catalog, "rk3588").verdict("lstm").violations}
    assert ("RKNN-RNN-LAYOUT" in rules) is refused


def _topk_indices(tmp_path, op, on_indices=True):
    """DETR query selection: TopK's int64 indices divided by the class count (or a float score, outside)."""
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1)]
    if op == "Div":
        src = "i" if on_indices else "v"
        nodes.append(helper.make_node("Div", [src, "nc" if on_indices else "fc"], ["y"], name="n"))
    else:
        nodes.append(helper.make_node("Gather", ["table", "i"], ["y"], name="n", axis=1))
    inits = [const("k", np.array([4], np.int64)), const("nc", np.array(80, np.int64)),
             const("fc", np.float32(80)), weight("table", [1, 16, 4])]
    out = TensorProto.INT64 if op == "Div" and on_indices else TensorProto.FLOAT
    return save_model(tmp_path / f"topk{op}{on_indices}.onnx", nodes, [value("x", [1, 16])], [value("y", None, out)],
                      inits)


@pytest.mark.parametrize("target", SOCS)
@pytest.mark.parametrize(("op", "on_indices", "cpu"), [("Div", True, True), ("Div", False, False),
                                                       ("Gather", True, True)])
def test_run_time_int64_index_arithmetic_is_cpu(catalog, tmp_path, target, op, on_indices, cpu):
    report = check_graph(load_model(_topk_indices(tmp_path, op, on_indices)), catalog, target)
    rules = {v.rule for v in report.verdict("n").violations}
    assert ("RKNN-INT-DATA" in rules) is cpu


def test_shape_arithmetic_in_int64_is_not_run_time_data(catalog, tmp_path):
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["h"], name="n", axis=0),
             helper.make_node("Relu", ["x"], ["y"], name="tail")]
    path = save_model(tmp_path / "shape.onnx", nodes, [value("x", [1, 8, 4, 4])],
                      [value("y", None), value("h", None, TensorProto.INT64)],
                      [const("one", np.array(2, np.int64))])
    assert "RKNN-INT-DATA" not in {v.rule for v in check_graph(load_model(path), catalog, "rk3588").verdict("n").violations}


@pytest.mark.parametrize("target", SOCS)
def test_a_token_rms_norms_reciprocal_is_absorbed_but_a_norm_dividing_another_tensor_is_not(catalog, tmp_path,
                                                                                           target):
    """corpus nn_rope_swiglu_block: x * (1 / Sqrt(mean(x^2) + eps)) over the channel of [1, N, C] has no layer
    of its own (exNorm), the constant dividend included; corpus spandrel_craft: a Sqrt of one tensor's mean
    square dividing another run-time tensor is a Div layer on the CPU in INT8."""
    def norm(dividend):
        nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
                 helper.make_node("Sigmoid", ["x"], ["b"], name="other"),
                 helper.make_node("Pow", ["a", "two"], ["q"], name="square"),
                 helper.make_node("ReduceMean", ["q"], ["m"], name="mean", axes=[-1], keepdims=1),
                 helper.make_node("Add", ["m", "eps"], ["me"], name="addeps"),
                 helper.make_node("Sqrt", ["me"], ["sd"], name="sqrt"),
                 helper.make_node("Div", [dividend, "sd"], ["r"], name="div"),
                 helper.make_node("Mul", ["a", "r"], ["y"], name="scale")]
        inits = [const("eps", np.float32(1e-6)), const("one", np.float32(1)), const("two", np.float32(2))]
        return save_model(tmp_path / f"rms_{dividend}.onnx", nodes, [value("x", [1, 64, 32])], [value("y", None)],
                          inits, opset=13)
    absorbed = norm("one")
    for precision in ("fp16", "int8"):
        assert _on_npu(catalog, absorbed, target, precision, "div")
        assert _on_npu(catalog, absorbed, target, precision, "sqrt")
    assert not _on_npu(catalog, norm("b"), target, "int8", "div")
    assert _on_npu(catalog, norm("a"), target, "int8", "div")
