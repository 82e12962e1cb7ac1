"""Probe rknn-toolkit2 2.5.0 with small real-graph patterns (Conv -> pattern -> Conv), per SoC and precision.

The evidence behind the seed-002 entries of constraints/rockchip_rknn.toml that the corpus does not cover
(Mish, HardSigmoid/Elu parameters, Where data types, MeanVarianceNormalization, written-out LayerNorm,
tanh GELU with Pow, Div/Sqrt in INT8, fused attention, L2 normalisation). Run with the toolkit's own interpreter, under nice:
    nice -n 10 RKNN_VENV/bin/python tools/probe_rknn_patterns.py [--cases mish,where_i64] [--socs rk3588,rk3566]
Each case converts in a fresh process (the toolkit crashes on some, e.g. int32 Where: recorded as such) and
prints one line per case: per SoC/precision the Target of each pattern node's layers; nodes without a layer
were folded or fused into a neighbour.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_rknn_ops as p

SOCS = "rk3588,rk3576,rk3566,rk3562,rv1126b"


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


rng = np.random.default_rng(0)


def w(name, shape, s=0.1):
    return c(name, rng.normal(0, s, shape).astype(np.float32))


C, H, W = 32, 8, 8


def model(name, nodes, inits, out_c, opset=17, tail_4d=True):
    """in[1,3,H,W] -> Conv -> x[1,C,H,W]; nodes read x, write y (4-D [1,out_c,H',W']) -> Conv."""
    head = [helper.make_node("Conv", ["in", "w0"], ["x"], name="pre_conv")]
    tail = [helper.make_node("Conv", ["y", "w1"], ["out"], name="post_conv")]
    g = helper.make_graph(
        head + nodes + tail,
        name,
        [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, H, W])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [w("w0", (C, 3, 1, 1)), w("w1", (8, out_c, 1, 1)), *inits],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def N(op, i, o, name, **kw):
    return helper.make_node(op, i, o, name=name, **kw)


def tokens(inner, inner_inits, d=C):
    """x -> Reshape [1,C,HW] -> Transpose [1,HW,C] -> inner (t -> u) -> Transpose -> Reshape -> y."""
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
        *inner,
        N("Transpose", ["u"], ["ub"], "back_transpose", perm=[0, 2, 1]),
        N("Reshape", ["ub", "s4"], ["y"], "back_reshape"),
    ]
    return nodes, [c("s3", np.array([1, C, H * W], np.int64)), c("s4", np.array([1, C, H, W], np.int64)), *inner_inits]


def cases():
    yield "mish", model("mish", [N("Mish", ["x"], ["y"], "mish")], [], C, opset=18)
    yield (
        "mish_decomposed",
        model(
            "mishd",
            [
                N("Softplus", ["x"], ["sp"], "m_softplus"),
                N("Tanh", ["sp"], ["th"], "m_tanh"),
                N("Mul", ["x", "th"], ["y"], "m_mul"),
            ],
            [],
            C,
        ),
    )
    for a in (0.2, 1 / 6, 0.25):
        yield (
            f"hardsigmoid_a{a:.3f}",
            model(
                "hs",
                [N("HardSigmoid", ["x"], ["h"], "hsig", alpha=a, beta=0.5), N("Mul", ["x", "h"], ["y"], "hs_mul")],
                [],
                C,
            ),
        )
    yield "hardsigmoid_b0.6", model("hs", [N("HardSigmoid", ["x"], ["y"], "hsig", alpha=1 / 6, beta=0.6)], [], C)
    for a in (1.0, 0.5):
        yield f"elu_a{a}", model("elu", [N("Elu", ["x"], ["y"], "elu", alpha=a)], [], C)
    # LayerNorm in token context (axis -1, 3-D), fp16/int8
    inner = [N("LayerNormalization", ["t", "g", "b"], ["ln"], "ln", axis=-1), N("MatMul", ["ln", "mw"], ["u"], "mm")]
    nodes, inits = tokens(inner, [c("g", np.ones(C, np.float32)), c("b", np.zeros(C, np.float32)), w("mw", (C, C))])
    yield "ln_tokens", model("ln_tokens", nodes, inits, C)
    # LN decomposed (opset 11-style export): ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add
    inner = [
        N("ReduceMean", ["t"], ["mu"], "ln_mean", axes=[-1]),
        N("Sub", ["t", "mu"], ["d"], "ln_sub"),
        N("Pow", ["d", "two"], ["d2"], "ln_pow"),
        N("ReduceMean", ["d2"], ["var"], "ln_var", axes=[-1]),
        N("Add", ["var", "eps"], ["ve"], "ln_addeps"),
        N("Sqrt", ["ve"], ["sd"], "ln_sqrt"),
        N("Div", ["d", "sd"], ["nrm"], "ln_div"),
        N("Mul", ["nrm", "g"], ["sc"], "ln_mul"),
        N("Add", ["sc", "b"], ["ln"], "ln_add"),
        N("MatMul", ["ln", "mw"], ["u"], "mm"),
    ]
    nodes, inits = tokens(
        inner,
        [
            c("two", np.float32(2)),
            c("eps", np.float32(1e-5)),
            c("g", np.ones(C, np.float32)),
            c("b", np.zeros(C, np.float32)),
            w("mw", (C, C)),
        ],
    )
    yield "ln_decomposed_tokens", model("lnd", nodes, inits, C, opset=13)
    # LN on 4-D: axis 1 (C,H,W), axis 3 (W only), axis -1
    for axis in (1, 2, 3):
        shp = (C, H, W)[axis - 1 :]
        yield (
            f"ln4d_axis{axis}",
            model(
                "ln4",
                [N("LayerNormalization", ["x", "g", "b"], ["y"], "ln", axis=axis)],
                [c("g", np.ones(shp, np.float32)), c("b", np.zeros(shp, np.float32))],
                C,
            ),
        )
    yield "mvn", model("mvn", [N("MeanVarianceNormalization", ["x"], ["y"], "mvn")], [], C)
    yield "mvn_c", model("mvn", [N("MeanVarianceNormalization", ["x"], ["y"], "mvn", axes=[1])], [], C)
    # Where: float data vs int data
    yield (
        "where_f",
        model(
            "wf",
            [N("Greater", ["x", "z"], ["m"], "gt"), N("Where", ["m", "x", "z"], ["y"], "where")],
            [c("z", np.float32(0))],
            C,
        ),
    )
    yield (
        "where_i64",
        model(
            "wi",
            [
                N("Greater", ["x", "z"], ["m"], "gt"),
                N("Cast", ["x"], ["xi"], "cast_i", to=TensorProto.INT64),
                N("Where", ["m", "xi", "zi"], ["wi"], "where"),
                N("Cast", ["wi"], ["y"], "cast_f", to=TensorProto.FLOAT),
            ],
            [c("z", np.float32(0)), c("zi", np.int64(0))],
            C,
        ),
    )
    yield (
        "where_i32",
        model(
            "wi",
            [
                N("Greater", ["x", "z"], ["m"], "gt"),
                N("Cast", ["x"], ["xi"], "cast_i", to=TensorProto.INT32),
                N("Where", ["m", "xi", "zi"], ["wi"], "where"),
                N("Cast", ["wi"], ["y"], "cast_f", to=TensorProto.FLOAT),
            ],
            [c("z", np.float32(0)), c("zi", np.int32(0))],
            C,
        ),
    )
    # tanh GELU with Pow
    g = [
        N("Pow", ["x", "three"], ["x3"], "g_pow"),
        N("Mul", ["x3", "k"], ["x3k"], "g_mul1"),
        N("Add", ["x", "x3k"], ["in1"], "g_add1"),
        N("Mul", ["in1", "s2p"], ["in2"], "g_mul2"),
        N("Tanh", ["in2"], ["th"], "g_tanh"),
        N("Add", ["th", "one"], ["t1"], "g_add2"),
        N("Mul", ["x", "half"], ["xh"], "g_mul3"),
        N("Mul", ["xh", "t1"], ["y"], "g_mul4"),
    ]
    yield (
        "gelu_tanh_pow",
        model(
            "gt",
            g,
            [
                c("three", np.float32(3)),
                c("k", np.float32(0.044715)),
                c("s2p", np.float32(0.7978845608)),
                c("one", np.float32(1)),
                c("half", np.float32(0.5)),
            ],
            C,
        ),
    )
    yield "pow_lone", model("pw", [N("Pow", ["x", "three"], ["y"], "pow")], [c("three", np.float32(3))], C)
    yield (
        "gelu_erf",
        model(
            "ge",
            [
                N("Div", ["x", "sq"], ["d"], "g_div"),
                N("Erf", ["d"], ["e"], "g_erf"),
                N("Add", ["e", "one"], ["a"], "g_add"),
                N("Mul", ["x", "a"], ["m"], "g_mul"),
                N("Mul", ["m", "half"], ["y"], "g_mul2"),
            ],
            [c("sq", np.float32(1.4142135)), c("one", np.float32(1)), c("half", np.float32(0.5))],
            C,
        ),
    )
    # layout ops in token context (MatMul between)
    inner = [N("MatMul", ["t", "mw"], ["u"], "mm")]
    nodes, inits = tokens(inner, [w("mw", (C, C))])
    yield "tokens_matmul", model("tm", nodes, inits, C)
    yield (
        "reshape_split_c",
        model(
            "rs",
            [
                N(
                    "Reshape",
                    ["x", "s5"],
                    ["r"],
                    "rs",
                ),
                N("Transpose", ["r"], ["t"], "shuffle_tr", perm=[0, 2, 1, 3, 4]),
                N("Reshape", ["t", "s4"], ["y"], "rs_back"),
            ],
            [c("s5", np.array([1, 2, C // 2, H, W], np.int64)), c("s4", np.array([1, C, H, W], np.int64))],
            C,
        ),
    )
    yield (
        "reshape_hw",
        model(
            "rh",
            [
                N("Reshape", ["x", "s"], ["r"], "rs"),
                N("Relu", ["r"], ["rr"], "relu"),
                N("Reshape", ["rr", "s4"], ["y"], "rs_back"),
            ],
            [c("s", np.array([1, C, H * W, 1], np.int64)), c("s4", np.array([1, C, H, W], np.int64))],
            C,
        ),
    )
    yield (
        "softmax_tokens",
        model("sm", tokens([N("Softmax", ["t"], ["u"], "softmax", axis=-1)], [])[0], tokens([], [])[1], C),
    )
    yield "softmax_4d_c", model("sm4", [N("Softmax", ["x"], ["y"], "softmax", axis=1)], [], C)
    yield "softmax_4d_w", model("sm4", [N("Softmax", ["x"], ["y"], "softmax", axis=3)], [], C)


def sdpa(ch, n=16, heads=1):
    # x[1,C,H,W] -> q,k,v via Reshape to [1,heads,N,ch] from a conv with heads*ch channels
    nodes = [
        N("Conv", ["x", "wq"], ["q0"], "q_conv"),
        N("Conv", ["x", "wk"], ["k0"], "k_conv"),
        N("Conv", ["x", "wv"], ["v0"], "v_conv"),
    ]
    for t in "qkv":
        nodes += [
            N("Reshape", [f"{t}0", "s"], [f"{t}r"], f"{t}_rs"),
            N("Transpose", [f"{t}r"], [t], f"{t}_tr", perm=[0, 1, 3, 2]),
        ]
    nodes += [
        N("Transpose", ["k"], ["kt"], "k_t", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["a"], "qk"),
        N("Mul", ["a", "sc"], ["as"], "scale"),
        N("Softmax", ["as"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "o_tr", perm=[0, 1, 3, 2]),
        N("Reshape", ["ot", "s4"], ["o4"], "o_rs"),
        N("Conv", ["o4", "wo"], ["y"], "o_conv"),
    ]
    hw = H * W
    inits = [
        w("wq", (heads * ch, C, 1, 1)),
        w("wk", (heads * ch, C, 1, 1)),
        w("wv", (heads * ch, C, 1, 1)),
        w("wo", (C, heads * ch, 1, 1), 0.01),
        c("s", np.array([1, heads, ch, hw], np.int64)),
        c("s4", np.array([1, heads * ch, H, W], np.int64)),
        c("sc", np.float32(ch**-0.5)),
    ]
    return model("sdpa", nodes, inits, C)


def more_cases():
    for opset in (17,):
        nodes, inits = tokens(
            [N("LayerNormalization", ["t", "g", "b"], ["u"], "ln", axis=-1)],
            [c("g", np.ones(C, np.float32)), c("b", np.zeros(C, np.float32))],
        )
        yield f"ln_op_o{opset}", model("ln", nodes, inits, C, opset=opset)
    yield (
        "ln_op_4d_axis1",
        model(
            "ln4",
            [N("LayerNormalization", ["x", "g", "b"], ["y"], "ln", axis=1)],
            [c("g", np.ones((C, H, W), np.float32)), c("b", np.zeros((C, H, W), np.float32))],
            C,
        ),
    )
    yield (
        "ln_op_4d_axis3",
        model(
            "ln4",
            [N("LayerNormalization", ["x", "g", "b"], ["y"], "ln", axis=3)],
            [c("g", np.ones((W,), np.float32)), c("b", np.zeros((W,), np.float32))],
            C,
        ),
    )
    yield (
        "rms_op",
        model(
            "rms",
            tokens([N("RMSNormalization", ["t", "g"], ["u"], "rms", axis=-1)], [c("g", np.ones(C, np.float32))])[0],
            tokens([], [c("g", np.ones(C, np.float32))])[1],
            C,
            opset=23,
        ),
    )
    inner = [
        N("Pow", ["t", "two"], ["t2"], "rms_pow"),
        N("ReduceMean", ["t2"], ["ms"], "rms_mean", axes=[-1]),
        N("Add", ["ms", "eps"], ["mse"], "rms_add"),
        N("Sqrt", ["mse"], ["r"], "rms_sqrt"),
        N("Div", ["t", "r"], ["n"], "rms_div"),
        N("Mul", ["n", "g"], ["u"], "rms_mul"),
    ]
    nodes, inits = tokens(inner, [c("two", np.float32(2)), c("eps", np.float32(1e-6)), c("g", np.ones(C, np.float32))])
    yield "rms_decomposed", model("rmsd", nodes, inits, C, opset=13)
    inner = [
        N("ReduceMean", ["t"], ["mu"], "ln_mean", axes=[-1]),
        N("Sub", ["t", "mu"], ["d"], "ln_sub"),
        N("Pow", ["d", "two"], ["d2"], "ln_pow"),
        N("ReduceMean", ["d2"], ["var"], "ln_var", axes=[-1]),
        N("Add", ["var", "eps"], ["ve"], "ln_addeps"),
        N("Sqrt", ["ve"], ["sd"], "ln_sqrt"),
        N("Div", ["d", "sd"], ["u"], "ln_div"),
    ]
    nodes, inits = tokens(inner, [c("two", np.float32(2)), c("eps", np.float32(1e-5))])
    yield "ln_decomposed_noaffine", model("lnd", nodes, inits, C, opset=13)
    yield "sdpa_64", sdpa(64)
    yield (
        "div_runtime",
        model(
            "dv",
            [
                N("Sigmoid", ["x"], ["s"], "sig"),
                N("Add", ["s", "one"], ["s1"], "add"),
                N("Div", ["x", "s1"], ["y"], "div"),
            ],
            [c("one", np.float32(1))],
            C,
        ),
    )
    yield "div_const", model("dc", [N("Div", ["x", "k"], ["y"], "div")], [c("k", np.float32(3))], C)
    yield "sqrt_lone", model("sq", [N("Abs", ["x"], ["a"], "abs"), N("Sqrt", ["a"], ["y"], "sqrt")], [], C)


def l2norm(axis, clip=True, expand=True, eps_add=False, src="x", out="y"):
    """F.normalize(x, dim=axis) as torch exports it: ReduceL2 -> Clip(min=eps) -> Expand -> Div."""
    nodes = [N("ReduceL2", [src], ["n"], "l2_reduce", axes=[axis], keepdims=1)]
    last = "n"
    if clip:
        nodes.append(N("Clip", [last, "eps", ""], ["nc"], "l2_clip"))
        last = "nc"
    if eps_add:
        nodes.append(N("Add", [last, "eps"], ["na"], "l2_add"))
        last = "na"
    if expand:
        nodes += [N("Shape", [src], ["sh"], "l2_shape"), N("Expand", [last, "sh"], ["ne"], "l2_expand")]
        last = "ne"
    nodes.append(N("Div", [src, last], [out], "l2_div"))
    return nodes, [c("eps", np.float32(1e-12))]


def norm_cases():
    """L2 normalisation (F.normalize) in its export forms, over the channel and over other axes."""
    nodes, inits = l2norm(1)
    yield "l2norm_c", model("l2c", nodes, inits, C)
    nodes, inits = l2norm(1, clip=False, expand=False)
    yield "l2norm_c_plain", model("l2p", nodes, inits, C)
    nodes, inits = l2norm(3)
    yield "l2norm_w", model("l2w", nodes, inits, C)
    inner, inner_inits = l2norm(-1, src="t", out="u")
    nodes, inits = tokens(inner, inner_inits)
    yield "l2norm_tokens_c", model("l2t", nodes, inits, C)
    inner, inner_inits = l2norm(1, src="t", out="u")
    nodes, inits = tokens(inner, inner_inits)
    yield "l2norm_tokens_n", model("l2n", nodes, inits, C)
    nodes, inits = l2norm(1, clip=False, expand=False, eps_add=True)
    yield "l2norm_c_addeps", model("l2a", nodes, inits, C)
    yield (
        "div_reducesum",
        model(
            "drs",
            [
                N("Relu", ["x"], ["r"], "relu"),
                N("ReduceSum", ["r", "ax"], ["s"], "sum", keepdims=1),
                N("Add", ["s", "one"], ["s1"], "add"),
                N("Div", ["r", "s1"], ["y"], "div"),
            ],
            [c("ax", np.array([1], np.int64)), c("one", np.float32(1))],
            C,
        ),
    )


def out_model(name, nodes, inits, opset=17, elem=TensorProto.FLOAT):
    """in[1,3,H,W] -> Conv -> x[1,C,H,W]; nodes read x and write the graph output `out` (any rank, type `elem`)."""
    g = helper.make_graph(
        [helper.make_node("Conv", ["in", "w0"], ["x"], name="pre_conv"), *nodes],
        name,
        [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, H, W])],
        [helper.make_tensor_value_info("out", elem, None)],
        [w("w0", (C, 3, 1, 1)), *inits],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _spatial(kernel):
    """x[1,C,8,8] -> Conv(kernel, no pad) -> m[1,C,8-k+1,8-k+1]: a map with (9-k)^2 pixels."""
    return [N("Conv", ["x", "wk"], ["m"], "map_conv")], [w("wk", (C, C, kernel, kernel))], (H - kernel + 1) ** 2


def output_cases():
    """Graph outputs of rank 2/3 (the toolkit's relayout out of its 4-D form) and detector-head Concats."""
    for n_kernel, k in ((1, 8), (1, 10), (1, 16), (1, 24), (1, 32), (4, 16), (4, 8)):
        head, head_inits, n = _spatial(n_kernel)
        nodes = [
            *head,
            N("Reshape", ["m", "s3"], ["r"], "to_tokens_reshape"),
            N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
            N("MatMul", ["t", "wm"], ["out"], "token_matmul"),
        ]
        inits = [*head_inits, c("s3", np.array([1, C, n], np.int64)), w("wm", (C, k))]
        yield f"out_tokens_n{n}_k{k}", out_model("ot", nodes, inits)
    for k in (10, 16, 24, 32):
        nodes = [
            N("GlobalAveragePool", ["x"], ["p"], "gap"),
            N("Flatten", ["p"], ["f"], "flatten", axis=1),
            N("Gemm", ["f", "wg", "bg"], ["out"], "gemm", transB=1),
        ]
        yield f"out_gemm_k{k}", out_model("og", nodes, [w("wg", (k, C)), c("bg", np.zeros(k, np.float32))])
    for n_kernel, ch in ((4, 16), (5, 16), (5, 10)):
        head, head_inits, n = _spatial(n_kernel)
        nodes = [*head, N("Conv", ["m", "wc"], ["mc"], "ch_conv"), N("Reshape", ["mc", "s3"], ["out"], "flat_reshape")]
        inits = [*head_inits, w("wc", (ch, C, 1, 1)), c("s3", np.array([1, ch, n], np.int64))]
        yield f"out_map_c{ch}_n{n}", out_model("om", nodes, inits)
    for pool_kernel, classes, scales in ((2, 16, 2), (3, 16, 2), (2, 80, 2), (2, 80, 3)):
        yield _head_case(pool_kernel, classes, scales)


def _head_case(pool_kernel, classes, scales):
    """A detector head: per scale (8x8, then MaxPool-halved maps) a class and a box Conv, each flattened to
    [1, ch, hw] and joined on the last axis; Sigmoid(classes) and 8 * boxes joined on axis 1 into the output."""
    sizes = [H]
    nodes = []
    maps = ["x"]
    for i in range(1, scales):
        sizes.append((sizes[-1] - pool_kernel) // 2 + 1)
        nodes.append(N("MaxPool", [maps[-1]], [f"xs{i}"], f"pool{i}", kernel_shape=[pool_kernel] * 2, strides=[2, 2]))
        maps.append(f"xs{i}")
    n = sum(s * s for s in sizes)
    inits = [c("stride", np.float32(8))]
    for branch, ch in (("cls", classes), ("box", 4)):
        for i, (m, size) in enumerate(zip(maps, sizes)):
            nodes += [
                N("Conv", [m, f"w_{branch}{i}"], [f"{branch}{i}"], f"{branch}_conv{i}"),
                N("Reshape", [f"{branch}{i}", f"s_{branch}{i}"], [f"{branch}{i}r"], f"{branch}_flat{i}"),
            ]
            inits += [w(f"w_{branch}{i}", (ch, C, 1, 1)), c(f"s_{branch}{i}", np.array([1, ch, size * size], np.int64))]
        nodes.append(N("Concat", [f"{branch}{i}r" for i in range(scales)], [f"{branch}_all"], f"{branch}_concat", axis=2))
    nodes += [
        N("Sigmoid", ["cls_all"], ["cls_sig"], "cls_sigmoid"),
        N("Mul", ["box_all", "stride"], ["box_dec"], "box_mul"),
        N("Concat", ["box_dec", "cls_sig"], ["out"], "head_concat", axis=1),
    ]
    suffix = "" if (classes, scales) == (16, 2) else f"_c{classes}_s{scales}"
    return f"out_head_n{n}{suffix}", out_model("oh", nodes, inits)


def variant_cases():
    """Parameter variants of common ops (no family in mind): pooling with kernel < stride, resize to sizes,
    align_corners, dilation, uneven concat/split, strided slice, reflect pad, softmax over channels."""
    yield "maxpool_k1s2", model("mp", [N("MaxPool", ["x"], ["y"], "pool", kernel_shape=[1, 1], strides=[2, 2])], [], C)
    yield "avgpool_k1s2", model("ap", [N("AveragePool", ["x"], ["y"], "pool", kernel_shape=[1, 1], strides=[2, 2])], [], C)
    yield "avgpool_k2s2", model("ap", [N("AveragePool", ["x"], ["y"], "pool", kernel_shape=[2, 2], strides=[2, 2])], [], C)
    yield (
        "resize_sizes_2p5",
        model("rz", [N("Resize", ["x", "", "", "sz"], ["y"], "resize", mode="nearest")],
              [c("sz", np.array([1, C, 20, 20], np.int64))], C),
    )
    yield (
        "resize_linear_align",
        model("rz", [N("Resize", ["x", "", "sc"], ["y"], "resize", mode="linear",
                       coordinate_transformation_mode="align_corners")],
              [c("sc", np.array([1, 1, 2, 2], np.float32))], C),
    )
    yield (
        "resize_linear_odd",
        model("rz", [N("Resize", ["x", "", "", "sz"], ["y"], "resize", mode="linear",
                       coordinate_transformation_mode="half_pixel")],
              [c("sz", np.array([1, C, 13, 13], np.int64))], C),
    )
    yield (
        "conv_dilated4",
        model("cd", [N("Conv", ["x", "wd"], ["y"], "conv", dilations=[4, 4], pads=[4, 4, 4, 4])],
              [w("wd", (C, C, 3, 3))], C),
    )
    yield (
        "concat_uneven",
        model("cu", [N("Split", ["x", "sp"], ["a", "b", "d"], "split", axis=1),
                     N("Concat", ["d", "a", "b"], ["y"], "concat", axis=1)],
              [c("sp", np.array([3, 7, 22], np.int64))], C),
    )
    yield (
        "slice_step2",
        model("ss", [N("Slice", ["x", "st", "en", "ax", "stp"], ["y"], "slice")],
              [c("st", np.array([0, 1], np.int64)), c("en", np.array([H, W], np.int64)),
               c("ax", np.array([2, 3], np.int64)), c("stp", np.array([2, 2], np.int64))], C),
    )
    for label, start, step in (("slice_step2_start0", 0, 2), ("slice_step1_start1", 1, 1)):
        yield (
            label,
            model("ss", [N("Slice", ["x", "st", "en", "ax", "stp"], ["y"], "slice")],
                  [c("st", np.array([start, start], np.int64)), c("en", np.array([H, W], np.int64)),
                   c("ax", np.array([2, 3], np.int64)), c("stp", np.array([step, step], np.int64))], C),
        )
    for label, axis in (("slice_step2_c", 1), ("slice_step2_h", 2), ("slice_step2_w", 3)):
        yield (
            label,
            model("sa", [N("Slice", ["x", "st", "en", "ax", "stp"], ["y"], "slice")],
                  [c("st", np.array([0], np.int64)), c("en", np.array([C if axis == 1 else H], np.int64)),
                   c("ax", np.array([axis], np.int64)), c("stp", np.array([2], np.int64))],
                  C // 2 if axis == 1 else C),
        )
    for label, mode, ctm, size in (("resize_linear_x2", "linear", "half_pixel", 16),
                                   ("resize_linear_x2_asym", "linear", "asymmetric", 16),
                                   ("resize_linear_x2_pytorch", "linear", "pytorch_half_pixel", 16),
                                   ("resize_nearest_odd", "nearest", "asymmetric", 13)):
        yield (
            label,
            model("rz", [N("Resize", ["x", "", "", "sz"], ["y"], "resize", mode=mode,
                           coordinate_transformation_mode=ctm)],
                  [c("sz", np.array([1, C, size, size], np.int64))], C),
        )
    for scale in (2, 4):  # align_corners by scale, and on a one-channel map (a depth head's last upsample)
        yield (
            f"resize_linear_align_x{scale}",
            model("rz", [N("Resize", ["x", "", "sc"], ["y"], "resize", mode="linear",
                           coordinate_transformation_mode="align_corners")],
                  [c("sc", np.array([1, 1, scale, scale], np.float32))], C),
        )
        yield (
            f"resize_linear_align_x{scale}_c1",
            model("rz", [N("Conv", ["x", "w_one"], ["one"], "to_one"),
                         N("Resize", ["one", "", "sc"], ["y"], "resize", mode="linear",
                           coordinate_transformation_mode="align_corners")],
                  [w("w_one", (1, C, 1, 1)), c("sc", np.array([1, 1, scale, scale], np.float32))], 1),
        )
    for op in ("Sin", "Cos"):
        yield f"{op.lower()}_runtime", model("tr", [N(op, ["x"], ["y"], op.lower())], [], C)
    yield (
        "pad_reflect",
        model("pr", [N("Pad", ["x", "pd"], ["y"], "pad", mode="reflect")],
              [c("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], C),
    )


def rank_cases():
    """A constant divided by a tensor (a reciprocal) against a tensor divided by one, on a map and on a per-channel
    statistic; unary ops on a rank-5 view of the map against the same ops at rank 4 (session 28)."""
    eps = c("eps", np.float32(1e-3))
    one = c("one", np.float32(1))
    yield "recip_map", model("rm", [N("Abs", ["x"], ["a"], "abs"), N("Add", ["a", "eps"], ["ae"], "addeps"),
                                    N("Div", ["one", "ae"], ["y"], "div")], [eps, one], C)
    yield "recip_stat", model("rs", [N("GlobalAveragePool", ["x"], ["g"], "gap"), N("Abs", ["g"], ["a"], "abs"),
                                     N("Add", ["a", "eps"], ["ae"], "addeps"), N("Div", ["one", "ae"], ["r"], "div"),
                                     N("Mul", ["x", "r"], ["y"], "scale")], [eps, one], C)
    yield "divisor_stat", model("ds", [N("GlobalAveragePool", ["x"], ["g"], "gap"), N("Abs", ["g"], ["a"], "abs"),
                                       N("Add", ["a", "eps"], ["ae"], "addeps"), N("Div", ["x", "ae"], ["y"], "div")],
                                [eps], C)
    five = c("s5", np.array([1, 4, C // 4, H, W], np.int64))
    back = c("s4", np.array([1, C, H, W], np.int64))
    for op in ("Sqrt", "Exp", "Sigmoid"):
        pre = [N("Abs", ["v"], ["va"], "abs")] if op == "Sqrt" else []
        src = "va" if op == "Sqrt" else "v"
        yield f"{op.lower()}_rank5", model(f"{op}5", [N("Reshape", ["x", "s5"], ["v"], "to5"), *pre,
                                                      N(op, [src], ["u"], "op"),
                                                      N("Reshape", ["u", "s4"], ["y"], "back")], [five, back], C)
    stat = [N("Reshape", ["x", "s5"], ["v"], "to5"),
            N("ReduceMean", ["v"], ["m"], "mean", axes=[2, 3, 4], keepdims=1),
            N("Abs", ["m"], ["ma"], "abs"), N("Add", ["ma", "eps"], ["me"], "addeps"), N("Sqrt", ["me"], ["sd"], "op"),
            N("Div", ["v", "sd"], ["u"], "div"), N("Reshape", ["u", "s4"], ["y"], "back")]
    yield "sqrt_rank5_stat", model("sq5s", stat, [five, back, eps], C)


def cast_cases():
    """Casts to narrow integer types where a tensor leaves the graph or passes between layers (a semantic head's
    class map as uint8), against the int64 ArgMax it comes from."""
    argmax = N("ArgMax", ["x"], ["a"], "argmax", axis=1, keepdims=1)
    yield "argmax_i64_out", out_model("am", [N("ArgMax", ["x"], ["out"], "argmax", axis=1, keepdims=1)], [],
                                      elem=TensorProto.INT64)
    for label, to in (("u8", TensorProto.UINT8), ("i8", TensorProto.INT8), ("i32", TensorProto.INT32),
                      ("f16", TensorProto.FLOAT16)):
        yield f"argmax_cast_{label}_out", out_model(f"amc{label}", [argmax, N("Cast", ["a"], ["out"], "op", to=to)], [],
                                                    elem=to)
        yield f"cast_{label}_out", out_model(f"c{label}", [N("Cast", ["x"], ["out"], "op", to=to)], [], elem=to)
    yield "cast_u8_mid", model("cu8m", [N("Cast", ["x"], ["q"], "op", to=TensorProto.UINT8),
                                        N("Cast", ["q"], ["y"], "back", to=TensorProto.FLOAT)], [], C)


def free_model(name, in_shape, nodes, inits, opset=17):
    """in[in_shape] -> nodes (reading 'in', writing 'out'): for patterns that need their own input size."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("in", TensorProto.FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def stride_cases():
    """Convolutions with a stride past the 3-bit register field (8): patch embeddings (kernel == stride), the
    overlapping patches of an audio spectrogram transformer (kernel 16, stride 10) and plain strided convs, with
    prime and composite strides."""
    for k, s, pad, side in ((16, 10, 0, 128), (14, 10, 0, 128), (16, 12, 0, 128), (3, 9, 1, 72), (9, 9, 0, 72),
                            (11, 11, 0, 88), (13, 11, 0, 88), (5, 11, 2, 88), (3, 16, 1, 128), (17, 17, 0, 136),
                            (20, 16, 2, 128), (7, 9, 3, 72), (3, 18, 1, 144), (14, 14, 0, 112), (32, 32, 0, 128),
                            (15, 15, 0, 120), (1, 10, 0, 80), (3, 14, 1, 112), (24, 20, 2, 160)):
        nodes = [N("Conv", ["in", "w0"], ["x"], "pre_conv"),
                 N("Conv", ["x", "wk"], ["y"], "op", kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4),
                 N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits = [w("w0", (8, 3, 1, 1)), w("wk", (16, 8, k, k)), w("w1", (8, 16, 1, 1))]
        yield f"stride_k{k}_s{s}_p{pad}", free_model(f"st{k}_{s}", (1, 3, side, side), nodes, inits)


def div_cases():
    """A run-time divisor made by reductions: ConvNeXt-V2's global response normalisation (the per-channel L2 norm
    over H, W divided by its channel mean), and the same division at other shapes and broadcasts."""
    grn = [N("ReduceL2", ["x"], ["g"], "l2", axes=[2, 3], keepdims=1),
           N("ReduceMean", ["g"], ["m"], "mean", axes=[1], keepdims=1),
           N("Add", ["m", "eps"], ["me"], "add_eps")]
    yield "div_grn", model("grn", [*grn, N("Div", ["g", "me"], ["n"], "div"), N("Mul", ["x", "n"], ["y"], "mul")],
                           [c("eps", np.float32(1e-6))], C, opset=13)
    yield "div_pooled_same", model("dps", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                           N("GlobalMaxPool", ["x"], ["gm"], "gmp"),
                                           N("Abs", ["gm"], ["ga"], "abs"), N("Add", ["ga", "one"], ["d"], "add"),
                                           N("Div", ["g", "d"], ["n"], "div"), N("Mul", ["x", "n"], ["y"], "mul")],
                                   [c("one", np.float32(1))], C)
    yield "div_pooled_scalar", model("dpsc", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                              N("ReduceMean", ["g"], ["m"], "mean", axes=[1], keepdims=1),
                                              N("Abs", ["m"], ["ma"], "abs"), N("Add", ["ma", "one"], ["d"], "add"),
                                              N("Div", ["x", "d"], ["y"], "div")],
                                      [c("one", np.float32(1))], C, opset=13)
    yield "div_map_by_pooled", model("dmp", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                             N("Abs", ["g"], ["ga"], "abs"), N("Add", ["ga", "one"], ["d"], "add"),
                                             N("Div", ["x", "d"], ["y"], "div")],
                                     [c("one", np.float32(1))], C)
    for label, pool in (("hw1", {"kernel_shape": [8, 8], "strides": [8, 8]}),
                        ("hw4", {"kernel_shape": [4, 4], "strides": [4, 4]}),
                        ("hw16", {"kernel_shape": [2, 2], "strides": [2, 2]})):
        yield f"div_same_{label}", model(f"ds{label}", [N("AveragePool", ["x"], ["g"], "avg", **pool),
                                                        N("MaxPool", ["x"], ["gm"], "max", **pool),
                                                        N("Abs", ["gm"], ["ga"], "abs"),
                                                        N("Add", ["ga", "one"], ["d"], "add"),
                                                        N("Div", ["g", "d"], ["y"], "div")],
                                         [c("one", np.float32(1))], C)
    nhwc_grn = [N("Transpose", ["x"], ["t"], "nhwc", perm=[0, 2, 3, 1]),
                N("ReduceL2", ["t"], ["g"], "l2", axes=[1, 2], keepdims=1),
                N("ReduceMean", ["g"], ["m"], "mean", axes=[-1], keepdims=1),
                N("Add", ["m", "eps"], ["me"], "add_eps"), N("Div", ["g", "me"], ["n"], "div"),
                N("Mul", ["t", "n"], ["u"], "mul"), N("Transpose", ["u"], ["y"], "nchw", perm=[0, 3, 1, 2])]
    yield "div_grn_nhwc", model("grnl", nhwc_grn, [c("eps", np.float32(1e-6))], C, opset=13)
    for ch in (64, 128, 192, 384):
        conv = [N("Conv", ["in", "w0"], ["x"], "pre_conv")]
        yield f"div_grn_nhwc_c{ch}", free_model(f"grnc{ch}", (1, 3, 8, 8), [
            *conv, *nhwc_grn, N("Conv", ["y", "w1"], ["out"], "post_conv")],
            [w("w0", (ch, 3, 1, 1)), w("w1", (8, ch, 1, 1)), c("eps", np.float32(1e-6))], opset=13)
    yield "div_tokens_by_scalar", model("dts", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                                 N("Reshape", ["g", "s3"], ["gt"], "tok"),
                                                 N("ReduceMean", ["gt"], ["m"], "mean", axes=[-1], keepdims=1),
                                                 N("Abs", ["m"], ["ma"], "abs"), N("Add", ["ma", "one"], ["d"], "add"),
                                                 N("Div", ["gt", "d"], ["n"], "div"),
                                                 N("Reshape", ["n", "s4"], ["y"], "back")],
                                         [c("one", np.float32(1)), c("s3", np.array([1, 1, C], np.int64)),
                                          c("s4", np.array([1, C, 1, 1], np.int64))], C, opset=13)
    yield "div_same_hw1_tokens", model("dst", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                                N("Reshape", ["g", "s3"], ["gt"], "tok"),
                                                N("GlobalMaxPool", ["x"], ["gm"], "gmp"),
                                                N("Reshape", ["gm", "s3"], ["gmt"], "tok2"),
                                                N("Abs", ["gmt"], ["ga"], "abs"), N("Add", ["ga", "one"], ["d"], "add"),
                                                N("Div", ["gt", "d"], ["n"], "div"),
                                                N("Reshape", ["n", "s4"], ["y"], "back")],
                                       [c("one", np.float32(1)), c("s3", np.array([1, 1, C], np.int64)),
                                        c("s4", np.array([1, C, 1, 1], np.int64))], C)
    yield "div_map_by_channel_mean", model("dmc", [N("ReduceMean", ["x"], ["m"], "mean", axes=[1], keepdims=1),
                                                   N("Abs", ["m"], ["ma"], "abs"),
                                                   N("Add", ["ma", "one"], ["d"], "add"),
                                                   N("Div", ["x", "d"], ["y"], "div")],
                                           [c("one", np.float32(1))], C, opset=13)


def dense_cases():
    """Structures of detection and segmentation heads and of video backbones that the corpus's derive families
    hold few of: dilated 3x3 convolutions at ASPP rates, FPN's stride-2 1x1 max pool, bilinear upsampling of a
    pooled 1x1 map and by 8, and 3-D convolutions and pooling."""
    side = 32
    for d in (2, 6, 12, 18, 24, 36):
        nodes = [N("Conv", ["in", "w0"], ["x"], "pre_conv"),
                 N("Conv", ["x", "wd"], ["y"], "op", kernel_shape=[3, 3], dilations=[d, d], pads=[d] * 4),
                 N("Conv", ["y", "w1"], ["out"], "post_conv")]
        yield f"dilated_d{d}", free_model(f"dil{d}", (1, 3, side, side), nodes,
                                          [w("w0", (16, 3, 1, 1)), w("wd", (16, 16, 3, 3)), w("w1", (8, 16, 1, 1))])
    for op in ("ReduceL2", "ReduceSum", "ReduceMean"):  # ConvNeXt-V2's response norm: pixels of a channels-last map
        yield f"nhwc_{op.lower()}_pixels", model(f"nr{op}", [
            N("Transpose", ["x"], ["t"], "nhwc", perm=[0, 2, 3, 1]), N("MatMul", ["t", "wl"], ["u"], "linear"),
            N("Relu", ["u"], ["a"], "act"), N(op, ["a"], ["g"], "reduce", axes=[1, 2], keepdims=1),
            N("Mul", ["a", "g"], ["m"], "mul"), N("MatMul", ["m", "wl2"], ["v"], "linear2"),
            N("Transpose", ["v"], ["y"], "nchw", perm=[0, 3, 1, 2])], [w("wl", (C, 2 * C)), w("wl2", (2 * C, C))],
            C, opset=13)
    yield "maxpool_k1_s2", model("mp1", [N("MaxPool", ["x"], ["y"], "op", kernel_shape=[1, 1], strides=[2, 2])], [], C)
    sizes = c("sizes", np.array([1, C, H, W], np.int64))
    yield "resize_bilinear_from_1x1", model("rb1", [
        N("GlobalAveragePool", ["x"], ["g"], "gap"), N("Relu", ["g"], ["gr"], "act"),
        N("Resize", ["gr", "", "", "sizes"], ["y"], "op", mode="linear")], [sizes], C)
    big = c("big", np.array([1, C, 8 * H, 8 * W], np.int64))
    yield "resize_bilinear_x8", model("rb8", [N("Resize", ["x", "", "", "big"], ["y"], "op", mode="linear")], [big], C)
    video = (1, 3, 4, 16, 16)
    yield "conv3d_k3", free_model("c3", video, [
        N("Conv", ["in", "w0"], ["x"], "pre_conv"),
        N("Conv", ["x", "w3"], ["y"], "op", kernel_shape=[3, 3, 3], pads=[1] * 6), N("Relu", ["y"], ["r"], "act"),
        N("Conv", ["r", "w1"], ["out"], "post_conv")],
        [w("w0", (16, 3, 1, 1, 1)), w("w3", (16, 16, 3, 3, 3)), w("w1", (8, 16, 1, 1, 1))])
    yield "conv3d_stem", free_model("c3s", video, [
        N("Conv", ["in", "w3"], ["y"], "op", kernel_shape=[3, 7, 7], strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3]),
        N("Relu", ["y"], ["r"], "act"),
        N("MaxPool", ["r"], ["m"], "pool", kernel_shape=[1, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 0, 1, 1]),
        N("Conv", ["m", "w1"], ["out"], "post_conv")],
        [w("w3", (16, 3, 3, 7, 7)), w("w1", (8, 16, 1, 1, 1))])
    for label, op, kernel, strides in (("maxpool3d_k222", "MaxPool", [2, 2, 2], [2, 2, 2]),
                                       ("maxpool3d_k133", "MaxPool", [1, 3, 3], [1, 2, 2]),
                                       ("avgpool3d_k222", "AveragePool", [2, 2, 2], [2, 2, 2])):
        yield label, free_model(label, video, [
            N("Conv", ["in", "w3"], ["y"], "pre_conv", kernel_shape=[1, 1, 1]),
            N(op, ["y"], ["m"], "op", kernel_shape=kernel, strides=strides),
            N("Conv", ["m", "w1"], ["out"], "post_conv", kernel_shape=[1, 1, 1])],
            [w("w3", (16, 3, 1, 1, 1)), w("w1", (8, 16, 1, 1, 1))])
    yield "conv3d_gap_fc", free_model("c3g", video, [
        N("Conv", ["in", "w3"], ["y"], "op", kernel_shape=[3, 1, 1], pads=[1, 0, 0, 1, 0, 0]),
        N("GlobalAveragePool", ["y"], ["g"], "gap"), N("Flatten", ["g"], ["f"], "flat", axis=1),
        N("Gemm", ["f", "wf", "bf"], ["out"], "fc", transB=1)],
        [w("w3", (16, 3, 3, 1, 1)), w("wf", (10, 16)), w("bf", (10,))])


def _last_axis_indices(n, lo, hi, width):
    """ScatterND indices [1, n, hi - lo, 3] writing [..., lo:hi] of a [1, n, width] tensor in row-major order."""
    idx = np.array([[[0, i, j] for j in range(lo, hi)] for i in range(n)], np.int64)[None]
    assert hi <= width
    return idx


def scatter_cases():
    """Box refinement as DETR-family decoders write it: new[..., :2] = f(old[..., :2]) on [1, N, 4] tokens, one
    write or two writes of complementary halves, and a half write of wider features ([..., 64:] of 128)."""
    tokens = [N("Reshape", ["x", "s3"], ["r"], "to_tokens"), N("Transpose", ["r"], ["t"], "tok_t", perm=[0, 2, 1])]
    s3 = c("s3", np.array([1, C, H * W], np.int64))
    back = [N("Transpose", ["z"], ["zt"], "back_t", perm=[0, 2, 1]), N("Reshape", ["zt", "s4"], ["y"], "back")]
    for label, width, writes in (("scatter_last_half", 4, [(0, 2)]), ("scatter_last_pair", 4, [(0, 2), (2, 4)]),
                                 ("scatter_last_wide", 128, [(64, 128)])):
        nodes = [*tokens, N("MatMul", ["t", "wp"], ["b0"], "proj")]
        inits = [s3, w("wp", (C, width)), w("wq", (width, C)), c("s4", np.array([1, C, H, W], np.int64))]
        prev = "b0"
        for k, (lo, hi) in enumerate(writes):
            nodes += [N("Slice", [prev, f"lo{k}", f"hi{k}", "ax"], [f"p{k}"], f"cut{k}"),
                      N("Sigmoid", [f"p{k}"], [f"q{k}"], f"act{k}"),
                      N("ScatterND", [prev, f"idx{k}", f"q{k}"], [f"b{k + 1}"], f"write{k}")]
            inits += [c(f"lo{k}", np.array([lo], np.int64)), c(f"hi{k}", np.array([hi], np.int64)),
                      c(f"idx{k}", _last_axis_indices(H * W, lo, hi, width))]
            prev = f"b{k + 1}"
        inits.append(c("ax", np.array([2], np.int64)))
        nodes += [N("MatMul", [prev, "wq"], ["z"], "unproj"), *back]
        yield label, model(label, nodes, inits, C)


def deconv_cases():
    """ConvTranspose upsampling by 2 as U-Nets write it: kernel 3 with output_padding 1 (MONAI's UNet), against
    kernel 4 and kernel 2 without output padding."""
    for k, pad, out_pad in ((3, 1, 1), (4, 1, 0), (2, 0, 0), (3, 1, 0)):
        yield f"deconv_k{k}_p{pad}_op{out_pad}", model(f"dc{k}{pad}{out_pad}", [
            N("ConvTranspose", ["x", "wt"], ["y"], "op", kernel_shape=[k, k], strides=[2, 2], pads=[pad] * 4,
              output_padding=[out_pad, out_pad])], [w("wt", (C, 16, k, k))], 16)


def bcast_cases():
    """A product of a batched map [B, C, N, K] with a gate broadcast over its channel [B, 1, N, K] (multi-scale
    deformable attention's weighted sampling, RT-DETR / Deformable DETR), against batch 1, no broadcast, and
    a broadcast over the last axis."""
    for b, ch, n, k, gate in ((8, 32, 64, 12, "c"), (1, 32, 64, 12, "c"), (2, 32, 64, 12, "c"), (4, 32, 64, 12, "c"),
                              (8, 8, 64, 12, "c"), (8, 32, 64, 12, "none"), (8, 32, 64, 12, "k"),
                              (8, 32, 300, 12, "c"), (4, 32, 64, 16, "c"), (8, 4, 64, 12, "c"),
                              (8, 12, 64, 12, "c"), (8, 16, 64, 12, "c"), (4, 2, 64, 12, "c")):
        gshape = {"c": (b, 1, n, k), "none": (b, ch, n, k), "k": (b, ch, n, 1)}[gate]
        gch = b if gate == "c" else b * ch  # the gate map's channels before its reshape
        nodes = [N("Conv", ["in", "wx"], ["xm"], "pre_conv"),
                 N("Reshape", ["xm", "sx"], ["x"], "x_reshape"),
                 N("Conv", ["in", "wg"], ["gm"], "gate_conv", **({} if gate != "k" else {"kernel_shape": [1, k],
                                                                                          "strides": [1, k]})),
                 N("Sigmoid", ["gm"], ["gs"], "gate_sigmoid"),
                 N("Reshape", ["gs", "sg"], ["g"], "gate_reshape"),
                 N("Mul", ["x", "g"], ["y4"], "op"),
                 N("Reshape", ["y4", "sy"], ["y"], "y_reshape"),
                 N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits = [w("wx", (b * ch, 3, 1, 1)), w("wg", (gch, 3, 1, 1 if gate != "k" else k)),
                 w("w1", (8, b * ch, 1, 1)),
                 c("sx", np.array([b, ch, n, k], np.int64)), c("sg", np.array(gshape, np.int64)),
                 c("sy", np.array([1, b * ch, n, k], np.int64))]
        yield f"bcast_{gate}_b{b}_c{ch}_n{n}_k{k}", free_model(f"bc{b}{gate}", (1, 3, n, k), nodes, inits)


def deform_cases():
    """Multi-scale deformable attention's sampling as RT-DETR exports it: per level a value map [B, C, H, W] read
    by GridSample at [B, N, P, 2] points, the levels joined on the point axis, weighted by a softmax gate [B, 1, N,
    L*P] and summed over the points: does the weighting Mul stay on the NPU beside CPU GridSamples?"""
    for b, ch, pts, sides in ((8, 32, 4, (16, 8, 4)), (8, 32, 4, (8, 4, 2)), (1, 32, 4, (16, 8, 4)), (8, 32, 4, (16,))):
        lv = len(sides)
        big = sides[0]
        n = big * big
        nodes, inits = [], []
        samples = []
        for i, side in enumerate(sides):
            pool = big // side
            src = "in" if pool == 1 else f"pool{i}"
            if pool > 1:
                nodes.append(N("AveragePool", ["in"], [src], f"pool{i}_op", kernel_shape=[pool, pool],
                               strides=[pool, pool]))
            nodes += [N("Conv", [src, f"wv{i}"], [f"v{i}m"], f"value_conv{i}"),
                      N("Reshape", [f"v{i}m", f"sv{i}"], [f"v{i}"], f"value_reshape{i}"),
                      N("GridSample", [f"v{i}", f"grid{i}"], [f"s{i}"], f"grid_sample{i}", align_corners=0)]
            inits += [w(f"wv{i}", (b * ch, 3, 1, 1)), c(f"sv{i}", np.array([b, ch, side, side], np.int64)),
                      c(f"grid{i}", rng.uniform(-1, 1, (b, n, pts, 2)).astype(np.float32))]
            samples.append(f"s{i}")
        nodes += [N("Concat", samples, ["cat"], "levels_concat", axis=3) if lv > 1 else
                  N("Identity", samples, ["cat"], "levels_concat"),
                  N("Conv", ["in", "wg"], ["gm"], "gate_conv"),
                  N("Reshape", ["gm", "sg"], ["gr"], "gate_reshape"),
                  N("Softmax", ["gr"], ["gs"], "gate_softmax", axis=-1),
                  N("Reshape", ["gs", "sg2"], ["g"], "gate_heads"),
                  N("Mul", ["cat", "g"], ["y4"], "op"),
                  N("ReduceSum", ["y4", "ax3"], ["rs"], "point_sum", keepdims=0),
                  N("Reshape", ["rs", "sy"], ["y"], "y_reshape"),
                  N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits += [w("wg", (b * lv * pts, 3, 1, 1)), c("sg", np.array([1, b, -1, lv * pts], np.int64)),
                  c("sg2", np.array([b, 1, -1, lv * pts], np.int64)), c("ax3", np.array([3], np.int64)),
                  c("sy", np.array([1, b * ch, n, 1], np.int64)), w("w1", (8, b * ch, 1, 1))]
        yield (f"deform_b{b}_c{ch}_n{n}_p{pts}_l{lv}",
               free_model(f"df{b}", (1, 3, big, big), nodes, inits, opset=17))


def video_token_cases():
    """Video transformers' patch embedding: a Conv3d map [1, C, T, H, W] flattened into tokens [1, C, T*H*W]
    (VideoMAE, ViViT, V-JEPA 2), then a token MatMul; and diffusion transformers' unpatchify: tokens [1, h*w,
    p*q*c] cut into [1, h, w, p, q, c], permuted to [1, c, h, p, w, q] (a Transpose, or the permutation-only Einsum
    diffusers writes) and merged into the map [1, c, h*p, w*q] (DiT, PixArt, SD3)."""
    for ch, t, h, wd in ((32, 4, 7, 7), (32, 4, 8, 8), (32, 2, 4, 4), (32, 1, 7, 7), (48, 3, 5, 5), (32, 2, 10, 10),
                         (32, 3, 4, 4), (32, 4, 2, 2), (32, 2, 8, 6), (32, 2, 2, 12)):
        nodes = [N("Conv", ["in", "w3"], ["v"], "pre_conv", kernel_shape=[1, 2, 2], strides=[1, 2, 2]),
                 N("Reshape", ["v", "s3"], ["tok"], "op"),
                 N("Transpose", ["tok"], ["tt"], "to_tokens", perm=[0, 2, 1]),
                 N("MatMul", ["tt", "mw"], ["out"], "post_matmul")]
        inits = [w("w3", (ch, 3, 1, 2, 2)), c("s3", np.array([1, ch, -1], np.int64)), w("mw", (ch, ch))]
        yield f"video_flatten_c{ch}_t{t}_{h}x{wd}", free_model(f"vf{ch}", (1, 3, t, 2 * h, 2 * wd), nodes, inits)
    for hw, pq, cc, how in ((8, 2, 8, "transpose"), (8, 2, 8, "einsum"), (16, 2, 4, "einsum"), (8, 1, 32, "einsum"),
                            (8, 4, 4, "transpose")):
        n_tok, dim = hw * hw, pq * pq * cc
        perm = [0, 5, 1, 3, 2, 4]
        move = (N("Transpose", ["r6"], ["p6"], "unpatch_perm", perm=perm) if how == "transpose" else
                N("Einsum", ["r6"], ["p6"], "unpatch_perm", equation="nhwpqc->nchpwq"))
        nodes = [N("Conv", ["in", "w0"], ["m"], "pre_conv"),
                 N("Reshape", ["m", "s_tok"], ["tk"], "to_tokens"),
                 N("Transpose", ["tk"], ["tok"], "tokens_t", perm=[0, 2, 1]),
                 N("MatMul", ["tok", "mw"], ["proj"], "proj_out"),
                 N("Reshape", ["proj", "s6"], ["r6"], "op"), move,
                 N("Reshape", ["p6", "s_map"], ["y"], "to_map"),
                 N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits = [w("w0", (32, 3, 1, 1)), c("s_tok", np.array([1, 32, n_tok], np.int64)), w("mw", (32, dim)),
                 c("s6", np.array([1, hw, hw, pq, pq, cc], np.int64)),
                 c("s_map", np.array([1, cc, hw * pq, hw * pq], np.int64)), w("w1", (8, cc, 1, 1))]
        yield (f"unpatchify_{how}_h{hw}_p{pq}_c{cc}",
               free_model(f"up{hw}{pq}", (1, 3, hw, hw), nodes, inits, opset=17))


def _rope_model(name, heads, side, d, rotate, rotate_inits):
    """Per-head tokens x [1, h, N, d] from a Conv map -> `rotate` (x -> rot, through rot5 [1, h, N, d/2, 2] and the
    Reshape op_back) -> x cos + rot sin -> back to the map -> Conv."""
    n = side * side
    nodes = [N("Conv", ["in", "w0"], ["m"], "pre_conv"),
             N("Reshape", ["m", "s_heads"], ["hd"], "to_heads"),
             N("Transpose", ["hd"], ["x"], "heads_t", perm=[0, 1, 3, 2]),
             *rotate,
             N("Reshape", ["rot5", "s_back"], ["rot"], "op_back"),
             N("Mul", ["x", "cos"], ["xc"], "mul_cos"),
             N("Mul", ["rot", "sin"], ["rs"], "mul_sin"),
             N("Add", ["xc", "rs"], ["emb"], "rope_add"),
             N("Transpose", ["emb"], ["et"], "back_t", perm=[0, 1, 3, 2]),
             N("Reshape", ["et", "s_map"], ["y"], "to_map"),
             N("Conv", ["y", "w1"], ["out"], "post_conv")]
    inits = [w("w0", (heads * d, 3, 1, 1)), c("s_heads", np.array([1, heads, d, n], np.int64)), *rotate_inits,
             c("s_back", np.array([1, heads, n, d], np.int64)),
             c("cos", rng.uniform(-1, 1, (n, d)).astype(np.float32)),
             c("sin", rng.uniform(-1, 1, (n, d)).astype(np.float32)),
             c("s_map", np.array([1, heads * d, side, side], np.int64)), w("w1", (8, heads * d, 1, 1))]
    return free_model(name, (1, 3, side, side), nodes, inits)


def rope_pair_cases():
    """Rotary embedding over interleaved pairs (V-JEPA 2, GPT-J style): per-head tokens [1, h, N, d] -> Reshape
    [1, h, N, d/2, 2] -> Split -> [-x2, x1] stacked on the pair axis -> Reshape back [1, h, N, d] -> x cos + that x
    sin: the two pair Reshapes."""
    for heads, side, d in ((3, 14, 20), (3, 14, 32), (4, 8, 16), (4, 8, 20), (2, 14, 64), (4, 8, 24), (4, 8, 12),
                           (4, 8, 40)):
        rotate = [N("Reshape", ["x", "s_pairs"], ["pr"], "op"),
                  N("Split", ["pr", "two"], ["x1", "x2"], "pair_split", axis=4),
                  N("Neg", ["x2"], ["nx2"], "pair_neg"),
                  N("Concat", ["nx2", "x1"], ["rot5"], "pair_stack", axis=4)]
        cut = [c("s_pairs", np.array([1, heads, side * side, d // 2, 2], np.int64)),
               c("two", np.array([1, 1], np.int64))]
        yield f"rope_pairs_h{heads}_n{side * side}_d{d}", _rope_model(f"rp{d}", heads, side, d, rotate, cut)


def rope_stack_cases():
    """The same rotation written without a pair cut (timm's ViT-RoPE and EVA-02): the even and odd elements taken
    with strided Slices, [-x_odd, x_even] stacked as Unsqueeze + Concat on a new last axis, then the one Reshape
    [1, h, N, d/2, 2] -> [1, h, N, d] that joins the pairs."""
    for heads, side, d in ((2, 14, 64), (3, 14, 20), (4, 8, 16), (4, 8, 12)):
        rotate = [N("Slice", ["x", "s0", "end", "ax", "st"], ["ev"], "even"),
                  N("Slice", ["x", "s1", "end", "ax", "st"], ["od"], "odd"),
                  N("Neg", ["od"], ["nod"], "pair_neg"),
                  N("Unsqueeze", ["nod", "last"], ["u1"], "unsq_a"),
                  N("Unsqueeze", ["ev", "last"], ["u2"], "unsq_b"),
                  N("Concat", ["u1", "u2"], ["rot5"], "pair_stack", axis=4)]
        strided = [c("s0", np.array([0], np.int64)), c("s1", np.array([1], np.int64)),
                   c("end", np.array([d], np.int64)), c("ax", np.array([3], np.int64)),
                   c("st", np.array([2], np.int64)), c("last", np.array([4], np.int64))]
        yield f"rope_stack_h{heads}_n{side * side}_d{d}", _rope_model(f"rs{d}", heads, side, d, rotate, strided)


def token_mix_cases():
    """A token-mixing Linear over 196 tokens of 384 channels (gMLP's spatial gating unit, ResMLP's token MLP):
    tokens [1, 196, 384] -> norm -> Transpose -> MatMul [196, 196] + bias -> Transpose back -> Mul -> tokens.
    The norm is a LayerNormalization (gMLP) or a per-channel affine (ResMLP); the Mul gates with the other half of
    the channels (gMLP) or scales by a constant (ResMLP's layer scale)."""
    n, ch = 196, 384
    for norm, gate in (("ln", "gate"), ("ln", "const"), ("affine", "gate"), ("affine", "const")):
        nodes = [N("Conv", ["in", "w0"], ["m"], "pre_conv"),
                 N("Reshape", ["m", "s3"], ["r"], "to_tokens"),
                 N("Transpose", ["r"], ["t"], "tokens_t", perm=[0, 2, 1]),
                 N("Slice", ["t", "lo", "mid", "ax"], ["u"], "half_u"),
                 N("Slice", ["t", "mid", "hi", "ax"], ["v"], "half_v")]
        if norm == "ln":
            nodes.append(N("LayerNormalization", ["v", "g", "b"], ["vn"], "norm", axis=-1, epsilon=1e-5))
        else:
            nodes += [N("Mul", ["v", "g"], ["va"], "norm_scale"), N("Add", ["va", "b"], ["vn"], "norm_shift")]
        nodes += [N("Transpose", ["vn"], ["vt"], "swap", perm=[0, 2, 1]),
                  N("MatMul", ["vt", "wt"], ["mm"], "op"),
                  N("Add", ["mm", "bt"], ["mb"], "op_bias"),
                  N("Transpose", ["mb"], ["back"], "swap_back", perm=[0, 2, 1]),
                  N("Mul", ["u" if gate == "gate" else "ls", "back"], ["y3"], "gate_mul"),
                  N("Transpose", ["y3"], ["yt"], "map_t", perm=[0, 2, 1]),
                  N("Reshape", ["yt", "s4"], ["y"], "to_map"),
                  N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits = [w("w0", (2 * ch, 3, 1, 1)), c("s3", np.array([1, 2 * ch, n], np.int64)),
                 c("lo", np.array([0], np.int64)), c("mid", np.array([ch], np.int64)),
                 c("hi", np.array([2 * ch], np.int64)), c("ax", np.array([2], np.int64)),
                 w("g", (ch,)), w("b", (ch,)), w("wt", (n, n)), w("bt", (n,)), w("ls", (ch,)),
                 c("s4", np.array([1, ch, 14, 14], np.int64)), w("w1", (8, ch, 1, 1))]
        yield f"token_mix_{norm}_{gate}", free_model(f"tm{norm}{gate}", (1, 3, 14, 14), nodes, inits)


def tile_broadcast_cases():
    """Tile that only repeats axes of size 1 (a broadcast written as Tile: TimeSformer's class token [1, 1, C]
    repeated over the frames), against repeats of a wider axis."""
    tokens = [N("Reshape", ["x", "s3"], ["r"], "to_tokens"), N("Transpose", ["r"], ["t"], "tokens_t", perm=[0, 2, 1])]
    back = [N("Transpose", ["u"], ["ub"], "back_t", perm=[0, 2, 1]), N("Reshape", ["ub", "s4"], ["y"], "back_map")]
    shapes = [c("s3", np.array([1, C, H * W], np.int64)), c("s4", np.array([1, C, H, W], np.int64))]
    pooled = [N("GlobalAveragePool", ["x"], ["g"], "gap"), N("Reshape", ["g", "s_cls"], ["cls"], "cls_reshape")]
    yield "tile_bcast_r3_tokens", model("tb3", [*tokens, *pooled, N("Tile", ["cls", "rep"], ["rc"], "op"),
                                                N("Add", ["t", "rc"], ["u"], "add"), *back],
                                        [*shapes, c("s_cls", np.array([1, 1, C], np.int64)),
                                         c("rep", np.array([1, H * W, 1], np.int64))], C)
    yield "tile_bcast_r4_two_axes", model("tb4", [N("GlobalAveragePool", ["x"], ["g"], "gap"),
                                                  N("Tile", ["g", "rep"], ["gt"], "op"),
                                                  N("Mul", ["x", "gt"], ["y"], "mul")],
                                          [c("rep", np.array([1, 1, H, W], np.int64))], C)
    yield "tile_wide_r3_tokens", model("tw3", [*tokens, N("Slice", ["t", "st", "en", "ax"], ["half"], "half"),
                                               N("Tile", ["half", "rep"], ["rc"], "op"),
                                               N("Add", ["t", "rc"], ["u"], "add"), *back],
                                       [*shapes, c("st", np.array([0], np.int64)),
                                        c("en", np.array([H * W // 2], np.int64)), c("ax", np.array([1], np.int64)),
                                        c("rep", np.array([1, 2, 1], np.int64))], C)


def gather_batch_cases():
    """The class token of each of B token sequences [B, N, C] taken with a scalar Gather on axis 1 (X-CLIP's
    per-frame class tokens, B = 8 frames), against one sequence (a ViT's pooling)."""
    for b, n, idx in ((8, 50, 0), (1, 50, 0), (2, 50, 0), (8, 16, 3)):
        nodes = [N("Conv", ["in", "w0"], ["m"], "pre_conv"),
                 N("Transpose", ["m"], ["mt"], "to_last", perm=[0, 2, 3, 1]),
                 N("Reshape", ["mt", "s3"], ["tok"], "to_tokens"),
                 N("Sigmoid", ["tok"], ["ln"], "act"),
                 N("Gather", ["ln", "i"], ["cls"], "op", axis=1),
                 N("Gemm", ["cls", "fw"], ["f"], "fc", transB=1),
                 N("Reshape", ["f", "s4"], ["y"], "to_map"),
                 N("Conv", ["y", "w1"], ["out"], "post_conv")]
        inits = [w("w0", (32, 3, 1, 1)), c("s3", np.array([b, n, 32], np.int64)), c("i", np.array(idx, np.int64)),
                 w("fw", (32, 32)),
                 c("s4", np.array([1, b * 32, 1, 1], np.int64)), w("w1", (8, b * 32, 1, 1))]
        yield f"gather_cls_b{b}_n{n}_i{idx}", free_model(f"gc{b}", (1, 3, b, n), nodes, inits)


def all_cases():
    yield from cases()
    yield from more_cases()
    yield from norm_cases()
    yield from output_cases()
    yield from variant_cases()
    yield from rank_cases()
    yield from cast_cases()
    yield from stride_cases()
    yield from div_cases()
    yield from dense_cases()
    yield from scatter_cases()
    yield from deconv_cases()
    yield from bcast_cases()
    yield from deform_cases()
    yield from video_token_cases()
    yield from rope_pair_cases()
    yield from rope_stack_cases()
    yield from token_mix_cases()
    yield from tile_broadcast_cases()
    yield from gather_batch_cases()


def convert_case(label, socs):
    with tempfile.TemporaryDirectory() as tmp:
        model = dict(all_cases())[label]
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        data = os.path.join(tmp, "x.npy")
        np.save(data, np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))
        dataset = os.path.join(tmp, "ds.txt")
        with open(dataset, "w") as handle:
            handle.write(data + "\n")
        path = os.path.join(tmp, label + ".onnx")
        onnx.save(model, path)
        os.chdir(tmp)  # the toolkit writes check*.onnx into the working directory
        result = {}
        for soc in socs:
            for quantize in (False, True):
                ok, rows, errors = p.convert(path, soc, quantize, dataset)
                layers = {}
                for kind, dtype, target, full in rows:
                    name = full.partition(":")[2]
                    if name not in ("pre_conv", "post_conv", "in", "out"):
                        layers.setdefault(name, []).append(f"{kind}:{dtype}:{target}")
                result[f"{soc}/{'int8' if quantize else 'fp16'}"] = {
                    "built": ok,
                    "layers": layers,
                    "errors": errors[:2],
                }
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="")
    parser.add_argument("--socs", default=SOCS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(convert_case(args.one, args.socs.split(","))))
        return 0
    labels = args.cases.split(",") if args.cases else [label for label, _ in all_cases()]
    for label in labels:
        run = subprocess.run(
            [sys.executable, __file__, "--one", label, "--socs", args.socs], capture_output=True, text=True
        )
        lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
        shown = lines[-1] if run.returncode == 0 and lines else f"toolkit process died (exit {run.returncode})"
        print(label, shown, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
