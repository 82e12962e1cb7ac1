"""Ops the toolkit removes before lowering (is_noop): patterns match through them and they carry no verdict of
their own; and the running count of a run-time int32 mask (CumSum) that has no NPU form (corpus hf_vit, hf_roberta,
wave 6, every SoC, FP16 and INT8)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer.catalog._checks import is_noop
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n

SOCS = ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"]


def _attention(tmp_path, casts):
    """HF eager attention: q/k/v projections of 197 tokens, 3 heads of 64; softmax(q.k^T) -> `casts` Casts to
    float -> P.V (V's head reshape 'v_heads' and transpose 'v_t')."""
    n, h, d = 197, 3, 64
    nodes = []
    for part in "qkv":
        nodes += [_n("MatMul", ["x", f"w{part}"], [f"{part}0"], f"{part}_proj"),
                  _n("Reshape", [f"{part}0", "s4"], [f"{part}1"], f"{part}_heads"),
                  _n("Transpose", [f"{part}1"], [f"{part}2"], f"{part}_t", perm=[0, 2, 1, 3])]
    nodes += [_n("Transpose", ["k2"], ["kt"], "kt", perm=[0, 1, 3, 2]), _n("MatMul", ["q2", "kt"], ["s"], "qk"),
              _n("Softmax", ["s"], ["p0"], "sm", axis=-1)]
    for i in range(casts):
        nodes.append(_n("Cast", [f"p{i}"], [f"p{i + 1}"], f"cast{i}", to=TensorProto.FLOAT))
    nodes += [_n("MatMul", [f"p{casts}", "v2"], ["o"], "pv"), _n("Transpose", ["o"], ["ot"], "join", perm=[0, 2, 1, 3]),
              _n("Reshape", ["ot", "s3"], ["y"], "merge")]
    inits = [weight(f"w{p}", (h * d, h * d)) for p in "qkv"]
    inits += [const("s4", np.array([1, n, h, d], np.int64)), const("s3", np.array([1, n, h * d], np.int64))]
    return save_model(tmp_path / f"attn{casts}.onnx", nodes, [value("x", [1, n, h * d])], [value("y", None)], inits)


@pytest.mark.parametrize("casts", [0, 1, 2])
def test_v_operand_is_found_through_casts_to_the_same_type(catalog, tmp_path, casts):
    # corpus hf_vit (rk3566): Softmax -> Cast -> Cast -> MatMul_1; V's Reshape_2 and Transpose_1 Target CPU
    path = _attention(tmp_path, casts)
    for node in ("v_heads", "v_t"):
        assert "RKNN-EXMATMUL-B" in violations(catalog, path, "rk3566", "fp16", node)
    assert "RKNN-EXMATMUL-B" not in violations(catalog, path, "rk3566", "fp16", "k_t")


def test_a_cast_to_another_type_is_not_a_noop(tmp_path):
    nodes = [_n("Cast", ["x"], ["a"], "same", to=TensorProto.FLOAT), _n("Cast", ["a"], ["b"], "half", to=TensorProto.FLOAT16),
             _n("Expand", ["x", "s_same"], ["c"], "expand_same"), _n("Expand", ["x", "s_wide"], ["d"], "expand_wide"),
             _n("Identity", ["x"], ["e"], "ident")]
    inits = [const("s_same", np.array([1, 8, 4, 4], np.int64)), const("s_wide", np.array([2, 8, 4, 4], np.int64))]
    path = save_model(tmp_path / "noops.onnx", nodes, [value("x", [1, 8, 4, 4])],
                      [value("b", None, TensorProto.FLOAT16), value("c", None), value("d", None), value("e", None)],
                      inits)
    graph = load_model(path)
    found = {name: is_noop(graph, graph.node(name)) for name in ("same", "half", "expand_same", "expand_wide", "ident")}
    assert found == {"same": True, "half": False, "expand_same": True, "expand_wide": False, "ident": True}


def _position_ids(tmp_path, expand_to):
    """RoBERTa's position ids: ids != pad -> int32 -> CumSum ('count') * mask + pad -> int64 -> Expand to `expand_to`
    ('expand') -> Gather from the position table."""
    nodes = [_n("Equal", ["ids", "pad"], ["eq"], "eq"), _n("Not", ["eq"], ["ne"], "not"),
             _n("Cast", ["ne"], ["m"], "mask", to=TensorProto.INT32), _n("CumSum", ["m", "axis"], ["c"], "count"),
             _n("Mul", ["c", "m"], ["cm"], "mul"), _n("Cast", ["cm"], ["pos"], "to64", to=TensorProto.INT64),
             _n("Expand", ["pos", "shape"], ["pe"], "expand"), _n("Gather", ["table", "pe"], ["y"], "lookup")]
    inits = [const("pad", np.array(1, np.int64)), const("axis", np.array(1, np.int32)),
             const("shape", np.array(expand_to, np.int64)), weight("table", (64, 16))]
    return save_model(tmp_path / f"pos{len(expand_to)}{expand_to[0]}.onnx", nodes,
                      [value("ids", [1, 32], TensorProto.INT64)], [value("y", None)], inits)


@pytest.mark.parametrize("target", SOCS)
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_running_count_of_a_run_time_mask_is_cpu(catalog, tmp_path, target, precision):
    path = _position_ids(tmp_path, [1, 32])
    assert "RKNN-INT-DATA" in violations(catalog, path, target, precision, "count")
    assert "RKNN-INT-DATA" not in violations(catalog, path, target, precision, "expand")  # to its own shape: removed


def test_an_expand_that_broadcasts_indices_stays_cpu(catalog, tmp_path):
    path = _position_ids(tmp_path, [2, 32])
    assert "RKNN-INT-DATA" in violations(catalog, path, "rk3588", "fp16", "expand")


def test_a_float_cumsum_stays_on_the_npu(catalog, tmp_path):
    path = save_model(tmp_path / "cumsum.onnx", [_n("CumSum", ["x", "axis"], ["y"], "n")], [value("x", [1, 8, 4, 4])],
                      [value("y", None)], [const("axis", np.array(3, np.int32))])
    assert violations(catalog, path, "rk3588", "fp16") == set()


@pytest.mark.parametrize(("op", "neutral", "cpu"), [("Add", 0, False), ("Sub", 0, False), ("Mul", 1, False),
                                                  ("Div", 1, False), ("Add", 1, True), ("Mul", 0, True)])
def test_integer_arithmetic_with_a_neutral_constant_is_dropped(catalog, tmp_path, op, neutral, cpu):
    """corpus CLIP text pooling: ArgMax(ids) + zeros at batch 1 has no layer; the Gather it feeds stays CPU."""
    nodes = [helper.make_node("ArgMax", ["ids"], ["am"], name="argmax", axis=-1, keepdims=0),
             helper.make_node(op, ["am", "k"], ["idx"], name="n"),
             helper.make_node("Gather", ["table", "idx"], ["y"], name="pick", axis=0)]
    inits = [const("k", np.array([neutral], np.int64)), const("table", np.ones((16, 8), np.float32))]
    path = save_model(tmp_path / f"{op}{neutral}.onnx", nodes, [value("ids", [1, 16], TensorProto.INT64)],
                      [value("y", None)], inits)
    for soc in ("rk3588", "rk3576", "rk3566"):
        assert ("RKNN-INT-DATA" in violations(catalog, path, soc, "fp16", "n")) is cpu
        assert "RKNN-INT-DATA" in violations(catalog, path, soc, "fp16", "pick")
