"""A channel shuffle on RK3566/RK3568 is a channel gather folded into a 1x1 convolution, on the NPU: probe
tools/probe_rknn_rk3566.py shuffle:C:G:CAT[:RES] (rknn-toolkit2 2.5.0, FP16 and INT8) and corpus
tv_shufflenet_v2_* stage*.0/Reshape_1 (no layer of their own), so RKNN-CHANNEL-SCATTER does not fire on it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, save_model, value, violations, weight
from tests.conftest import named as _n

RULE = "RKNN-CHANNEL-SCATTER"


def _shuffle(tmp_path, ch, groups, cat=False, residual=False, back=None, side=14, perm=(0, 2, 1, 3, 4)):
    """conv map [1, C, S, S] (cat: a Concat of two convs of C/2) -> Reshape [1, G, C/G, S, S] -> Transpose
    (0,2,1,3,4) -> Reshape `back` (default [1, C, S, S], the shuffle's join) -> (residual: + the unshuffled map) ->
    Conv."""
    back = back or [1, ch, side, side]
    nodes, inits = [], [const("s5", np.array([1, groups, ch // groups, side, side], np.int64)),
                        const("back", np.array(back, np.int64)), weight("w0", (ch, 3, 1, 1))]
    nodes.append(_n("Conv", ["x", "w0"], ["m"], "stem"))
    src = "m"
    if cat:
        inits += [weight("wa", (ch // 2, ch, 1, 1)), weight("wb", (ch // 2, ch, 1, 1))]
        nodes += [_n("Conv", ["m", "wa"], ["a"], "branch_a"), _n("Conv", ["m", "wb"], ["b"], "branch_b"),
                  _n("Concat", ["a", "b"], ["cat"], "concat", axis=1)]
        src = "cat"
    nodes += [_n("Reshape", [src, "s5"], ["g"], "split"),
              _n("Transpose", ["g"], ["t"], "swap", perm=list(perm)),
              _n("Reshape", ["t", "back"], ["j"], "join")]
    out = "j"
    if residual:
        nodes.append(_n("Add", ["j", src], ["r"], "residual"))
        out = "r"
    inits.append(weight("w1", (8, int(np.prod(back)) // (side * side) if len(back) == 4 else 8, 1, 1)))
    nodes.append(_n("Relu", [out], ["y"], "tail"))
    return save_model(tmp_path / "shuffle.onnx", nodes, [value("x", [1, 3, side, side])], [value("y", None)], inits)


@pytest.mark.parametrize(("ch", "groups", "cat", "residual"), [
    (116, 2, True, False), (116, 2, False, False), (58, 2, True, False), (24, 2, True, False),
    (72, 3, True, False), (64, 4, False, False), (116, 2, False, True), (64, 4, False, True),
])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_channel_shuffle_runs_on_the_npu(catalog, tmp_path, ch, groups, cat, residual, precision):
    path = _shuffle(tmp_path, ch, groups, cat, residual)
    for target in ("rk3566", "rk3568"):
        for node in ("split", "swap", "join"):
            assert violations(catalog, path, target, precision, node) == set(), (target, node)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_shuffle_that_also_transposes_the_pixels_is_no_channel_permutation(catalog, tmp_path, precision):
    # (0,2,1,4,3) swaps H and W as well: the run moves pixels, a real transpose on rk3566
    path = _shuffle(tmp_path, 116, 2, cat=True, perm=(0, 2, 1, 4, 3))
    assert any(violations(catalog, path, "rk3566", precision, node) for node in ("split", "swap", "join"))
