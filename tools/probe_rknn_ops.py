"""Probe rknn-toolkit2 offline: which ONNX ops it places on the NPU or the CPU, per SoC.

Run with the toolkit's own interpreter (see ../shared/spec/rknn-toolkit.md), not edgeplan's:
    RKNN_VENV/bin/python tools/probe_rknn_ops.py --out constraints/rknn_probe.json
Each probe is a tiny model: Conv 1x1 -> OP -> Conv 1x1, so the op sits between NPU layers.
The build log's layer table gives the Target column for the op's layer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rknn_build import captured_build

C, H, W = 16, 8, 8
SOCS = ["rk3588", "rk3576", "rk3566", "rk3568", "rk3562", "rv1126b", "rv1106", "rv1103"]


def _const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def probes():
    """(label, op_type, nodes, initializers, output channels) with the op reading 'x' and writing 'y'."""
    one_in = ["Relu", "Sigmoid", "Tanh", "Abs", "Exp", "Log", "Sqrt", "Neg", "Floor", "Ceil", "Sin", "Cos",
              "Erf", "Softplus", "Softsign", "Elu", "Selu", "HardSigmoid", "HardSwish", "Reciprocal",
              "Identity", "Round", "Sign", "Mish", "Celu", "ThresholdedRelu"]
    for op in one_in:
        yield op, op, [helper.make_node(op, ["x"], ["y"])], [], C
    yield "LeakyRelu", "LeakyRelu", [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], [], C
    yield "Gelu", "Gelu", [helper.make_node("Gelu", ["x"], ["y"])], [], C
    yield "PRelu", "PRelu", [helper.make_node("PRelu", ["x", "s"], ["y"])], [_const("s", np.full((C, 1, 1), 0.1, np.float32))], C
    yield "Clip", "Clip", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [_const("lo", np.float32(0)), _const("hi", np.float32(6))], C
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"]:
        yield op, op, [helper.make_node(op, ["x", "x2"], ["y"])], [], C
    for op in ["Equal", "Greater", "Less"]:
        yield op, op, [helper.make_node(op, ["x", "x2"], ["b"]), helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)], [], C
    yield "Where", "Where", [helper.make_node("Greater", ["x", "x2"], ["b"]), helper.make_node("Where", ["b", "x", "x2"], ["y"])], [], C
    yield "MaxPool", "MaxPool", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], [], C
    yield "AveragePool", "AveragePool", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], [], C
    yield "LpPool", "LpPool", [helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], [], C
    yield "GlobalAveragePool", "GlobalAveragePool", [helper.make_node("GlobalAveragePool", ["x"], ["g"]), helper.make_node("Expand", ["g", "shp"], ["y"])], [_const("shp", np.array([1, C, H, W], np.int64))], C
    yield "GlobalMaxPool", "GlobalMaxPool", [helper.make_node("GlobalMaxPool", ["x"], ["g"]), helper.make_node("Add", ["x", "g"], ["y"])], [], C
    yield "BatchNormalization", "BatchNormalization", [helper.make_node("BatchNormalization", ["x", "sc", "b", "m", "v"], ["y"])], [_const(n, np.ones(C, np.float32)) for n in ["sc", "b", "m", "v"]], C
    yield "InstanceNormalization", "InstanceNormalization", [helper.make_node("InstanceNormalization", ["x", "sc", "b"], ["y"])], [_const(n, np.ones(C, np.float32)) for n in ["sc", "b"]], C
    yield "LayerNormalization", "LayerNormalization", [helper.make_node("LayerNormalization", ["x", "sc", "b"], ["y"], axis=1)], [_const("sc", np.ones((C, H, W), np.float32)), _const("b", np.zeros((C, H, W), np.float32))], C
    yield "LRN", "LRN", [helper.make_node("LRN", ["x"], ["y"], size=5)], [], C
    yield "Softmax", "Softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [], C
    yield "LogSoftmax", "LogSoftmax", [helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], [], C
    yield "Concat", "Concat", [helper.make_node("Concat", ["x", "x2"], ["y"], axis=1)], [], 2 * C
    yield "Concat_axis2", "Concat", [helper.make_node("Concat", ["x", "x2"], ["c"], axis=2), helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 1], strides=[2, 1])], [], C
    yield "Split", "Split", [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1), helper.make_node("Concat", ["b", "a"], ["y"], axis=1)], [_const("sp", np.array([C // 2, C // 2], np.int64))], C
    yield "Slice", "Slice", [helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [_const("st", np.array([0], np.int64)), _const("en", np.array([C // 2], np.int64)), _const("ax", np.array([1], np.int64))], C // 2
    yield "Transpose", "Transpose", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 3, 2])], [], C
    yield "Reshape", "Reshape", [helper.make_node("Reshape", ["x", "rs"], ["y"])], [_const("rs", np.array([1, C * 2, H // 2, W], np.int64))], C * 2
    yield "Resize_nearest", "Resize", [helper.make_node("Resize", ["x", "", "scl"], ["y"], mode="nearest")], [_const("scl", np.array([1, 1, 2, 2], np.float32))], C
    yield "Resize_linear", "Resize", [helper.make_node("Resize", ["x", "", "scl"], ["y"], mode="linear")], [_const("scl", np.array([1, 1, 2, 2], np.float32))], C
    yield "Pad", "Pad", [helper.make_node("Pad", ["x", "pd"], ["y"])], [_const("pd", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))], C
    for op in ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceProd"]:
        yield op, op, [helper.make_node(op, ["x", "rax"], ["r"], keepdims=1), helper.make_node("Add", ["x", "r"], ["y"])], [_const("rax", np.array([1], np.int64))], C
    yield "ArgMax", "ArgMax", [helper.make_node("ArgMax", ["x"], ["a"], axis=1, keepdims=1), helper.make_node("Cast", ["a"], ["c"], to=TensorProto.FLOAT), helper.make_node("Add", ["x", "c"], ["y"])], [], C
    yield "DepthToSpace", "DepthToSpace", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)], [], C // 4
    yield "SpaceToDepth", "SpaceToDepth", [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)], [], C * 4
    yield "Tile", "Tile", [helper.make_node("Tile", ["x", "rp"], ["y"])], [_const("rp", np.array([1, 2, 1, 1], np.int64))], 2 * C
    yield "Expand", "Expand", [helper.make_node("ReduceMean", ["x", "rax"], ["r"], keepdims=1), helper.make_node("Expand", ["r", "shp"], ["y"])], [_const("rax", np.array([2, 3], np.int64)), _const("shp", np.array([1, C, H, W], np.int64))], C
    yield "GridSample", "GridSample", [helper.make_node("GridSample", ["x", "grid"], ["y"])], [_const("grid", np.zeros((1, H, W, 2), np.float32))], C
    yield "MatMul_const", "MatMul", [helper.make_node("MatMul", ["x", "mw"], ["y"])], [_const("mw", np.ones((W, W), np.float32))], C
    yield "MatMul_dyn", "MatMul", [helper.make_node("Transpose", ["x2"], ["t"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["x", "t"], ["y"])], [], C
    yield "ConvTranspose", "ConvTranspose", [helper.make_node("ConvTranspose", ["x", "dw"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [_const("dw", np.ones((C, C, 2, 2), np.float32) * 0.01)], C
    yield "DWConv", "Conv", [helper.make_node("Conv", ["x", "dwk"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=C)], [_const("dwk", np.ones((C, 1, 3, 3), np.float32) * 0.1)], C
    yield "Conv_k33", "Conv", [helper.make_node("Conv", ["x", "bk"], ["y"], kernel_shape=[33, 3], pads=[16, 1, 16, 1])], [_const("bk", np.ones((C, C, 33, 3), np.float32) * 0.001)], C
    yield "Conv_stride8", "Conv", [helper.make_node("Conv", ["x", "sk"], ["y"], kernel_shape=[1, 1], strides=[8, 8])], [_const("sk", np.ones((C, C, 1, 1), np.float32) * 0.1)], C
    yield "Conv_dil4", "Conv", [helper.make_node("Conv", ["x", "dk"], ["y"], kernel_shape=[3, 3], pads=[4, 4, 4, 4], dilations=[4, 4])], [_const("dk", np.ones((C, C, 3, 3), np.float32) * 0.1)], C
    yield "Cast", "Cast", [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32), helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)], [], C
    yield "CumSum", "CumSum", [helper.make_node("CumSum", ["x", "cax"], ["y"])], [_const("cax", np.array(1, np.int64))], C
    yield "Mod", "Mod", [helper.make_node("Mod", ["x", "x2"], ["y"], fmod=1)], [], C
    yield "TopK", "TopK", [helper.make_node("TopK", ["x", "k"], ["y", "idx"], axis=1)], [_const("k", np.array([C // 2], np.int64))], C // 2
    yield "ScatterND", "ScatterND", [helper.make_node("ScatterND", ["x", "si", "x2s"], ["y"]), ], [_const("si", np.zeros((1, 1), np.int64)), _const("x2s", np.ones((1, C, H, W), np.float32))], C
    yield "GatherElements", "GatherElements", [helper.make_node("GatherElements", ["x", "gi"], ["y"], axis=1)], [_const("gi", np.zeros((1, C, H, W), np.int64))], C
    yield "Gather", "Gather", [helper.make_node("Gather", ["x", "gi1"], ["y"], axis=1)], [_const("gi1", np.array([3, 2, 1, 0] * (C // 4), np.int64))], C
    yield "Einsum", "Einsum", [helper.make_node("Einsum", ["x", "x2"], ["y"], equation="nchw,nchw->nchw")], [], C
    yield "Dropout", "Dropout", [helper.make_node("Dropout", ["x"], ["y"])], [], C
    yield "Flatten", "Flatten", [helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("Reshape", ["f", "rs2"], ["y"])], [_const("rs2", np.array([1, C, H, W], np.int64))], C


def build(label, nodes, inits, out_c, path):
    rng = np.random.default_rng(0)
    w0 = _const("w0", rng.normal(0, 0.1, (C, 3, 1, 1)).astype(np.float32))
    w0b = _const("w0b", rng.normal(0, 0.1, (C, 3, 1, 1)).astype(np.float32))
    w1 = _const("w1", rng.normal(0, 0.1, (4, out_c, 1, 1)).astype(np.float32))
    head = [helper.make_node("Conv", ["in", "w0"], ["x"], name="pre_conv"),
            helper.make_node("Conv", ["in", "w0b"], ["x2"], name="pre_conv2")]
    for i, node in enumerate(nodes):
        node.name = f"probe_{i}_{node.op_type}"
    tail = [helper.make_node("Conv", ["y", "w1"], ["out"], name="post_conv")]
    graph = helper.make_graph(head + nodes + tail, label,
                              [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 3, H, W])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              [w0, w0b, w1, *inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    onnx.save(model, path)


ROW = re.compile(r"^(?:D RKNN: \[[^]]*\]\s*)?\d+\s+(\S+)\s+(\S+)\s+(NPU|CPU)\s.*?\s(\S+:\S+)\s*$")


def convert(path, soc, quantize, dataset, mean_std=True):
    ok, raw = captured_build(path, soc, quantize, dataset,
                             **({"mean_values": [[0, 0, 0]], "std_values": [[1, 1, 1]]} if mean_std else {}))
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    rows = [m.groups() for m in (ROW.match(line) for line in text.splitlines()) if m]
    errors = sorted({line.strip() for line in text.splitlines() if line.strip().startswith("E RKNN")})
    return ok, rows, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--socs", default=",".join(SOCS))
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.npy")
        np.save(data, np.random.default_rng(1).normal(0, 1, (1, 3, H, W)).astype(np.float32))
        dataset = os.path.join(tmp, "dataset.txt")
        with open(dataset, "w") as handle:
            handle.write(data + "\n")
        for label, op, nodes, inits, out_c in probes():
            path = os.path.join(tmp, f"{label}.onnx")
            try:
                build(label, nodes, inits, out_c, path)
            except Exception as exc:
                results[label] = {"op": op, "error": f"build: {exc}"[:200]}
                continue
            entry = {"op": op}
            for soc in args.socs.split(","):
                for quantize in (False, True):
                    if soc in ("rv1106", "rv1103") and not quantize:
                        continue
                    ok, rows, errors = convert(path, soc, quantize, dataset)
                    mine = [(t, kind, dtype, full) for kind, dtype, t, full in rows if "probe_" in full]
                    key = f"{soc}/{'int8' if quantize else 'fp16'}"
                    targets = sorted({t for t, *_ in mine}) or (["fused-or-removed"] if ok else [])
                    entry[key] = {"ok": ok, "targets": targets,
                                  "layers": [f"{kind}:{dtype}:{t}" for t, kind, dtype, _ in mine],
                                  "errors": errors[:3]}
            results[label] = entry
            print(label, json.dumps({k: v["targets"] for k, v in entry.items() if isinstance(v, dict)}),
                  file=sys.stderr, flush=True)
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
