"""A Pad of a batch of flat rows (optimizer/catalog/_flat_rows.py), just inside and just outside RKNN-ROWS-PAD:
rows [B, L] held as (B, L, 1, 1), padded in L, are a CPU Pad unless L fills whole channel groups."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations

RULE = "RKNN-ROWS-PAD"
FOUR = ("rk3588", "rk3576", "rk3562", "rv1126b")


def _rows_pad(tmp_path, rows, length, pads):
    """Relu [rows, length] -> Pad `pads` (node n) -> Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Pad", ["r", "p"], ["q"], name="n", mode="constant"),
             helper.make_node("Relu", ["q"], ["y"], name="tail")]
    name = f"rp{rows}_{length}_{'_'.join(map(str, pads))}.onnx"
    return save_model(tmp_path / name, nodes, [value("x", [rows, length])], [value("y", None)],
                      [const("p", np.array(pads, np.int64))])


@pytest.mark.parametrize(("rows", "length", "pads", "cpu_in"), [
    (224, 154, (0, 0, 0, 14), {"fp16", "int8"}),  # corpus timm_haloregnetz_b_dynamo node_pad_2: CPU everywhere
    (256, 192, (0, 0, 0, 15), set()),  # corpus timm_halonet26t_dynamo node_pad_2: NPU
    (224, 152, (0, 0, 0, 14), {"int8"}),  # whole FP16 groups (8), not INT8 ones (16)
    (224, 160, (0, 0, 0, 14), set()),  # whole groups in both
    (1, 154, (0, 0, 0, 14), set()),  # one row is a vector, not a batch of rows
    (224, 154, (0, 0, 2, 0), set()),  # padding the rows, not their length
    (224, 154, (0, 0, 0, -3), set()),  # a negative pad crops: not measured, not claimed
    (224, 154, (0, 0, 0, 1), {"fp16", "int8"}),  # the smallest growth of the same rows
])
def test_a_pad_of_flat_rows_runs_on_the_cpu_unless_whole_channel_groups(catalog, tmp_path, rows, length, pads,
                                                                       cpu_in):
    path = _rows_pad(tmp_path, rows, length, pads)
    for soc in FOUR:
        for precision in ("fp16", "int8"):
            assert (RULE in violations(catalog, path, soc, precision)) is (precision in cpu_in), (soc, precision)


@pytest.mark.parametrize(("length", "cpu_in"), [
    (154, {"fp16", "int8"}),  # not even a multiple of 4
    (156, {"int8"}),  # whole FP16 8-byte groups (4 elements), not INT8 ones (8)
    (152, set()),
])
def test_rk3566_rows_pad_by_its_8_byte_groups(catalog, tmp_path, length, cpu_in):
    path = _rows_pad(tmp_path, 224, length, (0, 0, 0, 14))
    for soc in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert (RULE in violations(catalog, path, soc, precision)) is (precision in cpu_in), (soc, precision)
