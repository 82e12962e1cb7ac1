"""Layout runs with no 4-D form and no exWindow rewrite (optimizer/catalog/_partitions.py), each just inside and
just outside its condition: RKNN-TRANSPOSE-RUNS, RKNN-WINDOW-BATCH-MERGE, RKNN-GRID-ROWS, RKNN-BATCHED-ROWS."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from optimizer.catalog._partitions import axis_runs
from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight

FOUR = ("rk3588", "rk3576", "rk3562", "rv1126b")


def _npu(catalog, path, target, precision):
    report = check_graph(load_model(path), catalog, target)
    return lambda node: report.verdict(node).runs_on("npu", precision)


def test_axis_runs_drop_unit_axes_and_merge_consecutive_ones():
    assert axis_runs((4, 8, 8, 8, 8), (0, 3, 1, 4, 2)) == 5  # BoTNet's rel_logits_h permute
    assert axis_runs((4, 8, 8, 8, 8), (0, 1, 3, 2, 4)) == 4  # BoTNet's rel_logits_w permute: a 4-D one
    assert axis_runs((1, 8, 8, 7, 7, 64), (0, 5, 1, 3, 2, 4)) == 5  # the unit batch does not count
    assert axis_runs((1, 1, 8, 8, 8, 8), (0, 3, 1, 4, 2, 5)) == 3


def _rel_expand(tmp_path, perm, before="Expand", after="Add"):
    """Relu -> Reshape [4,8,1,8,8] -> Expand to [4,8,8,8,8] (or Relu) -> Transpose `perm` -> Add (or Reshape)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head")]
    inits = [const("s5", np.array([4, 8, 1, 8, 8], np.int64)), const("e5", np.array([4, 8, 8, 8, 8], np.int64)),
             const("flat", np.array([4, 4096], np.int64))]
    if before == "Expand":
        nodes += [helper.make_node("Reshape", ["r", "s5"], ["r5"], name="rows"),
                  helper.make_node("Expand", ["r5", "e5"], ["e"], name="expand")]
    else:
        nodes += [helper.make_node("Reshape", ["r", "e5"], ["e0"], name="rows_full"),
                  helper.make_node("Relu", ["e0"], ["e"], name="act")]
    nodes.append(helper.make_node("Transpose", ["e"], ["t"], name="n", perm=list(perm)))
    if after == "Add":
        nodes.append(helper.make_node("Add", ["t", "t"], ["y"], name="sum"))
    else:
        nodes.append(helper.make_node("Reshape", ["t", "flat"], ["y"], name="flatten"))
    x = [4, 8, 64] if before == "Expand" else [4, 8, 512]
    return save_model(tmp_path / f"rel{''.join(map(str, perm))}{before}{after}.onnx", nodes, [value("x", x)],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("perm", "before", "after", "cpu"), [
    ((0, 3, 1, 4, 2), "Expand", "Add", True),  # corpus BoTNet pos_embed/Transpose_6: five runs, nothing to merge with
    ((0, 1, 3, 2, 4), "Expand", "Add", False),  # four runs: a 4-D transpose (BoTNet's Transpose_2, NPU)
    ((0, 3, 1, 4, 2), "Expand", "Reshape", False),  # a layout op after it takes the transpose into its run
    ((0, 3, 1, 4, 2), "Relu", "Add", True),  # any non-layout producer
])
def test_a_transpose_without_a_4d_form_or_layout_neighbour_runs_on_the_cpu(catalog, tmp_path, perm, before,
                                                                          after, cpu):
    path = _rel_expand(tmp_path, perm, before, after)
    for soc in (*FOUR, "rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-TRANSPOSE-RUNS" in violations(catalog, path, soc, precision)) is cpu


def _maxvit_layer(tmp_path, c, nh, p, grid_next=True, grid_window=None):
    """torchvision MaxViT on an NCHW map [1,C,nh*p,nh*p]: window partition (Reshape, Transpose (0,2,4,3,5,1),
    Reshape [1,G,N,C]) -> Relu -> departition (Reshape [1,nh,nh,p,p,C], Transpose (0,5,1,3,2,4), Reshape to the
    map) -> when grid_next, the grid block: the same partition with window `grid_window` (default p), the swap
    Transpose (0,2,1,3), Relu, the swap back, the departition -> Conv."""
    h = nh * p
    g = grid_window or p

    def part(prefix, src, window):
        n = h // window
        return [helper.make_node("Reshape", [src, f"{prefix}s6"], [f"{prefix}a"], name=f"{prefix}part_rs"),
                helper.make_node("Transpose", [f"{prefix}a"], [f"{prefix}b"], name=f"{prefix}part_tp",
                                 perm=[0, 2, 4, 3, 5, 1]),
                helper.make_node("Reshape", [f"{prefix}b", f"{prefix}tok"], [f"{prefix}t"], name=f"{prefix}part_rs1")], [
            const(f"{prefix}s6", np.array([1, c, n, window, n, window], np.int64)),
            const(f"{prefix}tok", np.array([1, n * n, window * window, c], np.int64)),
            const(f"{prefix}w6", np.array([1, n, n, window, window, c], np.int64))]

    def depart(prefix, src, out):
        return [helper.make_node("Reshape", [src, f"{prefix}w6"], [f"{prefix}d"], name=f"{prefix}depart_rs"),
                helper.make_node("Transpose", [f"{prefix}d"], [f"{prefix}e"], name=f"{prefix}depart_tp",
                                 perm=[0, 5, 1, 3, 2, 4]),
                helper.make_node("Reshape", [f"{prefix}e", "map"], [out], name=f"{prefix}depart_rs1")]

    nodes = [helper.make_node("Conv", ["x", "w0"], ["m0"], name="conv")]
    wn, winits = part("w_", "m0", p)
    nodes += [*wn, helper.make_node("Relu", ["w_t"], ["w_r"], name="w_body"), *depart("w_", "w_r", "m1")]
    inits = [weight("w0", [c, c, 1, 1]), const("map", np.array([1, c, h, h], np.int64)), *winits]
    if grid_next:
        gn, ginits = part("g_", "m1", g)
        nodes += [*gn, helper.make_node("Transpose", ["g_t"], ["g_s"], name="g_swap", perm=[0, 2, 1, 3]),
                  helper.make_node("Relu", ["g_s"], ["g_r"], name="g_body"),
                  helper.make_node("Transpose", ["g_r"], ["g_u"], name="g_unswap", perm=[0, 2, 1, 3])]
        nodes += depart("g_", "g_u", "m2")
        inits += ginits
    else:
        nodes.append(helper.make_node("Identity", ["m1"], ["m2"], name="keep"))
    nodes.append(helper.make_node("Conv", ["m2", "w1"], ["y"], name="tail"))
    inits.append(weight("w1", [8, c, 1, 1]))
    return save_model(tmp_path / f"maxvit{c}_{nh}_{p}_{int(grid_next)}_{g}.onnx", nodes, [value("x", [1, c, h, h])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("c", "nh", "p", "grid_next", "cpu"), [
    (128, 4, 7, True, True),  # corpus tv_maxvit_t stage 2: 16 windows in the batch axis, a grid block next
    (256, 2, 7, True, True),  # stage 3: 4 windows
    (64, 5, 7, True, False),  # 25 windows are held as (1,C,G,N) (probe tvblk_attn_64_5_7): exWindow
    (64, 8, 7, True, False),  # stage 1: 64 windows
    (128, 4, 7, False, False),  # no partition after it: the departition is exWindow (corpus sub-graph probe)
])
def test_batch_held_windows_departed_into_another_partition_are_a_cpu_transpose(catalog, tmp_path, c, nh, p,
                                                                              grid_next, cpu):
    path = _maxvit_layer(tmp_path, c, nh, p, grid_next)
    for soc in FOUR:
        for precision in ("fp16", "int8"):
            npu = _npu(catalog, path, soc, precision)
            assert ("RKNN-WINDOW-BATCH-MERGE" in violations(catalog, path, soc, precision, node="w_depart_tp")) is cpu
            assert npu("w_depart_tp") is not cpu
            assert ("RKNN-WINDOW-BATCH-MERGE" in violations(catalog, path, soc, precision, node="w_depart_rs")) is (
                cpu and soc == "rk3588")
            assert npu("w_part_tp") and npu("w_part_rs")  # the window partition is exWindow


@pytest.mark.parametrize(("c", "nh", "p", "cpu_in"), [
    (64, 8, 7, {"int8"}),  # W = 56: whole 16-byte rows in FP16 only (corpus tv_maxvit_t stage 1)
    (128, 4, 7, {"fp16", "int8"}),  # W = 28 (stage 2)
    (64, 4, 8, set()),  # W = 32: whole rows in both
    (64, 2, 8, set()),  # W = 16
    (64, 3, 4, {"fp16", "int8"}),  # W = 12: not a multiple of 8 either
])
def test_rk3588_grid_partition_cuts_map_rows_on_the_cpu_unless_whole_16_byte_rows(catalog, tmp_path, c, nh, p,
                                                                                 cpu_in):
    path = _maxvit_layer(tmp_path, c, nh, p)
    for precision in ("fp16", "int8"):
        for name in ("g_part_rs", "g_part_rs1", "g_body", "g_depart_rs1"):
            assert ("RKNN-GRID-ROWS" in violations(catalog, path, "rk3588", precision, node=name)) is (
                precision in cpu_in)
        for name in ("w_part_rs", "w_part_rs1"):  # the window partition (no swap) is exWindow at any W
            assert "RKNN-GRID-ROWS" not in violations(catalog, path, "rk3588", precision, node=name)
        for soc in ("rk3576", "rk3562", "rv1126b"):
            assert "RKNN-GRID-ROWS" not in violations(catalog, path, soc, precision, node="g_part_rs")


def test_one_pixel_grid_windows_cut_nothing(catalog, tmp_path):
    """MaxViT's last stage: a 7x7 map, grid windows of one pixel ([1,C,7,1,7,1]): no row is cut (corpus tv_maxvit_t
    blocks.3, NPU)."""
    path = _maxvit_layer(tmp_path, 32, 1, 7, grid_window=1)
    for precision in ("fp16", "int8"):
        for name in ("g_part_rs", "g_part_rs1", "g_body", "g_depart_rs1"):
            assert "RKNN-GRID-ROWS" not in violations(catalog, path, "rk3588", precision, node=name)


@pytest.mark.parametrize(("c", "nh", "p", "grid_window", "cpu"), [
    (64, 8, 7, None, True),  # corpus tv_maxvit_t blocks.0: W = 56, grid windows of 8x8
    (128, 4, 7, None, True),  # blocks.1: W = 28 (rk3588's row condition would pass FP16 here: no width rule)
    (256, 2, 7, None, True),  # blocks.2: W = 14
    (32, 1, 7, 1, False),  # blocks.3: one-pixel grid windows cut nothing
])
def test_rk3566_grid_block_ends_run_on_the_cpu(catalog, tmp_path, c, nh, p, grid_window, cpu):
    path = _maxvit_layer(tmp_path, c, nh, p, grid_window=grid_window)
    for soc in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            for name in ("g_body", "g_depart_tp"):  # the swapped tokens' reader (and the op before the swap back)
                assert ("RKNN-GRID-SWAP-ENDS" in violations(catalog, path, soc, precision, node=name)) is cpu
            for name in ("g_swap", "g_unswap", "g_part_rs", "w_depart_tp"):
                assert "RKNN-GRID-SWAP-ENDS" not in violations(catalog, path, soc, precision, node=name)
            assert _npu(catalog, path, soc, precision)("g_unswap")  # merged into the departition run
    assert "RKNN-GRID-SWAP-ENDS" not in violations(catalog, path, "rk3588", "fp16", node="g_body")


def test_rk3566_a_residual_reader_of_the_swapped_grid_tokens_keeps_its_verdict(catalog, tmp_path):
    # corpus tv_maxvit_t grid_attention: LayerNorm and the residual Add both read the swap; only the LayerNorm's
    # name is on the partition's CPU transpose
    c, n, g = 64, 4, 4
    h = n * g
    nodes = [helper.make_node("Conv", ["x", "w0"], ["m"], name="conv"),
             helper.make_node("Reshape", ["m", "s6"], ["a"], name="part_rs"),
             helper.make_node("Transpose", ["a"], ["b"], name="part_tp", perm=[0, 2, 4, 3, 5, 1]),
             helper.make_node("Reshape", ["b", "tok"], ["t"], name="part_rs1"),
             helper.make_node("Transpose", ["t"], ["s"], name="swap", perm=[0, 2, 1, 3]),
             helper.make_node("LayerNormalization", ["s", "gam", "bet"], ["ln"], name="norm", axis=-1),
             helper.make_node("Add", ["s", "ln"], ["r"], name="residual"),
             helper.make_node("Relu", ["r"], ["r2"], name="post"),
             helper.make_node("Transpose", ["r2"], ["u"], name="unswap", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["u", "w6"], ["d"], name="depart_rs"),
             helper.make_node("Transpose", ["d"], ["e"], name="depart_tp", perm=[0, 5, 1, 3, 2, 4]),
             helper.make_node("Reshape", ["e", "map"], ["m2"], name="depart_rs1"),
             helper.make_node("Conv", ["m2", "w1"], ["y"], name="tail")]
    inits = [weight("w0", [c, c, 1, 1]), weight("w1", [8, c, 1, 1]), weight("gam", [c]), weight("bet", [c]),
             const("s6", np.array([1, c, n, g, n, g], np.int64)), const("tok", np.array([1, n * n, g * g, c], np.int64)),
             const("w6", np.array([1, n, n, g, g, c], np.int64)), const("map", np.array([1, c, h, h], np.int64))]
    path = save_model(tmp_path / "gridres.onnx", nodes, [value("x", [1, c, h, h])], [value("y", None)], inits)
    assert "RKNN-GRID-SWAP-ENDS" in violations(catalog, path, "rk3566", "fp16", node="norm")
    assert "RKNN-GRID-SWAP-ENDS" not in violations(catalog, path, "rk3566", "fp16", node="residual")
    assert "RKNN-GRID-SWAP-ENDS" in violations(catalog, path, "rk3566", "fp16", node="post")  # before the swap back


@pytest.mark.parametrize(("c", "nh", "p", "cpu"), [
    (128, 4, 7, True),  # corpus tv_maxvit_t blocks.1: 16 windows
    (256, 2, 7, True),  # blocks.2: 4 windows
    (64, 8, 7, False),  # blocks.0: 64 windows stay in (1,C,G,N)
    (64, 5, 7, False),  # 25 windows: above the batch limit of probe tvblk_attn
    (64, 1, 7, False),  # one window: below the condition's 2 (nothing moves into the batch axis)
])
def test_rk3566_batch_held_windows_cost_their_map_producer_a_cpu_transpose(catalog, tmp_path, c, nh, p, cpu):
    path = _maxvit_layer(tmp_path, c, nh, p)
    for soc in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-WINDOW-BATCH-SPLIT" in violations(catalog, path, soc, precision, node="conv")) is cpu
            for name in ("w_depart_rs", "w_depart_tp"):
                assert ("RKNN-WINDOW-BATCH-MERGE-RK3566" in violations(catalog, path, soc, precision,
                                                                       node=name)) is cpu
    assert "RKNN-WINDOW-BATCH-SPLIT" not in violations(catalog, path, "rk3588", "fp16", node="conv")


def _padded_rows(tmp_path, w, flat_len=None, cols=None):
    """BoTNet's rel_logits_1d tail: rows [B, L] (a Relu'd input) -> Reshape [B, W+1, 2W-1] (or [B, L/cols, cols])
    -> Relu."""
    rows, cols = w + 1, cols or 2 * w - 1
    length = flat_len or rows * cols
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="head"),
             helper.make_node("Reshape", ["r", "s3"], ["u"], name="n"),
             helper.make_node("Relu", ["u"], ["y"], name="tail")]
    shape = [length // cols, cols] if flat_len else [rows, cols]
    return save_model(tmp_path / f"rows{w}_{length}_{cols}.onnx", nodes, [value("x", [64, length])], [value("y", None)],
                      [const("s3", np.array([64, *shape], np.int64))])


@pytest.mark.parametrize(("w", "flat_len", "cols", "cpu_in"), [
    (8, None, None, {"fp16", "int8"}),  # L = 9 x 15 = 135 (corpus BoTNet stage 3.1 Reshape_6)
    (16, None, None, {"fp16", "int8"}),  # L = 561
    (8, 960, 16, set()),  # L = 960 = 60 rows of 16: whole 16-byte groups, rows and pixel rows alike
    (8, 120, 8, {"int8"}),  # L = 120 = 15 rows of 8: a multiple of 8, not of 16
    # the pixel rows decide too: L = 960 is whole groups, rows of 15 are not (corpus timm_haloregnetz_b_dynamo
    # view_3 [224,168] -> [224,8,21], CPU in FP16 and INT8)
    (8, 960, 15, {"fp16", "int8"}),
    (8, 192, 24, {"int8"}),  # rows of 24: whole FP16 groups, not INT8 ones (corpus timm_halonet26t_dynamo view_2)
])
def test_rk3588_batched_rows_unflatten_on_the_npu_only_in_whole_16_byte_groups(catalog, tmp_path, w, flat_len,
                                                                              cols, cpu_in):
    path = _padded_rows(tmp_path, w, flat_len, cols)
    for precision in ("fp16", "int8"):
        assert ("RKNN-BATCHED-ROWS" in violations(catalog, path, "rk3588", precision)) is (precision in cpu_in)
        assert "RKNN-BATCHED-ROWS" not in violations(catalog, path, "rk3576", precision)


def _gated_stage(tmp_path, rows, blocks, ch=16):
    """MambaOut's stage on an NCHW map [1,C,rows,rows]: Conv -> Transpose (0,2,3,1) opens the channels-last stream;
    each block: LayerNorm -> fc1 MatMul + bias -> Split (g, i, c) -> c through Transpose (0,3,1,2), depthwise 7x7 Conv,
    Transpose (0,2,3,1) -> Concat(i, c) * Sigmoid-gated g -> fc2 MatMul -> residual Add; Transpose (0,3,1,2) closes
    it into a Conv."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["m"], name="stem"),
             helper.make_node("Transpose", ["m"], ["s0"], name="open", perm=[0, 2, 3, 1])]
    inits = [weight("w0", [ch, ch, 1, 1]), const("split", np.array([2 * ch, ch, ch], np.int64)),
             weight("wout", [8, ch, 1, 1])]
    for b in range(blocks):
        p, s = f"b{b}_", f"s{b}"
        nodes += [helper.make_node("LayerNormalization", [s, f"{p}lg"], [f"{p}n"], name=f"{p}norm", axis=-1),
                  helper.make_node("MatMul", [f"{p}n", f"{p}w1"], [f"{p}f"], name=f"{p}fc1"),
                  helper.make_node("Add", [f"{p}f", f"{p}b1"], [f"{p}fb"], name=f"{p}fc1_bias"),
                  helper.make_node("Split", [f"{p}fb", "split"], [f"{p}g", f"{p}i", f"{p}c"], name=f"{p}split", axis=-1),
                  helper.make_node("Transpose", [f"{p}c"], [f"{p}cm"], name=f"{p}to_map", perm=[0, 3, 1, 2]),
                  helper.make_node("Conv", [f"{p}cm", f"{p}wd"], [f"{p}cd"], name=f"{p}dw", group=ch,
                                   pads=[3, 3, 3, 3]),
                  helper.make_node("Transpose", [f"{p}cd"], [f"{p}cl"], name=f"{p}to_last", perm=[0, 2, 3, 1]),
                  helper.make_node("Sigmoid", [f"{p}g"], [f"{p}gs"], name=f"{p}sig"),
                  helper.make_node("Mul", [f"{p}g", f"{p}gs"], [f"{p}ga"], name=f"{p}act"),
                  helper.make_node("Concat", [f"{p}i", f"{p}cl"], [f"{p}ic"], name=f"{p}concat", axis=-1),
                  helper.make_node("Mul", [f"{p}ga", f"{p}ic"], [f"{p}gm"], name=f"{p}gate"),
                  helper.make_node("MatMul", [f"{p}gm", f"{p}w2"], [f"{p}o"], name=f"{p}fc2"),
                  helper.make_node("Add", [f"{p}o", s], [f"s{b + 1}"], name=f"{p}residual")]
        inits += [const(f"{p}lg", np.ones(ch, np.float32)), weight(f"{p}w1", [ch, 4 * ch]),
                  weight(f"{p}b1", [4 * ch]), weight(f"{p}wd", [ch, 1, 7, 7]), weight(f"{p}w2", [2 * ch, ch])]
    nodes += [helper.make_node("Transpose", [f"s{blocks}"], ["back"], name="close", perm=[0, 3, 1, 2]),
              helper.make_node("Conv", ["back", "wout"], ["y"], name="tail")]
    return save_model(tmp_path / f"gated{rows}_{blocks}.onnx", nodes, [value("x", [1, ch, rows, rows])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("rows", "blocks", "cpu"), [
    (16, 2, True),  # 16 rows, two blocks: rows in the batch axis (corpus sub-graph probe of timm_test_mambaout)
    (10, 3, True),  # corpus timm_test_mambaout stage 2
    (20, 3, False),  # 20 rows fold into NCHW
    (10, 1, False),  # one block alone folds
])
def test_rk3566_channels_last_stream_with_rows_in_the_batch_axis(catalog, tmp_path, rows, blocks, cpu):
    path = _gated_stage(tmp_path, rows, blocks)
    charged = ["b0_norm", *(f"b{b}_{n}" for b in range(blocks) for n in ("fc1", "to_map", "to_last", "gate"))]
    for soc in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            for name in charged:
                assert ("RKNN-STREAM-BATCH-ROWS" in violations(catalog, path, soc, precision, node=name)) is cpu
            for name in ("b0_fc2", "b0_residual", "b0_split", "open", "close"):
                assert "RKNN-STREAM-BATCH-ROWS" not in violations(catalog, path, soc, precision, node=name)
    if blocks > 1:
        assert "RKNN-STREAM-BATCH-ROWS" not in violations(catalog, path, "rk3566", "fp16", node="b1_norm")
    assert "RKNN-STREAM-BATCH-ROWS" not in violations(catalog, path, "rk3588", "fp16", node="b0_fc1")


def _rotary_join(tmp_path, interleaved):
    """EVA-02's rotary embedding on attention heads from a token MatMul: h [1,3,256,64] -> both step-2 phases of the
    last axis (the odd one negated) stacked on a new axis [1,3,256,32,2] -> Reshape back to [1,3,256,64] ('join');
    when not `interleaved`, the two contiguous halves h[..., :32] and h[..., 32:] are stacked instead."""
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="proj"),
             helper.make_node("Reshape", ["q", "s4"], ["q4"], name="heads"),
             helper.make_node("Transpose", ["q4"], ["h"], name="heads_first", perm=[0, 2, 1, 3])]
    inits = [weight("wq", [192, 192]), const("s4", np.array([1, 256, 3, 64], np.int64)),
             const("ax", np.array([3], np.int64)), const("um", np.array([-1], np.int64)),
             const("back", np.array([1, 3, 256, 64], np.int64))]
    if interleaved:
        inits += [const("st0", np.array([0], np.int64)), const("st1", np.array([1], np.int64)),
                  const("en", np.array([64], np.int64)), const("sp", np.array([2], np.int64))]
        cuts = [("st0", "en", "sp"), ("st1", "en", "sp")]
    else:
        inits += [const("st0", np.array([0], np.int64)), const("st1", np.array([32], np.int64)),
                  const("en0", np.array([32], np.int64)), const("en", np.array([64], np.int64))]
        cuts = [("st0", "en0"), ("st1", "en")]
    for k, cut in enumerate(cuts):
        nodes.append(helper.make_node("Slice", ["h", cut[0], cut[1], "ax", *cut[2:]], [f"p{k}"], name=f"phase{k}"))
    nodes += [helper.make_node("Neg", ["p1"], ["n1"], name="neg"),
              helper.make_node("Unsqueeze", ["n1", "um"], ["u1"], name="u1"),
              helper.make_node("Unsqueeze", ["p0", "um"], ["u0"], name="u0"),
              helper.make_node("Concat", ["u1", "u0"], ["st"], name="stack", axis=-1),
              helper.make_node("Reshape", ["st", "back"], ["y"], name="join")]
    return save_model(tmp_path / f"rotjoin{int(interleaved)}.onnx", nodes, [value("x", [1, 256, 192])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("interleaved", "scatter"), [(True, False), (False, True)])
def test_rk3566_the_join_of_an_interleaved_rotary_pair_is_the_gather_convolutions(catalog, tmp_path, interleaved,
                                                                                  scatter):
    """Corpus timm_eva02_tiny_patch14_224_dynamo: the Reshape [1,3,256,32,2] -> [1,3,256,64] after the rotary stack
    has no CPU layer on rk3566 (24 per cell; the pair is one gather convolution); the same stack of two contiguous
    halves is no space-to-depth and keeps RKNN-CHANNEL-SCATTER's verdict."""
    path = _rotary_join(tmp_path, interleaved)
    for precision in ("fp16", "int8"):
        assert ("RKNN-CHANNEL-SCATTER" in violations(catalog, path, "rk3566", precision, node="join")) is scatter


@pytest.mark.parametrize(("w", "flat_len", "cols", "cpu_in"), [
    (8, None, None, {"fp16", "int8"}),  # L = 135 (corpus BoTNet stage 3.1 Reshape_6 on rk3566)
    (8, 120, 8, set()),  # L = 120 = 15 rows of 8: whole 8-byte groups in both precisions
    (8, 60, 4, {"int8"}),  # L = 60 = 15 rows of 4: whole FP16 groups (4), not INT8 ones (8)
    (8, 30, 15, {"fp16", "int8"}),  # L = 30
    (8, 120, 15, {"fp16", "int8"}),  # L whole groups, rows of 15 not (corpus haloregnetz_b view_3 on rk3566)
])
def test_rk3566_batched_rows_unflatten_by_its_8_byte_groups(catalog, tmp_path, w, flat_len, cols, cpu_in):
    path = _padded_rows(tmp_path, w, flat_len, cols)
    for soc in ("rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert ("RKNN-BATCHED-ROWS" in violations(catalog, path, soc, precision)) is (precision in cpu_in)


def test_rk3566_the_producer_of_a_lone_rank5_transpose_reshapes_on_the_cpu(catalog, tmp_path):
    """Corpus BoTNet on rk3566: pos_embed/Expand_1's result is reshaped into Transpose_6's rank-5 input by a CPU
    layer named after the Expand; on rk3588 that reshape is NPU, and a 4-run Transpose needs none."""
    lone, four = _rel_expand(tmp_path, (0, 3, 1, 4, 2)), _rel_expand(tmp_path, (0, 1, 3, 2, 4))
    for precision in ("fp16", "int8"):
        assert "RKNN-TRANSPOSE-RUNS" in violations(catalog, lone, "rk3566", precision, node="expand")
        assert "RKNN-TRANSPOSE-RUNS" not in violations(catalog, lone, "rk3588", precision, node="expand")
        assert "RKNN-TRANSPOSE-RUNS" not in violations(catalog, four, "rk3566", precision, node="expand")


def _window_join(tmp_path, windows, ws, heads=2, d=32):
    """timm MaxViT's attention on 4-D windows [B,ws,ws,C]: q and v [B,heads,N,d] from the windows (N = ws*ws),
    softmax(q.q^T).v, Transpose (0,2,1,3) -> Reshape [B,ws,ws,C] ('join') -> the projection MatMul."""
    c, n = heads * d, ws * ws
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="qv"),
             helper.make_node("Reshape", ["q", "s_heads"], ["q4"], name="heads"),
             helper.make_node("Transpose", ["q4"], ["qh"], name="heads_first", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["qh"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "qh"], ["o"], name="pv"),
             helper.make_node("Transpose", ["o"], ["ot"], name="tokens_first", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["ot", "s_win"], ["j"], name="join"),
             helper.make_node("MatMul", ["j", "wp"], ["y"], name="proj")]
    inits = [weight("wq", [c, c]), weight("wp", [c, c]), const("s_heads", np.array([windows, n, heads, d], np.int64)),
             const("s_win", np.array([windows, ws, ws, c], np.int64))]
    return save_model(tmp_path / f"winjoin{windows}_{ws}.onnx", nodes, [value("x", [windows, n, c])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("windows", "ws", "cpu"), [
    (16, 5, True),  # corpus timm_test_maxvit stage 1; probe maxattn:4:5:2:32 on rk3576
    (4, 7, True), (16, 6, True),  # probes maxattn:4:7, :4:6
    (16, 8, False), (16, 4, False),  # probes maxattn:4:8, :4:4; corpus timm_maxvit_rmlp_pico_rw_256
    (64, 5, False),  # corpus timm_test_maxvit stage 0: 64 windows are not held in the batch axis
])
def test_rk3576_heads_joined_into_batch_held_windows_need_a_multiple_of_4(catalog, tmp_path, windows, ws, cpu):
    path = _window_join(tmp_path, windows, ws)
    for precision in ("fp16", "int8"):
        for soc in ("rk3576", "rv1126b"):
            assert ("RKNN-WINDOW-HEAD-JOIN" in violations(catalog, path, soc, precision, node="join")) is cpu
        for soc in ("rk3588", "rk3562"):
            assert "RKNN-WINDOW-HEAD-JOIN" not in violations(catalog, path, soc, precision, node="join")
