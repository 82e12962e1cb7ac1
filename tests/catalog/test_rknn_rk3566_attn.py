"""RK3566/RK3568 verdicts for factorised, grid-windowed, patch-merged and pooled attention
(optimizer/catalog/_rk3566_attn.py), at the boundaries measured with rknn-toolkit2 2.5.0
(tools/probe_rknn_rk3566.py factor, gridrev, mergelast; corpus timm_mvitv2_tiny for the pooled attention)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n


def _factor(tmp_path, h, w, heads=2, d=16, cls=1):
    """The probe `factor` graph: conv map [1, C, h, w] -> tokens (a class token in front when cls) -> qkv MatMul ->
    Reshape [1, N, 3, heads, d] -> Transpose (2,0,3,1,4) -> Split -> Squeeze; softmax(K) over the tokens ->
    Transpose -> K^T.V -> Q.(K^T.V); q * dwconv(v) position term; head join -> proj."""
    hw, ch = h * w, heads * d
    n = hw + cls
    nodes = [_n("Conv", ["x", "w0"], ["c"], "pre"), _n("Reshape", ["c", "s3"], ["r"], "to_rows"),
             _n("Transpose", ["r"], ["t0"], "to_tokens", perm=[0, 2, 1])]
    nodes.append(_n("Concat", ["cls", "t0"], ["t"], "cls_concat", axis=1) if cls else _n("Identity", ["t0"], ["t"], "tok"))
    nodes += [
        _n("LayerNormalization", ["t", "g", "bn"], ["ln"], "norm", axis=-1),
        _n("MatMul", ["ln", "wqkv"], ["q0"], "qkv"), _n("Add", ["q0", "bqkv"], ["qkvb"], "qkv_bias"),
        _n("Reshape", ["qkvb", "s5"], ["q5"], "qkv_reshape"),
        _n("Transpose", ["q5"], ["qt"], "qkv_transpose", perm=[2, 0, 3, 1, 4]),
        _n("Split", ["qt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0),
        _n("Squeeze", ["q1", "ax0"], ["q"], "q_squeeze"), _n("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"),
        _n("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
        _n("Softmax", ["k"], ["ks"], "k_softmax", axis=2), _n("Transpose", ["ks"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        _n("MatMul", ["kt", "v"], ["kv"], "kv"), _n("MatMul", ["q", "kv"], ["fa"], "q_kv"),
        _n("Mul", ["fa", "sc"], ["fas"], "scale"),
        _n("Slice", ["q", "st", "en", "ax2"], ["qs"], "q_slice"), _n("Slice", ["v", "st", "en", "ax2"], ["vs"], "v_slice"),
        _n("Transpose", ["vs"], ["vt"], "v_transpose", perm=[0, 1, 3, 2]),
        _n("Reshape", ["vt", "s_map"], ["vm"], "v_map"),
        _n("Conv", ["vm", "wdw"], ["vc"], "crpe_conv", group=ch, pads=[1, 1, 1, 1]),
        _n("Reshape", ["vc", "s_hd"], ["vh"], "v_heads"), _n("Transpose", ["vh"], ["vb"], "v_back", perm=[0, 1, 3, 2]),
        _n("Mul", ["qs", "vb"], ["ev"], "crpe_mul"), _n("Pad", ["ev", "pads"], ["evp"], "crpe_pad"),
        _n("Add", ["fas", "evp"], ["fo"], "crpe_add"),
        _n("Transpose", ["fo"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        _n("Reshape", ["ot", "s_tok"], ["tok"], "o_join"), _n("MatMul", ["tok", "wp"], ["y"], "proj"),
    ]
    inits = [weight("w0", (ch, 3, 1, 1)), const("s3", np.array([1, ch, hw], np.int64)), weight("cls", (1, 1, ch)),
             weight("g", (ch,)), weight("bn", (ch,)), weight("wqkv", (ch, 3 * ch)), weight("bqkv", (3 * ch,)),
             const("s5", np.array([1, n, 3, heads, d], np.int64)), const("ones", np.array([1, 1, 1], np.int64)),
             const("ax0", np.array([0], np.int64)), const("sc", np.float32(0.25)), const("st", np.array([cls], np.int64)),
             const("en", np.array([n], np.int64)), const("ax2", np.array([2], np.int64)),
             const("s_map", np.array([1, ch, h, w], np.int64)), weight("wdw", (ch, 1, 3, 3)),
             const("s_hd", np.array([1, heads, d, hw], np.int64)),
             const("pads", np.array([0, 0, cls, 0, 0, 0, 0, 0], np.int64)), const("s_tok", np.array([1, n, ch], np.int64)),
             weight("wp", (ch, ch))]
    return save_model(tmp_path / "factor.onnx", nodes, [value("x", [1, 3, h, w])], [value("y", None)], inits)


_CLASS_TOKEN_NODES = ("qkv_reshape", "q_squeeze", "crpe_mul", "o_join")


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_class_token_factorised_attention_relays_q_the_product_and_the_join(catalog, tmp_path, precision):
    # probe factor:7:2:16:1:1 (N 50): one qkv conv, CPU q5_rs, q_tp_rs, ev_tp, tok_tp/tok_rs and kt_tp_rs
    path = _factor(tmp_path, 7, 7)
    for target in ("rk3566", "rk3568"):
        for node in (*_CLASS_TOKEN_NODES, "k_transpose"):
            assert "RKNN-FACTOR-ATTN" in violations(catalog, path, target, precision, node), node
        assert "RKNN-FACTOR-ATTN" not in violations(catalog, path, target, precision, "k_squeeze")
    assert "RKNN-FACTOR-ATTN" not in violations(catalog, path, "rk3588", precision, "q_squeeze")


def test_without_a_class_token_only_the_keys_transpose_is_relaid(catalog, tmp_path):
    # probe factor:7:2:16:0:1 (N 49): three qkv convs; kt_tp_rs CPU, q and the head join NPU
    path = _factor(tmp_path, 7, 7, cls=0)
    assert "RKNN-FACTOR-ATTN" in violations(catalog, path, "rk3566", "fp16", "k_transpose")
    for node in _CLASS_TOKEN_NODES:
        assert "RKNN-FACTOR-ATTN" not in violations(catalog, path, "rk3566", "fp16", node), node


@pytest.mark.parametrize(("h", "w", "cls", "precision", "relaid"), [
    (8, 8, 0, "fp16", False), (8, 8, 0, "int8", False),  # probe factor:8:2:16:0:1, N 64: NPU
    (6, 6, 0, "fp16", False), (6, 6, 0, "int8", True),  # N 36: whole FP16 groups, not INT8 ones
    (7, 7, 0, "int8", True),
])
def test_the_keys_transpose_follows_the_8_byte_rule_on_n(catalog, tmp_path, h, w, cls, precision, relaid):
    path = _factor(tmp_path, h, w, cls=cls)
    assert ("RKNN-FACTOR-ATTN" in violations(catalog, path, "rk3566", precision, "k_transpose")) is relaid


def test_a_class_token_over_whole_groups_of_tokens_is_not_claimed(catalog, tmp_path):
    # 3 x 5 pixels and a class token: N 16 fills 8-byte groups (no probe at such N: the rule claims only N the
    # probes and the corpus measured, all of them unaligned)
    path = _factor(tmp_path, 3, 5)
    for node in (*_CLASS_TOKEN_NODES, "k_transpose"):
        assert "RKNN-FACTOR-ATTN" not in violations(catalog, path, "rk3566", "int8", node), node


def test_the_position_terms_transpose_folds_into_the_reshape_into_the_map(catalog, tmp_path):
    # probe factor (every case): crpe_v_transpose has no layer, crpe_v_map carries the move
    path = _factor(tmp_path, 7, 7)
    assert not violations(catalog, path, "rk3566", "fp16", "v_transpose")
    assert violations(catalog, path, "rk3566", "fp16", "v_map")


def _gridrev(tmp_path, g, n, ch=32):
    """The probe `gridrev` graph: channels-last map cut into an n x n grid of g x g windows, a linear layer on them,
    and the grid reverse back."""
    side = g * n
    nodes = [_n("Conv", ["x", "w0"], ["c"], "pre"), _n("Transpose", ["c"], ["xl"], "to_nhwc", perm=[0, 2, 3, 1]),
             _n("Reshape", ["xl", "s6"], ["x6"], "grid_split"),
             _n("Transpose", ["x6"], ["xp"], "grid_partition", perm=[0, 2, 4, 1, 3, 5]),
             _n("Reshape", ["xp", "s_win"], ["win"], "grid_windows"),
             _n("MatMul", ["win", "wl"], ["lin0"], "proj"), _n("Add", ["lin0", "bl"], ["lin"], "proj_bias"),
             _n("Reshape", ["lin", "s_back6"], ["b6"], "grid_back"),
             _n("Transpose", ["b6"], ["bt"], "grid_merge", perm=[0, 3, 1, 4, 2, 5]),
             _n("Reshape", ["bt", "s_map"], ["ml"], "grid_map"),
             _n("Transpose", ["ml"], ["y"], "to_nchw", perm=[0, 3, 1, 2])]
    inits = [weight("w0", (ch, 3, 1, 1)), const("s6", np.array([1, g, n, g, n, ch], np.int64)),
             const("s_win", np.array([n * n, g, g, ch], np.int64)), weight("wl", (ch, ch)), weight("bl", (ch,)),
             const("s_back6", np.array([1, n, n, g, g, ch], np.int64)),
             const("s_map", np.array([1, side, side, ch], np.int64))]
    return save_model(tmp_path / "grid.onnx", nodes, [value("x", [1, 3, side, side])], [value("y", None)], inits)


@pytest.mark.parametrize(("g", "precision", "named_after_linear"), [
    (8, "fp16", True), (8, "int8", True), (5, "fp16", False), (5, "int8", False),  # probe gridrev:8/5:8:32
    (4, "fp16", True), (4, "int8", False),  # gridrev:4:8:32: lin0 in FP16, b6_rs in INT8
])
def test_the_grid_merge_reshape_is_named_after_the_linear_layer_at_whole_groups(catalog, tmp_path, g, precision,
                                                                                 named_after_linear):
    path = _gridrev(tmp_path, g, 8)
    assert ("RKNN-GRID-MERGE-ENDS" in violations(catalog, path, "rk3566", precision, "proj")) is named_after_linear
    assert ("RKNN-GRID-MERGE-ENDS" in violations(catalog, path, "rk3566", precision, "grid_back")) is not \
        named_after_linear
    assert "RKNN-GRID-MERGE-ENDS" in violations(catalog, path, "rk3566", precision, "grid_map")
    assert "RKNN-GRID-MERGE-ENDS" not in violations(catalog, path, "rk3566", precision, "grid_merge")


def test_one_window_per_axis_has_no_grid_merge(catalog, tmp_path):
    path = _gridrev(tmp_path, 8, 1)
    for node in ("proj", "grid_back", "grid_map"):
        assert "RKNN-GRID-MERGE-ENDS" not in violations(catalog, path, "rk3566", "fp16", node), node


def _merge(tmp_path, side=16, ch=32, perm=(0, 1, 3, 4, 2, 5), after_transpose=False):
    """timm Swin's patch merging on a channels-last map (probe `mergelast`), the split Reshape reading an identity
    op (the corpus' Pad) or the NHWC Transpose directly (the probe)."""
    half = side // 2
    nodes = [_n("Conv", ["x", "w0"], ["c"], "pre"), _n("Transpose", ["c"], ["xl"], "to_nhwc", perm=[0, 2, 3, 1])]
    src = "xl"
    if not after_transpose:
        nodes.append(_n("Relu", ["xl"], ["xr"], "act"))
        src = "xr"
    nodes += [_n("Reshape", [src, "s6"], ["x6"], "merge_split"),
              _n("Transpose", ["x6"], ["xt"], "merge_transpose", perm=list(perm)),
              _n("Reshape", ["xt", "s4"], ["xm"], "merge_join"),
              _n("LayerNormalization", ["xm", "g", "bn"], ["xn"], "merge_norm", axis=-1),
              _n("MatMul", ["xn", "wr"], ["y"], "reduction")]
    inits = [weight("w0", (ch, 3, 1, 1)), const("s6", np.array([1, half, 2, half, 2, ch], np.int64)),
             const("s4", np.array([1, half, half, 4 * ch], np.int64)), weight("g", (4 * ch,)),
             weight("bn", (4 * ch,)), weight("wr", (4 * ch, 2 * ch))]
    return save_model(tmp_path / "merge.onnx", nodes, [value("x", [1, 3, side, side])], [value("y", None)], inits)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_channels_last_patch_merging_is_cpu(catalog, tmp_path, precision):
    # probe mergelast:16:32:1 (and 14:16, 28:24): split Reshape, Transpose and the norm's transpose CPU
    path = _merge(tmp_path)
    for node in ("merge_split", "merge_transpose", "merge_norm"):
        assert "RKNN-MERGE-CHANNELS-LAST" in violations(catalog, path, "rk3566", precision, node), node
    for node in ("merge_join", "reduction", "act"):
        assert "RKNN-MERGE-CHANNELS-LAST" not in violations(catalog, path, "rk3566", precision, node), node


def test_the_split_reshape_is_named_after_the_transpose_before_it(catalog, tmp_path):
    # probe mergelast: xl_sw_rs_rs, the NHWC Transpose's output
    path = _merge(tmp_path, after_transpose=True)
    assert "RKNN-MERGE-CHANNELS-LAST" in violations(catalog, path, "rk3566", "fp16", "to_nhwc")
    assert "RKNN-MERGE-CHANNELS-LAST" not in violations(catalog, path, "rk3566", "fp16", "merge_split")


def test_a_window_partition_is_not_a_patch_merging(catalog, tmp_path):
    path = _merge(tmp_path, perm=(0, 1, 3, 2, 4, 5))
    for node in ("merge_split", "merge_transpose", "merge_norm"):
        assert "RKNN-MERGE-CHANNELS-LAST" not in violations(catalog, path, "rk3566", "fp16", node), node


def _pooled(tmp_path, side, heads=2, d=16, n_q=16):
    """MViTv2-style pooled V: per-head maps [heads, d, side, side] from a depthwise pooling Conv, flattened to
    [1, heads, d, N], transposed to tokens, normalised, and used as V of softmax(Q.K^T).V."""
    n = side * side
    nodes = [_n("Conv", ["x", "wdw"], ["vp"], "pool_v", group=d, pads=[1, 1, 1, 1]),
             _n("Reshape", ["vp", "s_flat"], ["vf"], "v_flatten"),
             _n("Transpose", ["vf"], ["vt"], "v_tokens", perm=[0, 1, 3, 2]),
             _n("LayerNormalization", ["vt", "g", "bn"], ["v"], "norm_v", axis=-1),
             _n("MatMul", ["q", "kt"], ["a"], "qk"), _n("Softmax", ["a"], ["p"], "softmax", axis=-1),
             _n("MatMul", ["p", "v"], ["y"], "pv")]
    inits = [weight("wdw", (d, 1, 3, 3)), const("s_flat", np.array([1, heads, d, n], np.int64)), weight("g", (d,)),
             weight("bn", (d,))]
    inputs = [value("x", [heads, d, side, side]), value("q", [1, heads, n_q, d]), value("kt", [1, heads, d, n])]
    return save_model(tmp_path / "pooled.onnx", nodes, inputs, [value("y", None)], inits)


@pytest.mark.parametrize(("side", "precision", "relaid"), [
    (7, "fp16", True), (7, "int8", True),  # N 49 (corpus stage 3): CPU in both
    (6, "fp16", False), (6, "int8", True),  # N 36: whole FP16 groups only (N 196 in the corpus: INT8 CPU only)
    (8, "fp16", False), (8, "int8", False),  # N 64 (N 784 in the corpus): NPU
])
def test_the_pooled_value_follows_the_8_byte_rule(catalog, tmp_path, side, precision, relaid):
    path = _pooled(tmp_path, side)
    for node in ("v_flatten", "v_tokens"):
        assert ("RKNN-POOLED-V" in violations(catalog, path, "rk3566", precision, node)) is relaid, node
    assert "RKNN-OP-NPU" not in violations(catalog, path, "rk3566", precision, "v_flatten")


def _score_grid(tmp_path, q=7, k=7, heads=2):
    """Scores [1, h, q*q, k*k] from Q.K^T viewed as a [1, h, q, q, k, k] grid, a relative-position term added,
    merged back and softmaxed (MViTv2's decomposed relative positions)."""
    nodes = [_n("MatMul", ["qh", "kt"], ["a"], "qk"), _n("Reshape", ["a", "s6"], ["a6"], "grid_view"),
             _n("Add", ["a6", "rel"], ["a6r"], "rel_add"), _n("Reshape", ["a6r", "s4"], ["a4"], "grid_back"),
             _n("Softmax", ["a4"], ["y"], "softmax", axis=-1)]
    inits = [const("s6", np.array([1, heads, q, q, k, k], np.int64)),
             const("s4", np.array([1, heads, q * q, k * k], np.int64))]
    inputs = [value("qh", [1, heads, q * q, 32]), value("kt", [1, heads, 32, k * k]),
              value("rel", [1, heads, q, q, k, 1])]
    return save_model(tmp_path / "grid6.onnx", nodes, inputs, [value("y", None)], inits)


@pytest.mark.parametrize("k", [7, 8])
def test_the_score_grid_is_merged_back_on_the_cpu_and_viewed_for_free(catalog, tmp_path, k):
    path = _score_grid(tmp_path, k=k)
    for precision in ("fp16", "int8"):
        assert "RKNN-SCORE-GRID-BACK" in violations(catalog, path, "rk3566", precision, "grid_back")
        assert "RKNN-HEAD-SPLIT" not in violations(catalog, path, "rk3566", precision, "grid_view")
    assert "RKNN-SCORE-GRID-BACK" not in violations(catalog, path, "rk3588", "fp16", "grid_back")


def _srattn(tmp_path, side=14, sr=2, heads=2, d=32, scaled=True):
    """The probe `srattn` graph (PVTv2/Twins): q from the tokens; k, v from the map reduced by a stride-SR Conv,
    flattened, normalised, projected and unbound in two; K^T scaled by a Mul (scaled) before Q.K^T."""
    n, m, ch = side * side, (side // sr) ** 2, heads * d
    kt = "kts" if scaled else "kt"
    nodes = [_n("Reshape", ["x", "s3"], ["r"], "to_rows"), _n("Transpose", ["r"], ["t"], "to_tokens", perm=[0, 2, 1]),
             _n("MatMul", ["t", "wq"], ["q0"], "q_matmul"), _n("Reshape", ["q0", "s_qh"], ["q4"], "q_heads"),
             _n("Transpose", ["q4"], ["q"], "q_transpose", perm=[0, 2, 1, 3]),
             _n("Conv", ["x", "wsr"], ["xr"], "sr_conv", strides=[sr, sr]),
             _n("Reshape", ["xr", "s_kv3"], ["kr"], "sr_rows"), _n("Transpose", ["kr"], ["kt0"], "sr_tokens", perm=[0, 2, 1]),
             _n("LayerNormalization", ["kt0", "g", "bn"], ["kn"], "sr_norm", axis=-1),
             _n("MatMul", ["kn", "wkv"], ["kv0"], "kv_matmul"), _n("Reshape", ["kv0", "s_kv5"], ["kv5"], "kv_heads"),
             _n("Transpose", ["kv5"], ["kvt"], "kv_transpose", perm=[2, 0, 3, 1, 4]),
             _n("Split", ["kvt", "two"], ["k1", "v1"], "kv_split", axis=0),
             _n("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"), _n("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
             _n("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2])]
    if scaled:
        nodes.append(_n("Mul", ["kt", "sc"], ["kts"], "k_scale"))
    nodes += [_n("MatMul", ["q", kt], ["a"], "qk"), _n("Softmax", ["a"], ["p"], "softmax", axis=-1),
              _n("MatMul", ["p", "v"], ["y"], "pv")]
    inits = [const("s3", np.array([1, ch, n], np.int64)), weight("wq", (ch, ch)),
             const("s_qh", np.array([1, n, heads, d], np.int64)), weight("wsr", (ch, ch, sr, sr)),
             const("s_kv3", np.array([1, ch, m], np.int64)), weight("g", (ch,)), weight("bn", (ch,)),
             weight("wkv", (ch, 2 * ch)), const("s_kv5", np.array([1, m, 2, heads, d], np.int64)),
             const("two", np.array([1, 1], np.int64)), const("ax0", np.array([0], np.int64)),
             const("sc", np.float32(0.4))]
    return save_model(tmp_path / "sr.onnx", nodes, [value("x", [1, ch, side, side])], [value("y", None)], inits)


@pytest.mark.parametrize(("side", "heads", "relaid"), [
    (14, 2, True), (16, 2, True),  # probe srattn:14:2:2:32 (M 49), :16:2:2:32 (M 64): CPU whatever M
    (14, 1, False),  # srattn:14:2:1:64: one head, no kv split or K^T layer
])
def test_keys_projected_apart_from_the_queries_are_relaid_with_several_heads(catalog, tmp_path, side, heads, relaid):
    path = _srattn(tmp_path, side=side, heads=heads, d=64 // heads)
    for precision in ("fp16", "int8"):
        for node in ("k_scale", "sr_rows"):
            assert ("RKNN-KV-HEADS" in violations(catalog, path, "rk3566", precision, node)) is relaid, node
        assert "RKNN-KV-HEADS" not in violations(catalog, path, "rk3566", precision, "kv_heads")  # named sr_rows
        assert "RKNN-KV-HEADS" not in violations(catalog, path, "rk3566", precision, "q_heads")


def test_without_a_reduction_the_kv_head_split_takes_the_reshape(catalog, tmp_path):
    # corpus timm_pvt_v2_b0 stage 3 (no sr): the kv head split Reshape_1 is the CPU layer
    path = _srattn(tmp_path, sr=1)
    assert "RKNN-KV-HEADS" in violations(catalog, path, "rk3566", "fp16", "kv_heads")
    assert "RKNN-KV-HEADS" not in violations(catalog, path, "rk3566", "fp16", "sr_rows")


def test_unscaled_keys_are_not_claimed(catalog, tmp_path):
    # GCViT's K^T goes straight into Q.K^T: its transpose has no layer in the corpus, so nothing is claimed
    path = _srattn(tmp_path, scaled=False)
    assert "RKNN-KV-HEADS" not in violations(catalog, path, "rk3566", "fp16", "k_transpose")


def _cosine(tmp_path, windows=4, n=64, heads=2, d=32, cos=True, unbind="split"):
    """Windowed attention on tokens [B, N, C] (B windows in the batch axis): qkv MatMul, head split Reshape
    [B, N, 3, h, d], Transpose (2,0,3,1,4), Split + Squeeze (timm) or Gather (torchvision), q and k
    L2-normalised over d (cos) or q scaled, softmax(Q.K^T).V, join, proj."""
    c = heads * d
    nodes = [_n("Reshape", ["x", "s3"], ["xw"], "to_windows"),  # windows cut from the token axis
             _n("MatMul", ["xw", "wqkv"], ["qkv"], "qkv"),
             _n("Reshape", ["qkv", "s5"], ["h5"], "heads"),
             _n("Transpose", ["h5"], ["t"], "unbind", perm=[2, 0, 3, 1, 4])]
    if unbind == "split":
        nodes.append(_n("Split", ["t", "ones"], ["q1", "k1", "v1"], "split", axis=0))
        nodes += [_n("Squeeze", [f"{p}1", "ax0"], [p], f"{p}_pick") for p in "qkv"]
    else:
        nodes += [_n("Gather", ["t", f"i{j}"], [p], f"{p}_pick", axis=0) for j, p in enumerate("qkv")]
    if cos:
        for p in "qk":
            nodes += [_n("ReduceL2", [p], [f"{p}n"], f"{p}_l2", axes=[-1], keepdims=1),
                      _n("Clip", [f"{p}n", "eps"], [f"{p}c"], f"{p}_clip"),
                      _n("Expand", [f"{p}c", "s4"], [f"{p}e"], f"{p}_expand"),
                      _n("Div", [p, f"{p}e"], [f"{p}u"], f"{p}_div")]
    else:
        nodes += [_n("Mul", ["q", "sc"], ["qu"], "q_div"), _n("Identity", ["k"], ["ku"], "k_div")]
    nodes += [_n("Transpose", ["ku"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
              _n("MatMul", ["qu", "kt"], ["a"], "qk"),
              _n("Softmax", ["a"], ["p"], "softmax", axis=-1),
              _n("MatMul", ["p", "v"], ["o"], "pv"),
              _n("Transpose", ["o"], ["ot"], "join_t", perm=[0, 2, 1, 3]),
              _n("Reshape", ["ot", "s3"], ["j"], "join"),
              _n("MatMul", ["j", "wp"], ["y"], "proj")]
    inits = [weight("wqkv", (c, 3 * c)), weight("wp", (c, c)),
             const("s5", np.array([windows, n, 3, heads, d], np.int64)),
             const("s4", np.array([windows, heads, n, d], np.int64)), const("s3", np.array([windows, n, c], np.int64)),
             const("ones", np.array([1, 1, 1], np.int64)), const("ax0", np.array([0], np.int64)),
             const("eps", np.array(1e-12, np.float32)), const("sc", np.array(d**-0.5, np.float32)),
             *(const(f"i{j}", np.array(j, np.int64)) for j in range(3))]
    return save_model(tmp_path / f"cos{windows}_{n}_{int(cos)}_{unbind}.onnx", nodes, [value("x", [1, windows * n, c])],
                      [value("y", None)], inits)


@pytest.mark.parametrize("unbind", ["split", "gather"])
@pytest.mark.parametrize("n", [64, 49])
def test_windowed_cosine_attention_relays_q_k_and_v_on_the_cpu(catalog, tmp_path, unbind, n):
    # probe swinattn:2:8:2:32:1 (64 tokens): qu_tp/qu_tp_rs (after q's Div), k_transpose#1/kt_rs, v_rs (after
    # v's Squeeze) CPU; the head split Reshape has no layer. Corpus tv_swin_v2_t (Gather, 64 tokens),
    # timm_swinv2_cr_tiny_ns_224 (Split + Squeeze, 49)
    path = _cosine(tmp_path, n=n, unbind=unbind)
    for target in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            for node in ("q_div", "k_transpose", "v_pick"):
                assert "RKNN-COSINE-WINDOW-OPERANDS" in violations(catalog, path, target, precision, node)
            for node in ("softmax", "k_div", "q_pick"):
                assert "RKNN-COSINE-WINDOW-OPERANDS" not in violations(catalog, path, target, precision, node)
            assert "RKNN-WINDOW-HEADS" not in violations(catalog, path, target, precision, "heads")
    assert "RKNN-COSINE-WINDOW-OPERANDS" not in violations(catalog, path, "rk3588", "fp16", "q_div")


def test_scaled_windowed_attention_keeps_the_window_heads_verdicts(catalog, tmp_path):
    # probe swinattn:2:8:2:32:0: no cosine normalisation; the head split is RKNN-WINDOW-HEADS'
    path = _cosine(tmp_path, cos=False)
    for node in ("q_div", "k_transpose", "v_pick"):
        assert "RKNN-COSINE-WINDOW-OPERANDS" not in violations(catalog, path, "rk3566", "fp16", node)
    assert "RKNN-WINDOW-HEADS" in violations(catalog, path, "rk3566", "fp16", "heads")


def test_one_window_of_cosine_attention_is_not_relaid(catalog, tmp_path):
    # corpus tv_swin_v2_t features.7 (one 8x8 window, B = 1): none of these is a CPU layer
    path = _cosine(tmp_path, windows=1, unbind="gather")
    for node in ("q_div", "k_transpose", "v_pick"):
        assert "RKNN-COSINE-WINDOW-OPERANDS" not in violations(catalog, path, "rk3566", "fp16", node)


def _relpos(tmp_path, side=14, heads=4, d=32, reader="Einsum"):
    """MViTv2's decomposed relative positions: heads [1, h, S*S, d] reshaped to [1, h, S, S, d] and read by the
    two Einsums with the per-axis tables (reader 'Relu': by something else)."""
    nodes = [_n("Relu", ["x"], ["q"], "q_norm"),
             _n("Reshape", ["q", "s5"], ["q5"], "split")]
    if reader == "Einsum":
        nodes += [_n("Einsum", ["q5", "rh"], ["eh"], "rel_h", equation="byhwc,hkc->byhwk"),
                  _n("Einsum", ["q5", "rw"], ["ew"], "rel_w", equation="byhwc,wkc->byhwk"),
                  _n("Add", ["eh", "ew"], ["y"], "sum")]
    else:
        nodes.append(_n("Relu", ["q5"], ["y"], "act"))
    inits = [const("s5", np.array([1, heads, side, side, d], np.int64)), weight("rh", (side, side, d)),
             weight("rw", (side, side, d))]
    return save_model(tmp_path / f"relpos{side}_{reader}.onnx", nodes, [value("x", [1, heads, side * side, d])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("side", "reader", "cpu"), [(14, "Einsum", True), (56, "Einsum", True),
                                                     (14, "Relu", False), (1, "Einsum", False)])
def test_heads_split_into_pixels_for_relpos_einsums_are_relaid_on_the_cpu(catalog, tmp_path, side, reader, cpu):
    # corpus timm_mvitv2_tiny attn/Reshape_7 (14x14 with 4 heads, 56x56 with 1): CPU transposes named after it
    path = _relpos(tmp_path, side=side, reader=reader)
    for target in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-RELPOS-Q-SPLIT" in violations(catalog, path, target, precision, "split")) is cpu
    assert "RKNN-RELPOS-Q-SPLIT" not in violations(catalog, path, "rk3588", "fp16", "split")
