"""RKNN-QKV-SPLIT-V: on RK3566/RK3568 a q/k/v projection cut into parts is one Conv per part named after the
layer making its input, and V's head reshape falls to the CPU with V's transpose (rknn-toolkit2 2.5.0 corpus
layer tables: timm_pit_ti_224, timm_vit_relpos_small_patch16_224, timm_deit_tiny_patch16_224(_dynamo))."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n

RULE = "RKNN-QKV-SPLIT-V"


def _attention(tmp_path, tokens, heads=3, d=64, bias="own", cut="split", batch=1, between=()):
    """LayerNorm -> q/k/v MatMul (+ bias) -> Reshape [b, N, 3, h, d] -> Transpose (2,0,3,1,4) -> Split (TorchScript)
    or three Slices (dynamo) -> Squeeze -> softmax(Q.K^T).V -> head join -> proj. `bias`: "own" (an initializer of
    its own), "none", or "identity" (read through an Identity, as TorchScript deduplicates equal zero biases).
    `between`: nodes put between the LayerNorm and the projection ("gain": a Mul by a constant, "pad": a Pad of
    zeros, "window": a one-window partition, Reshape + unit-axis Transpose + Reshape; "move": a Transpose that
    moves data)."""
    ch = heads * d
    nodes = [_n("LayerNormalization", ["x", "g", "bn"], ["ln0"], "norm", axis=-1)]
    extra = {"gain": weight("gain", (ch,)), "pad": const("zeros", np.zeros(6, np.int64)),
             "window": const("s4", np.array([batch, 1, tokens, ch], np.int64))}
    inits = [extra[kind] for kind in dict.fromkeys("window" if k == "move" else k for k in between)]
    for i, kind in enumerate(between):
        a, b = f"ln{i}", f"ln{i + 1}"
        if kind == "gain":
            nodes.append(_n("Mul", [a, "gain"], [b], f"gain{i}"))
        elif kind == "pad":
            nodes.append(_n("Pad", [a, "zeros"], [b], f"pad{i}"))
        else:
            nodes += [_n("Reshape", [a, "s4"], [f"w{i}a"], f"window{i}_split"),
                      _n("Transpose", [f"w{i}a"], [f"w{i}b"], f"window{i}_partition",
                         perm=[1, 0, 2, 3] if kind == "window" else [0, 1, 3, 2]),
                      _n("Reshape", [f"w{i}b", "s_tok"], [b], f"window{i}_tokens")]
    nodes.append(_n("MatMul", [f"ln{len(between)}", "wqkv"], ["p0"], "qkv"))
    inits += [weight("g", (ch,)), weight("bn", (ch,)), weight("wqkv", (ch, 3 * ch)),
             const("s5", np.array([batch, tokens, 3, heads, d], np.int64)), const("ax0", np.array([0], np.int64)),
             const("sc", np.float32(0.125)), const("s_tok", np.array([batch, tokens, ch], np.int64)),
             weight("wp", (ch, ch))]
    projected = "p0"
    if bias != "none":
        inits.append(weight("bqkv", (3 * ch,)))
        source = "bqkv"
        if bias == "identity":
            nodes.append(_n("Identity", ["bqkv"], ["bqkv_shared"], "bias_dedup"))
            source = "bqkv_shared"
        nodes.append(_n("Add", ["p0", source], ["p1"], "qkv_bias"))
        projected = "p1"
    nodes += [_n("Reshape", [projected, "s5"], ["p5"], "qkv_reshape"),
              _n("Transpose", ["p5"], ["pt"], "qkv_transpose", perm=[2, 0, 3, 1, 4])]
    if cut == "split":
        inits.append(const("ones", np.array([1, 1, 1], np.int64)))
        nodes.append(_n("Split", ["pt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0))
    else:
        for i, part in enumerate("qkv"):
            inits += [const(f"st{i}", np.array([i], np.int64)), const(f"en{i}", np.array([i + 1], np.int64))]
            nodes.append(_n("Slice", ["pt", f"st{i}", f"en{i}", "ax0"], [f"{part}1"], f"{part}_slice"))
    nodes += [_n("Squeeze", [f"{part}1", "ax0"], [part], f"{part}_squeeze") for part in "qkv"]
    nodes += [_n("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
              _n("MatMul", ["q", "kt"], ["s0"], "scores"), _n("Mul", ["s0", "sc"], ["s1"], "scale"),
              _n("Softmax", ["s1"], ["pr"], "softmax", axis=-1), _n("MatMul", ["pr", "v"], ["o"], "pv"),
              _n("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
              _n("Reshape", ["ot", "s_tok"], ["tok"], "o_join"), _n("MatMul", ["tok", "wp"], ["y"], "proj")]
    return save_model(tmp_path / "attn.onnx", nodes, [value("x", [batch, tokens, ch])], [value("y", None)], inits)


@pytest.mark.parametrize(("tokens", "d", "precision", "cpu"), [
    (196, 64, "fp16", False), (196, 64, "int8", True),  # N a multiple of 4, not of 8
    (197, 64, "fp16", True), (197, 64, "int8", True),  # deit's class token
    (200, 64, "fp16", False), (200, 64, "int8", False),
    (200, 12, "fp16", False), (200, 12, "int8", True),  # d = 12: whole FP16 groups, not INT8 ones
    (200, 10, "fp16", True),
])
def test_the_layer_before_a_split_projection_follows_vs_transpose(catalog, tmp_path, tokens, d, precision, cpu):
    path = _attention(tmp_path, tokens, heads=192 // d if 192 % d == 0 else 2, d=d)
    for target in ("rk3566", "rk3568"):
        assert (RULE in violations(catalog, path, target, precision, "norm")) is cpu, target
    assert RULE not in violations(catalog, path, "rk3588", precision, "norm")


@pytest.mark.parametrize("bias", ["own", "none"])
def test_a_bias_of_its_own_or_none_is_cut_with_the_weights(catalog, tmp_path, bias):
    path = _attention(tmp_path, 197, bias=bias)
    assert RULE in violations(catalog, path, "rk3566", "fp16", "norm")


def test_a_split_after_a_shared_bias_keeps_one_convolution(catalog, tmp_path):
    # timm_deit_tiny_patch16_224 (TorchScript): the zero bias through Identity, one Conv of 576 channels
    path = _attention(tmp_path, 197, bias="identity")
    assert RULE not in violations(catalog, path, "rk3566", "fp16", "norm")
    assert RULE not in violations(catalog, path, "rk3566", "int8", "norm")


def test_slices_cut_the_projection_whatever_its_bias(catalog, tmp_path):
    # timm_deit_tiny_patch16_224_dynamo: Slices after the deduplicated bias, <LayerNorm>#1_mm#2_rs CPU
    path = _attention(tmp_path, 197, bias="identity", cut="slice")
    assert RULE in violations(catalog, path, "rk3566", "fp16", "norm")
    path = _attention(tmp_path, 200, bias="identity", cut="slice")
    assert RULE not in violations(catalog, path, "rk3566", "int8", "norm")


def test_a_batch_of_images_is_not_this_lowering(catalog, tmp_path):
    path = _attention(tmp_path, 197, batch=2)
    assert RULE not in violations(catalog, path, "rk3566", "fp16", "norm")


def test_only_the_projections_input_is_named(catalog, tmp_path):
    path = _attention(tmp_path, 197)
    for node in ("qkv", "qkv_bias", "qkv_reshape", "q_squeeze", "proj"):
        assert RULE not in violations(catalog, path, "rk3566", "fp16", node), node


@pytest.mark.parametrize(("between", "named"), [
    (("gain",), "norm"),  # timm_test_vit4's RMSNorm gain: mul-rs_mm#2_rs, named after x * rsqrt
    (("pad", "window"), "norm"),  # timm_swinv2_cr / timm_gcvit single-window stages
    (("gain", "pad"), "norm"),
])
def test_nodes_folded_in_front_of_the_projection_pass_its_name_on(catalog, tmp_path, between, named):
    path = _attention(tmp_path, 197, between=between)
    report = check_graph(load_model(path), catalog, "rk3566")
    flagged = {n.name for n in report.graph.nodes
               if any(v.rule == RULE and v.precision == "fp16" for v in report.verdict(n.name).violations)}
    assert flagged == {named}


def test_a_transpose_that_moves_data_ends_the_fold(catalog, tmp_path):
    path = _attention(tmp_path, 197, between=("move",))
    assert RULE not in violations(catalog, path, "rk3566", "fp16", "norm")


def test_a_key_value_projection_alone_stays_one_convolution(catalog, tmp_path):
    # timm_volo_d1_224_dynamo class attention: kv in two Slices, Conv node_linear_76#2 whole, V transpose apart
    ch, tokens = 192, 197
    nodes = [_n("LayerNormalization", ["x", "g", "bn"], ["ln"], "norm", axis=-1),
             _n("MatMul", ["ln", "wkv"], ["p0"], "kv"), _n("MatMul", ["ln", "wq"], ["q0"], "q_proj"),
             _n("Reshape", ["q0", "s4"], ["q4"], "q_heads"), _n("Transpose", ["q4"], ["q"], "q_t", perm=[0, 2, 1, 3]),
             _n("Reshape", ["p0", "s5"], ["p5"], "kv_reshape"),
             _n("Transpose", ["p5"], ["pt"], "kv_transpose", perm=[2, 0, 3, 1, 4])]
    inits = [weight("g", (ch,)), weight("bn", (ch,)), weight("wkv", (ch, 2 * ch)), weight("wq", (ch, ch)),
             const("s4", np.array([1, tokens, 3, 64], np.int64)), const("s5", np.array([1, tokens, 2, 3, 64], np.int64)),
             const("ax0", np.array([0], np.int64))]
    for i, part in enumerate("kv"):
        inits += [const(f"st{i}", np.array([i], np.int64)), const(f"en{i}", np.array([i + 1], np.int64))]
        nodes += [_n("Slice", ["pt", f"st{i}", f"en{i}", "ax0"], [f"{part}1"], f"{part}_slice"),
                  _n("Squeeze", [f"{part}1", "ax0"], [part], f"{part}_squeeze")]
    nodes += [_n("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
              _n("MatMul", ["q", "kt"], ["s0"], "scores"), _n("Softmax", ["s0"], ["pr"], "softmax", axis=-1),
              _n("MatMul", ["pr", "v"], ["y"], "pv")]
    path = save_model(tmp_path / "kv.onnx", nodes, [value("x", [1, tokens, ch])], [value("y", None)], inits)
    assert RULE not in violations(catalog, path, "rk3566", "fp16", "norm")
    assert "RKNN-EXMATMUL-B" in {r for n in ("v_squeeze", "v_slice") for r in violations(catalog, path, "rk3566", "fp16", n)}
