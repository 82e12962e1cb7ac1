"""A two-Gather window unfold (optimizer/catalog/_unfold.py), just inside and just outside RKNN-UNFOLD-ROWS on
rk3588: the second Gather's gathered rows of n*k pixels must fill whole 16-byte groups."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations

RULE = "RKNN-UNFOLD-ROWS"


def _unfold(tmp_path, size, n, k, second=True):
    """Relu [1,8,size,size] -> Gather axis 2 by windows [n,k] -> [1,8,n,k,size] -> (when second) Gather axis 4 by
    the same windows -> [1,8,n,k,n,k] -> Relu; node n is the last Gather."""
    index = np.array([[w * (k - 1) // max(n - 1, 1) + i for i in range(k)] for w in range(n)], np.int64)
    index = np.minimum(index, size - 1)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Gather", ["r", "idx"], ["g1"], name="n" if not second else "rows", axis=2)]
    out = "g1"
    if second:
        nodes.append(helper.make_node("Gather", ["g1", "idx"], ["g2"], name="n", axis=4))
        out = "g2"
    nodes.append(helper.make_node("Relu", [out], ["y"], name="tail"))
    return save_model(tmp_path / f"unf{size}_{n}_{k}_{int(second)}.onnx", nodes, [value("x", [1, 8, size, size])],
                      [value("y", None)], [const("idx", index)])


@pytest.mark.parametrize(("size", "n", "k", "cpu_in"), [
    (30, 3, 14, {"fp16", "int8"}),  # rows of 42 (corpus VOLO's outlook unfold)
    (20, 2, 12, {"int8"}),  # rows of 24: whole FP16 groups (8), not INT8 ones (16) (corpus HaloNet-26t)
    (18, 2, 11, {"fp16", "int8"}),  # rows of 22 (corpus HaloRegNetZ-B)
    (20, 2, 8, set()),  # rows of 16: whole groups in both precisions
])
def test_rk3588_second_unfold_gather_cuts_rows_on_the_cpu_unless_whole_16_byte_groups(catalog, tmp_path, size, n,
                                                                                      k, cpu_in):
    path = _unfold(tmp_path, size, n, k)
    for precision in ("fp16", "int8"):
        assert (RULE in violations(catalog, path, "rk3588", precision)) is (precision in cpu_in), precision
        assert RULE not in violations(catalog, path, "rk3576", precision)


def test_the_first_unfold_gather_cuts_no_row(catalog, tmp_path):
    """The Gather on H alone (no window Gather before it) keeps whole rows: NPU (corpus Gather_75, Gather_286)."""
    path = _unfold(tmp_path, 30, 3, 14, second=False)
    for precision in ("fp16", "int8"):
        assert RULE not in violations(catalog, path, "rk3588", precision)


@pytest.mark.parametrize(("shape", "axes"), [
    ([1, 8, 16, 16], (1, 1)),  # the channel axis twice: a channel gather, not a pixel unfold
    ([5, 5, 4], (0, 0)),  # rank 3: no map
])
def test_two_table_gathers_off_the_pixel_axes_are_no_unfold(catalog, tmp_path, shape, axes):
    index = np.array([[0, 1, 2], [1, 2, 3]], np.int64)  # 2 windows of 3: rows of 6, unaligned in both precisions
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Gather", ["r", "idx"], ["g1"], name="first", axis=axes[0]),
             helper.make_node("Gather", ["g1", "idx"], ["g2"], name="n", axis=axes[1]),
             helper.make_node("Relu", ["g2"], ["y"], name="tail")]
    path = save_model(tmp_path / f"gather{len(shape)}_{axes[0]}.onnx", nodes, [value("x", shape)], [value("y", None)],
                      [const("idx", index)])
    for precision in ("fp16", "int8"):
        assert RULE not in violations(catalog, path, "rk3588", precision)
    pixel = _unfold(tmp_path, 16, 2, 3)  # the same windows on the pixel axes: rows of 6, CPU
    assert RULE in violations(catalog, pixel, "rk3588", "fp16")
