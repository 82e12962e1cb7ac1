"""Block joins with no 4-D form (optimizer/catalog/_joins.py), just inside and just outside RKNN-BLOCK-JOIN-5D:
the rank-5 join (CPU in probe tp5_halojoin and corpus HaloNet) against the rank-6 join with a unit batch
(tp5_halojoin_b1), the partition direction (tp5_halopart) and a Reshape that does not merge the block axes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations

SOCS = ("rk3588", "rk3576", "rk3562", "rv1126b", "rk3566", "rk3568")
RULE = "RKNN-BLOCK-JOIN-5D"


def _join(tmp_path, shape, perm, back):
    """Relu [1,32,16,16] -> Reshape `shape` -> Transpose `perm` (node n) -> Reshape `back` -> Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Reshape", ["r", "s"], ["a"], name="to_blocks"),
             helper.make_node("Transpose", ["a"], ["t"], name="n", perm=list(perm)),
             helper.make_node("Reshape", ["t", "b"], ["m"], name="to_map"),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    inits = [const("s", np.array(shape, np.int64)), const("b", np.array(back, np.int64))]
    name = "j" + "_".join(map(str, shape)) + "p" + "".join(map(str, perm)) + "b" + "_".join(map(str, back))
    return save_model(tmp_path / f"{name}.onnx", nodes, [value("x", [1, 32, 16, 16])], [value("y", None)], inits)


@pytest.mark.parametrize(("shape", "perm", "back", "cpu"), [
    # HaloNet's join [C,bs,bs,nb,nb] -> [C,nb,bs,nb,bs] -> [1,C,H,W] (probe tp5_halojoin: CPU)
    ((32, 8, 8, 2, 2), (0, 3, 1, 4, 2), (1, 32, 16, 16), True),
    # the same join with a unit batch in front: rank 6, rewritten (tp5_halojoin_b1: NPU)
    ((1, 32, 8, 8, 2, 2), (0, 1, 4, 2, 5, 3), (1, 32, 16, 16), False),
    # the partition direction [C,nb,bs,nb,bs] -> [C,bs,bs,nb,nb]: exWindow (tp5_halopart: NPU); its result is not
    # the map's (Y,y),(X,x) merge
    ((32, 2, 8, 2, 8), (0, 2, 4, 1, 3), (1, 32, 16, 16), False),
    # the join's result read as rows, not merged into the map's H and W
    ((32, 8, 8, 2, 2), (0, 3, 1, 4, 2), (1, 32, 32, 8), False),
    # four runs (a 4-D transpose): only the middle axes swap, the result still merges into the map
    ((32, 8, 8, 2, 2), (0, 1, 3, 2, 4), (1, 32, 16, 16), False),
])
def test_a_rank5_block_join_into_a_map_runs_on_the_cpu(catalog, tmp_path, shape, perm, back, cpu):
    path = _join(tmp_path, shape, perm, back)
    for soc in SOCS:
        for precision in ("fp16", "int8"):
            assert (RULE in violations(catalog, path, soc, precision)) is cpu, (soc, precision)


def test_a_block_axis_of_one_is_no_join(catalog, tmp_path):
    """With one block per row the join only moves whole rows: outside the rule (unit axes leave four runs)."""
    path = _join(tmp_path, (32, 16, 8, 1, 2), (0, 3, 1, 4, 2), (1, 32, 16, 16))
    assert RULE not in violations(catalog, path, "rk3588", "fp16")
