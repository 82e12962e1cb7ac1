"""RK3566/RK3568 verdicts of ops the toolkit does not rewrite (optimizer/catalog/_rk3566.py), at the boundaries
measured with rknn-toolkit2 2.5.0 (tools/probe_rknn_rk3566.py spmean; the scratch Einsum probe on rk3566)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations, weight


def _se_mean(tmp_path, axes, keepdims=1, side=14, channels=64, op="ReduceMean"):
    """Relu'd map -> op(axes) [-> Reshape to [1, C, 1, 1]] -> Conv -> Sigmoid -> Mul into the map."""
    reduce = (helper.make_node(op, ["r", "axes"], ["g"], name="mean", keepdims=keepdims) if op == "ReduceSum"
              else helper.make_node(op, ["r"], ["g"], name="mean", axes=axes, keepdims=keepdims))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="act"), reduce]
    gate_in = "g"
    if not keepdims:
        nodes.append(helper.make_node("Reshape", ["g", "s"], ["gv"], name="to_vec"))
        gate_in = "gv"
    nodes += [helper.make_node("Conv", [gate_in, "w"], ["gc"], name="se_conv"),
              helper.make_node("Sigmoid", ["gc"], ["gate"], name="gate"),
              helper.make_node("Mul", ["r", "gate"], ["y"], name="scale")]
    inits = [weight("w", (channels, channels, 1, 1)), const("s", np.array([1, channels, 1, 1], np.int64)),
             const("axes", np.array(axes, np.int64))]
    return save_model(tmp_path / "se.onnx", nodes, [value("x", [1, channels, side, side])], [value("y", None)],
                      inits)


@pytest.mark.parametrize(("axes", "unpooled"), [([2, 3], False), ([-2, -1], False), ([3, 2], True),
                                                ([-1, -2], True)])
def test_a_spatial_mean_is_global_pooling_only_with_ascending_axes(catalog, tmp_path, axes, unpooled):
    path = _se_mean(tmp_path, axes)
    for target in ("rk3566", "rk3568"):
        for node in ("mean", "act"):  # the mean's result transpose and the producer's relayout into tokens
            assert ("RKNN-PIXEL-REDUCE" in violations(catalog, path, target, "fp16", node)) is unpooled
        assert "RKNN-PIXEL-REDUCE" not in violations(catalog, path, target, "int8", "se_conv")
    assert "RKNN-PIXEL-REDUCE" not in violations(catalog, path, "rk3588", "fp16", "act")


@pytest.mark.parametrize(("op", "axes", "unpooled"), [("ReduceSum", [2, 3], True), ("ReduceL2", [2, 3], True),
                                                      ("ReduceL2", [3, 2], True), ("ReduceL2", [3], False),
                                                      ("ReduceMax", [2, 3], False)])
def test_a_pixel_sum_or_l2_norm_is_never_pooled(catalog, tmp_path, op, axes, unpooled):
    # probe spmean:64:14:0:1:1 (ReduceSum), :0:1:2 (ReduceL2): the mean's CPU relayouts; ReduceMax (:0:1:3) is a
    # CPU layer of its own, without the producer's relayout; a one-axis L2 norm is exNorm's (another rule)
    path = _se_mean(tmp_path, axes, op=op)
    for node in ("mean", "act"):
        assert ("RKNN-PIXEL-REDUCE" in violations(catalog, path, "rk3566", "int8", node)) is unpooled


def test_the_reshape_reading_an_unpooled_mean_takes_its_transpose(catalog, tmp_path):
    # probe spmean:64:14:1:0: the transpose back is named after the Reshape (to_vec#1), the mean has no layer
    path = _se_mean(tmp_path, [3, 2], keepdims=0)
    assert "RKNN-PIXEL-REDUCE" in violations(catalog, path, "rk3566", "int8", "to_vec")
    assert "RKNN-PIXEL-REDUCE" not in violations(catalog, path, "rk3566", "int8", "mean")
    assert "RKNN-PIXEL-REDUCE" in violations(catalog, path, "rk3566", "int8", "act")


@pytest.mark.parametrize(("side", "unpooled"), [(1, False), (2, True)])
def test_a_one_pixel_mean_has_nothing_to_pool(catalog, tmp_path, side, unpooled):
    # probe spmean:64:1:1:1: on a 1x1 map the (3, 2) mean leaves no layer at all
    path = _se_mean(tmp_path, [3, 2], side=side)
    assert ("RKNN-PIXEL-REDUCE" in violations(catalog, path, "rk3566", "fp16", "mean")) is unpooled


def _einsum(tmp_path, equation, scale_q=True, rank5=True):
    """A conv map reshaped to q [1, G, H, N, D] (or [1, H, N, D]), q.q^T by an Einsum, reshaped back."""
    split = [1, 2, 2, 64, 8] if rank5 else [1, 4, 64, 8]
    nodes = [helper.make_node("Reshape", ["x", "s1"], ["q"], name="split")]
    operand = "q"
    if scale_q:
        nodes.append(helper.make_node("Mul", ["q", "k"], ["qs"], name="scale"))
        operand = "qs"
    nodes += [helper.make_node("Einsum", [operand, "q"], ["sc"], name="ein", equation=equation),
              helper.make_node("Reshape", ["sc", "s2"], ["y"], name="merge")]
    inits = [const("s1", np.array(split, np.int64)), const("s2", np.array([1, 256, 8, 8], np.int64)),
             const("k", np.array(0.5, np.float32))]
    return save_model(tmp_path / "ein.onnx", nodes, [value("x", [1, 32, 8, 8])], [value("y", None)], inits)


@pytest.mark.parametrize(("equation", "cpu"), [("bghid,bghjd->bghij", False),
                                               ("B G H I D, B G H J D -> B G H I J", True),
                                               ("bghid ,bghjd->bghij", False),  # one blank per operand: no repeat
                                               ("bghid,bghjd -> bghij", False)])  # blanks only after the arrow
def test_the_rank5_operands_of_a_cpu_einsum_are_relaid_on_the_cpu(catalog, tmp_path, equation, cpu):
    # scratch probe ein5_spaces on rk3566: the Reshape making the 5-D operand is a CPU layer (ein5_plain: NPU);
    # corpus tv_maxvit_t Mul_3 / Transpose / Transpose_2 before the spaced Einsums
    path = _einsum(tmp_path, equation)
    for target in ("rk3566", "rk3568"):
        for node in ("scale", "split"):
            assert ("RKNN-EINSUM-OPERANDS" in violations(catalog, path, target, "int8", node)) is cpu
        assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, target, "int8", "merge")
    assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, "rk3588", "fp16", "scale")


def test_a_rank4_operand_of_a_cpu_einsum_keeps_its_producer_verdict(catalog, tmp_path):
    path = _einsum(tmp_path, "b h i d, b h j d -> b h i j", rank5=False)
    assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, "rk3566", "fp16", "scale")


def test_a_dynamo_slice_unbind_leaves_v_s_transpose_to_the_squeeze(catalog, tmp_path):
    # corpus timm_deit_tiny_patch16_224_dynamo: q/k/v cut from the unbind Transpose by Slice + Squeeze (TorchScript:
    # Split + Squeeze); V's transpose into exMatMul (197 tokens: not whole 8-byte groups) is named after the Squeeze
    d, h, n = 64, 3, 197
    nodes = [helper.make_node("MatMul", ["x", "wqkv"], ["qkv"], name="qkv"),
             helper.make_node("Reshape", ["qkv", "s5"], ["h5"], name="split_heads"),
             helper.make_node("Transpose", ["h5"], ["t"], name="unbind", perm=[2, 0, 3, 1, 4])]
    for i, part in enumerate("qkv"):
        nodes += [helper.make_node("Slice", ["t", f"b{i}", f"e{i}", "ax0"], [f"{part}5"], name=f"cut_{part}"),
                  helper.make_node("Squeeze", [f"{part}5", "ax0"], [part], name=f"sq_{part}")]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
              helper.make_node("Softmax", ["s"], ["p"], name="sm", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
              helper.make_node("Transpose", ["o"], ["ot"], name="join", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "s3"], ["y"], name="merge")]
    inits = [weight("wqkv", (h * d, 3 * h * d)), const("s5", np.array([1, n, 3, h, d], np.int64)),
             const("s3", np.array([1, n, h * d], np.int64)), const("ax0", np.array([0], np.int64))]
    inits += [const(f"b{i}", np.array([i], np.int64)) for i in range(3)]
    inits += [const(f"e{i}", np.array([i + 1], np.int64)) for i in range(3)]
    path = save_model(tmp_path / "unbind.onnx", nodes, [value("x", [1, n, h * d])], [value("y", None)], inits)
    assert "RKNN-EXMATMUL-B" in violations(catalog, path, "rk3566", "fp16", "sq_v")
    assert "RKNN-EXMATMUL-B" not in violations(catalog, path, "rk3566", "fp16", "cut_v")


def _einattn(tmp_path, spaced=True, bias=True, join_transpose=True, shared_bias=False):
    """torchvision MaxViT's window attention on [1, G, P, C] tokens: qkv MatMul (+ bias Add), three channel
    Slices, each Reshape [1, G, P, h, d] + Transpose (0,1,3,2,4), Einsum scores, Softmax, Einsum P.V, Transpose
    back (or not) and the join Reshape [1, G, P, C] into a proj MatMul."""
    g, p, h, d = 4, 49, 2, 32
    c = h * d
    qk, pv = (("B G H I D, B G H J D -> B G H I J", "B G H I J, B G H J D -> B G H I D") if spaced
              else ("bghid,bghjd->bghij", "bghij,bghjd->bghid"))
    nodes = [helper.make_node("MatMul", ["x", "wqkv"], ["qkv0" if bias else "qkv"], name="qkv_matmul")]
    if bias:
        if shared_bias:  # a weight shared with another layer, exported as an Identity of the initializer
            nodes.append(helper.make_node("Identity", ["bqkv"], ["bqkv_id"], name="bias_id"))
        nodes.append(helper.make_node("Add", ["bqkv_id" if shared_bias else "bqkv", "qkv0"], ["qkv"],
                                      name="qkv_bias"))
    for i, t in enumerate("qkv"):
        nodes += [helper.make_node("Slice", ["qkv", f"st{i}", f"en{i}", "ax3"], [f"{t}0"], name=f"{t}_slice"),
                  helper.make_node("Reshape", [f"{t}0", "s_heads"], [f"{t}5"], name=f"{t}_heads"),
                  helper.make_node("Transpose", [f"{t}5"], [t], name=f"{t}_transpose", perm=[0, 1, 3, 2, 4])]
    join_in = "o"
    nodes += [helper.make_node("Mul", ["q", "sc"], ["qs"], name="q_scale"),
              helper.make_node("Einsum", ["qs", "k"], ["a"], name="qk", equation=qk),
              helper.make_node("Softmax", ["a"], ["pr"], name="softmax", axis=-1),
              helper.make_node("Einsum", ["pr", "v"], ["o"], name="pv", equation=pv)]
    if join_transpose:
        nodes.append(helper.make_node("Transpose", ["o"], ["ot"], name="o_transpose", perm=[0, 1, 3, 2, 4]))
        join_in = "ot"
    nodes += [helper.make_node("Reshape", [join_in, "s_tok"], ["ow"], name="o_join"),
              helper.make_node("MatMul", ["ow", "wp"], ["y"], name="proj")]
    inits = [weight("wqkv", (c, 3 * c)), weight("bqkv", (3 * c,)), weight("wp", (c, c)),
             const("s_heads", np.array([1, g, p, h, d], np.int64)), const("s_tok", np.array([1, g, p, c], np.int64)),
             const("ax3", np.array([3], np.int64)), const("sc", np.array(d**-0.5, np.float32))]
    for i in range(3):
        inits += [const(f"st{i}", np.array([i * c], np.int64)), const(f"en{i}", np.array([(i + 1) * c], np.int64))]
    return save_model(tmp_path / "einattn.onnx", nodes, [value("x", [1, g, p, c])], [value("y", None)], inits)


@pytest.mark.parametrize("spaced", [True, False])
def test_the_qkv_cut_into_heads_for_a_cpu_einsum_is_relaid_on_the_cpu(catalog, tmp_path, spaced):
    # probe einattn:2:7:2:32:1: qkv_rs (named after the bias Add) and qkv0_mm_tp_rs#1 (after the MatMul) CPU, the
    # join's transpose and reshape (o_join) CPU; einattn:2:7:2:32:0 (exMatMul): all three NPU
    path = _einattn(tmp_path, spaced=spaced)
    for target in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            for node in ("qkv_matmul", "qkv_bias", "o_join"):
                assert ("RKNN-EINSUM-HEADS" in violations(catalog, path, target, precision, node)) is spaced
            for node in ("q_slice", "o_transpose", "proj"):
                assert "RKNN-EINSUM-HEADS" not in violations(catalog, path, target, precision, node)
    assert "RKNN-EINSUM-HEADS" not in violations(catalog, path, "rk3588", "fp16", "qkv_matmul")


def test_a_qkv_matmul_without_bias_takes_both_relayouts(catalog, tmp_path):
    path = _einattn(tmp_path, bias=False)
    assert "RKNN-EINSUM-HEADS" in violations(catalog, path, "rk3566", "fp16", "qkv_matmul")


def test_a_reshape_reading_a_cpu_einsum_directly_is_not_the_head_join(catalog, tmp_path):
    # corpus tv_maxvit_t Einsum_1_output_0_rs, the Reshape straight out of the P.V Einsum: an NPU layer
    path = _einattn(tmp_path, join_transpose=False)
    assert "RKNN-EINSUM-HEADS" not in violations(catalog, path, "rk3566", "fp16", "o_join")
    assert "RKNN-EINSUM-HEADS" in violations(catalog, path, "rk3566", "fp16", "qkv_bias")


def test_a_bias_shared_through_an_identity_is_still_the_qkv_bias(catalog, tmp_path):
    # corpus tv_maxvit_t blocks.1/layers.1 to_qkv/Add: its bias is an Identity of blocks.1/layers.0's initializer
    path = _einattn(tmp_path, shared_bias=True)
    for node in ("qkv_matmul", "qkv_bias"):
        assert "RKNN-EINSUM-HEADS" in violations(catalog, path, "rk3566", "int8", node)


def _einsum_sibling_split(tmp_path, heads_on_einsum_path):
    """A weight MatMul [1, G, P, C] whose result has two readers: a Transpose (0,1,3,2) into a spaced rank-4
    Einsum, and a rank-5 head-split Reshape into a Relu (heads_on_einsum_path False), or the same Reshape
    followed by the Transpose (0,1,3,2,4) into a spaced rank-5 Einsum (True)."""
    g, p, h, d = 4, 49, 2, 32
    c = h * d
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="mm"),
             helper.make_node("Reshape", ["t", "s_heads"], ["t5"], name="heads")]
    if heads_on_einsum_path:
        nodes += [helper.make_node("Transpose", ["t5"], ["k"], name="k_transpose", perm=[0, 1, 3, 2, 4]),
                  helper.make_node("Einsum", ["k", "k"], ["y"], name="ein",
                                   equation="B G H I D, B G H J D -> B G H I J")]
    else:
        nodes += [helper.make_node("Relu", ["t5"], ["y5"], name="side"),
                  helper.make_node("Transpose", ["t"], ["k"], name="k_transpose", perm=[0, 1, 3, 2]),
                  helper.make_node("Einsum", ["k", "k"], ["y"], name="ein",
                                   equation="B G D I, B G D J -> B G I J")]
    inits = [weight("w", (c, c)), const("s_heads", np.array([1, g, p, h, d], np.int64))]
    outputs = [value("y", None)] + ([] if heads_on_einsum_path else [value("y5", None)])
    return save_model(tmp_path / "einsplit.onnx", nodes, [value("x", [1, g, p, c])], outputs, inits)


@pytest.mark.parametrize("heads_on_einsum_path", [True, False])
def test_only_a_head_split_on_the_einsum_path_makes_the_matmul_a_head_hand_over(catalog, tmp_path,
                                                                                heads_on_einsum_path):
    # the split flag is the path's own: a rank-5 Reshape on a sibling branch (into a Relu) does not make the
    # MatMul's plain transpose into a CPU Einsum a head split (before the fix, one flag shared by all branches
    # claimed it)
    path = _einsum_sibling_split(tmp_path, heads_on_einsum_path)
    for precision in ("fp16", "int8"):
        assert ("RKNN-EINSUM-HEADS" in violations(catalog, path, "rk3566", precision, "mm")) is heads_on_einsum_path


def _seqmix(tmp_path, swap=True, partner=True, h=8, w=8, c=32, hid=16):
    """timm Sequencer2D's token mixer on a channels-last map: a row LSTM and a column LSTM (swap) or a second row
    LSTM, each direction-joined, Concat on the channel (partner False: the column LSTM alone, into the fc)."""
    def lstm(t, src):
        return [helper.make_node("LSTM", [src, f"w{t}", f"r{t}", f"b{t}"], [f"y{t}"], name=f"{t}_lstm",
                                 direction="bidirectional", hidden_size=hid),
                helper.make_node("Transpose", [f"y{t}"], [f"y{t}t"], name=f"{t}_join", perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", [f"y{t}t", "s_join"], [f"y{t}j"], name=f"{t}_join_rs"),
                helper.make_node("Transpose", [f"y{t}j"], [f"y{t}b"], name=f"{t}_back", perm=[1, 0, 2])]

    nodes = [helper.make_node("Reshape", ["x", "s_hw"], ["xh"], name="h_rs"),
             helper.make_node("Transpose", ["xh"], ["sh"], name="h_seq", perm=[1, 0, 2])]
    if swap:
        nodes += [helper.make_node("Transpose", ["x"], ["xs"], name="v_swap", perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["xs", "s_wh"], ["xv"], name="v_rs")]
    else:
        nodes.append(helper.make_node("Reshape", ["x", "s_hw"], ["xv"], name="v_rs"))
    nodes += [helper.make_node("Transpose", ["xv"], ["sv"], name="v_seq", perm=[1, 0, 2]), *lstm("v", "sv")]
    if swap:
        nodes += [helper.make_node("Reshape", ["yvb", "s_map_wh"], ["yvm"], name="v_map"),
                  helper.make_node("Transpose", ["yvm"], ["yv4"], name="v_unswap", perm=[0, 2, 1, 3])]
    else:
        nodes.append(helper.make_node("Reshape", ["yvb", "s_map"], ["yv4"], name="v_map"))
    if partner:
        nodes += [*lstm("h", "sh"), helper.make_node("Reshape", ["yhb", "s_map"], ["yh4"], name="h_map"),
                  helper.make_node("Concat", ["yv4", "yh4"], ["cat"], name="concat", axis=3),
                  helper.make_node("MatMul", ["cat", "wf"], ["y"], name="fc")]
    else:
        nodes += [helper.make_node("Concat", ["yv4", "x"], ["cat"], name="concat", axis=3),
                  helper.make_node("MatMul", ["cat", "wf"], ["y"], name="fc")]
    inits = [const("s_join", np.array([0, 0, -1], np.int64)), const("s_hw", np.array([h, w, c], np.int64)),
             const("s_wh", np.array([w, h, c], np.int64)), const("s_map", np.array([1, h, w, 2 * hid], np.int64)),
             const("s_map_wh", np.array([1, w, h, 2 * hid], np.int64)),
             weight("wf", (4 * hid if partner else 2 * hid + c, c))]
    for t in "hv":
        inits += [weight(f"w{t}", (2, 4 * hid, c)), weight(f"r{t}", (2, 4 * hid, hid)), weight(f"b{t}", (2, 8 * hid))]
    return save_model(tmp_path / "seqmix.onnx", nodes, [value("x", [1, h, w, c])], [value("y", None)], inits)


@pytest.mark.parametrize("swap", [True, False])
def test_a_column_lstm_joined_with_a_row_lstm_is_reshaped_on_the_cpu(catalog, tmp_path, swap):
    # probe seqmix:8:8:32:16:1: v_lstm#1_rs CPU (named after the column LSTM); seqmix:8:8:32:16:0: no LSTM layer CPU
    path = _seqmix(tmp_path, swap=swap)
    for target in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-LSTM-SWAP-JOIN" in violations(catalog, path, target, precision, "v_lstm")) is swap
            assert "RKNN-LSTM-SWAP-JOIN" not in violations(catalog, path, target, precision, "h_lstm")
    assert "RKNN-LSTM-SWAP-JOIN" not in violations(catalog, path, "rk3588", "fp16", "v_lstm")


def test_a_column_lstm_without_a_row_lstm_partner_keeps_its_verdict(catalog, tmp_path):
    # probe bilstm:8:8:32:16:1 (one column LSTM, swapped in and out): no CPU layer
    path = _seqmix(tmp_path, partner=False)
    assert "RKNN-LSTM-SWAP-JOIN" not in violations(catalog, path, "rk3566", "fp16", "v_lstm")


def _nhwc_l2(tmp_path, axes):
    """ConvNeXt-V2's response norm: map -> Transpose to channels-last -> token MatMul ('linear') -> Relu ('act') ->
    ReduceL2(`axes`) ('reduce') -> Mul -> MatMul -> Transpose back."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["t", "wl"], ["u"], name="linear"),
             helper.make_node("Relu", ["u"], ["a"], name="act"),
             helper.make_node("ReduceL2", ["a"], ["g"], name="reduce", axes=axes, keepdims=1),
             helper.make_node("Mul", ["a", "g"], ["m"], name="mul"),
             helper.make_node("MatMul", ["m", "wl2"], ["v"], name="linear2"),
             helper.make_node("Transpose", ["v"], ["y"], name="nchw", perm=[0, 3, 1, 2])]
    inits = [weight("wl", (32, 64)), weight("wl2", (64, 32))]
    return save_model(tmp_path / f"nhwc_l2_{len(axes)}.onnx", nodes, [value("x", [1, 32, 8, 8])],
                      [value("y", None)], inits, opset=13)


@pytest.mark.parametrize(("axes", "unpooled"), [([1, 2], True), ([2, 1], True), ([3], False)])
def test_a_pixel_l2_norm_of_a_channels_last_map_is_not_pooled(catalog, tmp_path, axes, unpooled):
    # probe nhwc_reducel2_pixels (rk3566, FP16 and INT8): the map's relayout (a_pow_tp, a_pow_rs) and the result's
    # transpose (reduce_2rsum#1_rs) Target CPU; corpus hf_convnextv2 grn/ReduceL2 and act/Mul_1 likewise
    path = _nhwc_l2(tmp_path, axes)
    for node in ("reduce", "act"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-PIXEL-REDUCE" in violations(catalog, path, "rk3566", precision, node)) is unpooled
    assert "RKNN-PIXEL-REDUCE" not in violations(catalog, path, "rk3588", "fp16", "reduce")


def test_axes_1_2_of_an_nchw_map_are_not_its_pixels(catalog, tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"),
             helper.make_node("ReduceL2", ["a"], ["g"], name="reduce", axes=[1, 2], keepdims=1),
             helper.make_node("Mul", ["a", "g"], ["y"], name="mul")]
    path = save_model(tmp_path / "nchw_l2.onnx", nodes, [value("x", [1, 32, 8, 8])], [value("y", None)], opset=13)
    assert "RKNN-PIXEL-REDUCE" not in violations(catalog, path, "rk3566", "fp16", "reduce")
