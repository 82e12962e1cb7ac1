"""RKNN placement that depends on shapes and neighbours (measured with rknn-toolkit2 2.5.0): layout ops on
RK3566/RK3568, token MatMuls there, and the output relayout on RK3588."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight


def on_npu(catalog, path, target, precision="fp16", node="n"):
    return check_graph(load_model(path), catalog, target).verdict(node).runs_on("npu", precision)


def _inner(tmp_path, nodes, x_shape, inits=(), name="m"):
    """x -> Relu -> nodes (reading 'a', writing 'b') -> Relu -> y: the ops under test are not graph outputs."""
    body = [helper.make_node("Relu", ["x"], ["a"], name="head"), *nodes,
            helper.make_node("Relu", ["b"], ["c"], name="tail")]
    return save_model(tmp_path / f"{name}.onnx", body, [value("x", x_shape)], [value("c", None)], list(inits))


@pytest.mark.parametrize(("shape", "perm", "cpu"), [([1, 8, 4, 4], [0, 1, 3, 2], True),
                                                    ([1, 8, 4, 4], [0, 2, 3, 1], True),
                                                    ([1, 8, 1, 4], [0, 1, 3, 2], False),  # moves a unit axis only
                                                    ([1, 16, 8], [0, 2, 1], False)])  # token transpose folds
def test_transpose_on_rk3566_is_cpu_only_when_it_moves_4d_data(catalog, tmp_path, shape, perm, cpu):
    path = _inner(tmp_path, [helper.make_node("Transpose", ["a"], ["b"], name="n", perm=perm)], shape)
    for target in ("rk3566", "rk3568"):
        assert on_npu(catalog, path, target) is not cpu
    assert on_npu(catalog, path, "rk3588")


@pytest.mark.parametrize(("shape", "to", "cpu"), [([1, 16, 8, 8], [1, 32, 4, 8], True),
                                                  ([1, 16, 8, 8], [1, 16, 64], False),
                                                  ([1, 16, 8, 8], [1, 16, 64, 1], False),
                                                  ([1, 64, 30], [1, 4, 16, 30], True)])
def test_reshape_on_rk3566_is_cpu_only_when_it_changes_the_channel(catalog, tmp_path, shape, to, cpu):
    path = _inner(tmp_path, [helper.make_node("Reshape", ["a", "s"], ["b"], name="n")], shape,
                  [const("s", np.array(to, np.int64))])
    assert on_npu(catalog, path, "rk3566", "int8") is not cpu
    assert on_npu(catalog, path, "rk3562", "int8")


@pytest.mark.parametrize("closed", [True, False])
def test_a_channels_last_transpose_pair_folds_on_rk3566(catalog, tmp_path, closed):
    # corpus nn_window_attention_pad_roll: (0,2,3,1) -> channels-last LayerNorm -> ... -> (0,3,1,2) both fold.
    # Without the inverse the opener read by a LayerNorm over its last axis has no layer either (RKNN-OP-NPU's
    # channels-last relabel, corpus Swin patch embeddings); tests/catalog/test_rknn_channels_last.py has the
    # readers that keep it a CPU transpose
    inits = [const("s", np.ones(8, np.float32)), const("bias", np.zeros(8, np.float32))]
    nodes = [helper.make_node("Transpose", ["a"], ["t"], name="n", perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ["t", "s", "bias"], ["l"], name="ln", axis=-1),
             helper.make_node("Relu", ["l"], ["r"], name="act")]
    if closed:
        nodes.append(helper.make_node("Transpose", ["r"], ["b"], name="back", perm=[0, 3, 1, 2]))
    else:
        nodes.append(helper.make_node("Identity", ["r"], ["b"], name="back"))
    body = [helper.make_node("Relu", ["x"], ["a"], name="head"), *nodes,
            helper.make_node("Relu", ["b"], ["c"], name="tail")]
    path = save_model(tmp_path / "m.onnx", body, [value("x", [1, 8, 4, 4])], [value("c", None)], inits, opset=17)
    assert on_npu(catalog, path, "rk3566")
    assert on_npu(catalog, path, "rk3566", node="ln")
    if closed:
        assert on_npu(catalog, path, "rk3566", node="back")


def test_a_transpose_after_a_reshape_is_merged_into_it(catalog, tmp_path):
    # yolov8 DFL: Reshape [1,64,30] -> [1,4,16,30], Transpose (0,2,1,3): one CPU Reshape layer on rk3566
    nodes = [helper.make_node("Reshape", ["a", "s"], ["r"], name="n"),
             helper.make_node("Transpose", ["r"], ["b"], name="t", perm=[0, 2, 1, 3])]
    path = _inner(tmp_path, nodes, [1, 64, 30], [const("s", np.array([1, 4, 16, 30], np.int64))])
    assert not on_npu(catalog, path, "rk3566", node="n")
    assert on_npu(catalog, path, "rk3566", node="t")


@pytest.mark.parametrize("after", [False, True])
def test_token_matmul_on_rk3566_is_cpu_only_when_its_result_leaves_the_graph(catalog, tmp_path, after):
    # tokens stay in the toolkit's [B,C,1,N] form between MatMuls; the tensor leaving the graph is transposed back,
    # by a layer named after the node making it: the last MatMul, or the op after it (corpus
    # nn_sdpa_causal_d128_h4: /proj/MatMul NPU, /proj/Add CPU)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m"], name="inner"),
             helper.make_node("MatMul", ["m", "w2"], ["b" if after else "y"], name="last")]
    if after:
        nodes.append(helper.make_node("Relu", ["b"], ["y"], name="tail"))
    path = save_model(tmp_path / f"tok{int(after)}.onnx", nodes, [value("x", [1, 16, 32])], [value("y", None)],
                      [weight("w1", [32, 32]), weight("w2", [32, 32])])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="inner")
        assert on_npu(catalog, path, "rk3566", precision, node="last") is after
        if after:
            assert not on_npu(catalog, path, "rk3566", precision, node="tail")
        assert on_npu(catalog, path, "rk3562", precision, node="last")


def test_the_second_operand_of_an_activation_matmul_is_cpu_on_rk3566(catalog, tmp_path):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("Relu", ["v"], ["vr"], name="v_op"),
             helper.make_node("MatMul", ["p", "vr"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    shape = [1, 2, 17, 8]  # 17 tokens: not a multiple of 4
    path = save_model(tmp_path / "attn.onnx", nodes, [value(n, shape) for n in "qkv"], [value("y", None)])
    report = check_graph(load_model(path), catalog, "rk3566")
    assert report.verdict("kt").runs_on("npu", "fp16")  # a Transpose operand folds into exMatMul
    assert not report.verdict("v_op").runs_on("npu", "fp16")
    assert "RKNN-EXMATMUL-B" in {v.rule for v in report.verdict("v_op").violations}
    assert check_graph(load_model(path), catalog, "rk3588").verdict("v_op").runs_on("npu", "fp16")


def test_a_2d_gemm_has_no_transpose(catalog, tmp_path):
    path = _inner(tmp_path, [helper.make_node("Gemm", ["a", "w"], ["b"], name="n", transB=1)], [1, 32],
                  [weight("w", [10, 32])])
    assert on_npu(catalog, path, "rk3566", "int8")


def _output_maker(tmp_path, shape):
    node = helper.make_node("Relu", ["x"], ["y"], name="n")
    return save_model(tmp_path / f"out{len(shape)}.onnx", [node], [value("x", shape)], [value("y", shape)])


@pytest.mark.parametrize(("shape", "cpu_in"), [([1, 1000], {"int8"}), ([1, 1008], set()), ([1, 8, 10], {"int8", "fp16"}),
                                               ([1, 8, 192], set()), ([1, 8, 200], {"int8"}),
                                               ([1, 8, 2, 5], set())])
def test_output_relayout_on_rk3588(catalog, tmp_path, shape, cpu_in):
    path = _output_maker(tmp_path, shape)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3588", precision) is (precision not in cpu_in)
        assert ("RKNN-OUTPUT-RELAYOUT" in violations(catalog, path, "rk3588", precision)) is (precision in cpu_in)
        assert on_npu(catalog, path, "rk3576", precision)


def test_regrouping_the_tokens_of_a_token_tensor_folds_on_rk3566(catalog, tmp_path):
    # LeViT subsample: tokens from a MatMul, [1,196,32] -> [1,14,14,32] keeps the channel last
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Reshape", ["t", "s"], ["b"], name="n")]
    path = _inner(tmp_path, nodes, [1, 196, 32], [weight("w", [32, 32]), const("s", np.array([1, 14, 14, 32], np.int64))])
    assert on_npu(catalog, path, "rk3566", "int8")
    # the same reshape of a feature-map tensor (channel in the middle) crosses the channel
    maps = _inner(tmp_path, [helper.make_node("Reshape", ["a", "s"], ["b"], name="n")], [1, 196, 32],
                  [const("s", np.array([1, 14, 14, 32], np.int64))], name="maps")
    assert not on_npu(catalog, maps, "rk3566", "int8")


@pytest.mark.parametrize(("shape", "cpu"), [([1, 16, 6, 6], True), ([1, 16, 1, 1], False)])
def test_flattening_pixels_into_channels_on_rk3588_fp16(catalog, tmp_path, shape, cpu):
    path = _inner(tmp_path, [helper.make_node("Flatten", ["a"], ["b"], name="n", axis=1)], shape)
    assert on_npu(catalog, path, "rk3588", "fp16") is not cpu
    assert on_npu(catalog, path, "rk3576", "fp16")  # measured on rk3588 only: not extrapolated


@pytest.mark.parametrize(("tokens", "dim", "cpu"), [(196, 64, False), (49, 64, True), (196, 62, True), (16, 16, False)])
def test_attention_v_transpose_alignment_on_rk3566(catalog, tmp_path, tokens, dim, cpu):
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("Relu", ["v"], ["vr"], name="v_op"),
             helper.make_node("MatMul", ["p", "vr"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    inputs = [value("q", [1, 2, tokens, dim]), value("k", [1, 2, dim, tokens]), value("v", [1, 2, tokens, dim])]
    path = save_model(tmp_path / f"v{tokens}_{dim}.onnx", nodes, inputs, [value("y", None)])
    assert on_npu(catalog, path, "rk3566", "fp16", node="v_op") is not cpu


def test_a_head_split_of_tokens_folds_on_rk3566(catalog, tmp_path):
    # [1,49,128] from a MatMul -> [1,49,8,16] -> Transpose (0,2,1,3): the toolkit reshapes to (8,16,1,49) on the NPU
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Reshape", ["t", "s"], ["r"], name="n"),
             helper.make_node("Transpose", ["r"], ["b"], name="t", perm=[0, 2, 1, 3])]
    path = _inner(tmp_path, nodes, [1, 49, 128], [weight("w", [128, 128]), const("s", np.array([1, 49, 8, 16], np.int64))])
    assert on_npu(catalog, path, "rk3566", node="n") and on_npu(catalog, path, "rk3566", node="t")


@pytest.mark.parametrize("from_constant", [True, False])
def test_a_subgraph_of_constants_is_folded_by_the_toolkit(catalog, tmp_path, from_constant):
    # corpus nn_window_attention_pad_roll: the Mod/Sub/ConstantOfShape/Cast chain computing the pad has no
    # layer; edgenext's sin/cos position embedding is such a chain whose values edgeplan cannot compute
    # (CumSum of a weight, Sin, Cos): it is a build-time constant, not a CPU layer
    source = "w" if from_constant else "x"
    nodes = [helper.make_node("Mul", [source, "k"], ["m"], name="scale"),
             helper.make_node("Sin", ["m"], ["s"], name="n"),
             helper.make_node("Cos", ["m"], ["c"], name="cos"),
             helper.make_node("Add", ["s", "c"], ["e"], name="embed"),
             helper.make_node("Add", ["x", "e"], ["y"], name="use")]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)],
                      [weight("w", [1, 8, 4, 4]), const("k", np.array(2.0, np.float32))])
    for target in ("rk3588", "rk3566"):
        assert on_npu(catalog, path, target, "int8") is from_constant
        assert on_npu(catalog, path, target, "fp16", node="cos") is from_constant
    assert check_graph(load_model(path), catalog, "rk3588").verdict("use").kind != "constant"


@pytest.mark.parametrize(("column", "folded"), [(0, True), (1, False), (-5, True)])
def test_a_gather_of_the_constant_part_of_a_concat_is_folded(catalog, tmp_path, column, folded):
    """corpus nn_roi_align_head: torchvision builds RoIAlign's rois as Concat(zeros, boxes) and gathers the batch
    column back out; the toolkit folds that column (its Cast has no layer), while a column of the boxes is data."""
    nodes = [helper.make_node("Concat", ["zeros", "boxes"], ["rois"], name="rois", axis=1),
             helper.make_node("Gather", ["rois", "col"], ["c"], name="pick", axis=1),
             helper.make_node("Cast", ["c"], ["y"], name="n", to=7)]
    path = save_model(tmp_path / f"rois{column}.onnx", nodes, [value("boxes", [8, 4])],
                      [value("y", None, onnx.TensorProto.INT64)],
                      [const("zeros", np.zeros((8, 1), np.float32)), const("col", np.array(column, np.int64))])
    for target in ("rk3588", "rk3566"):
        report = check_graph(load_model(path), catalog, target)
        assert (report.verdict("n").kind == "constant") is folded
        assert report.verdict("n").runs_on("npu", "fp16") is folded


@pytest.mark.parametrize("attention", [True, False])
def test_an_attention_head_reshape_folds_into_exmatmul_on_rk3566(catalog, tmp_path, attention):
    # corpus yolo11n_320 /model.10/m/m.0/attn/Reshape: [1,256,10,10] -> [1,2,128,100] into the q/k/v Split,
    # Target NPU on rk3566; the same reshape feeding no MatMul changes the channel (CPU)
    nodes = [helper.make_node("Reshape", ["a", "s"], ["r"], name="n")]
    if attention:
        nodes += [helper.make_node("Split", ["r", "parts"], ["q", "k"], name="split", axis=2),
                  helper.make_node("Transpose", ["q"], ["qt"], name="qt", perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", ["qt", "k"], ["b"], name="mm")]
    else:
        nodes.append(helper.make_node("Relu", ["r"], ["b"], name="act"))
    inits = [const("s", np.array([1, 2, 8, 16], np.int64)), const("parts", np.array([4, 4], np.int64))]
    path = _inner(tmp_path, nodes, [1, 16, 4, 4], inits)
    assert on_npu(catalog, path, "rk3566") is attention
    assert on_npu(catalog, path, "rk3566", "int8") is attention


def _attention_v(tmp_path, tokens, dim, v_first=False, split=False):
    """softmax(Q.K^T).V (or V.P^T with V first, as yolo11's C2PSA writes it); V made by a Relu, or as the third
    output of a q/k/v Split ([1, 2, 3*dim, N] on axis 2) whose V also feeds another branch."""
    if split:
        nodes = [helper.make_node("Split", ["qkv", "parts"], ["q0", "k", "v"], name="v_op", axis=2),
                 helper.make_node("Transpose", ["q0"], ["q"], name="qt", perm=[0, 1, 3, 2]),
                 helper.make_node("Relu", ["v"], ["side"], name="side_branch")]
        inputs = [value("qkv", [1, 2, 3 * dim, tokens])]
    else:
        nodes = [helper.make_node("Relu", ["v0"], ["v"], name="v_op")]
        inputs = [value("q", [1, 2, tokens, dim]), value("k", [1, 2, dim, tokens]),
                  value("v0", [1, 2, dim, tokens] if v_first else [1, 2, tokens, dim])]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1)]
    if v_first:
        nodes += [helper.make_node("Transpose", ["p"], ["pt"], name="pt", perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", ["v", "pt"], ["o"], name="pv")]
    else:
        nodes.append(helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"))
    nodes.append(helper.make_node("Relu", ["o"], ["y"], name="tail"))
    outputs = [value("y", None)] + ([value("side", None)] if split else [])
    inits = [const("parts", np.array([dim, dim, dim], np.int64))] if split else []
    name = f"v{tokens}_{dim}_{int(v_first)}{int(split)}.onnx"
    return save_model(tmp_path / name, nodes, inputs, outputs, inits)


# probe (tools/probe_rknn_rk3566.py vop:D:N): the V transpose is NPU iff N and D are multiples of 4 in FP16 and
# of 8 in INT8 (whole 8-byte groups)
@pytest.mark.parametrize(("tokens", "dim", "cpu_in"), [(128, 64, set()), (104, 24, set()), (100, 64, {"int8"}),
                                                       (128, 12, {"int8"}), (98, 64, {"fp16", "int8"}),
                                                       (128, 8, set()), (196, 64, {"int8"})])
def test_the_v_transpose_needs_whole_8_byte_groups_on_rk3566(catalog, tmp_path, tokens, dim, cpu_in):
    path = _attention_v(tmp_path, tokens, dim)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="v_op") is (precision not in cpu_in)
        assert on_npu(catalog, path, "rk3562", precision, node="v_op")


@pytest.mark.parametrize("tokens", [100, 104])
def test_a_split_making_v_of_v_times_p_transposed_is_the_v_operand(catalog, tmp_path, tokens):
    # corpus yolo11n_320 /model.10/m/m.0/attn/Split: V [1,2,64,100] of V @ attn^T, also read by the pe branch;
    # its transpose (Split_output_2_tp_rs) is NPU in FP16 and CPU in INT8
    path = _attention_v(tmp_path, tokens, 64, v_first=True, split=True)
    assert on_npu(catalog, path, "rk3566", "fp16", node="v_op")
    assert on_npu(catalog, path, "rk3566", "int8", node="v_op") is (tokens % 8 == 0)
    assert on_npu(catalog, path, "rk3566", "int8", node="qt")


def test_a_reshape_before_the_v_transpose_carries_it(catalog, tmp_path):
    # probe vop:64:100: v_rs (Reshape) -> v_tr (Transpose) -> P.V; the layer is v_rs#2, CPU in INT8 with v_rs
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("Reshape", ["v0", "shape"], ["vr"], name="v_rs"),
             helper.make_node("Transpose", ["vr"], ["v"], name="v_tr", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    inputs = [value("q", [1, 2, 100, 64]), value("k", [1, 2, 64, 100]), value("v0", [1, 128, 10, 10])]
    path = save_model(tmp_path / "vrs.onnx", nodes, inputs, [value("y", None)],
                      [const("shape", np.array([1, 2, 64, 100], np.int64))])
    assert not on_npu(catalog, path, "rk3566", "int8", node="v_rs")
    assert on_npu(catalog, path, "rk3566", "int8", node="v_tr")
    assert on_npu(catalog, path, "rk3566", "fp16", node="v_rs")


def _token_mixing(tmp_path, tokens, channels):
    """MLP-Mixer's token mixing: tokens from a MatMul -> Transpose -> MatMul over N (+ bias) -> Transpose back ->
    residual Add -> MatMul; then back to the map (Transpose + Reshape)."""
    nodes = [helper.make_node("MatMul", ["x", "wc"], ["t"], name="channel_mm"),
             helper.make_node("Transpose", ["t"], ["tt"], name="swap", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["tt", "wn"], ["m"], name="token_mm"),
             helper.make_node("Add", ["m", "bn"], ["mb"], name="token_bias"),
             helper.make_node("Transpose", ["mb"], ["mt"], name="swap_back", perm=[0, 2, 1]),
             helper.make_node("Add", ["t", "mt"], ["r"], name="residual"),
             helper.make_node("MatMul", ["r", "wc2"], ["u"], name="next_mm"),
             helper.make_node("Transpose", ["u"], ["ut"], name="to_map", perm=[0, 2, 1]),
             helper.make_node("Reshape", ["ut", "shape"], ["y4"], name="map"),
             helper.make_node("Relu", ["y4"], ["y"], name="tail")]
    side = int(tokens**0.5)
    inits = [weight("wc", [channels, channels]), weight("wn", [tokens, tokens]), weight("bn", [tokens]),
             weight("wc2", [channels, channels]), const("shape", np.array([1, channels, side, tokens // side], np.int64))]
    return save_model(tmp_path / f"mix{tokens}_{channels}.onnx", nodes, [value("x", [1, tokens, channels])],
                      [value("y", None)], inits)


# probe tokmix:N:C and corpus timm_mixer_s32_224 (N=49, C=512: CPU in FP16 and INT8)
@pytest.mark.parametrize(("tokens", "channels", "cpu_in"), [(64, 64, set()), (100, 64, {"int8"}),
                                                            (64, 12, {"int8"}), (49, 512, {"fp16", "int8"})])
def test_token_mixing_transposes_need_whole_8_byte_groups_on_rk3566(catalog, tmp_path, tokens, channels, cpu_in):
    path = _token_mixing(tmp_path, tokens, channels)
    for precision in ("fp16", "int8"):
        cpu = precision in cpu_in
        assert on_npu(catalog, path, "rk3566", precision, node="swap") is not cpu
        assert on_npu(catalog, path, "rk3566", precision, node="token_mm") is not cpu  # carries swap_back
        assert on_npu(catalog, path, "rk3566", precision, node="swap_back")
        assert on_npu(catalog, path, "rk3566", precision, node="to_map")  # token -> map form folds
        assert on_npu(catalog, path, "rk3588", precision, node="swap")


def _token_mean(tmp_path, tokens, channels, reshape_after):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="producer"),
             helper.make_node("ReduceMean", ["t"], ["m"], name="mean", axes=[1], keepdims=0)]
    inits = [weight("w", [channels, channels]), weight("head", [channels, 10])]
    if reshape_after:
        nodes.append(helper.make_node("Reshape", ["m", "shape"], ["m2"], name="after"))
        inits.append(const("shape", np.array([1, channels], np.int64)))
    nodes.append(helper.make_node("MatMul", ["m2" if reshape_after else "m", "head"], ["y"], name="classifier"))
    return save_model(tmp_path / f"mean{tokens}_{int(reshape_after)}.onnx", nodes,
                      [value("x", [1, tokens, channels])], [value("y", None)], inits, opset=13)


# probe tokmean:N:C: the (1,1,1,C) result goes back to (1,C,1,1) on the CPU in every case; the input's transpose
# into (1,N,1,C) follows the 8-byte rule (N=16, 64: NPU; N=49: CPU); corpus timm_mixer_s32_224 /ReduceMean
@pytest.mark.parametrize(("tokens", "producer_cpu"), [(16, False), (64, False), (49, True)])
@pytest.mark.parametrize("reshape_after", [False, True])
def test_a_token_axis_mean_transposes_on_rk3566(catalog, tmp_path, tokens, producer_cpu, reshape_after):
    path = _token_mean(tmp_path, tokens, 64, reshape_after)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="producer") is not producer_cpu
        assert on_npu(catalog, path, "rk3566", precision, node="mean") is reshape_after
        if reshape_after:
            assert not on_npu(catalog, path, "rk3566", precision, node="after")
        assert on_npu(catalog, path, "rk3576", precision, node="mean")


# probe lastmean:7:64:0 (rknn-toolkit2 2.5.0, rk3566): the mean over the pixels of a channels-last token map
# [1, H, W, C] is the same token MatMul; corpus timm_swin_tiny_patch4_window7_224 and timm_sequencer2d_s
# /head/global_pool/pool/ReduceMean (axes (1, 2) of [1, 7, 7, 768] / [1, 16, 16, 384]): CPU, FP16 and INT8
@pytest.mark.parametrize(("axes", "side", "mean_cpu", "producer_cpu"), [([1, 2], 7, True, True),
                                                                        ([2, 1], 4, True, False),  # 16 pixels
                                                                        ([1], 7, False, False)])
def test_a_pixel_mean_of_a_channels_last_token_map_transposes_on_rk3566(catalog, tmp_path, axes, side, mean_cpu,
                                                                        producer_cpu):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="producer"),
             helper.make_node("ReduceMean", ["t"], ["m"], name="mean", axes=axes, keepdims=0),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    path = save_model(tmp_path / "lastmean.onnx", nodes, [value("x", [1, side, side, 64])], [value("y", None)],
                      [weight("w", [64, 64])], opset=13)
    for precision in ("fp16", "int8"):  # one token axis of the map: RKNN-REDUCE-RELAYOUT's, not this
        assert ("RKNN-TOKEN-RELAYOUT" in violations(catalog, path, "rk3566", precision, "mean")) is mean_cpu
        assert ("RKNN-TOKEN-RELAYOUT" in violations(catalog, path, "rk3566", precision, "producer")) is producer_cpu
    assert on_npu(catalog, path, "rk3588", "fp16", node="mean")


def test_a_channel_axis_mean_is_no_token_transpose(catalog, tmp_path):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="producer"),
             helper.make_node("ReduceMean", ["t"], ["m"], name="mean", axes=[2], keepdims=1),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    path = save_model(tmp_path / "cmean.onnx", nodes, [value("x", [1, 49, 64])], [value("y", None)],
                      [weight("w", [64, 64])], opset=13)
    assert on_npu(catalog, path, "rk3566", "fp16", node="mean")
    assert on_npu(catalog, path, "rk3566", "fp16", node="producer")


def _conv_map_attention(tmp_path, heads, dim, tokens=64):
    """The probe's graph: q/k/v maps [1, heads*dim, H, W] -> Reshape [1, heads, dim, N] -> Transpose -> attention
    -> Transpose -> Reshape back to the map."""
    side = int(tokens**0.5)
    nodes = []
    for t in "qkv":
        nodes += [helper.make_node("Reshape", [f"{t}0", "heads"], [f"{t}r"], name=f"{t}_rs"),
                  helper.make_node("Transpose", [f"{t}r"], [t], name=f"{t}_tr", perm=[0, 1, 3, 2])]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["ot"], name="o_tr", perm=[0, 1, 3, 2]),
              helper.make_node("Reshape", ["ot", "back"], ["o4"], name="o_rs"),
              helper.make_node("Relu", ["o4"], ["y"], name="tail")]
    inputs = [value(f"{t}0", [1, heads * dim, side, side]) for t in "qkv"]
    inits = [const("heads", np.array([1, heads, dim, tokens], np.int64)),
             const("back", np.array([1, heads * dim, side, side], np.int64))]
    return save_model(tmp_path / f"heads{heads}_{dim}.onnx", nodes, inputs, [value("y", None)], inits)


# probe vop:D:64:2 (and :4): head split/join Reshapes are NPU iff D is a multiple of 4 (FP16) / 8 (INT8)
@pytest.mark.parametrize(("dim", "cpu_in"), [(8, set()), (24, set()), (40, set()), (20, {"int8"}), (12, {"int8"}),
                                             (4, {"int8"})])
def test_attention_head_reshapes_need_whole_8_byte_groups_on_rk3566(catalog, tmp_path, dim, cpu_in):
    path = _conv_map_attention(tmp_path, 2, dim)
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        cpu = precision in cpu_in
        for node in ("q_rs", "k_rs", "o_rs"):
            assert report.verdict(node).runs_on("npu", precision) is not cpu, (node, precision)
        assert report.verdict("q_tr").runs_on("npu", precision)
        if cpu:
            assert "RKNN-HEAD-SPLIT" in {v.rule for v in report.verdict("q_rs").violations}
    assert check_graph(load_model(path), catalog, "rk3576").verdict("q_rs").runs_on("npu", "int8")


def test_a_reshape_transpose_pair_feeding_no_matmul_still_moves_data_on_rk3566(catalog, tmp_path):
    nodes = [helper.make_node("Reshape", ["a", "s"], ["r"], name="n"),
             helper.make_node("Transpose", ["r"], ["b"], name="t", perm=[0, 1, 3, 2])]
    path = _inner(tmp_path, nodes, [1, 128, 10, 10], [const("s", np.array([1, 2, 64, 100], np.int64))])
    assert not on_npu(catalog, path, "rk3566", node="n")


def _group_norm(tmp_path, channels, groups, side=8):
    nodes = [helper.make_node("Reshape", ["a", "s3"], ["r"], name="gn_reshape"),
             helper.make_node("InstanceNormalization", ["r", "g", "bias"], ["nrm"], name="gn_norm"),
             helper.make_node("Reshape", ["nrm", "s4"], ["b"], name="gn_back")]
    inits = [const("s3", np.array([1, groups, -1], np.int64)), const("s4", np.array([1, channels, side, side], np.int64)),
             const("g", np.ones(groups, np.float32)), const("bias", np.zeros(groups, np.float32))]
    return _inner(tmp_path, nodes, [1, channels, side, side], inits, name=f"gn{channels}_{groups}")


# probe gn:C:G and corpus nn_se_mish_groupnorm (C/G = 8): the exNorm is NPU for every group size (the
# InstanceNormalization entry, placement's), its two Reshapes iff C/G is a multiple of 4 (FP16) / 8 (INT8)
@pytest.mark.parametrize(("channels", "groups", "cpu_in"), [(32, 4, set()), (32, 8, {"int8"}), (32, 16, {"fp16", "int8"}),
                                                            (24, 4, {"fp16", "int8"})])
def test_group_norm_on_rk3566(catalog, tmp_path, channels, groups, cpu_in):
    path = _group_norm(tmp_path, channels, groups)
    for precision in ("fp16", "int8"):
        cpu = precision in cpu_in
        assert on_npu(catalog, path, "rk3566", precision, node="gn_reshape") is not cpu
        assert on_npu(catalog, path, "rk3566", precision, node="gn_back") is not cpu
        assert on_npu(catalog, path, "rk3588", precision, node="gn_norm")


def test_group_norm_of_a_conv1d_map_folds_on_rk3566(catalog, tmp_path):
    """corpus nn_convtasnet_gln: GroupNorm(1, 64) on [1, 64, 499] (Conv-TasNet's global LayerNorm): the Reshapes
    into [1, 1, 31936] and back have no CPU layer on rk3566, FP16 and INT8."""
    nodes = [helper.make_node("Reshape", ["a", "s3"], ["r"], name="gn_reshape"),
             helper.make_node("InstanceNormalization", ["r", "g", "bias"], ["nrm"], name="gn_norm"),
             helper.make_node("Reshape", ["nrm", "s_back"], ["b"], name="gn_back")]
    inits = [const("s3", np.array([1, 1, -1], np.int64)), const("s_back", np.array([1, 64, 499], np.int64)),
             const("g", np.ones(1, np.float32)), const("bias", np.zeros(1, np.float32))]
    path = _inner(tmp_path, nodes, [1, 64, 499], inits, name="gn1d")
    for precision in ("fp16", "int8"):
        for node in ("gn_reshape", "gn_norm", "gn_back"):
            assert on_npu(catalog, path, "rk3566", precision, node=node), node


@pytest.mark.parametrize(("kernel", "cpu"), [(5, True), (3, True), (1, False)])
def test_a_run_time_filter_bank_reshape_is_a_gather_on_rk3566(catalog, tmp_path, kernel, cpu):
    """corpus timm_efficientnet_cc_b0_4e: CondConv's routed [1, C*k*k] reshaped to depthwise [C, 1, k, k] is a CPU
    Reshape layer on rk3566 (k 5 and 3); the 1x1 banks [Cout, Cin, 1, 1] are NPU; all NPU on rk3576."""
    c = 96
    cin = c if kernel > 1 else 64
    shape = [c, 1, kernel, kernel] if kernel > 1 else [c, cin, 1, 1]
    size = int(np.prod(shape))
    nodes = [helper.make_node("Gemm", ["route", "experts"], ["mix"], name="mix"),
             helper.make_node("Reshape", ["mix", "s"], ["bank"], name="n"),
             helper.make_node("Conv", ["x", "bank"], ["y"], name="conv", group=c if kernel > 1 else 1,
                              pads=[kernel // 2] * 4)]
    path = save_model(tmp_path / f"bank{kernel}.onnx", nodes, [value("route", [1, 4]), value("x", [1, cin, 8, 8])],
                      [value("y", None)], [weight("experts", [4, size]), const("s", np.array(shape, np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu
        assert on_npu(catalog, path, "rk3576", precision)


@pytest.mark.parametrize(("shape", "tokens", "cpu"), [([1, 4, 256], False, True), ([1, 32, 100], False, True),
                                                      ([1, 64, 128], True, True), ([1, 4, 8, 8], False, False)])
def test_a_rank3_graph_output_is_relaid_out_on_the_cpu_on_rk3566(catalog, tmp_path, shape, tokens, cpu):
    # probe out3:C:N and corpus nn_tcn_conv1d /head/Conv [1,4,256] (a feature map: Reshape); tokens are transposed
    # back by a layer named after the node making the output (corpus nn_sdpa_causal_d128_h4 /proj/Add, the bias
    # Add after the token MatMul, which itself stays NPU); rank 4 needs no relayout
    if tokens:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="mm"),
                 helper.make_node("Relu", ["t"], ["y"], name="n")]
        inits = [weight("w", [shape[-1], shape[-1]])]
    else:
        nodes, inits = [helper.make_node("Relu", ["x"], ["y"], name="n")], []
    path = save_model(tmp_path / "o.onnx", nodes, [value("x", shape)], [value("y", shape)], inits)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu
        assert ("RKNN-MAP-OUTPUT" in violations(catalog, path, "rk3566", precision)) is cpu
        if tokens:
            assert on_npu(catalog, path, "rk3566", precision, node="mm")
    assert on_npu(catalog, path, "rk3576", "fp16")


@pytest.mark.parametrize(("shape", "cpu"), [([1, 16, 6, 6], True), ([1, 16, 1, 1], False)])
def test_flattening_pixels_into_channels_on_rk3566(catalog, tmp_path, shape, cpu):
    # corpus tv_alexnet /Flatten: (1,256,6,6) -> (1,9216,1,1) is CPU on rk3566 in FP16 and INT8
    path = _inner(tmp_path, [helper.make_node("Flatten", ["a"], ["b"], name="n", axis=1)], shape)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu
        assert on_npu(catalog, path, "rk3568", precision) is not cpu


@pytest.mark.parametrize(("tokens", "channels", "matmul_cpu_in"), [(64, 128, set()), (32, 10, {"fp16", "int8"}),
                                                                   (100, 64, {"int8"})])
def test_a_token_output_is_transposed_then_reshaped_on_rk3566(catalog, tmp_path, tokens, channels, matmul_cpu_in):
    # corpus nn_lstm_1x128 (C=10): /fc/MatMul's transpose CPU, /fc/Add's Reshape NPU; nn_sdpa_causal_d128_h4
    # ([1,64,128]): the transpose NPU, the Reshape CPU; the 8-byte rule decides which
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "bias"], ["y"], name="bias_add")]
    path = save_model(tmp_path / f"tokout{tokens}_{channels}.onnx", nodes, [value("x", [1, tokens, 32])],
                      [value("y", None)], [weight("w", [32, channels]), weight("bias", [channels])])
    for precision in ("fp16", "int8"):
        cpu = precision in matmul_cpu_in
        assert on_npu(catalog, path, "rk3566", precision, node="mm") is not cpu
        assert on_npu(catalog, path, "rk3566", precision, node="bias_add") is cpu


def test_a_scalar_reshape_has_no_layout_on_rk3566(catalog, tmp_path):
    # ../shared/zoo/tv_ssdlite320_mobilenet_v3_large: a Reshape of a rank-0 tensor raised IndexError in the
    # rk3566 layout condition
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], name="mx", keepdims=0),
             helper.make_node("Reshape", ["m", "s"], ["y"], name="n")]
    path = save_model(tmp_path / "scalar.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)],
                      [const("s", np.array([1], np.int64))], opset=13)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision)


def _windowed_attention(tmp_path, windows, tokens, heads=2, dim=16, unfold=False):
    """The probe's windowed attention: a map [1, C, B, N] made channels-last (or, with `unfold`, brought into
    the batch by a (0, 3, 2, 1) Transpose of [1, N, B, C] that moves data, MobileViT's unfold) and reshaped into
    tokens [B, N, C] -> qkv MatMul -> Reshape [B, N, 3, heads, d] -> Transpose (2, 0, 3, 1, 4) -> Split/Squeeze ->
    softmax(Q.K^T).V."""
    ch = heads * dim
    nodes = [helper.make_node("Transpose", ["x"], ["xl"], name="to_tokens", perm=[0, 3, 2, 1] if unfold else [0, 2, 3, 1]),
             helper.make_node("Reshape", ["xl", "s3"], ["t"], name="to_windows"),
             helper.make_node("MatMul", ["t", "wqkv"], ["qkv"], name="qkv_mm"),
             helper.make_node("Reshape", ["qkv", "s5"], ["qkv5"], name="qkv_reshape"),
             helper.make_node("Transpose", ["qkv5"], ["qkvt"], name="qkv_transpose", perm=[2, 0, 3, 1, 4]),
             helper.make_node("Split", ["qkvt", "ones"], ["q1", "k1", "v1"], name="split", axis=0)]
    nodes += [helper.make_node("Squeeze", [f"{t}1", "ax0"], [t], name=f"{t}_squeeze") for t in "qkv"]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Relu", ["o"], ["y"], name="tail")]
    inits = [weight("wqkv", [ch, 3 * ch]), const("s5", np.array([windows, tokens, 3, heads, dim], np.int64)),
             const("s3", np.array([windows, tokens, ch], np.int64)),
             const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64))]
    source = [1, tokens, windows, ch] if unfold else [1, ch, windows, tokens]
    return save_model(tmp_path / f"win{windows}_{tokens}_{int(unfold)}.onnx", nodes, [value("x", source)],
                      [value("y", None)], inits, opset=13)


def test_windows_unfolded_into_the_batch_by_a_moving_transpose_fold_their_head_split_on_rk3566(catalog, tmp_path):
    # corpus timm_mobilevit_xxs stages.2.1: Transpose_1 (0,3,2,1) of [1,64,256,4] and Reshape_2 into [4,256,64]
    # (Target CPU) leave a plain batch: transformer attn/Reshape [4,256,3,4,16] and attn/Transpose are NPU
    report = check_graph(load_model(_windowed_attention(tmp_path, 4, 64, unfold=True)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("qkv_reshape").runs_on("npu", precision)
        assert report.verdict("qkv_transpose").runs_on("npu", precision)


# probe winattn:B:N:H:D and corpus nn_window_attention_pad_roll (B=25, N=49): with windows in the batch the head
# split is CPU; Q and K^T transposes follow the 8-byte rule; V needs none. One window (B=1) folds.
@pytest.mark.parametrize(("windows", "tokens"), [(4, 64), (4, 49), (1, 64)])
def test_windowed_attention_head_split_on_rk3566(catalog, tmp_path, windows, tokens):
    report = check_graph(load_model(_windowed_attention(tmp_path, windows, tokens)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        windowed = windows > 1
        assert report.verdict("qkv_reshape").runs_on("npu", precision) is not windowed
        assert report.verdict("qkv_transpose").runs_on("npu", precision) is not windowed
        qk_cpu = windowed and tokens % 4 != 0
        assert report.verdict("q_squeeze").runs_on("npu", precision) is not qk_cpu
        assert report.verdict("k_transpose").runs_on("npu", precision) is not qk_cpu
        if windowed:
            assert report.verdict("v_squeeze").runs_on("npu", precision)  # already (b, N, 1, d)


@pytest.mark.parametrize(("shape", "perm", "cpu"), [([1, 128, 32], [2, 0, 1], True), ([1, 32, 64], [1, 0, 2], False),
                                                    ([1, 16, 8], [0, 2, 1], False)])
def test_a_transpose_into_the_batch_axis_on_rk3566(catalog, tmp_path, shape, perm, cpu):
    # corpus nn_crnn_bilstm /rnn/Transpose (2,0,1): CPU; nn_bigru_1x64 /rnn/Transpose (1,0,2) of [1,32,64]: a Reshape
    path = _inner(tmp_path, [helper.make_node("Transpose", ["a"], ["b"], name="n", perm=perm)], shape)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu
    assert on_npu(catalog, path, "rk3588", "fp16")


def test_a_token_output_through_log_softmax_is_transposed_by_the_matmul_on_rk3566(catalog, tmp_path):
    # corpus nn_crnn_bilstm: /fc/MatMul -> /fc/Add -> LogSoftmax -> [1,32,37]: the MatMul's transpose is CPU (37)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "bias"], ["a"], name="bias_add"),
             helper.make_node("LogSoftmax", ["a"], ["y"], name="logsoftmax", axis=-1)]
    path = save_model(tmp_path / "ls.onnx", nodes, [value("x", [1, 32, 128])], [value("y", None)],
                      [weight("w", [128, 37]), weight("bias", [37])])
    assert not on_npu(catalog, path, "rk3566", "int8", node="mm")
    assert on_npu(catalog, path, "rk3566", "int8", node="bias_add")


@pytest.mark.parametrize("channels_last", [False, True])
def test_a_w_layernorm_of_an_nchw_map_is_transposed_on_rk3566(catalog, tmp_path, channels_last):
    # corpus nn_channel_layernorm_cnn: /ln_w (axis 3 of NCHW [1,32,16,16]) and its producer /dw/Conv are CPU;
    # /ln_c between a (0,2,3,1)/(0,3,1,2) pair folds
    inits = [weight("w", [8, 8, 1, 1]), const("s", np.ones(4, np.float32)), const("bias", np.zeros(4, np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="producer")]
    if channels_last:
        inits[1:] = [const("s", np.ones(8, np.float32)), const("bias", np.zeros(8, np.float32))]
        nodes += [helper.make_node("Transpose", ["c"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
                  helper.make_node("LayerNormalization", ["t", "s", "bias"], ["l"], name="ln", axis=3),
                  helper.make_node("Transpose", ["l"], ["b"], name="to_nchw", perm=[0, 3, 1, 2])]
    else:
        nodes.append(helper.make_node("LayerNormalization", ["c", "s", "bias"], ["b"], name="ln", axis=3))
    nodes.append(helper.make_node("Relu", ["b"], ["y"], name="tail"))
    path = save_model(tmp_path / f"lnw{int(channels_last)}.onnx", nodes, [value("x", [1, 8, 4, 4])],
                      [value("y", None)], inits)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="ln") is channels_last
        assert on_npu(catalog, path, "rk3566", precision, node="producer") is channels_last
    assert on_npu(catalog, path, "rk3576", "fp16", node="producer")


def test_the_producer_of_a_lone_instance_norm_is_transposed_on_rk3566(catalog, tmp_path):
    # corpus nn_instnorm_elu_selu: /0/Conv -> InstanceNormalization [1,16,64,64]: the transpose in is named /0/Conv
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="producer"),
             helper.make_node("InstanceNormalization", ["c", "s", "bias"], ["b"], name="inorm"),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / "inorm.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)],
                      [weight("w", [8, 8, 1, 1]), const("s", np.ones(8, np.float32)), const("bias", np.zeros(8, np.float32))])
    assert not on_npu(catalog, path, "rk3566", "int8", node="producer")
    assert not on_npu(catalog, path, "rk3566", "int8", node="inorm")
    assert on_npu(catalog, path, "rk3566", "int8", node="tail")


def _ln_inits(width):
    return [const("s", np.ones(width, np.float32)), const("bias", np.zeros(width, np.float32))]


@pytest.mark.parametrize(("to", "channels_last"), [([1, 2, 8, 8], True), ([1, 8, 2, 8], False)])
def test_a_last_axis_layernorm_needs_no_transpose_when_that_axis_carries_the_channel(catalog, tmp_path, to,
                                                                                     channels_last):
    # corpus timm_nest_tiny: conv map -> (0,2,3,1) -> window Reshapes -> LayerNorm over [1,16,196,96]: exNorm, NPU;
    # a Reshape that leaves W last (the channel stays on axis 1) keeps the W LayerNorm of nn_channel_layernorm_cnn
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="producer")]
    if channels_last:
        nodes.append(helper.make_node("Transpose", ["c"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]))
    else:
        nodes.append(helper.make_node("Identity", ["c"], ["t"], name="keep"))
    nodes += [helper.make_node("Reshape", ["t", "shape"], ["r"], name="blocks"),
              helper.make_node("LayerNormalization", ["r", "s", "bias"], ["b"], name="ln", axis=-1),
              helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / f"lnc{int(channels_last)}.onnx", nodes, [value("x", [1, 8, 4, 4])],
                      [value("y", None)],
                      [weight("w", [8, 8, 1, 1]), const("shape", np.array(to, np.int64)), *_ln_inits(to[-1])])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="ln") is channels_last


def test_channel_axis_follows_transposes_and_reshapes(tmp_path):
    from optimizer.catalog._checks import channel_axis

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Transpose", ["c"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "s1"], ["tokens"], name="tokens"),
             helper.make_node("MatMul", ["tokens", "wm"], ["m"], name="mm"),
             helper.make_node("Reshape", ["m", "s2"], ["heads"], name="heads"),
             helper.make_node("Reshape", ["c", "s3"], ["scattered"], name="scatter"),
             helper.make_node("Relu", ["heads"], ["y"], name="tail"),
             helper.make_node("Relu", ["scattered"], ["z"], name="tail2")]
    path = save_model(tmp_path / "axes.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None), value("z", None)],
                      [weight("w", [8, 8, 1, 1]), weight("wm", [8, 16]), const("s1", np.array([1, 16, 8], np.int64)),
                       const("s2", np.array([1, 16, 2, 8], np.int64)), const("s3", np.array([1, 4, 32], np.int64))])
    graph = load_model(path)
    assert channel_axis(graph, "c") == 1
    assert channel_axis(graph, "t") == 3  # moves with the permutation
    assert channel_axis(graph, "tokens") == 2  # [1, 4, 4, 8] -> [1, 16, 8]: same size, same elements after it
    assert channel_axis(graph, "heads") == 3  # 16 -> 2 heads x 8: the inner piece keeps the C2 blocks
    assert channel_axis(graph, "scattered") is None  # [1, 8, 4, 4] -> [1, 4, 32] scatters the channel


def _unbind_chain(tmp_path, split_heads):
    """torch nn.MultiheadAttention's in-projection as exported: tokens [64, 1, 128] -> qkv MatMul -> Reshape
    [64, 1, 3, 128] -> Unsqueeze -> 5-D Transpose (3,1,2,0,4) -> Squeeze -> Gather q; then (split_heads) the head
    split Reshape [64, 4, 32] and Transpose (1, 0, 2)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="qkv"),
             helper.make_node("Reshape", ["m", "s1"], ["r"], name="rs"),
             helper.make_node("Unsqueeze", ["r", "ax0"], ["u"], name="unsq"),
             helper.make_node("Transpose", ["u"], ["t"], name="unbind", perm=[3, 1, 2, 0, 4]),
             helper.make_node("Squeeze", ["t", "ax3"], ["sq"], name="sq"),
             helper.make_node("Gather", ["sq", "i0"], ["q"], name="pick", axis=0)]
    if split_heads:
        nodes += [helper.make_node("Reshape", ["q", "s2"], ["h"], name="heads"),
                  helper.make_node("Transpose", ["h"], ["o"], name="heads_first", perm=[1, 0, 2])]
    else:
        nodes.append(helper.make_node("Identity", ["q"], ["o"], name="keep"))
    nodes.append(helper.make_node("Relu", ["o"], ["y"], name="tail"))
    return save_model(tmp_path / f"unbind{int(split_heads)}.onnx", nodes, [value("x", [64, 1, 128])],
                      [value("y", None)],
                      [weight("w", [128, 384]), const("s1", np.array([64, 1, 3, 128], np.int64)),
                       const("ax0", np.array([0], np.int64)), const("ax3", np.array([3], np.int64)),
                       const("i0", np.array(0, np.int64)), const("s2", np.array([64, 4, 32], np.int64))])


@pytest.mark.parametrize("split_heads", [True, False])
def test_a_rank5_transpose_carries_its_layout_chain_on_rk3566(catalog, tmp_path, split_heads):
    # corpus nn_mha_d256_h8, nn_encoder_d128_h4_l2: Transpose_1 (3,1,2,0,4) is CPU (layers Transpose_1_output_0-rs_rs
    # and _tp), the head split Reshape_3 and Transpose_2 after it have no layer of their own; without a later member
    # that moves data across the channel the chain stays on the NPU (timm_deit_tiny_patch16_224 attn/Transpose)
    path = _unbind_chain(tmp_path, split_heads)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="unbind") is not split_heads
        if split_heads:
            assert on_npu(catalog, path, "rk3566", precision, node="heads")
            assert on_npu(catalog, path, "rk3566", precision, node="heads_first")
    assert on_npu(catalog, path, "rk3588", "fp16", node="unbind")


def test_a_4d_transpose_does_not_absorb_the_reshape_after_it_on_rk3566(catalog, tmp_path):
    # corpus yolo12n_320 attn: the Reshape [1,400,64] -> [1,20,20,64] after a rank-3 Transpose keeps its own CPU layer
    nodes = [helper.make_node("Transpose", ["a"], ["t"], name="swap", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "s"], ["b"], name="n")]
    path = _inner(tmp_path, nodes, [1, 8, 4, 4], [const("s", np.array([1, 32, 2, 2], np.int64))])
    assert not on_npu(catalog, path, "rk3566", "fp16")


@pytest.mark.parametrize(("perm", "cpu"), [([0, 2, 3, 4, 1], True), ([0, 2, 3, 1, 4], False)])
def test_a_reshape_that_scatters_the_channel_is_cpu_on_rk3566(catalog, tmp_path, perm, cpu):
    # corpus timm_nest_tiny attn/Reshape_1: P.V [1,3,16,196,32] -> (0,2,3,4,1) -> [1,16,196,32,3] -> [1,16,196,96]
    # joins the heads d-major (CPU); the heads-major join (0,2,3,1,4) of timm_deit keeps d innermost (NPU)
    nodes = [helper.make_node("MatMul", ["p", "v"], ["pv"], name="pv"),
             helper.make_node("Transpose", ["pv"], ["t"], name="swap", perm=perm),
             helper.make_node("Reshape", ["t", "s"], ["j"], name="join"),
             helper.make_node("Relu", ["j"], ["y"], name="tail")]
    path = save_model(tmp_path / f"join{int(cpu)}.onnx", nodes,
                      [value("p", [1, 3, 4, 16, 16]), value("v", [1, 3, 4, 16, 8])], [value("y", None)],
                      [const("s", np.array([1, 4, 16, 24], np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="join") is not cpu
    assert on_npu(catalog, path, "rk3588", "fp16", node="join")


@pytest.mark.parametrize(("split", "perm", "cpu"), [
    ([1, 4, 2, 3, 2, 8], [3, 0, 4, 2, 1, 5], True),  # Hiera mask units: the token axis 8 = 4 x 2 reversed
    ([1, 4, 2, 3, 2, 8], [3, 0, 4, 1, 2, 5], False),  # qkv/heads to the front, tokens kept in order (NeST, ViT)
])
def test_a_rank6_transpose_reordering_one_token_axis_is_cpu_on_rk3566(catalog, tmp_path, split, perm, cpu):
    # corpus timm_hiera_tiny_224 blocks.1 attn/Reshape [1,3136,576] -> [1,64,49,3,2,96] and attn/Transpose: CPU
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="qkv"),
             helper.make_node("Reshape", ["m", "s"], ["r"], name="split"),
             helper.make_node("Transpose", ["r"], ["t"], name="perm", perm=perm),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / f"mu{int(cpu)}.onnx", nodes, [value("x", [1, 8, 16])], [value("y", None)],
                      [weight("w", [16, 48]), const("s", np.array(split, np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="perm") is not cpu
        assert on_npu(catalog, path, "rk3566", precision, node="split") is not cpu


def test_a_2d_window_partition_stays_on_the_npu_on_rk3566(catalog, tmp_path):
    # corpus timm_nest_tiny levels.0: channels-last map [1,8,8,16] -> [1,2,4,2,4,16] -> (0,1,3,2,4,5): exWindow, NPU
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Transpose", ["c"], ["h"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["h", "s"], ["r"], name="split"),
             helper.make_node("Transpose", ["r"], ["t"], name="perm", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / "win.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)],
                      [weight("w", [16, 16, 1, 1]), const("s", np.array([1, 2, 4, 2, 4, 16], np.int64))])
    assert on_npu(catalog, path, "rk3566", "int8", node="perm")
    assert on_npu(catalog, path, "rk3566", "int8", node="split")


def _reduce_model(tmp_path, width, axis, name):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Mul", ["c", "c"], ["m"], name="producer"),
             helper.make_node("ReduceSum", ["m", "axes"], ["r"], name="reduce", keepdims=1),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    return save_model(tmp_path / f"{name}.onnx", nodes, [value("x", [1, 8, 4, width])], [value("y", None)],
                      [weight("w", [8, 8, 1, 1]), const("axes", np.array([axis], np.int64))])


@pytest.mark.parametrize(("width", "producer_cpu"), [(16, {"fp16": False, "int8": False}),
                                                     (12, {"fp16": False, "int8": True}),
                                                     (10, {"fp16": True, "int8": True})])
def test_a_reduce_over_w_is_transposed_into_the_channel_on_rk3566(catalog, tmp_path, width, producer_cpu):
    # corpus timm_mobilevitv2_050 attn/ReduceSum over W of [1,64,4,196]: Mul_output_0_tp NPU in FP16, CPU in INT8
    # (196 is not a multiple of 8), [1,96,4,49] CPU in both; the one-wide result's transpose back is always CPU
    path = _reduce_model(tmp_path, width, 3, f"rw{width}")
    for precision in ("fp16", "int8"):
        assert not on_npu(catalog, path, "rk3566", precision, node="reduce")
        assert on_npu(catalog, path, "rk3566", precision, node="producer") is not producer_cpu[precision]
    assert on_npu(catalog, path, "rk3588", "int8", node="reduce")


def test_a_reduce_over_the_channel_is_a_convolution_on_rk3566(catalog, tmp_path):
    path = _reduce_model(tmp_path, 10, 1, "rc")
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="reduce")
        assert on_npu(catalog, path, "rk3566", precision, node="producer")


def test_a_reduce_over_the_radix_axis_is_relaid_out_on_rk3566(catalog, tmp_path):
    # corpus timm_resnest14d conv2/Reshape [1,128,56,56] -> [1,2,64,56,56] and ReduceSum over axis 1: both CPU
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Reshape", ["c", "s"], ["r"], name="radix"),
             helper.make_node("ReduceSum", ["r", "axes"], ["t"], name="reduce", keepdims=0),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / "radix.onnx", nodes, [value("x", [1, 16, 4, 4])], [value("y", None)],
                      [weight("w", [16, 16, 1, 1]), const("s", np.array([1, 2, 8, 4, 4], np.int64)),
                       const("axes", np.array([1], np.int64))])
    for precision in ("fp16", "int8"):
        assert not on_npu(catalog, path, "rk3566", precision, node="reduce")
        assert not on_npu(catalog, path, "rk3566", precision, node="radix")
        assert on_npu(catalog, path, "rk3566", precision, node="conv")


def test_a_run_of_reshapes_is_carried_by_its_last_member_on_rk3566(catalog, tmp_path):
    # corpus timm_resnest14d conv2/rsoftmax: Softmax [1,2,1,64] -> Reshape_1 [1,128] -> [1,128,1,1] -> Reshape_2
    # [1,2,64,1,1]: one Transpose layer named after Reshape_2 (CPU); the earlier reshapes fold
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "s1"], ["f"], name="first"),
             helper.make_node("Reshape", ["f", "s2"], ["m"], name="middle"),
             helper.make_node("Reshape", ["m", "s3"], ["b"], name="last"),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / "run.onnx", nodes, [value("x", [1, 2, 1, 64])], [value("y", None)],
                      [const("s1", np.array([1, 128], np.int64)), const("s2", np.array([1, 128, 1, 1], np.int64)),
                       const("s3", np.array([1, 2, 64, 1, 1], np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="first")
        assert on_npu(catalog, path, "rk3566", precision, node="middle")
        assert not on_npu(catalog, path, "rk3566", precision, node="last")


@pytest.mark.parametrize(("shape", "cpu"), [([1, 128, 1, 1], False), ([1, 128, 2, 1], True)])
def test_a_reshape_of_a_vector_stays_on_the_npu_on_rk3566(catalog, tmp_path, shape, cpu):
    # corpus timm_resnest14d conv2/rsoftmax/Reshape (1,128,1,1) -> (1,2,1,64): a Reshape layer, Target NPU;
    # with two pixels the channel change is a gather (the probe's 1x16x8x8 -> 1x32x4x8)
    to = [1, 1, 2, 64] if shape[2] == 1 else [1, 1, 4, 64]
    path = _inner(tmp_path, [helper.make_node("Reshape", ["a", "s"], ["b"], name="n")], shape,
                  [const("s", np.array(to, np.int64))], name=f"vec{shape[2]}")
    assert on_npu(catalog, path, "rk3566", "fp16") is not cpu


@pytest.mark.parametrize("from_matmul", [True, False])
def test_a_seq_first_token_transpose_back_is_free_after_a_token_matmul_on_rk3566(catalog, tmp_path, from_matmul):
    # corpus nn_encoder_d128_h4_l2 / nn_decoder_d128_h4_l2 self_attn/Transpose_7 (1,0,2) of [64,1,128] after the
    # out-projection Gemm: no layer of its own; an RNN's sequence-first output (nn_lstm_1x128 /rnn/Transpose_1) is CPU
    nodes = [helper.make_node("Gemm", ["x", "w"], ["g"], name="proj") if from_matmul
             else helper.make_node("Relu", ["x"], ["g"], name="proj"),
             helper.make_node("Reshape", ["g", "s"], ["r"], name="unflatten"),
             helper.make_node("Transpose", ["r"], ["t"], name="n", perm=[1, 0, 2]),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    inits = [weight("w", [128, 128]), const("s", np.array([16, 1, 128], np.int64))]
    path = save_model(tmp_path / f"seq{int(from_matmul)}.onnx", nodes, [value("x", [16, 128])], [value("y", None)],
                      inits)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is from_matmul


@pytest.mark.parametrize(("perm", "cpu"), [([2, 0, 3, 4, 1], True), ([2, 0, 3, 1, 4], False)])
def test_a_head_split_putting_the_tokens_last_is_cpu_on_rk3566(catalog, tmp_path, perm, cpu):
    # corpus timm_edgenext_xx_small xca: [1,1024,144] -> [1,1024,3,4,12] -> (2,0,3,4,1): channels as rows, the
    # Reshape and the Transpose Target CPU in FP16 and INT8; the usual (2,0,3,1,4) keeps d innermost (NPU)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="qkv"),
             helper.make_node("Reshape", ["m", "s"], ["r"], name="split"),
             helper.make_node("Transpose", ["r"], ["t"], name="perm", perm=perm),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / f"xca{int(cpu)}.onnx", nodes, [value("x", [1, 64, 16])], [value("y", None)],
                      [weight("w", [16, 48]), const("s", np.array([1, 64, 3, 2, 8], np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="perm") is not cpu
        assert on_npu(catalog, path, "rk3566", precision, node="split") is not cpu


@pytest.mark.parametrize(("tokens", "cpu"), [(True, False), (False, True)])
def test_a_transpose_bringing_the_channel_to_axis_1_is_a_relabel_on_rk3566(catalog, tmp_path, tokens, cpu):
    # corpus timm_edgenext_xx_small Transpose_1 (0,3,1,2) of token-made [1,16,16,88] back to the map: no layer;
    # the same perm of an NCHW map (channel on axis 1) moves data
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm") if tokens
             else helper.make_node("Conv", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Transpose", ["m"], ["b"], name="n", perm=[0, 3, 1, 2]),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / f"tf{int(tokens)}.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)],
                      [weight("w", [8, 8] if tokens else [8, 8, 1, 1])])
    assert on_npu(catalog, path, "rk3566", "fp16") is not cpu


@pytest.mark.parametrize("talking_heads", [True, False])
def test_talking_heads_convolutions_relayout_exmatmul_scores_on_rk3566(catalog, tmp_path, talking_heads):
    # corpus timm_efficientformerv2_s0 token_mixer: MatMul -> talking_head1/Conv -> Softmax -> talking_head2/Conv ->
    # MatMul_1: the MatMul and talking_head2 are CPU (relayouts of exMatMul's (heads, N, 1, N) form)
    mix = [helper.make_node("Conv", ["s", "w1"], ["s1"], name="th1"),
           helper.make_node("Softmax", ["s1"], ["p0"], name="softmax", axis=-1),
           helper.make_node("Conv", ["p0", "w2"], ["p"], name="th2")] if talking_heads else \
          [helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1)]
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"), *mix,
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    path = save_model(tmp_path / f"th{int(talking_heads)}.onnx", nodes,
                      [value("q", [1, 4, 16, 8]), value("k", [1, 4, 8, 16]), value("v", [1, 4, 16, 8])],
                      [value("y", None)], [weight("w1", [4, 4, 1, 1]), weight("w2", [4, 4, 1, 1])])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="qk") is not talking_heads
        if talking_heads:
            assert not on_npu(catalog, path, "rk3566", precision, node="th2")
            assert on_npu(catalog, path, "rk3566", precision, node="th1")
    assert on_npu(catalog, path, "rk3588", "fp16", node="qk")


def test_a_reshape_after_a_token_reordering_transpose_takes_its_move_on_rk3566(catalog, tmp_path):
    # probe tools/probe_rknn_rk3566.py mu:8:8:16:1: qkv Reshape -> rank-6 Transpose swapping the token pieces ->
    # Reshape: the layers qf_rs and qf_rs_tp are named after the last Reshape (CPU); the first two have none
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="qkv"),
             helper.make_node("Reshape", ["m", "s"], ["r"], name="split"),
             helper.make_node("Transpose", ["r"], ["t"], name="perm", perm=[3, 0, 4, 2, 1, 5]),
             helper.make_node("Reshape", ["t", "s2"], ["b"], name="merge"),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / "mu.onnx", nodes, [value("x", [1, 8, 16])], [value("y", None)],
                      [weight("w", [16, 48]), const("s", np.array([1, 4, 2, 3, 2, 8], np.int64)),
                       const("s2", np.array([3, 1, 2, 8, 8], np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision, node="split")
        assert on_npu(catalog, path, "rk3566", precision, node="perm")
        assert not on_npu(catalog, path, "rk3566", precision, node="merge")


@pytest.mark.parametrize(("reader", "cpu"), [("Shape", False), ("Size", False), ("Relu", True)])
def test_a_shape_read_of_an_attention_operand_keeps_the_head_split_folded_on_rk3566(catalog, tmp_path, reader, cpu):
    # corpus timm_mobilenetv4_hybrid_medium, timm_tiny_vit_5m_224: Shape(q) feeds the scale arithmetic; the head
    # Reshape [1,256,7,7] -> [1,4,64,49] is an NPU Reshape layer. A second consumer that reads q's data does
    # leave q in the map form, and the Reshape + Transpose pair then moves data on its own.
    path = _conv_map_attention(tmp_path, 2, 16)
    model = onnx.load(path)
    model.graph.node.append(helper.make_node(reader, ["q"], ["q_read"], name="reader"))
    dtype = onnx.TensorProto.FLOAT if reader == "Relu" else onnx.TensorProto.INT64
    model.graph.output.append(value("q_read", None, dtype))
    onnx.save(model, path)
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("q_rs").runs_on("npu", precision) is not cpu, precision


def _head_join(tmp_path, dim, tokens=49, heads=4, v_first=False):
    """Attention whose result joins its heads back into a map: P.V [1,h,N,d] -> Transpose (0,2,1,3) -> Reshape
    [1,s,s,h*d] -> Transpose (0,3,1,2) (MobileNetV4's MQA), or V.P^T [1,h,d,N] -> Reshape [1,h*d,s,s] (YOLO11's
    PSA, LeViT-conv)."""
    side = int(tokens**0.5)
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1)]
    if v_first:
        nodes += [helper.make_node("Transpose", ["p"], ["pt"], name="p_t", perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", ["v", "pt"], ["o"], name="pv"),
                  helper.make_node("Reshape", ["o", "back"], ["o4"], name="join")]
        back = [1, heads * dim, side, side]
    else:
        nodes += [helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
                  helper.make_node("Transpose", ["o"], ["ot"], name="o_t", perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["ot", "back"], ["o3"], name="join"),
                  helper.make_node("Transpose", ["o3"], ["o4"], name="to_nchw", perm=[0, 3, 1, 2])]
        back = [1, side, side, heads * dim]
    nodes.append(helper.make_node("Relu", ["o4"], ["y"], name="tail"))
    inputs = [value("q", [1, heads, tokens, dim]), value("k", [1, heads, dim, tokens]),
              value("v", [1, heads, dim, tokens] if v_first else [1, heads, tokens, dim])]
    return save_model(tmp_path / f"join{dim}_{v_first}.onnx", nodes, inputs, [value("y", None)],
                      [const("back", np.array(back, np.int64))])


# corpus timm_mobilenetv4_hybrid_medium (P.V, d=64, N=49) and yolo11n_320 / timm_levit_conv_128s (V.P^T, d=64 / 32):
# the join Reshape layers (h,d,1,N) -> map are NPU in FP16 and INT8; d is V's head width (the channel exMatMul keeps),
# not a pixel axis of the map. probe tools/probe_rknn_rk3566.py mapjoin:2:D:64:VFIRST, both forms: join_reshape NPU
# at D=16 in FP16 and INT8, at D=12 NPU in FP16 and CPU in INT8 (the channels-last Transposes have no layer)
@pytest.mark.parametrize("v_first", [False, True])
@pytest.mark.parametrize(("dim", "cpu_in"), [(64, set()), (16, set()), (12, {"int8"})])
def test_a_head_join_takes_the_head_width_from_v_on_rk3566(catalog, tmp_path, v_first, dim, cpu_in):
    report = check_graph(load_model(_head_join(tmp_path, dim, v_first=v_first)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("join").runs_on("npu", precision) is not (precision in cpu_in), precision


def _v_chain(tmp_path, name, v_nodes, v_input, v_shape, q_shape, inits=()):
    """softmax(Q.K^T).V with V made by `v_nodes` from the graph input `v_input`, ending in tensor 'v'."""
    heads, tokens, dim = q_shape[-3], q_shape[-2], q_shape[-1]
    lead = list(q_shape[:-2])
    nodes = [*v_nodes, helper.make_node("MatMul", ["q", "k"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    del heads
    inputs = [value("q", q_shape), value("k", [*lead, dim, tokens]), value(v_input, v_shape)]
    return save_model(tmp_path / f"{name}.onnx", nodes, inputs, [value("y", None)], list(inits))


# corpus timm_mobilenetv4_hybrid_medium (MQA): value map [1,64,7,7] -> Reshape [1,64,49] -> Transpose (0,2,1) ->
# Unsqueeze [1,1,49,64]: layers Reshape_2_output_0_rs and Transpose_2 Target CPU (49 tokens), the Unsqueeze none;
# a map of 64 pixels is whole 8-byte groups (probe vop: the V transpose rule)
@pytest.mark.parametrize(("side", "cpu"), [(7, True), (8, False)])
def test_a_relabelled_map_made_v_is_transposed_with_its_reshape_on_rk3566(catalog, tmp_path, side, cpu):
    n = side * side
    nodes = [helper.make_node("Reshape", ["v0", "s3"], ["vr"], name="v_rs"),
             helper.make_node("Transpose", ["vr"], ["vt"], name="v_tr", perm=[0, 2, 1]),
             helper.make_node("Unsqueeze", ["vt", "ax1"], ["v"], name="v_unsq")]
    path = _v_chain(tmp_path, f"mqa{side}", nodes, "v0", [1, 64, side, side], [1, 4, n, 64],
                    [const("s3", np.array([1, 64, n], np.int64)), const("ax1", np.array([1], np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("v_rs").runs_on("npu", precision) is not cpu
        assert report.verdict("v_tr").runs_on("npu", precision) is not cpu
        assert report.verdict("v_unsq").runs_on("npu", precision)


# q/k/v unbound by a Transpose + Split on axis 0 + Squeeze. In front of a real batch (MobileViT's patch pixels,
# NesT's windows) the Split keeps its layer and carries V's transpose (corpus timm_mobilevit_xs
# Split_output_2_rs_tp, timm_nest_tiny: Target CPU, 30 / 196 tokens in INT8); with a batch of one (ViT) the
# Transpose + Split are one channel split and the Squeeze carries it (corpus timm_deit_tiny_patch16_224
# Squeeze_2_output_0_rs, 197 tokens: CPU)
@pytest.mark.parametrize("batch", [4, 1])
def test_the_split_unbinding_v_carries_its_transpose_only_before_a_real_batch_on_rk3566(catalog, tmp_path, batch):
    tokens, heads, dim = 30, 2, 16
    nodes = [helper.make_node("Transpose", ["qkv"], ["t"], name="unbind", perm=[2, 0, 3, 1, 4]),
             helper.make_node("Split", ["t", "ones"], ["q1", "k1", "v1"], name="split", axis=0),
             helper.make_node("Squeeze", ["v1", "ax0"], ["v"], name="v_sq")]
    path = _v_chain(tmp_path, f"unbind{batch}", nodes, "qkv", [batch, tokens, 3, heads, dim],
                    [batch, heads, tokens, dim],
                    [const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    carrier, folded = ("split", "v_sq") if batch > 1 else ("v_sq", "split")
    assert not report.verdict(carrier).runs_on("npu", "int8")  # 30 tokens: not whole 8-byte groups
    assert report.verdict(folded).runs_on("npu", "int8")
    assert "RKNN-EXMATMUL-B" in {v.rule for v in report.verdict(carrier).violations}


# corpus timm_tiny_vit_5m_224: Split on the last axis of [16,49,4,96] into q/k/v, V Transpose (0,2,1,3): layers
# Split_output_2_rs and Split_output_2_tp Target CPU (49 tokens), the Transpose none; 64 tokens: NPU
@pytest.mark.parametrize(("tokens", "cpu"), [(49, True), (64, False)])
def test_a_split_before_the_v_transpose_carries_it_on_rk3566(catalog, tmp_path, tokens, cpu):
    nodes = [helper.make_node("Split", ["qkv", "parts"], ["q1", "k1", "v1"], name="split", axis=3),
             helper.make_node("Transpose", ["v1"], ["v"], name="v_tr", perm=[0, 2, 1, 3])]
    path = _v_chain(tmp_path, f"tv{tokens}", nodes, "qkv", [4, tokens, 2, 96], [4, 2, tokens, 32],
                    [const("parts", np.array([32, 32, 32], np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("split").runs_on("npu", precision) is not cpu
        assert report.verdict("v_tr").runs_on("npu", precision)


def _unbound_token_attention(tmp_path, dim, heads=4, batch=4, tokens=64):
    """MobileViT's transformer: token MatMul -> qkv Reshape [B,N,3,h,d] -> Transpose (2,0,3,1,4) -> Split on axis 0
    -> Squeeze -> attention -> Transpose (0,2,1,3) -> join Reshape [B,N,h*d]."""
    ch = heads * dim
    nodes = [helper.make_node("MatMul", ["x", "w"], ["qkv"], name="qkv_mm"),
             helper.make_node("Reshape", ["qkv", "s5"], ["r5"], name="split_heads"),
             helper.make_node("Transpose", ["r5"], ["t5"], name="unbind", perm=[2, 0, 3, 1, 4]),
             helper.make_node("Split", ["t5", "ones"], ["q1", "k1", "v1"], name="split", axis=0)]
    nodes += [helper.make_node("Squeeze", [f"{t}1", "ax0"], [t], name=f"{t}_sq") for t in "qkv"]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["ot"], name="o_t", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "s3"], ["j"], name="join_heads"),
              helper.make_node("Relu", ["j"], ["y"], name="tail")]
    inits = [weight("w", [ch, 3 * ch]), const("s5", np.array([batch, tokens, 3, heads, dim], np.int64)),
             const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64)),
             const("s3", np.array([batch, tokens, ch], np.int64))]
    return save_model(tmp_path / f"mvit{dim}.onnx", nodes, [value("x", [batch, tokens, ch])], [value("y", None)],
                      inits)


# corpus timm_mobilevit_xs / xxs: the qkv head split Reshape (4,360,1,64) -> (48,30,1,64) and the join
# Reshape_1_output_0_rs of d=30 heads are Target CPU in FP16 and INT8; d=24 (stages.2) NPU in both; d=36
# (stages.4, 144 = 4 x 36) NPU in FP16, CPU in INT8: RKNN-HEAD-SPLIT's 8-byte rule through the q/k/v Split
@pytest.mark.parametrize(("dim", "cpu_in"), [(24, set()), (30, {"fp16", "int8"}), (36, {"int8"})])
def test_a_head_split_unbound_by_a_split_follows_the_8_byte_rule_on_rk3566(catalog, tmp_path, dim, cpu_in):
    report = check_graph(load_model(_unbound_token_attention(tmp_path, dim)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        for node in ("split_heads", "join_heads"):
            assert report.verdict(node).runs_on("npu", precision) is not (precision in cpu_in), (node, precision)


# corpus timm_tiny_vit_5m_224 stages.2 Reshape [1,14,14,160] -> [1,196,160] of a channels-last map: a Reshape layer
# (1,160,14,14) -> (1,160,1,196), Target NPU in FP16 and INT8 (the channel stays whole, the pixels are relabelled);
# merging the batch into the pixels moves data (corpus timm_hiera_tiny_224 unroll/Reshape_7 [64,7,7,96] ->
# [1,3136,96]: Target CPU), and so does changing the channel ([1,6,6,16] -> [1,36,4,4])
@pytest.mark.parametrize(("batch", "to", "cpu"), [(1, [1, 36, 16], False), (2, [1, 72, 16], True),
                                                  (1, [1, 36, 4, 4], True)])
def test_a_channels_last_map_reshaped_keeping_its_channel_is_a_relabel_on_rk3566(catalog, tmp_path, batch, to, cpu):
    nodes = [helper.make_node("Conv", ["x", "w"], ["m"], name="conv"),
             helper.make_node("Transpose", ["m"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "s"], ["r"], name="n"),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    path = save_model(tmp_path / f"cl{batch}_{len(to)}.onnx", nodes, [value("x", [batch, 8, 6, 6])],
                      [value("y", None)], [weight("w", [16, 8, 1, 1]), const("s", np.array(to, np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("n").runs_on("npu", precision) is not cpu, precision


def _classifier(tmp_path, classes):
    nodes = [helper.make_node("Conv", ["x", "w"], ["m"], name="conv"),
             helper.make_node("GlobalAveragePool", ["m"], ["g"], name="pool"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
    inits = [weight("w", [64, 3, 1, 1]), weight("wf", [classes, 64]), weight("bf", [classes])]
    return save_model(tmp_path / f"fc{classes}.onnx", nodes, [value("x", [1, 3, 4, 4])], [value("y", None)], inits)


# probe tools/probe_rknn_rk3566.py fcout:64:K: the Reshape (1,K,1,1) -> (1,K) into the logits is NPU at K = 8, 16,
# 24, NPU in FP16 / CPU in INT8 at K = 12, 20, CPU in both at K = 10, 1001 (corpus nn_tf_same_pad_cnn: K = 10)
@pytest.mark.parametrize(("classes", "cpu_in"), [(8, set()), (16, set()), (12, {"int8"}), (20, {"int8"}),
                                                 (10, {"fp16", "int8"}), (1001, {"fp16", "int8"}), (1000, set())])
def test_a_classifier_output_needs_whole_8_byte_groups_on_rk3566(catalog, tmp_path, classes, cpu_in):
    path = _classifier(tmp_path, classes)
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        cpu = precision in cpu_in
        assert report.verdict("fc").runs_on("npu", precision) is not cpu, precision
        if cpu:
            assert "RKNN-VECTOR-OUTPUT" in {v.rule for v in report.verdict("fc").violations}
    other = check_graph(load_model(path), catalog, "rk3576").verdict("fc")
    assert "RKNN-VECTOR-OUTPUT" not in {v.rule for v in other.violations}


def _split_windowed_attention(tmp_path, windows, tokens, heads=2, dim=16):
    """TinyViT's windowed attention: tokens of B windows [B, N, C] -> qkv MatMul -> Reshape [B, N, heads, 3d] ->
    Split on the last axis into q, k, v -> one Transpose each (q, v (0,2,1,3), k (0,2,3,1)) -> scale Muls ->
    softmax(Q.K^T).V."""
    ch = heads * dim
    nodes = [helper.make_node("Transpose", ["x"], ["xl"], name="to_tokens", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["xl", "s3"], ["t"], name="to_windows"),
             helper.make_node("MatMul", ["t", "wqkv"], ["qkv"], name="qkv_mm"),
             helper.make_node("Reshape", ["qkv", "s4"], ["qkv4"], name="qkv_reshape"),
             helper.make_node("Split", ["qkv4", "parts"], ["q1", "k1", "v1"], name="split", axis=3),
             helper.make_node("Transpose", ["q1"], ["q2"], name="q_transpose", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k1"], ["k2"], name="k_transpose", perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["v1"], ["v"], name="v_transpose", perm=[0, 2, 1, 3]),
             helper.make_node("Mul", ["q2", "scale"], ["q"], name="q_scale"),
             helper.make_node("Mul", ["k2", "scale"], ["kt"], name="k_scale"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    inits = [weight("wqkv", [ch, 3 * ch]), const("s4", np.array([windows, tokens, heads, 3 * dim], np.int64)),
             const("s3", np.array([windows, tokens, ch], np.int64)),
             const("parts", np.array([dim, dim, dim], np.int64)), const("scale", np.array(0.25, np.float32))]
    return save_model(tmp_path / f"swin{windows}_{tokens}.onnx", nodes, [value("x", [1, ch, windows, tokens])],
                      [value("y", None)], inits, opset=13)


# corpus timm_tiny_vit_5m_224 (16 windows of 49 tokens): attn/Reshape (16,384,1,49) -> (16,4,96,49) Target CPU, the
# scaled q and k relaid out into exMatMul's form (Mul_output_0_tp_rs, Mul_1_output_0_rs) CPU, V's Split_output_2_rs
# and _tp CPU, FP16 and INT8; the Q/K transposes follow the 8-byte rule (64 tokens: NPU); one window folds
@pytest.mark.parametrize(("windows", "tokens"), [(4, 49), (4, 64), (1, 64)])
def test_a_windowed_head_split_through_a_split_on_rk3566(catalog, tmp_path, windows, tokens):
    report = check_graph(load_model(_split_windowed_attention(tmp_path, windows, tokens)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        windowed = windows > 1
        assert report.verdict("qkv_reshape").runs_on("npu", precision) is not windowed
        qk_cpu = windowed and tokens % 4 != 0
        for node in ("q_scale", "k_scale"):
            assert report.verdict(node).runs_on("npu", precision) is not qk_cpu, (node, precision)
        assert report.verdict("split").runs_on("npu", precision) is not (tokens % 4 != 0)  # V's transpose


def test_a_rank6_unbind_keeps_the_split_as_the_v_carrier_on_rk3566(catalog, tmp_path):
    # corpus timm_nest_tiny levels.2 (one block): Transpose (3,0,4,1,2,5) of [1,1,196,3,12,32] is a Reshape + Gather
    # and the Split a Split_to4D layer of its own, which carries V's transpose (Split_output_2_rs_tp, CPU in INT8)
    tokens, heads, dim = 30, 2, 16
    nodes = [helper.make_node("Transpose", ["qkv"], ["t"], name="unbind", perm=[3, 0, 4, 1, 2, 5]),
             helper.make_node("Split", ["t", "ones"], ["q1", "k1", "v1"], name="split", axis=0),
             helper.make_node("Squeeze", ["v1", "ax0"], ["v"], name="v_sq")]
    path = _v_chain(tmp_path, "unbind6", nodes, "qkv", [1, 1, tokens, 3, heads, dim], [1, heads, 1, tokens, dim],
                    [const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    assert not report.verdict("split").runs_on("npu", "int8")
    assert report.verdict("v_sq").runs_on("npu", "int8")


# corpus yolov8n_obb_320 / yolo11n_obb_320 / yolov8n_pose_320 heads: Reshape [1,1,40,40] -> [1,1,1600] (and the
# 20x20, 10x10 levels) is Target NPU in FP16 and INT8: a rank-3 [1,C,N] is held as (1,C,1,N), the pixels stay in W;
# into a rank-2 vector [1,C*H*W] (held as (1,K,1,1)) they move into the channel (tv_alexnet /Flatten: CPU)
@pytest.mark.parametrize(("shape", "to", "cpu"), [([1, 1, 8, 8], [1, 1, 64], False), ([1, 4, 8, 8], [1, 4, 64], False),
                                                  ([1, 1, 8, 8], [1, 64], True)])
def test_a_map_reshaped_into_rows_keeps_its_pixels_in_w_on_rk3566(catalog, tmp_path, shape, to, cpu):
    path = _inner(tmp_path, [helper.make_node("Reshape", ["a", "s"], ["b"], name="n")], shape,
                  [const("s", np.array(to, np.int64))])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu, precision


@pytest.mark.parametrize("branch_first", [False, True])
def test_a_residual_add_takes_its_token_layout_from_the_branch_on_rk3566(catalog, tmp_path, branch_first):
    # corpus timm_vit_little_patch16_reg4_gap_256: the residual stream starts at a Concat of register tokens that
    # fixes no layout, the MLP branch's MatMul does; the head's token mean /ReduceMean then has its CPU transpose
    # back (ReduceMean_output_0_tp_rs, FP16 and INT8), whichever input of the residual Add comes first
    adds = ["mm", "x"] if branch_first else ["x", "mm"]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="fc"),
             helper.make_node("Add", adds, ["r"], name="residual"),
             helper.make_node("ReduceMean", ["r"], ["y"], name="n", axes=[1], keepdims=0)]
    path = save_model(tmp_path / f"res{int(branch_first)}.onnx", nodes, [value("x", [1, 64, 32])], [value("y", None)],
                      [weight("w", [32, 32])], opset=13)
    for precision in ("fp16", "int8"):
        assert not on_npu(catalog, path, "rk3566", precision), precision
    assert on_npu(catalog, path, "rk3562", "int8")


def _transpose_talking_heads(tmp_path, side, pre_perm=(0, 2, 3, 1), heads=4):
    """CaiT's talking heads: the scores' heads mixed by Transpose (0,2,3,1) -> MatMul [h, h] -> Add -> Transpose
    (0,3,1,2), before the Softmax (side 1), after it (side 2) or both (side 3)."""
    nodes = [helper.make_node("MatMul", ["q", "k"], ["s"], name="qk")]
    inits = []

    def mix(src, tag):
        nodes.extend([helper.make_node("Transpose", [src], [f"{tag}_t"], name=f"{tag}_tr_in", perm=list(pre_perm)),
                      helper.make_node("MatMul", [f"{tag}_t", f"w_{tag}"], [f"{tag}_mm"], name=f"{tag}_matmul"),
                      helper.make_node("Add", [f"{tag}_mm", f"b_{tag}"], [f"{tag}_b"], name=f"{tag}_bias"),
                      helper.make_node("Transpose", [f"{tag}_b"], [f"{tag}_m"], name=f"{tag}_tr_out",
                                       perm=[0, 3, 1, 2])])
        inits.extend([weight(f"w_{tag}", [heads, heads]), weight(f"b_{tag}", [heads])])
        return f"{tag}_m"

    scores = mix("s", "pre") if side & 1 else "s"
    nodes.append(helper.make_node("Softmax", [scores], ["p0"], name="softmax", axis=-1))
    probs = mix("p0", "post") if side & 2 else "p0"
    nodes += [helper.make_node("MatMul", [probs, "v"], ["o"], name="pv"),
              helper.make_node("Relu", ["o"], ["y"], name="tail")]
    return save_model(tmp_path / f"tth{side}.onnx", nodes,
                      [value("q", [1, heads, 16, 8]), value("k", [1, heads, 8, 16]), value("v", [1, heads, 16, 8])],
                      [value("y", None)], inits)


# probe tools/probe_rknn_rk3566.py talk:4:32:64:1:SIDE and talk:4:32:49:1:3 (FP16 and INT8, 2026-12-01): the
# Transpose bringing exMatMul's scores heads-last carries the CPU relayout out of (h, N, 1, N) (pre_t_tp_rs_tp#1,
# post_t_tp_rs_tp#1); the one bringing the mixed heads back is CPU when it feeds P.V directly (post_m_tp_rs#3),
# NPU when a Softmax follows (the relayout after the Softmax is named after the first Transpose); with both mixes
# the scores stay in the Conv's form through the Softmax, so post_tr_in has no layer (corpus timm_cait_xxs24_224
# Transpose_2 and Transpose_5 CPU, Transpose_3 and Transpose_4 NPU, FP16 and INT8)
@pytest.mark.parametrize(("side", "cpu"), [
    (3, {"pre_tr_in", "post_tr_out"}), (1, {"pre_tr_in"}), (2, {"post_tr_in", "post_tr_out"})])
def test_talking_heads_by_transpose_and_matmul_relayout_exmatmul_scores_on_rk3566(catalog, tmp_path, side, cpu):
    path = _transpose_talking_heads(tmp_path, side)
    report = check_graph(load_model(path), catalog, "rk3566")
    names = {"pre_tr_in", "pre_tr_out", "post_tr_in", "post_tr_out"} if side == 3 else \
        ({"pre_tr_in", "pre_tr_out"} if side == 1 else {"post_tr_in", "post_tr_out"})
    for precision in ("fp16", "int8"):
        for name in names:
            assert report.verdict(name).runs_on("npu", precision) is (name not in cpu), (name, precision)
        assert report.verdict("qk").runs_on("npu", precision)
    assert check_graph(load_model(path), catalog, "rk3588").verdict(min(cpu)).runs_on("npu", "fp16")


def test_a_transpose_keeping_the_heads_is_no_talking_heads_relayout_on_rk3566(catalog, tmp_path):
    # just outside: the same graph with a Transpose that does not bring the heads last (the MatMul mixes the
    # last score axis, not the heads) is not this relayout
    path = _transpose_talking_heads(tmp_path, 2, pre_perm=(0, 1, 3, 2), heads=16)
    violations_ = check_graph(load_model(path), catalog, "rk3566").verdict("post_tr_in").violations
    assert "RKNN-EXMATMUL-CONV" not in {v.rule for v in violations_}


# probe tools/probe_rknn_rk3566.py vitattn:64:2:32:1:1 and vitattn:49:2:40:1:1 (FP16 and INT8, 2026-12-01): Q added
# to P.V before the head join (MViTv2's residual pooling) becomes exMatMul's third input; the join Transpose
# (0,2,1,3) and Reshape have no layer of their own, as without the Add (vitattn:64:2:32:1:0)
@pytest.mark.parametrize("residual", [False, True])
def test_a_head_join_after_a_residual_add_on_pv_folds_on_rk3566(catalog, tmp_path, residual):
    nodes = [helper.make_node("MatMul", ["p", "v"], ["o0" if residual else "o"], name="pv"),
             *([helper.make_node("Add", ["o0", "q"], ["o"], name="res")] if residual else []),
             helper.make_node("Transpose", ["o"], ["ot"], name="n", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["ot", "s"], ["j"], name="join"),
             helper.make_node("MatMul", ["j", "w"], ["y"], name="proj")]
    path = save_model(tmp_path / f"rj{int(residual)}.onnx", nodes,
                      [value("p", [1, 2, 49, 49]), value("v", [1, 2, 49, 40]), value("q", [1, 2, 49, 40])],
                      [value("y", None)], [const("s", np.array([1, 49, 80], np.int64)), weight("w", [80, 80])])
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision), precision


def test_a_transpose_of_a_map_after_an_add_still_moves_data_on_rk3566(catalog, tmp_path):
    # just outside: the same (0,2,1,3) after an Add of two maps (no MatMul behind it) is a gather
    nodes = [helper.make_node("Add", ["a", "a"], ["s"], name="add"),
             helper.make_node("Transpose", ["s"], ["b"], name="n", perm=[0, 2, 1, 3])]
    path = _inner(tmp_path, nodes, [1, 8, 4, 4])
    assert not on_npu(catalog, path, "rk3566")


# probe tools/probe_rknn_rk3566.py bilstm:8:8:32:16:1 (FP16 and INT8, 2026-12-01): (0,2,1,3) + Reshape + (1,0,2)
# swap H and W of [1, H, W, C] twice, composing to a reshape: none of them has a layer (corpus timm_sequencer2d_s
# rnn_tokens/Transpose and rnn_v/Transpose: NPU, FP16 and INT8)
@pytest.mark.parametrize("swap_back", [True, False])
def test_a_layout_run_composing_to_a_reshape_lowers_to_nothing_on_rk3566(catalog, tmp_path, swap_back):
    nodes = [helper.make_node("Transpose", ["a"], ["t"], name="n", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "s"], ["r" if swap_back else "b"], name="r"),
             *([helper.make_node("Transpose", ["r"], ["b"], name="back", perm=[1, 0, 2])] if swap_back else [])]
    path = _inner(tmp_path, nodes, [1, 8, 6, 16], [const("s", np.array([6, 8, 16], np.int64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("n").runs_on("npu", precision) is swap_back, precision
        if swap_back:
            assert report.verdict("back").runs_on("npu", precision)


def _bilstm(tmp_path, batch, lstm=True):
    """Y [seq, 2, batch, hidden] of a bidirectional LSTM (or a Relu of the same shape) -> Transpose (0,2,1,3) ->
    Reshape [seq, batch, 2*hidden]: torch's direction join."""
    seq, hidden = 8, 16
    first = helper.make_node("LSTM", ["x", "w", "r"], ["y0"], name="lstm", direction="bidirectional",
                             hidden_size=hidden) if lstm else helper.make_node("Relu", ["x"], ["y0"], name="lstm")
    nodes = [first,
             helper.make_node("Transpose", ["y0"], ["t"], name="n", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "s"], ["j"], name="join"),
             helper.make_node("Relu", ["j"], ["y"], name="tail")]
    x = [seq, batch, 32] if lstm else [seq, 2, batch, hidden]
    return save_model(tmp_path / f"bl{batch}{int(lstm)}.onnx", nodes, [value("x", x)], [value("y", None)],
                      [weight("w", [2, 4 * hidden, 32]), weight("r", [2, 4 * hidden, hidden]),
                       const("s", np.array([seq, batch, 2 * hidden], np.int64))])


# probe tools/probe_rknn_rk3566.py bilstm:8:8:32:16:0 and bilstm:8:1:32:16:0 (FP16 and INT8, 2026-12-01): exLSTM
# writes Y as (seq, 2, batch, hidden) and the join Transpose has no layer of its own at batch 8 or 1 (corpus
# timm_sequencer2d_s rnn_h/Transpose_1 at batch 32 and 16: NPU)
@pytest.mark.parametrize(("batch", "lstm", "cpu"), [(4, True, False), (1, True, False), (4, False, True)])
def test_the_direction_join_of_a_bidirectional_lstm_is_exlstm_s_own_on_rk3566(catalog, tmp_path, batch, lstm, cpu):
    path = _bilstm(tmp_path, batch, lstm)
    for precision in ("fp16", "int8"):
        assert on_npu(catalog, path, "rk3566", precision) is not cpu, precision


def _window_partition(tmp_path, n, ws=7, ch=64, flat=True, nw=None):
    """Swin's window partition of channels-last tokens [1, n*ws, nw*ws, C] (made by a MatMul, as Swin's by its
    LayerNorm) into n*nw windows (nw = n unless given), a token MatMul (+ bias), the reverse."""
    nw = n if nw is None else nw
    b, side = n * nw, n * ws
    nodes = [helper.make_node("MatMul", ["x", "wx"], ["xm"], name="embed"),
             helper.make_node("Reshape", ["xm", "s6"], ["x6"], name="part_reshape"),
             helper.make_node("Transpose", ["x6"], ["xt"], name="part_transpose", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["xt", "s_win"], ["xw"], name="part_windows")]
    tokens = "xw"
    if flat:
        nodes.append(helper.make_node("Reshape", ["xw", "s_tok"], ["xf"], name="part_tokens"))
        tokens = "xf"
    nodes += [helper.make_node("MatMul", [tokens, "wm"], ["m0"], name="token_matmul"),
              helper.make_node("Add", ["m0", "bm"], ["m"], name="bias"),
              helper.make_node("Reshape", ["m", "s_back6"], ["m6"], name="rev_reshape"),
              helper.make_node("Transpose", ["m6"], ["mt"], name="rev_transpose", perm=[0, 1, 3, 2, 4, 5]),
              helper.make_node("Reshape", ["mt", "s_map"], ["ml"], name="rev_map"),
              helper.make_node("Relu", ["ml"], ["y"], name="tail")]
    inits = [weight("wx", [ch, ch]), weight("wm", [ch, ch]), weight("bm", [ch]),
             const("s6", np.array([1, n, ws, nw, ws, ch], np.int64)),
             const("s_win", np.array([b, ws, ws, ch], np.int64)), const("s_tok", np.array([b, ws * ws, ch], np.int64)),
             const("s_back6", np.array([1, n, nw, ws, ws, ch], np.int64)),
             const("s_map", np.array([1, side, nw * ws, ch], np.int64))]
    return save_model(tmp_path / f"wp{n}{nw}{ws}{int(flat)}.onnx", nodes, [value("x", [1, side, nw * ws, ch])],
                      [value("y", None)], inits)


# probe tools/probe_rknn_rk3566.py winpart:N:NW:WS:64:1 (FP16 and INT8, 2026-12-01): with a square grid of 4, 9, 16
# or 25 windows the Reshape into tokens (xf_rs) is a CPU relayout out of exWindow's form, at window size 7 or 8;
# the token op before the reverse carries the relayout back (m_rs_tp) with 4-16 windows, not with 25 (there it is
# named after the token reshape); one window, or a 4x5 / 2x8 grid, has no CPU layer at all
@pytest.mark.parametrize(("n", "ws", "nw", "cpu"), [
    (2, 7, None, {"part_tokens", "bias"}), (2, 8, None, {"part_tokens", "bias"}), (4, 7, None, {"part_tokens", "bias"}),
    (5, 7, None, {"part_tokens"}), (1, 7, None, set()), (4, 7, 5, set()), (2, 7, 8, set())])
def test_windowed_tokens_of_a_window_partition_are_relaid_out_on_rk3566(catalog, tmp_path, n, ws, nw, cpu):
    path = _window_partition(tmp_path, n, ws, nw=nw)
    report = check_graph(load_model(path), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        for name in ("part_tokens", "bias"):
            assert report.verdict(name).runs_on("npu", precision) is (name not in cpu), (name, precision)
            if name in cpu:
                assert "RKNN-WINDOW-TOKENS" in {v.rule for v in report.verdict(name).violations}
        for name in ("part_reshape", "part_transpose", "part_windows", "rev_reshape", "rev_transpose"):
            assert report.verdict(name).runs_on("npu", precision), (name, precision)
    assert check_graph(load_model(path), catalog, "rk3588").verdict("part_tokens").runs_on("npu", "int8")


def test_rank4_windows_are_no_windowed_tokens_on_rk3566(catalog, tmp_path):
    # just outside: windows kept as [B, ws, ws, C] (MaxViT: corpus timm_maxvit_rmlp_pico_rw_256 attn_block/Reshape_1
    # and attn/proj/Add, no layer of their own in FP16 and INT8) are not made tokens by the partition
    report = check_graph(load_model(_window_partition(tmp_path, 2, flat=False)), catalog, "rk3566")
    for name in ("part_windows", "bias"):
        assert "RKNN-WINDOW-TOKENS" not in {v.rule for v in report.verdict(name).violations}


def _partitioned_attention(tmp_path, intermediate, cosine=False):
    """Windowed attention on 4 windows of 49 tokens cut by a 2-D window partition of channels-last tokens, through
    [4, 7, 7, C] (Swin) or straight into [4, 49, C] (TinyViT)."""
    ch, heads, dim = 32, 2, 16
    nodes = [helper.make_node("MatMul", ["x", "wx"], ["xm"], name="embed"),
             helper.make_node("Reshape", ["xm", "s6"], ["x6"], name="part_reshape"),
             helper.make_node("Transpose", ["x6"], ["xt"], name="part_transpose", perm=[0, 1, 3, 2, 4, 5])]
    if intermediate:
        nodes += [helper.make_node("Reshape", ["xt", "s_win"], ["xw"], name="part_windows"),
                  helper.make_node("Reshape", ["xw", "s3"], ["t"], name="to_windows")]
    else:
        nodes += [helper.make_node("Reshape", ["xt", "s3"], ["t"], name="to_windows")]
    nodes += [helper.make_node("MatMul", ["t", "wqkv"], ["qkv"], name="qkv_mm"),
              helper.make_node("Reshape", ["qkv", "s5"], ["qkv5"], name="qkv_reshape"),
              helper.make_node("Transpose", ["qkv5"], ["qkvt"], name="qkv_transpose", perm=[2, 0, 3, 1, 4]),
              helper.make_node("Split", ["qkvt", "ones"], ["q1", "k1", "v1"], name="split", axis=0)]
    nodes += [helper.make_node("Squeeze", [f"{t}1", "ax0"], [t if t == "v" or not cosine else f"{t}0"],
                               name=f"{t}_squeeze") for t in "qkv"]
    if cosine:  # SwinV2-cr: q and k L2-normalised over d
        for t in "qk":
            nodes += [helper.make_node("ReduceL2", [f"{t}0"], [f"{t}n"], name=f"{t}_l2", axes=[-1], keepdims=1),
                      helper.make_node("Div", [f"{t}0", f"{t}n"], [t], name=f"{t}_div")]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Relu", ["o"], ["y"], name="tail")]
    inits = [weight("wx", [ch, ch]), weight("wqkv", [ch, 3 * ch]),
             const("s6", np.array([1, 2, 7, 2, 7, ch], np.int64)), const("s_win", np.array([4, 7, 7, ch], np.int64)),
             const("s3", np.array([4, 49, ch], np.int64)), const("s5", np.array([4, 49, 3, heads, dim], np.int64)),
             const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64))]
    return save_model(tmp_path / f"pa{int(intermediate)}{int(cosine)}.onnx", nodes, [value("x", [1, 14, 14, ch])],
                      [value("y", None)], inits, opset=13)


# corpus timm_swin_tiny_patch4_window7_224, timm_davit_tiny, timm_gcvit_xxtiny (partition through [B, 7, 7, C],
# relaid into the batch by RKNN-WINDOW-TOKENS): attn/Reshape CPU, attn/Transpose and the Q/K operands (49 tokens)
# no layer, FP16 and INT8; straight into the tokens (nn_window_attention_pad_roll, timm_tiny_vit_5m_224) the head
# Transpose and Q/K stay CPU (RKNN-WINDOW-HEADS)
@pytest.mark.parametrize("intermediate", [True, False])
def test_windows_relaid_into_the_batch_fold_their_head_transpose_on_rk3566(catalog, tmp_path, intermediate):
    report = check_graph(load_model(_partitioned_attention(tmp_path, intermediate)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert not report.verdict("to_windows").runs_on("npu", precision)  # RKNN-WINDOW-TOKENS either way
        assert not report.verdict("qkv_reshape").runs_on("npu", precision)
        assert report.verdict("qkv_transpose").runs_on("npu", precision) is intermediate, precision
        assert report.verdict("q_squeeze").runs_on("npu", precision) is intermediate, precision


# probe tools/probe_rknn_rk3566.py swinattn:2:7:2:32:1 against :0 (FP16 and INT8, 2026-12-01): with q and k
# L2-normalised over d the norm runs with the heads still in H, (B, d, h, N): the head Transpose (qt_rs_swap_tp#1),
# q's normalising Div (qu_tp#1), K^T (k_transpose#1) and V's Split (v1_rs_tp) are CPU layers; without the norm
# none of the first three has a layer (corpus timm_swinv2_cr_tiny_ns_224 attn/Transpose, Div_1, Transpose_1: CPU)
def test_cosine_attention_keeps_the_windowed_head_relayouts_on_rk3566(catalog, tmp_path):
    report = check_graph(load_model(_partitioned_attention(tmp_path, True, cosine=True)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        for name in ("qkv_transpose", "q_div", "k_transpose", "split"):
            assert not report.verdict(name).runs_on("npu", precision), (name, precision)


def _eca(tmp_path, channels, conv=True):
    """ECA's gate: [1, C, 8, 8] -> ReduceMean (2, 3) -> Reshape [1, 1, C] -> Conv1d (k 3) -> Sigmoid -> Reshape
    [1, C, 1, 1] -> Mul; without `conv` the sequence only passes a Relu."""
    mid = helper.make_node("Conv", ["q", "wk"], ["cv"], name="eca_conv", pads=[1, 1]) if conv else \
        helper.make_node("Relu", ["q"], ["cv"], name="eca_conv")
    nodes = [helper.make_node("ReduceMean", ["x"], ["g"], name="pool", axes=[2, 3], keepdims=0),
             helper.make_node("Reshape", ["g", "s_seq"], ["q"], name="to_seq"), mid,
             helper.make_node("Sigmoid", ["cv"], ["gate"], name="gate"),
             helper.make_node("Reshape", ["gate", "s_vec"], ["gv"], name="to_vec"),
             helper.make_node("Mul", ["x", "gv"], ["y"], name="scale")]
    return save_model(tmp_path / f"eca{channels}{int(conv)}.onnx", nodes, [value("x", [1, channels, 8, 8])],
                      [value("y", None)], [weight("wk", [1, 1, 3]), const("s_seq", np.array([1, 1, channels], np.int64)),
                                           const("s_vec", np.array([1, channels, 1, 1], np.int64))], opset=13)


# probe tools/probe_rknn_rk3566.py eca:64:5:1, eca:100:5:1, eca:64:3:0 (FP16 and INT8, 2026-12-01): q_rs and cv_rs,
# the transposes into and out of the one-channel sequence, are CPU layers named after the Reshape and the Conv
@pytest.mark.parametrize("channels", [64, 100])
def test_eca_channel_sequence_is_transposed_on_rk3566(catalog, tmp_path, channels):
    report = check_graph(load_model(_eca(tmp_path, channels)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert not report.verdict("to_seq").runs_on("npu", precision)
        assert not report.verdict("eca_conv").runs_on("npu", precision)
        for name in ("gate", "to_vec", "scale"):
            assert report.verdict(name).runs_on("npu", precision), (name, precision)
    assert check_graph(load_model(_eca(tmp_path, channels)), catalog, "rk3588").verdict("to_seq").runs_on("npu", "int8")


def test_a_one_channel_sequence_feeding_no_conv_is_not_ecas_transpose_on_rk3566(catalog, tmp_path):
    # just outside: the same reshape into [1, 1, C] without the Conv (a class token's Unsqueeze is another case of
    # it: corpus timm_cait_xxs24_224, NPU)
    report = check_graph(load_model(_eca(tmp_path, 64, conv=False)), catalog, "rk3566")
    for name in ("to_seq", "eca_conv"):
        assert "RKNN-VECTOR-SEQUENCE" not in {v.rule for v in report.verdict(name).violations}


def _slice_heads(tmp_path, tokens, dim, heads=4):
    """The probe's CoAtNet attention: qkv Conv -> Reshape [1, h, 3d, N] -> three Slices -> q, v Transposes ->
    softmax(q @ k).v -> back to the map."""
    side = int(tokens**0.5)
    nodes = [helper.make_node("Conv", ["x", "wqkv"], ["qkv"], name="qkv_conv"),
             helper.make_node("Reshape", ["qkv", "s"], ["r"], name="head_reshape")]
    nodes += [helper.make_node("Slice", ["r", f"st{i}", f"en{i}", "ax2"], [f"{t}0"], name=f"{t}_slice")
              for i, t in enumerate("qkv")]
    nodes += [helper.make_node("Transpose", ["q0"], ["q"], name="q_tr", perm=[0, 1, 3, 2]),
              helper.make_node("Transpose", ["v0"], ["v"], name="v_tr", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "k0"], ["a"], name="qk"),
              helper.make_node("Softmax", ["a"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["ot"], name="o_tr", perm=[0, 1, 3, 2]),
              helper.make_node("Reshape", ["ot", "s4"], ["y"], name="o_rs")]
    inits = [weight("wqkv", [3 * heads * dim, 16, 1, 1]), const("s", np.array([1, heads, 3 * dim, tokens], np.int64)),
             const("s4", np.array([1, heads * dim, side, side], np.int64)), const("ax2", np.array([2], np.int64))]
    for i in range(3):
        inits += [const(f"st{i}", np.array([i * dim], np.int64)), const(f"en{i}", np.array([(i + 1) * dim], np.int64))]
    return save_model(tmp_path / f"sh{tokens}_{dim}.onnx", nodes, [value("x", [1, 16, side, side])],
                      [value("y", None)], inits, opset=13)


# probe tools/probe_rknn_rk3566.py slicehead:4:32:196, :4:32:64, :4:20:64 (FP16 and INT8, 2026-12-01): the head
# Reshape is exMatMul's layout (NPU unless the 8-byte rule fails: d = 20 in INT8), q/k/v cut apart by Slices, and
# V's transpose is named after its Slice (v0_tp_rs): CPU in INT8 at 196 tokens or d = 20, NPU otherwise; the
# Transposes themselves have no layer (corpus timm_coatnet_nano_rw_224 attn/Reshape NPU, attn/Slice_2 CPU in INT8)
@pytest.mark.parametrize(("tokens", "dim", "cpu_in"), [(196, 32, {"int8"}), (64, 32, set()), (64, 20, {"int8"})])
def test_qkv_cut_apart_by_slices_on_rk3566(catalog, tmp_path, tokens, dim, cpu_in):
    report = check_graph(load_model(_slice_heads(tmp_path, tokens, dim)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        assert report.verdict("v_slice").runs_on("npu", precision) is (precision not in cpu_in), precision
        assert report.verdict("v_tr").runs_on("npu", precision), precision
        assert report.verdict("head_reshape").runs_on("npu", precision) is not (dim == 20 and precision == "int8")


def _window_4d_attention(tmp_path, n):
    """MaxViT's block attention on n x n windows of 8 x 8 kept 4-D: channels-last tokens (a MatMul) -> partition ->
    [B, 8, 8, C] -> qkv MatMul -> Reshape [B, 64, h, 3d] -> Transpose (0,2,1,3) -> Slices -> attention ->
    Transpose (0,2,1,3) -> Reshape [B, 8, 8, C] -> proj MatMul."""
    ws, heads, dim = 8, 2, 32
    b, ch, side = n * n, heads * dim, n * ws
    nodes = [helper.make_node("MatMul", ["x", "wx"], ["xm"], name="embed"),
             helper.make_node("Reshape", ["xm", "s6"], ["x6"], name="part_reshape"),
             helper.make_node("Transpose", ["x6"], ["xt"], name="part_transpose", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["xt", "s_win"], ["xw"], name="part_windows"),
             helper.make_node("MatMul", ["xw", "wqkv"], ["qkv"], name="qkv_matmul"),
             helper.make_node("Reshape", ["qkv", "s_heads"], ["qh"], name="head_reshape"),
             helper.make_node("Transpose", ["qh"], ["qt"], name="head_transpose", perm=[0, 2, 1, 3])]
    nodes += [helper.make_node("Slice", ["qt", f"st{i}", f"en{i}", "ax3"], [t], name=f"{t}_slice")
              for i, t in enumerate("qkv")]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["a"], name="qk"),
              helper.make_node("Softmax", ["a"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["ot"], name="o_transpose", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "s_win"], ["ow"], name="o_join"),
              helper.make_node("MatMul", ["ow", "wp"], ["y"], name="proj")]
    inits = [weight("wx", [ch, ch]), weight("wqkv", [ch, 3 * ch]), weight("wp", [ch, ch]),
             const("s6", np.array([1, n, ws, n, ws, ch], np.int64)), const("s_win", np.array([b, ws, ws, ch], np.int64)),
             const("s_heads", np.array([b, ws * ws, heads, 3 * dim], np.int64)), const("ax3", np.array([3], np.int64))]
    for i in range(3):
        inits += [const(f"st{i}", np.array([i * dim], np.int64)), const(f"en{i}", np.array([(i + 1) * dim], np.int64))]
    return save_model(tmp_path / f"w4d{n}.onnx", nodes, [value("x", [1, side, side, ch])], [value("y", None)], inits,
                      opset=13)


# probe tools/probe_rknn_rk3566.py maxattn:2:8:2:32 and maxattn:1:8:2:32 (FP16 and INT8, 2026-12-01): with 4 windows
# kept [B, 8, 8, C] the head Transpose (head_transpose#1, qt_rs), P.V (o_mm_rs) and the join Reshape (ow_tp_rs) are
# CPU relayouts; with one window none is (corpus timm_maxvit_rmlp_pico_rw_256 attn/Transpose, MatMul_1, Reshape_3
# CPU, the head Reshape NPU, block and grid attention, FP16 and INT8)
@pytest.mark.parametrize(("n", "cpu"), [(2, True), (1, False)])
def test_attention_on_4d_windows_is_relaid_out_on_rk3566(catalog, tmp_path, n, cpu):
    report = check_graph(load_model(_window_4d_attention(tmp_path, n)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        for name in ("head_transpose", "pv", "o_join"):
            assert report.verdict(name).runs_on("npu", precision) is not cpu, (name, precision)
        if cpu:  # the head Transpose carries the relayout; one window's head Reshape: probe NPU, corpus CPU
            assert report.verdict("head_reshape").runs_on("npu", precision)


def _axis_windows(tmp_path, windows_first, n=2):
    """Twins' LSA (windows_first) or NesT's order: q/k/v of n*n windows of 49 tokens kept in axis 1,
    [1, W, N, 3, h, d] -> unbind Transpose -> attention -> heads joined back to [1, W, N, h, d]."""
    heads, dim, tokens = 4, 32, 49
    w = n * n
    perm = [3, 0, 1, 4, 2, 5] if windows_first else [3, 0, 4, 1, 2, 5]
    nodes = [helper.make_node("MatMul", ["x", "wqkv"], ["qkv"], name="qkv_matmul"),
             helper.make_node("Reshape", ["qkv", "s_heads"], ["qh"], name="head_reshape"),
             helper.make_node("Transpose", ["qh"], ["qt"], name="head_transpose", perm=perm),
             helper.make_node("Split", ["qt", "ones"], ["q1", "k1", "v1"], name="split", axis=0)]
    nodes += [helper.make_node("Squeeze", [f"{t}1", "ax0"], [t], name=f"{t}_squeeze") for t in "qkv"]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 1, 2, 4, 3]),
              helper.make_node("MatMul", ["q", "kt"], ["a"], name="qk"),
              helper.make_node("Softmax", ["a"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["y"], name="o_transpose",
                               perm=[0, 1, 3, 2, 4] if windows_first else [0, 2, 3, 1, 4])]
    inits = [weight("wqkv", [heads * dim, 3 * heads * dim]),
             const("s_heads", np.array([1, w, tokens, 3, heads, dim], np.int64)),
             const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64))]
    return save_model(tmp_path / f"aw{int(windows_first)}{n}.onnx", nodes, [value("x", [1, w, tokens, heads * dim])],
                      [value("y", None)], inits, opset=13)


# probe tools/probe_rknn_rk3566.py lsa:2:7:4:32:0 (FP16 and INT8, 2026-12-01): windows kept in axis 1, unbound
# windows-before-heads (Twins): the unbind Transpose (qt_rs_swap_tp#1), P.V (o_rs) and the head-join Transpose
# (ot_rs_tp#1) are CPU relayouts (corpus timm_twins_svt_small attn/Transpose_2, MatMul_1, Transpose_4: CPU, FP16
# and INT8). Heads-before-windows (NesT's order, corpus timm_nest_tiny: NPU) and one window are not this rule
@pytest.mark.parametrize(("windows_first", "n", "cpu"), [(True, 2, True), (False, 2, False), (True, 1, False)])
def test_attention_on_windows_kept_in_axis_1_on_rk3566(catalog, tmp_path, windows_first, n, cpu):
    report = check_graph(load_model(_axis_windows(tmp_path, windows_first, n)), catalog, "rk3566")
    for precision in ("fp16", "int8"):
        for name in ("head_transpose", "pv", "o_transpose"):
            rules = {v.rule for v in report.verdict(name).violations if v.precision == precision}
            assert ("RKNN-WINDOW-TOKENS" in rules) is cpu, (name, precision)


@pytest.mark.parametrize(("src", "dst", "cpu"), [([1, 256, 8, 12], [8, 32, 8, 12], False),
                                                 ([1, 32, 8, 12], [8, 4, 8, 12], False),
                                                 ([8, 32, 8, 12], [1, 256, 8, 12], False),
                                                 ([1, 256, 8, 12], [8, 32, 4, 24], True),
                                                 ([1, 256, 8, 12], [4, 32, 16, 12], True)])
def test_a_channel_split_into_batch_rows_is_a_relabel_on_rk3566(catalog, tmp_path, src, dst, cpu):
    """probes bcast_c_b*_c*_n64_k12 and deform_* (tools/probe_rknn_patterns.py, rk3566 FP16 and INT8): the value
    map [1, B*C, H, W] cut into B rows of C channels, and joined back, is a Reshape layer on the NPU for C = 4..32;
    a reshape that also regroups the pixels moves data."""
    path = _inner(tmp_path, [helper.make_node("Reshape", ["a", "s"], ["b"], name="n")], src,
                  [const("s", np.array(dst, np.int64))])
    for target in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert on_npu(catalog, path, target, precision) is not cpu
