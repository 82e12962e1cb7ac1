"""Seed 002 (RKNN2 operator reference, RK3576/RV1126B section) facts at their limits, each checked against
what rknn-toolkit2 2.5.0 measured in a real graph (Conv -> pattern -> Conv) where the two disagree."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations

MEASURED = ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"]


def verdicts(catalog, path, target):
    return check_graph(load_model(path), catalog, target)


def on_npu(catalog, path, target, precision, node):
    return verdicts(catalog, path, target).verdict(node).runs_on("npu", precision)


@pytest.mark.parametrize("target", MEASURED)
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_mish_op_is_cpu_but_its_decomposition_is_npu(catalog, build, tmp_path, target, precision):
    lone = build.op("Mish", [1, 8, 4, 4], opset=18)
    assert not on_npu(catalog, lone, target, precision, "n")
    assert "RKNN-OP-NPU" in violations(catalog, lone, target, precision)
    nodes = [helper.make_node("Softplus", ["x"], ["s"], name="softplus"),
             helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
             helper.make_node("Mul", ["x", "t"], ["y"], name="mul")]
    path = save_model(tmp_path / "mish.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)])
    for node in ("softplus", "tanh", "mul"):
        assert on_npu(catalog, path, target, precision, node)


@pytest.mark.parametrize(("alpha", "beta"), [(1 / 6, 0.5), (0.2, 0.5), (0.25, 0.6)])
def test_hardsigmoid_parameters_do_not_leave_the_npu(catalog, build, alpha, beta):
    # seed002 defines alpha=1/6, beta=0.5; the toolkit fuses that one and keeps the others as NPU layers
    path = build.op("HardSigmoid", [1, 8, 4, 4], alpha=alpha, beta=beta)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3576", precision, "n")


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_elu_alpha_does_not_leave_the_npu(catalog, build, alpha):
    assert on_npu(catalog, build.op("Elu", [1, 8, 4, 4], alpha=alpha), "rv1126b", "int8", "n")


def _where(tmp_path, dtype):
    nodes = [helper.make_node("Greater", ["x", "z"], ["m"], name="gt"),
             helper.make_node("Where", ["m", "a", "b"], ["y"], name="n")]
    inputs = [value("x", [1, 8, 4, 4]), value("a", [1, 8, 4, 4], dtype), value("b", [1, 8, 4, 4], dtype)]
    return save_model(tmp_path / f"where{dtype}.onnx", nodes, inputs, [value("y", None, dtype)],
                      [const("z", np.float32(0))])


@pytest.mark.parametrize("target", MEASURED)
@pytest.mark.parametrize(("dtype", "npu"), [(TensorProto.FLOAT, True), (TensorProto.FLOAT16, True),
                                            (TensorProto.INT8, True), (TensorProto.INT32, False),
                                            (TensorProto.INT64, False)])
def test_where_data_type(catalog, tmp_path, target, dtype, npu):
    path = _where(tmp_path, dtype)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, target, precision, "n") is npu
        assert ("RKNN-WHERE" in violations(catalog, path, target, precision)) is not npu


def _gelu_tanh(tmp_path, exponent_constant=True):
    nodes = [helper.make_node("Pow", ["x", "three"], ["x3"], name="pow"),
             helper.make_node("Mul", ["x3", "k"], ["x3k"], name="mul1"),
             helper.make_node("Add", ["x", "x3k"], ["i1"], name="add1"),
             helper.make_node("Mul", ["i1", "s2p"], ["i2"], name="mul2"),
             helper.make_node("Tanh", ["i2"], ["th"], name="tanh"),
             helper.make_node("Add", ["th", "one"], ["t1"], name="add2"),
             helper.make_node("Mul", ["x", "half"], ["xh"], name="mul3"),
             helper.make_node("Mul", ["xh", "t1"], ["y"], name="mul4")]
    inits = [const("k", np.float32(0.044715)), const("s2p", np.float32(0.7978845608)),
             const("one", np.float32(1)), const("half", np.float32(0.5))]
    inputs = [value("x", [1, 8, 4, 4])]
    if exponent_constant:
        inits.append(const("three", np.float32(3)))
    else:
        inputs.append(value("three", []))
    return save_model(tmp_path / f"gelu{exponent_constant}.onnx", nodes, inputs, [value("y", None)], inits)


@pytest.mark.parametrize("target", MEASURED)
def test_tanh_gelu_with_pow_runs_whole_on_the_npu(catalog, tmp_path, target):
    path = _gelu_tanh(tmp_path)
    report = verdicts(catalog, path, target)
    for precision in ("fp16", "int8"):
        assert all(report.verdict(n).runs_on("npu", precision)
                   for n in ("pow", "mul1", "add1", "mul2", "tanh", "add2", "mul3", "mul4"))


def test_pow_with_a_runtime_exponent_is_cpu(catalog, tmp_path):
    path = _gelu_tanh(tmp_path, exponent_constant=False)
    assert not on_npu(catalog, path, "rk3588", "fp16", "pow")


def _written_out_norm(tmp_path, rms=False, square="pow", eps=True, centred_twice=False, second_mean=True):
    """LayerNorm (or RMSNorm) as opset-13 exports write it, over the last axis of a token tensor.
    `centred_twice`: the numerator's x - mean is a second Sub, of a second ReduceMean (CRAFT's LayerNorm) or,
    with `second_mean` False, of the same one (NAFNet's LayerNorm2d)."""
    nodes = []
    d = numerator = "x"
    if not rms:
        nodes += [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-1]),
                  helper.make_node("Sub", ["x", "mu"], ["d"], name="sub")]
        d = numerator = "d"
    if centred_twice:
        if second_mean:
            nodes.append(helper.make_node("ReduceMean", ["x"], ["mu2"], name="mean2", axes=[-1]))
        nodes.append(helper.make_node("Sub", ["x", "mu2" if second_mean else "mu"], ["d2"], name="sub2"))
        numerator = "d2"
    nodes.append(helper.make_node("Pow", [d, "two"], ["q"], name="sq") if square == "pow"
                 else helper.make_node("Mul", [d, d], ["q"], name="sq"))
    nodes.append(helper.make_node("ReduceMean", ["q"], ["var"], name="var", axes=[-1]))
    nodes.append(helper.make_node("Add", ["var", "eps"], ["ve"], name="addeps") if eps
                 else helper.make_node("Identity", ["var"], ["ve"], name="addeps"))
    nodes += [helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
              helper.make_node("Div", [numerator, "sd"], ["nrm"], name="div"),
              helper.make_node("Relu", ["nrm"], ["y"], name="tail")]  # the graph output is not the norm's
    inits = [const("two", np.float32(2)), const("eps", np.float32(1e-5))]
    return save_model(tmp_path / f"norm{rms}{square}{centred_twice}{second_mean}.onnx", nodes, [value("x", [1, 16, 32])], [value("y", None)],
                      inits, opset=13)


@pytest.mark.parametrize("target", MEASURED)
@pytest.mark.parametrize(("rms", "square"), [(False, "pow"), (True, "pow"), (False, "mul")])
def test_written_out_norm_runs_on_the_npu_in_int8(catalog, tmp_path, target, rms, square):
    report = verdicts(catalog, _written_out_norm(tmp_path, rms, square), target)
    for node in ("sqrt", "div"):
        assert report.verdict(node).runs_on("npu", "int8"), node


@pytest.mark.parametrize("target", MEASURED)
def test_a_norm_that_divides_another_tensor_than_it_squares_is_not_fused_unless_a_duplicate(catalog, tmp_path, target):
    """Corpus CRAFT (spandrel, wave 9): x - mean computed twice, one squared, the other divided: the Sqrt and
    the Div are Sqrt and Div layers, Target CPU in INT8 on every SoC (NPU in FP16)."""
    report = verdicts(catalog, _written_out_norm(tmp_path, square="mul", centred_twice=True), target)
    for node in ("sqrt", "div"):
        assert not report.verdict(node).runs_on("npu", "int8"), node
        assert report.verdict(node).runs_on("npu", "fp16"), node
    nafnet = verdicts(catalog, _written_out_norm(tmp_path, centred_twice=True, second_mean=False), target)
    for node in ("sqrt", "div"):  # the duplicate Sub of one mean is merged: exNorm
        assert nafnet.verdict(node).runs_on("npu", "int8"), node


@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3562", "rv1126b"])
def test_rsqrt_form_of_rms_norm_is_not_fused(catalog, tmp_path, target):
    """corpus nn_gelu_tanh_rmsnorm_ffn: x * Reciprocal(Sqrt(mean(x^2) + eps)) keeps a CPU Sqrt in INT8; the
    division form x / Sqrt(..) is the one the toolkit fuses into exNorm (test above)."""
    nodes = [helper.make_node("Pow", ["x", "two"], ["q"], name="sq"),
             helper.make_node("ReduceMean", ["q"], ["var"], name="var", axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="addeps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Reciprocal", ["sd"], ["r"], name="rsqrt"),
             helper.make_node("Mul", ["x", "r"], ["y"], name="scale")]
    path = save_model(tmp_path / "rsqrt.onnx", nodes, [value("x", [1, 16, 32])], [value("y", None)],
                      [const("two", np.float32(2)), const("eps", np.float32(1e-6))], opset=13)
    assert not on_npu(catalog, path, target, "int8", "sqrt")
    assert on_npu(catalog, path, target, "fp16", "sqrt")


def test_a_division_by_a_runtime_value_outside_a_norm_is_cpu_in_int8(catalog, tmp_path):
    # Sqrt of a mean of x^3 is not a norm: the INT8 limits of Sqrt and Div hold
    nodes = [helper.make_node("Pow", ["x", "three"], ["q"], name="sq"),
             helper.make_node("ReduceMean", ["q"], ["m"], name="mean", axes=[-1]),
             helper.make_node("Sqrt", ["m"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["x", "sd"], ["q2"], name="div"),
             helper.make_node("Relu", ["q2"], ["y"], name="tail")]
    path = save_model(tmp_path / "notnorm.onnx", nodes, [value("x", [1, 16, 32])], [value("y", None)],
                      [const("three", np.float32(3))], opset=13)
    report = verdicts(catalog, path, "rk3588")
    for node in ("sqrt", "div"):
        assert not report.verdict(node).runs_on("npu", "int8")
        assert report.verdict(node).runs_on("npu", "fp16")


def _l2norm(tmp_path, guards=("Clip", "Expand"), reduce="ReduceL2", same_tensor=True, axis=1):
    """F.normalize(x, dim=axis) as torch exports it: Div(x, Expand(Clip(ReduceL2(x), eps), Shape(x)))."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"), helper.make_node("Relu", ["x"], ["b"], name="other")]
    src = "a" if same_tensor else "b"
    if reduce == "ReduceL2":
        nodes.append(helper.make_node("ReduceL2", [src], ["n0"], name="reduce", axes=[axis], keepdims=1))
    else:
        nodes.append(helper.make_node("ReduceSum", [src, "ax"], ["n0"], name="reduce", keepdims=1))
    last = "n0"
    for i, guard in enumerate(guards):
        out = f"n{i + 1}"
        if guard == "Clip":
            nodes.append(helper.make_node("Clip", [last, "eps"], [out], name="clip"))
        elif guard == "Add":
            nodes.append(helper.make_node("Add", [last, "eps"], [out], name="addeps"))
        else:
            nodes += [helper.make_node("Shape", ["a"], ["sh"], name="shape"),
                      helper.make_node("Expand", [last, "sh"], [out], name="expand")]
        last = out
    nodes += [helper.make_node("Div", ["a", last], ["nrm"], name="div"),
              helper.make_node("Relu", ["nrm"], ["y"], name="tail")]
    inits = [const("eps", np.float32(1e-12)), const("ax", np.array([axis], np.int64))]
    return save_model(tmp_path / f"l2{'_'.join(guards)}{reduce}{same_tensor}.onnx", nodes,
                      [value("x", [1, 16, 8, 8])], [value("y", None)], inits, opset=17)


@pytest.mark.parametrize("target", MEASURED)
@pytest.mark.parametrize("guards", [("Clip", "Expand"), (), ("Add",)])
def test_l2_normalisation_is_exnorm_in_int8(catalog, tmp_path, target, guards):
    """Measured (tools/probe_rknn_patterns.py l2norm_*): x / ReduceL2(x), with or without the eps guard and
    the Expand torch writes, is one exNorm layer on the NPU in INT8 on every SoC."""
    assert on_npu(catalog, _l2norm(tmp_path, guards), target, "int8", "div")


@pytest.mark.parametrize(("reduce", "same_tensor"), [("ReduceSum", True), ("ReduceL2", False)])
def test_a_division_by_another_reduction_is_cpu_in_int8(catalog, tmp_path, reduce, same_tensor):
    """Just outside the pattern: a ReduceSum divisor (probe div_reducesum: Div INT8 Target CPU), or the L2 norm
    of a different tensor, is a run-time division."""
    path = _l2norm(tmp_path, ("Add",), reduce=reduce, same_tensor=same_tensor)
    for target in ("rk3588", "rk3576", "rv1126b"):
        assert not on_npu(catalog, path, target, "int8", "div")
        assert on_npu(catalog, path, target, "fp16", "div")


@pytest.mark.parametrize(("constant", "npu"), [(True, True), (False, False)])
def test_div_in_int8_by_a_constant_only(catalog, build, constant, npu):
    if constant:
        path = build.op("Div", [1, 8, 4, 4], inputs=["x", "k"], inits=[const("k", np.float32(3))])
    else:
        path = build.op("Div", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert on_npu(catalog, path, "rk3566", "int8", "n") is npu
    assert on_npu(catalog, path, "rk3566", "fp16", "n")


@pytest.mark.parametrize("axes", [[0, 2, 3], [1]])
def test_mean_variance_normalization_op_is_cpu(catalog, build, axes):
    path = build.op("MeanVarianceNormalization", [1, 8, 4, 4], axes=axes)
    for target in MEASURED:
        assert not on_npu(catalog, path, target, "fp16", "n")


def _attention(tmp_path, d):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
             helper.make_node("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    shape = [1, 2, 8, d]
    return save_model(tmp_path / f"attn{d}.onnx", nodes, [value(n, shape) for n in "qkv"], [value("y", None)],
                      [const("scale", np.float32(d ** -0.5))])


@pytest.mark.parametrize(("d", "fused"), [(8192, True), (8193, False)])
@pytest.mark.parametrize(("target", "multicore"), [("rk3576", True), ("rv1126b", False), ("rk3588", False)])
def test_sdpa_channel_limit_and_multicore(catalog, tmp_path, d, fused, target, multicore):
    extra = verdicts(catalog, _attention(tmp_path, d), target).verdict("pv").extra
    assert extra["sdpa"]["fused"] is fused
    assert extra["sdpa"]["query_channel"] == d
    assert extra["multicore"] is (multicore and fused)  # RK3588: not extrapolated from the seed's RK3576 note


def test_no_fused_attention_on_rk3566(catalog, tmp_path):
    assert "sdpa" not in verdicts(catalog, _attention(tmp_path, 64), "rk3566").verdict("pv").extra
