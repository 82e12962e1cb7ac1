"""Rectangular 2-D windows (optimizer/catalog/_rect_windows.py), just inside and just outside RKNN-RECT-WINDOW:
probes winrect_* (rknn-toolkit2 2.5.0) and corpus CRAFT, DAT and RGT."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, violations

RULE = "RKNN-RECT-WINDOW"
SOCS = ("rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1126b")


def _blocks(tmp_path, bh, bw, h=32, w=32, c=24, batched=False):
    """map [1,C,H,W] -> NHWC -> [1,gh,bh,gw,bw,C] -> partition (node part) -> windows -> Relu -> reverse (node
    rev) -> [1,H,W,C] -> NCHW (node nchw). `batched`: the windows ride in the batch axis [gh*gw, bh*bw, C] and the
    merged map goes on as tokens (no NCHW Transpose next to the reverse)."""
    gh, gw = h // bh, w // bw
    windows = [gh * gw, bh * bw, c] if batched else [1, gh * gw, bh * bw, c]
    nodes = [helper.make_node("Transpose", ["x"], ["nhwc"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["nhwc", "s6"], ["r6"], name="split"),
             helper.make_node("Transpose", ["r6"], ["t6"], name="part", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["t6", "sw"], ["win"], name="to_windows"),
             helper.make_node("Relu", ["win"], ["act"], name="act"),
             helper.make_node("Reshape", ["act", "s6b"], ["b6"], name="unsplit"),
             helper.make_node("Transpose", ["b6"], ["u6"], name="rev", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["u6", "smap"], ["m"], name="merge")]
    if batched:
        nodes.append(helper.make_node("Reshape", ["m", "stok"], ["y"], name="tokens"))
    else:
        nodes.append(helper.make_node("Transpose", ["m"], ["y"], name="nchw", perm=[0, 3, 1, 2]))
    inits = [const("s6", np.array([1, gh, bh, gw, bw, c], np.int64)), const("sw", np.array(windows, np.int64)),
             const("s6b", np.array([1, gh, gw, bh, bw, c], np.int64)), const("smap", np.array([1, h, w, c], np.int64)),
             const("stok", np.array([1, h * w, c], np.int64))]
    return save_model(tmp_path / f"win{bh}x{bw}{'b' if batched else ''}.onnx", nodes, [value("x", [1, c, h, w])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("bh", "bw"), [(4, 16), (16, 4), (8, 16), (16, 8)])
def test_rectangular_windows_are_cpu_transposes_on_every_soc(catalog, tmp_path, bh, bw):
    path = _blocks(tmp_path, bh, bw)
    for soc in SOCS:
        for precision in ("fp16", "int8"):
            assert RULE in violations(catalog, path, soc, precision, "part"), soc
            assert RULE in violations(catalog, path, soc, precision, "nchw"), soc  # the reverse is named after it
            assert RULE not in violations(catalog, path, soc, precision, "rev"), soc


@pytest.mark.parametrize("side", [4, 8])
def test_square_windows_are_exwindow(catalog, tmp_path, side):
    path = _blocks(tmp_path, side, side)
    for soc in SOCS:
        for node in ("part", "rev", "nchw"):
            assert RULE not in violations(catalog, path, soc, "fp16", node)


def test_a_reverse_of_batched_windows_carries_its_own_verdict(catalog, tmp_path):
    """CRAFT's reverse: windows [nW, wh*ww, C] in the batch axis, merged into tokens, no NCHW Transpose."""
    path = _blocks(tmp_path, 4, 16, batched=True)
    for soc in ("rk3588", "rk3576"):
        assert RULE in violations(catalog, path, soc, "fp16", "rev")
        assert RULE in violations(catalog, path, soc, "fp16", "part")
    square = _blocks(tmp_path, 8, 8, batched=True)
    assert RULE not in violations(catalog, square, "rk3588", "fp16", "rev")


def _channels_first_heads(tmp_path, bh, bw, h=32, w=64, heads=3, d=8):
    """CRAFT's and DAT's windows: map [1,C,H,W] -> [1,C,gh,bh,gw,bw] -> (0,2,4,3,5,1) (node part) ->
    [nW, bh*bw, heads, d] -> heads split (0,2,1,3) (node heads) -> Q.K^T (MatMul with its own transpose)."""
    c, gh, gw = heads * d, h // bh, w // bw
    nodes = [helper.make_node("Reshape", ["x", "s6"], ["r6"], name="split"),
             helper.make_node("Transpose", ["r6"], ["t6"], name="part", perm=list(CUT)),
             helper.make_node("Reshape", ["t6", "sh"], ["q4"], name="to_heads"),
             helper.make_node("Transpose", ["q4"], ["q"], name="heads", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["q"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["y"], name="scores")]
    inits = [const("s6", np.array([1, c, gh, bh, gw, bw], np.int64)),
             const("sh", np.array([gh * gw, bh * bw, heads, d], np.int64))]
    return save_model(tmp_path / f"cf{bh}x{bw}.onnx", nodes, [value("x", [1, c, h, w])], [value("y", None)], inits)


CUT = (0, 2, 4, 3, 5, 1)


@pytest.mark.parametrize(("bh", "bw"), [(4, 16), (16, 8)])
def test_a_channels_first_cut_is_one_cpu_transpose_named_after_the_runs_last(catalog, tmp_path, bh, bw):
    """Corpus CRAFT (4 x 16) and DAT (16 x 8): the cut composed with the heads' split is one CPU Transpose,
    Target CPU under the heads Transpose's name; the cut itself has no layer of its own."""
    path = _channels_first_heads(tmp_path, bh, bw)
    for soc in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert RULE in violations(catalog, path, soc, precision, "heads"), soc
            assert RULE not in violations(catalog, path, soc, precision, "part"), soc


def test_a_channels_first_cut_into_square_windows_is_exwindow(catalog, tmp_path):
    """tv_maxvit_t's 7 x 7 cut (0, 2, 4, 3, 5, 1) of a channels-first map: no CPU layer in the corpus."""
    path = _channels_first_heads(tmp_path, 8, 8)
    for node in ("part", "heads"):
        assert RULE not in violations(catalog, path, "rk3588", "fp16", node)


def test_batched_windows_on_a_square_grid_merge_by_their_own_shape(catalog, tmp_path):
    """DAT's reverse: 16 x 8 windows on a 4 x 8 grid, written [1, gh, gw, bh, bw, C] with gw == bw (8): the
    windows ride in the batch axis, so only the window sides decide."""
    nodes = [helper.make_node("Reshape", ["x", "s6"], ["b6"], name="unsplit"),
             helper.make_node("Transpose", ["b6"], ["u6"], name="rev", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["u6", "smap"], ["y"], name="merge")]
    inits = [const("s6", np.array([1, 4, 8, 16, 8, 30], np.int64)), const("smap", np.array([1, 64, 64, 30], np.int64))]
    path = save_model(tmp_path / "dat_rev.onnx", nodes, [value("x", [32, 128, 30])], [value("y", None)], inits)
    assert RULE in violations(catalog, path, "rk3576", "fp16", "rev")
