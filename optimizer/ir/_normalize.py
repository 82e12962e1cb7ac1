"""Attribute normalisation: every later stage reads one explicit form per op.

Defaults are filled, auto_pad becomes explicit pads, kernel shapes come from the weight when
absent, and inputs that act as attributes (Clip bounds, Resize scales, axes) are lifted when known.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import numpy as np
import onnx

from optimizer.errors import BadInputError
from optimizer.ir._graph import Shape

_TYPES = {
    onnx.AttributeProto.INT: "int", onnx.AttributeProto.INTS: "ints",
    onnx.AttributeProto.FLOAT: "float", onnx.AttributeProto.FLOATS: "floats",
    onnx.AttributeProto.STRING: "string", onnx.AttributeProto.STRINGS: "strings",
}


class NodeContext:
    """What normalisation may look at: the node, the shapes and the known constants."""

    def __init__(self, node: onnx.NodeProto, name: str, opset: int, shown: str,
                 shapes: Mapping[str, Shape], constants: Mapping[str, np.ndarray]) -> None:
        self.node, self.name, self.opset, self.shown = node, name, opset, shown
        self.shapes, self.constants = shapes, constants
        self.raw = {a.name: a for a in node.attribute}

    def fail(self, message: str) -> BadInputError:
        return BadInputError(message, file=self.shown, node=self.name)

    def attr(self, name: str, kind: str, default: Any = None) -> Any:
        proto = self.raw.get(name)
        if proto is None:
            return default
        found = _TYPES.get(proto.type, onnx.AttributeProto.AttributeType.Name(proto.type).lower())
        if found != kind:
            raise self.fail(f"attribute '{name}' must be {kind}, found {found}")
        if kind == "int":
            return int(proto.i)
        if kind == "ints":
            return tuple(int(v) for v in proto.ints)
        if kind == "float":
            return float(proto.f)
        if kind == "floats":
            return tuple(float(v) for v in proto.floats)
        if kind == "string":
            return proto.s.decode("utf-8", "replace")
        return tuple(s.decode("utf-8", "replace") for s in proto.strings)

    def input_name(self, i: int) -> str:
        return self.node.input[i] if len(self.node.input) > i else ""

    def shape(self, i: int) -> Shape:
        name = self.input_name(i)
        return self.shapes.get(name) if name else None

    def out_shape(self, i: int = 0) -> Shape:
        return self.shapes.get(self.node.output[i]) if len(self.node.output) > i else None

    def const(self, i: int) -> np.ndarray | None:
        name = self.input_name(i)
        return self.constants.get(name) if name else None

    def rank(self) -> int | None:
        shape = self.shape(0)
        return None if shape is None else len(shape)


def _static(shape: Shape) -> TypeGuard[tuple[int, ...]]:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _positive(ctx: NodeContext, name: str, values: tuple[int, ...], low: int) -> None:
    if any(v < low for v in values):
        raise ctx.fail(f"attribute '{name}' {list(values)} must be >= {low} in every dim")


def _window(ctx: NodeContext, kernel_from_weight: bool, transpose: bool = False) -> dict[str, Any]:
    """kernel/strides/dilations/pads for Conv, ConvTranspose and pooling."""
    kernel = ctx.attr("kernel_shape", "ints")
    weight = ctx.shape(1) if kernel_from_weight else None
    if kernel is None and weight is not None and len(weight) > 2 and _static(weight[2:]):
        kernel = tuple(weight[2:])
    if kernel is None:
        rank = ctx.rank()
        if rank is None or rank < 3:
            raise ctx.fail("kernel_shape is absent and cannot be derived from the weight or input")
        raise ctx.fail("kernel_shape is absent and the weight's dims are unknown")
    spatial = len(kernel)
    if spatial == 0:
        raise ctx.fail("kernel_shape is empty")
    _positive(ctx, "kernel_shape", kernel, 1)
    strides = ctx.attr("strides", "ints", (1,) * spatial)
    dilations = ctx.attr("dilations", "ints", (1,) * spatial)
    for name, values in (("strides", strides), ("dilations", dilations)):
        if len(values) != spatial:
            raise ctx.fail(f"attribute '{name}' has {len(values)} values for {spatial} spatial dims")
        _positive(ctx, name, values, 1)
    auto_pad = ctx.attr("auto_pad", "string", "NOTSET") or "NOTSET"
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ctx.fail(f"auto_pad '{auto_pad}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    pads = ctx.attr("pads", "ints")
    in_shape = ctx.shape(0)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if in_shape is None or len(in_shape) != spatial + 2 or not _static(in_shape[2:]):
            pads = None
        else:
            begin, end = [], []
            for i in range(spatial):
                size, k, s, d = int(in_shape[2 + i]), kernel[i], strides[i], dilations[i]
                eff = (k - 1) * d + 1
                if transpose:
                    total = max(s * (size - 1) + eff - size * s, 0)
                else:
                    total = max((math.ceil(size / s) - 1) * s + eff - size, 0)
                small, large = total // 2, total - total // 2
                upper = auto_pad == "SAME_UPPER"
                begin.append(small if upper else large)
                end.append(large if upper else small)
            pads = tuple(begin + end)
    elif auto_pad == "VALID" or pads is None:
        pads = (0,) * (2 * spatial)
    if pads is not None:
        if len(pads) != 2 * spatial:
            raise ctx.fail(f"attribute 'pads' has {len(pads)} values; {2 * spatial} expected")
        _positive(ctx, "pads", pads, 0)
    return {"kernel_shape": tuple(kernel), "strides": tuple(strides), "dilations": tuple(dilations),
            "pads": None if pads is None else tuple(pads)}


def _conv(ctx: NodeContext) -> dict[str, Any]:
    out = _window(ctx, kernel_from_weight=True)
    group = ctx.attr("group", "int", 1)
    if group < 1:
        raise ctx.fail(f"attribute 'group' is {group}; must be >= 1")
    out["group"] = group
    return out


def _conv_transpose(ctx: NodeContext) -> dict[str, Any]:
    out = _window(ctx, kernel_from_weight=True, transpose=True)
    out["group"] = ctx.attr("group", "int", 1)
    spatial = len(out["kernel_shape"])
    out["output_padding"] = ctx.attr("output_padding", "ints", (0,) * spatial)
    return out


def _pool(ctx: NodeContext) -> dict[str, Any]:
    out = _window(ctx, kernel_from_weight=False)
    out["ceil_mode"] = ctx.attr("ceil_mode", "int", 0)
    out["count_include_pad"] = ctx.attr("count_include_pad", "int", 0)
    out["global"] = False
    return out


def _global_pool(ctx: NodeContext) -> dict[str, Any]:
    """A global pooling is a pooling whose window is the whole feature map (as TensorRT builds it)."""
    shape = ctx.shape(0)
    if shape is None or len(shape) < 3:
        return {"kernel_shape": None, "strides": None, "pads": None, "dilations": None, "global": True}
    spatial = len(shape) - 2
    kernel = tuple(shape[2:]) if _static(shape[2:]) else None
    return {"kernel_shape": kernel, "strides": (1,) * spatial, "dilations": (1,) * spatial,
            "pads": (0,) * (2 * spatial), "global": True}


def _clip(ctx: NodeContext) -> dict[str, Any]:
    if ctx.opset < 11:
        return {"min": ctx.attr("min", "float", -math.inf), "max": ctx.attr("max", "float", math.inf)}
    bounds: list[float | None] = []
    for i, default in ((1, -math.inf), (2, math.inf)):
        if not ctx.input_name(i):
            bounds.append(default)
            continue
        value = ctx.const(i)
        bounds.append(None if value is None or value.size != 1 else float(value.reshape(())))
    return {"min": bounds[0], "max": bounds[1]}


def _axis(ctx: NodeContext, default: int, rank: int | None) -> int:
    axis = ctx.attr("axis", "int", default)
    if rank is not None:
        if not -rank <= axis < max(rank, 1):
            raise ctx.fail(f"attribute 'axis' {axis} is out of range for rank {rank}")
        axis %= max(rank, 1)
    return int(axis)


def _softmax(ctx: NodeContext) -> dict[str, Any]:
    return {"axis": _axis(ctx, 1 if ctx.opset < 13 else -1, ctx.rank())}


def _concat(ctx: NodeContext) -> dict[str, Any]:
    if "axis" not in ctx.raw:
        raise ctx.fail("attribute 'axis' is required")
    out_shape = ctx.out_shape()
    rank = ctx.rank() if ctx.rank() is not None else (None if out_shape is None else len(out_shape))
    return {"axis": _axis(ctx, 0, rank)}


def _resize_per_axis(values: Any, axes: tuple[int, ...] | None, rank: int | None) -> list[float | None] | None:
    """Resize-18's `axes`: scales or sizes name only those axes (in that order); the others are None."""
    flat = [float(v) for v in values.reshape(-1)]
    if axes is None:
        return list(flat)
    if rank is None or len(axes) != len(flat) or not all(-rank <= a < rank for a in axes):
        return None
    full: list[float | None] = [None] * rank
    for axis, v in zip(axes, flat):
        full[axis % rank] = v
    return full


def _resize(ctx: NodeContext) -> dict[str, Any]:
    mode = ctx.attr("mode", "string", "nearest")
    out: dict[str, Any] = {
        "mode": mode,
        "coordinate_transformation_mode": ctx.attr("coordinate_transformation_mode", "string", "half_pixel"),
        "nearest_mode": ctx.attr("nearest_mode", "string", "round_prefer_floor"),
    }
    scales = None
    if ctx.node.op_type == "Upsample" or ctx.opset < 11:
        value = ctx.const(1) if ctx.opset >= 9 else None
        attr_scales = ctx.attr("scales", "floats")
        scales = attr_scales if attr_scales is not None else (
            None if value is None else tuple(float(v) for v in value.reshape(-1)))
    else:
        value = ctx.const(2)
        in_shape = ctx.shape(0)
        axes = ctx.attr("axes", "ints") if ctx.opset >= 18 else None
        rank = None if in_shape is None else len(in_shape)
        if value is not None and value.size > 0:
            named = _resize_per_axis(value, axes, rank)
            scales = None if named is None else tuple(1.0 if v is None else v for v in named)
        else:
            sizes = ctx.const(3)
            named = None if sizes is None or not sizes.size else _resize_per_axis(sizes, axes, rank)
            if named is not None and _static(in_shape) and len(in_shape) == len(named):
                scales = tuple((float(s) / d if d else 0.0) if s is not None else 1.0
                               for s, d in zip(named, in_shape))
    if scales is None:
        in_shape, out_shape = ctx.shape(0), ctx.out_shape()
        if _static(in_shape) and _static(out_shape) and len(in_shape) == len(out_shape):
            scales = tuple(float(o) / i if i else 0.0 for i, o in zip(in_shape, out_shape))
    out["scales"] = scales
    return out


def _axes(ctx: NodeContext, input_index: int) -> dict[str, Any]:
    axes = ctx.attr("axes", "ints")
    if axes is None and ctx.input_name(input_index):
        value = ctx.const(input_index)
        axes = None if value is None else tuple(int(v) for v in value.reshape(-1))
    rank = ctx.rank()
    if axes is not None and rank is not None and ctx.node.op_type != "Unsqueeze":
        axes = tuple(a % rank if -rank <= a < rank else a for a in axes)
    return {"axes": axes, "keepdims": ctx.attr("keepdims", "int", 1)}


def _gemm(ctx: NodeContext) -> dict[str, Any]:
    return {"alpha": ctx.attr("alpha", "float", 1.0), "beta": ctx.attr("beta", "float", 1.0),
            "transA": ctx.attr("transA", "int", 0), "transB": ctx.attr("transB", "int", 0)}


def _lrn(ctx: NodeContext) -> dict[str, Any]:
    size = ctx.attr("size", "int")
    if size is None:
        raise ctx.fail("attribute 'size' is required")
    return {"size": size, "alpha": ctx.attr("alpha", "float", 1e-4), "beta": ctx.attr("beta", "float", 0.75),
            "bias": ctx.attr("bias", "float", 1.0)}


def _reshape(ctx: NodeContext) -> dict[str, Any]:
    value = ctx.const(1)
    return {"target": None if value is None else tuple(int(v) for v in value.reshape(-1)),
            "allowzero": ctx.attr("allowzero", "int", 0)}


def _transpose(ctx: NodeContext) -> dict[str, Any]:
    perm = ctx.attr("perm", "ints")
    rank = ctx.rank()
    if perm is None and rank is not None:
        perm = tuple(reversed(range(rank)))
    return {"perm": perm}


def _scalar_attrs(**defaults: tuple[str, Any]) -> Callable[[NodeContext], dict[str, Any]]:
    def read(ctx: NodeContext) -> dict[str, Any]:
        return {name: ctx.attr(name, kind, default) for name, (kind, default) in defaults.items()}
    return read


_NORMALISERS: Mapping[str, Callable[[NodeContext], dict[str, Any]]] = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
    "GlobalLpPool": _global_pool,
    "Clip": _clip,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "Hardmax": _softmax,
    "Concat": _concat,
    "Resize": _resize,
    "Upsample": _resize,
    "Gemm": _gemm,
    "LRN": _lrn,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "ReduceMean": lambda ctx: _axes(ctx, 1),
    "ReduceSum": lambda ctx: _axes(ctx, 1),
    "ReduceMax": lambda ctx: _axes(ctx, 1),
    "ReduceMin": lambda ctx: _axes(ctx, 1),
    "ReduceProd": lambda ctx: _axes(ctx, 1),
    "ReduceL2": lambda ctx: _axes(ctx, 1),
    "Squeeze": lambda ctx: _axes(ctx, 1),
    "Unsqueeze": lambda ctx: _axes(ctx, 1),
    "LeakyRelu": _scalar_attrs(alpha=("float", 0.01)),
    "Elu": _scalar_attrs(alpha=("float", 1.0)),
    "HardSigmoid": _scalar_attrs(alpha=("float", 0.2), beta=("float", 0.5)),
    "BatchNormalization": _scalar_attrs(epsilon=("float", 1e-5), training_mode=("int", 0)),
    "LayerNormalization": lambda ctx: {"axis": _axis(ctx, -1, ctx.rank())},
    "Flatten": lambda ctx: {"axis": _axis(ctx, 1, None)},
    "Gelu": _scalar_attrs(approximate=("string", "none")),
    "Split": lambda ctx: {"axis": _axis(ctx, 0, ctx.rank())},
    "Pad": _scalar_attrs(mode=("string", "constant")),
    "Cast": _scalar_attrs(to=("int", 0)),
}


def normalise(ctx: NodeContext) -> dict[str, Any]:
    """Every node's attributes in explicit form; unknown ops keep their raw scalar attributes."""
    reader = _NORMALISERS.get(ctx.node.op_type)
    if reader is not None and ctx.node.domain in ("", "ai.onnx"):
        return reader(ctx)
    out: dict[str, Any] = {}
    for name, proto in ctx.raw.items():
        kind = _TYPES.get(proto.type)
        if kind is not None:
            out[name] = ctx.attr(name, kind)
    return out
