"""RKNN rules at their boundaries, per SoC where the verdict differs (placement found by the toolkit probe)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import const, save_model, value, violations, weight

ALL = ["rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1126b", "rv1106", "rv1103"]


def npu(catalog, path, target, precision="int8", node="n"):
    return check_graph(load_model(path), catalog, target).verdict(node).runs_on("npu", precision)


@pytest.mark.parametrize("target", ALL)
def test_conv_runs_on_every_npu(catalog, build, target):
    assert npu(catalog, build.conv(), target)


@pytest.mark.parametrize("target", ALL)
def test_cpu_fallback_ops(catalog, build, target):
    path = build.op("Min", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert not npu(catalog, path, target)
    assert "RKNN-OP-NPU" in violations(catalog, path, target)
    assert check_graph(load_model(path), catalog, target).verdict("n").runs_on("cpu", "fp32")


@pytest.mark.parametrize(("target", "on_npu"), [("rk3588", True), ("rk3576", True), ("rk3562", True),
                                                ("rk3566", False), ("rk3568", False)])
def test_softmax_and_transpose_fall_back_on_rk356x(catalog, build, target, on_npu):
    assert npu(catalog, build.op("Softmax", [1, 8, 4, 4], axis=1), target, "fp16") is on_npu
    assert npu(catalog, build.op("Transpose", [1, 8, 4, 4], perm=[0, 1, 3, 2]), target, "fp16") is on_npu


@pytest.mark.parametrize(("target", "on_npu"), [("rk3576", True), ("rv1126b", True), ("rk3588", False)])
def test_sin_cos_on_rk3576_rv1126b_only(catalog, build, target, on_npu):
    assert npu(catalog, build.op("Sin", [1, 8, 4, 4]), target, "fp16") is on_npu


@pytest.mark.parametrize("target", ["rk3576", "rv1126b"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_sin_cos_run_in_int8_too_as_measured(catalog, build, precision, target):
    """seed002 says float16 only; rknn-toolkit2 2.5.0 builds INT8 Sin/Cos layers on the NPU (probe
    sin_runtime/cos_runtime): the measurement wins, so neither precision violates RKNN-SIN-COS."""
    assert "RKNN-SIN-COS" not in violations(catalog, build.op("Cos", [1, 8, 4, 4]), target, precision)
    assert npu(catalog, build.op("Sin", [1, 8, 4, 4]), target, precision)


def test_sin_cos_rule_still_enforces_its_precision_list(catalog, build):
    """The check itself: a precision outside the rule's list fails (a list narrowed back to the seed's)."""
    from dataclasses import replace

    from optimizer.catalog._checks import LayerView, precision_only

    rule = replace(catalog.rule("RKNN-SIN-COS"), params={"precisions": ["fp16"]})
    graph = load_model(build.op("Cos", [1, 8, 4, 4]))
    target = catalog.target("rk3576")
    view = lambda p: LayerView(graph, graph.node("n"), catalog.family_of(target), target, p, "trig")  # noqa: E731
    assert precision_only(rule, view("fp16")) is None
    assert precision_only(rule, view("int8")) == "Cos runs on the NPU in fp16 only"


@pytest.mark.parametrize(("precision", "on_npu"), [("fp16", True), ("int8", False)])
def test_div_npu_in_fp16_only(catalog, build, precision, on_npu):
    path = build.op("Div", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert npu(catalog, path, "rk3588", precision) is on_npu


@pytest.mark.parametrize(("pads", "include", "on_npu"), [((0, 0, 0, 0), 0, True), ((1, 1, 1, 1), 1, True),
                                                         ((1, 1, 1, 1), 0, False)])
def test_average_pool_count_include_pad(catalog, build, pads, include, on_npu):
    path = build.op("AveragePool", [1, 8, 8, 8], kernel_shape=[3, 3], pads=list(pads), count_include_pad=include)
    assert npu(catalog, path, "rk3588") is on_npu


@pytest.mark.parametrize(("kernel", "stride", "on_npu"), [(1, 2, False), (2, 2, True), (3, 2, True), (1, 1, True)])
@pytest.mark.parametrize("target", ["rk3576", "rv1126b"])
def test_subsampling_average_pool_is_cpu_in_int8_on_rk3576_rv1126b(catalog, build, target, kernel, stride, on_npu):
    """Measured (corpus timm_levit_conv_128s q/down: 1x1 stride 2, INT8 CPU on rk3576/rv1126b); kernel >= stride
    pools every pixel (corpus timm_resnet18d 2x2/2: NPU)."""
    path = build.op("AveragePool", [1, 16, 14, 14], kernel_shape=[kernel, kernel], strides=[stride, stride])
    assert npu(catalog, path, target, "int8") is on_npu
    assert npu(catalog, path, target, "fp16")
    assert npu(catalog, path, "rk3588", "int8") and npu(catalog, path, "rk3562", "int8")


@pytest.mark.parametrize(("source", "to", "on_npu"), [
    (TensorProto.FLOAT, TensorProto.FLOAT, True), (TensorProto.UINT8, TensorProto.UINT8, True),
    (TensorProto.FLOAT, TensorProto.INT32, False), (TensorProto.FLOAT, TensorProto.FLOAT16, False),
    (TensorProto.UINT8, TensorProto.FLOAT, False)])
def test_only_a_cast_to_its_own_type_is_removed(catalog, tmp_path, source, to, on_npu):
    """Measured (corpus timm_efficientvit_b0: float32 -> float32 Casts have no layer; corpus
    tv_quantized_mobilenet_v2: uint8 -> uint8 Casts have none either); a converting Cast is CPU."""
    nodes = [helper.make_node("Identity", ["x"], ["r"], name="head"), helper.make_node("Cast", ["r"], ["c"], name="n",
                                                                                      to=to),
             helper.make_node("Identity", ["c"], ["y"], name="tail")]
    x = helper.make_tensor_value_info("x", source, [1, 8, 4, 4])
    out = helper.make_tensor_value_info("y", to, None)
    path = save_model(tmp_path / f"cast{source}_{to}.onnx", nodes, [x], [out])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert npu(catalog, path, target, "fp16") is on_npu
        assert npu(catalog, path, target, "int8") is on_npu


@pytest.mark.parametrize(("mode", "ctm", "size", "cpu"), [
    ("linear", "half_pixel", 16, False), ("linear", "asymmetric", 16, False), ("linear", "pytorch_half_pixel", 16, False),
    ("linear", "align_corners", 16, True), ("linear", "half_pixel", 13, True), ("linear", "half_pixel", 24, False),
    ("nearest", "asymmetric", 13, False), ("nearest", "half_pixel", 20, False)])
def test_linear_resize_needs_a_whole_scale_without_align_corners(catalog, build, mode, ctm, size, cpu):
    """Measured (tools/probe_rknn_patterns.py resize_*): linear align_corners and linear 8 -> 13 are CPU on
    rk3588/rk3576/rv1126b/rk3566 and NPU on rk3562; nearest is NPU at any scale."""
    path = build.op("Resize", [1, 8, 8, 8], inputs=["x", "", "", "sz"],
                    inits=[const("sz", np.array([1, 8, size, size], np.int64))], mode=mode,
                    coordinate_transformation_mode=ctm)
    for target in ("rk3588", "rk3576", "rv1126b", "rk3566", "rk3568"):
        for precision in ("fp16", "int8"):
            assert npu(catalog, path, target, precision) is not cpu
    assert npu(catalog, path, "rk3562", "int8")


@pytest.mark.parametrize(("axes", "step", "cpu"), [([2, 3], 2, True), ([1], 2, True), ([3], 2, True), ([2, 3], 1, False),
                                                ([3], -1, False)])
def test_strided_slice_of_a_map_is_cpu(catalog, build, axes, step, cpu):
    """Measured (tools/probe_rknn_patterns.py slice_step2_*): step 2 on C, H or W of a map is CPU on every
    probed SoC; step 1 (and a reversal, |step| = 1) stays on the NPU."""
    n = len(axes)
    path = build.op("Slice", [1, 8, 8, 8], inputs=["x", "st", "en", "ax", "sp"],
                    inits=[const("st", np.array([0] * n if step > 0 else [-1] * n, np.int64)),
                           const("en", np.array([8] * n if step > 0 else [-9] * n, np.int64)),
                           const("ax", np.array(axes, np.int64)), const("sp", np.array([step] * n, np.int64))])
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert npu(catalog, path, target, "int8") is not cpu


def test_strided_slice_of_tokens_is_an_npu_gather(catalog, tmp_path):
    """corpus timm_levit_128s q/down: tokens [1,196,128] -> [1,14,14,128] -> Slice step 2 on axes 1, 2: NPU."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"], name="proj"),
             helper.make_node("Reshape", ["t", "s"], ["m"], name="grid"),
             helper.make_node("Slice", ["m", "st", "en", "ax", "sp"], ["y"], name="n")]
    inits = [weight("w", [16, 16]), const("s", np.array([1, 14, 14, 16], np.int64)),
             const("st", np.array([0, 0], np.int64)), const("en", np.array([14, 14], np.int64)),
             const("ax", np.array([1, 2], np.int64)), const("sp", np.array([2, 2], np.int64))]
    path = save_model(tmp_path / "tok.onnx", nodes, [value("x", [1, 196, 16])], [value("y", None)], inits)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        assert npu(catalog, path, target, "int8")


@pytest.mark.parametrize(("phases", "channels_last", "concat_axis", "cpu"), [
    (4, False, 1, False), (4, True, 3, False), (3, False, 1, True), (2, True, 3, True), (4, False, 2, True)])
def test_every_phase_of_a_space_to_depth_is_one_npu_convolution(catalog, tmp_path, phases, channels_last,
                                                               concat_axis, cpu):
    """Measured (tools/probe_rknn_placement.py s2d_4_nchw, s2d_4_nhwc: one Conv (128,32,2,2) 'join_2conv' on the
    NPU, rk3588 and rk3566, FP16 and INT8; s2d_2_*: the Slices are CPU; corpus tv_swin_t patch merging): the four
    step-2 phases of a map joined by a Concat over an unsliced axis are lowered to a strided convolution."""
    axes = [1, 2] if channels_last else [2, 3]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="pre")]
    inits = [const("en", np.array([16, 16], np.int64)), const("ax", np.array(axes, np.int64)),
             const("sp", np.array([2, 2], np.int64))]
    for k, start in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))[:phases]):
        inits.append(const(f"st{k}", np.array(start, np.int64)))
        nodes.append(helper.make_node("Slice", ["r", f"st{k}", "en", "ax", "sp"], [f"p{k}"], name=f"n{k}"))
    nodes.append(helper.make_node("Concat", [f"p{k}" for k in range(phases)], ["y"], name="join", axis=concat_axis))
    shape = [1, 16, 16, 8] if channels_last else [1, 8, 16, 16]
    path = save_model(tmp_path / "s2d.onnx", nodes, [value("x", shape)], [value("y", None)], inits)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert npu(catalog, path, target, precision, node="n0") is not cpu


@pytest.mark.parametrize(("phases", "cpu"), [(4, False), (3, True)])
def test_a_space_to_depth_written_one_axis_at_a_time_is_one_npu_convolution(catalog, tmp_path, phases, cpu):
    """torchvision's Swin patch merging exports x[..., 0::2, 1::2, :] as two Slices, one per axis, the first
    shared by two phases (corpus tv_swin_t features.2 Slice_1..Slice_6 -> Concat_3: one Conv 'Concat_3_2conv')."""
    one = {"end": const("en", np.array([2**62], np.int64)), "step": const("sp", np.array([2], np.int64))}
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="pre")]
    inits = [one["end"], one["step"], const("a1", np.array([1], np.int64)), const("a2", np.array([2], np.int64)),
             const("s0", np.array([0], np.int64)), const("s1", np.array([1], np.int64))]
    for row in (0, 1):
        nodes.append(helper.make_node("Slice", ["r", f"s{row}", "en", "a1", "sp"], [f"row{row}"], name=f"row{row}"))
    parts = []
    for row, col in ((0, 0), (1, 0), (0, 1), (1, 1))[:phases]:
        nodes.append(helper.make_node("Slice", [f"row{row}", f"s{col}", "en", "a2", "sp"], [f"p{row}{col}"],
                                      name=f"p{row}{col}"))
        parts.append(f"p{row}{col}")
    nodes.append(helper.make_node("Concat", parts, ["y"], name="join", axis=-1))
    path = save_model(tmp_path / "s2d.onnx", nodes, [value("x", [1, 16, 16, 8])], [value("y", None)], inits)
    for target in ("rk3588", "rk3562"):
        for node in ("row0", "p00"):
            assert npu(catalog, path, target, "fp16", node=node) is not cpu


@pytest.mark.parametrize(("phases", "cpu"), [((0, 1), False), ((0,), True)])
def test_an_interleaved_rotary_embedding_is_one_npu_gather(catalog, tmp_path, phases, cpu):
    """Measured (tools/probe_rknn_placement.py hslice_rope / hslice_one on attention heads [1,3,256,64], rk3588 and rk3576, FP16
    and INT8; corpus timm_eva02_tiny_patch14_224_dynamo: its 48 step-2 Slices per cell NPU on every SoC): both
    phases of the last axis, the odd one negated, stacked on a new axis and flattened back, become one NPU gather
    convolution ('r-gather_2conv'); one phase alone is a CPU strided Slice."""
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="pre")]
    inits = [const("en", np.array([64], np.int64)), const("ax", np.array([3], np.int64)),
             const("sp", np.array([2], np.int64)), const("um", np.array([-1], np.int64)),
             const("s0", np.array([0], np.int64)), const("s1", np.array([1], np.int64))]
    parts = []
    for k in phases:
        nodes.append(helper.make_node("Slice", ["h", f"s{k}", "en", "ax", "sp"], [f"p{k}"], name=f"phase{k}"))
        if k == 1:
            nodes.append(helper.make_node("Neg", ["p1"], ["n1"], name="neg"))
        nodes.append(helper.make_node("Unsqueeze", ["n1" if k == 1 else f"p{k}", "um"], [f"u{k}"], name=f"u{k}"))
        parts.append(f"u{k}")
    if len(parts) == 1:
        inits.append(const("other", np.zeros((1, 3, 256, 32, 1), np.float32)))
        parts.append("other")
    nodes.append(helper.make_node("Concat", parts[::-1], ["y"], name="stack", axis=-1))
    path = save_model(tmp_path / "rope.onnx", nodes, [value("x", [1, 3, 256, 64])], [value("y", None)], inits)
    for target in ("rk3588", "rk3576", "rk3562", "rv1126b"):
        for precision in ("fp16", "int8"):
            assert npu(catalog, path, target, precision, node="phase0") is not cpu


def test_erf_runs_on_npu_only_inside_gelu(catalog, tmp_path):
    nodes = [helper.make_node("Div", ["x", "sq"], ["d"], name="div"),
             helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add"),
             helper.make_node("Mul", ["x", "a"], ["y"], name="mul")]
    inits = [const("sq", np.array(1.4142135, np.float32)), const("one", np.array(1.0, np.float32))]
    gelu = save_model(tmp_path / "gelu.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)], inits)
    lone = save_model(tmp_path / "erf.onnx", [helper.make_node("Erf", ["x"], ["y"], name="erf")],
                      [value("x", [1, 8, 4, 4])], [value("y", None)])
    assert npu(catalog, gelu, "rk3588", "fp16", node="erf")
    assert not npu(catalog, lone, "rk3588", "fp16", node="erf")


@pytest.mark.parametrize(("stride", "fails"), [(8, False), (9, True)])
def test_conv_stride(catalog, build, stride, fails):
    path = build.conv(kernel=(1, 1), pads=(0, 0, 0, 0), strides=(stride, stride), h=36, w=36)
    assert ("RKNN-CONV-STRIDE" in violations(catalog, path, "rk3588")) is fails


@pytest.mark.parametrize(("k", "fails"), [(8192, False), (8193, True)])
def test_matmul_k(catalog, build, k, fails):
    """exMatMul (both operands computed at run time): K in (0, 8192] on rk3576/rv1126b."""
    path = build.op("MatMul", [1, 4, k], inputs=["x", "z"], extra_inputs=[value("z", [1, k, 2])])
    assert ("RKNN-MATMUL-K" in violations(catalog, path, "rk3576", "fp16")) is fails
    assert ("RKNN-MATMUL-K" in violations(catalog, path, "rv1126b", "int8")) is fails
    assert "RKNN-MATMUL-K" not in violations(catalog, path, "rk3588", "fp16")


@pytest.mark.parametrize("op", ["MatMul", "Gemm"])
@pytest.mark.parametrize("k", [8193, 9216])
def test_matmul_k_constant_weights_are_a_tiled_convolution(catalog, build, op, k):
    """Measured (corpus tv_alexnet): a K = 9216 Gemm with constant weights is split into 1x1 Convs, NPU."""
    shape, w = ([1, 4, k], [k, 2]) if op == "MatMul" else ([1, k], [k, 2])
    path = build.op(op, shape, inputs=["x", "w"], inits=[weight("w", w)])
    for target in ("rk3576", "rv1126b"):
        assert "RKNN-MATMUL-K" not in violations(catalog, path, target, "int8")
        assert npu(catalog, path, target, "int8")


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize(("target", "shape", "on_npu"), [
    ("rk3588", [1, 256, 6, 6], False), ("rk3588", [1, 256, 1, 1], True), ("rk3588", [1, 16, 2, 1], False),
    ("rk3576", [1, 256, 6, 6], True), ("rv1126b", [1, 256, 6, 6], True), ("rk3562", [1, 256, 6, 6], True)])
def test_flatten_of_pixels_into_channels(catalog, build, target, shape, on_npu, precision):
    """rk3588 (corpus tv_alexnet /Flatten, FP16 and INT8): H*W > 1 pixels folded into the channel are a CPU
    Reshape; a 1x1 map's Flatten is layout only, and the other SoCs keep both on the NPU."""
    path = build.op("Flatten", shape, axis=1)
    assert npu(catalog, path, target, precision) is on_npu


def _head(tmp_path, dfl_box):
    """A detector head joined on axis 1 into the [1, 4 + 16, 125] output (125 boxes, unaligned as YOLO's 2100):
    classes are two flattened maps joined on the last axis then Sigmoid; boxes the same maps (map form) or a
    DFL-like path (batch form)."""
    nodes, inits = [helper.make_node("MaxPool", ["x"], ["xs"], name="pool", kernel_shape=[2, 2], strides=[2, 2])], []
    for branch, ch in (("cls", 16), ("box", 64 if dfl_box else 4)):
        for i, (m, hw) in enumerate((("x", 100), ("xs", 25))):
            nodes += [helper.make_node("Conv", [m, f"w{branch}{i}"], [f"{branch}{i}"], name=f"{branch}_conv{i}"),
                      helper.make_node("Reshape", [f"{branch}{i}", f"s{branch}{i}"], [f"{branch}{i}r"],
                                       name=f"{branch}_flat{i}")]
            inits += [weight(f"w{branch}{i}", [ch, 8, 1, 1]), const(f"s{branch}{i}", np.array([1, ch, hw], np.int64))]
        nodes.append(helper.make_node("Concat", [f"{branch}0r", f"{branch}1r"], [f"{branch}_all"],
                                      name=f"{branch}_concat", axis=2))
    nodes.append(helper.make_node("Sigmoid", ["cls_all"], ["cls_sig"], name="cls_sigmoid"))
    box = "box_all"
    if dfl_box:  # [1,64,125] -> [1,4,16,125] -> softmax over the 16 bins -> weighted sum -> [1,4,80]
        nodes += [helper.make_node("Reshape", ["box_all", "s4"], ["b4"], name="dfl_reshape"),
                  helper.make_node("Softmax", ["b4"], ["bs"], name="dfl_softmax", axis=2),
                  helper.make_node("ReduceSum", ["bs", "ax"], ["box_dfl"], name="dfl_sum", keepdims=0)]
        inits += [const("s4", np.array([1, 4, 16, 125], np.int64)), const("ax", np.array([2], np.int64))]
        box = "box_dfl"
    nodes.append(helper.make_node("Mul", [box, "stride"], ["box_dec"], name="box_mul"))
    inits.append(const("stride", np.float32(8)))
    if dfl_box:  # YOLOv8's dist2bbox: anchors -/+ the distances, joined back (the box branch stays in batch form)
        nodes += [helper.make_node("Split", ["box_dec", "two"], ["lt", "rb"], name="box_split", axis=1),
                  helper.make_node("Sub", ["anchors", "lt"], ["x1y1"], name="box_sub"),
                  helper.make_node("Add", ["anchors", "rb"], ["x2y2"], name="box_add"),
                  helper.make_node("Concat", ["x1y1", "x2y2"], ["box_out"], name="box_join", axis=1)]
        inits += [const("two", np.array([2, 2], np.int64)), const("anchors", np.zeros((1, 2, 125), np.float32))]
    nodes.append(helper.make_node("Concat", ["box_out" if dfl_box else "box_dec", "cls_sig"], ["y"],
                                  name="head_concat", axis=1))
    return save_model(tmp_path / f"head{dfl_box}.onnx", nodes, [value("x", [1, 8, 10, 10])], [value("y", None)], inits)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize(("dfl_box", "target", "cpu"), [(True, "rk3588", True), (False, "rk3588", False),
                                                         (True, "rk3576", False), (True, "rk3562", False)])
def test_head_relayout_needs_a_batch_form_input_beside_the_map(catalog, tmp_path, dfl_box, target, cpu, precision):
    """RKNN-HEAD-RELAYOUT: the class branch (map form) is relaid out on rk3588 only beside a batch-form box
    branch (corpus yolov8n_320 after its DFL); with both branches in map form the toolkit joins them on the
    NPU (probe out_head_n80, out_head_n80_c80_s2: Sigmoid and Concat Target NPU)."""
    path = _head(tmp_path, dfl_box)
    assert ("RKNN-HEAD-RELAYOUT" in violations(catalog, path, target, precision, node="cls_sigmoid")) is cpu
    assert "RKNN-HEAD-RELAYOUT" not in violations(catalog, path, target, precision, node="box_mul")


def _group_norm(tmp_path, groups, back=(1, 48, 7, 7), norm="InstanceNormalization", shape=(1, 48, 7, 7)):
    """torch's GroupNorm export: Reshape [1, G, -1] -> InstanceNormalization -> Reshape `back` -> Relu."""
    nodes = [helper.make_node("Reshape", ["x", "sg"], ["g"], name="gn_in"),
             helper.make_node(norm, ["g", "sc", "bi"], ["gnorm"], name="gn_norm") if norm == "InstanceNormalization"
             else helper.make_node(norm, ["g"], ["gnorm"], name="gn_norm"),
             helper.make_node("Reshape", ["gnorm", "sb"], ["r"], name="gn_out"),
             helper.make_node("Relu", ["r"], ["y"], name="tail")]
    inits = [const("sg", np.array([1, groups, -1], np.int64)), const("sb", np.array(back, np.int64)),
             const("sc", np.ones(groups, np.float32)), const("bi", np.zeros(groups, np.float32))]
    return save_model(tmp_path / f"gn{groups}{len(back)}{norm}.onnx", nodes, [value("x", list(shape))],
                      [value("y", None)], inits)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1126b"])
@pytest.mark.parametrize("groups", [1, 4])
def test_group_norm_is_one_exnorm_on_every_soc(catalog, tmp_path, target, groups, precision):
    """Measured (corpus nn_se_mish_groupnorm G=4 of 8 channels over 64x64, timm_shvit_s1 G=1): Reshape ->
    InstanceNormalization -> Reshape back is one exNorm, NPU everywhere, rk3566 included, and its Reshape into
    [1, 1, C*H*W] is no pixel-into-channel Flatten on rk3588. The map keeps the corpus model's 8 channels a group
    and a pixel count that is a multiple of 16: rk3588 regroups other GroupNorms on the CPU (RKNN-GN-SPLIT)."""
    path = _group_norm(tmp_path, groups, back=(1, 32, 8, 8), shape=(1, 32, 8, 8))
    assert npu(catalog, path, target, precision, node="gn_norm")
    if target != "rk3566" and target != "rk3568":  # rk3566's Reshape verdicts are its own entries
        assert npu(catalog, path, target, precision, node="gn_in")


@pytest.mark.parametrize("target", ["rk3566", "rk3568"])
def test_instance_norm_outside_a_group_norm_stays_cpu_on_rk356x(catalog, build, tmp_path, target):
    lone = build.op("InstanceNormalization", [1, 8, 4, 4], inputs=["x", "s", "b"],
                    inits=[const("s", np.ones(8, np.float32)), const("b", np.zeros(8, np.float32))])
    assert not npu(catalog, lone, target, "fp16")
    assert npu(catalog, lone, "rk3588", "fp16")
    not_back = _group_norm(tmp_path, 4, back=(1, 48, 49))  # reshaped to another shape: not a GroupNorm
    assert not npu(catalog, not_back, target, "int8", node="gn_norm")


def test_a_pixel_flatten_that_is_no_group_norm_stays_cpu_on_rk3588(catalog, tmp_path):
    path = _group_norm(tmp_path, 1, norm="Relu")  # Reshape [1,48,7,7] -> [1,1,2352] into a plain Relu
    assert not npu(catalog, path, "rk3588", "fp16", node="gn_in")
    assert npu(catalog, path, "rk3576", "fp16", node="gn_in")


# exNorm axes [1] or [1,2,3]: a 4-D LayerNorm from axis 1 on, or over its last axis alone (channels-last,
# measured NPU in 2.5.0: corpus nn_window_attention_pad_roll); H,W (axis 2) is not NPU;
# a token tensor [B,N,C] only over its last axis (it becomes the channel).
@pytest.mark.parametrize("target", ["rk3588", "rk3576", "rk3566", "rv1126b"])
@pytest.mark.parametrize(("shape", "axis", "fails"), [([1, 4, 8, 8], 1, False), ([1, 4, 8, 8], 2, True),
                                                      ([1, 4, 8, 8], 3, False), ([1, 4, 8, 8], -1, False),
                                                      ([1, 30, 30, 64], 3, False), ([1, 30, 30, 64], 2, True),
                                                      ([1, 16, 8], -1, False), ([1, 16, 8], 2, False),
                                                      ([1, 16, 8], 1, True)])
def test_norm_axes(catalog, build, target, shape, axis, fails):
    d = shape[axis:]
    inits = [const("s", np.ones(d, np.float32)), const("b", np.zeros(d, np.float32))]
    path = build.op("LayerNormalization", shape, inputs=["x", "s", "b"], inits=inits, axis=axis)
    assert ("RKNN-NORM" in violations(catalog, path, target, "fp16")) is fails
    # a lone node making a rank-3 graph output also meets RKNN-OUTPUT-RELAYOUT on rk3588, RKNN-MAP-OUTPUT on rk3566;
    # on rk3566 a last-axis LayerNorm of a 4-D tensor not made channels-last is transposed (RKNN-NORM-RELAYOUT)
    if target != "rk3588" and not (target == "rk3566" and (len(shape) == 3 or axis % 4 == 3)):
        assert npu(catalog, path, target, "fp16") is not fails


@pytest.mark.parametrize("op", ["LayerNormalization", "RMSNormalization"])
@pytest.mark.parametrize(("shape", "axis", "ok"), [([1, 4, 8], -1, True), ([1, 4, 8, 8], 2, False)])
def test_norm_op_in_int8_and_its_violations_carry_the_norm_rule(catalog, build, op, shape, axis, ok):
    # seed002 says float16 only; the toolkit 2.5.0 builds exNorm in INT8 on the NPU (measurement wins)
    d = shape[axis:]
    inits = [const("s", np.ones(d, np.float32)), const("b", np.zeros(d, np.float32))]
    inputs = ["x", "s", "b"] if op == "LayerNormalization" else ["x", "s"]
    path = build.op(op, shape, inputs=inputs, inits=inits[:len(inputs) - 1], axis=axis,
                    opset=17 if op == "LayerNormalization" else 23)
    for precision in ("fp16", "int8"):
        assert npu(catalog, path, "rk3576", precision) is ok
        assert violations(catalog, path, "rk3576", precision) == (set() if ok else {"RKNN-NORM"})


def test_norm_rule_enforces_a_precision_list_when_given(catalog, build):
    from dataclasses import replace

    from optimizer.catalog._checks import LayerView, norm_limits

    rule = replace(catalog.rule("RKNN-NORM"), params={"precisions": ("fp16",)})
    inits = [const("s", np.ones(8, np.float32)), const("b", np.zeros(8, np.float32))]
    graph = load_model(build.op("LayerNormalization", [1, 4, 8], inputs=["x", "s", "b"], inits=inits, axis=-1))
    target = catalog.target("rk3576")
    family = catalog.family_of(target)
    view = lambda p: LayerView(graph, graph.node("n"), family, target, p, "norm")  # noqa: E731
    assert norm_limits(rule, view("fp16")) is None
    assert "float16" not in (norm_limits(rule, view("int8")) or "") and "fp16 only" in norm_limits(rule, view("int8"))


def test_rv110x_offer_int8_only(catalog):
    assert catalog.target("rv1106").precisions["npu"] == ("int8",)
    assert catalog.target("rv1103").precisions["npu"] == ("int8",)


def test_static_shapes(catalog, build):
    assert "RKNN-STATIC" in violations(catalog, build.op("Relu", ["N", 8, 4, 4]), "rk3588")


@pytest.mark.parametrize(("target", "modes"), [("rk3576", True), ("rv1126b", True), ("rk3588", False)])
def test_sparsity_modes_on_sparse_socs(catalog, build, target, modes):
    verdict = check_graph(load_model(build.conv()), catalog, target).verdict("n")
    assert ("sparsity_modes" in verdict.extra) is modes
    if modes:
        assert verdict.extra["sparsity_modes"] == ["dense", "4:2_in", "4:2_out", "16:4_in_out", "16:4_out_in"]


def test_sparsity_needs_group_one(catalog, build):
    verdict = check_graph(load_model(build.conv(group=8, c_in=8, c_out=8)), catalog, "rk3576").verdict("n")
    assert "sparsity_modes" not in verdict.extra


@pytest.mark.parametrize(("op", "multicore"), [("Conv", True), ("Sigmoid", False)])
def test_multicore_flags(catalog, build, op, multicore):
    path = build.conv() if op == "Conv" else build.op(op, [1, 8, 4, 4])
    assert check_graph(load_model(path), catalog, "rk3588").verdict("n").extra["multicore"] is multicore
    assert check_graph(load_model(path), catalog, "rk3566").verdict("n").extra["multicore"] is False


# Row pitch of an NHWC uint8 input with C=3 is 3W bytes: 16-byte alignment on rk3588, 8 on rk3566.
@pytest.mark.parametrize(("target", "width", "zero_copy"), [("rk3588", 16, True), ("rk3588", 24, False),
                                                           ("rk3588", 32, True), ("rk3566", 8, True),
                                                           ("rk3566", 12, False), ("rk3566", 24, True)])
def test_zero_copy_alignment(catalog, build, target, width, zero_copy):
    path = build.conv(c_in=3, c_out=8, w=width)
    io = check_graph(load_model(path), catalog, target).io
    assert io["inputs"][0]["native_layout"] == "NHWC"
    assert io["inputs"][0]["zero_copy"] is zero_copy


def test_zero_copy_output_types(catalog, build):
    path = build.conv()
    assert check_graph(load_model(path), catalog, "rv1106").io["outputs"][0]["int8_model_types"] == ["int8", "fp16"]
    assert "fp32" in check_graph(load_model(path), catalog, "rk3588").io["outputs"][0]["int8_model_types"]


# probe stride_k*_s*_p* (every SoC, FP16 and INT8): even strides are halved by stride-2 selects until they fit
# [1, 8]; an odd stride above 8, or one halving leaves odd above 8, overflows the field
@pytest.mark.parametrize(("kernel", "stride", "pads", "fails"), [((16, 16), 16, (0, 0, 0, 0), False),
                                                                 ((16, 16), 10, (0, 0, 0, 0), False),
                                                                 ((20, 20), 16, (2, 2, 2, 2), False),
                                                                 ((3, 3), 16, (1, 1, 1, 1), False),
                                                                 ((24, 24), 20, (2, 2, 2, 2), False),
                                                                 ((32, 32), 32, (0, 0, 0, 0), False),
                                                                 ((9, 9), 9, (0, 0, 0, 0), True),
                                                                 ((15, 15), 15, (0, 0, 0, 0), True),
                                                                 ((3, 3), 18, (1, 1, 1, 1), True),
                                                                 ((1, 1), 9, (0, 0, 0, 0), True)])
@pytest.mark.parametrize("target", ["rk3566", "rk3588", "rv1126b"])
def test_even_strides_are_halved_to_fit_the_stride_field(catalog, build, kernel, stride, pads, fails, target):
    path = build.conv(c_in=3, c_out=8, kernel=kernel, pads=pads, strides=(stride, stride), h=64, w=64)
    assert ("RKNN-CONV-STRIDE" in violations(catalog, path, target)) is fails


@pytest.mark.parametrize(("edit", "message"), [
    ('condition = "layout_chain"\nsocs = ["rk3566", "rk3568"]', None),
    ('condition = "no_such_check"\nsocs = ["rk3566", "rk3568"]', "names condition 'no_such_check'"),
    ('condition = "layout_chain"\nsocs = ["rk9999"]', "names unknown SoCs"),
])
def test_op_conditions_are_validated_at_load(edit, message):
    from pathlib import Path

    from optimizer.catalog._load import load_family
    from optimizer.errors import BadInputError

    text = (Path(__file__).parents[2] / "constraints" / "rockchip_rknn.toml").read_text()
    old = 'condition = "layout_chain"\nsocs = ["rk3566", "rk3568"]'
    assert old in text
    text = text.replace(old, edit, 1)
    if message is None:
        family, _ = load_family(text, "rockchip_rknn.toml")
        assert family.op_support["Transpose"].conditions[0].socs == ("rk3566", "rk3568")
    else:
        with pytest.raises(BadInputError, match=message):
            load_family(text, "rockchip_rknn.toml")
