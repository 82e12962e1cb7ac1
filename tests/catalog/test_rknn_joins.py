"""Block joins with no 4-D form (optimizer/catalog/_joins.py), just inside and just outside RKNN-BLOCK-JOIN-5D:
the rank-5 join (CPU in probe tp5_halojoin and corpus HaloNet) against the rank-6 join with a unit batch
(tp5_halojoin_b1), the partition direction (tp5_halopart) and a Reshape that does not merge the block axes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from optimizer.catalog._layout import einsum_permutation
from optimizer.ir import Node
from tests.conftest import const, save_model, value, violations, weight

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


UNPATCH = "RKNN-UNPATCHIFY"


def _unpatchify(tmp_path, hw=8, pq=2, c=8, how="transpose"):
    """Tokens [1, hw*hw, pq*pq*c] (a MatMul's result) -> Reshape [1, hw, hw, pq, pq, c] (node cut) -> Transpose or Einsum to
    [1, c, h, p, w, q] (node perm) -> Reshape into the map (node merge) -> Relu."""
    dim = pq * pq * c
    move = (helper.make_node("Transpose", ["g"], ["t"], name="perm", perm=[0, 5, 1, 3, 2, 4]) if how == "transpose"
            else helper.make_node("Einsum", ["g"], ["t"], name="perm", equation="nhwpqc->nchpwq"))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["tok"], name="proj_out"),
             helper.make_node("Reshape", ["tok", "s"], ["g"], name="cut"), move,
             helper.make_node("Reshape", ["t", "b"], ["m"], name="merge"),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    inits = [weight("w", (32, dim)), const("s", np.array([1, hw, hw, pq, pq, c], np.int64)),
             const("b", np.array([1, c, hw * pq, hw * pq], np.int64))]
    return save_model(tmp_path / f"u{hw}_{pq}_{c}_{how}.onnx", nodes, [value("x", [1, hw * hw, 32])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("pq", "how", "cpu_node"), [(2, "transpose", "perm"), (4, "transpose", "perm"),
                                                     (2, "einsum", "cut"), (1, "einsum", None),
                                                     (1, "transpose", None)])
def test_unpatchify_is_a_cpu_transpose_on_every_soc(catalog, tmp_path, pq, how, cpu_node):
    """probes unpatchify_* and corpus DiT/PixArt/SD3: the Transpose node carries the CPU layer, or the Reshape
    before an Einsum; 1x1 patches move nothing."""
    path = _unpatchify(tmp_path, pq=pq, c=32 // (pq * pq) if pq > 1 else 32, how=how)
    for soc in SOCS:
        for precision in ("fp16", "int8"):
            for node in ("cut", "perm"):
                assert (UNPATCH in violations(catalog, path, soc, precision, node)) is (node == cpu_node), \
                    (soc, precision, node)


def test_the_merge_after_unpatchify_is_cpu_on_rk3566_only(catalog, tmp_path):
    path = _unpatchify(tmp_path)
    for soc in SOCS:
        assert (UNPATCH in violations(catalog, path, soc, "fp16", "merge")) is (soc in ("rk3566", "rk3568")), soc


def test_a_map_cut_into_windows_is_no_unpatchify(catalog, tmp_path):
    """The departition permutation on patches that were not tokens [1, h*w, p*q*c] (a map's window grid, which the
    toolkit rewrites with its partition) is outside the rule."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Reshape", ["r", "s"], ["g"], name="cut"),
             helper.make_node("Transpose", ["g"], ["t"], name="perm", perm=[0, 5, 1, 3, 2, 4]),
             helper.make_node("Reshape", ["t", "b"], ["y"], name="merge")]
    inits = [const("s", np.array([1, 8, 8, 2, 2, 8], np.int64)), const("b", np.array([1, 8, 16, 16], np.int64))]
    path = save_model(tmp_path / "map.onnx", nodes, [value("x", [1, 8, 16, 16])], [value("y", None)], inits)
    for soc in SOCS:
        assert UNPATCH not in violations(catalog, path, soc, "fp16", "perm")
        assert UNPATCH not in violations(catalog, path, soc, "fp16", "cut")


@pytest.mark.parametrize(("equation", "perm"), [("nhwpqc->nchpwq", (0, 5, 1, 3, 2, 4)), ("ij->ji", (1, 0)),
                                              ("ij,jk->ik", None), ("ii->i", None), ("ij->i", None),
                                              ("...ij->...ji", None)])
def test_an_einsum_is_a_permutation_only_with_one_operand_and_every_label_kept(equation, perm):
    node = Node(index=0, name="e", op_type="Einsum", domain="", inputs=("a",), outputs=("b",),
                attrs={"equation": equation})
    assert einsum_permutation(node) == perm
