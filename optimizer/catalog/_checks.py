"""Named checks for the rules a range in TOML cannot express alone.

Each check reads a rule's params and one layer, and returns None when the layer meets the rule or
a message naming the offending value ("kernel 33x3, each dim must be in [1, 32]").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optimizer.catalog._schema import Family, Rule, Target
    from optimizer.ir import Graph, Node


@dataclass(frozen=True)
class LayerView:
    graph: Graph
    node: Node
    family: Family
    target: Target
    precision: str
    kind: str

    def attr(self, name: str) -> Any:
        return self.node.attrs.get(name)

    def in_shape(self, i: int = 0) -> tuple | None:
        names = self.graph.runtime_inputs(self.node)
        return self.graph.shape(names[i]) if len(names) > i else None

    def input_shape(self, i: int) -> tuple | None:
        return self.graph.shape(self.node.inputs[i]) if len(self.node.inputs) > i else None

    def out_shape(self, i: int = 0) -> tuple | None:
        return self.graph.shape(self.node.outputs[i]) if len(self.node.outputs) > i else None


Check = Callable[["Rule", LayerView], "str | None"]


def _dims(values: Sequence[Any]) -> str:
    return "x".join(str(v) for v in values)


def _static(shape: tuple | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def static_shapes(rule: Rule, view: LayerView) -> str | None:
    """Dynamic and unresolved dims; data-dependent ones are data_dependent_shapes' (their own rule)."""
    graph = view.graph
    for name in (*graph.runtime_inputs(view.node), *view.node.outputs):
        if not name:
            continue
        cause = graph.shape_causes.get(name)
        if cause == "data-dependent":
            continue
        shape = graph.shape(name)
        origin = graph.shape_origins.get(name, "")
        if cause == "unresolved":
            return (f"tensor '{name}' dims {list(shape) if shape is not None else '(rank unknown)'} could not be "
                    f"resolved from the static inputs (inference stops at node '{origin}'); static shapes required")
        if shape is None:
            return f"tensor '{name}' has no inferable shape; static shapes required"
        dynamic = [d for d in shape if not isinstance(d, int)]
        if dynamic:
            source = f" from input '{origin}'" if origin else ""
            return (f"tensor '{name}' dims {list(shape)} are dynamic ({', '.join(map(str, dynamic))}){source}; "
                    "static shapes required (fix with --input-shape)")
    return None


def data_dependent_shapes(rule: Rule, view: LayerView) -> str | None:
    """Sizes that only the data decides (NonZero, NMS, a TopK k or a Reshape target computed from values)."""
    graph = view.graph
    for name in (*graph.runtime_inputs(view.node), *view.node.outputs):
        if name and graph.shape_causes.get(name) == "data-dependent":
            shape = graph.shape(name)
            origin = graph.shape_origins.get(name, "")
            op = graph.node(origin).op_type if origin and graph.has_node(origin) else "a run-time value"
            return (f"tensor '{name}' dims {list(shape) if shape is not None else '(rank unknown)'} depend on the "
                    f"data (sizes decided at run time by {op} node '{origin}'); the accelerator needs sizes known "
                    "at build time, which no input shape gives")
    return None


def dla_batch(rule: Rule, view: LayerView) -> str | None:
    shape = view.out_shape() or view.in_shape()
    if not _static(shape) or not shape:
        return None  # DLA-STATIC reports unknown shapes
    batch = math.prod(shape[:-3]) if len(shape) > 3 else shape[0]
    limit = rule.params["max"]
    if batch > limit:
        return f"batch {batch} (dims {list(shape)} except C, H, W) exceeds {limit}"
    return None


def rank4(rule: Rule, view: LayerView) -> str | None:
    names = view.graph.runtime_inputs(view.node) or view.node.inputs[:1]
    for name in (*names, view.node.outputs[0]):
        shape = view.graph.shape(name)
        if shape is None:
            return f"tensor '{name}' rank unknown; two spatial dims (4-D NCHW) required"
        if len(shape) != 4:
            return f"tensor '{name}' is rank {len(shape)} {list(shape)}; two spatial dims (4-D NCHW) required"
    return None


def spatial_2d(rule: Rule, view: LayerView) -> str | None:
    kernel = view.attr("kernel_shape")
    if kernel is not None and len(kernel) != 2:
        return f"{len(kernel)} spatial dims (kernel {_dims(kernel)}); only 2 supported"
    return rank4(rule, view)


def fc_weights(rule: Rule, view: LayerView) -> str | None:
    node, graph = view.node, view.graph
    if len(node.inputs) < 2 or not graph.is_constant(node.inputs[1]):
        return f"{node.op_type} B input is computed at run time (a matrix multiply, not a fully connected layer)"
    weight = graph.shape(node.inputs[1])
    if weight is None or len(weight) != 2:
        return f"{node.op_type} weight dims {list(weight or [])} are not 2-D"
    a = graph.shape(node.inputs[0])
    if a is None:
        return f"{node.op_type} input rank unknown"
    if node.op_type == "Gemm" and node.attrs.get("transA"):
        return "Gemm with transA=1 is not a fully connected layer"
    if len(a) == 2 or (len(a) == 4 and a[2:] == (1, 1)):
        return None
    return f"input is rank {len(a)} {list(a)}; fully connected needs 2-D (or Nx C x1x1) input"


def _field(view: LayerView, name: str) -> Any:
    return view.attr(name)


def each_in_range(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    values = _field(view, p["field"])
    label = p.get("label", p["field"])
    if values is None:
        return f"{label} unknown at build time; each dim must be in [{p['min']}, {p['max']}]"
    if any(not p["min"] <= v <= p["max"] for v in values):
        shown = list(values) if p["field"] == "pads" else _dims(values)
        return f"{label} {shown}, each dim must be in [{p['min']}, {p['max']}]"
    return None


def in_range(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    value = _field(view, p["field"])
    label = p.get("label", p["field"])
    if value is None or not p["min"] <= value <= p["max"]:
        return f"{label} {value} must be in [{p['min']}, {p['max']}]"
    return None


def in_set(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    value = _field(view, p["field"])
    if value not in p["values"]:
        return f"{p.get('label', p['field'])} {value} must be one of {list(p['values'])}"
    return None


def pads_lt_kernel(rule: Rule, view: LayerView) -> str | None:
    kernel, pads = view.attr("kernel_shape"), view.attr("pads")
    if kernel is None or pads is None:
        return "padding or kernel unknown at build time"
    r = len(kernel)
    for i, k in enumerate(kernel):
        if pads[i] >= k or pads[i + r] >= k:
            return f"padding {list(pads)} with kernel {_dims(kernel)}: each padding must be < the kernel dim"
    return None


def output_channels(rule: Rule, view: LayerView) -> str | None:
    node, graph = view.node, view.graph
    if node.op_type == "Conv":
        weight = graph.shape(node.inputs[1]) if len(node.inputs) > 1 else None
        count = weight[0] if weight else None
    else:
        out = view.out_shape()
        count = out[-1] if out else None
        if out is not None and len(out) == 4:
            count = out[1]
    lo, hi = rule.params["min"], rule.params["max"]
    if not isinstance(count, int) or not lo <= count <= hi:
        return f"{count} output maps, must be in [{lo}, {hi}]"
    return None


def cbuf(rule: Rule, view: LayerView) -> str | None:
    """The seed's CBUF pseudo-code, verbatim in integer form; the result depends on precision."""
    p = rule.params
    node = view.node
    if node.op_type == "Conv":
        shape = view.in_shape()
        kernel = view.attr("kernel_shape")
        if not _static(shape) or len(shape) != 4 or kernel is None or len(kernel) != 2:
            return None  # DLA-CONV-2D / DLA-STATIC report these
        c_in, w_in = shape[1], shape[3]
        k_h, k_w = kernel
        dil_h = (view.attr("dilations") or (1, 1))[0]
    else:
        shape = view.in_shape()
        if not _static(shape):
            return None
        c_in, w_in, k_h, k_w, dil_h = shape[1] if len(shape) > 1 else 1, 1, 1, 1, 1
        if node.op_type == "MatMul" or not node.attrs.get("transA"):
            c_in = shape[-1] if len(shape) == 2 else shape[1]
    bpe = 1 if view.precision == "int8" else 2
    weight_bytes = c_in * k_h * k_w * bpe
    rounded = -(-weight_bytes // p["weight_round"]) * p["weight_round"]
    wt_banks = math.ceil(rounded / float(p["bank_bytes"]))
    entries = math.ceil(math.ceil(c_in * bpe / float(p["entry_bytes"])) * w_in / float(p["width_div"]))
    dilated = (k_h - 1) * dil_h + 1
    data_banks = math.ceil(float(entries * dilated) / float(p["entries_per_bank"]))
    if wt_banks + data_banks > p["banks"]:
        return (f"needs {wt_banks + data_banks} CBUF banks (wt {wt_banks} + data {data_banks}) in "
                f"{view.precision}, limit {p['banks']}")
    return None


def deconv_kernel(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    kernel = view.attr("kernel_shape")
    if kernel is None or len(kernel) != 2:
        return None
    if all(p["min"] <= k <= p["max"] for k in kernel):
        return None
    if (kernel[0] == 1 and kernel[1] in p["long"]) or (kernel[1] == 1 and kernel[0] in p["long"]):
        return None
    return (f"kernel {_dims(kernel)}, each dim must be in [{p['min']}, {p['max']}] "
            f"(or 1x{list(p['long'])} / {list(p['long'])}x1)")


def deconv_square_stride(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    kernel, strides = view.attr("kernel_shape"), view.attr("strides")
    if kernel is None or strides is None or len(kernel) != 2:
        return None
    if kernel[0] == kernel[1] and any(p["min"] <= s <= p["max"] for s in strides):
        return (f"square kernel {_dims(kernel)} with stride {_dims(strides)}: strides in "
                f"[{p['min']}, {p['max']}] are disabled for square kernels")
    return None


def deconv_channels(rule: Rule, view: LayerView) -> str | None:
    weight = view.input_shape(1)
    if not _static(weight) or len(weight) < 2:
        return None
    group = view.attr("group") or 1
    c_in, c_out = weight[0], weight[1] * group
    lo, hi = rule.params["min"], rule.params["max"]
    if not (lo <= c_in <= hi and lo <= c_out <= hi):
        return f"{c_in} input / {c_out} output channels, each must be in [{lo}, {hi}]"
    return None


def deconv_padding(rule: Rule, view: LayerView) -> str | None:
    """The pads, then output_padding: TensorRT applies an ONNX output_padding as post-padding of the
    deconvolution layer (negative: it grows the output), which DLA's "padding must be 0" excludes."""
    found = each_in_range(rule, view)
    if found is not None:
        return found
    extra = view.attr("output_padding")
    if extra and any(v != 0 for v in extra):
        return (f"output_padding {list(extra)} (TensorRT builds it as post-padding {[-v for v in extra]}); "
                f"padding must be 0")
    return None


def pool_2d(rule: Rule, view: LayerView) -> str | None:
    if view.node.op_type not in rule.params["ops"]:
        return f"{view.node.op_type} is not a MAX or AVERAGE pooling"
    return spatial_2d(rule, view)


def op_in(rule: Rule, view: LayerView) -> str | None:
    if view.node.op_type not in rule.params["ops"]:
        return f"{view.node.op_type} is not among the {rule.params['what']}"
    return None


def leaky_slope(rule: Rule, view: LayerView) -> str | None:
    if view.node.op_type == "LeakyRelu" and (view.attr("alpha") or 0.0) < 0:
        return f"negative slope {view.attr('alpha')} is not supported"
    return None


def clip_range(rule: Rule, view: LayerView) -> str | None:
    if view.node.op_type != "Clip":
        return None
    low, high = view.attr("min"), view.attr("max")
    lo, hi = rule.params["min"], rule.params["max"]
    if low is None or high is None:
        return f"Clip bounds unknown at build time; clipped ReLU needs [0, t] with t in [{lo}, {hi}]"
    if low != 0 or not lo <= high <= hi:
        return f"Clip [{low:g}, {high:g}]; clipped ReLU needs lower bound 0 and upper bound in [{lo}, {hi}]"
    return None


def const_input(rule: Rule, view: LayerView) -> str | None:
    index = rule.params["index"]
    inputs = view.node.inputs
    if len(inputs) <= index or not view.graph.is_constant(inputs[index]):
        return f"{rule.params['what']} is computed at run time; a build-time constant is required"
    return None


def concat_axis(rule: Rule, view: LayerView) -> str | None:
    shape = view.out_shape()
    axis = view.attr("axis")
    if shape is None or len(shape) != 4:
        return f"output rank {None if shape is None else len(shape)}; concat needs 4-D NCHW on the channel axis"
    if axis != 1:
        return f"axis {axis} (dims {list(shape)}); only the channel axis 1 is supported"
    return None


def min_runtime_inputs(rule: Rule, view: LayerView) -> str | None:
    count = len([i for i in view.node.inputs if i])
    if count < rule.params["min"]:
        return f"{count} input(s); at least {rule.params['min']} required"
    return None


def same_spatial(rule: Rule, view: LayerView) -> str | None:
    shapes = [view.graph.shape(i) for i in view.node.inputs if i]
    spatial = {tuple(s[2:]) if s is not None and len(s) == 4 else None for s in shapes}
    if None in spatial or len(spatial) != 1:
        return f"input spatial dims differ or are unknown: {[list(s[2:]) if s else None for s in shapes]}"
    return None


def resize_scales(rule: Rule, view: LayerView) -> str | None:
    scales = view.attr("scales")
    if scales is None:
        return "scales unknown at build time (computed at run time)"
    if len(scales) != 4:
        return f"{len(scales)} scales {list(scales)}; exactly 4 required"
    if scales[0] != 1 or scales[1] != 1:
        return f"scales {[round(s, 4) for s in scales]}; the batch and channel scales must be exactly 1"
    return None


def resize_mode_scale(rule: Rule, view: LayerView) -> str | None:
    p = rule.params
    if view.attr("mode") != p["mode"]:
        return None
    scales = view.attr("scales")
    if scales is None or len(scales) != 4:
        return None  # DLA-RESIZE-SCALES reports it
    hw = scales[2:]
    if any(s != int(s) or not p["min"] <= s <= p["max"] for s in hw):
        return (f"{p['mode']} H/W scales {[round(s, 4) for s in hw]} must be integers in "
                f"[{p['min']}, {p['max']}]")
    return None


def resize_mode(rule: Rule, view: LayerView) -> str | None:
    mode = view.attr("mode")
    if mode not in rule.params["modes"]:
        return f"mode '{mode}'; only {' and '.join(rule.params['modes'])}"
    return None


def generation_only(rule: Rule, view: LayerView) -> str | None:
    if view.target.generation not in rule.params["generations"]:
        return (f"{view.node.op_type} on DLA exists on {', '.join(rule.params['generations'])} only, "
                f"not on {view.target.generation} ({view.target.id})")
    return None


def softmax_shape(rule: Rule, view: LayerView) -> str | None:
    shape = view.in_shape()
    axis = view.attr("axis")
    if len(view.graph.runtime_inputs(view.node)) != 1 or shape is None or axis is None:
        return "single input with a known shape required"
    others = [d for i, d in enumerate(shape) if i not in (0, axis)]
    if shape[0] != 1 or any(d != 1 for d in others):
        return f"dims {list(shape)} with axis {axis}: batch must be 1 and every other non-axis dim 1"
    return None


def _unit_stripped(shape: tuple) -> tuple:
    return tuple(d for d in shape if d != 1)


def layout_transparent(rule: Rule, view: LayerView) -> str | None:
    op = view.node.op_type
    if op in ("Identity", "Dropout"):
        return None
    src, dst = view.in_shape(), view.out_shape()
    if not _static(src) or not _static(dst):
        return f"{op} with unknown or dynamic shapes; a Shuffle layer is not a DLA layer"
    if op == "Transpose":
        perm = view.attr("perm") or ()
        moved = [axis for axis in perm if src[axis] != 1]
        if moved == sorted(moved):
            return None
        return f"Transpose perm {list(perm)} of {list(src)} moves data (a Shuffle layer, not a DLA layer)"
    if _unit_stripped(src) == _unit_stripped(dst):
        return None
    return f"{op} {list(src)} -> {list(dst)} moves data (a Shuffle layer, not a DLA layer)"


def never(rule: Rule, view: LayerView) -> str | None:
    if view.node.opaque:
        return f"control flow ({view.node.op_type}) is opaque; it never runs on the {view.target.accelerator.upper()}"
    return f"{view.node.op_type} maps to no DLA layer kind"


def npu_op(rule: Rule, view: LayerView) -> str | None:
    support = view.family.op_support.get(view.node.op_type)
    if view.node.opaque:
        return f"control flow ({view.node.op_type}) is opaque; it runs on the CPU"
    if support is None or view.target.rules_id not in support.npu_socs:
        return f"{view.node.op_type} has no NPU kernel on {view.target.id}; it runs on the CPU"
    if support.precisions and view.precision not in support.precisions:
        return f"{view.node.op_type} runs on the NPU in {'/'.join(support.precisions)} only"
    if support.condition is not None:
        return CONDITIONS[support.condition](view)
    return None


def _avgpool_count_include_pad(view: LayerView) -> str | None:
    pads = view.attr("pads") or ()
    if any(pads) and not view.attr("count_include_pad"):
        return ("AveragePool with padding and count_include_pad=0 runs on the CPU "
                "(the NPU averages over the padded window)")
    return None




def precision_only(rule: Rule, view: LayerView) -> str | None:
    if view.node.op_type in rule.params.get("ops", (view.node.op_type,)) and \
            view.precision not in rule.params["precisions"]:
        return f"{view.node.op_type} runs on the NPU in {'/'.join(rule.params['precisions'])} only"
    return None


def matmul_k(rule: Rule, view: LayerView) -> str | None:
    a = view.input_shape(0)
    if a is None or not isinstance(a[-1], int):
        return None
    if not 0 < a[-1] <= rule.params["max"]:
        return f"K = {a[-1]}, must be in (0, {rule.params['max']}]"
    return None


def norm_axes(rule: Rule, view: LayerView) -> str | None:
    shape = view.in_shape()
    axis = view.attr("axis")
    if shape is None or axis is None:
        return None
    if axis in (1, len(shape) - 1):
        return None
    return f"normalises axes {list(range(axis, len(shape)))} of {list(shape)}; only [1] or [1,2,3] supported"



CHECKS: Mapping[str, Check] = {
    "static_shapes": static_shapes, "dla_batch": dla_batch, "rank4": rank4, "spatial_2d": spatial_2d,
    "fc_weights": fc_weights, "each_in_range": each_in_range, "in_range": in_range, "in_set": in_set,
    "pads_lt_kernel": pads_lt_kernel, "output_channels": output_channels, "cbuf": cbuf,
    "deconv_kernel": deconv_kernel, "deconv_square_stride": deconv_square_stride,
    "deconv_channels": deconv_channels,
    "deconv_padding": deconv_padding,
    "pool_2d": pool_2d, "op_in": op_in, "leaky_slope": leaky_slope,
    "clip_range": clip_range, "const_input": const_input, "concat_axis": concat_axis,
    "min_runtime_inputs": min_runtime_inputs, "same_spatial": same_spatial,
    "resize_scales": resize_scales, "resize_mode_scale": resize_mode_scale, "resize_mode": resize_mode,
    "generation_only": generation_only, "softmax_shape": softmax_shape,
    "layout_transparent": layout_transparent, "never": never, "npu_op": npu_op,
    "precision_only": precision_only, "matmul_k": matmul_k, "norm_axes": norm_axes,
    "data_dependent_shapes": data_dependent_shapes,
}


def _erf_in_gelu(view: LayerView) -> str | None:
    """x*0.5*(1+erf(x/sqrt2)): the toolkit fuses the pattern into exGelu on the NPU."""
    graph, node = view.graph, view.node
    producer = graph.producer(node.inputs[0]) if node.inputs else None
    users = graph.consumers(node.outputs[0]) if node.outputs else ()
    if (producer is not None and producer.op_type in ("Div", "Mul")
            and any(graph.is_constant(i) for i in producer.inputs[1:])
            and len(users) == 1 and users[0].op_type == "Add"):
        return None
    return "a lone Erf has no NPU kernel; only the GELU pattern x*0.5*(1+erf(x/sqrt2)) fuses into exGelu"


CONDITIONS: Mapping[str, Callable[[LayerView], str | None]] = {
    "avgpool_count_include_pad": _avgpool_count_include_pad,
    "erf_in_gelu": _erf_in_gelu,
}
