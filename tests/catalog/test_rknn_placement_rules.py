"""RKNN placement rules measured with tools/probe_rknn_placement.py, each just inside and just outside its limit:
pixel rows (RKNN-PIXEL-ROWS), split attention's radix rows (RKNN-RADIX-ROW), ReduceMax's channel axis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight


def _verdicts(catalog, path, target, precision):
    report = check_graph(load_model(path), catalog, target)
    return lambda node: report.verdict(node).runs_on("npu", precision)


def _flatten(tmp_path, shape, into_fc):
    """x -> Relu -> Flatten -> (Gemm with constant weights | Relu) -> y."""
    flat = int(np.prod(shape[1:]))
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Flatten", ["a"], ["b"], name="n", axis=1)]
    inits = []
    if into_fc:
        nodes.append(helper.make_node("Gemm", ["b", "gw", "gb"], ["y"], name="fc", transB=1))
        inits = [weight("gw", [16, flat]), weight("gb", [16])]  # 16 classes: an aligned output
    else:
        nodes.append(helper.make_node("Relu", ["b"], ["y"], name="tail"))
    name = "x".join(map(str, shape)) + ("fc" if into_fc else "")
    return save_model(tmp_path / f"flat{name}.onnx", nodes, [value("x", shape)], [value("y", None)], inits)


@pytest.mark.parametrize(("shape", "cpu_in"), [
    ([1, 64, 7, 8], {"int8"}),  # 56 pixels: whole 16-byte groups in FP16 only
    ([1, 64, 12, 2], {"int8"}),  # 24 pixels
    ([1, 64, 8, 8], set()),  # 64 pixels: whole groups in both
    ([1, 10, 12, 12], set()),  # corpus nn_stn_gridsample /Flatten
    ([1, 64, 7, 7], {"fp16", "int8"}),
    ([1, 64, 5, 20], {"fp16", "int8"}),  # W = 20 is a multiple of 4, the 100 pixels are not of 8
    ([1, 256, 6, 6], {"fp16", "int8"}),  # corpus tv_alexnet /Flatten
    ([1, 256, 1, 1], set()),  # a pooled map: layout only
])
def test_rk3588_flattens_pixels_on_the_npu_only_in_whole_16_byte_groups(catalog, tmp_path, shape, cpu_in):
    path = _flatten(tmp_path, shape, into_fc=False)
    for precision in ("fp16", "int8"):
        assert ("RKNN-PIXEL-ROWS" in violations(catalog, path, "rk3588", precision)) is (precision in cpu_in)
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)
        for other in ("rk3576", "rk3562", "rv1126b"):
            assert _verdicts(catalog, path, other, precision)("n")


@pytest.mark.parametrize(("shape", "precision", "folded"), [
    ([1, 32, 6, 6], "fp16", True),  # 2304 bytes, 6x6 kernel: one convolution
    ([1, 256, 3, 4], "int8", True),  # 3072 bytes
    ([1, 256, 3, 4], "fp16", False),  # 6144 bytes: a Reshape layer, 12 pixels unaligned
    ([1, 128, 6, 6], "int8", False),  # 4608 bytes
    ([1, 16, 7, 7], "fp16", False),  # 1568 bytes but a 7x7 kernel: beyond the measured folds
])
def test_rk3588_small_map_into_a_classifier_folds_into_one_convolution(catalog, tmp_path, shape, precision, folded):
    path = _flatten(tmp_path, shape, into_fc=True)
    assert _verdicts(catalog, path, "rk3588", precision)("n") is folded
    assert _verdicts(catalog, path, "rk3588", precision)("fc")


@pytest.mark.parametrize(("hw", "cpu_in"), [((6, 6), {"fp16", "int8"}), ((7, 7), {"fp16", "int8"}),
                                            ((8, 6), set()), ((6, 8), set()), ((8, 8), set()),
                                            ((4, 6), {"int8"})])
def test_rk3588_unflattens_a_vector_into_a_map_by_the_same_alignment(catalog, tmp_path, hw, cpu_in):
    h, w = hw
    nodes = [helper.make_node("Gemm", ["x", "gw"], ["g"], name="fc", transB=1),
             helper.make_node("Reshape", ["g", "s"], ["m"], name="n"),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    path = save_model(tmp_path / f"unflat{h}{w}.onnx", nodes, [value("x", [1, 16])], [value("y", None)],
                      [weight("gw", [16 * h * w, 16]), const("s", np.array([1, 16, h, w], np.int64))])
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("n")


def _radix(tmp_path, radix, channels, height, width):
    """Split attention's radix sum: x [1, R*C, H, W] -> Relu -> Reshape [1, R, C, H, W] -> ReduceSum(axis 1) -> Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"),
             helper.make_node("Reshape", ["a", "s"], ["r"], name="split"),
             helper.make_node("ReduceSum", ["r", "ax"], ["m"], name="radix_sum", keepdims=0),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    inits = [const("s", np.array([1, radix, channels, height, width], np.int64)), const("ax", np.array([1], np.int64))]
    return save_model(tmp_path / f"radix{radix}_{channels}_{height}_{width}.onnx", nodes,
                      [value("x", [1, radix * channels, height, width])], [value("y", None)], inits, opset=13)


@pytest.mark.parametrize(("target", "chw", "cpu_in"), [
    ("rk3588", (64, 32, 32), set()),  # rows of 131072 bytes in FP16: the limit itself
    ("rk3588", (96, 32, 32), {"fp16"}),  # 196608 bytes in FP16, 98304 in INT8
    ("rk3588", (32, 7, 7), {"fp16", "int8"}),  # 49 pixels unaligned, small rows
    ("rk3588", (64, 7, 8), {"int8"}),  # 56 pixels: aligned in FP16 only
    ("rk3562", (24, 32, 32), set()),  # 49152 bytes in FP16
    ("rk3562", (32, 32, 32), {"fp16"}),  # 65536 bytes in FP16: over; 32768 in INT8
    ("rk3562", (64, 32, 32), {"fp16", "int8"}),  # 65536 bytes in INT8
    ("rk3562", (32, 7, 7), set()),  # rk3562 has no alignment condition
    ("rk3576", (64, 56, 56), set()),  # measured NPU up to 200704 elements
])
def test_radix_rows_of_split_attention_by_soc(catalog, tmp_path, target, chw, cpu_in):
    path = _radix(tmp_path, 2, *chw)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, target, precision)("split") is (precision not in cpu_in)
        assert ("RKNN-RADIX-ROW" in violations(catalog, path, target, precision, node="split")) is \
            (precision in cpu_in)
        assert _verdicts(catalog, path, target, precision)("act")  # only the node making the summed tensor


@pytest.mark.parametrize(("chw", "cpu_in"), [((64, 14, 14), {"fp16", "int8"}), ((64, 28, 28), set()),
                                             ((64, 7, 8), {"int8"})])
def test_rk3588_radix_sum_unflattens_its_row_by_the_pixel_alignment(catalog, tmp_path, chw, cpu_in):
    path = _radix(tmp_path, 2, *chw)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("radix_sum") is (precision not in cpu_in)
        assert _verdicts(catalog, path, "rk3562", precision)("radix_sum")


def test_a_reduce_over_another_axis_is_no_radix_sum(catalog, tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"),
             helper.make_node("Reshape", ["a", "s"], ["r"], name="split"),
             helper.make_node("ReduceSum", ["r", "ax"], ["m"], name="radix_sum", keepdims=0),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    inits = [const("s", np.array([1, 2, 64, 14, 14], np.int64)), const("ax", np.array([2], np.int64))]
    path = save_model(tmp_path / "other_axis.onnx", nodes, [value("x", [1, 128, 14, 14])], [value("y", None)],
                      inits, opset=13)
    assert "RKNN-RADIX-ROW" not in violations(catalog, path, "rk3588", "fp16", node="split")
    assert "RKNN-PIXEL-ROWS" not in violations(catalog, path, "rk3588", "fp16", node="radix_sum")


@pytest.mark.parametrize(("shape", "axes", "on_npu"), [
    ([1, 32, 8, 8], [1], True),  # the channel
    ([1, 32, 8, 8], [2], False),  # H
    ([1, 32, 8, 8], [3], False),  # W
    ([1, 32, 8, 8], [2, 3], False),
    ([1, 2, 16, 8, 8], [2], True),  # held as (2, 16, 8, 8): its channel
    ([1, 2, 16, 8, 8], [1], False),  # its batch axis
    ([1, 2, 16, 8, 8], [4], False),
    ([1, 2, 4, 4, 8, 8], [3], False),  # rank 6
    ([1, 128, 512], [2], False),  # PointNet's global max over the points (corpus nn_pointnet_tnet)
    ([1, 128, 512], [1], False),  # rank 3 over the other axis (corpus timm_volo_d1_224_dynamo's head)
])
def test_reducemax_reduces_only_the_channel_on_rk3576_and_rv1126b(catalog, tmp_path, shape, axes, on_npu):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("ReduceMax", ["a"], ["m"], name="n", axes=axes, keepdims=1),
             helper.make_node("Relu", ["m"], ["y"], name="tail")]
    path = save_model(tmp_path / f"rmax{len(shape)}{''.join(map(str, axes))}.onnx", nodes, [value("x", shape)],
                      [value("y", None)])
    for target in ("rk3576", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is on_npu
    assert not _verdicts(catalog, path, "rk3588", "fp16")("n")  # no NPU ReduceMax there at all


def _blockify(tmp_path, c, h, w, block):
    """NesT: map [1,C,H,W] (made by 'src') -> Transpose (0,2,3,1) -> Reshape [1,H/b,b,W/b,b,C] ->
    Transpose (0,1,3,2,4,5) -> Reshape [1, windows, b*b, C] -> Relu."""
    gh, gw = h // block, w // block
    nodes = [helper.make_node("Relu", ["x"], ["m"], name="src"),
             helper.make_node("Transpose", ["m"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "s6"], ["r6"], name="blocks6"),
             helper.make_node("Transpose", ["r6"], ["t6"], name="blocks_t", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["t6", "s4"], ["b"], name="blocks"),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    inits = [const("s6", np.array([1, gh, block, gw, block, c], np.int64)),
             const("s4", np.array([1, gh * gw, block * block, c], np.int64))]
    return save_model(tmp_path / f"blockify{c}_{h}_{block}.onnx", nodes, [value("x", [1, c, h, w])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("chw", "block", "cpu_in"), [
    ((64, 32, 32), 8, set()),  # 131072 bytes in FP16: the limit itself
    ((72, 32, 32), 8, {"fp16"}),  # 147456 bytes in FP16, 73728 in INT8
    ((96, 56, 56), 14, {"fp16", "int8"}),  # corpus timm_nest_tiny patch embedding
    ((96, 56, 56), 56, set()),  # one window: no partition (NesT level 2)
])
def test_rk3588_window_partition_moves_the_channel_into_the_batch_up_to_128_kib(catalog, tmp_path, chw, block, cpu_in):
    path = _blockify(tmp_path, *chw, block)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("src") is (precision not in cpu_in)
        assert ("RKNN-CHANNEL-BATCH" in violations(catalog, path, "rk3588", precision, node="src")) is \
            (precision in cpu_in)
        for other in ("rk3576", "rk3562", "rv1126b"):
            assert _verdicts(catalog, path, other, precision)("src")


@pytest.mark.parametrize(("chw", "cpu_in"), [((128, 32, 32), {"fp16"}), ((64, 32, 32), set()),
                                             ((96, 56, 56), {"fp16", "int8"})])
def test_rk3588_channel_into_batch_transpose_is_cpu_above_128_kib(catalog, tmp_path, chw, cpu_in):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Transpose", ["a"], ["b"], name="n", perm=[1, 0, 2, 3]),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    path = save_model(tmp_path / f"cb{chw[0]}.onnx", nodes, [value("x", [1, *chw])], [value("y", None)])
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("n")


@pytest.mark.parametrize(("shape", "repeats", "on_npu"), [
    ([1, 16, 8, 8], [1, 2, 1, 1], True), ([1, 16, 8, 8], [1, 1, 2, 1], True), ([1, 16, 8, 8], [1, 1, 1, 2], True),
    ([1, 16, 8, 8], [1, 1, 2, 2], False), ([1, 16, 8, 8], [1, 2, 1, 2], False), ([1, 16, 64], [1, 2, 1], False),
    # size-1 axes only: a broadcast the toolkit writes as Expand (probes tile_bcast_*, corpus hf_timesformer)
    ([1, 1, 192], [1, 8, 1], True), ([1, 16, 1, 1], [1, 1, 8, 8], True), ([1, 1, 1, 64], [1, 2, 2, 1], True),
    ([1, 2, 192], [1, 8, 1], False), ([1, 1, 7, 7, 64], [1, 64, 1, 1, 1], False)])  # GCViT's rank 5: CPU
def test_tile_repeats_one_axis_of_a_map_on_the_npu(catalog, tmp_path, shape, repeats, on_npu):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Tile", ["a", "r"], ["t"], name="n"),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / f"tile{''.join(map(str, repeats))}.onnx", nodes, [value("x", shape)],
                      [value("y", None)], [const("r", np.array(repeats, np.int64))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is on_npu


@pytest.mark.parametrize(("size", "on_npu"), [((4, 4), True), ((2, 2), True), ((4, 16), True), ((16, 16), True),
                                              ((3, 3), False), ((6, 6), False), ((12, 12), False)])
def test_linear_resize_by_whole_factors_up_or_down(catalog, tmp_path, size, on_npu):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Resize", ["a", "", "", "sz"], ["r"], name="n", mode="linear"),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    path = save_model(tmp_path / f"rz{size[0]}_{size[1]}.onnx", nodes, [value("x", [1, 16, 8, 8])],
                      [value("y", None)], [const("sz", np.array([1, 16, *size], np.int64))])
    for target in ("rk3588", "rk3576", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is on_npu
    assert _verdicts(catalog, path, "rk3562", "fp16")("n")  # rk3562 resizes any linear ratio on the NPU


def test_sum_of_activations_is_npu_adds(catalog, tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
             helper.make_node("Sum", ["a", "s", "a"], ["t"], name="n"),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / "sum.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert _verdicts(catalog, path, target, "int8")("n")


def _l2(tmp_path, normalise):
    """ReduceL2 over the channel, then either x / Clip(norm, eps) (F.normalize) or x * norm."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("ReduceL2", ["a"], ["l"], name="n", axes=[1], keepdims=1)]
    inits = []
    if normalise:
        nodes += [helper.make_node("Clip", ["l", "eps"], ["lc"], name="eps"),
                  helper.make_node("Div", ["a", "lc"], ["t"], name="div")]
        inits = [const("eps", np.array(1e-12, np.float32))]
    else:
        nodes.append(helper.make_node("Mul", ["a", "l"], ["t"], name="mul"))
    nodes.append(helper.make_node("Relu", ["t"], ["y"], name="tail"))
    return save_model(tmp_path / f"l2{normalise}.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)], inits)


@pytest.mark.parametrize(("normalise", "int8_npu"), [(True, True), (False, False)])
def test_reducel2_runs_in_int8_only_inside_an_l2_normalisation(catalog, tmp_path, normalise, int8_npu):
    path = _l2(tmp_path, normalise)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert _verdicts(catalog, path, target, "fp16")("n")
        assert _verdicts(catalog, path, target, "int8")("n") is int8_npu


@pytest.mark.parametrize(("mode", "cpu_on"), [("tf_half_pixel_for_nn", {"rk3588", "rk3576", "rk3562", "rv1126b"}),
                                              ("align_corners", {"rk3588", "rk3576", "rv1126b"}),
                                              ("half_pixel", set())])
def test_linear_resize_coordinate_modes(catalog, tmp_path, mode, cpu_on):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Resize", ["a", "", "sc"], ["r"], name="n", mode="linear",
                              coordinate_transformation_mode=mode),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    path = save_model(tmp_path / f"rz{mode}.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)],
                      [const("sc", np.array([1, 1, 2, 2], np.float32))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert _verdicts(catalog, path, target, "fp16")("n") is (target not in cpu_on)


def _rows_out(tmp_path, hw, tail_op, **kw):
    """x [1,8,H,W] -> Relu -> Reshape [1,8,H*W] -> tail_op -> rank-3 graph output."""
    h, w = hw
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "s"], ["r"], name="rows"),
             helper.make_node(tail_op, ["r"], ["y"], name="out", **kw)]
    return save_model(tmp_path / f"rows{h}{w}{tail_op}{kw.get('axis', '')}.onnx", nodes, [value("x", [1, 8, h, w])],
                      [value("y", None)], [const("s", np.array([1, 8, h * w], np.int64))])


@pytest.mark.parametrize(("hw", "cpu_in"), [((10, 10), {"fp16", "int8"}), ((8, 10), set()), ((8, 8), set()),
                                            ((6, 4), {"int8"})])
def test_rk3588_rows_output_relayout_falls_on_the_rows_reshape_when_the_ops_after_it_commute(
        catalog, tmp_path, hw, cpu_in):
    for tail_op, kw in (("Sigmoid", {}), ("Softmax", {"axis": 1})):
        path = _rows_out(tmp_path, hw, tail_op, **kw)
        for precision in ("fp16", "int8"):
            verdicts = _verdicts(catalog, path, "rk3588", precision)
            assert verdicts("rows") is (precision not in cpu_in)
            assert verdicts("out")


def test_rk3588_softmax_over_the_rows_keeps_the_relayout_on_the_output_maker(catalog, tmp_path):
    path = _rows_out(tmp_path, (10, 10), "Softmax", axis=2)
    for precision in ("fp16", "int8"):
        verdicts = _verdicts(catalog, path, "rk3588", precision)
        assert verdicts("rows")
        assert not verdicts("out")


def _width_sum(tmp_path, hw, scores=False):
    """x [1,C,H,W] -> Relu ('src', or a MatMul of two activations for attention scores) -> ReduceSum over W."""
    h, w = hw
    if scores:  # [1,4,H,d] @ [1,4,d,W] -> [1,4,H,W]
        head = [helper.make_node("MatMul", ["x", "k"], ["m"], name="src")]
        inputs = [value("x", [1, 4, h, 8]), value("k", [1, 4, 8, w])]
    else:
        head = [helper.make_node("Relu", ["x"], ["m"], name="src")]
        inputs = [value("x", [1, 64, h, w])]
    nodes = [*head, helper.make_node("ReduceSum", ["m", "ax"], ["r"], name="sum", keepdims=1),
             helper.make_node("Mul", ["m", "r"], ["y"], name="tail")]
    return save_model(tmp_path / f"wsum{h}_{w}{scores}.onnx", nodes, inputs, [value("y", None)],
                      [const("ax", np.array([3], np.int64))], opset=13)


@pytest.mark.parametrize(("hw", "cpu"), [((4, 196), True), ((8, 80), True), ((4, 128), False), ((1, 784), False),
                                         ((16, 49), False), ((4, 136), True), ((12, 49), True)])
def test_rk3576_int8_width_sum_transposes_on_the_cpu_beyond_512_pixels(catalog, tmp_path, hw, cpu):
    path = _width_sum(tmp_path, hw)
    for target in ("rk3576", "rv1126b"):
        assert _verdicts(catalog, path, target, "int8")("src") is not cpu
        assert _verdicts(catalog, path, target, "fp16")("src")
    assert _verdicts(catalog, path, "rk3588", "int8")("src")


def test_attention_scores_summed_over_w_are_no_map(catalog, tmp_path):
    path = _width_sum(tmp_path, (196, 196), scores=True)
    assert "RKNN-WIDTH-SUM" not in violations(catalog, path, "rk3576", "int8", node="src")


def _shared_kv(tmp_path, kv_heads, softmax=True, heads=4, d=16, n=64):
    """Attention on tokens: q [1,heads,n,d] and k^T [1,kv_heads,d,n] from inputs, each through a named op (the
    toolkit names its Expand after the operand's producer); softmax(q.k^T).v, or q.k^T.v with no Softmax."""
    nodes = [helper.make_node("Relu", ["q_in"], ["q"], name="q_src"),
             helper.make_node("Mul", ["k_in", "scale"], ["k"], name="k_src"),
             helper.make_node("Relu", ["v_in"], ["v"], name="v_src"),
             helper.make_node("MatMul", ["q", "k"], ["s"], name="scores")]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1))
    nodes.append(helper.make_node("MatMul", ["p" if softmax else "s", "v"], ["y"], name="context"))
    inputs = [value("q_in", [1, heads, n, d]), value("k_in", [1, kv_heads, d, n]), value("v_in", [1, kv_heads, n, d])]
    return save_model(tmp_path / f"kv{kv_heads}{softmax}.onnx", nodes, inputs, [value("y", None)],
                      [const("scale", np.array([0.25], np.float32))])


@pytest.mark.parametrize(("kv_heads", "softmax", "expanded"), [
    (1, True, True),  # multi-query attention (corpus timm_mobilenetv4_hybrid_medium, probe kv_4_1_64_8_8)
    (4, True, False),  # one key/value head per query head (probe kv_4_4_64_8_8)
    (1, False, False),  # no Softmax: no exSDPAttention, exMatMul broadcasts itself (probe kv_4_1_64_8_8_nosm)
])
def test_a_key_and_value_shared_by_query_heads_are_expanded_on_the_cpu(catalog, tmp_path, kv_heads, softmax,
                                                                        expanded):
    path = _shared_kv(tmp_path, kv_heads, softmax)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            verdict = _verdicts(catalog, path, target, precision)
            assert verdict("k_src") is not expanded and verdict("v_src") is not expanded
            assert verdict("q_src") and verdict("scores") and verdict("context")
            assert ("RKNN-SDPA-SHARED-KV" in violations(catalog, path, target, precision, node="k_src")) is expanded
    assert "RKNN-SDPA-SHARED-KV" not in violations(catalog, path, "rk3566", "fp16", node="v_src")


@pytest.mark.parametrize(("shape", "repeats", "on_npu"), [
    ([1, 1, 14, 14, 256], [1, 1, 1, 1, 1], True),  # corpus timm_gcvit_xxtiny /attn/Tile: an identity
    ([1, 16, 64], [1, 1, 1], True),  # probe tileone_*: no Tile layer at any rank
    ([1, 1, 14, 14, 256], [2, 1, 1, 1, 1], False),  # a real repeat on a rank-5 tensor
])
def test_a_tile_that_repeats_nothing_is_an_identity_at_any_rank(catalog, tmp_path, shape, repeats, on_npu):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Tile", ["a", "r"], ["t"], name="n"),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    path = save_model(tmp_path / f"tile1_{len(shape)}{repeats[0]}.onnx", nodes, [value("x", shape)],
                      [value("y", None)], [const("r", np.array(repeats, np.int64))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is on_npu


def _unfold(tmp_path, c, h, w, conv=True):
    """x -> (Conv 1x1 | Relu) -> Reshape [C*H/2, 2, W/2, 2] ("n", MobileViT's unfold) -> Relu -> Reshape back
    ("back") -> (Conv 1x1 | Relu) -> y."""
    def mapper(name, src, dst):
        if conv:
            return helper.make_node("Conv", [src, f"w_{name}"], [dst], name=name)
        return helper.make_node("Relu", [src], [dst], name=name)
    nodes = [mapper("head", "x", "a"),
             helper.make_node("Reshape", ["a", "s1"], ["b"], name="n"),
             helper.make_node("Relu", ["b"], ["r"], name="mid"),
             helper.make_node("Reshape", ["r", "s2"], ["m"], name="back"),
             mapper("tail", "m", "y")]
    inits = [const("s1", np.array([c * h // 2, 2, w // 2, 2], np.int64)), const("s2", np.array([1, c, h, w], np.int64))]
    if conv:
        inits += [weight("w_head", [c, c, 1, 1]), weight("w_tail", [c, c, 1, 1])]
    return save_model(tmp_path / f"unfold{c}_{h}_{w}{conv}.onnx", nodes, [value("x", [1, c, h, w])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("chw", "cpu_in"), [
    ((144, 8, 8), {"int8"}),  # corpus timm_mobilevit_xs stage 4: 8-byte rows in INT8
    ((64, 16, 8), {"int8"}),  # probe unfold_64_16_8: H plays no part
    ((64, 8, 16), set()),  # probe unfold_64_8_16: 16-pixel rows are whole 16-byte groups in both
    ((64, 24, 24), {"int8"}),  # probe unfold_64_24_24: 48 bytes in FP16, 24 in INT8
    ((64, 12, 12), {"fp16", "int8"}),  # probe unfold_64_12_12: 24 bytes in FP16
    ((64, 32, 32), set()),
])
def test_rk3588_cuts_map_rows_into_patches_on_the_npu_only_in_whole_16_byte_groups(catalog, tmp_path, chw, cpu_in):
    path = _unfold(tmp_path, *chw)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("n") is (precision not in cpu_in) and verdict("back") is (precision not in cpu_in)
        assert ("RKNN-WIDTH-SPLIT" in violations(catalog, path, "rk3588", precision)) is (precision in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("n")


def test_patch_rows_away_from_a_map_op_are_no_map(catalog, tmp_path):
    """MobileViT's patch tokens [1, C, N, 4] between the unfold's steps have the same shape pattern."""
    path = _unfold(tmp_path, 144, 8, 8, conv=False)
    assert _verdicts(catalog, path, "rk3588", "int8")("n") and _verdicts(catalog, path, "rk3588", "int8")("back")


def _seg_head(tmp_path, map_branches, h=10, decode=False):
    """A detector head joined on axis 1 into the graph output: a DFL-like box branch (batch form, [1,4,N]; with
    `decode`, YOLOv8's dist2bbox after it) and `map_branches` branches of flattened maps joined on the last axis
    (map form: classes, mask coefficients); N = h*h + (h/2)^2 boxes (125 by default: not a multiple of 8)."""
    n = h * h + (h // 2) ** 2
    nodes = [helper.make_node("MaxPool", ["x"], ["xs"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    inits = []
    joined = []
    for branch, ch in (("box", 64), *((f"map{b}", 16) for b in range(map_branches))):
        for i, (m, hw) in enumerate((("x", h * h), ("xs", (h // 2) ** 2))):
            nodes += [helper.make_node("Conv", [m, f"w{branch}{i}"], [f"{branch}{i}"], name=f"{branch}_conv{i}"),
                      helper.make_node("Reshape", [f"{branch}{i}", f"s{branch}{i}"], [f"{branch}{i}r"],
                                       name=f"{branch}_flat{i}")]
            inits += [weight(f"w{branch}{i}", [ch, 8, 1, 1]), const(f"s{branch}{i}", np.array([1, ch, hw], np.int64))]
        nodes.append(helper.make_node("Concat", [f"{branch}0r", f"{branch}1r"], [f"{branch}_all"],
                                      name=f"{branch}_concat", axis=2))
        if branch != "box":
            nodes.append(helper.make_node("Sigmoid", [f"{branch}_all"], [f"{branch}_sig"], name=f"{branch}_sigmoid"))
            joined.append(f"{branch}_sig")
    nodes += [helper.make_node("Reshape", ["box_all", "s4"], ["b4"], name="dfl_reshape"),
              helper.make_node("Softmax", ["b4"], ["bs"], name="dfl_softmax", axis=2),
              helper.make_node("ReduceSum", ["bs", "ax"], ["box_dfl"], name="dfl_sum", keepdims=0),
              helper.make_node("Mul", ["box_dfl", "stride"], ["box_dec"], name="box_mul")]
    inits += [const("s4", np.array([1, 4, 16, n], np.int64)), const("ax", np.array([2], np.int64)),
              const("stride", np.float32(8))]
    box = "box_dec"
    if decode:
        nodes += [helper.make_node("Split", ["box_dec", "two"], ["lt", "rb"], name="box_split", axis=1),
                  helper.make_node("Sub", ["anchors", "lt"], ["x1y1"], name="box_sub"),
                  helper.make_node("Add", ["anchors", "rb"], ["x2y2"], name="box_add"),
                  helper.make_node("Concat", ["x1y1", "x2y2"], ["box_out"], name="box_join", axis=1)]
        inits += [const("two", np.array([2, 2], np.int64)), const("anchors", np.zeros((1, 2, n), np.float32))]
        box = "box_out"
    nodes.append(helper.make_node("Concat", [box, *joined], ["y"], name="head_concat", axis=1))
    return save_model(tmp_path / f"seghead{map_branches}_{h}{decode}.onnx", nodes, [value("x", [1, 8, h, h])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("map_branches", "decode", "box_relaid_at"), [
    (2, True, "box_join"),  # corpus yolov8n_seg_320: classes and mask coefficients in map form, the boxes relaid
    (2, False, "dfl_sum"),  # the relayout moves up past the scalar stride Mul (probe obbhead_0_20's box_dfl_rs)
    (1, True, None),  # a tie beside a decoded box branch (corpus yolov8n_320, probe detecthead_decode_20): batch
    (1, False, "dfl_sum"),  # a tie beside a bare DFL (probe obbhead_0_20, detecthead_clsfirst_20): map form
])
def test_rk3588_output_concat_takes_the_form_most_inputs_have(catalog, tmp_path, map_branches, decode, box_relaid_at):
    path = _seg_head(tmp_path, map_branches, decode=decode)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        for name in ("dfl_sum", "box_mul", *(("box_join",) if decode else ())):
            assert verdict(name) is (name != box_relaid_at)
        assert all(verdict(f"map{b}_sigmoid") is (box_relaid_at is not None) for b in range(map_branches))
        assert _verdicts(catalog, path, "rk3576", precision)("dfl_sum")


def _levels(tmp_path, c):
    """A head joining three levels: x [1,C,40,40] and two 2x2 max-pools (20x20, 10x10), each Reshape [1,C,HW]
    ("flat40", "flat20", "flat10"), Concat on the last axis -> Sigmoid -> y."""
    nodes = [helper.make_node("MaxPool", ["x"], ["m20"], name="pool20", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxPool", ["m20"], ["m10"], name="pool10", kernel_shape=[2, 2], strides=[2, 2])]
    inits = []
    for size, src in ((40, "x"), (20, "m20"), (10, "m10")):
        nodes.append(helper.make_node("Reshape", [src, f"s{size}"], [f"f{size}"], name=f"flat{size}"))
        inits.append(const(f"s{size}", np.array([1, c, size * size], np.int64)))
    nodes += [helper.make_node("Concat", ["f40", "f20", "f10"], ["cat"], name="levels", axis=2),
              helper.make_node("Sigmoid", ["cat"], ["y"], name="act")]
    return save_model(tmp_path / f"levels{c}.onnx", nodes, [value("x", [1, c, 40, 40])], [value("y", None)], inits)


@pytest.mark.parametrize(("c", "cpu_in"), [
    (51, {"fp16", "int8"}),  # corpus yolov8n_pose_320 /model.22/Reshape_8 (17 keypoints x 3)
    (24, {"int8"}),  # probe levels_24: a multiple of 8, not of 16
    (48, set()),  # probe levels_48_split3's flatten: whole groups in both
    (20, {"fp16", "int8"}),  # probe levels_20
    (80, set()),  # corpus yolov8n_320 classes
])
def test_rk3588_head_level_flatten_needs_whole_channel_or_pixel_groups(catalog, tmp_path, c, cpu_in):
    path = _levels(tmp_path, c)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("flat10") is (precision not in cpu_in)
        assert verdict("flat40") and verdict("flat20")  # 1600 and 400 pixels: whole 16-byte groups
        assert _verdicts(catalog, path, "rk3576", precision)("flat10")


@pytest.mark.parametrize(("b", "cpu_in"), [(3, {"fp16", "int8"}), (4, {"fp16", "int8"}), (8, {"int8"}), (16, set())])
def test_rk3588_cutting_joined_head_channels_needs_whole_channel_groups(catalog, tmp_path, b, cpu_in):
    """corpus yolov8n_pose_320 /model.22/Reshape_9 (b = 3) CPU, the DFL (b = 16) NPU; probe levels_C_splitB."""
    path = _levels(tmp_path, 48)
    model = onnx.load(path)
    act = next(n for n in model.graph.node if n.name == "act")
    model.graph.node.remove(act)
    model.graph.node.extend([helper.make_node("Reshape", ["cat", "ss"], ["k4"], name="n"),
                             helper.make_node("Softmax", ["k4"], ["y"], name="pieces", axis=2)])
    model.graph.initializer.append(const("ss", np.array([1, 48 // b, b, 2100], np.int64)))
    onnx.save(model, path)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("n")


@pytest.mark.parametrize(("n", "cpu_in"), [(1000, set()), (1008, set()), (100, {"fp16", "int8"})])
def test_rk3588_a_softmax_output_relayout_follows_fp16_alignment_in_int8(catalog, tmp_path, n, cpu_in):
    """corpus yolov8n_cls_224 /model.9/Softmax [1,1000]; probe smout_N: the Softmax runs in FLOAT16 in INT8."""
    nodes = [helper.make_node("Gemm", ["x", "gw"], ["logits"], name="fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], name="n", axis=1)]
    path = save_model(tmp_path / f"smout{n}.onnx", nodes, [value("x", [1, 16])], [value("y", None)],
                      [weight("gw", [n, 16])])
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)


@pytest.mark.parametrize(("residual", "cpu"), [(False, True), (True, False)])
def test_rk3588_window_partition_of_a_map_read_again_keeps_the_channel(catalog, tmp_path, residual, cpu):
    """corpus timm_tiny_vit_5m_224 (NHWC map also read by the residual Add: exWindow in channel form) against
    NesT's partition (probe winres_128_28_7_r3 vs wintok_128_28_28_7, rk3588 FP16, 200704 bytes)."""
    c, h, block = 128, 28, 7
    g = h // block
    nodes = [helper.make_node("Relu", ["x"], ["m"], name="src"),
             helper.make_node("Transpose", ["m"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "s6"], ["r6"], name="blocks6"),
             helper.make_node("Transpose", ["r6"], ["t6"], name="blocks_t", perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("Reshape", ["t6", "s3"], ["b"], name="blocks"),
             helper.make_node("Relu", ["b"], ["y"], name="tail")]
    outputs = [value("y", None)]
    if residual:
        nodes.append(helper.make_node("Relu", ["t"], ["z"], name="residual_reader"))
        outputs.append(value("z", None))
    inits = [const("s6", np.array([1, g, block, g, block, c], np.int64)),
             const("s3", np.array([g * g, block * block, c], np.int64))]
    path = save_model(tmp_path / f"winres{residual}.onnx", nodes, [value("x", [1, c, h, h])], outputs, inits)
    assert _verdicts(catalog, path, "rk3588", "fp16")("src") is not cpu


@pytest.mark.parametrize(("h", "cpu_in"), [(16, set()), (24, set()), (10, {"fp16", "int8"}), (12, {"fp16", "int8"})])
def test_rk3588_head_with_whole_groups_of_boxes_relays_nothing_out(catalog, tmp_path, h, cpu_in):
    """probe obbhead_0_16 / obbhead_0_24: N = 320 / 720 boxes (multiples of 16) leave every node on the NPU;
    N = 125 and 180 (probe obbhead_0_12) are multiples of neither 8 nor 16."""
    path = _seg_head(tmp_path, 1, h, decode=True)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("map0_sigmoid") is (precision not in cpu_in)


def test_rk3588_joined_levels_carry_the_output_relayout_past_their_sigmoid(catalog, tmp_path):
    """probe levels_80: Concat of level rows -> Sigmoid -> output [1,80,2100]: the Sigmoid moves before the
    relayout, whose CPU Reshape is named after the Concat."""
    path = _levels(tmp_path, 80)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert not verdict("levels") and verdict("act")
        assert _verdicts(catalog, path, "rk3576", precision)("levels")


def test_reshapes_of_scalars_meet_every_rknn_rule_without_error(catalog, tmp_path):
    """A Reshape of a rank-0 tensor (tv_ssdlite320_mobilenet_v3_large's anchor arithmetic) has no dims to test."""
    nodes = [helper.make_node("Reshape", ["x", "s0"], ["a"], name="to_scalar"),
             helper.make_node("Reshape", ["a", "s1"], ["y"], name="n")]
    path = save_model(tmp_path / "scalar.onnx", nodes, [value("x", [1])], [value("y", None)],
                      [const("s0", np.array([], np.int64)), const("s1", np.array([1], np.int64))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n")


def _grid(shape, region, reverse_last=False):
    axes = [np.arange(n)[r] for n, r in zip(shape, region)]
    if reverse_last:
        axes[-1] = axes[-1][::-1]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).astype(np.int64)


def _scatter(tmp_path, form, shape=(1, 16, 8, 8)):
    """x -> Relu -> ScatterND(data, indices of `form`, Sigmoid(data) or a piece of it) ("n") -> Relu -> y, as
    tools/probe_rknn_placement.py scatter_* builds it."""
    c, h, w = shape[1:]
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"), helper.make_node("Sigmoid", ["a"], ["s"], name="upd")]
    inits, inputs, upd = [], [value("x", list(shape))], "s"
    if form in ("full", "full_rev"):
        inits.append(const("idx", _grid(shape, (slice(None),) * 4, form == "full_rev")))
    elif form == "rows":
        inits.append(const("idx", np.zeros((1, 1), np.int64)))
    elif form == "corner":
        inits += [const("idx", _grid(shape, (slice(None), slice(None), slice(1, None), slice(1, None)))),
                  const("st", np.array([1, 1], np.int64)), const("en", np.array([h, w], np.int64)),
                  const("ax", np.array([2, 3], np.int64))]
        nodes.append(helper.make_node("Slice", ["s", "st", "en", "ax"], ["sp"], name="piece"))
        upd = "sp"
    elif form == "runtime":
        inputs.append(value("idx", [*shape, 4], onnx.TensorProto.INT64))
    else:  # "expand": the grid built from small constants, larger than the import folds (torch's x[:, :, 0:, 0:] = y)
        inits += [const("zero", np.array([0], np.int64)), const("full", np.array(shape, np.int64)),
                  const("ch", np.arange(c, dtype=np.int64).reshape(c, 1, 1)),
                  const("hh", np.arange(h, dtype=np.int64).reshape(h, 1)), const("ww", np.arange(w, dtype=np.int64)),
                  const("last", np.array([-1], np.int64))]
        for k, src in enumerate(("zero", "ch", "hh", "ww")):
            nodes += [helper.make_node("Expand", [src, "full"], [f"e{k}"], name=f"expand{k}"),
                      helper.make_node("Unsqueeze", [f"e{k}", "last"], [f"u{k}"], name=f"unsqueeze{k}")]
        nodes.append(helper.make_node("Concat", ["u0", "u1", "u2", "u3"], ["idx"], name="grid", axis=4))
    nodes += [helper.make_node("ScatterND", ["a", "idx", upd], ["t"], name="n"),
              helper.make_node("Relu", ["t"], ["y"], name="tail")]
    return save_model(tmp_path / f"scatter_{form}.onnx", nodes, inputs, [value("y", None)], inits)


@pytest.mark.parametrize(("form", "shape", "removed"), [
    ("full", (1, 16, 8, 8), True),  # probe scatter_full: every element in order, no layer
    ("rows", (1, 16, 8, 8), True),  # probe scatter_rows: one index tuple naming the whole batch
    ("expand", (1, 1, 300, 256), True),  # probe scatter_expand; corpus timm_mvitv2_tiny (76800 elements per part)
    ("full_rev", (1, 16, 8, 8), False),  # probe scatter_full_rev: every element, W reversed
    ("corner", (1, 16, 8, 8), False),  # probe scatter_corner: x[:, :, 1:, 1:]
    ("runtime", (1, 16, 8, 8), False),  # indices known only at run time
])
def test_a_scatter_that_overwrites_every_element_in_order_is_removed(catalog, tmp_path, form, shape, removed):
    path = _scatter(tmp_path, form, shape)
    for target in ("rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is removed
            assert ("RKNN-OP-NPU" in violations(catalog, path, target, precision)) is not removed


def _grid_window(tmp_path, h, g, mode):
    """x NHWC [1,H,H,8] -> (partition, block or grid -> Relu) -> merge (block or grid) -> Reshape [1,H,H,8] ("n")
    -> Relu -> y, as tools/probe_rknn_placement.py gridwin_* builds it."""
    n, c = h // g, 8
    nodes, inits, src = [], [const("s4", np.array([1, h, h, c], np.int64)),
                             const("sw", np.array([n * n, g, g, c], np.int64))], "x"
    if mode in ("block", "grid", "grid_forward"):
        grid = mode != "block"
        inits.append(const("s6", np.array([1, g, n, g, n, c] if grid else [1, n, g, n, g, c], np.int64)))
        nodes += [helper.make_node("Reshape", ["x", "s6"], ["r6"], name="part"),
                  helper.make_node("Transpose", ["r6"], ["t6"], name="part_t",
                                   perm=[0, 2, 4, 1, 3, 5] if grid else [0, 1, 3, 2, 4, 5]),
                  helper.make_node("Reshape", ["t6", "sw"], ["w"], name="windows"),
                  helper.make_node("Relu", ["w"], ["a"], name="per_window")]
        src = "a"
    merge_grid = mode in ("grid", "grid_merge")
    inits.append(const("s6b", np.array([1, n, n, g, g, c] if merge_grid else [1, n, g, n, g, c], np.int64)))
    nodes += [helper.make_node("Reshape", [src, "s6b"], ["b6"], name="merge_r"),
              helper.make_node("Transpose", ["b6"], ["u6"], name="merge_t",
                               perm=[0, 3, 1, 4, 2, 5] if merge_grid else [0, 1, 3, 2, 4, 5]),
              helper.make_node("Reshape", ["u6", "s4"], ["m"], name="n"),
              helper.make_node("Relu", ["m"], ["y"], name="tail")]
    return save_model(tmp_path / f"grid_{mode}_{h}_{g}.onnx", nodes, [value("x", [1, h, h, c])], [value("y", None)],
                      inits)


@pytest.mark.parametrize(("mode", "h", "g", "cpu"), [
    ("grid", 16, 8, True),  # probe gridwin_grid_32_16_8: 2 windows per axis
    ("grid", 12, 4, True),  # probe gridwin_grid_16_12_4
    ("grid_merge", 16, 8, True),  # probe gridwin_grid_reverse_32_16_8: the merge alone
    ("grid", 8, 8, False),  # probe gridwin_grid_32_8_8: one window per axis, nothing moves
    ("block", 16, 8, False),  # probe gridwin_block_32_16_8: exWindow both ways
    ("grid_forward", 16, 8, False),  # probe gridwin_grid_forward_32_16_8: grid partition, block merge
])
def test_merging_grid_windows_back_into_pixels_is_a_cpu_transpose(catalog, tmp_path, mode, h, g, cpu):
    path = _grid_window(tmp_path, h, g, mode)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            verdict = _verdicts(catalog, path, target, precision)
            assert verdict("n") is not cpu  # the last op of the layout run carries the layer
            assert verdict("merge_t") and verdict("merge_r")
            assert ("RKNN-GRID-MERGE" in violations(catalog, path, target, precision)) is cpu


def _softmax(tmp_path, shape, scores=False):
    """x -> Relu -> Softmax over the last axis ("n") -> Relu -> y; with `scores`, the Softmax reads q.k^T of two
    activations (attention scores, held with the heads in the batch axis)."""
    nodes, inputs = [helper.make_node("Relu", ["x"], ["a"], name="head")], [value("x", shape)]
    if scores:
        inputs.append(value("k", [shape[0], shape[1], shape[3], 16]))
        nodes = [helper.make_node("Relu", ["x"], ["q"], name="head"),
                 helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
                 helper.make_node("MatMul", ["q", "kt"], ["a"], name="scores")]
        inputs[0] = value("x", [shape[0], shape[1], shape[2], 16])
    nodes += [helper.make_node("Softmax", ["a"], ["s"], name="n", axis=-1), helper.make_node("Relu", ["s"], ["y"], name="tail")]
    return save_model(tmp_path / f"sm{'x'.join(map(str, shape))}{scores}.onnx", nodes, inputs, [value("y", None)])


@pytest.mark.parametrize(("shape", "cpu_in"), [
    ([1, 1, 256, 256], {"int8"}),  # probe mapsm_1_256_256: a 65536-element plane
    ([1, 1, 2048, 32], {"int8"}),  # probe mapsm_1_2048_32: H and W alone do not decide it
    ([1, 1, 257, 256], {"fp16", "int8"}),  # probe mapsm_1_257_256: 65792
    ([1, 32, 128, 128], set()),  # probe mapsm_32_64_64 / 16_128_128: 16384 per plane, whatever C
    ([1, 1, 128, 129], {"int8"}),  # probe mapsm_1_128_129: 16512
    ([1, 4, 196, 196], {"int8"}),  # corpus timm_cait_xxs24_224 talking heads
])
def test_rk3588_softmax_of_a_map_fits_one_plane(catalog, tmp_path, shape, cpu_in):
    path = _softmax(tmp_path, shape)
    for precision in ("fp16", "int8"):
        assert _verdicts(catalog, path, "rk3588", precision)("n") is (precision not in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("n")
    scores = _softmax(tmp_path, shape, scores=True)  # the same scores from a MatMul: one row per plane
    assert _verdicts(catalog, scores, "rk3588", "int8")("n")


def _cls_map(tmp_path, c, h, w, tail_1x1=False):
    """CoaT's position encoding between class-token blocks, as tools/probe_rknn_placement.py clsmap_* builds it:
    tokens [1,1+HW,C] -> Slice the class token off -> Transpose -> Reshape [1,C,H,W] ("unflat") -> depthwise Conv
    + the map -> Reshape [1,C,HW] ("flat") -> Transpose -> Concat the class token -> MatMul -> y."""
    n = h * w
    nodes = [helper.make_node("Slice", ["x", "one", "big", "ax"], ["s0"], name="drop_cls"),
             helper.make_node("Transpose", ["s0"], ["u0"], name="untok", perm=[0, 2, 1]),
             helper.make_node("Reshape", ["u0", "s4"], ["m"], name="unflat")]
    inits = [const("one", np.array([1], np.int64)), const("big", np.array([n + 1], np.int64)),
             const("ax", np.array([1], np.int64)), const("s4", np.array([1, c, h, w], np.int64)),
             const("s3", np.array([1, c, n], np.int64)), weight("cls", [1, 1, c]), weight("wm", [c, c])]
    if tail_1x1:  # the map goes on to a 1x1 convolution only: the toolkit convolves the rows first
        nodes.append(helper.make_node("Conv", ["m", "w1"], ["y"], name="pw"))
        inits.append(weight("w1", [16, c, 1, 1]))
    else:
        nodes += [helper.make_node("Conv", ["m", "wdw"], ["pe"], name="pe", group=c, pads=[1, 1, 1, 1]),
                  helper.make_node("Add", ["pe", "m"], ["res"], name="pe_add"),
                  helper.make_node("Reshape", ["res", "s3"], ["r"], name="flat"),
                  helper.make_node("Transpose", ["r"], ["t"], name="tok", perm=[0, 2, 1]),
                  helper.make_node("Concat", ["cls", "t"], ["j"], name="join", axis=1),
                  helper.make_node("MatMul", ["j", "wm"], ["y"], name="mix")]
        inits.append(weight("wdw", [c, 1, 3, 3]))
    return save_model(tmp_path / f"clsmap{c}_{h}_{w}{tail_1x1}.onnx", nodes, [value("x", [1, n + 1, c])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("c", "hw", "cpu_in"), [
    (152, 14, {"int8"}),  # probe clsmap_152_14_14; corpus timm_coat_tiny serial_blocks3
    (152, 28, set()),  # probe clsmap_152_28_28: 784 pixels fill 16-byte groups
    (160, 14, set()),  # probe clsmap_160_14_14: 160 channels fill whole groups
    (20, 7, {"fp16", "int8"}),  # probe clsmap_20_7_7: neither in either precision
])
def test_rk3588_map_to_rows_and_back_needs_whole_channel_or_pixel_groups(catalog, tmp_path, c, hw, cpu_in):
    path = _cls_map(tmp_path, c, hw, hw)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("unflat") is (precision not in cpu_in) and verdict("flat") is (precision not in cpu_in)
        assert ("RKNN-LEVEL-ROWS" in violations(catalog, path, "rk3588", precision, node="flat")) is (precision in cpu_in)
        assert _verdicts(catalog, path, "rk3576", precision)("flat")


def test_rk3588_rows_into_a_pointwise_convolution_take_its_output_channels(catalog, tmp_path):
    """probe clsmap_*: the toolkit runs a 1x1 convolution on the rows before the unflatten, so the unflatten
    regroups the convolution's 16 channels (a whole group) instead of the 152 it was given."""
    assert _verdicts(catalog, _cls_map(tmp_path, 152, 14, 14, tail_1x1=True), "rk3588", "int8")("unflat")


def test_rk3588_tokens_that_only_pass_per_token_ops_return_to_the_map_without_a_reshape(catalog, tmp_path):
    """probe maptok_152_14_14: map -> rows -> Transpose -> MatMul -> Transpose -> map runs as a 1x1 Conv."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "s3"], ["r"], name="flat"),
             helper.make_node("Transpose", ["r"], ["t"], name="tok", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["t", "wm"], ["m"], name="mix"),
             helper.make_node("Transpose", ["m"], ["b"], name="untok", perm=[0, 2, 1]),
             helper.make_node("Reshape", ["b", "s4"], ["u"], name="unflat"),
             helper.make_node("Conv", ["u", "wc"], ["y"], name="tail")]  # 152 channels out: no group either way
    path = save_model(tmp_path / "maptok.onnx", nodes, [value("x", [1, 152, 14, 14])], [value("y", None)],
                      [const("s3", np.array([1, 152, 196], np.int64)), const("s4", np.array([1, 152, 14, 14], np.int64)),
                       weight("wm", [152, 152]), weight("wc", [152, 152, 1, 1])])
    verdict = _verdicts(catalog, path, "rk3588", "int8")
    assert verdict("flat") and verdict("unflat")


@pytest.mark.parametrize(("mode", "size", "on_npu"), [
    ("cubic", 224, False),  # probe cubic_240_224; corpus timm_crossvit_tiny_240 /Resize
    ("cubic", 256, False),  # probe cubic_224_240 (up, not a whole scale)
    ("nearest", 224, True),  # nearest at any scale stays on the NPU
])
def test_cubic_resize_runs_on_the_cpu(catalog, tmp_path, mode, size, on_npu):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Resize", ["a", "", "", "sz"], ["r"], name="n", mode=mode),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    path = save_model(tmp_path / f"resize_{mode}{size}.onnx", nodes, [value("x", [1, 3, 240, 240])],
                      [value("y", None)], [const("sz", np.array([1, 3, size, size], np.int64))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert _verdicts(catalog, path, target, precision)("n") is on_npu


def test_rk3588_map_rows_around_a_resize_follow_the_same_groups(catalog, tmp_path):
    """corpus timm_coat_tiny parallel blocks: rows [1,152,196] -> map [1,152,14,14] -> Resize x2 -> map ->
    rows [1,152,784]: the 196-pixel unflatten is CPU in INT8, the 784-pixel flatten is not."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Reshape", ["a", "s4"], ["m"], name="n"),
             helper.make_node("Resize", ["m", "", "sc"], ["u"], name="up", mode="linear"),
             helper.make_node("Reshape", ["u", "s3"], ["r"], name="flat"),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    path = save_model(tmp_path / "resize_rows.onnx", nodes, [value("x", [1, 152, 196])], [value("y", None)],
                      [const("s4", np.array([1, 152, 14, 14], np.int64)), const("s3", np.array([1, 152, 784], np.int64)),
                       const("sc", np.array([1, 1, 2, 2], np.float32))])
    verdict = _verdicts(catalog, path, "rk3588", "int8")
    assert not verdict("n") and verdict("flat")
    assert _verdicts(catalog, path, "rk3588", "fp16")("n")


def _rel_pos(tmp_path, heads, q, k, d=16):
    """Scores of two activations [1,h,q*q,k*k] ("scores") viewed as [1,h,q,q,k,k] ("grid"), + a broadcast
    rel_w term [1,h,q,q,1,k], merged back ("n") -> Softmax ("sm") -> y: MViTv2's decomposed relative position, as
    tools/probe_rknn_placement.py relpos_* builds it."""
    n, m = q * q, k * k
    nodes = [helper.make_node("MatMul", ["qq", "kk"], ["s"], name="scores"),
             helper.make_node("Reshape", ["s", "s6"], ["g"], name="grid"),
             helper.make_node("Add", ["g", "rel"], ["a"], name="add_w"),
             helper.make_node("Reshape", ["a", "s4"], ["mg"], name="n"),
             helper.make_node("Softmax", ["mg"], ["y"], name="sm", axis=-1)]
    inputs = [value("qq", [1, heads, n, d]), value("kk", [1, heads, d, m]), value("rel", [1, heads, q, q, 1, k])]
    return save_model(tmp_path / f"relpos{heads}_{q}_{k}.onnx", nodes, inputs, [value("y", None)],
                      [const("s6", np.array([1, heads, q, q, k, k], np.int64)),
                       const("s4", np.array([1, heads, n, m], np.int64))])


@pytest.mark.parametrize(("heads", "q", "k", "scores_cpu", "merge_cpu"), [
    (4, 14, 14, True, True),  # probe relpos_4_14_14; corpus timm_mvitv2_tiny stage 2
    (8, 7, 7, True, True),  # probe relpos_8_7_7
    (4, 28, 14, False, True),  # probe relpos_4_28_14: N = 784 fills the groups
    (4, 12, 12, False, False),  # probe relpos_4_12_12: 144 in both
    (1, 14, 14, False, True),  # one head: the scores keep their batch axis (corpus stage 0: merge CPU)
])
def test_rk3588_relays_a_score_grid_unless_its_rows_or_columns_fill_groups(catalog, tmp_path, heads, q, k,
                                                                           scores_cpu, merge_cpu):
    path = _rel_pos(tmp_path, heads, q, k)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("scores") is not scores_cpu and verdict("n") is not merge_cpu
        assert verdict("grid") and verdict("add_w")
        assert _verdicts(catalog, path, "rk3576", precision)("scores") and _verdicts(catalog, path, "rk3576", precision)("n")


def test_rk3588_int8_softmax_after_a_free_grid_merge_keeps_the_fp16_plane(catalog, tmp_path):
    """probe relpos_4_16_16: (1,4,256,256) after an NPU merge is an NPU Softmax in INT8; relpos_4_14_14's
    (1,4,196,196) after a CPU merge is CPU in INT8 only."""
    assert _verdicts(catalog, _rel_pos(tmp_path, 4, 16, 16), "rk3588", "int8")("sm")
    aligned_not = _rel_pos(tmp_path, 4, 14, 14)
    assert not _verdicts(catalog, aligned_not, "rk3588", "int8")("sm")
    assert _verdicts(catalog, aligned_not, "rk3588", "fp16")("sm")


def _cls_crpe(tmp_path, d, s, cls=True):
    """CoaT's convolutional relative position on 8 heads of d channels with a class token (probe crpecls_8_D_S):
    v [1,8,1+N,d] -> Slice the class token off (or not) -> Transpose -> Reshape [1,8d,S,S] ("to_map") -> depthwise
    Conv -> Reshape [1,8,d,N] ("from_map") -> Transpose -> * q -> Pad the class token's row back (or not) -> y."""
    n, c = s * s, 8 * d
    t = n + 1 if cls else n
    nodes = [helper.make_node("Relu", ["v"], ["vr"], name="head")]
    src = "vr"
    inits = [const("one", np.array([1], np.int64)), const("big", np.array([t], np.int64)),
             const("two", np.array([2], np.int64)), const("s4", np.array([1, c, s, s], np.int64)),
             const("sh", np.array([1, 8, d, n], np.int64)), weight("wdw", [c, 1, 3, 3]),
             const("pads", np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64))]
    if cls:
        nodes.append(helper.make_node("Slice", ["vr", "one", "big", "two"], ["vs"], name="v_img"))
        src = "vs"
    nodes += [helper.make_node("Transpose", [src], ["vt"], name="vt", perm=[0, 1, 3, 2]),
              helper.make_node("Reshape", ["vt", "s4"], ["vm"], name="to_map"),
              helper.make_node("Conv", ["vm", "wdw"], ["vc"], name="conv", group=c, pads=[1, 1, 1, 1]),
              helper.make_node("Reshape", ["vc", "sh"], ["vh"], name="from_map"),
              helper.make_node("Transpose", ["vh"], ["vht"], name="back", perm=[0, 1, 3, 2]),
              helper.make_node("Mul", ["q", "vht"], ["e"], name="mul")]
    if cls:
        nodes.append(helper.make_node("Pad", ["e", "pads"], ["y"], name="pad"))
    else:
        nodes.append(helper.make_node("Relu", ["e"], ["y"], name="tail"))
    return save_model(tmp_path / f"clscrpe{d}_{s}{cls}.onnx", nodes,
                      [value("v", [1, 8, t, d]), value("q", [1, 8, n, d])], [value("y", None)], inits)


@pytest.mark.parametrize(("d", "s", "to_map_cpu", "from_map_cpu"), [
    (32, 14, {"int8"}, {"fp16", "int8"}),  # probe crpecls_8_32_14; corpus timm_coat_lite_tiny crpe3
    (16, 28, set(), set()),  # probe crpecls_8_16_28: 784 pixels, 100352 elements
    (8, 56, {"int8"}, set()),  # probe crpecls_8_8_56: 200704 elements > 131072
    (16, 32, set(), set()),  # probe crpecls_8_16_32: 131072 elements, just inside
    (40, 7, {"int8"}, {"fp16", "int8"}),  # probe crpecls_8_40_7
])
def test_rk3588_class_token_heads_into_a_map_and_back(catalog, tmp_path, d, s, to_map_cpu, from_map_cpu):
    path = _cls_crpe(tmp_path, d, s)
    for precision in ("fp16", "int8"):
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("to_map") is (precision not in to_map_cpu)
        assert verdict("from_map") is (precision not in from_map_cpu)
        assert _verdicts(catalog, path, "rk3576", precision)("from_map")
    plain = _cls_crpe(tmp_path, d, s, cls=False)  # probe crpe_8_32_14: no class token, no Slice or Pad
    assert _verdicts(catalog, plain, "rk3588", "int8")("from_map")


@pytest.mark.parametrize(("q", "cpu"), [(14, True), (8, True), (16, False)])  # probe relpos_4_Q_*: INT8
def test_rk3588_int8_relative_position_column_needs_whole_rows(catalog, tmp_path, q, cpu):
    k = q
    nodes = [helper.make_node("MatMul", ["qq", "kk"], ["s"], name="scores"),
             helper.make_node("Reshape", ["s", "s6"], ["g"], name="grid"),
             helper.make_node("Unsqueeze", ["relh", "last"], ["col"], name="n"),
             helper.make_node("Add", ["g", "col"], ["y"], name="add_h")]
    path = save_model(tmp_path / f"relcol{q}.onnx", nodes,
                      [value("qq", [1, 4, q * q, 16]), value("kk", [1, 4, 16, k * k]), value("relh", [1, 4, q, q, k])],
                      [value("y", None)], [const("s6", np.array([1, 4, q, q, k, k], np.int64)),
                                           const("last", np.array([-1], np.int64))])
    assert _verdicts(catalog, path, "rk3588", "int8")("n") is not cpu
    assert _verdicts(catalog, path, "rk3588", "fp16")("n")  # FP16: probe and corpus disagree, not claimed


_RKNN2 = ("rk3588", "rk3576", "rk3566", "rk3562", "rv1126b")  # rk3566: einform_5_{plain,torch,onesp,sp2a,...}


def _einsum(tmp_path, equations, shapes, label):
    """Activations -> Einsum (one node per equation, each named e<i>, reading the inputs it names) -> y<i>."""
    nodes = [helper.make_node("Einsum", list(inputs), [f"y{i}"], name=f"e{i}", equation=eq)
             for i, (eq, inputs) in enumerate(equations)]
    return save_model(tmp_path / f"ein_{label}.onnx", nodes, [value(n, s) for n, s in shapes.items()],
                      [value(f"y{i}", None) for i in range(len(equations))])


@pytest.mark.parametrize(("equation", "cpu"), [
    ("bghid,bghjd->bghij", False),  # probe einform_5_plain: exMatMul
    ("B G H I D, B G H J D -> B G H I J", True),  # einform_5_torch; corpus tv_maxvit_t
    ("BGHID,BGHJD->BGHIJ", False),  # einform_5_upper: upper case alone is fine
    ("b g h i d, b g h j d -> b g h i j", True),  # einform_5_lowsp
    ("bghi d,bghjd->bghij", False),  # einform_5_onesp: one blank in an operand, just inside
    ("bgh i d,bghjd->bghij", True),  # einform_5_sp2a: two blanks in one operand, just outside
    ("b ghid,bghjd->bghij", False),  # einform_5_sp1front
    ("bghi d,bghj d->bghi j", False),  # einform_5_sp1all: one blank in each term
    ("bghid,b g h j d->bghij", True),  # einform_5_innerb: the second operand alone
    ("bghid, bghjd->bghij", False),  # einform_5_comma: one blank after the comma
    ("bghid,bghjd -> bghij", False),  # einform_5_arrow
    ("bghid, bghjd -> bghij", True),  # einform_5_commaarrow: the second operand ' bghjd ' holds two blanks
    ("  bghid,bghjd->bghij", True),  # einform_5_lead2: two leading blanks are two labels
    ("bghid,  bghjd->bghij", True),  # einform_5_comma2
    ("bghid,bghjd->b g h i j", False),  # einform_5_innero: the output term is not checked
    ("...id,...jd->...ij", False),  # einform_5_ellip
])
def test_einsum_with_two_blanks_in_an_operand_stays_on_the_cpu(catalog, tmp_path, equation, cpu):
    path = _einsum(tmp_path, [(equation, ("a", "b"))], {"a": [1, 2, 2, 64, 8], "b": [1, 2, 2, 64, 8]}, "pair")
    for target in _RKNN2:
        for precision in ("fp16", "int8"):
            assert ("RKNN-EINSUM-LABELS" in violations(catalog, path, target, precision, node="e0")) is cpu
            if target != "rk3566":  # rk3566's own rules (catalog._rk3566) may add verdicts of their own
                assert _verdicts(catalog, path, target, precision)("e0") is not cpu


def test_einsum_blank_labels_hold_for_every_operand_count(catalog, tmp_path):
    """probes einone_tp_torch, einew_torch, einthree_torch (CPU) and their plain forms (NPU)."""
    shapes = {"q": [1, 4, 64, 8], "kv": [1, 64, 8, 8], "z": [1, 4, 64], "m": [1, 32, 8, 8]}
    path = _einsum(tmp_path, [
        ("B H I D -> B H D I", ("q",)), ("bhid->bhdi", ("q",)),
        ("N C H W, N C H W -> N C H W", ("m", "m")), ("nchw,nchw->nchw", ("m", "m")),
        ("b n h d, b h d e, b n h -> b n h e", ("q", "kv", "z")), ("bnhd,bhde,bnh->bnhe", ("q", "kv", "z")),
    ], shapes, "ops")
    for target in _RKNN2:
        flagged = [("RKNN-EINSUM-LABELS" in violations(catalog, path, target, "fp16", node=f"e{i}")) for i in range(6)]
        assert flagged == [True, False, True, False, True, False]


def _einsum_attention(tmp_path, n, rank=5, spaced=("qk", "pv")):
    """tv_maxvit_t's attention core: q, k, v [1,G,2,N,16] (rank 4: [G,2,N,16]) -> Einsum q.k -> Softmax -> Einsum
    p.v -> Relu; each Einsum in torch's spaced form when named in `spaced`."""
    lead = "B G " if rank == 5 else "B "
    plain = "bg" if rank == 5 else "b"
    qk = f"{lead}H I D, {lead}H J D -> {lead}H I J" if "qk" in spaced else f"{plain}hid,{plain}hjd->{plain}hij"
    pv = f"{lead}H I J, {lead}H J D -> {lead}H I D" if "pv" in spaced else f"{plain}hij,{plain}hjd->{plain}hid"
    shape = [1, 4, 2, n, 16] if rank == 5 else [4, 2, n, 16]
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], name="qk", equation=qk),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("Einsum", ["p", "v"], ["o"], name="pv", equation=pv),
             helper.make_node("Relu", ["o"], ["y"], name="tail")]
    return save_model(tmp_path / f"einattn{n}_{rank}_{'_'.join(spaced)}.onnx", nodes,
                      [value(x, shape) for x in "qkv"], [value("y", None)])


@pytest.mark.parametrize(("n", "cpu"), [(49, True), (50, True), (25, True), (44, False), (36, False), (64, False)])
def test_rk3588_softmax_handed_to_a_cpu_einsum_needs_a_last_axis_of_whole_fours(catalog, tmp_path, n, cpu):
    """probes einho_N_16: the Softmax's hand-over Reshape to the spaced P.V Einsum; corpus tv_maxvit_t (N = 49)."""
    path = _einsum_attention(tmp_path, n)
    for precision in ("fp16", "int8"):
        assert ("RKNN-EINSUM-HANDOVER" in violations(catalog, path, "rk3588", precision, node="softmax")) is cpu
        verdict = _verdicts(catalog, path, "rk3588", precision)
        assert verdict("softmax") is not cpu
        assert not verdict("qk") and not verdict("pv")
        assert _verdicts(catalog, path, "rk3576", precision)("softmax")  # einattn_torch: NPU on rk3576


def test_rk3588_einsum_handover_needs_a_rank5_operand_and_a_cpu_einsum(catalog, tmp_path):
    four = _einsum_attention(tmp_path, 49, rank=4)  # probe einattn4_torch: no Reshape, Softmax NPU
    plain = _einsum_attention(tmp_path, 49, spaced=("qk",))  # the P.V Einsum is rewritten: nothing handed over
    for path in (four, plain):
        assert _verdicts(catalog, path, "rk3588", "fp16")("softmax")


def _rel_logits(tmp_path, w, d=32, heads=4):
    """BoTNet's rel_logits_1d as the probe rellog_W builds it: q [heads,W,W,d] @ rel [d,2W-1] -> Reshape
    [-1,W,2W-1] -> Pad the last axis by 1 (pad_col) -> Flatten -> Pad by W-1 (pad_flat) -> Reshape -> Slice."""
    r = 2 * w - 1
    nodes = [helper.make_node("MatMul", ["q", "rel"], ["lg"], name="logits"),
             helper.make_node("Reshape", ["lg", "s3"], ["l3"], name="rows"),
             helper.make_node("Pad", ["l3", "p1"], ["lp"], name="pad_col"),
             helper.make_node("Flatten", ["lp"], ["lf"], name="flat", axis=1),
             helper.make_node("Pad", ["lf", "p2"], ["lq"], name="pad_flat"),
             helper.make_node("Reshape", ["lq", "s3b"], ["lr"], name="unflat"),
             helper.make_node("Slice", ["lr", "st", "en", "axs"], ["y"], name="crop")]
    inits = [weight("rel", [d, r]), const("s3", np.array([-1, w, r], np.int64)),
             const("p1", np.array([0, 0, 0, 0, 0, 1], np.int64)), const("p2", np.array([0, 0, 0, w - 1], np.int64)),
             const("s3b", np.array([-1, w + 1, r], np.int64)), const("st", np.array([0, w - 1], np.int64)),
             const("en", np.array([w, r], np.int64)), const("axs", np.array([1, 2], np.int64))]
    return save_model(tmp_path / f"rellog{w}.onnx", nodes, [value("q", [heads, w, w, d])], [value("y", None)], inits)


@pytest.mark.parametrize("w", [8, 16, 7, 4])  # probes rellog_W (rk3566: rellog_8, rellog_16); corpus timm_botnet26t_256
def test_pad_of_a_token_tensors_channels_is_cpu_but_of_the_flattened_rows_npu(catalog, tmp_path, w):
    path = _rel_logits(tmp_path, w)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b", "rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            verdict = _verdicts(catalog, path, target, precision)
            assert not verdict("pad_col")
            if w != 7:
                assert verdict("pad_flat")
    # rellog_7's flattened rows [28, 98] are not whole channel groups. The probe's isolated graph held them as
    # (1,28,1,98) and padded them on the NPU; whole models hold such rows as (B,L,1,1) and pad them on the CPU
    # (corpus timm_haloregnetz_b_dynamo, L = 154). RKNN-ROWS-PAD follows the whole-model lowering, so it claims this
    # Pad: a known disagreement with the probe, recorded in the rule's source.
    if w == 7:
        for target in ("rk3588", "rk3566"):
            assert "RKNN-ROWS-PAD" in violations(catalog, path, target, "fp16", node="pad_flat")


def test_pad_of_token_channels_needs_the_token_layout(catalog, tmp_path):
    """The same Pad of the last axis of a map made by a Conv (NCHW: its last axis is W, not the channel)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Pad", ["c", "p"], ["y"], name="n")]
    path = save_model(tmp_path / "padw.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)],
                      [weight("w", [16, 16, 1, 1]), const("p", np.array([0, 0, 0, 0, 0, 0, 0, 1], np.int64))])
    assert _verdicts(catalog, path, "rk3576", "fp16")("n")


def _last_axis_write(tmp_path, lo, hi, width=4, reverse=False):
    """[1, 16, width] tokens -> ScatterND writing [..., lo:hi] with Sigmoid of that piece ("n") -> Relu."""
    idx = np.array([[[0, i, j] for j in range(lo, hi)] for i in range(16)], np.int64)[None]
    if reverse:
        idx = idx[:, :, ::-1].copy()
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="head"),
             helper.make_node("Slice", ["a", "lo", "hi", "ax"], ["p"], name="cut"),
             helper.make_node("Sigmoid", ["p"], ["q"], name="upd"),
             helper.make_node("ScatterND", ["a", "idx", "q"], ["t"], name="n"),
             helper.make_node("Relu", ["t"], ["y"], name="tail")]
    inits = [const("idx", idx), const("lo", np.array([lo], np.int64)), const("hi", np.array([hi], np.int64)),
             const("ax", np.array([2], np.int64))]
    return save_model(tmp_path / f"last_{lo}_{hi}_{reverse}.onnx", nodes, [value("x", [1, 16, width])],
                      [value("y", None)], inits)


@pytest.mark.parametrize(("lo", "hi", "width", "reverse", "rewritten"), [
    (0, 2, 4, False, True),  # probe scatter_last_half: DETR's boxes[..., :2] = ...
    (2, 4, 4, False, True),  # the other half (probe scatter_last_pair)
    (64, 128, 128, False, True),  # probe scatter_last_wide
    (1, 3, 4, False, True),  # a piece in the middle is one contiguous range too
    (0, 2, 4, True, False),  # the piece's elements out of order
])
def test_a_scatter_of_one_piece_of_the_last_axis_is_a_split_and_concat(catalog, tmp_path, lo, hi, width, reverse,
                                                                       rewritten):
    path = _last_axis_write(tmp_path, lo, hi, width, reverse)
    for target in ("rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"):
        assert _verdicts(catalog, path, target, "fp16")("n") is rewritten
