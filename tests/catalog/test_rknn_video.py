"""A Conv3d map flattened into tokens (optimizer/catalog/_video.py), just inside and just outside RKNN-VIDEO-FLATTEN:
probes video_flatten_c*_t*_HxW (rknn-toolkit2 2.5.0) and corpus VideoMAE / ViViT / V-JEPA 2."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations, weight

RULE = "RKNN-VIDEO-FLATTEN"


def _video(tmp_path, frames, height, width, channels=32, target=None):
    """x [1,3,T,2H,2W] -> Conv3d (1,2,2) -> Reshape [1,C,-1] (node n) -> Transpose -> token MatMul."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["v"], name="patch", kernel_shape=[1, 2, 2], strides=[1, 2, 2]),
             helper.make_node("Reshape", ["v", "s"], ["tok"], name="n"),
             helper.make_node("Transpose", ["tok"], ["t"], name="tokens", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["t", "m"], ["y"], name="mm")]
    inits = [weight("w", (channels, 3, 1, 2, 2)), const("s", np.array(target or [1, channels, -1], np.int64)),
             weight("m", (channels, channels))]
    return save_model(tmp_path / f"v{frames}_{height}_{width}.onnx", nodes,
                      [value("x", [1, 3, frames, 2 * height, 2 * width])], [value("y", None)], inits)


@pytest.mark.parametrize(("frames", "height", "width", "fp16", "int8"), [
    (4, 7, 7, True, True), (3, 5, 5, True, True), (2, 10, 10, True, True), (4, 2, 2, True, True),
    (4, 8, 8, False, False), (3, 4, 4, False, False), (2, 8, 6, False, False),
    (2, 2, 12, False, True),  # 24 pixels: whole 16-byte rows in FP16 only
])
def test_rk3588_flattens_a_video_map_on_the_cpu_unless_frames_fill_whole_rows(catalog, tmp_path, frames, height,
                                                                               width, fp16, int8):
    path = _video(tmp_path, frames, height, width)
    assert (RULE in violations(catalog, path, "rk3588", "fp16")) is fp16
    assert (RULE in violations(catalog, path, "rk3588", "int8")) is int8


@pytest.mark.parametrize("shape", [(4, 7, 7), (4, 8, 8), (3, 4, 4)])
def test_rk3566_always_and_the_other_socs_never(catalog, tmp_path, shape):
    path = _video(tmp_path, *shape)
    for precision in ("fp16", "int8"):
        for soc in ("rk3566", "rk3568"):
            assert RULE in violations(catalog, path, soc, precision)
        for soc in ("rk3576", "rk3562", "rv1126b"):
            assert RULE not in violations(catalog, path, soc, precision)


def test_one_frame_or_another_target_shape_is_outside(catalog, tmp_path):
    assert RULE not in violations(catalog, _video(tmp_path, 1, 7, 7), "rk3588", "fp16")
    # frames kept apart ([1, C, T, H*W]) is not the token flatten
    assert RULE not in violations(catalog, _video(tmp_path, 4, 7, 7, target=[1, 32, 4, 49]), "rk3566", "fp16")

