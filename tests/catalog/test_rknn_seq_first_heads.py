"""Sequence-first attention heads on RK3566/RK3568 (torch nn.MultiheadAttention as TorchScript writes it: tokens
[N, 1, C], heads [N, H, d] brought to [H, N, d] by (1, 0, 2) Transposes). The toolkit holds the heads as
(H, d, 1, N), so the q/k transposes, K^T and the result's transpose back are exMatMul's operand and result
layout, and only V's Reshape and Transpose are layers, under RKNN-EXMATMUL-B's 8-byte rule (rknn-toolkit2 2.5.0
corpus layer tables: rtdetr_l_320 decoder self_attn and /model.11/ma, nn_decoder_d128_h4_l2)."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, weight
from tests.conftest import named as _n

V_RULE = "RKNN-EXMATMUL-B"


def _mha(tmp_path, tokens, heads=8, d=32, unit_batch=False):
    """q/k/v projections of [N, 1, C] -> Reshape [N, H, d] -> Transpose (1,0,2) (K: (1,2,0)) -> softmax(Q.K^T).V ->
    Transpose (1,0,2) -> Reshape [N, C] -> Gemm. `unit_batch`: q and v reach their MatMul through a Reshape adding
    a unit batch axis ([H, N, d] -> [1, H, N, d]), as the exporter writes it when it restores the batch."""
    ch = heads * d
    nodes, inits = [], [const("s_heads", np.array([tokens, heads, d], np.int64)),
                        const("s_join", np.array([tokens, ch], np.int64)), const("sc", np.float32(d ** -0.5)),
                        weight("wo", (ch, ch)), weight("bo", (ch,))]
    for part in "qkv":
        inits += [weight(f"w{part}", (ch, ch)), weight(f"b{part}", (ch,))]
        nodes += [_n("MatMul", ["x", f"w{part}"], [f"{part}0"], f"{part}_proj"),
                  _n("Add", [f"{part}0", f"b{part}"], [f"{part}1"], f"{part}_bias"),
                  _n("Reshape", [f"{part}1", "s_heads"], [f"{part}2"], f"{part}_heads"),
                  _n("Transpose", [f"{part}2"], [f"{part}3"], f"{part}_transpose",
                     perm=[1, 2, 0] if part == "k" else [1, 0, 2])]
    q, v = "q3", "v3"
    if unit_batch:
        inits.append(const("s_unit", np.array([1, heads, tokens, d], np.int64)))
        inits.append(const("s_kt", np.array([1, heads, d, tokens], np.int64)))
        nodes += [_n("Reshape", ["q3", "s_unit"], ["q4"], "q_unit"), _n("Reshape", ["v3", "s_unit"], ["v4"], "v_unit"),
                  _n("Reshape", ["k3", "s_kt"], ["k4"], "k_unit")]
        q, v = "q4", "v4"
    nodes += [_n("Mul", [q, "sc"], ["qs"], "q_scale"),
              _n("MatMul", ["qs", "k4" if unit_batch else "k3"], ["s"], "scores"),
              _n("Softmax", ["s"], ["p"], "softmax", axis=-1), _n("MatMul", ["p", v], ["o"], "pv")]
    if unit_batch:
        inits.append(const("s_hn", np.array([heads, tokens, d], np.int64)))
        nodes.append(_n("Reshape", ["o", "s_hn"], ["o3"], "o_squeeze"))
    nodes += [_n("Transpose", ["o3" if unit_batch else "o"], ["ot"], "o_transpose", perm=[1, 0, 2]),
              _n("Reshape", ["ot", "s_join"], ["tok"], "o_join"), _n("Gemm", ["tok", "wo", "bo"], ["y"], "out_proj")]
    return save_model(tmp_path / "mha.onnx", nodes, [value("x", [tokens, 1, ch])], [value("y", None)], inits)


def _cpu(report, node: str, precision: str) -> set[str]:
    verdict = report.verdict(node)
    return set() if verdict.runs_on("npu", precision) else {v.rule for v in verdict.violations
                                                           if v.accelerator == "npu" and v.precision == precision}


@pytest.mark.parametrize("unit_batch", [False, True])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_the_head_layout_around_exmatmul_stays_on_the_npu(catalog, tmp_path, precision, unit_batch):
    # rtdetr_l_320 self_attn Transpose / Transpose_2 / Transpose_3: no layer; nn_decoder Reshape_3 -> [1,4,16,32]
    report = check_graph(load_model(_mha(tmp_path, 300, unit_batch=unit_batch)), catalog, "rk3566")
    for node in ("q_heads", "q_transpose", "k_heads", "k_transpose", "o_transpose", "o_join", "q_scale"):
        assert _cpu(report, node, precision) == set(), node


@pytest.mark.parametrize(("tokens", "d", "precision", "cpu"), [
    (300, 32, "fp16", False), (300, 32, "int8", True),  # rtdetr decoder: 300 % 8 = 4
    (100, 32, "int8", True),  # rtdetr /model.11/ma
    (304, 32, "int8", False),
    (304, 12, "fp16", False), (304, 12, "int8", True),
    (98, 32, "fp16", True),
])
def test_vs_reshape_and_transpose_are_layers_under_the_8_byte_rule(catalog, tmp_path, tokens, d, precision, cpu):
    report = check_graph(load_model(_mha(tmp_path, tokens, heads=4, d=d)), catalog, "rk3568")
    for node in ("v_heads", "v_transpose"):
        assert (V_RULE in _cpu(report, node, precision)) is cpu, node
    assert _cpu(report, "v_bias", precision) == set()


def test_other_socs_are_untouched(catalog, tmp_path):
    report = check_graph(load_model(_mha(tmp_path, 300)), catalog, "rk3588")
    for node in ("v_heads", "v_transpose", "q_transpose", "o_transpose"):
        assert _cpu(report, node, "int8") == set(), node


def test_a_sequence_first_transpose_into_a_projection_still_moves_data(catalog, tmp_path):
    # timm_sequencer2d_s rnn_h/Transpose (1,0,2) of [32,32,192]: a real transpose, Target CPU
    nodes = [_n("Transpose", ["x"], ["t"], "swap", perm=[1, 0, 2]), _n("MatMul", ["t", "w"], ["y"], "proj")]
    path = save_model(tmp_path / "swap.onnx", nodes, [value("x", [32, 32, 192])], [value("y", None)],
                      [weight("w", (192, 64))])
    report = check_graph(load_model(path), catalog, "rk3566")
    assert "RKNN-OP-NPU" in _cpu(report, "swap", "fp16")
