"""RKNN-DIV-VECTOR: in FP16 a Div of two run-time vectors of one shape (one pixel each) runs on the CPU, while
the same division of a few-pixel map, or a vector divided by a broadcast single value, stays on the NPU (probes
div_same_hw1/hw4/hw16, div_same_hw1_tokens, div_grn, div_tokens_by_scalar in tools/probe_rknn_patterns.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n

RULE = "RKNN-DIV-VECTOR"


def _pooled_division(tmp_path, pool, divisor="same"):
    """Conv [1, 32, 8, 8] -> AveragePool and MaxPool of `pool` -> |max| + 1 -> Div ('div') -> Conv."""
    nodes = [_n("Conv", ["x", "w0"], ["m"], "conv"),
             _n("AveragePool", ["m"], ["g"], "avg", kernel_shape=[pool, pool], strides=[pool, pool]),
             _n("MaxPool", ["m"], ["gm"], "max", kernel_shape=[pool, pool], strides=[pool, pool]),
             _n("Abs", ["gm"], ["ga"], "abs"), _n("Add", ["ga", "one"], ["d"], "add")]
    if divisor == "scalar":  # the channel mean, broadcast
        nodes += [_n("ReduceMean", ["d"], ["dm"], "mean", axes=[1], keepdims=1), _n("Div", ["g", "dm"], ["q"], "div")]
    else:
        nodes.append(_n("Div", ["g", "d"], ["q"], "div"))
    nodes.append(_n("Conv", ["q", "w1"], ["y"], "post"))
    inits = [weight("w0", (32, 3, 1, 1)), weight("w1", (8, 32, 1, 1)), const("one", np.array(1.0, np.float32))]
    return save_model(tmp_path / f"div_{pool}_{divisor}.onnx", nodes, [value("x", [1, 3, 8, 8])], [value("y", None)],
                      inits, opset=13)


@pytest.mark.parametrize(("pool", "divisor", "cpu"), [(8, "same", True),  # [1,32,1,1] / [1,32,1,1]
                                                      (4, "same", False),  # [1,32,2,2]: a map
                                                      (2, "same", False),
                                                      (8, "scalar", False)])  # [1,32,1,1] / [1,1,1,1]
@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"])
def test_a_division_of_two_vectors_runs_on_the_cpu_in_fp16(catalog, tmp_path, pool, divisor, cpu, target):
    path = _pooled_division(tmp_path, pool, divisor)
    assert (RULE in violations(catalog, path, target, "fp16", "div")) is cpu


def test_int8_keeps_its_own_reason(catalog, tmp_path):
    path = _pooled_division(tmp_path, 8)
    assert RULE not in violations(catalog, path, "rk3588", "int8", "div")  # ops.Div: a run-time divisor in INT8
    assert violations(catalog, path, "rk3588", "int8", "div")


def test_a_rank_2_vector_division_stays_on_the_npu(catalog, tmp_path):
    # corpus hf_dab_detr decoder Div_11/Div_12: [1, 50] / [1, 50], NPU on every SoC in FP16
    nodes = [_n("Relu", ["x"], ["a"], "head"), _n("Abs", ["x"], ["b0"], "abs"), _n("Add", ["b0", "one"], ["b"], "add"),
             _n("Div", ["a", "b"], ["y"], "div")]
    path = save_model(tmp_path / "div2.onnx", nodes, [value("x", [1, 50])], [value("y", None)],
                      [const("one", np.array(1.0, np.float32))])
    assert RULE not in violations(catalog, path, "rk3588", "fp16", "div")
    path3 = save_model(tmp_path / "div3.onnx", nodes, [value("x", [1, 1, 50])], [value("y", None)],
                       [const("one", np.array(1.0, np.float32))])
    assert RULE in violations(catalog, path3, "rk3588", "fp16", "div")
