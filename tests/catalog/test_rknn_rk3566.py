"""RK3566/RK3568 verdicts of ops the toolkit does not rewrite (optimizer/catalog/_rk3566.py), at the boundaries
measured with rknn-toolkit2 2.5.0 (tools/probe_rknn_rk3566.py spmean; the scratch Einsum probe on rk3566)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations, weight


def _se_mean(tmp_path, axes, keepdims=1, side=14, channels=64):
    """Relu'd map -> ReduceMean(axes) [-> Reshape to [1, C, 1, 1]] -> Conv -> Sigmoid -> Mul into the map."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="act"),
             helper.make_node("ReduceMean", ["r"], ["g"], name="mean", axes=axes, keepdims=keepdims)]
    gate_in = "g"
    if not keepdims:
        nodes.append(helper.make_node("Reshape", ["g", "s"], ["gv"], name="to_vec"))
        gate_in = "gv"
    nodes += [helper.make_node("Conv", [gate_in, "w"], ["gc"], name="se_conv"),
              helper.make_node("Sigmoid", ["gc"], ["gate"], name="gate"),
              helper.make_node("Mul", ["r", "gate"], ["y"], name="scale")]
    inits = [weight("w", (channels, channels, 1, 1)), const("s", np.array([1, channels, 1, 1], np.int64))]
    return save_model(tmp_path / "se.onnx", nodes, [value("x", [1, channels, side, side])], [value("y", None)],
                      inits)


@pytest.mark.parametrize(("axes", "unpooled"), [([2, 3], False), ([-2, -1], False), ([3, 2], True),
                                                ([-1, -2], True)])
def test_a_spatial_mean_is_global_pooling_only_with_ascending_axes(catalog, tmp_path, axes, unpooled):
    path = _se_mean(tmp_path, axes)
    for target in ("rk3566", "rk3568"):
        for node in ("mean", "act"):  # the mean's result transpose and the producer's relayout into tokens
            assert ("RKNN-PIXEL-MEAN" in violations(catalog, path, target, "fp16", node)) is unpooled
        assert "RKNN-PIXEL-MEAN" not in violations(catalog, path, target, "int8", "se_conv")
    assert "RKNN-PIXEL-MEAN" not in violations(catalog, path, "rk3588", "fp16", "act")


def test_the_reshape_reading_an_unpooled_mean_takes_its_transpose(catalog, tmp_path):
    # probe spmean:64:14:1:0: the transpose back is named after the Reshape (to_vec#1), the mean has no layer
    path = _se_mean(tmp_path, [3, 2], keepdims=0)
    assert "RKNN-PIXEL-MEAN" in violations(catalog, path, "rk3566", "int8", "to_vec")
    assert "RKNN-PIXEL-MEAN" not in violations(catalog, path, "rk3566", "int8", "mean")
    assert "RKNN-PIXEL-MEAN" in violations(catalog, path, "rk3566", "int8", "act")


@pytest.mark.parametrize(("side", "unpooled"), [(1, False), (2, True)])
def test_a_one_pixel_mean_has_nothing_to_pool(catalog, tmp_path, side, unpooled):
    # probe spmean:64:1:1:1: on a 1x1 map the (3, 2) mean leaves no layer at all
    path = _se_mean(tmp_path, [3, 2], side=side)
    assert ("RKNN-PIXEL-MEAN" in violations(catalog, path, "rk3566", "fp16", "mean")) is unpooled


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


@pytest.mark.parametrize(("equation", "spaced"), [("bghid,bghjd->bghij", False),
                                                  ("B G H I D, B G H J D -> B G H I J", True),
                                                  ("bghid,bghjd -> bghij", True)])
def test_an_einsum_with_spaces_in_its_equation_is_cpu_with_its_rank5_operands(catalog, tmp_path, equation,
                                                                                spaced):
    path = _einsum(tmp_path, equation)
    for target in ("rk3566", "rk3568"):
        for node in ("ein", "scale", "split"):
            assert ("RKNN-EINSUM-OPERANDS" in violations(catalog, path, target, "int8", node)) is spaced
        assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, target, "int8", "merge")
    assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, "rk3588", "fp16", "ein")


def test_a_rank4_operand_of_a_spaced_einsum_keeps_its_producer_verdict(catalog, tmp_path):
    path = _einsum(tmp_path, "b h i d, b h j d -> b h i j", rank5=False)
    assert "RKNN-EINSUM-OPERANDS" in violations(catalog, path, "rk3566", "fp16", "ein")
    assert "RKNN-EINSUM-OPERANDS" not in violations(catalog, path, "rk3566", "fp16", "scale")
