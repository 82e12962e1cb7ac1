"""Probe rknn-toolkit2 2.5.0 on RK3566 with parametrised attention/layout graphs, to find where a rule's
condition really lies (channel counts, token counts, precision) instead of reading it off one model.

Run with the toolkit's own interpreter, under nice:
    nice -n 10 RKNN_VENV/bin/python tools/probe_rknn_rk3566.py vop:64:128 vop:32:100 ... [--socs rk3566]
Case grammar (all graphs: input [1,3,H,W] -> Conv -> pattern -> Conv):
    vop:D:N[:HEADS]  attention with per-head dim D over N = H*W tokens: the V operand's layout into exMatMul
    xca:D:N[:HEADS]  cross-covariance attention: q/k/v stay [1, heads, D, N], P.V contracts over V's channels
    gn:C:G[:S]       GroupNorm written as Reshape -> InstanceNormalization -> Reshape on a [1, C, S, S] map (S 16)
    shuffle:C:G:CAT[:RES]  ShuffleNet's channel shuffle of a [1, C, 14, 14] map in G groups (CAT 1: after a Concat of
                     two convs; RES 1: added to the unshuffled map, so no conv can absorb the permutation)
    flat:C:S         Flatten of a [1, C, S, S] map into a vector
    out3:C:N         a conv map reshaped to a rank-3 graph output [1, C, N]
    winattn:B:N:H:D  windowed attention: B windows of N tokens in the batch axis, H heads of D channels
    unfoldattn:A:B:H:D  MobileViT-style attention: 2x2 patch pixels of a [1, C, 2A, 2B] map in the batch axis
    tokmix:N:C       MLP-Mixer token mixing: tokens from a MatMul transposed, a MatMul over N, transposed back
    tokmean:N:C      a token MatMul on [1, N, C] averaged over the token axis (ReduceMean axes [1])
    mu:A:B:D:SWAP    Hiera mask units: qkv Reshape [1, A, B, 3, 2, D] + rank-6 Transpose with the token pieces swapped
    reducew:C:H:W    a ReduceSum over W of a conv map, keepdims (RKNN-REDUCE-RELAYOUT)
    headjoin:HEADS:D:N:DMAJOR  P.V joined back into tokens heads-major (0) or d-major (1) (RKNN-CHANNEL-SCATTER)
    vitattn:N:HEADS:D[:BIAS[:RES]]  ViT attention on tokens [1, N, heads*D] after an element-wise op: qkv MatMul -> Reshape [1,N,3,h,D] ->
                     Transpose (2,0,3,1,4) -> Split -> Squeeze -> softmax(Q.K^T).V -> proj MatMul (which layers the
                     q/k/v unbind and V's transpose become, and whom they are named after); RES 1 adds Q to
                     P.V before the head join (MViTv2's residual pooling)
    fcout:C:K        a classifier head: a [1, C, 4, 4] map pooled, flattened, Gemm to K classes as the rank-2
                     graph output (RKNN-VECTOR-OUTPUT: the reshape of (1,K,1,1) into [1, K])
    mapjoin:HEADS:D:N:VFIRST  conv-map attention joined back into the map: P.V through a channels-last Reshape
                     [1, H, W, heads*D] + Transpose (0,3,1,2) (MobileNetV4's MQA), or V.P^T reshaped straight
                     back (YOLO11's PSA) (RKNN-HEAD-SPLIT: the head width of the join)
talk:HEADS:D:N:FORM:SIDE  talking-heads attention (CaiT, EfficientFormerV2): the scores' heads mixed by a
                     1x1 Conv (FORM 0) or by a Transpose (0,2,3,1) + constant MatMul over the heads + Transpose
                     (0,3,1,2) (FORM 1), before the Softmax (SIDE 1), after it (SIDE 2) or both (SIDE 3)
                     (RKNN-EXMATMUL-CONV: which relayouts the heads mix costs and whom they are named after)
bilstm:H:W:C:HID:SWAP  Sequencer2D's bidirectional LSTM over the rows of a [1, C, H, W] map made channels-last
                     (batch W); SWAP 1 runs it over the columns by swapping H and W with (0,2,1,3) + Reshape +
                     (1,0,2) and back (layout runs that compose to a reshape; the direction join Transpose
                     (0,2,1,3) + Reshape of Y [seq, 2, batch, HID])
seqmix:H:W:C:HID:SWAP  timm Sequencer2D's token mixer: a row LSTM and (SWAP 1) a column LSTM over the H/W-swapped map
                     (SWAP 0: a second row LSTM), each direction-joined, Concat on the channel, fc MatMul
winpart:NH:NW:WS:C:FLAT  Swin's window partition of a [1, C, NH*WS, NW*WS] map made channels-last: Reshape
                     [1, NH, WS, NW, WS, C] -> Transpose (0,1,3,2,4,5) -> Reshape [NH*NW, WS, WS, C] (FLAT 1: and
                     Reshape [NH*NW, WS*WS, C] tokens) -> token MatMul -> the reverse back to the map
swinattn:N:WS:HEADS:D:COS  Swin's windowed attention on an N x N grid of WS x WS windows: partition through
                     [B, WS, WS, C] into tokens, qkv MatMul, Reshape [B, WS*WS, 3, HEADS, D], Transpose (2,0,3,1,4),
                     Split, Squeeze, q scaled (COS 0) or q and k L2-normalised over D (COS 1, SwinV2-cr's cosine
                     attention), softmax(Q.K^T).V, head join, proj MatMul, reverse
eca:C:K:SIDE      ECA channel attention on a [1, C, 8, 8] map: GlobalAveragePool -> Reshape [1, 1, C] -> Conv1d
                     (kernel K) -> Sigmoid -> Reshape [1, C, 1, 1] -> Mul (SIDE 1: timm's mean over (2,3) -> [1, C])
slicehead:HEADS:D:N  CoAtNet's attention on a conv map: one qkv 1x1 Conv, Reshape [1, HEADS, 3*D, N], q/k/v
                     cut apart by three Slices, q and v transposed to tokens, softmax(Q.K).V, back to the map
maxattn:N:WS:HEADS:D  MaxViT's block attention on 4-D windows: partition into [B, WS, WS, C] (no token
                     reshape), qkv MatMul, Reshape [B, WS*WS, HEADS, 3*D], Transpose (0,2,1,3), Slices, softmax(Q.K^T).V,
                     Transpose (0,2,1,3), Reshape [B, WS, WS, C], proj MatMul, reverse
einattn:N:WS:HEADS:D:SPACED  torchvision MaxViT's attention on 4-D windows [1, N*N, WS*WS, C]: qkv MatMul + bias,
                     three channel Slices each head-split [1, G, P, h, D] + Transpose (0,1,3,2,4), Einsum scores and
                     P.V written with blanks as torch does (SPACED 1) or without (0), Transpose back, Reshape, proj
lsa:N:WS:HEADS:D:ORDER  Twins' locally-grouped attention with the windows kept in axis 1: partition of an N x N
                     grid of WS x WS windows, qkv MatMul on [1, N, N, WS, WS, C], Reshape [1, N*N, WS*WS, 3, HEADS, D],
                     unbind Transpose windows-before-heads (3,0,1,4,2,5) (ORDER 0, Twins) or heads-before-windows
                     (3,0,4,1,2,5) (ORDER 1, NesT), attention, heads joined back, reverse
spmean:C:S:ORDER:KEEP[:OP]  a squeeze-excitation gate from a spatial mean (OP 1/2/3: ReduceSum/ReduceL2/ReduceMax) of a Relu'd [1, C, S, S] conv map: ReduceMean
                     over axes (2, 3) (ORDER 0), (3, 2) (ORDER 1, as the dynamo exporter writes [-1, -2]) or (-2, -1)
                     (ORDER 2), keepdims KEEP (0: Reshape to [1, C, 1, 1]), 1x1 Conv, Sigmoid, Mul into the map
lastmean:S:C:NORM    a channels-last map's mean over its pixels (Swin/Sequencer heads): Conv map [1, C, S, S] ->
                     Transpose (0, 2, 3, 1) (-> LayerNormalization over C when NORM 1) -> ReduceMean axes (1, 2),
                     keepdims 0 -> Reshape [1, C, 1, 1]
srattn:S:SR:HEADS:D   spatial-reduction attention (PVTv2, Twins' GSA) on tokens of an S x S map: q from the tokens; k, v
                     from the map reduced by a stride-SR Conv, Reshape [1, C, M] -> Transpose -> bias Add -> kv MatMul ->
                     Reshape [1, M, 2, h, d] -> Transpose (2,0,3,1,4) -> Split -> Squeeze; K^T scaled by a Mul before Q.K^T
mergelast:S:C:NORM    timm Swin's patch merging on a channels-last [1, S, S, C] map: Reshape [1, S/2, 2, S/2, 2, C] ->
                     Transpose (0,1,3,4,2,5) -> Reshape [1, S/2, S/2, 4C] (-> LayerNormalization over 4C when NORM 1) ->
                     reduction MatMul to 2C (RKNN-MERGE-CHANNELS-LAST)
gridrev:G:N:C         MaxViT's grid partition and reverse around a linear layer on a channels-last [1, G*N, G*N, C] map:
                     Reshape [1, G, N, G, N, C] -> Transpose (0,2,4,1,3,5) -> Reshape [N*N, G, G, C] -> MatMul + bias ->
                     Reshape [1, N, N, G, G, C] -> Transpose (0,3,1,4,2,5) -> Reshape [1, G*N, G*N, C] (RKNN-GRID-MERGE-ENDS)
factor:S:HEADS:D:CLS:CRPE  CoaT's factorised attention on tokens of an S x S map (CLS 1: a class token in front, N = S*S+1):
                     qkv MatMul -> Reshape [1, N, 3, h, d] -> Transpose (2,0,3,1,4) -> Split -> Squeeze, softmax of K over
                     the tokens (axis 2) -> Transpose (0,1,3,2) -> K^T.V [1, h, d, d] -> Q.(K^T.V); CRPE 1 adds CoaT's
                     convolutional position term q * dwconv(v) (v's pixel tokens Transpose (0,1,3,2) + Reshape into the map,
                     back by Reshape [1, h, d, S*S] + Transpose, the class row padded back); heads joined by Transpose
                     (0,2,1,3) + Reshape, proj MatMul
pad:FORM:AXIS:AMOUNT  a constant Pad of AMOUNT at the end of one axis: FORM 0 on a conv map [1, 16, 8, 8], FORM 1 on
                     tokens [1, 64, 16] made by a token MatMul, FORM 2 on attention heads [1, 2, 64, 8] split from
                     them (2026-12-02, FP16 and INT8: a Pad layer on the NPU in every form that built, the tokens'
                     channel included (a conv map's channel pad, pad:0:1:1, failed to build), so
                     BoTNet's and EfficientViT's CPU Pads are not explained by the padded axis)
Each case converts in a fresh process, FP16 and INT8, and prints the layers of the pattern (op, target,
shapes, name); the Conv stem and tail are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rknn_build import captured_build

rng = np.random.default_rng(0)
Built = tuple[onnx.ModelProto, tuple[int, int]]


def c(name: str, a: Any) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(a), name)


def w(name: str, shape: tuple[int, ...], s: float = 0.1) -> onnx.TensorProto:
    return c(name, rng.normal(0, s, shape).astype(np.float32))


def N(op: str, i: list[str], o: list[str], name: str, **kw: Any) -> onnx.NodeProto:
    return helper.make_node(op, i, o, name=name, **kw)


def hw_for(n: int) -> tuple[int, int]:
    """An H x W grid with H*W = n, as square as possible."""
    h = int(n**0.5)
    while n % h:
        h -= 1
    return h, n // h


def wrap(name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], cin: int, h: int, w_: int,
         out_c: int) -> Built:
    head = [N("Conv", ["in", "w0"], ["x"], "pre_conv")]
    tail = [N("Conv", ["y", "w1"], ["out"], "post_conv")]
    g = helper.make_graph(
        head + nodes + tail, name,
        [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, h, w_])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [w("w0", (cin, 3, 1, 1)), w("w1", (8, out_c, 1, 1)), *inits],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m), (h, w_)


def _qkv_unbind() -> list[onnx.NodeProto]:
    """qkv tokens -> Reshape [B, N, 3, h, d] ("s5") -> Transpose (2, 0, 3, 1, 4) -> Split on axis 0 ("ones") ->
    Squeeze ("ax0") -> q, k, v [B, h, N, d], as timm and torchvision write the q/k/v unbind."""
    return [N("Reshape", ["qkv", "s5"], ["q5"], "qkv_reshape"),
            N("Transpose", ["q5"], ["qt"], "qkv_transpose", perm=[2, 0, 3, 1, 4]),
            N("Split", ["qt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0),
            *(N("Squeeze", [f"{t}1", "ax0"], [t], f"{t}_squeeze") for t in "qkv")]


def _partition() -> list[onnx.NodeProto]:
    """x [1, C, H, W] -> channels last -> [1, nH, ws, nW, ws, C] ("s6") -> the 2-D window Transpose
    (0,1,3,2,4,5), as Swin-style partitions write it."""
    return [N("Transpose", ["x"], ["xl"], "to_last", perm=[0, 2, 3, 1]),
            N("Reshape", ["xl", "s6"], ["x6"], "part_reshape"),
            N("Transpose", ["x6"], ["xt"], "part_transpose", perm=[0, 1, 3, 2, 4, 5])]


def _unwindow() -> list[onnx.NodeProto]:
    """The window reverse from [1, nH, nW, ws, ws, C] ("m6"): (0,1,3,2,4,5) -> [1, H, W, C] ("s_map") -> NCHW y."""
    return [N("Transpose", ["m6"], ["mt"], "rev_transpose", perm=[0, 1, 3, 2, 4, 5]),
            N("Reshape", ["mt", "s_map"], ["ml"], "rev_map"),
            N("Transpose", ["ml"], ["y"], "to_first", perm=[0, 3, 1, 2])]


def _reverse(src: str) -> list[onnx.NodeProto]:
    """Windows `src` [B, ws, ws, C] (or tokens) reshaped to [1, nH, nW, ws, ws, C] ("s_back6"), then `_unwindow`."""
    return [N("Reshape", [src, "s_back6"], ["m6"], "rev_reshape"), *_unwindow()]


def vop(d: int, n: int, heads: int = 1) -> Built:
    """softmax(Q.K^T * s).V with q/k/v from 1x1 convs reshaped to [1, heads, d, N] and transposed to tokens."""
    h, w_ = hw_for(n)
    cin = 32
    nodes = [N("Conv", ["x", f"w{t}"], [f"{t}0"], f"{t}_conv") for t in "qkv"]
    for t in "qkv":
        nodes += [N("Reshape", [f"{t}0", "s"], [f"{t}r"], f"{t}_rs"),
                  N("Transpose", [f"{t}r"], [t], f"{t}_tr", perm=[0, 1, 3, 2])]
    nodes += [
        N("Transpose", ["k"], ["kt"], "k_t", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["a"], "qk"),
        N("Mul", ["a", "sc"], ["as"], "scale"),
        N("Softmax", ["as"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "o_tr", perm=[0, 1, 3, 2]),
        N("Reshape", ["ot", "s4"], ["y"], "o_rs"),
    ]
    inits = [w(f"w{t}", (heads * d, cin, 1, 1)) for t in "qkv"] + [
        c("s", np.array([1, heads, d, n], np.int64)),
        c("s4", np.array([1, heads * d, h, w_], np.int64)),
        c("sc", np.float32(d**-0.5)),
    ]
    return wrap("vop", nodes, inits, cin, h, w_, heads * d)


def talk(heads: int, d: int, n: int, form: int, side: int) -> Built:
    """softmax(mix(Q.K^T * s)).V with q/k/v from 1x1 convs as [1, heads, N, d]; mix mixes the heads of the
    scores [1, heads, N, N] with a 1x1 Conv (form 0) or a Transpose to heads-last, a constant MatMul over
    the heads and the Transpose back (form 1); side 1: before the Softmax, 2: after it, 3: both."""
    h, w_ = hw_for(n)
    cin = 32
    nodes = [N("Conv", ["x", f"w{t}"], [f"{t}0"], f"{t}_conv") for t in "qkv"]
    for t in "qkv":
        nodes += [N("Reshape", [f"{t}0", "s"], [f"{t}r"], f"{t}_rs"),
                  N("Transpose", [f"{t}r"], [t], f"{t}_tr", perm=[0, 1, 3, 2])]
    inits = [w(f"w{t}", (heads * d, cin, 1, 1)) for t in "qkv"] + [
        c("s", np.array([1, heads, d, n], np.int64)),
        c("s4", np.array([1, heads * d, h, w_], np.int64)),
        c("sc", np.float32(d**-0.5)),
    ]

    def mix(src: str, tag: str) -> str:
        if form == 0:
            nodes.append(N("Conv", [src, f"wm_{tag}"], [f"{tag}_m"], f"{tag}_conv"))
            inits.append(w(f"wm_{tag}", (heads, heads, 1, 1)))
            return f"{tag}_m"
        nodes.extend([N("Transpose", [src], [f"{tag}_t"], f"{tag}_tr_in", perm=[0, 2, 3, 1]),
                      N("MatMul", [f"{tag}_t", f"wm_{tag}"], [f"{tag}_mm"], f"{tag}_matmul"),
                      N("Transpose", [f"{tag}_mm"], [f"{tag}_m"], f"{tag}_tr_out", perm=[0, 3, 1, 2])])
        inits.append(w(f"wm_{tag}", (heads, heads)))
        return f"{tag}_m"

    nodes += [N("Transpose", ["k"], ["kt"], "k_t", perm=[0, 1, 3, 2]),
              N("MatMul", ["q", "kt"], ["a"], "qk"),
              N("Mul", ["a", "sc"], ["as"], "scale")]
    scores = mix("as", "pre") if side & 1 else "as"
    nodes.append(N("Softmax", [scores], ["p"], "softmax", axis=-1))
    probs = mix("p", "post") if side & 2 else "p"
    nodes += [N("MatMul", [probs, "v"], ["o"], "pv"),
              N("Transpose", ["o"], ["ot"], "o_tr", perm=[0, 1, 3, 2]),
              N("Reshape", ["ot", "s4"], ["y"], "o_rs")]
    return wrap("talk", nodes, inits, cin, h, w_, heads * d)


def bilstm(h: int, w_: int, ch: int, hid: int, swap: int) -> Built:
    """[1, C, H, W] -> (0,2,3,1) -> [1, H, W, C] -> [H, W, C] (SWAP 1: (0,2,1,3) -> [W, H, C] -> (1,0,2) -> back
    to [H, W, C] in memory order) -> bidirectional LSTM (seq H, batch W) -> Y [H, 2, W, HID] -> (0,2,1,3) ->
    Reshape [H, W, 2*HID] (SWAP 1: the swaps undone the same way) -> [1, H, W, 2*HID] -> (0,3,1,2) -> map."""
    nodes = [N("Transpose", ["x"], ["xl"], "to_last", perm=[0, 2, 3, 1])]
    if swap:
        nodes += [N("Transpose", ["xl"], ["xs"], "swap_in", perm=[0, 2, 1, 3]),
                  N("Reshape", ["xs", "s_wh"], ["xr"], "seq_reshape"),
                  N("Transpose", ["xr"], ["seq"], "seq_first", perm=[1, 0, 2])]
    else:
        nodes += [N("Reshape", ["xl", "s_hw"], ["seq"], "seq_reshape")]
    nodes += [N("LSTM", ["seq", "wl", "rl", "bl"], ["yl"], "lstm", direction="bidirectional", hidden_size=hid),
              N("Transpose", ["yl"], ["yt"], "join_transpose", perm=[0, 2, 1, 3]),
              N("Reshape", ["yt", "s_join"], ["yj"], "join_reshape")]
    if swap:
        nodes += [N("Transpose", ["yj"], ["ys"], "seq_back", perm=[1, 0, 2]),
                  N("Reshape", ["ys", "s_map_wh"], ["ym"], "map_reshape"),
                  N("Transpose", ["ym"], ["yl4"], "swap_out", perm=[0, 2, 1, 3])]
    else:
        nodes += [N("Reshape", ["yj", "s_map"], ["yl4"], "map_reshape")]
    nodes += [N("Transpose", ["yl4"], ["y"], "to_first", perm=[0, 3, 1, 2])]
    inits = [w("wl", (2, 4 * hid, ch)), w("rl", (2, 4 * hid, hid)), w("bl", (2, 8 * hid)),
             c("s_hw", np.array([h, w_, ch], np.int64)), c("s_wh", np.array([w_, h, ch], np.int64)),
             c("s_join", np.array([h, w_, 2 * hid], np.int64)), c("s_map", np.array([1, h, w_, 2 * hid], np.int64)),
             c("s_map_wh", np.array([1, w_, h, 2 * hid], np.int64))]
    return wrap("bilstm", nodes, inits, ch, h, w_, 2 * hid)


def seqmix(h: int, w_: int, ch: int, hid: int, swap: int) -> Built:
    """timm Sequencer2D's token mixer on a channels-last map [1, H, W, C]: a bidirectional LSTM over the rows
    ([H, W, C] -> (1,0,2): sequence W, batch H) and one over the columns (SWAP 1: (0,2,1,3) -> [W, H, C] -> (1,0,2):
    sequence H, batch W, swapped back after; SWAP 0: a second row LSTM instead), each direction-joined
    ((0,2,1,3) + Reshape), both Concat on the channel into the fc MatMul."""
    nodes = [N("Transpose", ["x"], ["xl"], "to_last", perm=[0, 2, 3, 1]),
             N("Reshape", ["xl", "s_hw"], ["xh"], "h_reshape"),
             N("Transpose", ["xh"], ["sh"], "h_seq", perm=[1, 0, 2])]
    if swap:
        nodes += [N("Transpose", ["xl"], ["xs"], "v_swap_in", perm=[0, 2, 1, 3]),
                  N("Reshape", ["xs", "s_wh"], ["xv"], "v_reshape"),
                  N("Transpose", ["xv"], ["sv"], "v_seq", perm=[1, 0, 2])]
    else:
        nodes += [N("Reshape", ["xl", "s_hw"], ["xv"], "v_reshape"),
                  N("Transpose", ["xv"], ["sv"], "v_seq", perm=[1, 0, 2])]
    for t in "hv":
        nodes += [N("LSTM", [f"s{t}", f"w{t}", f"r{t}", f"b{t}"], [f"y{t}"], f"{t}_lstm", direction="bidirectional",
                    hidden_size=hid),
                  N("Transpose", [f"y{t}"], [f"y{t}t"], f"{t}_join_transpose", perm=[0, 2, 1, 3]),
                  N("Reshape", [f"y{t}t", "s_join0"], [f"y{t}j"], f"{t}_join_reshape"),
                  N("Transpose", [f"y{t}j"], [f"y{t}b"], f"{t}_seq_back", perm=[1, 0, 2])]
    nodes.append(N("Reshape", ["yhb", "s_map"], ["yh4"], "h_map"))
    if swap:
        nodes += [N("Reshape", ["yvb", "s_map_wh"], ["yvm"], "v_map"),
                  N("Transpose", ["yvm"], ["yv4"], "v_swap_out", perm=[0, 2, 1, 3])]
    else:
        nodes.append(N("Reshape", ["yvb", "s_map"], ["yv4"], "v_map"))
    nodes += [N("Concat", ["yv4", "yh4"], ["cat"], "concat", axis=3),
              N("MatMul", ["cat", "wf"], ["f"], "fc"),
              N("Transpose", ["f"], ["y"], "to_first", perm=[0, 3, 1, 2])]
    inits = [w("wf", (4 * hid, ch)), c("s_join0", np.array([0, 0, -1], np.int64)),
             c("s_hw", np.array([h, w_, ch], np.int64)), c("s_wh", np.array([w_, h, ch], np.int64)),
             c("s_map", np.array([1, h, w_, 2 * hid], np.int64)), c("s_map_wh", np.array([1, w_, h, 2 * hid], np.int64))]
    for t in "hv":
        inits += [w(f"w{t}", (2, 4 * hid, ch)), w(f"r{t}", (2, 4 * hid, hid)), w(f"b{t}", (2, 8 * hid))]
    return wrap("seqmix", nodes, inits, ch, h, w_, ch)


def winpart(nh: int, nw: int, ws: int, ch: int, flat: int) -> Built:
    """[1, C, H, W] -> (0,2,3,1) -> [1, NH, WS, NW, WS, C] -> (0,1,3,2,4,5) -> [B, WS, WS, C] (-> [B, WS*WS, C])
    -> MatMul [C, C] -> the window reverse -> (0,3,1,2) -> map."""
    b, h, w_ = nh * nw, nh * ws, nw * ws
    nodes = [*_partition(),
             N("Reshape", ["xt", "s_tok" if flat == 2 else "s_win"], ["xw"], "part_windows")]
    tokens = "xw"
    if flat == 1:
        nodes.append(N("Reshape", ["xw", "s_tok"], ["xf"], "part_tokens"))
        tokens = "xf"
    nodes += [N("MatMul", [tokens, "wm"], ["m"], "token_matmul"),
              *_reverse("m")]
    inits = [w("wm", (ch, ch)), c("s6", np.array([1, nh, ws, nw, ws, ch], np.int64)),
             c("s_win", np.array([b, ws, ws, ch], np.int64)), c("s_tok", np.array([b, ws * ws, ch], np.int64)),
             c("s_back6", np.array([1, nh, nw, ws, ws, ch], np.int64)), c("s_map", np.array([1, h, w_, ch], np.int64))]
    return wrap("winpart", nodes, inits, ch, h, w_, ch)


def swinattn(n: int, ws: int, heads: int, d: int, cos: int) -> Built:
    """Windowed attention after a 2-D partition through [B, ws, ws, C], as timm's Swin (COS 0) and SwinV2-cr
    (COS 1: q and k divided by their L2 norm over d, clipped, as F.normalize exports it) write it."""
    b, t, ch, side = n * n, ws * ws, heads * d, n * ws
    nodes = [*_partition(),
             N("Reshape", ["xt", "s_win"], ["xw"], "part_windows"),
             N("Reshape", ["xw", "s_tok"], ["xf"], "part_tokens"),
             N("MatMul", ["xf", "wqkv"], ["qkv"], "qkv_matmul"),
             *_qkv_unbind()]
    if cos:
        for t_ in "qk":
            nodes += [N("ReduceL2", [t_], [f"{t_}n"], f"{t_}_l2", axes=[-1], keepdims=1),
                      N("Clip", [f"{t_}n", "eps"], [f"{t_}c"], f"{t_}_clip"),
                      N("Expand", [f"{t_}c", f"s_{t_}"], [f"{t_}e"], f"{t_}_expand"),
                      N("Div", [t_, f"{t_}e"], [f"{t_}u"], f"{t_}_div")]
        qs, ks = "qu", "ku"
    else:
        nodes.append(N("Mul", ["q", "sc"], ["qu"], "q_scale"))
        qs, ks = "qu", "k"
    nodes += [N("Transpose", [ks], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
              N("MatMul", [qs, "kt"], ["a"], "qk"),
              N("Softmax", ["a"], ["p"], "softmax", axis=-1),
              N("MatMul", ["p", "v"], ["o"], "pv"),
              N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
              N("Reshape", ["ot", "s_tok"], ["tok"], "o_join"),
              N("MatMul", ["tok", "wp"], ["pr"], "proj"),
              *_reverse("pr")]
    inits = [w("wqkv", (ch, 3 * ch)), w("wp", (ch, ch)), c("s6", np.array([1, n, ws, n, ws, ch], np.int64)),
             c("s_win", np.array([b, ws, ws, ch], np.int64)), c("s_tok", np.array([b, t, ch], np.int64)),
             c("s5", np.array([b, t, 3, heads, d], np.int64)), c("ones", np.array([1, 1, 1], np.int64)),
             c("ax0", np.array([0], np.int64)), c("sc", np.float32(d**-0.5)), c("eps", np.float32(1e-12)),
             c("s_q", np.array([b, heads, t, d], np.int64)), c("s_k", np.array([b, heads, t, d], np.int64)),
             c("s_back6", np.array([1, n, n, ws, ws, ch], np.int64)),
             c("s_map", np.array([1, side, side, ch], np.int64))]
    return wrap("swinattn", nodes, inits, ch, side, side, ch)


def eca(ch: int, k: int, side: int) -> Built:
    """ECA: the pooled channel vector as a one-channel sequence [1, 1, C], a 1-D Conv over the channels, a
    Sigmoid gate reshaped back to [1, C, 1, 1] and multiplied into the map."""
    pool = [N("ReduceMean", ["x"], ["g"], "pool", axes=[2, 3], keepdims=0)] if side else \
        [N("GlobalAveragePool", ["x"], ["g"], "pool")]
    nodes = [*pool, N("Reshape", ["g", "s_seq"], ["q"], "to_seq"),
             N("Conv", ["q", "wk"], ["cv"], "eca_conv", pads=[k // 2, k // 2]),
             N("Sigmoid", ["cv"], ["gate"], "gate"),
             N("Reshape", ["gate", "s_vec"], ["gv"], "to_vec"),
             N("Mul", ["x", "gv"], ["y"], "scale")]
    inits = [w("wk", (1, 1, k)), c("s_seq", np.array([1, 1, ch], np.int64)),
             c("s_vec", np.array([1, ch, 1, 1], np.int64))]
    return wrap("eca", nodes, inits, ch, 8, 8, ch)


def slicehead(heads: int, d: int, n: int) -> Built:
    """qkv Conv [1, 3*h*d, H, W] -> Reshape [1, h, 3*d, N] -> Slice (q, k, v on axis 2) -> q, v Transpose (0,1,3,2)
    -> softmax(q @ k * s) @ v -> Transpose back -> Reshape to the map (timm's CoAtNet/MaxViT conv attention)."""
    h, w_ = hw_for(n)
    cin = 32
    nodes = [N("Conv", ["x", "wqkv"], ["qkv"], "qkv_conv"),
             N("Reshape", ["qkv", "s"], ["r"], "head_reshape")]
    for i, t in enumerate("qkv"):
        nodes.append(N("Slice", ["r", f"st{i}", f"en{i}", "ax2"], [f"{t}0"], f"{t}_slice"))
    nodes += [N("Transpose", ["q0"], ["q"], "q_tr", perm=[0, 1, 3, 2]),
              N("Transpose", ["v0"], ["v"], "v_tr", perm=[0, 1, 3, 2]),
              N("MatMul", ["q", "k0"], ["a"], "qk"),
              N("Mul", ["a", "sc"], ["as"], "scale"),
              N("Softmax", ["as"], ["p"], "softmax", axis=-1),
              N("MatMul", ["p", "v"], ["o"], "pv"),
              N("Transpose", ["o"], ["ot"], "o_tr", perm=[0, 1, 3, 2]),
              N("Reshape", ["ot", "s4"], ["y"], "o_rs")]
    inits = [w("wqkv", (3 * heads * d, cin, 1, 1)), c("s", np.array([1, heads, 3 * d, n], np.int64)),
             c("s4", np.array([1, heads * d, h, w_], np.int64)), c("sc", np.float32(d**-0.5)),
             c("ax2", np.array([2], np.int64))]
    for i in range(3):
        inits += [c(f"st{i}", np.array([i * d], np.int64)), c(f"en{i}", np.array([(i + 1) * d], np.int64))]
    return wrap("slicehead", nodes, inits, cin, h, w_, heads * d)


def maxattn(n: int, ws: int, heads: int, d: int) -> Built:
    """timm MaxViT's PartitionAttention (block): windows kept as [B, ws, ws, C] through the qkv MatMul; the heads
    split by Reshape [B, N, h, 3d] + Transpose (0,2,1,3) and q/k/v sliced on the last axis."""
    b, t, ch, side = n * n, ws * ws, heads * d, n * ws
    nodes = [*_partition(),
             N("Reshape", ["xt", "s_win"], ["xw"], "part_windows"),
             N("MatMul", ["xw", "wqkv"], ["qkv"], "qkv_matmul"),
             N("Reshape", ["qkv", "s_heads"], ["qh"], "head_reshape"),
             N("Transpose", ["qh"], ["qt"], "head_transpose", perm=[0, 2, 1, 3])]
    for i, t_ in enumerate("qkv"):
        nodes.append(N("Slice", ["qt", f"st{i}", f"en{i}", "ax3"], [t_], f"{t_}_slice"))
    nodes += [N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
              N("Mul", ["q", "sc"], ["qs"], "q_scale"),
              N("MatMul", ["qs", "kt"], ["a"], "qk"),
              N("Softmax", ["a"], ["p"], "softmax", axis=-1),
              N("MatMul", ["p", "v"], ["o"], "pv"),
              N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
              N("Reshape", ["ot", "s_win"], ["ow"], "o_join"),
              N("MatMul", ["ow", "wp"], ["pr"], "proj"),
              *_reverse("pr")]
    inits = [w("wqkv", (ch, 3 * ch)), w("wp", (ch, ch)), c("s6", np.array([1, n, ws, n, ws, ch], np.int64)),
             c("s_win", np.array([b, ws, ws, ch], np.int64)), c("s_heads", np.array([b, t, heads, 3 * d], np.int64)),
             c("ax3", np.array([3], np.int64)), c("sc", np.float32(d**-0.5)),
             c("s_back6", np.array([1, n, n, ws, ws, ch], np.int64)),
             c("s_map", np.array([1, side, side, ch], np.int64))]
    for i in range(3):
        inits += [c(f"st{i}", np.array([i * d], np.int64)), c(f"en{i}", np.array([(i + 1) * d], np.int64))]
    return wrap("maxattn", nodes, inits, ch, side, side, ch)


def einattn(n: int, ws: int, heads: int, d: int, spaced: int) -> Built:
    """torchvision MaxViT's RelativePositionalMultiHeadAttention on 4-D windows [1, G, P, C] (G = N*N windows in
    axis 1): qkv MatMul + bias Add, q/k/v cut by three Slices on the channel, each Reshape [1, G, P, h, d] +
    Transpose (0,1,3,2,4), q scaled, Einsum scores (SPACED 1: the equations as torch writes them, blanks included,
    which the toolkit keeps as CPU Einsums; 0: without blanks), Softmax, Einsum P.V, Transpose back, Reshape
    [1, G, P, C], proj MatMul, reverse to the map."""
    g_, t, ch, side = n * n, ws * ws, heads * d, n * ws
    qk, pv = (("B G H I D, B G H J D -> B G H I J", "B G H I J, B G H J D -> B G H I D") if spaced
              else ("bghid,bghjd->bghij", "bghij,bghjd->bghid"))
    nodes = [*_partition(),
             N("Reshape", ["xt", "s_tok"], ["xw"], "part_tokens"),
             N("MatMul", ["xw", "wqkv"], ["qkv0"], "qkv_matmul"),
             N("Add", ["bqkv", "qkv0"], ["qkv"], "qkv_bias")]
    for i, t_ in enumerate("qkv"):
        nodes += [N("Slice", ["qkv", f"st{i}", f"en{i}", "ax3"], [f"{t_}0"], f"{t_}_slice"),
                  N("Reshape", [f"{t_}0", "s_heads"], [f"{t_}5"], f"{t_}_heads"),
                  N("Transpose", [f"{t_}5"], [t_], f"{t_}_transpose", perm=[0, 1, 3, 2, 4])]
    nodes += [N("Mul", ["q", "sc"], ["qs"], "q_scale"),
              N("Einsum", ["qs", "k"], ["a"], "qk", equation=qk),
              N("Softmax", ["a"], ["p"], "softmax", axis=-1),
              N("Einsum", ["p", "v"], ["o"], "pv", equation=pv),
              N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 1, 3, 2, 4]),
              N("Reshape", ["ot", "s_tok"], ["ow"], "o_join"),
              N("MatMul", ["ow", "wp"], ["pr"], "proj"),
              *_reverse("pr")]
    inits = [w("wqkv", (ch, 3 * ch)), w("bqkv", (3 * ch,)), w("wp", (ch, ch)),
             c("s6", np.array([1, n, ws, n, ws, ch], np.int64)),
             c("s_tok", np.array([1, g_, t, ch], np.int64)), c("s_heads", np.array([1, g_, t, heads, d], np.int64)),
             c("ax3", np.array([3], np.int64)), c("sc", np.float32(d**-0.5)),
             c("s_back6", np.array([1, n, n, ws, ws, ch], np.int64)),
             c("s_map", np.array([1, side, side, ch], np.int64))]
    for i in range(3):
        inits += [c(f"st{i}", np.array([i * ch], np.int64)), c(f"en{i}", np.array([(i + 1) * ch], np.int64))]
    return wrap("einattn", nodes, inits, ch, side, side, ch)


def lsa(n: int, ws: int, heads: int, d: int, order: int) -> Built:
    """Windowed attention whose windows stay in axis 1 of [1, windows, tokens, ...] (Twins' LSA, NesT's blocks)."""
    b, t, ch, side = n * n, ws * ws, heads * d, n * ws
    perm = [3, 0, 4, 1, 2, 5] if order else [3, 0, 1, 4, 2, 5]
    nodes = [*_partition(),
             N("MatMul", ["xt", "wqkv"], ["qkv"], "qkv_matmul"),
             N("Reshape", ["qkv", "s_heads"], ["qh"], "head_reshape"),
             N("Transpose", ["qh"], ["qt"], "head_transpose", perm=perm),
             N("Split", ["qt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0)]
    nodes += [N("Squeeze", [f"{t_}1", "ax0"], [t_], f"{t_}_squeeze") for t_ in "qkv"]
    rank = 5
    nodes += [N("Transpose", ["k"], ["kt"], "k_transpose", perm=[*range(rank - 2), rank - 1, rank - 2]),
              N("Mul", ["q", "sc"], ["qs"], "q_scale"),
              N("MatMul", ["qs", "kt"], ["a"], "qk"),
              N("Softmax", ["a"], ["p"], "softmax", axis=-1),
              N("MatMul", ["p", "v"], ["o"], "pv"),
              N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 3, 1, 4] if order else [0, 1, 3, 2, 4]),
              N("Reshape", ["ot", "s_back6"], ["m6"], "o_join"),
              *_unwindow()]
    inits = [w("wqkv", (ch, 3 * ch)), c("s6", np.array([1, n, ws, n, ws, ch], np.int64)),
             c("s_heads", np.array([1, b, t, 3, heads, d], np.int64)), c("ones", np.array([1, 1, 1], np.int64)),
             c("ax0", np.array([0], np.int64)), c("sc", np.float32(d**-0.5)),
             c("s_back6", np.array([1, n, n, ws, ws, ch], np.int64)),
             c("s_map", np.array([1, side, side, ch], np.int64))]
    return wrap("lsa", nodes, inits, ch, side, side, ch)


def tokmean(n: int, ch: int) -> Built:
    """Tokens [1, N, C] from a token MatMul, averaged over the token axis (ReduceMean axes [1])."""
    h, w_ = hw_for(n)
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
        N("MatMul", ["t", "wm"], ["u"], "token_matmul"),
        N("ReduceMean", ["u"], ["m"], "token_mean", axes=[1], keepdims=0),
        N("Reshape", ["m", "s4"], ["y"], "back_reshape"),
    ]
    inits = [w("wm", (ch, ch)), c("s3", np.array([1, ch, n], np.int64)), c("s4", np.array([1, ch, 1, 1], np.int64))]
    return wrap("tokmean", nodes, inits, ch, h, w_, ch)


def tokmix(n: int, ch: int) -> Built:
    """MLP-Mixer's token mixing on [1, N, C] tokens made by a channel MatMul (the LayerNormalization op needs a
    toolkit rule disabled to build): Transpose (0,2,1), a MatMul over the
    token axis, Transpose back, residual Add; then back to the map through Transpose + Reshape."""
    h, w_ = hw_for(n)
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
        N("MatMul", ["t", "wc"], ["ln"], "channel_matmul"),
        N("Transpose", ["ln"], ["lt"], "mix_transpose", perm=[0, 2, 1]),
        N("MatMul", ["lt", "wm"], ["m"], "mix_matmul"),
        N("Transpose", ["m"], ["mt"], "mix_back", perm=[0, 2, 1]),
        N("Add", ["ln", "mt"], ["u"], "residual"),
        N("Transpose", ["u"], ["ub"], "back_transpose", perm=[0, 2, 1]),
        N("Reshape", ["ub", "s4"], ["y"], "back_reshape"),
    ]
    inits = [w("wm", (n, n)), w("wc", (ch, ch)),
             c("s3", np.array([1, ch, n], np.int64)), c("s4", np.array([1, ch, h, w_], np.int64))]
    return wrap("tokmix", nodes, inits, ch, h, w_, ch)


def xca(d: int, n: int, heads: int = 1) -> Built:
    """Cross-covariance attention (XCiT/EdgeNeXt): q, k, v kept as [1, heads, d, N] (channel-major), attention over
    the channels: softmax(Q.K^T) is [d, d] and P.V contracts over V's channel axis."""
    h, w_ = hw_for(n)
    cin = 32
    nodes = [N("Conv", ["x", f"w{t}"], [f"{t}0"], f"{t}_conv") for t in "qkv"]
    nodes += [N("Reshape", [f"{t}0", "s"], [t], f"{t}_rs") for t in "qkv"]
    nodes += [
        N("Transpose", ["k"], ["kt"], "k_t", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["a"], "qk"),
        N("Softmax", ["a"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Reshape", ["o", "s4"], ["y"], "o_rs"),
    ]
    inits = [w(f"w{t}", (heads * d, cin, 1, 1)) for t in "qkv"] + [
        c("s", np.array([1, heads, d, n], np.int64)),
        c("s4", np.array([1, heads * d, h, w_], np.int64)),
    ]
    return wrap("xca", nodes, inits, cin, h, w_, heads * d)


def gn(ch: int, groups: int, side: int = 16) -> Built:
    """GroupNorm as exporters write it: Reshape [1, G, C/G*H*W] -> InstanceNormalization -> Reshape back."""
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "gn_reshape"),
        N("InstanceNormalization", ["r", "g", "b"], ["n"], "gn_instnorm"),
        N("Reshape", ["n", "s4"], ["y"], "gn_reshape_back"),
    ]
    inits = [c("s3", np.array([1, groups, -1], np.int64)), c("s4", np.array([1, ch, side, side], np.int64)),
             c("g", np.ones(groups, np.float32)), c("b", np.zeros(groups, np.float32))]
    return wrap("gn", nodes, inits, ch, side, side, ch)


def shuffle(ch: int, groups: int, cat: int, res: int = 0, side: int = 14) -> Built:
    """ShuffleNet's channel shuffle of a [1, C, S, S] map: Reshape [1, G, C/G, S, S] -> Transpose (0,2,1,3,4) ->
    Reshape back; CAT 1: the map is a Concat of two convolutions of C/2 channels (ShuffleNetV2's block end);
    RES 1: the shuffled map is added to the unshuffled one before the tail Conv (no conv weight to fold it into)."""
    nodes, inits = [], [c("s5", np.array([1, groups, ch // groups, side, side], np.int64)),
                        c("s4", np.array([1, ch, side, side], np.int64))]
    src = "x"
    if cat:
        nodes += [N("Conv", ["x", "wa"], ["xa"], "branch_a"), N("Relu", ["xa"], ["ra"], "relu_a"),
                  N("Conv", ["x", "wb"], ["xb"], "branch_b"), N("Relu", ["xb"], ["rb"], "relu_b"),
                  N("Concat", ["ra", "rb"], ["cat"], "concat", axis=1)]
        inits += [w("wa", (ch // 2, ch, 1, 1)), w("wb", (ch // 2, ch, 1, 1))]
        src = "cat"
    nodes += [N("Reshape", [src, "s5"], ["g5"], "shuffle_split"),
              N("Transpose", ["g5"], ["t5"], "shuffle_transpose", perm=[0, 2, 1, 3, 4]),
              N("Reshape", ["t5", "s4"], ["sh" if res else "y"], "shuffle_join")]
    if res:
        nodes.append(N("Add", ["sh", src], ["y"], "residual"))
    return wrap("shuffle", nodes, inits, ch, side, side, ch)


def flat(ch: int, side: int) -> Built:
    """Flatten of a [1, C, S, S] map into a vector (a classifier's input), reshaped back to [1, C*S*S, 1, 1]."""
    nodes = [N("Flatten", ["x"], ["f"], "flatten", axis=1), N("Reshape", ["f", "s4"], ["y"], "to_4d")]
    inits = [c("s4", np.array([1, ch * side * side, 1, 1], np.int64))]
    return wrap("flat", nodes, inits, ch, side, side, ch * side * side)


def out3(ch: int, n: int) -> Built:
    """A 1x1-conv map [1, C, H, W] reshaped to a rank-3 graph output [1, C, N] (no tail Conv)."""
    h, w_ = hw_for(n)
    g = helper.make_graph(
        [N("Conv", ["in", "w0"], ["x"], "pre_conv"), N("Reshape", ["x", "s3"], ["out"], "to_rank3")], "out3",
        [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, h, w_])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [w("w0", (ch, 3, 1, 1)), c("s3", np.array([1, ch, n], np.int64))],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m), (h, w_)


def winattn(b: int, n: int, heads: int, d: int) -> Built:
    """Windowed attention as timm/Swin export it: tokens [B, N, C] with the windows B in the batch axis (here a
    [1, C, B, N] map made channels-last and reshaped), qkv MatMul -> Reshape [B, N, 3, heads, d] -> Transpose
    (2, 0, 3, 1, 4) -> Split/Squeeze -> attention -> Transpose (0, 2, 1, 3) -> Reshape -> proj -> back to the map."""
    ch = heads * d
    nodes = [
        N("Transpose", ["x"], ["xl"], "to_channels_last", perm=[0, 2, 3, 1]),
        N("Reshape", ["xl", "s_tok"], ["t"], "to_windows"),
        N("MatMul", ["t", "wqkv"], ["qkv"], "qkv_matmul"),
        N("Reshape", ["qkv", "s_heads"], ["qkv5"], "qkv_reshape"),
        N("Transpose", ["qkv5"], ["qkvt"], "qkv_transpose", perm=[2, 0, 3, 1, 4]),
        N("Split", ["qkvt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0),
        N("Squeeze", ["q1", "ax0"], ["q"], "q_squeeze"),
        N("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"),
        N("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
        N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["a"], "qk"),
        N("Mul", ["a", "sc"], ["as"], "scale"),
        N("Softmax", ["as"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["oj"], "o_join"),
        N("MatMul", ["oj", "wproj"], ["pr"], "proj_matmul"),
        N("Reshape", ["pr", "s_map"], ["pm"], "from_windows"),
        N("Transpose", ["pm"], ["y"], "to_channels_first", perm=[0, 3, 1, 2]),
    ]
    inits = [w("wqkv", (ch, 3 * ch)), w("wproj", (ch, ch)), c("s_tok", np.array([b, n, ch], np.int64)),
             c("s_heads", np.array([b, n, 3, heads, d], np.int64)), c("s_map", np.array([1, b, n, ch], np.int64)),
             c("ones", np.array([1, 1, 1], np.int64)), c("ax0", np.array([0], np.int64)), c("sc", np.float32(d**-0.5))]
    return wrap("winattn", nodes, inits, ch, b, n, ch)


def unfoldattn(a: int, b: int, heads: int, d: int) -> Built:
    """MobileViT-style attention: a [1, C, 2a, 2b] map unfolded into 2x2 patch pixels, [4, a*b, C] tokens (the
    patch pixel in the batch axis) -> the same qkv attention as winattn -> folded back."""
    ch, n = heads * d, a * b
    nodes = [
        N("Reshape", ["x", "s6"], ["x6"], "unfold_reshape"),
        N("Transpose", ["x6"], ["xt"], "unfold_transpose", perm=[0, 3, 5, 2, 4, 1]),
        N("Reshape", ["xt", "s_tok"], ["t"], "to_patches"),
        N("MatMul", ["t", "wqkv"], ["qkv"], "qkv_matmul"),
        N("Reshape", ["qkv", "s_heads"], ["qkv5"], "qkv_reshape"),
        N("Transpose", ["qkv5"], ["qkvt"], "qkv_transpose", perm=[2, 0, 3, 1, 4]),
        N("Split", ["qkvt", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0),
        N("Squeeze", ["q1", "ax0"], ["q"], "q_squeeze"),
        N("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"),
        N("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
        N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["s"], "qk"),
        N("Softmax", ["s"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["oj"], "o_join"),
        N("Reshape", ["oj", "s6b"], ["o6"], "fold_reshape"),
        N("Transpose", ["o6"], ["of"], "fold_transpose", perm=[0, 5, 3, 1, 4, 2]),
        N("Reshape", ["of", "s4"], ["y"], "fold_back"),
    ]
    inits = [w("wqkv", (ch, 3 * ch)), c("s6", np.array([1, ch, a, 2, b, 2], np.int64)),
             c("s_tok", np.array([4, n, ch], np.int64)), c("s_heads", np.array([4, n, 3, heads, d], np.int64)),
             c("s6b", np.array([1, 2, 2, a, b, ch], np.int64)), c("s4", np.array([1, ch, 2 * a, 2 * b], np.int64)),
             c("ones", np.array([1, 1, 1], np.int64)), c("ax0", np.array([0], np.int64))]
    return wrap("unfoldattn", nodes, inits, ch, 2 * a, 2 * b, ch)


def reducew(ch: int, h: int, w_: int) -> Built:
    """A ReduceSum over W of a conv map [1, C, H, W] (keepdims), its producer an element-wise Mul (MobileViTv2's
    context scores): the toolkit transposes W into the channel for a 1x1 conv and the one-wide result back."""
    nodes = [
        N("Mul", ["x", "x"], ["m"], "producer"),
        N("ReduceSum", ["m", "axes"], ["r"], "reduce", keepdims=1),
        N("Expand", ["r", "shape"], ["e"], "expand"),
        N("Mul", ["e", "x"], ["y"], "gate"),
    ]
    inits = [c("axes", np.array([3], np.int64)), c("shape", np.array([1, ch, h, w_], np.int64))]
    return wrap("reducew", nodes, inits, ch, h, w_, ch)


def headjoin(heads: int, d: int, n: int, dmajor: int) -> Built:
    """P.V [1, heads, N, d] joined back into tokens [1, N, heads*d]: heads-major ((0,2,1,3), d innermost) or
    d-major ((0,2,3,1), NeST's join: heads innermost), then a token MatMul."""
    h, w_ = hw_for(n)
    ch = heads * d
    nodes = [
        N("Reshape", ["x", "s_heads"], ["xh"], "to_heads"),
        N("Transpose", ["xh"], ["v"], "v_tokens", perm=[0, 1, 3, 2]),
        N("MatMul", ["v", "xh"], ["a"], "scores"),
        N("Softmax", ["a"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "join_transpose", perm=[0, 2, 3, 1] if dmajor else [0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["tok"], "join_reshape"),
        N("MatMul", ["tok", "wp"], ["pr"], "proj"),
        N("Transpose", ["pr"], ["pt"], "back_transpose", perm=[0, 2, 1]),
        N("Reshape", ["pt", "s_map"], ["y"], "back_reshape"),
    ]
    inits = [c("s_heads", np.array([1, heads, d, n], np.int64)), c("s_tok", np.array([1, n, ch], np.int64)),
             c("s_map", np.array([1, ch, h, w_], np.int64)), w("wp", (ch, ch))]
    return wrap("headjoin", nodes, inits, ch, h, w_, ch)


def vitattn(n: int, heads: int, d: int, bias: int = 0, res: int = 0) -> Built:
    """Tokens [1, N, C] (a conv map flattened and transposed) -> bias Add -> qkv MatMul -> Reshape [1, N, 3, h, d]
    -> Transpose (2, 0, 3, 1, 4) -> Split on axis 0 -> Squeeze -> softmax(Q.K^T * s).V [+ Q with res 1, MViTv2's
    residual pooling] -> Transpose (0, 2, 1, 3) -> Reshape [1, N, C] -> proj MatMul -> back to the map."""
    h, w_ = hw_for(n)
    ch = heads * d
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
        N("Add", ["t", "b"], ["ln"], "norm"),  # stands in for the LayerNorm (the toolkit's exNorm rule fails on it)
        N("MatMul", ["ln", "wqkv"], ["qkv0" if bias else "qkv"], "qkv_matmul"),
        *([N("Add", ["qkv0", "bqkv"], ["qkv"], "qkv_bias")] if bias else []),
        *_qkv_unbind(),
        N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["a"], "qk"),
        N("Mul", ["a", "sc"], ["as"], "scale"),
        N("Softmax", ["as"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o0" if res else "o"], "pv"),
        *([N("Add", ["o0", "q"], ["o"], "residual")] if res else []),
        N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["tok"], "o_join"),
        N("MatMul", ["tok", "wp"], ["pr"], "proj"),
        N("Transpose", ["pr"], ["pt"], "back_transpose", perm=[0, 2, 1]),
        N("Reshape", ["pt", "s_map"], ["y"], "back_reshape"),
    ]
    inits = [c("s3", np.array([1, ch, n], np.int64)), w("b", (ch,)),
             w("wqkv", (ch, 3 * ch)), w("bqkv", (3 * ch,)), c("s5", np.array([1, n, 3, heads, d], np.int64)),
             c("ones", np.array([1, 1, 1], np.int64)), c("ax0", np.array([0], np.int64)), c("sc", np.float32(d**-0.5)),
             c("s_tok", np.array([1, n, ch], np.int64)), w("wp", (ch, ch)), c("s_map", np.array([1, ch, h, w_], np.int64))]
    return wrap("vitattn", nodes, inits, ch, h, w_, ch)


def fcout(ch: int, k: int) -> Built:
    """Conv map [1, C, 4, 4] -> GlobalAveragePool -> Flatten -> Gemm (K classes): the graph output [1, K]."""
    nodes = [N("Conv", ["in", "w0"], ["x"], "pre_conv"), N("GlobalAveragePool", ["x"], ["g"], "pool"),
             N("Flatten", ["g"], ["f"], "flatten", axis=1), N("Gemm", ["f", "wf", "bf"], ["out"], "fc", transB=1)]
    g = helper.make_graph(nodes, "fcout", [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                          [w("w0", (ch, 3, 1, 1)), w("wf", (k, ch)), w("bf", (k,))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m), (4, 4)


def mapjoin(heads: int, d: int, n: int, vfirst: int) -> Built:
    """Attention on a conv map's heads whose result joins the heads back into the map: q/k/v from 1x1 convs
    reshaped to [1, heads, d, N]; P.V [1, heads, N, d] -> Transpose (0,2,1,3) -> Reshape [1, H, W, heads*d] ->
    Transpose (0,3,1,2) (vfirst=0), or V.P^T [1, heads, d, N] -> Reshape [1, heads*d, H, W] (vfirst=1)."""
    h, w_ = hw_for(n)
    cin, ch = 32, heads * d
    nodes = [N("Conv", ["x", f"w{t}"], [f"{t}0"], f"{t}_conv") for t in "qkv"]
    nodes += [N("Reshape", [f"{t}0", "s"], [f"{t}r"], f"{t}_rs") for t in "qkv"]
    nodes += [N("Transpose", ["qr"], ["q"], "q_tr", perm=[0, 1, 3, 2]),
              N("MatMul", ["q", "kr"], ["a"], "qk"),
              N("Mul", ["a", "sc"], ["as"], "scale"),
              N("Softmax", ["as"], ["p"], "softmax", axis=-1)]
    if vfirst:
        nodes += [N("Transpose", ["p"], ["pt"], "p_tr", perm=[0, 1, 3, 2]),
                  N("MatMul", ["vr", "pt"], ["o"], "vp"),
                  N("Reshape", ["o", "s_map"], ["y"], "join_reshape")]
    else:
        nodes += [N("Transpose", ["vr"], ["v"], "v_tr", perm=[0, 1, 3, 2]),
                  N("MatMul", ["p", "v"], ["o"], "pv"),
                  N("Transpose", ["o"], ["ot"], "join_transpose", perm=[0, 2, 1, 3]),
                  N("Reshape", ["ot", "s_nhwc"], ["yl"], "join_reshape"),
                  N("Transpose", ["yl"], ["y"], "to_nchw", perm=[0, 3, 1, 2])]
    inits = [w(f"w{t}", (ch, cin, 1, 1)) for t in "qkv"] + [
        c("s", np.array([1, heads, d, n], np.int64)), c("s_map", np.array([1, ch, h, w_], np.int64)),
        c("s_nhwc", np.array([1, h, w_, ch], np.int64)), c("sc", np.float32(d**-0.5))]
    return wrap("mapjoin", nodes, inits, cin, h, w_, ch)


def mu(a: int, b: int, d: int, swap: int) -> Built:
    """Hiera-style mask units: tokens [1, a*b, C] from a token MatMul -> qkv Reshape [1, a, b, 3, 2, d] ->
    Transpose moving q/k/v and the heads to the front, with the token pieces a, b swapped (1) or kept (0) ->
    q/k/v attention -> back to the map."""
    n, ch = a * b, 2 * d
    h, w_ = hw_for(n)
    perm = [3, 0, 4, 2, 1, 5] if swap else [3, 0, 4, 1, 2, 5]
    inner = [b, a] if swap else [a, b]
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t"], "to_tokens_transpose", perm=[0, 2, 1]),
        N("MatMul", ["t", "wqkv"], ["qkv"], "qkv_matmul"),
        N("Reshape", ["qkv", "s6"], ["q6"], "qkv_reshape"),
        N("Transpose", ["q6"], ["qt"], "qkv_transpose", perm=perm),
        N("Reshape", ["qt", "s_flat"], ["qf"], "merge_units"),
        N("Split", ["qf", "ones"], ["q1", "k1", "v1"], "qkv_split", axis=0),
        N("Squeeze", ["q1", "ax0"], ["q"], "q_squeeze"),
        N("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"),
        N("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
        N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        N("MatMul", ["q", "kt"], ["s"], "qk"),
        N("Softmax", ["s"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"),
        N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 3, 1, 2]),
        N("Reshape", ["ot", "s4"], ["y"], "o_map"),
    ]
    inits = [w("wqkv", (ch, 3 * ch)), c("s3", np.array([1, ch, n], np.int64)),
             c("s6", np.array([1, a, b, 3, 2, d], np.int64)), c("s_flat", np.array([3, 1, 2, n, d], np.int64)),
             c("ones", np.array([1, 1, 1], np.int64)), c("ax0", np.array([0], np.int64)),
             c("s4", np.array([1, ch, h, w_], np.int64))]
    del inner
    return wrap("mu", nodes, inits, ch, h, w_, ch)


def spmean(ch: int, side: int, order: int, keep: int, op: int = 0) -> Built:
    """An SE gate from a reduce over the pixels of a conv map (ReduceMean, or ReduceSum/ReduceL2/ReduceMax by
    OP 1/2/3), the axes written in either order."""
    axes = [[2, 3], [3, 2], [-2, -1]][order]
    reduce = ("ReduceMean", "ReduceSum", "ReduceL2", "ReduceMax")[op]
    nodes = [N("Relu", ["x"], ["r"], "act")]
    if reduce == "ReduceSum":  # opset 13+: the axes are an input
        nodes.append(N(reduce, ["r", "axes"], ["g"], "mean", keepdims=keep))
    else:
        nodes.append(N(reduce, ["r"], ["g"], "mean", axes=axes, keepdims=keep))
    if not keep:
        nodes.append(N("Reshape", ["g", "s_vec"], ["gv0"], "to_vec"))
    nodes += [N("Conv", ["gv0" if not keep else "g", "wse"], ["gc"], "se_conv"),
              N("Sigmoid", ["gc"], ["gate"], "gate"), N("Mul", ["r", "gate"], ["y"], "scale")]
    inits = [w("wse", (ch, ch, 1, 1)), c("s_vec", np.array([1, ch, 1, 1], np.int64)),
             c("axes", np.array(axes, np.int64))]
    return wrap("spmean", nodes, inits, ch, side, side, ch)


def lastmean(side: int, ch: int, norm: int) -> Built:
    """The mean over the pixels of a channels-last map [1, S, S, C] (keepdims 0), reshaped to [1, C, 1, 1]."""
    nodes = [N("Transpose", ["x"], ["xl"], "to_last", perm=[0, 2, 3, 1])]
    src = "xl"
    if norm:
        nodes.append(N("LayerNormalization", ["xl", "lg", "lb"], ["xn"], "norm", axis=-1))
        src = "xn"
    nodes += [N("ReduceMean", [src], ["g"], "mean", axes=[1, 2], keepdims=0),
              N("Reshape", ["g", "s_vec"], ["y"], "to_vec")]
    inits = [c("lg", np.ones(ch, np.float32)), c("lb", np.zeros(ch, np.float32)),
             c("s_vec", np.array([1, ch, 1, 1], np.int64))]
    m, hw = wrap("lastmean", nodes, inits, ch, side, side, ch)
    return m, hw


def pad(form: int, axis: int, amount: int) -> Built:
    """x -> (a map, tokens or heads) -> Pad at the end of `axis` -> back to a map for the tail Conv."""
    ch, side = 16, 8
    if form == 0:
        nodes, src, shape = [N("Relu", ["x"], ["m"], "act")], "m", [1, ch, side, side]
    else:
        nodes = [N("Reshape", ["x", "s_tok"], ["r"], "to_rows"), N("Transpose", ["r"], ["t"], "to_tokens", perm=[0, 2, 1]),
                 N("MatMul", ["t", "wt"], ["m"], "token_mm")]
        src, shape = "m", [1, side * side, ch]
        if form == 2:
            nodes += [N("Reshape", ["m", "s_heads"], ["h4"], "split_heads"),
                      N("Transpose", ["h4"], ["m2"], "heads_first", perm=[0, 2, 1, 3])]
            src, shape = "m2", [1, 2, side * side, ch // 2]
    pads = [0] * (2 * len(shape))
    pads[len(shape) + axis] = amount
    shape[axis] += amount
    nodes.append(N("Pad", [src, "pads"], ["p"], "pad", mode="constant"))
    count = int(np.prod(shape))
    nodes.append(N("Reshape", ["p", "s_back"], ["y"], "to_map"))
    inits = [c("s_tok", np.array([1, ch, side * side], np.int64)), w("wt", (ch, ch)),
             c("s_heads", np.array([1, side * side, 2, ch // 2], np.int64)), c("pads", np.array(pads, np.int64)),
             c("s_back", np.array([1, count // (side * side), side, side] if count % (side * side) == 0
                                  else [1, count, 1, 1], np.int64))]
    out_c = count // (side * side) if count % (side * side) == 0 else count
    return wrap("pad", nodes, inits, ch, side, side, out_c)


def factor(side: int, heads: int, d: int, cls: int, crpe: int) -> Built:
    """CoaT's factorised attention (timm coat.py FactorAttnConvRelPosEnc): softmax of K over the token axis, K^T.V
    first, then Q.(K^T.V), with or without the class token and the convolutional relative-position term."""
    hw = side * side
    n = hw + cls
    ch = heads * d
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_tokens_reshape"),
        N("Transpose", ["r"], ["t0"], "to_tokens_transpose", perm=[0, 2, 1]),
        *([N("Concat", ["cls", "t0"], ["t"], "cls_concat", axis=1)] if cls else [N("Identity", ["t0"], ["t"], "tok")]),
        N("Add", ["t", "b"], ["ln"], "norm"),
        N("MatMul", ["ln", "wqkv"], ["qkv0"], "qkv_matmul"),
        N("Add", ["qkv0", "bqkv"], ["qkv"], "qkv_bias"),
        *_qkv_unbind(),
        N("Softmax", ["k"], ["ks"], "k_softmax", axis=2),
        N("Transpose", ["ks"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]),
        N("MatMul", ["kt", "v"], ["kv"], "kv_matmul"),
        N("MatMul", ["q", "kv"], ["fa"], "qkv_matmul2"),
        N("Mul", ["fa", "sc"], ["fas"], "scale"),
    ]
    inits = [c("s3", np.array([1, ch, hw], np.int64)), w("b", (ch,)), w("cls", (1, 1, ch)),
             w("wqkv", (ch, 3 * ch)), w("bqkv", (3 * ch,)), c("s5", np.array([1, n, 3, heads, d], np.int64)),
             c("ones", np.array([1, 1, 1], np.int64)), c("ax0", np.array([0], np.int64)), c("sc", np.float32(d**-0.5)),
             c("s_tok", np.array([1, n, ch], np.int64)), w("wp", (ch, ch)), c("s_map", np.array([1, ch, side, side], np.int64)),
             c("s_hd", np.array([1, heads, d, hw], np.int64)), w("wdw", (ch, 1, 3, 3)),
             c("st", np.array([cls], np.int64)), c("en", np.array([n], np.int64)), c("ax2", np.array([2], np.int64)),
             c("pads", np.array([0, 0, cls, 0, 0, 0, 0, 0], np.int64))]
    out = "fas"
    if crpe:
        qi, vi = ("q", "v")
        if cls:
            nodes += [N("Slice", ["q", "st", "en", "ax2"], ["qs"], "crpe_q_slice"),
                      N("Slice", ["v", "st", "en", "ax2"], ["vs"], "crpe_v_slice")]
            qi, vi = "qs", "vs"
        nodes += [
            N("Transpose", [vi], ["vt"], "crpe_v_transpose", perm=[0, 1, 3, 2]),
            N("Reshape", ["vt", "s_map"], ["vm"], "crpe_v_map"),
            N("Conv", ["vm", "wdw"], ["vc"], "crpe_conv", group=ch, pads=[1, 1, 1, 1]),
            N("Reshape", ["vc", "s_hd"], ["vh"], "crpe_v_heads"),
            N("Transpose", ["vh"], ["vht"], "crpe_v_back", perm=[0, 1, 3, 2]),
            N("Mul", [qi, "vht"], ["ev"], "crpe_mul"),
        ]
        if cls:
            nodes.append(N("Pad", ["ev", "pads"], ["evp"], "crpe_pad", mode="constant"))
        nodes.append(N("Add", ["fas", "evp" if cls else "ev"], ["fo"], "crpe_add"))
        out = "fo"
    nodes += [
        N("Transpose", [out], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["tok"], "o_join"),
        N("MatMul", ["tok", "wp"], ["pr"], "proj"),
    ]
    if cls:
        nodes.append(N("Slice", ["pr", "st", "en", "ones1"], ["prs"], "drop_cls"))
        inits.append(c("ones1", np.array([1], np.int64)))
    nodes += [N("Transpose", ["prs" if cls else "pr"], ["pt"], "back_transpose", perm=[0, 2, 1]),
              N("Reshape", ["pt", "s_map"], ["y"], "back_reshape")]
    return wrap("factor", nodes, inits, ch, side, side, ch)


def gridrev(g: int, n: int, ch: int) -> Built:
    """A channels-last map cut into an N x N grid of G x G windows (timm MaxViT's grid_partition), a linear layer
    on the windows, and the grid reverse back to the map."""
    side = g * n
    nodes = [
        N("Transpose", ["x"], ["xl"], "to_nhwc", perm=[0, 2, 3, 1]),
        N("Reshape", ["xl", "s6"], ["x6"], "grid_split"),
        N("Transpose", ["x6"], ["xp"], "grid_partition", perm=[0, 2, 4, 1, 3, 5]),
        N("Reshape", ["xp", "s_win"], ["win"], "grid_windows"),
        N("MatMul", ["win", "wl"], ["lin0"], "proj"),
        N("Add", ["lin0", "bl"], ["lin"], "proj_bias"),
        N("Reshape", ["lin", "s_back6"], ["b6"], "grid_back"),
        N("Transpose", ["b6"], ["bt"], "grid_merge", perm=[0, 3, 1, 4, 2, 5]),
        N("Reshape", ["bt", "s_map"], ["ml"], "grid_map"),
        N("Transpose", ["ml"], ["y"], "to_nchw", perm=[0, 3, 1, 2]),
    ]
    inits = [c("s6", np.array([1, g, n, g, n, ch], np.int64)), c("s_win", np.array([n * n, g, g, ch], np.int64)),
             w("wl", (ch, ch)), w("bl", (ch,)), c("s_back6", np.array([1, n, n, g, g, ch], np.int64)),
             c("s_map", np.array([1, side, side, ch], np.int64))]
    return wrap("gridrev", nodes, inits, ch, side, side, ch)


def mergelast(side: int, ch: int, norm: int) -> Built:
    """timm Swin's PatchMerging: the 2x2 neighbours of a channels-last map joined into the channel by a rank-6
    Transpose (0,1,3,4,2,5), then the reduction linear layer."""
    half = side // 2
    nodes = [
        N("Transpose", ["x"], ["xl"], "to_nhwc", perm=[0, 2, 3, 1]),
        N("Reshape", ["xl", "s6"], ["x6"], "merge_split"),
        N("Transpose", ["x6"], ["xt"], "merge_transpose", perm=[0, 1, 3, 4, 2, 5]),
        N("Reshape", ["xt", "s4"], ["xm"], "merge_join"),
    ]
    src = "xm"
    if norm:
        nodes.append(N("LayerNormalization", ["xm", "g", "bn"], ["xn"], "merge_norm", axis=-1, epsilon=1e-5))
        src = "xn"
    nodes += [N("MatMul", [src, "wr"], ["r"], "reduction"),
              N("Transpose", ["r"], ["y"], "to_nchw", perm=[0, 3, 1, 2])]
    inits = [c("s6", np.array([1, half, 2, half, 2, ch], np.int64)), c("s4", np.array([1, half, half, 4 * ch], np.int64)),
             c("g", np.ones(4 * ch, np.float32)), c("bn", np.zeros(4 * ch, np.float32)), w("wr", (4 * ch, 2 * ch))]
    return wrap("mergelast", nodes, inits, ch, side, side, 2 * ch)


def srattn(side: int, sr: int, heads: int, d: int) -> Built:
    """PVTv2/Twins spatial-reduction attention: q over the S*S tokens, k and v over the M = (S/SR)^2 tokens of the
    map reduced by a stride-SR convolution, the softmax scale split between q and K^T (as the exporter writes it)."""
    n, m, ch = side * side, (side // sr) ** 2, heads * d
    nodes = [
        N("Reshape", ["x", "s3"], ["r"], "to_rows"), N("Transpose", ["r"], ["t"], "to_tokens", perm=[0, 2, 1]),
        N("MatMul", ["t", "wq"], ["q0"], "q_matmul"), N("Reshape", ["q0", "s_qh"], ["q4"], "q_heads"),
        N("Transpose", ["q4"], ["q"], "q_transpose", perm=[0, 2, 1, 3]), N("Mul", ["q", "sc"], ["qs"], "q_scale"),
        N("Conv", ["x", "wsr"], ["xr"], "sr_conv", strides=[sr, sr]),
        N("Reshape", ["xr", "s_kv3"], ["kr"], "sr_rows"), N("Transpose", ["kr"], ["kt0"], "sr_tokens", perm=[0, 2, 1]),
        N("Add", ["kt0", "bn"], ["kn"], "sr_norm"),  # stands in for the LayerNorm (the toolkit's exNorm rule fails on it)
        N("MatMul", ["kn", "wkv"], ["kv0"], "kv_matmul"), N("Reshape", ["kv0", "s_kv5"], ["kv5"], "kv_heads"),
        N("Transpose", ["kv5"], ["kvt"], "kv_transpose", perm=[2, 0, 3, 1, 4]),
        N("Split", ["kvt", "two"], ["k1", "v1"], "kv_split", axis=0),
        N("Squeeze", ["k1", "ax0"], ["k"], "k_squeeze"), N("Squeeze", ["v1", "ax0"], ["v"], "v_squeeze"),
        N("Transpose", ["k"], ["kt"], "k_transpose", perm=[0, 1, 3, 2]), N("Mul", ["kt", "sc"], ["kts"], "k_scale"),
        N("MatMul", ["qs", "kts"], ["a"], "qk"), N("Softmax", ["a"], ["p"], "softmax", axis=-1),
        N("MatMul", ["p", "v"], ["o"], "pv"), N("Transpose", ["o"], ["ot"], "o_transpose", perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "s_tok"], ["tok"], "o_join"), N("MatMul", ["tok", "wp"], ["pr"], "proj"),
        N("Transpose", ["pr"], ["pt"], "back_transpose", perm=[0, 2, 1]), N("Reshape", ["pt", "s_map"], ["y"], "back_reshape"),
    ]
    inits = [c("s3", np.array([1, ch, n], np.int64)), w("wq", (ch, ch)), c("s_qh", np.array([1, n, heads, d], np.int64)),
             c("sc", np.float32(d ** -0.25)), w("wsr", (ch, ch, sr, sr)), c("s_kv3", np.array([1, ch, m], np.int64)),
             w("bn", (ch,)), w("wkv", (ch, 2 * ch)),
             c("s_kv5", np.array([1, m, 2, heads, d], np.int64)), c("two", np.array([1, 1], np.int64)),
             c("ax0", np.array([0], np.int64)), c("s_tok", np.array([1, n, ch], np.int64)), w("wp", (ch, ch)),
             c("s_map", np.array([1, ch, side, side], np.int64))]
    return wrap("srattn", nodes, inits, ch, side, side, ch)


BUILDERS: dict[str, Callable[..., Built]] = {"seqmix": seqmix, "einattn": einattn, "srattn": srattn, "mergelast": mergelast, "gridrev": gridrev, "factor": factor, "pad": pad, "spmean": spmean, "lastmean": lastmean, "lsa": lsa, "maxattn": maxattn, "slicehead": slicehead, "eca": eca, "swinattn": swinattn, "winpart": winpart, "bilstm": bilstm, "talk": talk, "vitattn": vitattn, "fcout": fcout, "mapjoin": mapjoin, "mu": mu, "reducew": reducew, "headjoin": headjoin, "vop": vop, "winattn": winattn, "unfoldattn": unfoldattn, "tokmean": tokmean, "tokmix": tokmix, "xca": xca, "gn": gn, "shuffle": shuffle, "flat": flat, "out3": out3}


def build(label: str) -> Built:
    kind, *args = label.split(":")
    return BUILDERS[kind](*(int(a) for a in args))


def convert_case(label: str, socs: list[str]) -> dict[str, dict[str, Any]]:
    import rknn_log

    model, (h, w_) = build(label)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.npy")
        np.save(data, np.random.default_rng(0).normal(0, 1, (1, 3, h, w_)).astype(np.float32))
        dataset = os.path.join(tmp, "ds.txt")
        with open(dataset, "w") as handle:
            handle.write(data + "\n")
        path = os.path.join(tmp, "m.onnx")
        onnx.save(model, path)
        for soc in socs:
            for quantize in (False, True):
                text, ok = _build_log(path, soc, quantize, dataset)
                rows = []
                for layer in rknn_log.parse_layer_table(text):
                    name = layer.full_name.partition(":")[2]
                    if name in ("pre_conv", "post_conv", "in", "out"):
                        continue
                    rows.append(f"{layer.op_type} {layer.target} {layer.input_shapes}->{layer.output_shapes} {name}")
                result[f"{soc}/{'int8' if quantize else 'fp16'}"] = {"built": ok, "layers": rows}
    return result


def _build_log(path: str, soc: str, quantize: bool, dataset: str) -> tuple[str, bool]:
    import re

    ok, raw = captured_build(path, soc, quantize, dataset, mean_values=[[0, 0, 0]], std_values=[[1, 1, 1]])
    return re.sub(r"\x1b\[[0-9;]*m", "", raw), ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--socs", default="rk3566")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(convert_case(args.one, args.socs.split(","))))
        return 0
    for label in args.cases:
        run = subprocess.run([sys.executable, __file__, "--one", label, "--socs", args.socs],
                             capture_output=True, text=True)
        lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
        if run.returncode or not lines:
            print(label, f"toolkit process died (exit {run.returncode})", flush=True)
            continue
        for key, value in json.loads(lines[-1]).items():
            print(label, key, "built" if value["built"] else "FAILED", flush=True)
            for row in value["layers"]:
                print("   ", row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
