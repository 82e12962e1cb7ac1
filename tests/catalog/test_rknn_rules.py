"""RKNN rules at their boundaries, per SoC where the verdict differs (placement found by the toolkit probe)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight

ALL = ["rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1126b", "rv1106", "rv1103"]


def npu(catalog, path, target, precision="int8", node="n"):
    return check_graph(load_model(path), catalog, target).verdict(node).runs_on("npu", precision)


@pytest.mark.parametrize("target", ALL)
def test_conv_runs_on_every_npu(catalog, build, target):
    assert npu(catalog, build.conv(), target)


@pytest.mark.parametrize("target", ALL)
def test_cpu_fallback_ops(catalog, build, target):
    path = build.op("Min", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert not npu(catalog, path, target)
    assert "RKNN-OP-NPU" in violations(catalog, path, target)
    assert check_graph(load_model(path), catalog, target).verdict("n").runs_on("cpu", "fp32")


@pytest.mark.parametrize(("target", "on_npu"), [("rk3588", True), ("rk3576", True), ("rk3562", True),
                                                ("rk3566", False), ("rk3568", False)])
def test_softmax_and_transpose_fall_back_on_rk356x(catalog, build, target, on_npu):
    assert npu(catalog, build.op("Softmax", [1, 8, 4, 4], axis=1), target, "fp16") is on_npu
    assert npu(catalog, build.op("Transpose", [1, 8, 4, 4], perm=[0, 1, 3, 2]), target, "fp16") is on_npu


@pytest.mark.parametrize(("target", "on_npu"), [("rk3576", True), ("rv1126b", True), ("rk3588", False)])
def test_sin_cos_on_rk3576_rv1126b_only(catalog, build, target, on_npu):
    assert npu(catalog, build.op("Sin", [1, 8, 4, 4]), target, "fp16") is on_npu


@pytest.mark.parametrize(("precision", "fails"), [("fp16", False), ("int8", True)])
def test_sin_cos_fp16_only(catalog, build, precision, fails):
    assert ("RKNN-SIN-COS" in violations(catalog, build.op("Cos", [1, 8, 4, 4]), "rk3576", precision)) is fails


@pytest.mark.parametrize(("precision", "on_npu"), [("fp16", True), ("int8", False)])
def test_div_npu_in_fp16_only(catalog, build, precision, on_npu):
    path = build.op("Div", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert npu(catalog, path, "rk3588", precision) is on_npu


@pytest.mark.parametrize(("pads", "include", "on_npu"), [((0, 0, 0, 0), 0, True), ((1, 1, 1, 1), 1, True),
                                                         ((1, 1, 1, 1), 0, False)])
def test_average_pool_count_include_pad(catalog, build, pads, include, on_npu):
    path = build.op("AveragePool", [1, 8, 8, 8], kernel_shape=[3, 3], pads=list(pads), count_include_pad=include)
    assert npu(catalog, path, "rk3588") is on_npu


def test_erf_runs_on_npu_only_inside_gelu(catalog, tmp_path):
    nodes = [helper.make_node("Div", ["x", "sq"], ["d"], name="div"),
             helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add"),
             helper.make_node("Mul", ["x", "a"], ["y"], name="mul")]
    inits = [const("sq", np.array(1.4142135, np.float32)), const("one", np.array(1.0, np.float32))]
    gelu = save_model(tmp_path / "gelu.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)], inits)
    lone = save_model(tmp_path / "erf.onnx", [helper.make_node("Erf", ["x"], ["y"], name="erf")],
                      [value("x", [1, 8, 4, 4])], [value("y", None)])
    assert npu(catalog, gelu, "rk3588", "fp16", node="erf")
    assert not npu(catalog, lone, "rk3588", "fp16", node="erf")


@pytest.mark.parametrize(("stride", "fails"), [(8, False), (9, True)])
def test_conv_stride(catalog, build, stride, fails):
    path = build.conv(kernel=(1, 1), pads=(0, 0, 0, 0), strides=(stride, stride), h=36, w=36)
    assert ("RKNN-CONV-STRIDE" in violations(catalog, path, "rk3588")) is fails


@pytest.mark.parametrize(("k", "fails"), [(8192, False), (8193, True)])
def test_matmul_k(catalog, build, k, fails):
    path = build.op("MatMul", [1, 4, k], inputs=["x", "w"], inits=[weight("w", [k, 2])])
    assert ("RKNN-MATMUL-K" in violations(catalog, path, "rk3576", "fp16")) is fails
    assert "RKNN-MATMUL-K" not in violations(catalog, path, "rk3588", "fp16")


# exNorm axes [1] or [1,2,3]: a 4-D LayerNorm from axis 1 on, or over its last axis alone (channels-last,
# measured NPU in 2.5.0: corpus nn_window_attention_pad_roll); H,W (axis 2) is not NPU;
# a token tensor [B,N,C] only over its last axis (it becomes the channel).
@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3566", "rv1126b"])
@pytest.mark.parametrize(("shape", "axis", "fails"), [([1, 4, 8, 8], 1, False), ([1, 4, 8, 8], 2, True),
                                                      ([1, 4, 8, 8], 3, False), ([1, 4, 8, 8], -1, False),
                                                      ([1, 30, 30, 64], 3, False), ([1, 30, 30, 64], 2, True),
                                                      ([1, 16, 8], -1, False), ([1, 16, 8], 2, False),
                                                      ([1, 16, 8], 1, True)])
def test_norm_axes(catalog, build, target, shape, axis, fails):
    d = shape[axis:]
    inits = [const("s", np.ones(d, np.float32)), const("b", np.zeros(d, np.float32))]
    path = build.op("LayerNormalization", shape, inputs=["x", "s", "b"], inits=inits, axis=axis)
    assert ("RKNN-NORM" in violations(catalog, path, target, "fp16")) is fails
    # a lone node making a rank-3 graph output also meets RKNN-OUTPUT-RELAYOUT on rk3588, RKNN-MAP-OUTPUT on rk3566;
    # on rk3566 a last-axis LayerNorm of a 4-D tensor not made channels-last is transposed (RKNN-NORM-RELAYOUT)
    if target != "rk3588" and not (target == "rk3566" and (len(shape) == 3 or axis % 4 == 3)):
        assert npu(catalog, path, target, "fp16") is not fails


@pytest.mark.parametrize("op", ["LayerNormalization", "RMSNormalization"])
@pytest.mark.parametrize(("shape", "axis", "ok"), [([1, 4, 8], -1, True), ([1, 4, 8, 8], 2, False)])
def test_norm_op_in_int8_and_its_violations_carry_the_norm_rule(catalog, build, op, shape, axis, ok):
    # seed002 says float16 only; the toolkit 2.5.0 builds exNorm in INT8 on the NPU (measurement wins)
    d = shape[axis:]
    inits = [const("s", np.ones(d, np.float32)), const("b", np.zeros(d, np.float32))]
    inputs = ["x", "s", "b"] if op == "LayerNormalization" else ["x", "s"]
    path = build.op(op, shape, inputs=inputs, inits=inits[:len(inputs) - 1], axis=axis,
                    opset=17 if op == "LayerNormalization" else 23)
    for precision in ("fp16", "int8"):
        assert npu(catalog, path, "rk3576", precision) is ok
        assert violations(catalog, path, "rk3576", precision) == (set() if ok else {"RKNN-NORM"})


def test_norm_rule_enforces_a_precision_list_when_given(catalog, build):
    from dataclasses import replace

    from optimizer.catalog._checks import LayerView, norm_limits

    rule = replace(catalog.rule("RKNN-NORM"), params={"precisions": ("fp16",)})
    inits = [const("s", np.ones(8, np.float32)), const("b", np.zeros(8, np.float32))]
    graph = load_model(build.op("LayerNormalization", [1, 4, 8], inputs=["x", "s", "b"], inits=inits, axis=-1))
    target = catalog.target("rk3576")
    family = catalog.family_of(target)
    view = lambda p: LayerView(graph, graph.node("n"), family, target, p, "norm")  # noqa: E731
    assert norm_limits(rule, view("fp16")) is None
    assert "float16" not in (norm_limits(rule, view("int8")) or "") and "fp16 only" in norm_limits(rule, view("int8"))


def test_rv110x_offer_int8_only(catalog):
    assert catalog.target("rv1106").precisions["npu"] == ("int8",)
    assert catalog.target("rv1103").precisions["npu"] == ("int8",)


def test_static_shapes(catalog, build):
    assert "RKNN-STATIC" in violations(catalog, build.op("Relu", ["N", 8, 4, 4]), "rk3588")


@pytest.mark.parametrize(("target", "modes"), [("rk3576", True), ("rv1126b", True), ("rk3588", False)])
def test_sparsity_modes_on_sparse_socs(catalog, build, target, modes):
    verdict = check_graph(load_model(build.conv()), catalog, target).verdict("n")
    assert ("sparsity_modes" in verdict.extra) is modes
    if modes:
        assert verdict.extra["sparsity_modes"] == ["dense", "4:2_in", "4:2_out", "16:4_in_out", "16:4_out_in"]


def test_sparsity_needs_group_one(catalog, build):
    verdict = check_graph(load_model(build.conv(group=8, c_in=8, c_out=8)), catalog, "rk3576").verdict("n")
    assert "sparsity_modes" not in verdict.extra


@pytest.mark.parametrize(("op", "multicore"), [("Conv", True), ("Sigmoid", False)])
def test_multicore_flags(catalog, build, op, multicore):
    path = build.conv() if op == "Conv" else build.op(op, [1, 8, 4, 4])
    assert check_graph(load_model(path), catalog, "rk3588").verdict("n").extra["multicore"] is multicore
    assert check_graph(load_model(path), catalog, "rk3566").verdict("n").extra["multicore"] is False


# Row pitch of an NHWC uint8 input with C=3 is 3W bytes: 16-byte alignment on rk3588, 8 on rk3566.
@pytest.mark.parametrize(("target", "width", "zero_copy"), [("rk3588", 16, True), ("rk3588", 24, False),
                                                           ("rk3588", 32, True), ("rk3566", 8, True),
                                                           ("rk3566", 12, False), ("rk3566", 24, True)])
def test_zero_copy_alignment(catalog, build, target, width, zero_copy):
    path = build.conv(c_in=3, c_out=8, w=width)
    io = check_graph(load_model(path), catalog, target).io
    assert io["inputs"][0]["native_layout"] == "NHWC"
    assert io["inputs"][0]["zero_copy"] is zero_copy


def test_zero_copy_output_types(catalog, build):
    path = build.conv()
    assert check_graph(load_model(path), catalog, "rv1106").io["outputs"][0]["int8_model_types"] == ["int8", "fp16"]
    assert "fp32" in check_graph(load_model(path), catalog, "rk3588").io["outputs"][0]["int8_model_types"]


@pytest.mark.parametrize(("kernel", "stride", "pads", "fails"), [((16, 16), 16, (0, 0, 0, 0), False),
                                                                 ((16, 16), 16, (1, 1, 1, 1), True),
                                                                 ((15, 15), 16, (0, 0, 0, 0), True),
                                                                 ((1, 1), 9, (0, 0, 0, 0), True)])
def test_patch_embedding_stride_is_rewritten(catalog, build, kernel, stride, pads, fails):
    path = build.conv(c_in=3, c_out=8, kernel=kernel, pads=pads, strides=(stride, stride), h=32, w=32)
    assert ("RKNN-CONV-STRIDE" in violations(catalog, path, "rk3566")) is fails


@pytest.mark.parametrize(("edit", "message"), [
    ('condition = "moves_across_channel"\nsocs = ["rk3566", "rk3568"]', None),
    ('condition = "no_such_check"\nsocs = ["rk3566", "rk3568"]', "names condition 'no_such_check'"),
    ('condition = "moves_across_channel"\nsocs = ["rk9999"]', "names unknown SoCs"),
])
def test_op_conditions_are_validated_at_load(edit, message):
    from pathlib import Path

    from optimizer.catalog._load import load_family
    from optimizer.errors import BadInputError

    text = (Path(__file__).parents[2] / "constraints" / "rockchip_rknn.toml").read_text()
    old = 'condition = "moves_across_channel"\nsocs = ["rk3566", "rk3568"]'
    assert old in text
    text = text.replace(old, edit, 1)
    if message is None:
        family, _ = load_family(text, "rockchip_rknn.toml")
        assert family.op_support["Transpose"].conditions[0].socs == ("rk3566", "rk3568")
    else:
        with pytest.raises(BadInputError, match=message):
            load_family(text, "rockchip_rknn.toml")
