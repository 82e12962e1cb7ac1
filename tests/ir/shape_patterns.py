"""Tiny graphs with the shape arithmetic real exporters write, built with onnx.helper.

Each builder writes the ops the way torch.onnx / tf2onnx do for that pattern: a shape read from a
tensor at run time, arithmetic on it, and a Pad/Reshape/Expand/... that takes the result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.conftest import value


class Net:
    """Appends nodes and returns their output names, so a pattern reads like the exporter's code."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def const(self, array, dtype=np.int64) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def weight(self, shape) -> str:
        """A weight with only its dims in the file, as in the structure-only zoo."""
        self.count += 1
        name = f"w{self.count}"
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape))
        tensor.data_location = TensorProto.EXTERNAL
        for key, val in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * int(np.prod(shape))))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, val
        self.inits.append(tensor)
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs) -> str | list[str]:
        self.count += 1
        names = [f"{op_type.lower()}{self.count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=f"{op_type}_{self.count}", **attrs))
        return names[0] if outputs == 1 else names

    def dim(self, x: str, axis: int) -> str:
        """Shape -> Gather(axis) -> a rank-0 int64, as torch exports `x.shape[axis]`."""
        return self.op("Gather", self.op("Shape", x), self.const(axis), axis=0)

    def vec(self, *scalars: str) -> str:
        return self.op("Concat", *[self.op("Unsqueeze", s, self.const([0])) for s in scalars], axis=0)

    def save(self, path: Path, inputs: list, output: str, opset: int = 17) -> Path:
        graph = helper.make_graph(self.nodes, "pattern", inputs, [value(output, None)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.save(model, path)
        return path


def tf_same_padding(path: Path, stages: int = 6, size: int = 57) -> Path:
    """TensorFlow 'same' padding computed from the input size (tf2onnx / timm tf_* models):
    pad = max((ceil(in / s) - 1) * s + k - in, 0), split into begin = pad // 2 and end = pad - begin."""
    net = Net()
    x = "x"
    for _ in range(stages):
        pads = []
        for axis in (2, 3):
            size_t = net.op("Cast", net.dim(x, axis), to=TensorProto.FLOAT)
            out = net.op("Ceil", net.op("Div", size_t, net.const(2.0, np.float32)))
            total = net.op("Sub", net.op("Add", net.op("Mul", net.op("Sub", out, net.const(1.0, np.float32)),
                                                       net.const(2.0, np.float32)), net.const(3.0, np.float32)),
                           size_t)
            # timm clips at zero (Clip with an empty max), tf2onnx takes Max(., 0)
            floor = (net.op("Clip", total, net.const(0.0, np.float32), "") if axis == 2
                     else net.op("Max", total, net.const(0.0, np.float32)))
            total = net.op("Cast", floor, to=TensorProto.INT64)
            begin = net.op("Div", total, net.const(2))
            pads.append((begin, net.op("Sub", total, begin)))
        zero = net.const(0)
        vector = net.vec(zero, zero, pads[0][0], pads[1][0], zero, zero, pads[0][1], pads[1][1])
        padded = net.op("Pad", x, vector, mode="constant")
        x = net.op("Conv", padded, net.weight([8, 8, 3, 3]), kernel_shape=[3, 3], strides=[2, 2])
    return net.save(path, [value("x", [1, 8, size, size])], x)


def window_attention(path: Path, blocks: int = 4, size: int = 30, window: int = 7, shift: int = 3) -> Path:
    """Swin-style windows: pad H, W up to a multiple of the window from the run-time size, roll
    (Slice + Concat), partition with a Reshape whose target is computed, attend, and undo it all."""
    net = Net()
    x = "x"  # (B, H, W, C)
    for _ in range(blocks):
        h, w = net.dim(x, 1), net.dim(x, 2)
        ws = net.const(window)
        pad_b = net.op("Mod", net.op("Sub", ws, net.op("Mod", h, ws)), ws)
        pad_r = net.op("Mod", net.op("Sub", ws, net.op("Mod", w, ws)), ws)
        zero = net.const(0)
        padded = net.op("Pad", x, net.vec(zero, zero, zero, zero, zero, pad_b, pad_r, zero), mode="constant")
        hp, wp = net.dim(padded, 1), net.dim(padded, 2)
        rolled = padded
        for axis, extent in ((1, hp), (2, wp)):
            cut = net.op("Sub", extent, net.const(shift))
            head = net.op("Slice", rolled, net.op("Unsqueeze", cut, net.const([0])),
                          net.op("Unsqueeze", extent, net.const([0])), net.const([axis]))
            tail = net.op("Slice", rolled, net.const([0]), net.op("Unsqueeze", cut, net.const([0])), net.const([axis]))
            rolled = net.op("Concat", head, tail, axis=axis)
        c = net.dim(rolled, 3)
        nh, nw = net.op("Div", hp, ws), net.op("Div", wp, ws)
        parts = net.op("Reshape", rolled, net.vec(net.const(-1), nh, ws, nw, ws, c))
        windows = net.op("Reshape", net.op("Transpose", parts, perm=[0, 1, 3, 2, 4, 5]),
                         net.vec(net.const(-1), net.op("Mul", ws, ws), c))
        attn = net.op("Softmax", net.op("MatMul", windows, net.op("Transpose", windows, perm=[0, 2, 1])), axis=-1)
        mixed = net.op("MatMul", attn, windows)
        back = net.op("Reshape", net.op("Transpose", net.op("Reshape", mixed, net.vec(net.const(-1), nh, nw, ws, ws, c)),
                                        perm=[0, 1, 3, 2, 4, 5]), net.vec(net.const(-1), hp, wp, c))
        x = net.op("Slice", back, net.const([0, 0]), net.vec(h, w), net.const([1, 2]))
        x = net.op("MatMul", x, net.weight([96, 96]))
    return net.save(path, [value("x", [1, size, size, 96])], x)


def range_positions(path: Path, seq: int = 50) -> Path:
    """Position ids as Range(0, seq_len, 1) from the run-time length, gathered from an embedding table."""
    net = Net()
    length = net.dim("x", 1)
    positions = net.op("Range", net.const(0), length, net.const(1))
    table = net.op("Gather", net.weight([512, 64]), positions, axis=0)
    out = net.op("Add", "x", net.op("Unsqueeze", table, net.const([0])))
    return net.save(path, [value("x", [1, seq, 64])], out)


def expand_where(path: Path) -> Path:
    """torch's `expand(-1, n, -1)`: Where(Equal(target, -1), Shape-of-ones, target), then Expand; plus
    ConstantOfShape, Tile, ReduceProd and a Cast in the same chain."""
    net = Net()
    n = net.op("Mul", net.dim("x", 2), net.const(3))
    target = net.vec(net.const(-1), n, net.const(-1))
    ones = net.op("ConstantOfShape", net.op("Shape", target), value=numpy_helper.from_array(np.array([1], np.int64)))
    minus = net.op("Mul", ones, net.const(-1))
    safe = net.op("Where", net.op("Equal", target, minus), ones, target)
    expanded = net.op("Expand", net.op("Unsqueeze", "x", net.const([2])), safe)
    count = net.op("ReduceProd", net.op("Shape", expanded), keepdims=0)
    flat = net.op("Reshape", expanded, net.op("Unsqueeze", net.op("Cast", count, to=TensorProto.INT64),
                                              net.const([0])))
    tiled = net.op("Tile", flat, net.op("Concat", net.const([1]), axis=0))
    filler = net.op("ConstantOfShape", net.op("Shape", tiled), value=numpy_helper.from_array(np.array([0.5],
                                                                                                     np.float32)))
    return net.save(path, [value("x", [1, 4, 5])], net.op("Add", tiled, filler))


def constant_if(path: Path) -> Path:
    """An If whose condition is computed from static sizes (torch's `if x.shape[1] > 8:` traced by
    the scripting exporter): the branch taken decides the output shape."""
    net = Net()
    cond = net.op("Greater", net.dim("x", 1), net.const(8))
    then_out = helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)
    else_out = helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)
    then_g = helper.make_graph([helper.make_node("Reshape", ["x", "t_shape"], ["t_out"], name="t_reshape")], "then",
                               [], [then_out], [numpy_helper.from_array(np.array([-1, 4], np.int64), "t_shape")])
    else_g = helper.make_graph([helper.make_node("Reshape", ["x", "e_shape"], ["e_out"], name="e_reshape")], "else",
                               [], [else_out], [numpy_helper.from_array(np.array([2, -1], np.int64), "e_shape")])
    picked = net.op("If", cond, then_branch=then_g, else_branch=else_g)
    out = net.op("Relu", picked)
    return net.save(path, [value("x", [1, 16, 6])], out)


def nonzero_gather(path: Path) -> Path:
    """Boxes kept by a score threshold: NonZero -> Transpose -> GatherND; the count is data."""
    net = Net()
    mask = net.op("Greater", "x", net.const(0.5, np.float32))
    picks = net.op("Transpose", net.op("NonZero", mask), perm=[1, 0])
    kept = net.op("GatherND", "x", picks)
    return net.save(path, [value("x", [1, 100])], net.op("Relu", kept))


def topk_computed_k(path: Path) -> Path:
    """TopK whose k is the number of scores above a threshold: a size computed from the data."""
    net = Net()
    above = net.op("Cast", net.op("Greater", "x", net.const(0.5, np.float32)), to=TensorProto.INT64)
    k = net.op("ReduceSum", above, net.const([1]), keepdims=0)
    values_, _ = net.op("TopK", "x", k, outputs=2, axis=1)
    return net.save(path, [value("x", [1, 100])], net.op("Relu", values_))


def topk_static_k(path: Path) -> Path:
    """TopK with k = min(300, the static number of anchors): resolves, although k is computed."""
    net = Net()
    k = net.op("Min", net.op("Unsqueeze", net.dim("x", 1), net.const([0])), net.const([300]))
    values_, _ = net.op("TopK", "x", k, outputs=2, axis=1)
    return net.save(path, [value("x", [1, 1000])], net.op("Relu", values_))


def dynamic_reshape(path: Path) -> Path:
    """A Reshape whose target follows a symbolic input dim: dynamic, not data-dependent."""
    net = Net()
    out = net.op("Reshape", "x", net.vec(net.dim("x", 0), net.const(-1)))
    return net.save(path, [value("x", ["batch", 4, 8])], net.op("Relu", out))


PATTERNS = {"tf_same_padding": tf_same_padding, "window_attention": window_attention, "range_positions": range_positions,
            "expand_where": expand_where, "constant_if": constant_if, "topk_static_k": topk_static_k}
DATA_DEPENDENT = {"nonzero_gather": nonzero_gather, "topk_computed_k": topk_computed_k}


def shape_from_missing_weights(path: Path) -> Path:
    """A Reshape target read from an int64 initializer whose bytes are not in the file (structure only):
    nothing can resolve it, and it is neither a dynamic input nor data."""
    net = Net()
    target = TensorProto(name="target", data_type=TensorProto.INT64, dims=[2], data_location=TensorProto.EXTERNAL)
    for key, val in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        entry = target.external_data.add()
        entry.key, entry.value = key, val
    net.inits.append(target)
    out = net.op("Reshape", "x", "target")
    return net.save(path, [value("x", [1, 4, 8])], net.op("Relu", out))
