"""Probe rknn-toolkit2 2.5.0 at the boundaries of the RKNN placement entries (rk3588, rk3576, rk3562, rv1126b).

Each case is a tiny graph with weights (Conv -> pattern -> Conv or a graph output) whose input shape is the
case's own, so a limit can be walked in sizes. Run with the toolkit's interpreter, under nice:
    nice -n 10 RKNN_VENV/bin/python tools/probe_rknn_placement.py [--cases flat_256_6_6,...] [--socs rk3588]
Each case converts in a fresh process (a toolkit crash is recorded as such) and prints one JSON line: per
SoC/precision the layers (op, data type, target, input -> output shapes, name) other than the probe's
own first and last Conv.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rknn_build import captured_build
from rknn_log import error_summary, map_to_onnx, parse_layer_table

SOCS = "rk3588,rk3576,rk3562,rv1126b"
rng = np.random.default_rng(0)


def const(name: str, a: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(a), name)


def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return const(name, rng.normal(0, 0.1, shape).astype(np.float32))


def node(op: str, i: list[str], o: list[str], name: str, **kw: object) -> onnx.NodeProto:
    return helper.make_node(op, i, o, name=name, **kw)


def graph(name: str, shape: tuple[int, ...], nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
          tail: int | None = 8, opset: int = 17) -> onnx.ModelProto:
    """in[shape] -> Conv 1x1 (same channels) -> x; nodes read x and write y; y -> Conv 1x1 (tail channels)
    -> out, or y is the output when tail is None (then y must be 4-D for the Conv, any rank otherwise)."""
    channels = shape[1]
    head = [node("Conv", ["in", "w0"], ["x"], "pre_conv")]
    body = list(nodes)
    inits = [weight("w0", (channels, channels, 1, 1)), *inits]
    out = "y"
    if tail is not None:
        inferred = onnx.shape_inference.infer_shapes(helper.make_model(helper.make_graph(
            head + body, "s", [helper.make_tensor_value_info("in", TensorProto.FLOAT, list(shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
            opset_imports=[helper.make_opsetid("", opset)]))
        y = next(v for v in inferred.graph.output if v.name == "y")
        y_channels = y.type.tensor_type.shape.dim[1].dim_value
        body.append(node("Conv", ["y", "w1"], ["out"], "post_conv"))
        inits.append(weight("w1", (tail, y_channels, 1, 1)))
        out = "out"
    g = helper.make_graph(head + body, name, [helper.make_tensor_value_info("in", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def flatten_gemm(c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv -> Flatten [1,C,H,W] -> [1,CHW] -> Gemm (10 outputs): a classifier on an unpooled map."""
    return graph("fg", (1, c, h, w), [
        node("Flatten", ["x"], ["f"], "flatten", axis=1),
        node("Gemm", ["f", "gw", "gb"], ["y"], "fc", transB=1),
    ], [weight("gw", (10, c * h * w)), weight("gb", (10,))], tail=None)


def flatten_out(c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv -> Flatten [1,C,H,W] -> [1,CHW] as the graph output."""
    return graph("fo", (1, c, h, w), [node("Flatten", ["x"], ["y"], "flatten", axis=1)], [], tail=None)


def radix_sum(r: int, c: int, h: int, w: int) -> onnx.ModelProto:
    """ResNeSt/SK split attention: Conv [1,R*C,H,W] -> Reshape [1,R,C,H,W] -> ReduceSum(axis 1) -> Conv."""
    return graph("rs", (1, r * c, h, w), [
        node("Reshape", ["x", "s5"], ["r5"], "split_reshape"),
        node("ReduceSum", ["r5", "ax"], ["y"], "radix_sum", keepdims=0),
    ], [const("s5", np.array([1, r, c, h, w], np.int64)), const("ax", np.array([1], np.int64))])


def chan_to_batch(c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv [1,C,H,W] -> Reshape [C,1,H,W] ... -> Conv: each channel becomes an image of the batch; the map is
    joined back by a Reshape so the tail Conv sees [1,C,H,W] (a per-image 1x1 conv between them)."""
    return graph("cb", (1, c, h, w), [
        node("Transpose", ["x"], ["t"], "to_batch", perm=[1, 0, 2, 3]),
        node("Conv", ["t", "wb"], ["tb"], "per_image_conv"),
        node("Transpose", ["tb"], ["y"], "from_batch", perm=[1, 0, 2, 3]),
    ], [weight("wb", (1, 1, 1, 1))])


def gemm_unflatten(c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv -> GlobalAveragePool -> Flatten -> Gemm (C*H*W outputs) -> Reshape [1,C,H,W] -> Conv: a vector
    unfolded into a map (a decoder's first layer)."""
    return graph("gu", (1, 16, 4, 4), [
        node("GlobalAveragePool", ["x"], ["p"], "gap"),
        node("Flatten", ["p"], ["f"], "flatten", axis=1),
        node("Gemm", ["f", "gw", "gb"], ["g"], "fc", transB=1),
        node("Reshape", ["g", "s4"], ["y"], "unflatten"),
    ], [weight("gw", (c * h * w, 16)), weight("gb", (c * h * w,)), const("s4", np.array([1, c, h, w], np.int64))])


def reduce_max(shape: tuple[int, ...], axis: int) -> onnx.ModelProto:
    """Conv [1,C,H,W] -> Reshape to `shape` -> ReduceMax(axis, keepdims) -> Reshape back -> Conv."""
    out = list(shape)
    out[axis] = 1
    total = int(np.prod(out))
    return graph("rm", (1, shape[1] if len(shape) == 4 else int(np.prod(shape[1:-2])), shape[-2], shape[-1]), [
        node("Reshape", ["x", "s"], ["r"], "to_shape"),
        node("ReduceMax", ["r"], ["m"], "reduce_max", axes=[axis], keepdims=1),
        node("Reshape", ["m", "sb"], ["y"], "back"),
    ], [const("s", np.array(shape, np.int64)),
        const("sb", np.array([1, total // (shape[-2] * shape[-1]), shape[-2], shape[-1]], np.int64))], opset=17)


def window_partition(c: int, h: int, w: int, block: int, block_w: int | None = None) -> onnx.ModelProto:
    """NesT's blockify and its inverse: Conv map [1,C,H,W] -> Transpose (0,2,3,1) -> Reshape [1,gh,b,gw,b,C] ->
    Transpose (0,1,3,2,4,5) -> Reshape [1,gh*gw,b*b,C] -> Relu -> the same steps back -> Conv. With `block_w`, the
    windows are block x block_w rectangles (CRAFT's, DAT's and RGT's rectangle-window attention)."""
    bw = block if block_w is None else block_w
    gh, gw = h // block, w // bw
    return graph("wp", (1, c, h, w), [
        node("Transpose", ["x"], ["nhwc"], "to_nhwc", perm=[0, 2, 3, 1]),
        node("Reshape", ["nhwc", "s6"], ["r6"], "blockify_reshape"),
        node("Transpose", ["r6"], ["t6"], "blockify_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["t6", "s4"], ["blocks"], "blocks_reshape"),
        node("Relu", ["blocks"], ["act"], "per_block"),
        node("Reshape", ["act", "s6b"], ["b6"], "deblock_reshape"),
        node("Transpose", ["b6"], ["u6"], "deblock_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["u6", "snhwc"], ["back"], "deblock_merge"),
        node("Transpose", ["back"], ["y"], "to_nchw", perm=[0, 3, 1, 2]),
    ], [const("s6", np.array([1, gh, block, gw, bw, c], np.int64)),
        const("s4", np.array([1, gh * gw, block * bw, c], np.int64)),
        const("s6b", np.array([1, gh, gw, block, bw, c], np.int64)),
        const("snhwc", np.array([1, h, w, c], np.int64))])


CASES: dict[str, Callable[[], onnx.ModelProto]] = {}
CASE_SOCS: dict[str, str] = {}
for _c, _h, _w in ((256, 6, 6), (10, 12, 12), (64, 12, 12), (1024, 3, 3), (16, 24, 24), (512, 4, 4),
                   (520, 4, 4), (256, 4, 4), (128, 6, 6), (32, 6, 6), (256, 2, 2), (64, 2, 2), (8, 32, 32),
                   (256, 3, 4), (256, 4, 3), (256, 8, 2), (256, 2, 8), (256, 7, 7), (64, 10, 10), (64, 5, 20),
                   (64, 20, 5), (64, 3, 8), (16, 6, 6), (36, 6, 6), (40, 6, 6), (128, 3, 3), (144, 3, 3),
                   (128, 32, 32), (256, 16, 16), (64, 7, 8), (64, 7, 7), (24, 8, 8), (64, 12, 2)):
    CASES[f"flatgemm_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: flatten_gemm(c, h, w))
    CASES[f"flatout_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: flatten_out(c, h, w))
for _c, _h, _w in ((16, 6, 6), (16, 7, 7), (16, 8, 8), (16, 12, 12), (16, 8, 6), (16, 6, 8)):
    CASES[f"unflat_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: gemm_unflatten(c, h, w))
for _r, _c, _h, _w in ((2, 64, 56, 56), (2, 512, 14, 14), (2, 64, 8, 8), (2, 512, 7, 7), (2, 256, 14, 14),
                       (4, 32, 8, 8), (2, 16, 8, 8), (2, 128, 8, 8), (2, 256, 8, 8), (2, 64, 16, 16),
                       (2, 96, 16, 16), (2, 72, 16, 16), (2, 32, 32, 32), (2, 64, 12, 12), (2, 130, 8, 8),
                       (2, 32, 7, 7), (2, 64, 7, 7), (2, 16, 14, 14), (2, 64, 6, 6), (2, 64, 32, 32), (2, 48, 32, 32),
                       (4, 64, 16, 16), (2, 40, 32, 32), (2, 96, 32, 32), (2, 128, 32, 32), (2, 80, 40, 40)):
    CASES[f"radix_{_r}_{_c}_{_h}_{_w}"] = (lambda r=_r, c=_c, h=_h, w=_w: radix_sum(r, c, h, w))
for _c, _h, _w in ((96, 56, 56), (16, 8, 8), (32, 16, 16), (64, 16, 16), (32, 32, 32), (16, 64, 64),
                   (96, 28, 28), (8, 56, 56), (64, 32, 32), (72, 32, 32), (128, 32, 32), (36, 32, 64)):
    CASES[f"chanbatch_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: chan_to_batch(c, h, w))
for _c, _h, _w, _b in ((32, 16, 16, 8), (96, 28, 28, 14), (64, 32, 32, 8), (72, 32, 32, 8), (96, 56, 56, 14)):
    CASES[f"winpart_{_c}_{_h}_{_w}_{_b}"] = (lambda c=_c, h=_h, w=_w, b=_b: window_partition(c, h, w, b))
for _c, _h, _w, _b, _bw in ((24, 32, 32, 4, 16), (24, 32, 32, 16, 4), (32, 32, 64, 8, 16), (32, 64, 32, 16, 8),
                            (32, 32, 64, 8, 8), (24, 32, 32, 8, 8)):
    CASES[f"winrect_{_c}_{_h}_{_w}_{_b}x{_bw}"] = (
        lambda c=_c, h=_h, w=_w, b=_b, bw=_bw: window_partition(c, h, w, b, bw))


def shared_kv(heads: int, kv_heads: int, c: int, h: int, w: int, softmax: bool = True) -> onnx.ModelProto:
    """Multi-query / grouped-query attention on a map [1,C,H,W] (MobileNetV4's MQA): q [1,heads,N,C/heads] from
    the map, k and v [1,kv_heads,N,d] from 1x1 Convs, each MatMul broadcasting the kv heads over the q heads;
    the result is folded back into the map for the tail Conv."""
    d, n = c // heads, h * w
    nodes = [
        node("Reshape", ["x", "sq"], ["q4"], "q_reshape"),
        node("Transpose", ["q4"], ["q"], "q_transpose", perm=[0, 1, 3, 2]),
        node("Conv", ["x", "wk"], ["km"], "k_conv"),
        node("Reshape", ["km", "skv"], ["kt"], "k_reshape"),
        node("Mul", ["kt", "scale"], ["ks"], "k_scale"),
        node("Conv", ["x", "wv"], ["vm"], "v_conv"),
        node("Reshape", ["vm", "skv"], ["v4"], "v_reshape"),
        node("Transpose", ["v4"], ["v"], "v_transpose", perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "ks"], ["s"], "scores"),
    ]
    if softmax:
        nodes.append(node("Softmax", ["s"], ["p"], "softmax", axis=-1))
    nodes += [
        node("MatMul", ["p" if softmax else "s", "v"], ["o"], "context"),
        node("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 1, 3, 2]),
        node("Reshape", ["ot", "sm"], ["y"], "o_reshape"),
    ]
    return graph("kv", (1, c, h, w), nodes, [
        const("sq", np.array([1, heads, d, n], np.int64)), weight("wk", (kv_heads * d, c, 1, 1)),
        weight("wv", (kv_heads * d, c, 1, 1)), const("skv", np.array([1, kv_heads, d, n], np.int64)),
        const("scale", np.array([0.25], np.float32)), const("sm", np.array([1, c, h, w], np.int64))])


def tile_identity(rank: int) -> onnx.ModelProto:
    """Conv [1,16,8,8] -> (Unsqueeze to rank 5) -> Tile with every repeat 1 -> back to the map -> Conv (GCViT's
    global query, tiled over a batch of 1)."""
    if rank == 4:
        return graph("ti", (1, 16, 8, 8), [node("Tile", ["x", "r"], ["y"], "tile")],
                     [const("r", np.ones(4, np.int64))])
    return graph("ti", (1, 16, 8, 8), [
        node("Unsqueeze", ["x", "ax"], ["u"], "unsqueeze"),
        node("Tile", ["u", "r"], ["t"], "tile"),
        node("Reshape", ["t", "s"], ["y"], "back"),
    ], [const("ax", np.array([1], np.int64)), const("r", np.ones(5, np.int64)),
        const("s", np.array([1, 16, 8, 8], np.int64))])


def patch_unfold(c: int, h: int, w: int, p: int = 2) -> onnx.ModelProto:
    """MobileViT's unfold and fold: Conv [1,C,H,W] -> Reshape [C*H/p, p, W/p, p] -> Transpose (0,2,1,3) ->
    Reshape [1,C,HW/p^2,p^2] -> Transpose (0,3,2,1) -> Reshape [p^2, HW/p^2, C] -> MatMul (C x C) -> the
    same steps back -> Conv."""
    n = (h // p) * (w // p)
    return graph("pu", (1, c, h, w), [
        node("Reshape", ["x", "s1"], ["a"], "unfold_reshape"),
        node("Transpose", ["a"], ["b"], "unfold_transpose", perm=[0, 2, 1, 3]),
        node("Reshape", ["b", "s2"], ["cc"], "unfold_reshape_1"),
        node("Transpose", ["cc"], ["d"], "unfold_transpose_1", perm=[0, 3, 2, 1]),
        node("Reshape", ["d", "s3"], ["tok"], "unfold_reshape_2"),
        node("MatMul", ["tok", "wm"], ["mm"], "token_linear"),
        node("Reshape", ["mm", "s4"], ["e"], "fold_reshape"),
        node("Transpose", ["e"], ["f"], "fold_transpose", perm=[0, 3, 2, 1]),
        node("Reshape", ["f", "s5"], ["g"], "fold_reshape_1"),
        node("Transpose", ["g"], ["hh"], "fold_transpose_1", perm=[0, 2, 1, 3]),
        node("Reshape", ["hh", "s6"], ["y"], "fold_reshape_2"),
    ], [const("s1", np.array([c * h // p, p, w // p, p], np.int64)),
        const("s2", np.array([1, c, n, p * p], np.int64)),
        const("s3", np.array([p * p, n, c], np.int64)), weight("wm", (c, c)),
        const("s4", np.array([1, p * p, n, c], np.int64)),
        const("s5", np.array([c * h // p, w // p, p, p], np.int64)),
        const("s6", np.array([1, c, h, w], np.int64))])


def window_tokens(c: int, h: int, w: int, block: int) -> onnx.ModelProto:
    """TinyViT/Swin-style window partition into a rank-3 batch of windows: Conv [1,C,H,W] -> Transpose
    (0,2,3,1) -> Reshape [1,gh,b,gw,b,C] -> Transpose (0,1,3,2,4,5) -> Reshape [gh*gw,b*b,C] -> MatMul -> the
    same steps back -> Conv (window_partition with a rank-4 [1,gh*gw,b*b,C] result is NesT's)."""
    gh, gw = h // block, w // block
    return graph("wt", (1, c, h, w), [
        node("Transpose", ["x"], ["nhwc"], "to_nhwc", perm=[0, 2, 3, 1]),
        node("Reshape", ["nhwc", "s6"], ["r6"], "blockify_reshape"),
        node("Transpose", ["r6"], ["t6"], "blockify_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["t6", "s3"], ["blocks"], "blocks_reshape"),
        node("MatMul", ["blocks", "wm"], ["act"], "per_block"),
        node("Reshape", ["act", "s6b"], ["b6"], "deblock_reshape"),
        node("Transpose", ["b6"], ["u6"], "deblock_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["u6", "snhwc"], ["back"], "deblock_merge"),
        node("Transpose", ["back"], ["y"], "to_nchw", perm=[0, 3, 1, 2]),
    ], [const("s6", np.array([1, gh, block, gw, block, c], np.int64)),
        const("s3", np.array([gh * gw, block * block, c], np.int64)), weight("wm", (c, c)),
        const("s6b", np.array([1, gh, gw, block, block, c], np.int64)),
        const("snhwc", np.array([1, h, w, c], np.int64))])


def head_levels(c: int, split: int = 0) -> onnx.ModelProto:
    """A detector head's flatten-and-join: Conv [1,C,40,40] and two stride-2 Convs (20x20, 10x10), each Reshape
    [1,C,HW], Concat on the last axis [1,C,2100] -> Sigmoid -> the rank-3 graph output; with `split`, the
    joined tensor is cut into [1,C/split,split,2100] (YOLO pose's keypoints), scaled and joined back."""
    nodes = [node("Conv", ["x", "w20"], ["m20"], "down20", strides=[2, 2]),
             node("Conv", ["m20", "w10"], ["m10"], "down10", strides=[2, 2]),
             node("Reshape", ["x", "s40"], ["f40"], "flat40"), node("Reshape", ["m20", "s20"], ["f20"], "flat20"),
             node("Reshape", ["m10", "s10"], ["f10"], "flat10"),
             node("Concat", ["f40", "f20", "f10"], ["cat"], "levels", axis=2)]
    inits = [weight("w20", (c, c, 1, 1)), weight("w10", (c, c, 1, 1)), const("s40", np.array([1, c, 1600], np.int64)),
             const("s20", np.array([1, c, 400], np.int64)), const("s10", np.array([1, c, 100], np.int64))]
    if split:  # as the DFL: split, softmax over the pieces, sum them (a split joined straight back folds away)
        nodes += [node("Reshape", ["cat", "ss"], ["k4"], "split_channels"),
                  node("Softmax", ["k4"], ["k4s"], "pieces_softmax", axis=2),
                  node("ReduceSum", ["k4s", "ax"], ["y"], "pieces_sum", keepdims=0)]
        inits += [const("ss", np.array([1, c // split, split, 2100], np.int64)), const("ax", np.array([2], np.int64))]
    else:
        nodes.append(node("Sigmoid", ["cat"], ["y"], "act"))
    return graph("hl", (1, c, 40, 40), nodes, inits, tail=None)


for _c, _split in ((51, 0), (24, 0), (16, 0), (8, 0), (80, 0), (20, 0), (51, 3), (48, 3), (64, 16), (64, 8),
                   (32, 8), (48, 16), (64, 4)):
    _label = f"levels_{_c}" + (f"_split{_split}" if _split else "")
    CASES[_label] = (lambda c=_c, sp=_split: head_levels(c, sp))
    CASE_SOCS[_label] = "rk3588"
def softmax_output(n: int, dual: bool) -> onnx.ModelProto:
    """A classifier ending in Softmax: Conv [1,16,4,4] -> GlobalAveragePool -> Flatten -> Gemm (n classes) ->
    Softmax -> the graph output; with `dual`, the logits are a graph output too (as ultralytics' cls export)."""
    m = graph("so", (1, 16, 4, 4), [
        node("GlobalAveragePool", ["x"], ["p"], "gap"),
        node("Flatten", ["p"], ["f"], "flatten", axis=1),
        node("Gemm", ["f", "gw", "gb"], ["logits"], "fc", transB=1),
        node("Softmax", ["logits"], ["y"], "softmax", axis=1),
    ], [weight("gw", (n, 16)), weight("gb", (n,))], tail=None)
    if dual:
        m.graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, None))
    return m


for _n in (1000, 1008, 100):
    for _dual in (False, True):
        _label = f"smout_{_n}" + ("_dual" if _dual else "")
        CASES[_label] = (lambda n=_n, d=_dual: softmax_output(n, d))
        CASE_SOCS[_label] = "rk3588"
def obb_head(angle: bool, classes: int = 80, h: int = 16, decode: bool = False, cls_first: bool = False) -> onnx.ModelProto:
    """A YOLO head at 16x16 and 8x8: boxes through a DFL (batch form), classes as flattened maps joined on the last
    axis -> Sigmoid (map form), and with `angle` an OBB angle branch (map form, Sigmoid -> Sub -> Mul, also read
    by a Cos as the box decoding reads it); all joined on axis 1 into the rank-3 graph output."""
    nodes = [node("MaxPool", ["x"], ["xs"], "pool", kernel_shape=[2, 2], strides=[2, 2])]
    inits: list[onnx.TensorProto] = []
    branches = [("box", 64), ("cls", classes)] + ([("ang", 1)] if angle else [])
    n = h * h + (h // 2) ** 2
    for branch, ch in branches:
        for i, (m, hw) in enumerate((("x", h * h), ("xs", (h // 2) ** 2))):
            nodes += [node("Conv", [m, f"w{branch}{i}"], [f"{branch}{i}"], f"{branch}_conv{i}"),
                      node("Reshape", [f"{branch}{i}", f"s{branch}{i}"], [f"{branch}{i}r"], f"{branch}_flat{i}")]
            inits += [weight(f"w{branch}{i}", (ch, 16, 1, 1)), const(f"s{branch}{i}", np.array([1, ch, hw], np.int64))]
        nodes.append(node("Concat", [f"{branch}0r", f"{branch}1r"], [f"{branch}_all"], f"{branch}_concat", axis=2))
    nodes += [node("Sigmoid", ["cls_all"], ["cls_sig"], "cls_sigmoid"),
              node("Reshape", ["box_all", "s4"], ["b4"], "dfl_reshape"),
              node("Softmax", ["b4"], ["bs"], "dfl_softmax", axis=2),
              node("ReduceSum", ["bs", "ax"], ["box_dfl"], "dfl_sum", keepdims=0),
              node("Mul", ["box_dfl", "stride"], ["box_dec"], "box_mul")]
    inits += [const("s4", np.array([1, 4, 16, n], np.int64)), const("ax", np.array([2], np.int64)),
              const("stride", np.array(8.0, np.float32))]
    joined = ["box_dec", "cls_sig"]
    if decode:  # YOLOv8's dist2bbox after the DFL: split lt/rb, anchors -/+, centre and size, joined back
        nodes += [node("Split", ["box_dec", "two"], ["lt", "rb"], "box_split", axis=1),
                  node("Sub", ["anchors", "lt"], ["x1y1"], "box_sub"), node("Add", ["anchors", "rb"], ["x2y2"], "box_add"),
                  node("Add", ["x1y1", "x2y2"], ["c2"], "box_csum"), node("Mul", ["c2", "halfc"], ["cxy"], "box_centre"),
                  node("Sub", ["x2y2", "x1y1"], ["wh"], "box_size"),
                  node("Concat", ["cxy", "wh"], ["box_xywh"], "box_join", axis=1)]
        inits += [const("two", np.array([2, 2], np.int64)), const("anchors", np.zeros((1, 2, n), np.float32)),
                  const("halfc", np.array(0.5, np.float32))]
        joined = ["box_xywh", "cls_sig"]
    if cls_first:
        joined = joined[::-1]
    if angle:
        nodes += [node("Sigmoid", ["ang_all"], ["a1"], "ang_sigmoid"), node("Sub", ["a1", "half"], ["a2"], "ang_sub"),
                  node("Mul", ["a2", "pi"], ["ang"], "ang_mul"), node("Cos", ["ang"], ["cos"], "ang_cos"),
                  node("Mul", ["box_dec", "cos"], ["box_rot"], "box_rotate")]
        inits += [const("half", np.array(0.5, np.float32)), const("pi", np.array(3.14159, np.float32))]
        joined = ["box_rot", "cls_sig", "ang"]
    nodes.append(node("Concat", joined, ["y"], "head_concat", axis=1))
    return graph("obb", (1, 16, h, h), nodes, inits, tail=None)


def window_residual(c: int, h: int, block: int, rank: int) -> onnx.ModelProto:
    """TinyViT's block: Conv map -> Transpose (0,2,3,1) -> window partition (rank-3 or rank-4 windows) ->
    MatMul -> back to NHWC -> Add to the NHWC map itself (the residual) -> Transpose back -> Conv."""
    g = h // block
    wshape = [g * g, block * block, c] if rank == 3 else [1, g * g, block * block, c]
    return graph("wr", (1, c, h, h), [
        node("Transpose", ["x"], ["nhwc"], "to_nhwc", perm=[0, 2, 3, 1]),
        node("Reshape", ["nhwc", "s6"], ["r6"], "blockify_reshape"),
        node("Transpose", ["r6"], ["t6"], "blockify_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["t6", "sw"], ["blocks"], "blocks_reshape"),
        node("MatMul", ["blocks", "wm"], ["act"], "per_block"),
        node("Reshape", ["act", "s6b"], ["b6"], "deblock_reshape"),
        node("Transpose", ["b6"], ["u6"], "deblock_transpose", perm=[0, 1, 3, 2, 4, 5]),
        node("Reshape", ["u6", "snhwc"], ["back"], "deblock_merge"),
        node("Add", ["back", "nhwc"], ["res"], "residual"),
        node("Transpose", ["res"], ["y"], "to_nchw", perm=[0, 3, 1, 2]),
    ], [const("s6", np.array([1, g, block, g, block, c], np.int64)), const("sw", np.array(wshape, np.int64)),
        weight("wm", (c, c)), const("s6b", np.array([1, g, g, block, block, c], np.int64)),
        const("snhwc", np.array([1, h, h, c], np.int64))])


for _angle, _h in ((False, 16), (True, 16), (False, 20), (True, 20), (False, 12), (False, 24)):
    CASES[f"obbhead_{int(_angle)}_{_h}"] = (lambda a=_angle, h=_h: obb_head(a, h=h))
    CASE_SOCS[f"obbhead_{int(_angle)}_{_h}"] = "rk3588"
for _label, _dec, _first in (("decode", True, False), ("clsfirst", False, True), ("decode_clsfirst", True, True)):
    CASES[f"detecthead_{_label}_20"] = (lambda d=_dec, f=_first: obb_head(False, h=20, decode=d, cls_first=f))
    CASE_SOCS[f"detecthead_{_label}_20"] = "rk3588"
for _c, _h, _b, _r in ((128, 28, 7, 3), (128, 28, 7, 4), (96, 56, 14, 4), (96, 56, 14, 3)):
    CASES[f"winres_{_c}_{_h}_{_b}_r{_r}"] = (lambda c=_c, h=_h, b=_b, r=_r: window_residual(c, h, b, r))
    CASE_SOCS[f"winres_{_c}_{_h}_{_b}_r{_r}"] = "rk3588"
for _hq, _hk, _c, _h, _w, _sm in ((4, 1, 64, 8, 8, True), (4, 4, 64, 8, 8, True),
                                  (4, 1, 64, 8, 8, False), (8, 1, 128, 7, 7, True), (2, 1, 32, 4, 4, True)):
    _label = f"kv_{_hq}_{_hk}_{_c}_{_h}_{_w}{'' if _sm else '_nosm'}"
    CASES[_label] = (lambda hq=_hq, hk=_hk, c=_c, h=_h, w=_w, sm=_sm: shared_kv(hq, hk, c, h, w, sm))
    CASE_SOCS[_label] = "rk3588,rk3576"
for _rank in (4, 5):
    CASES[f"tileone_{_rank}"] = (lambda r=_rank: tile_identity(r))
    CASE_SOCS[f"tileone_{_rank}"] = "rk3588,rk3576"
for _c, _h, _w in ((144, 8, 8), (96, 8, 8), (64, 8, 16), (64, 16, 8), (64, 4, 4), (64, 12, 12), (64, 16, 16),
                   (64, 24, 24), (96, 32, 32), (64, 32, 32), (32, 8, 8), (64, 4, 8), (64, 8, 24)):
    CASES[f"unfold_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: patch_unfold(c, h, w))
    CASE_SOCS[f"unfold_{_c}_{_h}_{_w}"] = "rk3588"
for _c, _h, _w, _b in ((128, 28, 28, 7), (96, 28, 28, 14), (160, 14, 14, 7), (64, 32, 32, 8)):
    CASES[f"wintok_{_c}_{_h}_{_w}_{_b}"] = (lambda c=_c, h=_h, w=_w, b=_b: window_tokens(c, h, w, b))
    CASE_SOCS[f"wintok_{_c}_{_h}_{_w}_{_b}"] = "rk3588"


def _scatter_indices(shape: tuple[int, ...], region: tuple[slice, ...], reverse_last: bool = False) -> np.ndarray:
    """Element indices [*region_shape, rank] of `region` of a tensor of `shape`, in order (or with the last
    axis reversed)."""
    axes = [np.arange(n)[r] for n, r in zip(shape, region)]
    if reverse_last:
        axes[-1] = axes[-1][::-1]
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack(grids, axis=-1).astype(np.int64)


def scatter_nd(c: int, h: int, w: int, form: str) -> onnx.ModelProto:
    """Conv map x [1,C,H,W] -> ScatterND(x, constant indices, Sigmoid(x) or a piece of it) -> Conv: does the
    toolkit's optimiser rewrite a constant-index ScatterND, and for which index patterns? `form`: full (every
    element, in order: MViTv2's relative-position write with no class token), full_rev (every element, W
    reversed), corner (x[:, :, 1:, 1:], MViTv2 with a class token), rows (index tuples of length 1: the whole
    tensor as one slice), chan (tuples of length 2: the first C/2 channels), expand (full, but the indices built
    at run time from constants by Expand/Unsqueeze/Concat, as the MViTv2 export writes them)."""
    shape = (1, c, h, w)
    nodes = [node("Sigmoid", ["x"], ["s"], "upd_act")]
    inits: list[onnx.TensorProto] = []
    upd = "s"
    if form in ("full", "full_rev"):
        inits.append(const("idx", _scatter_indices(shape, (slice(None),) * 4, form == "full_rev")))
    elif form == "corner":
        inits += [const("idx", _scatter_indices(shape, (slice(None), slice(None), slice(1, None), slice(1, None)))),
                  const("st", np.array([1, 1], np.int64)), const("en", np.array([h, w], np.int64)),
                  const("ax", np.array([2, 3], np.int64))]
        nodes.append(node("Slice", ["s", "st", "en", "ax"], ["sp"], "upd_slice"))
        upd = "sp"
    elif form == "rows":
        inits.append(const("idx", np.zeros((1, 1), np.int64)))
    elif form == "chan":
        inits += [const("idx", np.array([[0, k] for k in range(c // 2)], np.int64)),
                  const("st", np.array([0], np.int64)), const("en", np.array([c // 2], np.int64)),
                  const("ax", np.array([1], np.int64)), const("sr", np.array([c // 2, h, w], np.int64))]
        nodes += [node("Slice", ["s", "st", "en", "ax"], ["sp"], "upd_slice"),
                  node("Reshape", ["sp", "sr"], ["spr"], "upd_reshape")]
        upd = "spr"
    elif form == "expand":
        full = np.array(shape, np.int64)
        inits += [const("zero", np.array([0], np.int64)), const("full", full),
                  const("ch", np.arange(c, dtype=np.int64).reshape(c, 1, 1)),
                  const("hh", np.arange(h, dtype=np.int64).reshape(h, 1)), const("ww", np.arange(w, dtype=np.int64)),
                  const("last", np.array([-1], np.int64))]
        parts = []
        for k, src in enumerate(("zero", "ch", "hh", "ww")):
            nodes += [node("Expand", [src, "full"], [f"e{k}"], f"idx_expand{k}"),
                      node("Unsqueeze", [f"e{k}", "last"], [f"u{k}"], f"idx_unsqueeze{k}")]
            parts.append(f"u{k}")
        nodes.append(node("Concat", parts, ["idx"], "idx_concat", axis=4))
    else:
        raise ValueError(form)
    nodes.append(node("ScatterND", ["x", "idx", upd], ["y"], "scatter"))
    return graph("snd", shape, nodes, inits)


for _form in ("full", "full_rev", "corner", "rows", "chan", "expand"):
    CASES[f"scatter_{_form}"] = (lambda f=_form: scatter_nd(16, 8, 8, f))


def grid_window(c: int, h: int, g: int, mode: str) -> onnx.ModelProto:
    """MaxViT's partitions of an NHWC map [1,H,W,C] (n = H/g): the block form cuts g x g windows of neighbours,
    Reshape [1,n,g,n,g,C] -> Transpose (0,1,3,2,4,5); the grid form takes every n-th pixel, Reshape
    [1,g,n,g,n,C] -> Transpose (0,2,4,1,3,5); each -> Reshape [n*n,g,g,C] -> MatMul (C x C) -> its reverse
    (block: the same Transpose; grid: Reshape [1,n,n,g,g,C] -> Transpose (0,3,1,4,2,5)) -> Reshape [1,H,W,C].
    `mode`: block, grid, grid_reverse (the grid reverse alone on the map, no partition before it),
    grid_forward (the grid partition, then the block reverse)."""
    n = h // g
    nodes = [node("Transpose", ["x"], ["nhwc"], "to_nhwc", perm=[0, 2, 3, 1])]
    inits = [weight("wm", (c, c)), const("snhwc", np.array([1, h, h, c], np.int64)),
             const("swin", np.array([n * n, g, g, c], np.int64))]
    src = "nhwc"
    if mode in ("block", "grid", "grid_forward"):
        grid = mode != "block"
        inits.append(const("s6", np.array([1, g, n, g, n, c] if grid else [1, n, g, n, g, c], np.int64)))
        nodes += [node("Reshape", [src, "s6"], ["r6"], "part_reshape"),
                  node("Transpose", ["r6"], ["t6"], "part_transpose", perm=[0, 2, 4, 1, 3, 5] if grid else [0, 1, 3, 2, 4, 5]),
                  node("Reshape", ["t6", "swin"], ["win"], "win_reshape"),
                  node("MatMul", ["win", "wm"], ["act"], "per_window")]
        src = "act"
    reverse_grid = mode in ("grid", "grid_reverse")
    inits.append(const("s6b", np.array([1, n, n, g, g, c] if reverse_grid else [1, n, g, n, g, c], np.int64)))
    nodes += [node("Reshape", [src, "s6b"], ["b6"], "rev_reshape"),
              node("Transpose", ["b6"], ["u6"], "rev_transpose", perm=[0, 3, 1, 4, 2, 5] if reverse_grid else [0, 1, 3, 2, 4, 5]),
              node("Reshape", ["u6", "snhwc"], ["back"], "rev_merge"),
              node("Transpose", ["back"], ["y"], "to_nchw", perm=[0, 3, 1, 2])]
    return graph("gw", (1, c, h, h), nodes, inits)


for _c, _h, _g, _mode in ((32, 16, 8, "grid"), (32, 16, 8, "block"), (32, 16, 8, "grid_reverse"),
                          (32, 16, 8, "grid_forward"), (32, 8, 8, "grid"), (32, 32, 8, "grid"), (64, 16, 4, "grid"),
                          (32, 16, 8, "grid_reverse"), (16, 12, 4, "grid"), (16, 12, 4, "grid_reverse")):
    CASES[f"gridwin_{_mode}_{_c}_{_h}_{_g}"] = (lambda c=_c, h=_h, g=_g, m=_mode: grid_window(c, h, g, m))


def map_softmax(c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv [1,C,H,W] -> Softmax over W -> Conv: attention scores held as a map (heads in the channel axis), as
    CaiT's talking heads and MViTv2's relative-position scores reach their Softmax."""
    return graph("sm", (1, c, h, w), [node("Softmax", ["x"], ["y"], "softmax", axis=3)], [])


for _c, _h, _w in ((4, 196, 196), (8, 49, 196), (1, 256, 256), (8, 128, 128), (16, 128, 128), (1, 512, 256),
                   (2, 256, 256), (4, 128, 256), (1, 392, 196), (6, 128, 128), (12, 128, 128), (1, 128, 1024),
                   (1, 1024, 128), (32, 64, 64), (2, 196, 196), (3, 196, 196), (4, 128, 128), (5, 128, 128),
                   (1, 784, 196), (1, 1568, 196), (8, 196, 196), (4, 256, 256), (1, 128, 136), (1, 128, 160),
                   (1, 128, 192), (1, 128, 224), (1, 160, 128), (1, 192, 128), (1, 64, 320), (1, 264, 256),
                   (1, 257, 256), (1, 288, 256), (1, 1024, 64), (1, 64, 1024), (1, 136, 128), (1, 144, 128),
                   (1, 2048, 32), (1, 32, 2048), (1, 128, 129), (1, 129, 128)):
    CASES[f"mapsm_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: map_softmax(c, h, w))
    CASE_SOCS[f"mapsm_{_c}_{_h}_{_w}"] = "rk3588"


def map_tokens(c: int, h: int, w: int) -> onnx.ModelProto:
    """A map flattened into tokens and back (CoaT's convolutional position encoding, any hybrid's patch tokens):
    Conv [1,C,H,W] -> Reshape [1,C,HW] -> Transpose (0,2,1) -> MatMul (C x C) -> Transpose (0,2,1) -> Reshape
    [1,C,H,W] -> Conv."""
    return graph("mt", (1, c, h, w), [
        node("Reshape", ["x", "s3"], ["r3"], "flatten"),
        node("Transpose", ["r3"], ["tok"], "to_tokens", perm=[0, 2, 1]),
        node("MatMul", ["tok", "wm"], ["mm"], "token_linear"),
        node("Transpose", ["mm"], ["back3"], "from_tokens", perm=[0, 2, 1]),
        node("Reshape", ["back3", "s4"], ["y"], "unflatten"),
    ], [const("s3", np.array([1, c, h * w], np.int64)), weight("wm", (c, c)),
        const("s4", np.array([1, c, h, w], np.int64))])


for _c, _h, _w in ((152, 14, 14), (152, 7, 7), (152, 28, 28), (152, 8, 8), (160, 14, 14), (144, 14, 14),
                   (136, 14, 14), (152, 12, 12), (152, 10, 10), (24, 7, 7), (20, 7, 7), (12, 14, 14)):
    CASES[f"maptok_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: map_tokens(c, h, w))


def cls_tokens_map(c: int, h: int, w: int) -> onnx.ModelProto:
    """CoaT's convolutional position encoding between class-token blocks: tokens [1,1+HW,C] (a class token
    joined in front) -> Slice the class token off -> Transpose (0,2,1) -> Reshape [1,C,H,W] ("unflat") ->
    depthwise 3x3 Conv + the map itself -> Reshape [1,C,HW] ("flat") -> Transpose (0,2,1) -> Concat the class
    token back -> MatMul; the probe's own Conv map enters as tokens the same way and leaves as a map."""
    n = h * w
    nodes = [node("Reshape", ["x", "s3"], ["r0"], "flat0"), node("Transpose", ["r0"], ["t0"], "tok0", perm=[0, 2, 1]),
             node("Concat", ["cls", "t0"], ["c0"], "join0", axis=1),
             node("MatMul", ["c0", "wm0"], ["m0"], "mix0"),
             node("Slice", ["m0", "one", "big", "ax1"], ["s0"], "drop_cls"),
             node("Transpose", ["s0"], ["u0"], "untok", perm=[0, 2, 1]),
             node("Reshape", ["u0", "s4"], ["map"], "unflat"),
             node("Conv", ["map", "wdw", "bdw"], ["pe"], "pe_conv", group=c, pads=[1, 1, 1, 1]),
             node("Add", ["pe", "map"], ["res"], "pe_add"),
             node("Reshape", ["res", "s3"], ["r1"], "flat"), node("Transpose", ["r1"], ["t1"], "tok1", perm=[0, 2, 1]),
             node("Concat", ["cls", "t1"], ["c1"], "join1", axis=1),
             node("MatMul", ["c1", "wm1"], ["m1"], "mix1"),
             node("Slice", ["m1", "one", "big", "ax1"], ["s1"], "drop_cls1"),
             node("Transpose", ["s1"], ["u1"], "untok1", perm=[0, 2, 1]),
             node("Reshape", ["u1", "s4"], ["y"], "unflat_out")]
    return graph("ct", (1, c, h, w), nodes, [
        const("s3", np.array([1, c, n], np.int64)), const("s4", np.array([1, c, h, w], np.int64)),
        weight("cls", (1, 1, c)), weight("wm0", (c, c)), weight("wm1", (c, c)), weight("wdw", (c, 1, 3, 3)),
        weight("bdw", (c,)), const("one", np.array([1], np.int64)), const("big", np.array([n + 1], np.int64)),
        const("ax1", np.array([1], np.int64))])


for _c, _h, _w in ((152, 14, 14), (152, 7, 7), (152, 28, 28), (152, 8, 8), (160, 14, 14), (144, 14, 14),
                   (136, 14, 14), (152, 12, 12), (24, 7, 7), (20, 7, 7), (256, 14, 14), (320, 7, 7)):
    CASES[f"clsmap_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: cls_tokens_map(c, h, w))
    CASE_SOCS[f"clsmap_{_c}_{_h}_{_w}"] = "rk3588,rk3576"


def conv_rel_pos(heads: int, d: int, h: int, w: int, cls: bool = False) -> onnx.ModelProto:
    """CoaT's factorised attention with its convolutional relative position (crpe): the map x [1,C,H,W] as
    tokens [1,N,C] -> qkv MatMul -> Reshape [1,N,3,h,d] -> Transpose (2,0,3,1,4) -> Split -> Squeeze -> q, k, v
    [1,h,N,d]; crpe: v -> Transpose (0,1,3,2) -> Reshape [1,C,H,W] ("to_map") -> depthwise 3x3 Conv -> Reshape
    [1,h,d,N] ("from_map") -> Transpose -> q * it; attention q (softmax(k)^T v) + crpe -> Transpose -> Reshape
    [1,N,C] -> MatMul -> Transpose -> Reshape back to the map. With `cls` a class token is joined in front
    (N+1 tokens), crpe takes q and v without it (Slice) and pads its result back (Pad), as CoaT does."""
    c, n = heads * d, h * w
    t = n + 1 if cls else n
    nodes = [node("Reshape", ["x", "s3"], ["r0"], "flat"), node("Transpose", ["r0"], ["tok0"], "to_tokens", perm=[0, 2, 1])]
    if cls:
        nodes.append(node("Concat", ["clstok", "tok0"], ["tok"], "join_cls", axis=1))
    else:
        nodes.append(node("Identity", ["tok0"], ["tok"], "no_cls"))
    nodes += [node("MatMul", ["tok", "wqkv"], ["qkv"], "qkv"),
             node("Reshape", ["qkv", "s5"], ["q5"], "qkv_reshape"),
             node("Transpose", ["q5"], ["qt"], "qkv_transpose", perm=[2, 0, 3, 1, 4]),
             node("Split", ["qt", "ones3"], ["qs", "ks", "vs"], "qkv_split", axis=0),
             node("Squeeze", ["qs", "zero"], ["q"], "q_squeeze"), node("Squeeze", ["ks", "zero"], ["k"], "k_squeeze"),
             node("Squeeze", ["vs", "zero"], ["v"], "v_squeeze"),
             node("Softmax", ["k"], ["ksm"], "k_softmax", axis=2),
             node("Transpose", ["ksm"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
             node("MatMul", ["kt", "v"], ["kv"], "kv"), node("MatMul", ["q", "kv"], ["att"], "qkv_att"),
             ]
    qi, vi = "q", "v"
    if cls:
        nodes += [node("Slice", ["q", "one", "big", "two"], ["qs1"], "q_img"),
                  node("Slice", ["v", "one", "big", "two"], ["vs1"], "v_img")]
        qi, vi = "qs1", "vs1"
    nodes += [node("Transpose", [vi], ["vt"], "v_transpose", perm=[0, 1, 3, 2]),
              node("Reshape", ["vt", "s4"], ["vm"], "to_map"),
              node("Conv", ["vm", "wdw", "bdw"], ["vc"], "crpe_conv", group=c, pads=[1, 1, 1, 1]),
              node("Reshape", ["vc", "sh"], ["vh"], "from_map"),
              node("Transpose", ["vh"], ["vht"], "crpe_transpose", perm=[0, 1, 3, 2]),
              node("Mul", [qi, "vht"], ["ev0"], "crpe_mul")]
    if cls:
        nodes.append(node("Pad", ["ev0", "pads"], ["ev"], "crpe_pad"))
    else:
        nodes.append(node("Identity", ["ev0"], ["ev"], "no_pad"))
    nodes += [node("Add", ["att", "ev"], ["o"], "combine"),
              node("Transpose", ["o"], ["ot"], "heads_join", perm=[0, 2, 1, 3]),
              node("Reshape", ["ot", "stok"], ["oj"], "heads_reshape"),
              node("MatMul", ["oj", "wp"], ["pj"], "proj")]
    if cls:
        nodes.append(node("Slice", ["pj", "one", "big", "one"], ["pjs"], "drop_cls"))
    else:
        nodes.append(node("Identity", ["pj"], ["pjs"], "keep"))
    nodes += [node("Transpose", ["pjs"], ["pt"], "to_channels", perm=[0, 2, 1]),
              node("Reshape", ["pt", "s4"], ["y"], "unflat")]
    return graph("crpe", (1, c, h, w), nodes, [
        const("s3", np.array([1, c, n], np.int64)), weight("wqkv", (c, 3 * c)),
        const("s5", np.array([1, t, 3, heads, d], np.int64)), const("ones3", np.array([1, 1, 1], np.int64)),
        const("zero", np.array([0], np.int64)), const("s4", np.array([1, c, h, w], np.int64)),
        weight("wdw", (c, 1, 3, 3)), weight("bdw", (c,)), const("sh", np.array([1, heads, d, n], np.int64)),
        const("stok", np.array([1, t, c], np.int64)), weight("wp", (c, c)), weight("clstok", (1, 1, c)),
        const("one", np.array([1], np.int64)), const("big", np.array([t], np.int64)),
        const("two", np.array([2], np.int64)), const("pads", np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64))])


for _hd, _d, _h in ((8, 8, 56), (8, 16, 28), (8, 32, 14), (8, 40, 7), (8, 19, 28), (8, 19, 14), (8, 16, 32),
                    (8, 16, 16), (8, 8, 32), (8, 16, 24), (8, 16, 40), (8, 8, 40), (8, 32, 16), (8, 16, 12)):
    CASES[f"crpe_{_hd}_{_d}_{_h}"] = (lambda hd=_hd, d=_d, h=_h: conv_rel_pos(hd, d, h, h))
    CASE_SOCS[f"crpe_{_hd}_{_d}_{_h}"] = "rk3588"
    CASES[f"crpecls_{_hd}_{_d}_{_h}"] = (lambda hd=_hd, d=_d, h=_h: conv_rel_pos(hd, d, h, h, cls=True))
    CASE_SOCS[f"crpecls_{_hd}_{_d}_{_h}"] = "rk3588"


def cubic_resize(size: int, out: int, ctm: str = "half_pixel") -> onnx.ModelProto:
    """Conv [1,16,S,S] -> Resize cubic to [1,16,O,O] (by sizes) -> Conv: CrossViT resizes its 240 input to 224."""
    return graph("cu", (1, 16, size, size), [node("Resize", ["x", "", "", "sz"], ["y"], "resize", mode="cubic",
                                                  coordinate_transformation_mode=ctm)],
                 [const("sz", np.array([1, 16, out, out], np.int64))])


for _s, _o in ((240, 224), (16, 32), (16, 8), (16, 15), (16, 24), (16, 48), (32, 16), (16, 12), (112, 224),
               (224, 112), (224, 240), (224, 448), (120, 112), (64, 60)):
    CASES[f"cubic_{_s}_{_o}"] = (lambda s=_s, o=_o: cubic_resize(s, o))


def decomposed_rel_pos(heads: int, q: int, k: int, d: int = 16) -> onnx.ModelProto:
    """MViTv2's (and SAM's) decomposed relative position: scores = q k^T [1,h,N,M] (N = q*q, M = k*k) viewed as
    [1,h,q,q,k,k] ("scores_grid"), + rel_h [1,h,q,q,k] unsqueezed at the last axis ("rel_h_unsqueeze") + rel_w
    unsqueezed at axis -2 ("rel_w_unsqueeze"), merged back to [1,h,N,M] ("scores_merge") -> Softmax -> . v. q, k
    and v come from the map [1,h*d,q,q] (k, v pooled by a stride-q/k Conv); rel_h and rel_w are q's pieces
    times constant tables (MatMul [d,k])."""
    c, n, m = heads * d, q * q, k * k
    stride = q // k
    nodes = [node("Reshape", ["x", "sq"], ["q4"], "q_reshape"), node("Transpose", ["q4"], ["qq"], "q_transpose", perm=[0, 1, 3, 2]),
             node("Conv", ["x", "wk"], ["km"], "k_pool", strides=[stride, stride], group=c),
             node("Reshape", ["km", "sk"], ["k4"], "k_reshape"),
             node("Conv", ["x", "wv"], ["vm"], "v_pool", strides=[stride, stride], group=c),
             node("Reshape", ["vm", "sk"], ["v4"], "v_reshape"), node("Transpose", ["v4"], ["vv"], "v_transpose", perm=[0, 1, 3, 2]),
             node("MatMul", ["qq", "k4"], ["s"], "scores"),
             node("Reshape", ["qq", "sq5"], ["q5"], "q_grid"),
             node("MatMul", ["q5", "rh"], ["relh"], "rel_h"), node("MatMul", ["q5", "rw"], ["relw"], "rel_w"),
             node("Reshape", ["s", "s6"], ["s6o"], "scores_grid"),
             node("Unsqueeze", ["relh", "last"], ["relh6"], "rel_h_unsqueeze"),
             node("Add", ["s6o", "relh6"], ["a1"], "add_h"),
             node("Unsqueeze", ["relw", "second"], ["relw6"], "rel_w_unsqueeze"),
             node("Add", ["a1", "relw6"], ["a2"], "add_w"),
             node("Reshape", ["a2", "s4"], ["sm"], "scores_merge"),
             node("Softmax", ["sm"], ["p"], "softmax", axis=-1),
             node("MatMul", ["p", "vv"], ["o"], "context"),
             node("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 1, 3, 2]),
             node("Reshape", ["ot", "sout"], ["y"], "o_reshape")]
    return graph("drp", (1, c, q, q), nodes, [
        const("sq", np.array([1, heads, d, n], np.int64)), weight("wk", (c, 1, 1, 1)), weight("wv", (c, 1, 1, 1)),
        const("sk", np.array([1, heads, d, m], np.int64)), const("sq5", np.array([1, heads, q, q, d], np.int64)),
        weight("rh", (d, k)), weight("rw", (d, k)), const("s6", np.array([1, heads, q, q, k, k], np.int64)),
        const("last", np.array([-1], np.int64)), const("second", np.array([-2], np.int64)),
        const("s4", np.array([1, heads, n, m], np.int64)), const("sout", np.array([1, c, q, q], np.int64))])


for _hd, _q, _k in ((4, 14, 14), (4, 14, 7), (4, 28, 14), (2, 28, 14), (4, 16, 16), (4, 16, 8), (8, 7, 7), (4, 12, 12),
                    (4, 28, 28), (4, 8, 4), (4, 14, 28)):
    if _q % _k == 0:
        CASES[f"relpos_{_hd}_{_q}_{_k}"] = (lambda hd=_hd, q=_q, k=_k: decomposed_rel_pos(hd, q, k))
        CASE_SOCS[f"relpos_{_hd}_{_q}_{_k}"] = "rk3588,rk3576"


def conv_windows(c: int, h: int, g: int, crop: bool, conv: bool = True) -> onnx.ModelProto:
    """EfficientViT-M's local window attention: an NHWC map [1,H,W,C] cut into G x G windows (block partition),
    the windows as a batch of NCHW maps [n*n,C,G,G] (Transpose (0,3,1,2)) through a Conv (or a Relu), back to NHWC
    (Transpose (0,2,3,1)), the block merge, with `crop` the padding crop (two Slices that keep everything), and the
    map back to NCHW (Transpose (0,3,1,2), "to_nchw")."""
    n = h // g
    nodes = [node("Transpose", ["x"], ["nhwc"], "to_nhwc", perm=[0, 2, 3, 1]),
             node("Reshape", ["nhwc", "s6"], ["r6"], "part_reshape"),
             node("Transpose", ["r6"], ["t6"], "part_transpose", perm=[0, 1, 3, 2, 4, 5]),
             node("Reshape", ["t6", "sw"], ["win"], "win_reshape"),
             node("Transpose", ["win"], ["wn"], "win_nchw", perm=[0, 3, 1, 2]),
             (node("Conv", ["wn", "wc"], ["wa"], "per_window") if conv else node("Relu", ["wn"], ["wa"], "per_window")),
             node("Transpose", ["wa"], ["wh"], "win_nhwc", perm=[0, 2, 3, 1]),
             node("Reshape", ["wh", "s6b"], ["b6"], "merge_reshape"),
             node("Transpose", ["b6"], ["u6"], "merge_transpose", perm=[0, 1, 3, 2, 4, 5]),
             node("Reshape", ["u6", "s4"], ["m"], "merge_map")]
    inits = [const("s6", np.array([1, n, g, n, g, c], np.int64)), const("sw", np.array([n * n, g, g, c], np.int64)),
             weight("wc", (c, c, 1, 1)), const("s6b", np.array([1, n, n, g, g, c], np.int64)),
             const("s4", np.array([1, h, h, c], np.int64))]
    last = "m"
    if crop:
        nodes += [node("Slice", ["m", "zero", "hh", "one"], ["c1"], "crop_h"),
                  node("Slice", ["c1", "zero", "hh", "two"], ["c2"], "crop_w")]
        inits += [const("zero", np.array([0], np.int64)), const("hh", np.array([h], np.int64)),
                  const("one", np.array([1], np.int64)), const("two", np.array([2], np.int64))]
        last = "c2"
    nodes.append(node("Transpose", [last], ["y"], "to_nchw", perm=[0, 3, 1, 2]))
    return graph("cw", (1, c, h, h), nodes, inits)


for _crop in (False, True):
    for _conv in (True, False):
        CASES[f"convwin_{int(_crop)}{int(_conv)}_64_14_7"] = (lambda cr=_crop, cv=_conv: conv_windows(64, 14, 7, cr, cv))


def _sweep() -> dict[str, Callable[[], onnx.ModelProto]]:
    """Common op variants, one per case, between two Convs on [1,16,8,8] (no model family in mind): compared
    with edgeplan's verdicts by `--out DIR` and benchmarks-free `python tools/compare_probe.py DIR`."""
    c, h, w = 16, 8, 8
    x = (1, c, h, w)

    def one(op: str, inits: list[onnx.TensorProto] | None = None, inputs: list[str] | None = None,
            **kw: object) -> Callable[[], onnx.ModelProto]:
        return lambda: graph(op.lower(), x, [node(op, inputs or ["x"], ["y"], "n", **kw)], inits or [])

    def chain(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], tail: int | None = 8,
              shape: tuple[int, ...] = x) -> Callable[[], onnx.ModelProto]:
        return lambda: graph("chain", shape, nodes, inits, tail=tail)

    i64 = np.int64
    return {
        "sw_softmax_c": one("Softmax", axis=1),
        "sw_softmax_w": one("Softmax", axis=3),
        "sw_logsoftmax_c": one("LogSoftmax", axis=1),
        "sw_reducemean_hw": one("ReduceMean", axes=[2, 3], keepdims=1),
        "sw_reducemean_c": chain([node("ReduceMean", ["x"], ["m"], "n", axes=[1], keepdims=1),
                                  node("Mul", ["x", "m"], ["y"], "scale")], []),
        "sw_reducemax_c": chain([node("ReduceMax", ["x"], ["m"], "n", axes=[1], keepdims=1),
                                 node("Mul", ["x", "m"], ["y"], "scale")], []),
        "sw_maxpool_ceil": one("MaxPool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        "sw_maxpool_5s1": one("MaxPool", kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]),
        "sw_avgpool_3s1": one("AveragePool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                              count_include_pad=1),
        "sw_avgpool_ceil": one("AveragePool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        "sw_deconv_2s2": one("ConvTranspose", [weight("wt", (c, c, 2, 2))], ["x", "wt"], strides=[2, 2]),
        "sw_deconv_4s2p1": one("ConvTranspose", [weight("wt", (c, c, 4, 4))], ["x", "wt"], strides=[2, 2],
                               pads=[1, 1, 1, 1]),
        "sw_deconv_3s2p1op1": one("ConvTranspose", [weight("wt", (c, c, 3, 3))], ["x", "wt"], strides=[2, 2],
                                  pads=[1, 1, 1, 1], output_padding=[1, 1]),
        "sw_deconv_dw": one("ConvTranspose", [weight("wt", (c, 1, 2, 2))], ["x", "wt"], strides=[2, 2], group=c),
        "sw_conv_group4": one("Conv", [weight("wc", (c, 4, 3, 3))], ["x", "wc"], group=4, pads=[1, 1, 1, 1]),
        "sw_conv_dil2": one("Conv", [weight("wc", (c, c, 3, 3))], ["x", "wc"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        "sw_conv_1x7": one("Conv", [weight("wc", (c, c, 1, 7))], ["x", "wc"], pads=[0, 3, 0, 3]),
        "sw_conv_s2_even": one("Conv", [weight("wc", (c, c, 2, 2))], ["x", "wc"], strides=[2, 2]),
        "sw_concat_h": chain([node("Concat", ["x", "x"], ["y"], "n", axis=2)], []),
        "sw_concat_w": chain([node("Concat", ["x", "x"], ["y"], "n", axis=3)], []),
        "sw_split_h": chain([node("Split", ["x", "sp"], ["a", "b"], "n", axis=2),
                             node("Add", ["a", "b"], ["y"], "join")], [const("sp", np.array([4, 4], i64))]),
        "sw_pad_const1": one("Pad", [const("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], i64)),
                                     const("pv", np.array(1.0, np.float32))], ["x", "pd", "pv"], mode="constant"),
        "sw_pad_edge": one("Pad", [const("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], i64))], ["x", "pd"], mode="edge"),
        "sw_pad_asym": one("Pad", [const("pd", np.array([0, 0, 0, 0, 0, 0, 1, 1], i64))], ["x", "pd"]),
        "sw_gather_c": one("Gather", [const("gi", np.array([0, 2, 4, 6, 8, 10, 12, 14], i64))], ["x", "gi"], axis=1),
        "sw_slice_c": one("Slice", [const("st", np.array([4], i64)), const("en", np.array([12], i64)),
                                    const("ax", np.array([1], i64))], ["x", "st", "en", "ax"]),
        "sw_slice_hw": one("Slice", [const("st", np.array([1, 1], i64)), const("en", np.array([7, 7], i64)),
                                     const("ax", np.array([2, 3], i64))], ["x", "st", "en", "ax"]),
        "sw_mul_se": chain([node("GlobalAveragePool", ["x"], ["g"], "gap"), node("Sigmoid", ["g"], ["s"], "sig"),
                            node("Mul", ["x", "s"], ["y"], "n")], []),
        "sw_add_bcast_hw": chain([node("ReduceMean", ["x"], ["m"], "mean", axes=[1], keepdims=1),
                                  node("Add", ["x", "m"], ["y"], "n")], []),
        "sw_expand": chain([node("GlobalAveragePool", ["x"], ["g"], "gap"),
                            node("Expand", ["g", "es"], ["y"], "n")], [const("es", np.array([1, c, h, w], i64))]),
        "sw_tile": one("Tile", [const("tr", np.array([1, 1, 2, 2], i64))], ["x", "tr"]),
        "sw_tile_c2": one("Tile", [const("tr", np.array([1, 2, 1, 1], i64))], ["x", "tr"]),
        "sw_tile_h2": one("Tile", [const("tr", np.array([1, 1, 2, 1], i64))], ["x", "tr"]),
        "sw_tile_w2": one("Tile", [const("tr", np.array([1, 1, 1, 2], i64))], ["x", "tr"]),
        "sw_tile_c2w2": one("Tile", [const("tr", np.array([1, 2, 1, 2], i64))], ["x", "tr"]),
        "sw_tile_tokens": chain([node("Reshape", ["x", "s3"], ["r"], "flat"),
                                 node("Tile", ["r", "tr"], ["t"], "n"),
                                 node("Reshape", ["t", "s4"], ["y"], "back")],
                                [const("s3", np.array([1, c, h * w], i64)), const("tr", np.array([1, 2, 1], i64)),
                                 const("s4", np.array([1, 2 * c, h, w], i64))]),
        "sw_argmax_c": chain([node("ArgMax", ["x"], ["y"], "n", axis=1, keepdims=1)], [], tail=None),
        "sw_clip6": one("Clip", [const("lo", np.array(0.0, np.float32)), const("hi", np.array(6.0, np.float32))],
                        ["x", "lo", "hi"]),
        "sw_exp": one("Exp"),
        "sw_log": chain([node("Relu", ["x"], ["r"], "relu"), node("Add", ["r", "one"], ["p"], "plus1"),
                         node("Log", ["p"], ["y"], "n")], [const("one", np.array(1.0, np.float32))]),
        "sw_pow2": one("Pow", [const("e", np.array(2.0, np.float32))], ["x", "e"]),
        "sw_reciprocal": chain([node("Sigmoid", ["x"], ["s"], "sig"), node("Add", ["s", "one"], ["p"], "plus1"),
                                node("Reciprocal", ["p"], ["y"], "n")], [const("one", np.array(1.0, np.float32))]),
        "sw_resize_bilinear_x4": one("Resize", [const("sc", np.array([1, 1, 4, 4], np.float32))], ["x", "", "sc"],
                                     mode="linear", coordinate_transformation_mode="half_pixel"),
        "sw_resize_nearest_x8": one("Resize", [const("sc", np.array([1, 1, 8, 8], np.float32))], ["x", "", "sc"],
                                    mode="nearest"),
        "sw_resize_bilinear_down": one("Resize", [const("sc", np.array([1, 1, 0.5, 0.5], np.float32))],
                                       ["x", "", "sc"], mode="linear"),
        "sw_resize_bilinear_8to2": one("Resize", [const("sz", np.array([1, c, 2, 2], i64))], ["x", "", "", "sz"],
                                       mode="linear"),
        "sw_resize_bilinear_8to3": one("Resize", [const("sz", np.array([1, c, 3, 3], i64))], ["x", "", "", "sz"],
                                       mode="linear"),
        "sw_resize_bilinear_8to5": one("Resize", [const("sz", np.array([1, c, 5, 5], i64))], ["x", "", "", "sz"],
                                       mode="linear"),
        "sw_resize_bilinear_8to6": one("Resize", [const("sz", np.array([1, c, 6, 6], i64))], ["x", "", "", "sz"],
                                       mode="linear"),
        "sw_resize_bilinear_8to12": one("Resize", [const("sz", np.array([1, c, 12, 12], i64))], ["x", "", "", "sz"],
                                        mode="linear"),
        "sw_resize_bilinear_8to4x16": one("Resize", [const("sz", np.array([1, c, 4, 16], i64))], ["x", "", "", "sz"],
                                          mode="linear"),
        "sw_resize_nearest_down": one("Resize", [const("sc", np.array([1, 1, 0.5, 0.5], np.float32))],
                                      ["x", "", "sc"], mode="nearest"),
        "sw_transpose_out3": chain([node("Reshape", ["x", "s3"], ["r"], "flat"),
                                    node("Transpose", ["r"], ["y"], "n", perm=[0, 2, 1])],
                                   [const("s3", np.array([1, c, h * w], i64))], tail=None),
        "sw_softmax_dfl": chain([node("Reshape", ["x", "s4"], ["r"], "rs"),
                                 node("Transpose", ["r"], ["t"], "tp", perm=[0, 2, 1, 3]),
                                 node("Softmax", ["t"], ["sm"], "n", axis=1),
                                 node("Reshape", ["sm", "sb"], ["y"], "back")],
                                [const("s4", np.array([1, 4, 4, h * w], i64)),
                                 const("sb", np.array([1, c, h, w], i64))]),
        "sw_lrn": one("LRN", size=5),
        "sw_instnorm": one("InstanceNormalization", [const("isc", np.ones(c, np.float32)),
                                                     const("ibi", np.zeros(c, np.float32))], ["x", "isc", "ibi"]),
        "sw_sub_rev": one("Sub", [const("k", np.array(1.0, np.float32))], ["k", "x"]),
        "sw_min": chain([node("Relu", ["x"], ["r"], "relu"), node("Min", ["x", "r"], ["y"], "n")], []),
        "sw_equal_where": chain([node("Greater", ["x", "z"], ["g"], "gt"),
                                 node("Where", ["g", "x", "z"], ["y"], "n")], [const("z", np.array(0.0, np.float32))]),
        "sw_depthtospace": chain([node("DepthToSpace", ["x"], ["y"], "n", blocksize=2)], []),
        "sw_spacetodepth": chain([node("SpaceToDepth", ["x"], ["y"], "n", blocksize=2)], []),
        "sw_conv1d": lambda: graph("c1", (1, c, 16), [node("Conv", ["x", "wc"], ["y"], "n", pads=[1, 1])],
                                   [weight("wc", (c, c, 3))], tail=None),
        "sw_gemm_rank2_out": chain([node("GlobalAveragePool", ["x"], ["g"], "gap"),
                                    node("Flatten", ["g"], ["f"], "flat", axis=1),
                                    node("Gemm", ["f", "gw"], ["y"], "n", transB=1)],
                                   [weight("gw", (24, c))], tail=None),
        "sw_matmul_tokens": chain([node("Reshape", ["x", "s3"], ["r"], "flat"),
                                   node("Transpose", ["r"], ["t"], "tok", perm=[0, 2, 1]),
                                   node("MatMul", ["t", "mw"], ["y"], "n")],
                                  [const("s3", np.array([1, c, h * w], i64)), weight("mw", (c, 24))], tail=None),
        "sw_hardswish": one("HardSwish"),
        "sw_gelu_erf": chain([node("Div", ["x", "sq2"], ["d"], "div"), node("Erf", ["d"], ["e"], "erf"),
                              node("Add", ["e", "one"], ["a"], "add"), node("Mul", ["x", "a"], ["m"], "mul"),
                              node("Mul", ["m", "half"], ["y"], "n")],
                             [const("sq2", np.array(1.4142135, np.float32)), const("one", np.array(1.0, np.float32)),
                              const("half", np.array(0.5, np.float32))]),
    }


def _sweep_b() -> dict[str, Callable[[], onnx.ModelProto]]:
    """More op variants (layout ops, reductions, pooling, convolution and element-wise forms), as _sweep."""
    c, h, w = 16, 8, 8
    x = (1, c, h, w)
    i64, f32 = np.int64, np.float32

    def one(op: str, inits: list[onnx.TensorProto] | None = None, inputs: list[str] | None = None,
            shape: tuple[int, ...] = x, tail: int | None = 8, **kw: object) -> Callable[[], onnx.ModelProto]:
        return lambda: graph(op.lower(), shape, [node(op, inputs or ["x"], ["y"], "n", **kw)], inits or [], tail=tail)

    def chain(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], tail: int | None = 8,
              shape: tuple[int, ...] = x) -> Callable[[], onnx.ModelProto]:
        return lambda: graph("chain", shape, nodes, inits, tail=tail)

    tokens = [node("Reshape", ["x", "s3"], ["r"], "flat"), node("Transpose", ["r"], ["t"], "tok", perm=[0, 2, 1])]
    tok_init = [const("s3", np.array([1, c, h * w], i64))]
    return {
        "sb_concat_c3": chain([node("Split", ["x", "sp"], ["a", "b"], "split", axis=1),
                               node("Concat", ["a", "x", "b"], ["y"], "n", axis=1)], [const("sp", np.array([3, 13], i64))]),
        "sb_concat_tokens_cls": chain([*tokens, node("Concat", ["cls", "t"], ["y"], "n", axis=1)],
                                      [*tok_init, weight("cls", (1, 1, c))], tail=None),
        "sb_gather_cls": chain([*tokens, node("Gather", ["t", "zero"], ["y"], "n", axis=1)],
                               [*tok_init, const("zero", np.array(0, i64))], tail=None),
        "sb_slice_tokens": chain([*tokens, node("Slice", ["t", "st", "en", "ax"], ["y"], "n")],
                                 [*tok_init, const("st", np.array([1], i64)), const("en", np.array([h * w], i64)),
                                  const("ax", np.array([1], i64))], tail=None),
        "sb_slice_c_odd": one("Slice", [const("st", np.array([3], i64)), const("en", np.array([11], i64)),
                                        const("ax", np.array([1], i64))], ["x", "st", "en", "ax"]),
        "sb_softmax_tokens": chain([*tokens, node("Softmax", ["t"], ["y"], "n", axis=1)], tok_init, tail=None),
        "sb_softmax_out2": chain([node("GlobalAveragePool", ["x"], ["g"], "gap"),
                                  node("Flatten", ["g"], ["f"], "flat", axis=1),
                                  node("Softmax", ["f"], ["y"], "n", axis=1)], [], tail=None),
        "sb_sigmoid_out3": chain([node("Reshape", ["x", "s3"], ["r"], "flat"), node("Sigmoid", ["r"], ["y"], "n")],
                                 tok_init, tail=None),
        "sb_transpose_nhwc_out": chain([node("Transpose", ["x"], ["y"], "n", perm=[0, 2, 3, 1])], [], tail=None),
        "sb_transpose_hw": chain([node("Transpose", ["x"], ["y"], "n", perm=[0, 1, 3, 2])], []),
        "sb_transpose_nhwc_mid": chain([node("Transpose", ["x"], ["t"], "n", perm=[0, 2, 3, 1]),
                                        node("Relu", ["t"], ["r"], "act"),
                                        node("Transpose", ["r"], ["y"], "back", perm=[0, 3, 1, 2])], []),
        "sb_reshape_c_split": chain([node("Reshape", ["x", "s4"], ["y"], "n")],
                                    [const("s4", np.array([1, 4, 16, 16], i64))]),
        "sb_shuffle": chain([node("Reshape", ["x", "s5"], ["r"], "rs5"),
                             node("Transpose", ["r"], ["t"], "n", perm=[0, 2, 1, 3, 4]),
                             node("Reshape", ["t", "s4"], ["y"], "back")],
                            [const("s5", np.array([1, 2, 8, h, w], i64)), const("s4", np.array([1, c, h, w], i64))]),
        "sb_reducesum_c": chain([node("ReduceSum", ["x", "ax"], ["m"], "n", keepdims=1),
                                 node("Mul", ["x", "m"], ["y"], "scale")], [const("ax", np.array([1], i64))]),
        "sb_reducemean_w": chain([node("ReduceMean", ["x"], ["m"], "n", axes=[3], keepdims=1),
                                  node("Mul", ["x", "m"], ["y"], "scale")], []),
        "sb_reducel2_c": chain([node("ReduceL2", ["x"], ["m"], "n", axes=[1], keepdims=1),
                                node("Mul", ["x", "m"], ["y"], "scale")], []),
        "sb_globalmaxpool": chain([node("GlobalMaxPool", ["x"], ["g"], "n"), node("Mul", ["x", "g"], ["y"], "scale")], []),
        "sb_avgpool_7s1": one("AveragePool", kernel_shape=[7, 7], strides=[1, 1]),
        "sb_maxpool_odd": lambda: graph("mp", (1, c, 9, 9), [node("MaxPool", ["x"], ["y"], "n", kernel_shape=[2, 2],
                                                                  strides=[2, 2])], []),
        "sb_maxpool_k2s1": one("MaxPool", kernel_shape=[2, 2], strides=[1, 1]),
        "sb_conv_11s4": lambda: graph("cv", (1, 3, 32, 32), [node("Conv", ["x", "wc"], ["y"], "n", strides=[4, 4],
                                                                   pads=[2, 2, 2, 2])], [weight("wc", (16, 3, 11, 11))]),
        "sb_conv_5s2": one("Conv", [weight("wc", (c, c, 5, 5))], ["x", "wc"], strides=[2, 2], pads=[2, 2, 2, 2]),
        "sb_conv_group_odd": lambda: graph("cg", (1, 12, h, w), [node("Conv", ["x", "wc"], ["y"], "n", group=3,
                                                                       pads=[1, 1, 1, 1])], [weight("wc", (12, 4, 3, 3))]),
        "sb_conv_asym_pad": one("Conv", [weight("wc", (c, c, 3, 3))], ["x", "wc"], strides=[2, 2], pads=[0, 0, 1, 1]),
        "sb_deconv_k3s1": one("ConvTranspose", [weight("wt", (c, c, 3, 3))], ["x", "wt"], pads=[1, 1, 1, 1]),
        "sb_deconv_group2": one("ConvTranspose", [weight("wt", (c, c // 2, 2, 2))], ["x", "wt"], strides=[2, 2],
                                group=2),
        "sb_pad_reflect3": one("Pad", [const("pd", np.array([0, 0, 3, 3, 0, 0, 3, 3], i64))], ["x", "pd"],
                               mode="reflect"),
        "sb_pad_channel": one("Pad", [const("pd", np.array([0, 0, 0, 0, 0, 8, 0, 0], i64))], ["x", "pd"]),
        "sb_resize_nearest_8to3": one("Resize", [const("sz", np.array([1, c, 3, 3], i64))], ["x", "", "", "sz"],
                                      mode="nearest"),
        "sb_resize_nearest_8to12": one("Resize", [const("sz", np.array([1, c, 12, 12], i64))], ["x", "", "", "sz"],
                                       mode="nearest"),
        "sb_resize_nearest_ac": one("Resize", [const("sc", np.array([1, 1, 2, 2], f32))], ["x", "", "sc"],
                                    mode="nearest", coordinate_transformation_mode="align_corners"),
        "sb_resize_linear_half_x2_tf": one("Resize", [const("sc", np.array([1, 1, 2, 2], f32))], ["x", "", "sc"],
                                           mode="linear", coordinate_transformation_mode="tf_half_pixel_for_nn"),
        "sb_cast_int": chain([node("Cast", ["x"], ["i"], "n", to=TensorProto.INT32),
                              node("Cast", ["i"], ["y"], "back", to=TensorProto.FLOAT)], []),
        "sb_floor": one("Floor"),
        "sb_round": one("Round"),
        "sb_neg_abs": chain([node("Neg", ["x"], ["m"], "n"), node("Abs", ["m"], ["y"], "abs")], []),
        "sb_clip_min": one("Clip", [const("lo", np.array(0.0, f32))], ["x", "lo"]),
        "sb_clip_pm1": one("Clip", [const("lo", np.array(-1.0, f32)), const("hi", np.array(1.0, f32))],
                           ["x", "lo", "hi"]),
        "sb_prelu_c": one("PRelu", [const("sl", np.full((c, 1, 1), 0.1, f32))], ["x", "sl"]),
        "sb_selu": one("Selu"),
        "sb_celu": one("Celu"),
        "sb_softsign": one("Softsign"),
        "sb_max2": chain([node("Sigmoid", ["x"], ["s"], "sig"), node("Max", ["x", "s"], ["y"], "n")], []),
        "sb_sum3": chain([node("Sigmoid", ["x"], ["s"], "sig"), node("Sum", ["x", "s", "x"], ["y"], "n")], []),
        "sb_matmul_lastaxis": chain([node("MatMul", ["x", "mw"], ["y"], "n")], [weight("mw", (w, w))]),
        "sb_gemm_transb0": chain([node("GlobalAveragePool", ["x"], ["g"], "gap"),
                                  node("Flatten", ["g"], ["f"], "flat", axis=1),
                                  node("Gemm", ["f", "gw"], ["y"], "n")], [weight("gw", (c, 24))], tail=None),
        "sb_mul_const_tokens": chain([*tokens, node("Mul", ["t", "gam"], ["y"], "n")],
                                     [*tok_init, const("gam", np.full((c,), 0.5, f32))], tail=None),
        "sb_div_const": one("Div", [const("k", np.array(6.0, f32))], ["x", "k"]),
        "sb_flatten_axis2": chain([node("Flatten", ["x"], ["y"], "n", axis=2)], [], tail=None),
        "sb_batchnorm_lone": chain([node("Add", ["x", "x"], ["a"], "add"),
                                    node("BatchNormalization", ["a", "bs", "bb", "bm", "bv"], ["y"], "n")],
                                   [const("bs", np.ones(c, f32)), const("bb", np.zeros(c, f32)),
                                    const("bm", np.zeros(c, f32)), const("bv", np.ones(c, f32))]),
    }


def _sweep_c() -> dict[str, Callable[[], onnx.ModelProto]]:
    """Graph outputs of rank 2 to 4 and rank-3 [1, C, N] tensors (maps flattened to rows) with element-wise,
    concat, split and softmax steps, at aligned and unaligned sizes."""
    i64, f32 = np.int64, np.float32
    cases: dict[str, Callable[[], onnx.ModelProto]] = {}

    def rows(c: int, hw: tuple[int, int], body: Callable[[str], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]],
             ) -> Callable[[], onnx.ModelProto]:
        def make() -> onnx.ModelProto:
            nodes, inits = body("r")
            return graph("rows", (1, c, *hw), [node("Reshape", ["x", "s3"], ["r"], "flat"), *nodes],
                         [const("s3", np.array([1, c, hw[0] * hw[1]], i64)), *inits], tail=None)
        return make

    for c in (3, 8, 17, 64):
        for hw in ((8, 8), (10, 10), (6, 6), (8, 10)):
            tag = f"{c}_{hw[0]}x{hw[1]}"
            cases[f"sc_out3_{tag}"] = rows(c, hw, lambda r: ([node("Sigmoid", [r], ["y"], "n")], []))
            cases[f"sc_out3t_{tag}"] = rows(c, hw, lambda r: ([node("Transpose", [r], ["y"], "n", perm=[0, 2, 1])], []))
    cases["sc_rows_mul_bcast"] = rows(16, (10, 10), lambda r: (
        [node("Mul", [r, "anch"], ["m"], "n"), node("Sigmoid", ["m"], ["y"], "out")],
        [const("anch", np.full((1, 1, 100), 2.0, f32))]))
    cases["sc_rows_concat2"] = rows(16, (10, 10), lambda r: (
        [node("Slice", [r, "st", "en", "ax"], ["a"], "half"), node("Concat", [r, "a"], ["m"], "n", axis=2),
         node("Sigmoid", ["m"], ["y"], "out")],
        [const("st", np.array([0], i64)), const("en", np.array([36], i64)), const("ax", np.array([2], i64))]))
    cases["sc_rows_split1"] = rows(20, (8, 8), lambda r: (
        [node("Split", [r, "sp"], ["a", "b"], "n", axis=1), node("Sigmoid", ["b"], ["sb"], "sig"),
         node("Concat", ["a", "sb"], ["y"], "out", axis=1)],
        [const("sp", np.array([4, 16], i64))]))
    cases["sc_rows_softmax1"] = rows(16, (10, 10), lambda r: ([node("Softmax", [r], ["y"], "n", axis=1)], []))
    cases["sc_rows_softmax2"] = rows(16, (10, 10), lambda r: ([node("Softmax", [r], ["y"], "n", axis=2)], []))
    cases["sc_rows_reshape4"] = rows(64, (10, 10), lambda r: (
        [node("Reshape", [r, "s4"], ["m"], "n"), node("Softmax", ["m"], ["y"], "out", axis=2)],
        [const("s4", np.array([1, 4, 16, 100], i64))]))
    for c in (10, 24, 1000):
        cases[f"sc_out2_{c}"] = (lambda c=c: graph("o2", (1, 16, 4, 4), [
            node("GlobalAveragePool", ["x"], ["g"], "gap"), node("Flatten", ["g"], ["f"], "flat", axis=1),
            node("Gemm", ["f", "gw"], ["y"], "n", transB=1)], [weight("gw", (c, 16))], tail=None))
    for c in (3, 17, 32):
        cases[f"sc_out4_{c}"] = (lambda c=c: graph("o4", (1, 16, 8, 8), [
            node("Conv", ["x", "wc"], ["y"], "n")], [weight("wc", (c, 16, 1, 1))], tail=None))
    return cases


def _sweep_d() -> dict[str, Callable[[], onnx.ModelProto]]:
    """Layout ops on maps whose H*W is not a whole number of 16-byte groups (7x7, 10x10, 5x5)."""
    i64 = np.int64
    cases: dict[str, Callable[[], onnx.ModelProto]] = {}
    for h in (7, 10, 5):
        x = (1, 16, h, h)
        cases[f"sd_concat_c_{h}"] = (lambda x=x: graph("cc", x, [node("Sigmoid", ["x"], ["s"], "sig"),
                                                                 node("Concat", ["x", "s"], ["y"], "n", axis=1)], []))
        cases[f"sd_split_c_{h}"] = (lambda x=x: graph("sc", x, [
            node("Split", ["x", "sp"], ["a", "b"], "n", axis=1), node("Sigmoid", ["b"], ["sb"], "sig"),
            node("Mul", ["a", "sb"], ["y"], "mul")], [const("sp", np.array([8, 8], i64))]))
        cases[f"sd_slice_c_{h}"] = (lambda x=x: graph("sl", x, [
            node("Slice", ["x", "st", "en", "ax"], ["y"], "n")],
            [const("st", np.array([0], i64)), const("en", np.array([6], i64)), const("ax", np.array([1], i64))]))
        cases[f"sd_resize_up_{h}"] = (lambda x=x: graph("ru", x, [
            node("Resize", ["x", "", "sc"], ["y"], "n", mode="nearest")], [const("sc", np.array([1, 1, 2, 2], np.float32))]))
        cases[f"sd_softmax_c_{h}"] = (lambda x=x: graph("sm", x, [node("Softmax", ["x"], ["y"], "n", axis=1)], []))
        cases[f"sd_transpose_hw_{h}"] = (lambda x=x: graph("th", x, [node("Transpose", ["x"], ["y"], "n",
                                                                          perm=[0, 1, 3, 2])], []))
        cases[f"sd_reshape_c_{h}"] = (lambda x=x, h=h: graph("rc", x, [node("Reshape", ["x", "s"], ["y"], "n")],
                                                             [const("s", np.array([1, 4, 4 * h, h], i64))]))
        cases[f"sd_maxpool_{h}"] = (lambda x=x: graph("mp", x, [node("MaxPool", ["x"], ["y"], "n", kernel_shape=[3, 3],
                                                                     pads=[1, 1, 1, 1])], []))
        cases[f"sd_gap_mul_{h}"] = (lambda x=x: graph("gm", x, [node("GlobalAveragePool", ["x"], ["g"], "gap"),
                                                                node("Mul", ["x", "g"], ["y"], "n")], []))
    return cases


def reduce_last(c: int, h: int, w: int) -> onnx.ModelProto:
    """MobileViT-v2 linear attention's context sum: Conv [1,C,H,W] -> ReduceSum over W (keepdims) -> Mul -> Conv."""
    return graph("rl", (1, c, h, w), [node("ReduceSum", ["x", "ax"], ["m"], "n", keepdims=1),
                                      node("Mul", ["x", "m"], ["y"], "scale")], [const("ax", np.array([3], np.int64))])


for _c, _h, _w in ((64, 4, 196), (32, 4, 196), (64, 4, 98), (64, 4, 256), (128, 4, 64), (96, 4, 49), (64, 2, 196),
                   (16, 4, 196), (128, 4, 196), (64, 4, 128), (64, 4, 160), (64, 4, 144), (64, 8, 80), (64, 1, 784),
                   (64, 4, 136), (64, 16, 49), (64, 28, 28), (64, 12, 49), (64, 8, 81), (64, 20, 28), (64, 2, 300),
                   (64, 3, 200), (64, 1, 1024), (64, 7, 77), (64, 16, 64), (64, 32, 32), (64, 16, 40), (64, 8, 128)):
    CASES[f"reducew_{_c}_{_h}_{_w}"] = (lambda c=_c, h=_h, w=_w: reduce_last(c, h, w))
    CASE_SOCS[f"reducew_{_c}_{_h}_{_w}"] = "rk3576,rv1126b,rk3588"


CASES.update(_sweep())
CASES.update(_sweep_d())
CASES.update(_sweep_c())
CASES.update(_sweep_b())
for _label, _shape, _axis in (("r5a1", (1, 2, 16, 8, 8), 1), ("r5a2", (1, 2, 16, 8, 8), 2),
                              ("r5a4", (1, 2, 16, 8, 8), 4), ("r4a1", (1, 32, 8, 8), 1),
                              ("r4a2", (1, 32, 8, 8), 2), ("r4a3", (1, 32, 8, 8), 3),
                              ("r6a3", (1, 2, 4, 4, 8, 8), 3)):
    CASES[f"reducemax_{_label}"] = (lambda s=_shape, a=_axis: reduce_max(s, a))
    CASE_SOCS[f"reducemax_{_label}"] = "rk3576,rv1126b"


EINSUM_FORMS = {
    "plain": lambda a, b, o: f"{a},{b}->{o}",
    "torch": lambda a, b, o: f"{' '.join(a.upper())}, {' '.join(b.upper())} -> {' '.join(o.upper())}",
    "upper": lambda a, b, o: f"{a.upper()},{b.upper()}->{o.upper()}",
    "lowsp": lambda a, b, o: f"{' '.join(a)}, {' '.join(b)} -> {' '.join(o)}",
    "comma": lambda a, b, o: f"{a}, {b}->{o}",
    "arrow": lambda a, b, o: f"{a},{b} -> {o}",
    "arrowl": lambda a, b, o: f"{a},{b} ->{o}",
    "arrowr": lambda a, b, o: f"{a},{b}-> {o}",
    "inner": lambda a, b, o: f"{' '.join(a)},{' '.join(b)}->{' '.join(o)}",
    "innera": lambda a, b, o: f"{' '.join(a)},{b}->{o}",
    "innero": lambda a, b, o: f"{a},{b}->{' '.join(o)}",
    "innerb": lambda a, b, o: f"{a},{' '.join(b)}->{o}",
    "onesp": lambda a, b, o: f"{a[:-1]} {a[-1]},{b}->{o}",
    "tab": lambda a, b, o: f"{a},{b}->\t{o}",
    "sp1front": lambda a, b, o: f"{a[0]} {a[1:]},{b}->{o}",
    "sp2a": lambda a, b, o: f"{a[:-2]} {a[-2]} {a[-1]},{b}->{o}",
    "sp1b": lambda a, b, o: f"{a},{b[:-1]} {b[-1]}->{o}",
    "sp1ab": lambda a, b, o: f"{a[:-1]} {a[-1]},{b[:-1]} {b[-1]}->{o}",
    "sp1all": lambda a, b, o: f"{a[:-1]} {a[-1]},{b[:-1]} {b[-1]}->{o[:-1]} {o[-1]}",
    "lead2": lambda a, b, o: f"  {a},{b}->{o}",
    "comma2": lambda a, b, o: f"{a},  {b}->{o}",
    "commaarrow": lambda a, b, o: f"{a}, {b} -> {o}",
    "trail2a": lambda a, b, o: f"{a}  ,{b}->{o}",
    "ellip1": lambda a, b, o: f"...{a[-2]} {a[-1]},...{b[-2:]}->...{o[-2:]}",
    "lead": lambda a, b, o: f" {a},{b}->{o}",
    "trail": lambda a, b, o: f"{a},{b}->{o} ",
    "ellip": lambda a, b, o: f"...{a[-2:]},...{b[-2:]}->...{o[-2:]}",
    "ellipsp": lambda a, b, o: f"... {' '.join(a[-2:])}, ... {' '.join(b[-2:])} -> ... {' '.join(o[-2:])}",
}


def einsum_pair(terms: tuple[str, str, str], q_shape: tuple[int, ...], form: str, const_b: bool = False,
                c: int = 32, h: int = 8) -> onnx.ModelProto:
    """Conv [1,C,H,H] -> Reshape q_shape -> Einsum(q, q or a constant) written in `form` (EINSUM_FORMS: the
    same contraction with or without spaces, upper case, ellipsis) -> Reshape to a map -> Conv: a contraction
    of two activations (exMatMul when the toolkit's Einsum rewrite takes it)."""
    eq = EINSUM_FORMS[form](*terms)
    b_shape = tuple(q_shape)
    out_numel = int(np.einsum(f"{terms[0]},{terms[1]}->{terms[2]}", np.zeros(q_shape), np.zeros(b_shape)).size)
    nodes = [node("Reshape", ["x", "s1"], ["q"], "split"),
             node("Einsum", ["q", "kc" if const_b else "q"], ["sc"], "ein", equation=eq),
             node("Reshape", ["sc", "s2"], ["y"], "merge")]
    inits = [const("s1", np.array(q_shape, np.int64)),
             const("s2", np.array([1, out_numel // (h * h), h, h], np.int64))]
    if const_b:
        inits.append(weight("kc", b_shape))
    return graph("einp", (1, c, h, h), nodes, inits)


_EIN_TERMS = {5: ("bghid", "bghjd", "bghij"), 4: ("bhid", "bhjd", "bhij"), 3: ("bid", "bjd", "bij")}
_EIN_SHAPES = {5: (1, 2, 2, 64, 8), 4: (1, 4, 64, 8), 3: (4, 64, 8)}
for _form in EINSUM_FORMS:
    CASES[f"einform_5_{_form}"] = partial(einsum_pair, _EIN_TERMS[5], _EIN_SHAPES[5], _form)
for _rank in (4, 3):
    for _form in ("plain", "torch", "lowsp", "comma", "arrow"):
        CASES[f"einform_{_rank}_{_form}"] = partial(einsum_pair, _EIN_TERMS[_rank], _EIN_SHAPES[_rank], _form)
CASES["eindiag_4_plain"] = lambda: einsum_pair(("bhii", "bhij", "bhij"), (1, 4, 8, 8), "plain")
CASES["eindiag_4_torch"] = lambda: einsum_pair(("bhii", "bhij", "bhij"), (1, 4, 8, 8), "torch")
for _form in ("plain", "torch", "arrow"):
    CASES[f"einconst_4_{_form}"] = partial(einsum_pair, _EIN_TERMS[4], _EIN_SHAPES[4], _form, const_b=True)


def einsum_attention(form: str, form_pv: str | None = None, rank: int = 5, groups: int = 4, heads: int = 2,
                     n: int = 49, d: int = 16) -> onnx.ModelProto:
    """MaxViT's attention as torchvision writes it: tokens [1,G,N,3*H*D] -> q/k/v Slices -> Reshape
    [1,G,N,H,D] -> Transpose (0,1,3,2,4) -> Einsum q.k (scaled k) -> Softmax -> Einsum p.v -> Transpose back ->
    Reshape [1,G,N,H*D] -> MatMul; q.k written in `form`, p.v in `form_pv` (default the same; torchvision:
    'B G H I D, B G H J D -> B G H I J'). rank 4 folds the groups into the batch: [G,N,H,D] and 'bhid' terms."""
    c = heads * d
    side = math.isqrt(groups * n)
    lead = [1, groups] if rank == 5 else [groups]
    nodes = [node("Reshape", ["x", "tok"], ["t"], "to_tokens"),
             node("MatMul", ["t", "wqkv"], ["qkv"], "to_qkv")]
    inits = [const("tok", np.array([*lead, n, c], np.int64)), weight("wqkv", (c, 3 * c)),
             const("hs", np.array([*lead, n, heads, d], np.int64)), const("scale", np.array(0.25, np.float32)),
             const("ax", np.array([rank - 2], np.int64)), weight("wo", (c, c)),
             const("back", np.array([1, c, side, side], np.int64))]
    perm = [0, 1, 3, 2, 4] if rank == 5 else [0, 2, 1, 3]
    for k, part in enumerate("qkv"):
        inits += [const(f"b{k}", np.array([k * c], np.int64)), const(f"e{k}", np.array([(k + 1) * c], np.int64))]
        nodes += [node("Slice", ["qkv", f"b{k}", f"e{k}", "ax"], [f"{part}s"], f"slice_{part}"),
                  node("Reshape", [f"{part}s", "hs"], [f"{part}r"], f"heads_{part}"),
                  node("Transpose", [f"{part}r"], [f"{part}t"], f"tp_{part}", perm=perm)]
    g = "g" if rank == 5 else ""
    nodes += [node("Mul", ["kt", "scale"], ["kscaled"], "scale_k"),
              node("Einsum", ["qt", "kscaled"], ["sc"], "ein_qk",
                   equation=EINSUM_FORMS[form](f"b{g}hid", f"b{g}hjd", f"b{g}hij")),
              node("Softmax", ["sc"], ["p"], "softmax", axis=-1),
              node("Einsum", ["p", "vt"], ["o"], "ein_pv",
                   equation=EINSUM_FORMS[form_pv or form](f"b{g}hij", f"b{g}hjd", f"b{g}hid")),
              node("Transpose", ["o"], ["ot"], "tp_out", perm=perm),
              node("Reshape", ["ot", "tok"], ["om"], "merge_heads"),
              node("MatMul", ["om", "wo"], ["proj"], "proj"),
              node("Reshape", ["proj", "back"], ["y"], "to_map")]
    return graph("einattn", (1, c, side, side), nodes, inits)


for _form in ("plain", "torch", "arrow", "comma"):
    CASES[f"einattn_{_form}"] = partial(einsum_attention, _form)
for _n, _d, _g in ((64, 16, 4), (48, 16, 3), (40, 16, 10), (49, 16, 4), (36, 16, 4), (64, 24, 4), (64, 12, 4),
                   (56, 16, 14), (50, 16, 2), (25, 16, 4), (44, 16, 11), (45, 16, 5), (42, 16, 42), (63, 16, 7)):
    CASES[f"einho_{_n}_{_d}"] = partial(einsum_attention, "torch", groups=_g, n=_n, d=_d)
    CASE_SOCS[f"einho_{_n}_{_d}"] = "rk3588"
CASES["einattn_qkonly"] = lambda: einsum_attention("torch", "plain")
CASES["einattn_pvonly"] = lambda: einsum_attention("plain", "torch")
CASES["einattn4_plain"] = lambda: einsum_attention("plain", rank=4)
CASES["einattn4_torch"] = lambda: einsum_attention("torch", rank=4)
CASES["einattn4_qkonly"] = lambda: einsum_attention("torch", "plain", rank=4)
CASES["einattn4_pvonly"] = lambda: einsum_attention("plain", "torch", rank=4)


def einsum_unary(terms: tuple[str, str], shape: tuple[int, ...], form: str) -> onnx.ModelProto:
    """Conv -> Reshape `shape` -> one-operand Einsum (a transpose or a reduction) -> Reshape to a map -> Conv."""
    forms: dict[str, Callable[[str, str], str]] = {
        "plain": lambda a, o: f"{a}->{o}", "arrow": lambda a, o: f"{a} -> {o}",
        "torch": lambda a, o: f"{' '.join(a.upper())} -> {' '.join(o.upper())}"}
    spaced = forms[form]
    out = int(np.einsum(f"{terms[0]}->{terms[1]}", np.zeros(shape)).size)
    c, h = 32, 8
    side = 8 if out % 64 == 0 else 1
    return graph("ein1", (1, c, h, h), [
        node("Reshape", ["x", "s1"], ["q"], "split"),
        node("Einsum", ["q"], ["sc"], "ein", equation=spaced(*terms)),
        node("Reshape", ["sc", "s2"], ["y"], "merge"),
    ], [const("s1", np.array(shape, np.int64)), const("s2", np.array([1, out // (side * side), side, side], np.int64))])


def einsum_elementwise(form: str) -> onnx.ModelProto:
    """Conv [1,C,H,W] -> Einsum 'nchw,nchw->nchw' of the map with itself (a product, no contraction) -> Conv."""
    eq = {"plain": "nchw,nchw->nchw", "torch": "N C H W, N C H W -> N C H W"}[form]
    return graph("einew", (1, 32, 8, 8), [node("Einsum", ["x", "x"], ["y"], "ein", equation=eq)], [])


def einsum_three(form: str) -> onnx.ModelProto:
    """Linear attention's three-operand Einsum 'bnhd,bhde,bnh->bnhe' (corpus nn_linear_attention) of activations."""
    eq = {"plain": "bnhd,bhde,bnh->bnhe", "torch": "b n h d, b h d e, b n h -> b n h e"}[form]
    return graph("ein3", (1, 32, 8, 8), [
        node("Reshape", ["x", "s1"], ["q"], "split"),
        node("Einsum", ["q", "q"], ["kv"], "ein_kv", equation="bnhd,bnhe->bhde"),
        node("ReduceSum", ["q", "ax"], ["z"], "zsum", keepdims=0),
        node("Einsum", ["q", "kv", "z"], ["o"], "ein", equation=eq),
        node("Reshape", ["o", "s2"], ["y"], "merge"),
    ], [const("s1", np.array([1, 64, 4, 8], np.int64)), const("ax", np.array([3], np.int64)),
        const("s2", np.array([1, 32, 8, 8], np.int64))])


for _form in ("plain", "torch", "arrow"):
    CASES[f"einone_tp_{_form}"] = partial(einsum_unary, ("bhid", "bhdi"), (1, 4, 64, 8), _form)
    CASES[f"einone_sum_{_form}"] = partial(einsum_unary, ("bhid", "bhi"), (1, 4, 64, 8), _form)
for _form in ("plain", "torch"):
    CASES[f"einew_{_form}"] = partial(einsum_elementwise, _form)
    CASES[f"einthree_{_form}"] = partial(einsum_three, _form)


def tv_windows(c: int, nh: int, p: int) -> onnx.ModelProto:
    """torchvision MaxViT's window partition and departition of an NCHW map [1,C,nh*p,nh*p]: Reshape
    [1,C,nh,p,nh,p] -> Transpose (0,2,4,3,5,1) -> Reshape [1,nh*nh,p*p,C] -> MatMul on the tokens -> Reshape
    [1,nh,nh,p,p,C] -> Transpose (0,5,1,3,2,4) -> Reshape back to the map -> Conv."""
    h = nh * p
    return graph("tvwin", (1, c, h, h), [
        node("Reshape", ["x", "s6"], ["a"], "part_rs"),
        node("Transpose", ["a"], ["b"], "part_tp", perm=[0, 2, 4, 3, 5, 1]),
        node("Reshape", ["b", "tok"], ["t"], "part_rs1"),
        node("MatMul", ["t", "wm"], ["m"], "mix"),
        node("Reshape", ["m", "w6"], ["d"], "depart_rs"),
        node("Transpose", ["d"], ["e"], "depart_tp", perm=[0, 5, 1, 3, 2, 4]),
        node("Reshape", ["e", "back"], ["y"], "depart_rs1"),
    ], [const("s6", np.array([1, c, nh, p, nh, p], np.int64)), const("tok", np.array([1, nh * nh, p * p, c], np.int64)),
        weight("wm", (c, c)), const("w6", np.array([1, nh, nh, p, p, c], np.int64)),
        const("back", np.array([1, c, h, h], np.int64))])


for _c, _nh, _p in ((64, 8, 7), (128, 4, 7), (256, 2, 7), (64, 4, 7), (128, 8, 7), (64, 2, 7), (128, 4, 8),
                    (128, 4, 4), (128, 7, 4), (128, 2, 8), (32, 4, 7), (128, 4, 6), (128, 6, 7), (128, 4, 5)):
    CASES[f"tvwin_{_c}_{_nh}_{_p}"] = partial(tv_windows, _c, _nh, _p)


def channel_pad(c: int, before: int, after: int, h: int = 32, w: int = 8) -> onnx.ModelProto:
    """Conv (C outputs) -> Pad of the channel axis (before, after; zeros) -> Conv: BoTNet's relative-position
    logits, whose [.., 2W-1] last axis the toolkit holds as the channel of a 1x1 convolution, padded to 2W."""
    return graph("cpad", (1, c, h, w), [
        node("Pad", ["x", "pads"], ["y"], "pad"),
    ], [const("pads", np.array([0, before, 0, 0, 0, after, 0, 0], np.int64))])


for _c, _b, _a in ((15, 0, 1), (31, 0, 1), (16, 0, 1), (14, 0, 2), (15, 1, 0), (8, 0, 8), (7, 0, 1), (32, 0, 32),
                   (16, 0, 16), (24, 0, 8)):
    CASES[f"chpad_{_c}_{_b}_{_a}"] = partial(channel_pad, _c, _b, _a)

def transpose5(shape: tuple[int, ...], perm: tuple[int, ...]) -> onnx.ModelProto:
    """Conv [1,C,H,W] -> Reshape to a rank-5 `shape` -> Transpose `perm` -> Reshape back -> Conv: a rank-5
    transpose on its own (BoTNet's relative-position expand uses (0,3,1,4,2))."""
    c = 32
    total = int(np.prod(shape))
    h = next(d for d in range(math.isqrt(total // c), 0, -1) if (total // c) % d == 0)
    return graph("tp5", (1, c, h, total // (c * h)), [
        node("Reshape", ["x", "s5"], ["a"], "to5"),
        node("Transpose", ["a"], ["b"], "tp", perm=list(perm)),
        node("Reshape", ["b", "back"], ["y"], "back"),
    ], [const("s5", np.array(shape, np.int64)), const("back", np.array([1, c, h, total // (c * h)], np.int64))])


for _label, _shape, _perm in (("botnet", (4, 8, 8, 8, 8), (0, 3, 1, 4, 2)), ("swap34", (4, 8, 8, 8, 8), (0, 1, 3, 2, 4)),
                              ("p02143", (4, 8, 8, 8, 8), (0, 2, 1, 4, 3)), ("p20314", (4, 8, 8, 8, 8), (2, 0, 3, 1, 4)),
                              ("p03142b1", (1, 8, 8, 16, 16), (0, 3, 1, 4, 2)), ("p41230", (4, 8, 8, 8, 8), (4, 1, 2, 3, 0)),
                              # HaloNet's block join [C,bs,bs,nb,nb] -> [C,nb,bs,nb,bs] (rank 5, no batch axis)
                              # and the same join with a unit batch in front (MobileViTv2's fold, rank 6)
                              ("halojoin", (32, 8, 8, 2, 2), (0, 3, 1, 4, 2)),
                              ("halojoin_b1", (1, 32, 8, 8, 2, 2), (0, 1, 4, 2, 5, 3)),
                              ("halopart", (32, 2, 8, 2, 8), (0, 2, 4, 1, 3)),
                              ("halopart_b1", (1, 32, 2, 8, 2, 8), (0, 1, 3, 5, 2, 4))):
    CASES[f"tp5_{_label}"] = partial(transpose5, _shape, _perm)

def rel_logits(w: int, d: int = 32, heads: int = 4, pad_to: int = 1) -> onnx.ModelProto:
    """BoTNet's rel_logits_1d (timm): q [heads,W,W,d] (from a map) @ rel [d, 2W-1] -> Reshape [-1,W,2W-1] -> Pad
    the last axis by `pad_to` -> Flatten -> Pad by W-1 -> Reshape [-1,W+1,2W-1] -> Slice [:W, W-1:] -> Reshape
    [heads, W*W, W] ... back to a map. The toolkit holds the 2W-1 axis as a 1x1 convolution's channels."""
    c = heads * d
    r = 2 * w - 1
    rows = heads * w
    return graph("rell", (1, c, w, w), [
        node("Reshape", ["x", "s4"], ["q4"], "heads"),
        node("Transpose", ["q4"], ["q"], "to_tokens", perm=[0, 2, 3, 1]),
        node("MatMul", ["q", "rel"], ["lg"], "logits"),
        node("Reshape", ["lg", "s3"], ["l3"], "rows"),
        node("Pad", ["l3", "p1"], ["lp"], "pad_col"),
        node("Flatten", ["lp"], ["lf"], "flat", axis=1),
        node("Pad", ["lf", "p2"], ["lq"], "pad_flat"),
        node("Reshape", ["lq", "s3b"], ["lr"], "unflat"),
        node("Slice", ["lr", "st", "en", "axs"], ["ls"], "crop"),
        node("Reshape", ["ls", "back"], ["y"], "to_map"),
    ], [const("s4", np.array([heads, d, w, w], np.int64)), weight("rel", (d, r)),
        const("s3", np.array([-1, w, r], np.int64)), const("p1", np.array([0, 0, 0, 0, 0, pad_to], np.int64)),
        const("p2", np.array([0, 0, 0, w - 1], np.int64)),
        const("s3b", np.array([-1, w + 1, r], np.int64)),
        const("st", np.array([0, w - 1], np.int64)), const("en", np.array([w, r], np.int64)),
        const("axs", np.array([1, 2], np.int64)), const("back", np.array([1, rows, w, w], np.int64))])


for _w in (8, 16, 7, 12, 6, 4):
    CASES[f"rellog_{_w}"] = partial(rel_logits, _w)

def pad_rows(h: int, w: int, pad: int, rows: int = 16) -> onnx.ModelProto:
    """HaloNet's/BoTNet's second rel_logits Pad in isolation: Conv map [1,R,H,W] -> Reshape [R, H*W] (rows held
    as the batch, the flattened axis as the channel of a (R,C,1,1) form) -> Sigmoid -> Pad the last axis by
    `pad` -> Sigmoid -> Reshape [1, R, H*W+pad, 1] -> Conv (the Sigmoids keep the Pad out of the Convs: fused
    into one through the Reshapes, the toolkit's constant folding fails on the shapes)."""
    c = h * w
    return graph("padr", (1, rows, h, w), [
        node("Reshape", ["x", "s2"], ["r2"], "to_rows"),
        node("Sigmoid", ["r2"], ["r2s"], "before"),
        node("Pad", ["r2s", "pp"], ["rp"], "pad_rows"),
        node("Sigmoid", ["rp"], ["rps"], "after"),
        node("Reshape", ["rps", "s4"], ["y"], "to_map"),
    ], [const("s2", np.array([rows, c], np.int64)), const("pp", np.array([0, 0, 0, pad], np.int64)),
        const("s4", np.array([1, rows, c + pad, 1], np.int64))])


for _h, _w, _p in ((7, 22, 14), (8, 19, 14), (12, 13, 14), (10, 16, 14), (12, 12, 14), (8, 24, 15), (7, 22, 16),
                   (10, 15, 14), (8, 18, 14), (6, 8, 14), (7, 2, 14)):
    CASES[f"padrows_{_h * _w}_{_p}"] = partial(pad_rows, _h, _w, _p)


def halo_rel_logits(bs: int, win: int, d: int = 24, b: int = 8) -> onnx.ModelProto:
    """HaloNet's rel_logits_1d (timm, as torch.export writes it): q [b,bs,bs,d] (from a map) @ rel [d, 2*win-1]
    -> Reshape [-1,bs,r] -> Pad the last axis by 1 -> Reshape [b*bs, bs*(r+1)] -> Pad by r-bs -> Reshape
    [-1,bs+1,r] -> Slice [:bs, bs-1:] -> Reshape to a map -> Conv. BoTNet's form is win = bs (probe rellog_W);
    the flattened rows are bs*(r+1) = 2*bs*win wide."""
    r = 2 * win - 1
    rows = b * bs
    flat = bs * (r + 1)
    return graph("halorel", (1, b * d, bs, bs), [
        node("Reshape", ["x", "s4"], ["q4"], "heads"),
        node("Transpose", ["q4"], ["q"], "to_tokens", perm=[0, 2, 3, 1]),
        node("MatMul", ["q", "rel"], ["lg"], "logits"),
        node("Reshape", ["lg", "s3"], ["l3"], "rows"),
        node("Pad", ["l3", "p1"], ["lp"], "pad_col"),
        node("Reshape", ["lp", "s2"], ["lf"], "flat"),
        node("Pad", ["lf", "p2"], ["lq"], "pad_flat"),
        node("Reshape", ["lq", "s3b"], ["lr"], "unflat"),
        node("Slice", ["lr", "st", "en", "axs"], ["ls"], "crop"),
        node("Reshape", ["ls", "back"], ["y"], "to_map"),
    ], [const("s4", np.array([b, d, bs, bs], np.int64)), weight("rel", (d, r)),
        const("s3", np.array([-1, bs, r], np.int64)), const("p1", np.array([0, 0, 0, 0, 0, 1], np.int64)),
        const("s2", np.array([rows, flat], np.int64)), const("p2", np.array([0, 0, 0, r - bs], np.int64)),
        const("s3b", np.array([-1, bs + 1, r], np.int64)),
        const("st", np.array([0, bs - 1], np.int64)), const("en", np.array([bs, r], np.int64)),
        const("axs", np.array([1, 2], np.int64)), const("back", np.array([1, rows, bs, r - bs + 1], np.int64))])


for _bs, _win in ((7, 11), (8, 12), (7, 12), (7, 10), (6, 9), (7, 8), (5, 10), (4, 6), (8, 10), (6, 10)):
    CASES[f"halorel_{_bs}_{_win}"] = partial(halo_rel_logits, _bs, _win)


CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "models")


def corpus_variant(model: str, edit: str) -> onnx.ModelProto:
    """A committed corpus model (structure-only: its large float initializers point at a missing file) with
    random weights in their place and one edit applied, to learn which of the toolkit's verdicts on the real
    model follow from one feature. Edits: 'einsum_nospace' removes the blanks from every Einsum equation."""
    m = onnx.load(os.path.join(CORPUS, model + ".onnx"), load_external_data=False)
    for init in m.graph.initializer:
        if init.data_location == TensorProto.EXTERNAL:
            dtype = helper.tensor_dtype_to_np_dtype(init.data_type)
            init.CopyFrom(numpy_helper.from_array(rng.normal(0, 0.05, tuple(init.dims)).astype(dtype), init.name))
    for n in m.graph.node:
        if edit == "einsum_nospace" and n.op_type == "Einsum":
            for a in n.attribute:
                if a.name == "equation":
                    a.s = a.s.replace(b" ", b"")
    return m


CASES["corpus_tv_maxvit_t_einsum_nospace"] = lambda: corpus_variant("tv_maxvit_t", "einsum_nospace")


def tv_block(c: int, nh: int, p: int, form: str, heads: int = 4) -> onnx.ModelProto:
    """torchvision MaxViT's window block between its partition and departition (tv_windows with the block's body):
    tokens [1,G,N,C] -> LayerNorm over C -> FORM "mlp": a MatMul (C,C) + residual Add; FORM "attn": qkv MatMul,
    q/k/v Slices, Reshape [1,G,N,h,d] + Transpose (0,1,3,2,4) each, softmax(q.k^T).v by MatMul, Transpose back,
    Reshape [1,G,N,C], merge MatMul, residual Add -> departition Reshape [1,nh,nh,p,p,C] -> Transpose
    (0,5,1,3,2,4) -> Reshape back to the map."""
    h, g, n, d = nh * p, nh * nh, p * p, c // heads
    body = [node("Reshape", ["x", "s6"], ["a"], "part_rs"),
            node("Transpose", ["a"], ["b"], "part_tp", perm=[0, 2, 4, 3, 5, 1]),
            node("Reshape", ["b", "tok"], ["t"], "part_rs1"),
            node("LayerNormalization", ["t", "ln_s", "ln_b"], ["ln"], "norm", axis=-1, epsilon=1e-5)]
    inits = [const("s6", np.array([1, c, nh, p, nh, p], np.int64)), const("tok", np.array([1, g, n, c], np.int64)),
             const("ln_s", np.ones(c, np.float32)), const("ln_b", np.zeros(c, np.float32)),
             const("w6", np.array([1, nh, nh, p, p, c], np.int64)), const("back", np.array([1, c, h, h], np.int64))]
    if form == "mlp":
        body += [node("MatMul", ["ln", "wm"], ["m"], "mix"), node("Add", ["m", "t"], ["r"], "residual")]
        inits.append(weight("wm", (c, c)))
    else:
        body.append(node("MatMul", ["ln", "wqkv"], ["qkv"], "to_qkv"))
        inits += [weight("wqkv", (c, 3 * c)), weight("wo", (c, c)), const("hs", np.array([1, g, n, heads, d], np.int64)),
                  const("ax", np.array([3], np.int64)), const("sc", np.array(d ** -0.5, np.float32)),
                  const("js", np.array([1, g, n, c], np.int64))]
        for i, name in enumerate("qkv"):
            inits += [const(f"{name}_st", np.array([i * c], np.int64)), const(f"{name}_en", np.array([(i + 1) * c], np.int64))]
            body += [node("Slice", ["qkv", f"{name}_st", f"{name}_en", "ax"], [f"{name}s"], f"slice_{name}"),
                     node("Reshape", [f"{name}s", "hs"], [f"{name}5"], f"heads_{name}"),
                     node("Transpose", [f"{name}5"], [f"{name}h"], f"tp_{name}", perm=[0, 1, 3, 2, 4])]
        body += [node("Mul", ["qh", "sc"], ["qsc"], "scale"),
                 node("Transpose", ["kh"], ["kt"], "k_t", perm=[0, 1, 2, 4, 3]),
                 node("MatMul", ["qsc", "kt"], ["sco"], "scores"),
                 node("Softmax", ["sco"], ["pr"], "softmax", axis=-1),
                 node("MatMul", ["pr", "vh"], ["o"], "pv"),
                 node("Transpose", ["o"], ["ot"], "tp_out", perm=[0, 1, 3, 2, 4]),
                 node("Reshape", ["ot", "js"], ["oj"], "join"),
                 node("MatMul", ["oj", "wo"], ["om"], "merge"),
                 node("Add", ["om", "t"], ["r"], "residual")]
    body += [node("Reshape", ["r", "w6"], ["dd"], "depart_rs"),
             node("Transpose", ["dd"], ["e"], "depart_tp", perm=[0, 5, 1, 3, 2, 4]),
             node("Reshape", ["e", "back"], ["y"], "depart_rs1")]
    return graph("tvblk", (1, c, h, h), body, inits)


for _c, _nh, _p in ((64, 8, 7), (128, 4, 7), (256, 2, 7), (64, 4, 7), (128, 8, 7), (256, 4, 7), (64, 2, 7), (64, 5, 7),
                    (64, 6, 7), (64, 7, 7), (64, 4, 8), (64, 8, 4)):
    for _form in ("mlp", "attn"):
        CASES[f"tvblk_{_form}_{_c}_{_nh}_{_p}"] = partial(tv_block, _c, _nh, _p, _form)


def tp4_rows(b: int, c: int, h: int, w: int) -> onnx.ModelProto:
    """Conv [1,B*C,H,W] -> Reshape [B,C,H,W] -> Transpose (0,1,3,2) -> Reshape [1,B*C,W,H] -> Conv: a 4-D transpose of
    the last two axes with B images of C channels (torchvision MaxViT's head merge (G,heads,N,d) -> (G,heads,d,N)
    after its CPU Einsum: CPU on rk3576/rv1126b FP16 at 4 windows x 8 heads, NPU at 16 x 4)."""
    return graph("tp4", (1, b * c, h, w), [
        node("Reshape", ["x", "s4"], ["a"], "to4"),
        node("Transpose", ["a"], ["t"], "tp", perm=[0, 1, 3, 2]),
        node("Reshape", ["t", "back"], ["y"], "back"),
    ], [const("s4", np.array([b, c, h, w], np.int64)), const("back", np.array([1, b * c, w, h], np.int64))])


for _b, _c, _h, _w in ((4, 8, 49, 32), (16, 4, 49, 32), (4, 8, 32, 32), (4, 8, 33, 32), (1, 8, 49, 32), (4, 16, 32, 32),
                       (8, 8, 49, 32)):
    CASES[f"tp4_{_b}_{_c}_{_h}_{_w}"] = partial(tp4_rows, _b, _c, _h, _w)


def _convert(path: str, soc: str, quantize: bool, dataset: str) -> tuple[bool, str]:
    return captured_build(path, soc, quantize, dataset)


def node_targets(model: onnx.ModelProto, text: str) -> dict[str, str]:
    """ONNX node -> CPU/NPU from a build log, as benchmarks/rknn_placement.py maps the corpus tables (a node is
    CPU when any of its layers is)."""
    nodes = {n.name: n.op_type for n in model.graph.node}
    outputs = {o: n.name for n in model.graph.node for o in n.output}
    outputs.update({i.name: "" for i in model.graph.input})
    targets: dict[str, str] = {}
    for layer in parse_layer_table(text):
        if layer.op_type in ("InputOperator", "OutputOperator"):
            continue
        name, _ = map_to_onnx(layer.derived_name, nodes, outputs)
        if name and targets.get(name) != "CPU":
            targets[name] = layer.target
    return targets


def convert_case(label: str, socs: list[str], out: str | None = None) -> dict[str, object]:
    model = CASES[label]()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.npy")
        np.save(data, np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))
        dataset = os.path.join(tmp, "ds.txt")
        with open(dataset, "w") as handle:
            handle.write(data + "\n")
        path = os.path.join(tmp, label + ".onnx")
        onnx.save(model, path)
        os.chdir(tmp)  # the toolkit writes check*.onnx into the working directory
        for soc in socs:
            for quantize in (False, True):
                ok, text = _convert(path, soc, quantize, dataset)
                rows = [f"{la.op_type}:{la.data_type}:{la.target} {la.input_shapes}->{la.output_shapes} "
                        f"{la.derived_name}" for la in parse_layer_table(text)
                        if la.derived_name not in ("pre_conv", "post_conv", "in")
                        and la.op_type not in ("InputOperator", "OutputOperator")]
                result[f"{soc}/{'int8' if quantize else 'fp16'}"] = {
                    "built": ok, "layers": rows, "nodes": node_targets(model, text),
                    **({} if ok else {"error": error_summary(text)})}
    if out:
        os.makedirs(out, exist_ok=True)
        onnx.save(model, os.path.join(out, label + ".onnx"))
        with open(os.path.join(out, label + ".json"), "w") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
    return result


def space_to_depth(c: int, h: int, phases: int, channels_last: bool) -> onnx.ModelProto:
    """Strided Slices (step 2 on H and W) joined by a Concat, the space-to-depth of YOLOv5's Focus and Swin's
    patch merging: `phases` of the four (row, column) phases, on an NCHW map or on its NHWC transpose (as
    torchvision's Swin holds it), Concat over the channel axis."""
    axes = [1, 2] if channels_last else [2, 3]
    nodes = [node("Transpose", ["x"], ["xin"], "to_nhwc", perm=[0, 2, 3, 1])] if channels_last else []
    src = "xin" if channels_last else "x"
    inits = [const("ax", np.array(axes, np.int64)), const("en", np.array([h, h], np.int64)),
             const("stp", np.array([2, 2], np.int64))]
    parts = []
    for k, (r, q) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))[:phases]):
        inits.append(const(f"st{k}", np.array([r, q], np.int64)))
        nodes.append(node("Slice", [src, f"st{k}", "en", "ax", "stp"], [f"p{k}"], f"phase{k}"))
        parts.append(f"p{k}")
    joined = "cat" if channels_last else "y"
    nodes.append(node("Concat", parts, [joined], "join", axis=3 if channels_last else 1))
    if channels_last:
        nodes.append(node("Transpose", ["cat"], ["y"], "to_nchw", perm=[0, 3, 1, 2]))
    return graph("s2d", (1, c, h, h), nodes, inits)


for _phases in (4, 2):
    for _last in (False, True):
        CASES[f"s2d_{_phases}_{'nhwc' if _last else 'nchw'}"] = (
            lambda p=_phases, last=_last: space_to_depth(32, 16, p, last))


def strided_heads(kind: str) -> onnx.ModelProto:
    """in [1,64,16,16] -> Conv -> tokens [1,256,64] -> MatMul [1,256,192] -> heads [1,3,256,64] -> step-2 Slices of the
    last axis: one phase alone ("one"), both phases as an interleaved rotary embedding ("rope": the odd one negated,
    stacked on a new axis, flattened back; EVA-02), or a Slice of the conv map itself ("map")."""
    nodes = [node("Reshape", ["x", "s0"], ["f"], "flat"), node("Transpose", ["f"], ["t"], "tok", perm=[0, 2, 1]),
             node("MatMul", ["t", "wq"], ["q"], "proj"), node("Reshape", ["q", "s1"], ["q4"], "split_heads"),
             node("Transpose", ["q4"], ["h"], "heads", perm=[0, 2, 1, 3])]
    inits = [const("s0", np.array([1, 64, 256], np.int64)), weight("wq", (64, 192)),
             const("s1", np.array([1, 256, 3, 64], np.int64))]
    ax = const("ax", np.array([3], np.int64))
    st0, st1 = const("st0", np.array([0], np.int64)), const("st1", np.array([1], np.int64))
    en, sp = const("en", np.array([64], np.int64)), const("sp", np.array([2], np.int64))
    inits += [ax, st0, st1, en, sp]
    if kind == "one":
        nodes += [node("Slice", ["h", "st0", "en", "ax", "sp"], ["y"], "even")]
    elif kind == "rope":
        nodes += [node("Slice", ["h", "st0", "en", "ax", "sp"], ["e"], "even"),
                  node("Slice", ["h", "st1", "en", "ax", "sp"], ["o"], "odd"),
                  node("Neg", ["o"], ["no"], "neg"),
                  node("Unsqueeze", ["no", "um"], ["a"], "ua"), node("Unsqueeze", ["e", "um"], ["b"], "ub"),
                  node("Concat", ["a", "b"], ["c"], "stack", axis=-1), node("Reshape", ["c", "s2"], ["r"], "flatten"),
                  node("Mul", ["h", "cos"], ["hc"], "mulcos"), node("Mul", ["r", "sin"], ["rs"], "mulsin"),
                  node("Add", ["hc", "rs"], ["y"], "rot")]
        inits += [const("um", np.array([-1], np.int64)), const("s2", np.array([1, 3, 256, 64], np.int64)),
                  weight("cos", (256, 64)), weight("sin", (256, 64))]
    elif kind == "map":
        nodes = [node("Slice", ["x", "st0", "en", "ax", "sp"], ["y"], "even")]
        inits = [ax, st0, en, const("sp", np.array([2], np.int64))]
        inits[2] = const("en", np.array([16], np.int64))
    return graph(f"heads_{kind}", (1, 64, 16, 16), nodes, inits, tail=None)


for _kind in ("one", "rope", "map"):
    CASES[f"hslice_{_kind}"] = partial(strided_heads, _kind)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="", help="comma-separated labels or label prefixes")
    parser.add_argument("--socs", default="", help=f"default: the case's own SoCs, else {SOCS}")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--out", help="also save each case's ONNX model and its node targets (JSON) here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    if args.one:
        result = convert_case(args.one, (args.socs or CASE_SOCS.get(args.one, SOCS)).split(","), args.out)
        print(json.dumps(result))
        return 0
    wanted = args.cases.split(",") if args.cases else [""]
    labels: Iterator[str] = (label for label in CASES if any(label.startswith(w) for w in wanted))
    for label in labels:
        run = subprocess.run([sys.executable, __file__, "--one", label, "--socs", args.socs,
                              *(["--out", os.path.abspath(args.out)] if args.out else [])],
                             capture_output=True, text=True)
        lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
        print(label, lines[-1] if run.returncode == 0 and lines else f"toolkit process died (exit {run.returncode})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
