"""Every DLA rule just inside and just outside its limit, on each target and precision it depends on."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import const, value, violations, weight

ORIN, XAVIER = "orin-agx", "xavier-agx"


def check(catalog, path, rule, target=ORIN, precision="fp16"):
    return rule in violations(catalog, path, target, precision)


@pytest.mark.parametrize(("kernel", "fails"), [((32, 3), False), ((33, 3), True), ((1, 1), False), ((3, 33), True)])
def test_conv_kernel(catalog, build, kernel, fails):
    path = build.conv(kernel=kernel, pads=(0, 0, 0, 0), h=40, w=40)
    assert check(catalog, path, "DLA-CONV-KERNEL") is fails


@pytest.mark.parametrize(("pad", "fails"), [(31, False), (32, True)])
def test_conv_pad(catalog, build, pad, fails):
    path = build.conv(kernel=(32, 32), pads=(pad, 0, 0, 0), h=64, w=64, c_in=1)
    assert check(catalog, path, "DLA-CONV-PAD") is fails


@pytest.mark.parametrize(("pad", "fails"), [(2, False), (3, True)])
def test_conv_pad_less_than_kernel(catalog, build, pad, fails):
    path = build.conv(kernel=(3, 3), pads=(pad, pad, pad, pad))
    assert check(catalog, path, "DLA-CONV-PAD-LT-KERNEL") is fails


@pytest.mark.parametrize(("stride", "fails"), [(8, False), (9, True)])
def test_conv_stride(catalog, build, stride, fails):
    path = build.conv(kernel=(3, 3), pads=(0, 0, 0, 0), strides=(stride, 1), h=32)
    assert check(catalog, path, "DLA-CONV-STRIDE") is fails


@pytest.mark.parametrize(("c_out", "fails"), [(8192, False), (8193, True)])
def test_conv_outmaps(catalog, build, c_out, fails):
    path = build.conv(c_in=1, c_out=c_out, kernel=(1, 1), pads=(0, 0, 0, 0), h=2, w=2)
    assert check(catalog, path, "DLA-CONV-OUTMAPS", precision="int8") is fails


@pytest.mark.parametrize(("group", "fails"), [(8192, False), (8193, True)])
def test_conv_groups(catalog, build, group, fails):
    path = build.conv(c_in=group, c_out=group, group=group, kernel=(1, 1), pads=(0, 0, 0, 0), h=1, w=1)
    assert check(catalog, path, "DLA-CONV-GROUPS", precision="int8") is fails


@pytest.mark.parametrize(("dilation", "fails"), [(32, False), (33, True)])
def test_conv_dilation(catalog, build, dilation, fails):
    path = build.conv(kernel=(3, 3), pads=(1, 1, 1, 1), dilations=(dilation, 1), h=80, c_in=4, w=8)
    assert check(catalog, path, "DLA-CONV-DILATION") is fails


def test_conv_3d_is_not_dla(catalog, build):
    from onnx import helper
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="n", kernel_shape=[3, 3, 3], pads=[1] * 6)
    path = build.model(node, [1, 4, 8, 8, 8], [weight("w", [4, 4, 3, 3, 3])])
    assert check(catalog, path, "DLA-CONV-2D")


# CBUF: C_in 256, 3x3 kernel. INT8: weights 1 bank, data banks ceil(6W/256); FP16: 1 + ceil(12W/256).
@pytest.mark.parametrize(("width", "int8_fails", "fp16_fails"), [
    (320, False, False), (321, False, True), (640, False, True), (641, True, True)])
def test_conv_cbuf_depends_on_precision(catalog, build, width, int8_fails, fp16_fails):
    path = build.conv(c_in=256, c_out=16, h=3, w=width, kernel=(3, 3), pads=(0, 0, 0, 0))
    assert check(catalog, path, "DLA-CONV-CBUF", precision="int8") is int8_fails
    assert check(catalog, path, "DLA-CONV-CBUF", precision="fp16") is fp16_fails


def test_conv_cbuf_message_names_banks(catalog, build):
    from optimizer.check import check_graph
    from optimizer.ir import load_model
    path = build.conv(c_in=256, c_out=16, h=3, w=321, kernel=(3, 3), pads=(0, 0, 0, 0))
    verdict = check_graph(load_model(path), catalog, ORIN).verdict("n")
    messages = [v.message for v in verdict.violations if v.rule == "DLA-CONV-CBUF"]
    assert messages == ["needs 17 CBUF banks (wt 1 + data 16) in fp16, limit 16"]
    assert verdict.supported["dla"] == {"int8": True, "fp16": False}
    assert verdict.supported["gpu"] == {"int8": True, "fp16": True, "fp32": True}


# 1x1 kernel, W 1: FP16 needs ceil(2C/32768) weight + ceil(C/16384) data banks; INT8 half of each.
@pytest.mark.parametrize(("c_in", "fp16_fails"), [(131072, False), (131072 + 64, True)])
def test_conv_cbuf_weight_banks(catalog, build, c_in, fp16_fails):
    path = build.conv(c_in=c_in, c_out=1, h=1, w=1, kernel=(1, 1), pads=(0, 0, 0, 0))
    assert check(catalog, path, "DLA-CONV-CBUF", precision="fp16") is fp16_fails
    assert not check(catalog, path, "DLA-CONV-CBUF", precision="int8")


@pytest.mark.parametrize(("kernel", "fails"), [((32, 32), False), ((33, 33), True), ((1, 64), False),
                                               ((128, 1), False), ((1, 65), True), ((2, 64), True)])
def test_deconv_kernel(catalog, build, kernel, fails):
    path = build.deconv(kernel=kernel, strides=(1, 1), h=4, w=4)
    assert check(catalog, path, "DLA-DECONV-KERNEL") is fails


@pytest.mark.parametrize(("kernel", "stride", "fails"), [((23, 23), (22, 22), False), ((23, 23), (23, 23), True),
                                                         ((32, 32), (32, 32), True), ((24, 23), (23, 23), False)])
def test_deconv_square_stride(catalog, build, kernel, stride, fails):
    path = build.deconv(kernel=kernel, strides=stride, h=2, w=2)
    assert check(catalog, path, "DLA-DECONV-SQUARE-STRIDE") is fails


@pytest.mark.parametrize(("pads", "group", "dilation", "rule", "fails"), [
    ((0, 0, 0, 0), 1, 1, "DLA-DECONV-PAD", False), ((1, 0, 0, 0), 1, 1, "DLA-DECONV-PAD", True),
    ((0, 0, 0, 0), 1, 1, "DLA-DECONV-GROUPS", False), ((0, 0, 0, 0), 2, 1, "DLA-DECONV-GROUPS", True),
    ((0, 0, 0, 0), 1, 1, "DLA-DECONV-DILATION", False), ((0, 0, 0, 0), 1, 2, "DLA-DECONV-DILATION", True)])
def test_deconv_pad_groups_dilation(catalog, build, pads, group, dilation, rule, fails):
    path = build.deconv(kernel=(3, 3), strides=(1, 1), pads=pads, group=group, dilations=(dilation, dilation))
    assert check(catalog, path, rule) is fails


@pytest.mark.parametrize(("output_padding", "fails"), [((0, 0), False), ((0, 1), True), ((1, 1), True)])
def test_deconv_output_padding_is_padding(catalog, build, output_padding, fails):
    """ONNX allows output_padding < stride; TensorRT builds it as post-padding, which DLA forbids."""
    from onnx import helper
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="n", kernel_shape=[2, 2], strides=[2, 2],
                            output_padding=list(output_padding))
    path = build.model(node, [1, 8, 8, 8], [weight("w", [8, 8, 2, 2])])
    assert check(catalog, path, "DLA-DECONV-PAD") is fails
    assert check(catalog, path, "DLA-DECONV-PAD", precision="int8") is fails


@pytest.mark.parametrize(("c_out", "fails"), [(8192, False), (8193, True)])
def test_deconv_channels(catalog, build, c_out, fails):
    path = build.deconv(c_in=1, c_out=c_out, kernel=(1, 1), strides=(1, 1), h=1, w=1)
    assert check(catalog, path, "DLA-DECONV-CHANNELS", precision="int8") is fails


@pytest.mark.parametrize(("window", "fails"), [(8, False), (9, True)])
def test_pool_window(catalog, build, window, fails):
    path = build.op("MaxPool", [1, 8, 16, 16], kernel_shape=[window, window], strides=[1, 1])
    assert check(catalog, path, "DLA-POOL-WINDOW") is fails


@pytest.mark.parametrize(("hw", "fails"), [(8, False), (9, True)])
def test_global_pool_is_a_window_of_the_whole_map(catalog, build, hw, fails):
    path = build.op("GlobalAveragePool", [1, 8, hw, hw])
    assert check(catalog, path, "DLA-POOL-WINDOW") is fails


@pytest.mark.parametrize(("pad", "fails"), [(7, False), (8, True)])
def test_pool_pad(catalog, build, pad, fails):
    path = build.op("MaxPool", [1, 8, 32, 32], kernel_shape=[8, 8], pads=[pad, 0, 0, 0])
    assert check(catalog, path, "DLA-POOL-PAD") is fails


@pytest.mark.parametrize(("stride", "fails"), [(16, False), (17, True)])
def test_pool_stride(catalog, build, stride, fails):
    path = build.op("MaxPool", [1, 8, 64, 64], kernel_shape=[2, 2], strides=[stride, stride])
    assert check(catalog, path, "DLA-POOL-STRIDE") is fails


def test_pool_only_max_and_average(catalog, build):
    assert check(catalog, build.op("LpPool", [1, 8, 8, 8], kernel_shape=[2, 2]), "DLA-POOL-2D")
    assert not check(catalog, build.op("AveragePool", [1, 8, 8, 8], kernel_shape=[2, 2]), "DLA-POOL-2D")


@pytest.mark.parametrize(("op", "fails"), [("Relu", False), ("Sigmoid", False), ("Tanh", False),
                                           ("LeakyRelu", False), ("Elu", True), ("Softplus", True),
                                           ("HardSigmoid", True), ("HardSwish", True)])
def test_activation_kinds(catalog, build, op, fails):
    assert check(catalog, build.op(op, [1, 8, 4, 4]), "DLA-ACT-KIND") is fails


def test_activation_needs_two_spatial_dims(catalog, build):
    assert check(catalog, build.op("Relu", [1, 197, 768]), "DLA-ACT-2D")
    assert not check(catalog, build.op("Relu", [1, 8, 4, 4]), "DLA-ACT-2D")


@pytest.mark.parametrize(("alpha", "fails"), [(0.0, False), (0.1, False), (-0.1, True)])
def test_relu_negative_slope(catalog, build, alpha, fails):
    assert check(catalog, build.op("LeakyRelu", [1, 8, 4, 4], alpha=alpha), "DLA-ACT-RELU-SLOPE") is fails


@pytest.mark.parametrize(("low", "high", "fails"), [(0, 1, False), (0, 127, False), (0, 6, False),
                                                    (0, 128, True), (0, 0.5, True), (-1, 6, True)])
def test_clip_as_clipped_relu(catalog, build, low, high, fails):
    inits = [const("lo", np.array(low, np.float32)), const("hi", np.array(high, np.float32))]
    path = build.op("Clip", [1, 8, 4, 4], inputs=["x", "lo", "hi"], inits=inits)
    assert check(catalog, path, "DLA-ACT-CLIP") is fails


def test_prelu_slope_must_be_constant(catalog, build):
    constant = build.op("PRelu", [1, 8, 4, 4], inputs=["x", "s"], inits=[const("s", np.ones((8, 1, 1), np.float32))])
    runtime = build.op("PRelu", [1, 8, 4, 4], inputs=["x", "s"], extra_inputs=[value("s", [8, 1, 1])])
    assert not check(catalog, constant, "DLA-PRELU-CONST")
    assert check(catalog, runtime, "DLA-PRELU-CONST")


@pytest.mark.parametrize(("op", "fails"), [("Add", False), ("Sub", False), ("Mul", False), ("Max", False),
                                           ("Min", False), ("Div", True), ("Pow", True)])
def test_eltwise_ops(catalog, build, op, fails):
    path = build.op(op, [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=[value("z", [1, 8, 4, 4])])
    assert check(catalog, path, "DLA-ELTWISE-OPS") is fails


def test_eltwise_needs_two_spatial_dims(catalog, build):
    path = build.op("Add", [1, 16, 8], inputs=["x", "z"], extra_inputs=[value("z", [1, 16, 8])])
    assert check(catalog, path, "DLA-ELTWISE-2D")


def test_batchnorm_is_a_scale_layer(catalog, build):
    inits = [const(n, np.ones(8, np.float32)) for n in ("s", "b", "m", "v")]
    ok = build.op("BatchNormalization", [1, 8, 4, 4], inputs=["x", "s", "b", "m", "v"], inits=inits)
    bad = build.op("BatchNormalization", [1, 8, 4], inputs=["x", "s", "b", "m", "v"], inits=inits)
    assert not violations(catalog, ok, ORIN)
    assert check(catalog, bad, "DLA-SCALE-2D")


@pytest.mark.parametrize(("size", "fails"), [(3, False), (5, False), (9, False), (4, True), (11, True)])
def test_lrn_window(catalog, build, size, fails):
    assert check(catalog, build.op("LRN", [1, 8, 4, 4], size=size), "DLA-LRN-WINDOW") is fails


def test_concat_rules(catalog, build):
    extra = [value("z", [1, 8, 4, 4])]
    assert not violations(catalog, build.op("Concat", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=extra, axis=1), ORIN)
    assert check(catalog, build.op("Concat", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=extra, axis=2),
                 "DLA-CONCAT-AXIS")
    assert check(catalog, build.op("Concat", [1, 8, 4, 4], inputs=["x"], axis=1), "DLA-CONCAT-INPUTS")
    other = [value("z", [1, 8, "h", "w"])]  # equal static dims are guaranteed by ONNX; unknown ones are not
    assert check(catalog, build.op("Concat", [1, 8, 4, 4], inputs=["x", "z"], extra_inputs=other, axis=1),
                 "DLA-CONCAT-SPATIAL")


def _resize(build, scales, mode):
    return build.op("Resize", [1, 8, 4, 4], inputs=["x", "", "s"], inits=[const("s", np.array(scales, np.float32))],
                    mode=mode)


@pytest.mark.parametrize(("scales", "mode", "rule", "fails"), [
    ([1, 1, 2, 2], "nearest", "DLA-RESIZE-SCALES", False),
    ([1, 2, 2, 2], "nearest", "DLA-RESIZE-SCALES", True),
    ([1, 1, 32, 32], "nearest", "DLA-RESIZE-NEAREST", False),
    ([1, 1, 33, 1], "nearest", "DLA-RESIZE-NEAREST", True),
    ([1, 1, 1.5, 1.5], "nearest", "DLA-RESIZE-NEAREST", True),
    ([1, 1, 4, 4], "linear", "DLA-RESIZE-BILINEAR", False),
    ([1, 1, 5, 5], "linear", "DLA-RESIZE-BILINEAR", True),
    ([1, 1, 2, 2], "cubic", "DLA-RESIZE-MODE", True),
])
def test_resize(catalog, build, scales, mode, rule, fails):
    assert check(catalog, _resize(build, scales, mode), rule) is fails


# Resize-18 `axes`: scales (or sizes) name only those axes, in that order; the unnamed ones stay 1.
@pytest.mark.parametrize(("axes", "scales", "mode", "rule", "fails"), [
    ([2, 3], [2, 2], "nearest", "DLA-RESIZE-SCALES", False),
    ([1, 2, 3], [1, 2, 2], "nearest", "DLA-RESIZE-SCALES", False),
    ([1, 2, 3], [2, 2, 2], "nearest", "DLA-RESIZE-SCALES", True),
    ([2, 3], [32, 32], "nearest", "DLA-RESIZE-NEAREST", False),
    ([2, 3], [33, 1], "nearest", "DLA-RESIZE-NEAREST", True),
    ([3, 2], [4, 1], "linear", "DLA-RESIZE-BILINEAR", False),
    ([3, 2], [5, 1], "linear", "DLA-RESIZE-BILINEAR", True),
    ([-1, -2], [1, 5], "linear", "DLA-RESIZE-BILINEAR", True),
    ([-1, -2], [4, 4], "linear", "DLA-RESIZE-BILINEAR", False),
])
def test_resize_axes(catalog, build, axes, scales, mode, rule, fails):
    path = build.op("Resize", [1, 8, 4, 4], inputs=["x", "", "s"], inits=[const("s", np.array(scales, np.float32))],
                    mode=mode, axes=axes, opset=18)
    assert check(catalog, path, rule) is fails


@pytest.mark.parametrize(("sizes", "fails"), [([128, 4], False), ([132, 4], True), ([4, 128], False)])
def test_resize_axes_with_sizes(catalog, build, sizes, fails):
    path = build.op("Resize", [1, 8, 4, 4], inputs=["x", "", "", "z"], inits=[const("z", np.array(sizes, np.int64))],
                    mode="nearest", axes=[2, 3], opset=18)
    assert not check(catalog, path, "DLA-RESIZE-SCALES")
    assert check(catalog, path, "DLA-RESIZE-NEAREST") is fails


def test_unary_abs_only(catalog, build):
    assert not check(catalog, build.op("Abs", [1, 8, 4, 4]), "DLA-UNARY-ABS")
    assert check(catalog, build.op("Exp", [1, 8, 4, 4]), "DLA-UNARY-ABS")


def test_softmax_orin_only(catalog, build):
    path = build.op("Softmax", [1, 10, 1, 1], axis=1)
    assert not violations(catalog, path, ORIN)
    assert check(catalog, path, "DLA-SOFTMAX-ORIN", target=XAVIER)
    assert check(catalog, path, "DLA-SOFTMAX-ORIN", target="xavier-nx")


@pytest.mark.parametrize(("shape", "axis", "fails"), [([1, 10, 1, 1], 1, False), ([1, 10, 2, 1], 1, True),
                                                      ([2, 10, 1, 1], 1, True), ([1, 1, 1, 10], 3, False)])
def test_softmax_shape(catalog, build, shape, axis, fails):
    assert check(catalog, build.op("Softmax", shape, axis=axis), "DLA-SOFTMAX-SHAPE") is fails


@pytest.mark.parametrize(("batch", "fails"), [(4096, False), (4097, True)])
def test_batch(catalog, build, batch, fails):
    assert check(catalog, build.op("Relu", [batch, 1, 1, 1]), "DLA-BATCH") is fails


def test_batch_is_product_of_dims_except_chw(catalog, build):
    assert check(catalog, build.op("Relu", [64, 65, 1, 1, 1]), "DLA-BATCH")


def test_static_shapes(catalog, build):
    path = build.op("Relu", ["N", 8, 4, 4])
    assert check(catalog, path, "DLA-STATIC")
    assert "DLA-STATIC" not in violations(catalog, path, ORIN, input_shapes={"x": (1, 8, 4, 4)})


def test_ops_outside_the_vendor_list_are_not_dla(catalog, build):
    path = build.op("Gather", [1, 8, 4, 4], inputs=["x", "i"], inits=[const("i", np.array([0, 1], np.int64))], axis=1)
    assert check(catalog, path, "DLA-OP-KIND")


def test_fully_connected_needs_constant_weights(catalog, build):
    fc = build.op("Gemm", [1, 64], inputs=["x", "w"], inits=[weight("w", [10, 64])], transB=1)
    mm = build.op("MatMul", [1, 64], inputs=["x", "w"], extra_inputs=[value("w", [64, 10])])
    batched = build.op("MatMul", [1, 16, 64], inputs=["x", "w"], inits=[weight("w", [64, 10])])
    assert not violations(catalog, fc, ORIN)
    assert check(catalog, mm, "DLA-FC-WEIGHTS")
    assert check(catalog, batched, "DLA-FC-WEIGHTS")


@pytest.mark.parametrize(("target_shape", "fails"), [([1, 512], False), ([1, 8, 64], True)])
def test_layout_ops_are_transparent_only_for_unit_dims(catalog, build, target_shape, fails):
    path = build.op("Reshape", [1, 512, 1, 1], inputs=["x", "s"], inits=[const("s", np.array(target_shape, np.int64))])
    assert check(catalog, path, "DLA-LAYOUT-SHUFFLE") is fails


def test_transpose_that_moves_data_is_a_shuffle(catalog, build):
    assert check(catalog, build.op("Transpose", [1, 8, 4, 4], perm=[0, 2, 3, 1]), "DLA-LAYOUT-SHUFFLE")
    assert not check(catalog, build.op("Transpose", [1, 8, 1, 4], perm=[0, 2, 1, 3]), "DLA-LAYOUT-SHUFFLE")
