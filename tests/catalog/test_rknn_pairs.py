"""Interleaved pairs (optimizer/catalog/_pairs.py), just inside and just outside RKNN-PAIR-SPLIT: probes
rope_pairs_h*_n*_d* (rknn-toolkit2 2.5.0) and corpus V-JEPA 2's rotary embedding."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations

RULE = "RKNN-PAIR-SPLIT"


def _rope(tmp_path, d, heads=4, tokens=64, pair=2):
    """x [1,h,N,d] -> Reshape [1,h,N,d/pair,pair] (node cut) -> Split -> [-x2, x1] -> Reshape back (node join)
    -> x cos + rot x sin."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Reshape", ["r", "s5"], ["p"], name="cut"),
             helper.make_node("Split", ["p", "halves"], ["a", "b"], name="split", axis=4),
             helper.make_node("Neg", ["b"], ["nb"], name="neg"),
             helper.make_node("Concat", ["nb", "a"], ["q"], name="stack", axis=4),
             helper.make_node("Reshape", ["q", "s4"], ["rot"], name="join"),
             helper.make_node("Mul", ["r", "cos"], ["rc"], name="mul_cos"),
             helper.make_node("Mul", ["rot", "sin"], ["rs"], name="mul_sin"),
             helper.make_node("Add", ["rc", "rs"], ["y"], name="add")]
    half = pair // 2
    inits = [const("s5", np.array([1, heads, tokens, d // pair, pair], np.int64)),
             const("halves", np.array([half, pair - half], np.int64)),
             const("s4", np.array([1, heads, tokens, d], np.int64)),
             const("cos", np.ones((tokens, d), np.float32)), const("sin", np.ones((tokens, d), np.float32))]
    return save_model(tmp_path / f"rope{d}_{pair}.onnx", nodes, [value("x", [1, heads, tokens, d])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("d", "fp16", "int8"), [(12, True, True), (20, True, True), (16, False, False),
                                                 (24, False, True), (32, False, False), (40, False, True),
                                                 (64, False, False)])
def test_rk3588_relays_pairs_out_unless_the_axis_fills_whole_16_byte_rows(catalog, tmp_path, d, fp16, int8):
    path = _rope(tmp_path, d)
    for node in ("cut", "join"):
        assert (RULE in violations(catalog, path, "rk3588", "fp16", node)) is fp16, node
        assert (RULE in violations(catalog, path, "rk3588", "int8", node)) is int8, node


@pytest.mark.parametrize("d", [16, 20, 64])
def test_rk3566_always_and_the_other_socs_never(catalog, tmp_path, d):
    path = _rope(tmp_path, d)
    for precision in ("fp16", "int8"):
        for node in ("cut", "join"):
            assert RULE in violations(catalog, path, "rk3566", precision, node)
            assert RULE in violations(catalog, path, "rk3568", precision, node)
            for soc in ("rk3576", "rk3562", "rv1126b"):
                assert RULE not in violations(catalog, path, soc, precision, node)


def test_a_cut_into_fours_is_not_pairs(catalog, tmp_path):
    path = _rope(tmp_path, 20, pair=4)
    for soc in ("rk3588", "rk3566"):
        assert RULE not in violations(catalog, path, soc, "fp16", "cut")


def _stacked(tmp_path, d, heads=4, tokens=64):
    """timm's ViT-RoPE / EVA-02 form: even and odd elements by strided Slices, [-odd, even] stacked by Unsqueeze +
    Concat on a new last axis, one Reshape back (node join): no pair cut anywhere."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Slice", ["r", "z", "end", "ax", "two"], ["ev"], name="even"),
             helper.make_node("Slice", ["r", "one", "end", "ax", "two"], ["od"], name="odd"),
             helper.make_node("Neg", ["od"], ["nod"], name="neg"),
             helper.make_node("Unsqueeze", ["nod", "last"], ["u1"], name="unsq_a"),
             helper.make_node("Unsqueeze", ["ev", "last"], ["u2"], name="unsq_b"),
             helper.make_node("Concat", ["u1", "u2"], ["q"], name="stack", axis=4),
             helper.make_node("Reshape", ["q", "s4"], ["rot"], name="join"),
             helper.make_node("Mul", ["rot", "sin"], ["y"], name="mul_sin")]
    inits = [const("z", np.array([0], np.int64)), const("one", np.array([1], np.int64)),
             const("end", np.array([d], np.int64)), const("ax", np.array([3], np.int64)),
             const("two", np.array([2], np.int64)), const("last", np.array([4], np.int64)),
             const("s4", np.array([1, heads, tokens, d], np.int64)), const("sin", np.ones((tokens, d), np.float32))]
    return save_model(tmp_path / f"stack{d}.onnx", nodes, [value("x", [1, heads, tokens, d])], [value("y", None)],
                      inits)


@pytest.mark.parametrize("d", [12, 20, 64])
def test_a_join_of_pairs_that_were_never_cut_is_not_relaid_out(catalog, tmp_path, d):
    """Probes rope_stack_h*_n*_d* (d = 12, 16, 20, 64): the toolkit folds the slices, the stack and the join into
    one NPU convolution on every SoC; corpus ViT-RoPE and EVA-02 keep the join on the NPU on rk3566 and rk3588."""
    path = _stacked(tmp_path, d)
    for soc in ("rk3588", "rk3566"):
        for precision in ("fp16", "int8"):
            assert RULE not in violations(catalog, path, soc, precision, "join")
    assert RULE in violations(catalog, _rope(tmp_path, d), "rk3566", "fp16", "join")
