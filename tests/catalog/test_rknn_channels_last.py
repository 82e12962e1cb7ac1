"""A map's NCHW -> NHWC Transpose on RK3566/RK3568 whose readers take the last axis as the channel has no layer:
the toolkit keeps the map in NC1HWC2 (rknn-toolkit2 2.5.0 corpus layer tables: timm_swin_tiny_patch4_window7_224
/patch_embed/Transpose before its LayerNorm, timm_test_vit's before the token Reshape, timm_volo_d1_224_dynamo's
before a token MatMul). Joined by a Concat with another channels-last tensor it is a real CPU transpose
(timm_mambaout_femto stages.3 Transpose_1)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n


def _patch_embed(tmp_path, reader, ch=96, side=14):
    """Conv [1, C, S, S] -> Transpose (0,2,3,1) ('nhwc') -> `reader` -> output."""
    nodes = [_n("Conv", ["x", "w0"], ["m"], "proj", strides=[4, 4]), _n("Transpose", ["m"], ["t"], "nhwc", perm=[0, 2, 3, 1])]
    inits = [weight("w0", (ch, 3, 4, 4))]
    if reader == "layernorm":
        nodes.append(_n("LayerNormalization", ["t", "g", "b"], ["y"], "norm", axis=-1))
        inits += [weight("g", (ch,)), weight("b", (ch,))]
    elif reader == "layernorm_h":
        nodes.append(_n("LayerNormalization", ["t", "g", "b"], ["y"], "norm", axis=1))
        inits += [weight("g", (side, side, ch)), weight("b", (side, side, ch))]
    elif reader == "matmul":
        nodes.append(_n("MatMul", ["t", "wl"], ["y"], "linear"))
        inits.append(weight("wl", (ch, 2 * ch)))
    elif reader == "tokens":
        nodes.append(_n("Reshape", ["t", "s3"], ["y"], "tokens"))
        inits.append(const("s3", np.array([1, side * side, ch], np.int64)))
    elif reader == "add":
        nodes.append(_n("Add", ["t", "pos"], ["y"], "pos_embed"))
        inits.append(weight("pos", (1, side, side, ch)))
    elif reader == "concat":  # joined with a tensor made channels-last by a token MatMul
        nodes += [_n("MatMul", ["t", "wl"], ["u"], "linear"), _n("Concat", ["u", "t"], ["y"], "join", axis=-1)]
        inits.append(weight("wl", (ch, ch)))
    return save_model(tmp_path / f"pe_{reader}.onnx", nodes, [value("x", [1, 3, 4 * side, 4 * side])],
                      [value("y", None)], inits)


@pytest.mark.parametrize("reader", ["layernorm", "matmul", "tokens", "add"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_channels_last_transpose_read_as_channels_has_no_layer(catalog, tmp_path, reader, precision):
    path = _patch_embed(tmp_path, reader)
    for target in ("rk3566", "rk3568"):
        assert violations(catalog, path, target, precision, "nhwc") == set(), target


@pytest.mark.parametrize("reader", ["concat", "layernorm_h"])
def test_a_reader_that_needs_the_literal_layout_keeps_the_transpose(catalog, tmp_path, reader):
    path = _patch_embed(tmp_path, reader)
    assert "RKNN-OP-NPU" in violations(catalog, path, "rk3566", "fp16", "nhwc")
