"""RKNN-GN-SPLIT: rk3588 regroups a GroupNorm whose groups are not whole channel blocks on the CPU unless the map's
pixel count is a multiple of 16, and moves (1, G, 1, L) through transposes only up to L = 8192 (probe
tools/probe_rknn_rk3566.py gn:C:G:S --socs rk3588; corpus timm_test_efficientnet_gn, INT8)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n

RULE = "RKNN-GN-SPLIT"


def _group_norm(tmp_path, ch, groups, side):
    """Conv [1, C, S, S] -> Reshape [1, G, -1] ('into') -> InstanceNormalization ('norm') -> Reshape back ('back')
    -> Relu."""
    nodes = [_n("Conv", ["x", "w"], ["m"], "conv"), _n("Reshape", ["m", "s3"], ["r"], "into"),
             _n("InstanceNormalization", ["r", "g", "b"], ["n"], "norm"), _n("Reshape", ["n", "s4"], ["o"], "back"),
             _n("Relu", ["o"], ["y"], "act")]
    inits = [weight("w", (ch, 3, 1, 1)), const("s3", np.array([1, groups, -1], np.int64)),
             const("s4", np.array([1, ch, side, side], np.int64)), const("g", np.ones(groups, np.float32)),
             const("b", np.zeros(groups, np.float32))]
    return save_model(tmp_path / f"gn_{ch}_{groups}_{side}.onnx", nodes, [value("x", [1, 3, side, side])],
                      [value("y", None)], inits)


def _cpu(catalog, path, precision, target="rk3588"):
    return {node for node in ("into", "norm", "back") if RULE in violations(catalog, path, target, precision, node)}


@pytest.mark.parametrize(("ch", "groups", "side", "precision", "cpu"), [
    (128, 16, 10, "fp16", set()),  # 8 channels a group: the map form in FP16
    (128, 8, 10, "int8", set()),  # 16 channels a group: the map form in INT8
    (128, 16, 10, "int8", {"into", "back"}),  # flattened, 100 pixels
    (128, 16, 12, "int8", set()),  # 144 pixels: a multiple of 16
    (128, 16, 14, "int8", {"into", "back"}),  # 196
    (128, 16, 6, "int8", {"into", "back"}),  # 36
    (128, 16, 4, "int8", set()),  # 16
    (64, 16, 10, "fp16", {"into", "back"}),  # 4 channels a group: flattened in FP16 too
    (64, 16, 16, "fp16", set()),
    (96, 8, 10, "fp16", {"into", "back"}),  # 12 channels a group
    (24, 3, 32, "int8", set()),  # odd G: (1, 3, 1, 8192) and its transposes on the NPU
    (24, 3, 36, "int8", {"into", "norm"}),  # L = 10368: both transposes CPU, the reshapes NPU (1296 pixels)
    (64, 8, 5, "int8", {"into", "back"}),  # odd pixel count, L = 200: only the reshapes
])
def test_the_regrouping_follows_the_channel_blocks_and_the_pixel_count(catalog, tmp_path, ch, groups, side,
                                                                        precision, cpu):
    assert _cpu(catalog, _group_norm(tmp_path, ch, groups, side), precision) == cpu


@pytest.mark.parametrize("target", ["rk3576", "rk3562", "rv1126b", "rk3566"])
def test_other_socs_are_not_this_rule(catalog, tmp_path, target):
    # corpus timm_test_efficientnet_gn: every GroupNorm wholly NPU on rk3576, rk3562 and rv1126b
    path = _group_norm(tmp_path, 128, 16, 10)
    assert _cpu(catalog, path, "int8", target) == set()


@pytest.mark.parametrize("affine", [True, False])
def test_a_reshape_after_the_affine_carries_the_reshape_out(catalog, tmp_path, affine):
    # corpus hf_deformable_detr input_proj.2 (128 channels, 32 groups, 10x10): GroupNorm's Mul/Add fold into exNorm
    # and the flatten into tokens (Reshape_4) carries the reshape out, Target CPU; Reshape_1 has no layer
    ch, groups, side = 128, 32, 10
    nodes = [_n("Conv", ["x", "w"], ["m"], "conv"), _n("Reshape", ["m", "s3"], ["r"], "into"),
             _n("InstanceNormalization", ["r", "g", "b"], ["n"], "norm"), _n("Reshape", ["n", "s4"], ["o"], "back")]
    inits = [weight("w", (ch, 3, 1, 1)), const("s3", np.array([1, groups, -1], np.int64)),
             const("s4", np.array([1, ch, side, side], np.int64)), const("g", np.ones(groups, np.float32)),
             const("b", np.zeros(groups, np.float32)), const("tok", np.array([1, ch, side * side], np.int64))]
    last = "o"
    if affine:
        nodes += [_n("Mul", ["o", "gamma"], ["oa"], "scale"), _n("Add", ["oa", "beta"], ["ob"], "shift")]
        inits += [weight("gamma", (1, ch, 1, 1)), weight("beta", (1, ch, 1, 1))]
        last = "ob"
    nodes += [_n("Reshape", [last, "tok"], ["t"], "flatten"), _n("Relu", ["t"], ["y"], "act")]
    path = save_model(tmp_path / f"gn_affine_{affine}.onnx", nodes, [value("x", [1, 3, side, side])],
                      [value("y", None)], inits)
    for precision in ("fp16", "int8"):
        cpu = {node for node in ("into", "back", "flatten") if RULE in violations(catalog, path, "rk3588", precision, node)}
        assert cpu == {"into", "flatten"}  # a reshape run, directly or through the affine, is named after its last
