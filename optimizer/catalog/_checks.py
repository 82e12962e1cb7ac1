"""Named checks for the rules a range in TOML cannot express alone.

Each check reads a rule's params and one layer, and returns None when the layer meets the rule or
a message naming the offending value ("kernel 33x3, each dim must be in [1, 32]").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from optimizer.catalog._flat_rows import rows_pad
from optimizer.catalog._joins import block_join_5d, token_unpatchify
from optimizer.catalog._layout import (
    LAYOUT_OPS,
    RESHAPES,
    channel_permutation,
    in_identity_run,
    moves_data,
    reduce_axes,
    spaced_einsum_operand,
)
from optimizer.catalog._layout import data_users as _data_users
from optimizer.catalog._layout import only_user as _only_user
from optimizer.catalog._pairs import pair_split
from optimizer.catalog._partitions import (
    batched_rows,
    grid_rows,
    grid_swap_ends,
    grid_unswap,
    lone_transpose_runs,
    window_batch_merge,
    window_batch_split,
    window_head_join,
)
from optimizer.catalog._rect_windows import rect_window
from optimizer.catalog._rk3566 import (
    bias_add,
    einsum_heads,
    einsum_operands,
    pixel_reduce,
    swapped_lstm_join,
    weight_constant,
    weight_matmul,
)
from optimizer.catalog._rk3566_attn import (
    channels_last_merge,
    cosine_window_operands,
    cosine_window_split,
    factorised_attention,
    grid_merge_ends,
    kv_heads,
    pooled_heads_flatten,
    pooled_value,
    relpos_query_split,
    transpose_into_reshape,
)
from optimizer.catalog._stream import batch_rows_stream
from optimizer.catalog._unfold import unfold_rows
from optimizer.catalog._video import video_flatten
from optimizer.catalog._view import LayerView
from optimizer.ir._fold import build_time_value

if TYPE_CHECKING:
    from optimizer.catalog._schema import Rule
    from optimizer.ir import Graph, Node
    from optimizer.ir._graph import Dim, Shape


Check = Callable[["Rule", LayerView], "str | None"]


def _dims(values: Sequence[Any]) -> str:
    return "x".join(str(v) for v in values)


def _static(shape: Shape) -> TypeGuard[tuple[int, ...]]:
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


def _rank_kept_by(view: LayerView, user: Node, rank: int) -> bool:
    """`user` is an op the toolkit keeps at its own rank (its [ops] entry carries a max_rank limit below
    `rank` here), so it takes a rank-`rank` operand as it is written, not folded into 4-D."""
    support = view.family.op_support.get(user.op_type)
    if support is None:
        return False
    return any(c.check == "max_rank" and c.applies(view.target.rules_id, view.precision)
               and rank > int((c.params or {}).get("rank", 4)) for c in support.all_conditions)


def rank_kept_operand(rule: Rule, view: LayerView) -> str | None:
    """The op making a rank-5 operand of an op the toolkit keeps at rank 5 (EvoNorm-S0's Sqrt): the toolkit
    reshapes the NPU's 4-D result into it with a layer named after the op. On some SoCs that reshape is a CPU
    layer always; on those in `statistic_only` only for a per-group statistic [N, G, 1, 1, 1], whose values
    the 4-D form holds one per batch row."""
    graph, node = view.graph, view.node
    statistic_only = (rule.params or {}).get("statistic_only", ())
    source = graph.producer(node.inputs[0]) if node.op_type in RESHAPES and node.inputs else None
    shape_in = graph.shape(node.inputs[0]) if source is not None else None
    if (source is not None and _static(shape_in) and len(shape_in) >= 5 and view.target.rules_id not in statistic_only
            and _rank_kept_by(view, source, len(shape_in))):
        return (f"reshapes the rank-{len(shape_in)} result of {source.op_type} {source.name}, which the toolkit keeps "
                f"at rank {len(shape_in)}: the reshape back into the NPU's 4-D form runs on the CPU")
    for out in node.outputs:
        shape = graph.shape(out)
        if not _static(shape) or len(shape) < 5:
            continue
        users = [u for u in _data_users(graph, out) if _rank_kept_by(view, u, len(shape))]
        if not users:
            continue
        if view.target.rules_id in statistic_only and math.prod(shape[2:]) != 1:
            continue
        return (f"makes the rank-{len(shape)} operand {list(shape)} of {users[0].op_type} {users[0].name}, which the "
                f"toolkit keeps at rank {len(shape)}: the reshape into it runs on the CPU")
    return None


def rnn_layout(rule: Rule, view: LayerView) -> str | None:
    """The toolkit's loader checks recurrent nodes against a schema that has no `layout` attribute (opset 14
    added it): written at all, even as the default 0 the dynamo exporter spells out, it stops the conversion."""
    node = view.node
    if node.op_type not in ("LSTM", "GRU", "RNN") or "layout" not in node.attrs:
        return None
    return (f"{node.op_type} carries the attribute layout={node.attrs['layout']}: the toolkit's checker refuses the "
            "model ('Unrecognized attribute: layout'); drop the attribute (0 is its default) or export with the "
            "TorchScript exporter")


def narrow_cast(rule: Rule, view: LayerView) -> str | None:
    """The toolkit has no data conversion into the element types in `to` for a tensor made at run time (of the
    element types in `sources`, when given): the converter aborts (uint8: 'Not Support Dtype: 2') or dies, and
    no model is built. A cast to the type the tensor already has is the identity, which the toolkit removes
    (QDQ models' uint8 -> uint8 Casts)."""
    node, graph = view.node, view.graph
    if node.op_type != "Cast" or not node.inputs or not node.outputs or graph.is_constant(node.inputs[0]):
        return None
    source, result = graph.tensors.get(node.inputs[0]), graph.tensors.get(node.outputs[0])
    if result is None or result.dtype not in set((rule.params or {}).get("to", ())):
        return None
    if source is not None and source.dtype == result.dtype:
        return None
    sources = (rule.params or {}).get("sources")
    if sources is not None and (source is None or source.dtype not in set(sources)):
        return None
    return (f"casts the run-time tensor {node.inputs[0]} to {result.dtype}: rknn-toolkit2 stops converting the "
            f"whole model on {view.target.rules_id}; leave the tensor in its type and cast it on the host")


def empty_tensor(rule: Rule, view: LayerView) -> str | None:
    """The toolkit's loader checks every tensor's shape and refuses a zero-size dim ('is abnormal') on data of
    rank 2 or more; an empty 1-D shape vector (a Slice of a shape that selects nothing) is fine."""
    graph = view.graph
    for tensor in view.node.outputs:
        shape = graph.shape(tensor) if tensor else None
        if _static(shape) and len(shape) >= 2 and 0 in shape:
            return (f"makes the empty tensor {tensor} {list(shape)}: rknn-toolkit2 refuses the whole model ('The "
                    "shape of ... is abnormal'); remove the empty branch (a zero-size slice, pad or mask)")
    return None


def volume_max_pool(rule: Rule, view: LayerView) -> str | None:
    """A MaxPool over three spatial axes (a video network's 3-D pooling) aborts the converter; 3-D average pooling
    is lowered as a depthwise convolution and converts."""
    node = view.node
    kernel = node.attrs.get("kernel_shape") or ()
    if node.op_type != "MaxPool" or len(kernel) < 3:
        return None
    return (f"MaxPool over {len(kernel)} spatial axes (kernel {list(kernel)}): rknn-toolkit2 aborts the whole "
            "conversion (std::out_of_range); fold the pooling's depth into the batch and pool 2-D, or pool on the host")


_INTEGER = frozenset({"int32", "int64", "uint32", "uint64"})


def is_noop(graph: Graph, node: Node) -> bool:
    """A node the toolkit removes before lowering, so it has no layer and patterns match through it: Identity,
    Dropout, a Cast to the dtype it reads, an Expand/Tile/Reshape whose output has its input's shape."""
    if node.op_type in ("Identity", "Dropout"):
        return True
    if not node.inputs or not node.outputs or not node.inputs[0]:
        return False
    src, dst = graph.tensors.get(node.inputs[0]), graph.tensors.get(node.outputs[0])
    if src is None or dst is None:
        return False
    if node.op_type == "Cast":
        return src.dtype == dst.dtype
    return node.op_type in ("Expand", "Tile", "Reshape") and _static(src.shape) and src.shape == dst.shape


def neutral_arithmetic(graph: Graph, node: Node) -> bool:
    """x + 0, x - 0, x * 1, x / 1 with the neutral operand known at build time (CLIP's pooled index adds
    arange(batch) x length, all zeros at batch 1) and the result of x's shape: the toolkit drops the op, so a
    run-time integer x costs no CPU layer there."""
    if node.op_type not in ("Add", "Sub", "Mul", "Div") or len(node.inputs) != 2 or not node.outputs:
        return False
    neutral = 0 if node.op_type in ("Add", "Sub") else 1
    out = graph.shape(node.outputs[0])
    for k, tensor in enumerate(node.inputs):
        other = node.inputs[1 - k]
        if (k == 0 and node.op_type in ("Sub", "Div")) or not graph.is_constant(tensor) or graph.is_constant(other):
            continue
        value = build_time_value(graph, tensor)
        if value is not None and value.size and bool(np.all(value == neutral)) and graph.shape(other) == out:
            return True
    return False


def vector_division(rule: Rule, view: LayerView) -> str | None:
    """The NPU's Div needs a map: two run-time vectors of one shape (one value per channel or token, one pixel:
    ConvNeXt-V2's response normalisation) are divided on the CPU, while a broadcast divisor or a map of a few
    pixels stays on the NPU."""
    node, graph = view.node, view.graph
    if node.op_type != "Div" or len(node.inputs) != 2 or any(graph.is_constant(i) for i in node.inputs):
        return None
    a, b = graph.shape(node.inputs[0]), graph.shape(node.inputs[1])
    if not _static(a) or a != b or len(a) < 3 or sum(1 for d in a if d != 1) != 1:
        return None  # rank 2 ([1, N] box coordinates): NPU (corpus hf_dab_detr)
    return (f"Div of two run-time vectors {list(a)} (one pixel each, no broadcast): the NPU divides maps; it runs "
            "on the CPU")


def runtime_int_data(rule: Rule, view: LayerView) -> str | None:
    """The NPU computes on int8/int16/float16 data: an arithmetic or indexing op that reads a 32/64-bit integer
    tensor made at run time (indices from a TopK, their quotient and remainder, an index broadcast, a running
    count) has no NPU form. Integer tensors edgeplan resolves at build time (shape arithmetic) are constants,
    not this; an op that changes nothing (an Expand to the shape it reads) is removed, not run."""
    node, graph = view.node, view.graph
    if (node.op_type not in set((rule.params or {}).get("ops", ())) or is_noop(graph, node)
            or neutral_arithmetic(graph, node)):
        return None
    for tensor in node.inputs:
        info = graph.tensors.get(tensor) if tensor else None
        if info is not None and info.dtype in _INTEGER and not graph.is_constant(tensor):
            return (f"{node.op_type} reads the run-time {info.dtype} tensor {tensor}: the NPU has no 32/64-bit "
                    "integer arithmetic or indexing; it runs on the CPU")
    return None


def bn_inference(rule: Rule, view: LayerView) -> str | None:
    """A BatchNormalization that computes its own batch statistics (training_mode=1) is refused by the
    toolkit's loader, which stops the whole conversion; weight standardisation (NF-Net, BiT) writes one over
    each convolution's weight."""
    node = view.node
    if not view.graph.batch_statistics(node):
        return None
    return (f"{node.op_type} in training mode (batch statistics, training_mode=1): the toolkit refuses to load "
            "the model; over a weight, `edgeplan suggest` offers the fold-statistics edit (on the weighted model)")


def dla_batch(rule: Rule, view: LayerView) -> str | None:
    shape = view.out_shape() or view.in_shape()
    if not _static(shape) or not shape:
        return None  # DLA-STATIC reports unknown shapes
    batch = math.prod(shape[:-3]) if len(shape) > 3 else shape[0]
    limit = rule.params["max"]
    if batch > limit:
        return f"batch {batch} (dims {list(shape)} except C, H, W) exceeds {limit}"
    return None


def dla_dims(rule: Rule, view: LayerView) -> str | None:
    """DLA-DIM-MAX: the non-batch dims (C, H, W; as DLA-BATCH, the batch is every index dim before them)."""
    limit = int(rule.params["max"])
    for name in (*view.graph.runtime_inputs(view.node), *view.node.outputs):
        shape = view.graph.shape(name) if name else None
        if not shape or not _static(shape):
            continue  # DLA-STATIC reports unknown shapes
        dims = [int(d) for d in (shape[-3:] if len(shape) > 3 else shape[1:])]
        if any(d > limit for d in dims):
            return f"tensor '{name}' dims {list(shape)}: non-batch dim {max(dims)} exceeds {limit}"
    return None


def platform_unsupported(rule: Rule, view: LayerView) -> str | None:
    """A rule set under which this target has no DLA engine at all; the reason is the rule's own text."""
    return f"{view.target.id}: {rule.params['what']}"


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


def _unit_stripped(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
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
    for condition in support.all_conditions:
        if condition.applies(view.target.rules_id, view.precision):
            message = CONDITIONS[condition.check](view, condition.params or {})
            if message is not None:
                return message
    return None


def _avgpool_count_include_pad(view: LayerView, params: Mapping[str, Any]) -> str | None:
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
    """exMatMul's K limit. With `runtime_b_only`, a MatMul/Gemm whose B is a build-time constant is exempt:
    the toolkit lowers it to a 1x1 convolution and tiles K over several of them."""
    inputs = view.node.inputs
    if rule.params.get("runtime_b_only") and len(inputs) > 1 and view.graph.is_constant(inputs[1]):
        return None
    a = view.input_shape(0)
    if a is None or not isinstance(a[-1], int):
        return None
    if not 0 < a[-1] <= rule.params["max"]:
        return f"K = {a[-1]}, must be in (0, {rule.params['max']}]"
    return None


def conv_stride(rule: Rule, view: LayerView) -> str | None:
    """The stride register field holds 1..`max`. The toolkit peels stride-2 select convolutions off an even stride
    (16 -> a stride-8 convolution and a select; 20 -> 10 -> 5) until it fits, so only a stride left above the
    field after halving (an odd 9, 11, 13, or 18 -> 9) overflows it."""
    strides = _field(view, rule.params["field"])
    if strides is None:
        return each_in_range(rule, view)
    for stride in strides:
        left = int(stride)
        while left > rule.params["max"] and left % 2 == 0:
            left //= 2
        if not rule.params["min"] <= left <= rule.params["max"]:
            peeled = "" if left == stride else f" (halved to {left})"
            return (f"stride {_dims(strides)}: {stride}{peeled} does not fit the stride field [{rule.params['min']}, "
                    f"{rule.params['max']}]; only even strides are split into a convolution and stride-2 selects")
    return None


def output_relayout(rule: Rule, view: LayerView) -> str | None:
    if rule.params.get("ops") and view.node.op_type not in rule.params["ops"]:
        return None
    return _output_relayout(view, rule.params)


def data_dtypes(rule: Rule, view: LayerView) -> str | None:
    return _data_dtypes(view, rule.params)


def norm_axes(rule: Rule, view: LayerView) -> str | None:
    """exNorm normalises NCHW axes [1] or [1,2,3]: a 4-D tensor from axis 1 on, or over its last axis
    alone (a channels-last LayerNorm: the toolkit moves that axis to the channel); a 2-D/3-D token tensor
    only over its last axis, which becomes the channel. An H,W LayerNorm (4-D axis 2) is neither."""
    shape = view.in_shape()
    axis = view.attr("axis")
    if shape is None or axis is None:
        return None
    rank = len(shape)
    axis = axis + rank if axis < 0 else axis
    if rank <= 4 and (axis == rank - 1 or (rank == 4 and axis == 1)):
        return None
    return (f"normalises axes {list(range(axis, rank))} of {list(shape)}; only the channel axis, "
            "[1,2,3] or the last axis alone supported")


def norm_limits(rule: Rule, view: LayerView) -> str | None:
    precisions = rule.params.get("precisions", ())
    if precisions and view.precision not in precisions:
        return (f"{view.node.op_type} (exNorm) runs on the NPU in {'/'.join(precisions)} only, "
                f"not {view.precision}")
    return norm_axes(rule, view)


def _activation_matmul_operand(graph: Graph, tensor: str, depth: int = 4) -> tuple[int, Node] | None:
    """(operand index, MatMul) when `tensor` flows through element-wise ops only into a MatMul of two
    activations (exMatMul: attention's Q.K^T and P.V)."""
    for _ in range(depth):
        users = _data_users(graph, tensor)
        if len(users) != 1:
            return None
        user = users[0]
        if user.op_type == "MatMul" and len(user.inputs) > 1 and not graph.is_constant(user.inputs[1]):
            return user.inputs.index(tensor), user
        if user.op_type not in _LAYOUT_NEUTRAL and not _unit_move(graph, user):
            return None
        tensor = user.outputs[0]
    return None


def _behind_transpose(graph: Graph, tensor: str, depth: int = 4) -> bool:
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return False
        if node.op_type == "Transpose":
            return True
        if node.op_type not in _LAYOUT_NEUTRAL:
            return False
        tensor = next((i for i in node.inputs if i and not graph.is_constant(i)), "")
    return False


def _softmax_side(graph: Graph, tensor: str, depth: int = 6) -> bool:
    """The tensor is attention's probability matrix: a Softmax output, possibly transposed (V @ P^T) or mixed and
    renormalised by element-wise ops (ConViT's gated sum of two softmaxes divided by its row sum) or mixed across
    heads by a convolution (EfficientFormerV2's talking heads) or by a constant MatMul over the heads between two
    transposes (CaiT's talking heads, `_heads_mix`)."""
    node = graph.producer(tensor)
    if node is not None and node.op_type == "Transpose":
        node = graph.producer(node.inputs[0])
    for _ in range(depth):
        if node is None or node.op_type == "Softmax":
            break
        if (node.op_type not in ("Mul", "Add", "Div", "Sub", "Conv", "Transpose") and not _const_matmul(graph, node)
                and not is_noop(graph, node)):
            return False
        node = graph.producer(_activation_input(graph, node))
    return node is not None and node.op_type == "Softmax"


def _value_operand(graph: Graph, node: Node) -> tuple[int, tuple[Any, ...]] | None:
    """(operand index, V's shape) when `node` makes the V operand of attention's P.V (or V.P^T): one operand of
    a MatMul of two activations whose other operand is the Softmax's probabilities."""
    for output in node.outputs:  # a q/k/v Split makes V as one of its outputs; V may have other users too
        for user in _data_users(graph, output):
            if not _is_activation_matmul(graph, user) or output not in user.inputs[:2]:
                continue
            index = user.inputs.index(output)
            if _softmax_side(graph, user.inputs[1 - index]):
                if _from_windowed_heads(graph, output, split_first=False) and not _cosine_windows(graph, output):
                    return None  # already (b, N, 1, d) after the windowed head split (RKNN-WINDOW-HEADS)
                shape = graph.shape(output)
                return (index, shape) if _static(shape) and len(shape) >= 2 else None
    return None


def _unit_move(graph: Graph, node: Node) -> bool:
    """A Squeeze/Unsqueeze/Reshape that only adds or drops unit axes: the toolkit's 4-D form is unchanged."""
    src = graph.shape(node.inputs[0]) if node.inputs else None
    dst = graph.shape(node.outputs[0]) if node.outputs else None
    return (node.op_type in ("Squeeze", "Unsqueeze", "Reshape") and _static(src) and _static(dst)
            and _unit_stripped(src) == _unit_stripped(dst))


def _split_in_transpose(graph: Graph, split: Node) -> bool:
    """A q/k/v Split right after the Transpose that unbinds them, when that Transpose only brings channel pieces
    in front of the token axis (a batch of one: ViT's [1,N,3,h,d] -> [3,1,h,N,d]): NCHW already holds C outside
    H and W, so the toolkit lowers the pair as one channel split named after the Transpose and the Split has no
    layer of its own to carry V's move. Bringing q/k/v in front of a real batch (windows, patch pixels: two
    non-unit axes before it) moves data, and the Split then keeps its layer."""
    producer = graph.producer(split.inputs[0]) if split.inputs else None
    if producer is None or producer.op_type != "Transpose":
        return False
    src = graph.shape(producer.inputs[0])
    perm = tuple(producer.attrs.get("perm") or ())
    if not _static(src) or len(perm) != len(src) or len(src) > 5:
        return False  # a rank-6 unbind (NesT's blocks axis) is lowered as a Gather, and the Split kept apart
    axis = _cut_axis(graph, split)
    if axis is None:
        return False
    source = perm[axis % len(perm)]
    return sum(1 for d in src[:source] if d != 1) <= 1


def _cut_axis(graph: Graph, node: Node) -> int | None:
    """The axis a Split cuts, or the one constant axis a Slice cuts (the dynamo exporter unbinds q/k/v with
    Slice + Squeeze where TorchScript writes Split + Squeeze)."""
    if node.op_type == "Split":
        return int(node.attrs.get("axis", 0))
    if node.op_type != "Slice":
        return None
    if len(node.inputs) < 4 or not node.inputs[3]:
        return 0
    value = graph.constants.get(node.inputs[3])
    if value is None or value.size != 1:
        return None
    return int(value.reshape(-1)[0])


def _v_carriers(graph: Graph, maker: Node) -> tuple[Node, ...]:
    """The nodes the V transpose's layers are named after, found from the op making V: a Squeeze/Unsqueeze of a
    unit axis folds (the layout chain starts before it; a Reshape ending a run keeps the run's layer); a q/k/v
    Split carries the move of its output, with any Transpose of that output; a head-splitting Reshape right
    before a Transpose takes it over; a Reshape that only relabels a map (keeps its channel, [1,C,H,W] ->
    [1,C,HW]) leaves the Transpose its own layer and is relaid out with it."""
    node = maker
    for _ in range(4):
        squeeze = node.op_type in ("Squeeze", "Unsqueeze") and _unit_move(graph, node)
        producer = graph.producer(_activation_input(graph, node)) if squeeze else None
        if producer is None or _only_user(graph, _activation_input(graph, node)) is not node:
            break
        if producer.op_type in ("Split", "Slice") and _split_in_transpose(graph, producer):
            break
        node = producer
    if node.op_type != "Transpose":
        return (node,)
    producer = graph.producer(node.inputs[0])
    if producer is None or _only_user(graph, node.inputs[0]) is not node:
        return (node,)
    if producer.op_type == "Split" or (producer.op_type == "Slice" and len(_data_users(graph, producer.inputs[0])) > 1):
        return (producer,)  # a q/k/v Split, or one of the Slices cutting q, k and v apart, carries V's move
    if producer.op_type != "Reshape":
        return (node,)
    if _seq_first_heads(graph, node):
        return (producer, node)
    a, b = _as_npu_4d(graph.shape(producer.inputs[0]) or ()), _as_npu_4d(graph.shape(node.inputs[0]) or ())
    return (producer, node) if a is not None and b is not None and a[1] == b[1] else (producer,)


def _downstream_layout(graph: Graph, node: Node, depth: int = 4) -> list[Node]:
    """`node` and the layout ops its outputs run through, each the only data consumer of its input."""
    found, frontier = [node], [node]
    for _ in range(depth):
        frontier = [u for n in frontier for o in n.outputs for u in (_only_user(graph, o),)
                    if u is not None and u.op_type in LAYOUT_OPS]
        found += frontier
    return found


def exmatmul_operand(rule: Rule, view: LayerView) -> str | None:
    """The V operand of attention (P.V or V.P^T, P from a Softmax) goes into exMatMul's [b, N, 1, d] form through
    a Transpose layer named after the start of V's layout chain (`_v_carriers`); K^T of Q.K^T needs none. The
    transpose runs on the NPU only when both of V's last two dims are whole 8-byte groups (`align` elements per
    precision: 4 FP16, 8 INT8)."""
    node, graph = view.node, view.graph
    align = rule.params.get("align", {}).get(view.precision, 1)
    for maker in _downstream_layout(graph, node):
        found = _value_operand(graph, maker)
        if found is None or node not in _v_carriers(graph, maker):
            continue
        shape = found[1]
        if shape[-1] % align == 0 and shape[-2] % align == 0:
            return None  # both dims whole 8-byte groups: the transpose runs on the NPU
        return (f"{node.op_type} starts the layout of the V operand {list(shape)} of attention's softmax(.).V; its "
                f"last two dims are not both multiples of {align} ({view.precision}: 8-byte groups), so the "
                "transpose into exMatMul's [b, N, 1, d] form runs on the CPU")
    return None


def _shared_constant(graph: Graph, tensor: str) -> bool:
    """A constant that other nodes read too, directly or through an Identity (the TorchScript exporter
    deduplicates equal initializers, such as every block's zero bias, that way)."""
    producer = graph.producer(tensor)
    if producer is not None and producer.op_type == "Identity":
        return True
    return graph.is_constant(tensor) and len(graph.consumers(tensor)) > 1


def _qkv_cuts(graph: Graph, matmul: Node, depth: int = 3) -> tuple[Node, ...]:
    """The Slices, or the Split, cutting a q/k/v projection's result apart after at most `depth` ops (its bias
    Add, then Reshapes and Transposes), each the only data user of the one before; () when the toolkit keeps
    the projection one convolution: a Split after a bias that is shared with other nodes (its weights cannot be
    cut per part), or any other cut."""
    bias = bias_add(graph, matmul)
    shared_bias = bias is not None and any(_shared_constant(graph, i) for i in bias.inputs if i != matmul.outputs[0])
    tensor = (bias or matmul).outputs[0]
    for _ in range(depth + (bias is None)):
        users = _data_users(graph, tensor)
        if len(users) > 1 and all(u.op_type == "Slice" and _cut_axis(graph, u) is not None for u in users):
            return users
        if len(users) == 1 and users[0].op_type == "Split":
            return () if shared_bias else users
        if len(users) != 1 or users[0].op_type not in ("Reshape", "Transpose"):
            return ()
        tensor = users[0].outputs[0]
    return ()


def _folds_into_projection(graph: Graph, node: Node) -> bool:
    """A node the toolkit folds away in front of a projection, so the projection's layers are named after the
    node before it: a Mul by a constant (folded into the weights: an RMSNorm's gain), a Pad of zeros, and a
    reshape or unit-axis transpose that keeps the channel innermost (a one-window partition)."""
    if not node.inputs or not node.outputs:
        return False
    if node.op_type == "Mul":
        return len(node.inputs) == 2 and any(weight_constant(graph, i) for i in node.inputs)
    if node.op_type == "Pad":
        pads = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
        return pads is not None and not pads.any()
    if node.op_type not in RESHAPES and node.op_type != "Transpose":
        return False
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    return (_static(src) and _static(dst) and bool(src) and bool(dst) and src[-1] == dst[-1]
            and not moves_data(graph, node))


def _projections(graph: Graph, node: Node) -> list[Node]:
    """The MatMuls with constant weights reading `node`'s data, directly or through nodes folded in front of
    them (`_folds_into_projection`), each of those the only data user of its input."""
    found: list[Node] = []
    for output in node.outputs:
        for user in _data_users(graph, output):
            for _ in range(6):
                after = _only_user(graph, user.outputs[0]) if _folds_into_projection(graph, user) else None
                if after is None:
                    break
                user = after
            if weight_matmul(graph, user):
                found.append(user)
    return found


def split_projection_value(rule: Rule, view: LayerView) -> str | None:
    """A joint q/k/v projection (a MatMul with constant weights making three parts) of one image's tokens
    [1, N, C], cut by Slices or by a Split, is lowered as one convolution per part named after the layer making
    the projection's input (`<node>#1_mm#k`; nodes folded in front of it pass the name on), unless a Split
    follows a bias shared with other nodes; each part is reshaped into heads, and V's reshape joins V's transpose
    into exMatMul's form on the CPU when that transpose is there (V [.., N, d] with N or d not `align`
    elements, the RKNN-EXMATMUL-B condition). The reshape carries this node's name, so its CPU layer is this
    node's."""
    node, graph = view.node, view.graph
    producer = graph.producer(node.inputs[0]) if node.inputs else None
    if producer is not None and _folds_into_projection(graph, node):
        return None
    align = rule.params.get("align", {}).get(view.precision, 1)
    for matmul in _projections(graph, node):
        tokens = graph.shape(matmul.inputs[0])
        if not _static(tokens) or len(tokens) != 3 or tokens[0] != 1:
            continue
        cut = _qkv_cuts(graph, matmul)
        if sum(len(c.outputs) for c in cut) != 3:
            continue  # a k/v projection alone (VOLO's class attention) stays one convolution
        for maker in (m for c in cut for part in c.outputs for u in _data_users(graph, part)
                      for m in _downstream_layout(graph, u)):
            found = _value_operand(graph, maker)
            if found is None or found[1][-2] != tokens[1]:
                continue
            shape = found[1]
            if shape[-1] % align == 0 and shape[-2] % align == 0:
                return None
            return (f"makes the input of the q/k/v projection {matmul.name}, which the toolkit cuts into one "
                    f"convolution per part named after it; the V part {list(shape)} is reshaped into heads on "
                    f"the CPU with V's transpose (its last two dims are not both multiples of {align}, "
                    f"{view.precision}: 8-byte groups)")
    return None


def _output_token_concat(graph: Graph, node: Node) -> bool:
    """A Concat on axis 1 of rank-3 tensors that makes a graph output (detector heads: [1, 4+classes, N]):
    the toolkit concatenates it in the (C, 1, 1, N) batch form."""
    shape = graph.shape(node.outputs[0]) if node.outputs else None
    axis = node.attrs.get("axis")
    return (node.op_type == "Concat" and shape is not None and len(shape) == 3 and axis in (1, -2)
            and node.outputs[0] in graph.outputs)


def _from_map_concat(graph: Graph, tensor: str, depth: int = 6) -> bool:
    """The tensor comes, through element-wise ops and slicing, from a last-axis Concat of rank-3 tensors
    (feature maps flattened and joined: the toolkit keeps that in its 4-D map form)."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return False
        if node.op_type == "Concat":
            shape = graph.shape(node.outputs[0])
            return shape is not None and len(shape) == 3 and node.attrs.get("axis") in (2, -1)
        if node.op_type not in _LAYOUT_NEUTRAL and node.op_type not in ("Split", "Slice"):
            return False
        tensor = next((i for i in node.inputs if i and not graph.is_constant(i)), "")
    return False


def _map_form_input(graph: Graph, tensor: str) -> bool:
    """An input of the output Concat still in feature-map form, and read by that Concat alone (a map-form tensor
    another op reads in batch form, as the OBB angle the box decoding uses, is relaid out for that op anyway)."""
    return _from_map_concat(graph, tensor) and len(graph.consumers(tensor)) == 1


def _scalar_step(graph: Graph, node: Node) -> bool:
    """A unary op, or an element-wise op with a one-element constant: the toolkit can move a relayout past it."""
    runtime = [i for i in node.inputs if i and not graph.is_constant(i)]
    if len(runtime) != 1 or len(node.outputs) != 1:
        return False
    if node.op_type in _COMMUTING_UNARY:
        return True
    constants = [graph.constants.get(i) for i in node.inputs if i and graph.is_constant(i)]
    return node.op_type in ("Add", "Sub", "Mul", "Div") and all(c is not None and c.size == 1 for c in constants)


def _decoded(graph: Graph, tensor: str, depth: int = 8) -> bool:
    """The tensor is made, through element-wise ops, by one that joins two activations (YOLO's dist2bbox after
    the DFL: anchors minus and plus distances, centre and size joined): a box branch held in batch form."""
    for _ in range(depth):
        producer = graph.producer(tensor)
        if producer is None:
            return False
        runtime = [i for i in producer.inputs if i and not graph.is_constant(i)]
        if len(runtime) >= 2 and (producer.op_type in _LAYOUT_NEUTRAL or producer.op_type == "Concat"):
            return True
        if len(runtime) != 1 or producer.op_type not in _LAYOUT_NEUTRAL:
            return False
        tensor = runtime[0]
    return False


def _output_concat_input(graph: Graph, node: Node) -> str | None:
    """The input of an output Concat that `node`'s result reaches through scalar steps with one reader each."""
    tensor = node.outputs[0] if node.outputs else ""
    for _ in range(6):
        users = graph.consumers(tensor) if tensor else []
        if any(_output_token_concat(graph, u) for u in users):
            return tensor
        if len(users) != 1 or not _scalar_step(graph, users[0]):
            return None
        tensor = users[0].outputs[0]
    return None


def _majority_relayout(graph: Graph, node: Node) -> str | None:
    """rk3588: the output Concat is joined in the form most inputs have; in a tie, in batch form only when a
    batch-form input is decoded (YOLOv8's dist2bbox), else in map form. A batch-form input of a map-form join is
    relaid out, and the relayout moves up past scalar steps to the op that made the tensor. "" means the rule
    does not decide here (the batch-form join: the general rule applies)."""
    tensor = _output_concat_input(graph, node)
    if tensor is None:
        return None
    concats = [user for user in graph.consumers(tensor) if _output_token_concat(graph, user)]
    inputs = [t for c in concats for t in c.inputs if t and not graph.is_constant(t)]
    maps = sum(_map_form_input(graph, t) for t in inputs)
    batch = [t for t in inputs if not _map_form_input(graph, t)]
    if 2 * maps < len(inputs) or (2 * maps == len(inputs) and any(_decoded(graph, t) for t in batch)):
        return ""
    if _map_form_input(graph, tensor) or _scalar_step(graph, node):
        return None  # joined in map form as it is; or the relayout moves further up, past this node
    return (f"{node.op_type} makes a batch-form input of the output Concat beside {maps} of {len(inputs)} inputs in "
            "feature-map form: the Concat is joined in map form and this input's relayout into it runs on the CPU")


def head_relayout(rule: Rule, view: LayerView) -> str | None:
    """A map-form input of the output Concat is relaid out only when another input is in batch form (a box
    branch after the DFL): with every input in map form the Concat is joined there and nothing moves. On the
    targets in `majority`, the Concat takes the form most of its inputs have (a tie: batch form only beside a
    decoded box branch): with more map-form inputs (a segmentation head's classes and mask coefficients beside
    the boxes) the batch-form box branch is the one relaid out. On the targets in `align`, nothing is relaid
    out when the box count N fills whole 16-byte groups."""
    node, graph = view.node, view.graph
    if not node.outputs:
        return None
    if view.target.rules_id in rule.params.get("majority", ()):
        tensor = _output_concat_input(graph, node)
        concat = next((u for u in graph.consumers(tensor) if _output_token_concat(graph, u)), None) if tensor else None
        align = view.per_target(rule.params.get("align", {}))
        out = graph.shape(concat.outputs[0]) if concat is not None else None
        if align and _static(out) and out and out[-1] % int(align) == 0:
            return None  # whole 16-byte groups of boxes: the two forms are the same bytes, nothing is relaid out
        decided = _majority_relayout(graph, node)
        if decided != "":
            return decided
    concats = [user for user in graph.consumers(node.outputs[0]) if _output_token_concat(graph, user)]
    if not concats or not _from_map_concat(graph, node.outputs[0]):
        return None
    inputs = [t for c in concats for t in c.inputs if t and not graph.is_constant(t)]
    if not any(not _from_map_concat(graph, t) for t in inputs):
        return None
    return (f"{node.op_type} feeds the output Concat in feature-map form; its relayout into the Concat's "
            "(C, 1, 1, N) batch form moves data across the channel axis and runs on the CPU")


def _whole_groups(dims: Sequence[int], align: int) -> bool:
    return all(int(d) % align == 0 for d in dims)


def _const_matmul(graph: Graph, node: Node | None) -> bool:
    return (node is not None and node.op_type in ("MatMul", "Gemm") and len(node.inputs) > 1
            and graph.is_constant(node.inputs[1]))


def _wants_token_form(graph: Graph, tensor: str, depth: int = 4) -> bool:
    """The tensor flows, through element-wise ops, into a consumer that holds it as tokens [B, C, 1, N]: a token
    MatMul, a LayerNorm, or an Add whose other operand is already in token form (a residual)."""
    for _ in range(depth):
        users = graph.consumers(tensor)
        if len(users) != 1:
            return False
        user = users[0]
        if _const_matmul(graph, user) or user.op_type in ("LayerNormalization", "RMSNormalization"):
            return True
        if user.op_type == "Add" and len(user.inputs) == 2:
            other = user.inputs[1] if user.inputs[0] == tensor else user.inputs[0]
            if not graph.is_constant(other) and _token_form(graph, other):
                return True
        if user.op_type not in _LAYOUT_NEUTRAL:
            return False
        tensor = user.outputs[0]
    return False


def _token_swap(graph: Graph, node: Node) -> tuple[Any, ...] | None:
    """The [B, N, C] source shape when `node` is a (0, 2, 1) Transpose between two token forms: its input is held
    as [B, C, 1, N] and its consumer holds the result as tokens too, now with N as the channel, so the toolkit
    materialises a (B, C, 1, N) -> (B, N, 1, C) transpose (MLP-Mixer's token mixing)."""
    if node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != (0, 2, 1):
        return None
    src = graph.shape(node.inputs[0])
    if not _static(src) or len(src) != 3 or not _token_form(graph, node.inputs[0]):
        return None
    return tuple(src) if _wants_token_form(graph, node.outputs[0]) else None


def _token_axis_mean(graph: Graph, node: Node) -> bool:
    """A ReduceMean over the token axis of a rank-3 token tensor [B, N, C] (a ViT/Mixer head's average pool), or
    over both pixel axes of a channels-last token map [B, H, W, C] (Swin's and Sequencer2D's head pool; probe
    tools/probe_rknn_rk3566.py lastmean:7:64:0: the same token MatMul between CPU transposes)."""
    if node.op_type != "ReduceMean" or not node.inputs:
        return False
    src = graph.shape(node.inputs[0])
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1:
        value = graph.constants.get(node.inputs[1])
        axes = None if value is None else [int(a) for a in value.reshape(-1)]
    if not _static(src) or len(src) not in (3, 4) or axes is None:
        return False
    want = [1] if len(src) == 3 else [1, 2]
    return sorted(a % len(src) for a in axes) == want and _token_form(graph, node.inputs[0])


def _bias_step(graph: Graph, node: Node) -> bool:
    """An element-wise op with a single run-time input (a bias Add, a scale): it fuses into the MatMul before it."""
    return node.op_type in _LAYOUT_NEUTRAL and sum(1 for i in node.inputs if i and not graph.is_constant(i)) == 1


def _biased_matmul_before(graph: Graph, tensor: str, depth: int = 3) -> Node | None:
    """The token MatMul making `tensor`, possibly through its bias Add, when nothing else reads the way there."""
    for _ in range(depth):
        if len(graph.consumers(tensor)) != 1:
            return None
        node = graph.producer(tensor)
        if node is None:
            return None
        if _const_matmul(graph, node):
            return node
        if not _bias_step(graph, node):
            return None
        tensor = next(i for i in node.inputs if i and not graph.is_constant(i))
    return None


def _swap_after(graph: Graph, tensor: str, depth: int = 3) -> Node | None:
    """The token-swapping Transpose that the MatMul result `tensor` reaches through its bias Add, if any."""
    for _ in range(depth):
        users = graph.consumers(tensor)
        if len(users) != 1:
            return None
        if _token_swap(graph, users[0]) is not None:
            return users[0]
        if not _bias_step(graph, users[0]):
            return None
        tensor = users[0].outputs[0]
    return None


def token_relayout(rule: Rule, view: LayerView) -> str | None:
    """Token tensors live as [B, C, 1, N] on rk3566; three places need a real transpose between that form and
    [B, N, 1, C], each on the NPU only when N and C are whole 8-byte groups (`align`: 4 FP16, 8 INT8) except the
    last, which always runs on the CPU:
    - a (0, 2, 1) Transpose between two token forms (token mixing), carried by the token MatMul making its input;
    - the tensor a token-axis ReduceMean averages, transposed so that the tokens become the channel;
    - that ReduceMean's [B, 1, 1, C] result, transposed back (the layer is named after a Reshape right after it)."""
    node, graph = view.node, view.graph
    align = rule.params["align"][view.precision]
    src: tuple[Any, ...] | None = None
    what = ""
    if node.op_type == "Transpose" and _token_swap(graph, node) is not None:
        if _biased_matmul_before(graph, node.inputs[0]) is not None:
            return None  # the token MatMul before it carries the transpose
        src, what = _token_swap(graph, node), "swaps the token and channel axes of"
    elif _const_matmul(graph, node) and node.outputs:
        swap = _swap_after(graph, node.outputs[0])
        if swap is not None:
            src, what = _token_swap(graph, swap), "makes tokens whose (0, 2, 1) Transpose swaps the axes of"
    if src is None and node.outputs:
        means = [u for u in graph.consumers(node.outputs[0]) if _token_axis_mean(graph, u)]
        if means:
            shape = graph.shape(node.outputs[0])
            if _static(shape) and len(shape) == 4:  # a channels-last token map: its pixels are the tokens
                shape = (shape[0], shape[1] * shape[2], shape[3])
            src, what = shape, "feeds a token-axis ReduceMean, which transposes"
    if src is not None:
        if _whole_groups(src[1:], align):
            return None
        return (f"{node.op_type} {what} {list(src)}; with tokens or channels not a multiple of {align} "
                f"({view.precision}: 8-byte groups) the transpose between [B, C, 1, N] and [B, N, 1, C] runs on "
                "the CPU")
    carrier = node
    if node.op_type in ("Reshape", "Flatten", "Squeeze"):
        carrier = graph.producer(node.inputs[0]) or node
        if carrier is node or not _token_axis_mean(graph, carrier) or len(graph.consumers(node.inputs[0])) != 1:
            return None
    elif _token_axis_mean(graph, node):
        users = graph.consumers(node.outputs[0]) if node.outputs else ()
        if len(users) == 1 and users[0].op_type in ("Reshape", "Flatten", "Squeeze"):
            return None  # the reshape after it carries the transpose back
    else:
        return None
    return (f"{node.op_type} ends a token-axis ReduceMean; the transpose of its [B, 1, 1, C] result back to the "
            "channel form runs on the CPU")


def _split_of(channel: int, dims: Sequence[int]) -> int | None:
    """The per-head size d when a contiguous run of `dims` (two or more, the first not 1) multiplies to
    `channel`: heads x d, or (q/k/v x heads) x d."""
    for start in range(len(dims)):
        product = 1
        for end in range(start, len(dims)):
            product *= int(dims[end])
            if product == channel and end > start and int(dims[start]) > 1 and int(dims[end]) < channel:
                return int(dims[end])
            if product > channel:
                break
    return None


def _form_channel(graph: Graph, tensor: str, shape: tuple[Any, ...]) -> int | None:
    """The channel of the toolkit's 4-D form of a tensor: last axis of a token tensor, axis 1 otherwise."""
    if len(shape) == 3 and _token_form(graph, tensor):
        return int(shape[-1])
    return int(shape[1]) if len(shape) in (3, 4) else None


def head_split(rule: Rule, view: LayerView) -> str | None:
    """An attention head Reshape folds into exMatMul's operand layout (channel -> heads in the batch axis, or
    back), but only when each head's channel count d is whole 8-byte groups (`align`: 4 FP16, 8 INT8)."""
    node, graph = view.node, view.graph
    if node.op_type != "Reshape" or not _attention_head_reshape(graph, node):
        return None
    if _score_grid_view(graph, node) is not None:
        return None  # scores viewed as a grid of positions, not heads (no layer on rk3566: RKNN-SCORE-GRID-BACK)
    src, dst = view.in_shape(), view.out_shape()
    if not _static(src) or not _static(dst):
        return None
    a, b = _as_npu_4d(tuple(src)), _as_npu_4d(tuple(dst))
    axis = channel_axis(graph, node.inputs[0])
    if (a is not None and b is not None and a[1] == b[1] and not _token_form(graph, node.inputs[0])
            and axis in (None, 1)):
        return None  # keeps the feature map's channel (a flatten of H, W): no head split
    channel = int(src[axis]) if axis is not None and len(src) >= 3 else _form_channel(graph, node.inputs[0], src)
    d = _split_of(channel, dst[1:]) if channel else None
    if d is None and axis is not None and len(src) >= 3:
        carried = _carried_axis(src, axis, dst)  # a join merging the heads into the channel, d innermost
        d = int(src[axis]) if carried is not None and int(dst[carried]) > int(src[axis]) else None
    if d is None:
        back = int(dst[-1]) if len(dst) == 3 else int(dst[1]) if len(dst) == 4 else None
        d = _split_of(back, src[1:]) if back else None
    align = rule.params["align"][view.precision]
    if d is None or d % align == 0:
        return None
    return (f"Reshape {list(src)} -> {list(dst)} splits or joins attention heads of {d} channels, not a multiple of "
            f"{align} ({view.precision}: 8-byte groups); the head relayout runs on the CPU")


def map_output_relayout(rule: Rule, view: LayerView) -> str | None:
    return _map_rank3_output(view, rule.params or {})


def vector_output(rule: Rule, view: LayerView) -> str | None:
    """A rank-2 graph output [B, K] (a classifier's logits) leaves the NPU's (B, K, 1, 1) form through a Reshape
    layer named after it; that Reshape runs on the NPU only when K fills whole 8-byte groups (`align` elements)."""
    graph, node = view.graph, view.node
    align = int(rule.params.get("align", {}).get(view.precision, 1))
    for output in node.outputs:
        shape = graph.shape(output)
        if output not in graph.outputs or not _static(shape) or len(shape) != 2 or shape[1] <= 1:
            continue
        if shape[1] % align:
            return (f"makes the rank-2 graph output '{output}' {list(shape)}: the Reshape out of the NPU's "
                    f"(B, K, 1, 1) form runs on the CPU, K = {shape[1]} is not a multiple of {align} "
                    f"({view.precision}: 8-byte groups)")
    return None


def _windowed_head_reshape(graph: Graph, node: Node | None, relaid: bool = True) -> bool:
    """A Reshape splitting the channel of windowed tokens [B, N, C] (B > 1: the windows ride in the batch axis)
    into heads, [B, N, (3,) heads, d], for a Transpose that brings the heads before the tokens."""
    if node is None or node.op_type != "Reshape" or not node.outputs:
        return False
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not _static(src) or not _static(dst) or len(src) != 3 or len(dst) not in (4, 5) or int(src[0]) == 1:
        return False
    if tuple(dst[:2]) != tuple(src[:2]) or math.prod(int(d) for d in dst[2:]) != int(src[2]):
        return False
    users = _data_users(graph, node.outputs[0])
    return (len(users) == 1 and users[0].op_type in ("Transpose", "Split")
            and _windows_in_tokens(graph, node.inputs[0], relaid=relaid))


def _windows_in_tokens(graph: Graph, tensor: str, depth: int = 16, relaid: bool = True) -> bool:
    """The windows in the batch axis of `tensor` [B, N, C] were cut out without moving data (a Reshape of the
    token axis or of a map made channels-last by (0, 2, 3, 1), or a 2-D window partition, exWindow), so the
    toolkit still holds them inside the token axis, (1, C, B, N). Windows brought into the batch by a 4-D
    Transpose that moves data (MobileViT's unfold, a CPU relayout) are a plain batch instead, and its head split
    folds. With `relaid`, so are windows a 2-D partition made [B, ws, ws, C] and then rank-3 tokens
    (RKNN-WINDOW-TOKENS relays them into the batch): their head Transpose and Q/K then fold as in a plain batch
    (corpus timm_swin_tiny_patch4_window7_224, timm_davit_tiny, timm_gcvit_xxtiny attn/Transpose, Mul,
    Transpose_1: no layer; the head split Reshape keeps its CPU layer). A partition reshaped straight into the
    tokens keeps the heads' relayouts (corpus nn_window_attention_pad_roll, timm_tiny_vit_5m_224), and so do heads
    whose q/k are L2-normalised: the norm runs over d with the heads still in H, (B, d, h, N), and q and k are
    relaid into exMatMul's form after it (probe swinattn:2:7:2:32:1; corpus timm_swinv2_cr_tiny_ns_224)."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return False
        if node.op_type == "Reshape":
            src = graph.shape(node.inputs[0])
            if relaid and _relaid_windows(graph, node.outputs[0]) and not _normalised_heads(graph, node.outputs[0]):
                return False  # RKNN-WINDOW-TOKENS relaid the windows into the batch
            if _static(src) and src and src[0] == 1:
                before = graph.producer(node.inputs[0])
                return not (before is not None and _moving_transpose(graph, before)
                            and tuple(before.attrs.get("perm") or ()) != _TO_NHWC)
        elif node.op_type not in _LAYOUT_NEUTRAL and node.op_type not in ("LayerNormalization", "Transpose") \
                and not _const_matmul(graph, node):
            return False
        tensor = _activation_input(graph, node)
    return False


_QKV_PATH = frozenset({"MatMul", "Add", "Reshape", "Transpose", "Split", "Squeeze", "Gather", "Mul"})


def _normalised_heads(graph: Graph, tensor: str, depth: int = 8) -> bool:
    """Attention heads split from `tensor` whose q or k is L2-normalised over its channel (SwinV2-cr's cosine
    attention: ReduceL2 -> Clip -> Expand -> Div, an exNorm lpnorm on the NPU)."""
    frontier = [tensor]
    for _ in range(depth):
        nxt: list[str] = []
        for name in frontier:
            for user in _data_users(graph, name):
                if user.op_type in ("ReduceL2", "LpNormalization"):
                    return True
                if user.op_type in _QKV_PATH:
                    nxt.extend(user.outputs)
        frontier = nxt[:32]
    return False


def _relaid_windows(graph: Graph, tensor: str, depth: int = 8) -> bool:
    """`tensor` holds windowed tokens made, through element-wise ops and a token MatMul, by a Reshape of a 2-D
    partition's [B, ws, ws, C] windows into [B, N, C] (RKNN-WINDOW-TOKENS relays them into the batch)."""
    node = _up_to(graph, tensor, lambda n: n.op_type == "Reshape", lambda n: _token_step(graph, n), depth)
    windows = graph.producer(node.inputs[0]) if node is not None else None
    window = graph.producer(windows.inputs[0]) if windows is not None and windows.op_type == "Reshape" else None
    return node is not None and window is not None and window.op_type == "Transpose" \
        and _window_tokens_out(graph, window, node)


def _token_step(graph: Graph, node: Node) -> bool:
    """An element-wise op or a token MatMul (constant weight): windowed tokens keep their windows through it."""
    return node.op_type in _LAYOUT_NEUTRAL or _const_matmul(graph, node)


def _cosine_windows(graph: Graph, tensor: str, depth: int = 4) -> bool:
    """V of cosine attention on windows a partition relaid into the batch (probe swinattn:2:7:2:32:1: V's
    transpose out of (B, d, h, N) is a CPU layer named after the q/k/v Split, v1_rs_tp)."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return False
        if node.op_type == "Split":
            head = graph.producer(node.inputs[0])
            split = graph.producer(head.inputs[0]) if head is not None and head.op_type == "Transpose" else None
            return split is not None and split.op_type == "Reshape" and _relaid_windows(graph, split.inputs[0]) \
                and _normalised_heads(graph, split.inputs[0])
        if node.op_type not in ("Squeeze", "Gather"):
            return False
        tensor = node.inputs[0]
    return False


def _from_windowed_heads(graph: Graph, tensor: str, depth: int = 5, split_first: bool = True) -> bool:
    """The tensor is q, k or v unbound from a windowed head split (through Split/Squeeze/Gather/Transpose): the
    head Reshape's Transpose moved them into (b, N, 1, d). With `split_first`, also q/k/v split from the head
    Reshape before their own Transposes (TinyViT), which are still in the token form."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None or node.op_type not in ("Split", "Squeeze", "Gather", "Transpose", "Mul", "Div"):
            return False
        source = node.inputs[0]
        producer = graph.producer(source)
        if node.op_type == "Transpose" and _windowed_head_reshape(graph, producer) and producer is not None \
                and (split_first or _data_users(graph, producer.outputs[0])[0].op_type == "Transpose"):
            return True
        if node.op_type == "Transpose" and split_first and producer is not None and producer.op_type == "Split" \
                and _windowed_head_reshape(graph, graph.producer(producer.inputs[0])):
            return True
        tensor = source
    return False


def _softmax_chain(graph: Graph, tensor: str) -> bool:
    node = graph.producer(tensor)
    for _ in range(3):
        if node is None:
            return False
        if node.op_type == "Softmax":
            return True
        if node.op_type not in ("Transpose", "Mul", "Div"):
            return False
        node = graph.producer(node.inputs[0])
    return False


def window_heads(rule: Rule, view: LayerView) -> str | None:
    """Windowed attention (Swin-style: B > 1 windows in the batch axis of the tokens) cannot split its qkv into
    heads in the layout: the toolkit holds the tokens as (1, C, B, N), so the head split Reshape and the
    Transpose after it move the windows into the batch on the CPU and leave q, k, v as (b, N, 1, d). Q and K^T
    then need a transpose into exMatMul's [b, K, 1, m] form (V does not), which runs on the NPU only when both
    of their last two dims are whole 8-byte groups (`align`: 4 FP16, 8 INT8)."""
    node, graph = view.node, view.graph
    if _windowed_head_reshape(graph, node, relaid=False) and not cosine_window_split(graph, node):
        return (f"Reshape splits windowed tokens {list(view.in_shape() or ())} into heads; with the windows in the "
                "batch axis the head split moves data (a CPU Reshape and Transpose)")
    if node.op_type == "Transpose" and _windowed_head_reshape(graph, graph.producer(node.inputs[0])):
        return "Transpose brings the heads of windowed tokens before the windows: a data move on the CPU"
    align = rule.params["align"][view.precision]
    for output in node.outputs:
        shape = graph.shape(output)
        if not _static(shape) or len(shape) < 2 or not _from_windowed_heads(graph, output):
            continue
        for user in graph.consumers(output):
            if (_is_activation_matmul(graph, user) and output in user.inputs[:2]
                    and not any(_softmax_chain(graph, i) for i in user.inputs[:2])
                    and not _whole_groups([int(d) for d in shape[-2:]], align)):
                return (f"{node.op_type} makes the exMatMul operand {list(shape)} of windowed attention's Q.K^T; "
                        f"its last two dims are not both multiples of {align} ({view.precision}: 8-byte groups), "
                        "so its transpose into exMatMul's form runs on the CPU")
    return None


_MAP_OPS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                      "BatchNormalization", "DepthToSpace", "SpaceToDepth"})
_AXIS_KEEPING = frozenset({"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Erf", "Gelu", "HardSwish",
                           "HardSigmoid", "Clip", "LeakyRelu", "Pow", "Sqrt", "Identity", "Dropout", "Softplus",
                           "Softmax", "Slice", "Elu", "Selu", "Mish", "Sin", "Cos", "Exp", "Log", "Neg",
                           "Abs", "Reciprocal", "Cast", "Split", "Concat", "Expand", "Tile", "Pad", "Resize",
                           "Upsample"})


def _carried_axis(src: Sequence[int], axis: int, dst: Sequence[int]) -> int | None:
    """The axis of a reshaped tensor that holds the channel `axis` of `src`: the same size with the same number
    of elements after it, or its innermost piece when the reshape splits it (C -> heads x d: d keeps the
    channel's innermost elements, so the NC1HWC2 blocks stay whole only along d)."""
    inner = math.prod(src[axis + 1:])
    for j in range(len(dst)):
        if math.prod(dst[j + 1:]) != inner:
            continue
        if dst[j] == src[axis] or (dst[j] > 1 and src[axis] % dst[j] == 0) or dst[j] % src[axis] == 0:
            return j
    return None


_SECOND_LOOK = 8  # how deep the other inputs of an element-wise op are traced when the first one fixes nothing


def _other_activations(graph: Graph, node: Node, first: str) -> list[str]:
    """The inputs of an element-wise op other than `first` that carry an activation shaped like its output."""
    out = graph.shape(node.outputs[0]) if node.outputs else None
    return [i for i in node.inputs if i and i != first and not graph.is_constant(i) and graph.shape(i) == out
            and (graph.producer(i) is not None or i in graph.inputs)]


def channel_axis(graph: Graph, tensor: str, depth: int = 24) -> int | None:
    """The axis of `tensor` that the rk3566 toolkit holds as the channel of its 4-D form (the innermost C2 block
    of NC1HWC2), traced from the op that fixes it: axis 1 of a feature map (Conv, pooling, a 4-D graph input),
    the last axis of a token tensor (a MatMul/Gemm, a last-axis LayerNorm), carried through
    element-wise ops, transposes (the axis moves with the permutation) and reshapes (`_carried_axis`). None when
    the trace meets an op that fixes no axis or a reshape that scatters the channel."""
    shape = graph.shape(tensor)
    if depth <= 0 or not _static(shape) or not shape:
        return None
    node = graph.producer(tensor)
    rank = len(shape)
    if node is None:
        return 1 if tensor in graph.inputs and rank == 4 else None
    if node.op_type in _MAP_OPS:
        return 1 if rank >= 3 else None
    if node.op_type in ("MatMul", "Gemm"):
        if _is_activation_matmul(graph, node) and _softmax_side(graph, node.inputs[1]):
            return rank - 2  # V @ P^T: exMatMul keeps V's d, here the rows, as the result's channel
        return rank - 1
    if node.op_type in ("LayerNormalization", "RMSNormalization"):
        return int(node.attrs.get("axis", -1)) % rank
    if node.op_type in ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze") or node.op_type in _AXIS_KEEPING:
        source = _activation_input(graph, node)
        axis = channel_axis(graph, source, depth - 1) if source else None
        if axis is None and node.op_type in _AXIS_KEEPING:
            for other in _other_activations(graph, node, source):  # a residual Add: the branch fixes the layout
                axis = channel_axis(graph, other, min(depth - 1, _SECOND_LOOK))
                if axis is not None:
                    source = other
                    break
        before = graph.shape(source)
        if axis is None or not _static(before):
            return None
        if node.op_type == "Transpose":
            perm = tuple(node.attrs.get("perm") or reversed(range(len(before))))
            return perm.index(axis) if axis in perm else None
        if node.op_type in _AXIS_KEEPING:
            return axis + rank - len(before) if rank >= len(before) else None
        return _carried_axis(before, axis, shape)
    return None


def _norm_needing_transpose(graph: Graph, node: Node) -> bool:
    """A norm exNorm can only take after a transpose on rk3566: a LayerNorm over the last axis alone of a 4-D
    tensor whose channel (check channel_axis) is another axis (the W of an NCHW map; not a channels-last or
    windowed token tensor), or a lone InstanceNormalization of a 4-D map (not GroupNorm's form)."""
    shape = graph.shape(node.inputs[0]) if node.inputs else None
    if not _static(shape) or len(shape) != 4:
        return False
    if node.op_type == "LayerNormalization":
        axis = node.attrs.get("axis", -1)
        return axis % 4 == 3 and int(shape[3]) > 1 and channel_axis(graph, node.inputs[0]) not in (None, 3)
    if node.op_type == "InstanceNormalization":
        producer = graph.producer(node.inputs[0])
        return producer is None or _group_norm_groups(graph, producer) is None
    return False


def norm_relayout(rule: Rule, view: LayerView) -> str | None:
    """exNorm normalises the channel; a W LayerNorm of an NCHW map and a lone 4-D InstanceNormalization are run
    as exNorm between two transposes that run on the CPU, named after the norm's producer (the one in) and the
    norm (the one out)."""
    node, graph = view.node, view.graph
    if node.op_type == "LayerNormalization" and _norm_needing_transpose(graph, node):
        return ("LayerNormalization over W of an NCHW map: exNorm takes it between two transposes, and the one "
                "back runs on the CPU")
    for output in node.outputs:
        norms = [u for u in graph.consumers(output) if _norm_needing_transpose(graph, u)]
        if norms:
            return (f"{node.op_type} feeds a {norms[0].op_type} that exNorm takes only after a transpose of this "
                    "output, which runs on the CPU")
    return None


def channel_scatter(rule: Rule, view: LayerView) -> str | None:
    """A Reshape that does not carry its input's channel whole into one axis of its output (the channel merges
    with an axis inside it, or is cut so that its innermost elements no longer sit together) interleaves other
    data between the C2 blocks of NC1HWC2: a real gather, which rk3566 runs on the CPU. GroupNorm's reshapes are
    exNorm's own layout, and a Flatten into a vector is pixels_into_channel's."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or _group_norm_groups(graph, node) is not None or _in_group_norm(graph, node):
        return None
    src, dst = view.in_shape(), view.out_shape()
    if not _static(src) or not _static(dst) or not src or not dst or len(_unit_stripped(dst)) <= 1:
        return None
    producer = graph.producer(node.inputs[0]) if node.inputs else None
    if producer is not None and producer.op_type == "Concat" and _space_to_depth_slices(graph, producer):
        return None  # the join of a space-to-depth (a rotary interleave): the gather convolution's own output
    if channel_permutation(graph, node):
        return None  # a channel shuffle: a gather folded into a 1x1 convolution
    axis = channel_axis(graph, _activation_input(graph, node))
    if axis is None or src[axis] == 1 or _carried_axis(src, axis, dst) is not None:
        return None
    return (f"Reshape {list(src)} -> {list(dst)} scatters the channel (axis {axis}, {src[axis]}) of the NPU's "
            "NC1HWC2 form: the gather runs on the CPU")


def _reduce_axis(graph: Graph, node: Node) -> int | None:
    """The one axis a ReduceSum/ReduceMean of a rank >= 4 tensor reduces (None for several, or another op)."""
    if node.op_type not in ("ReduceSum", "ReduceMean") or not node.inputs:
        return None
    src = graph.shape(node.inputs[0])
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1:
        value = graph.constants.get(node.inputs[1])
        axes = None if value is None else [int(a) for a in value.reshape(-1)]
    if not _static(src) or len(src) < 4 or axes is None or len(axes) != 1:
        return None
    return int(axes[0]) % len(src)


def _reduce_moves(graph: Graph, node: Node, align: int) -> tuple[bool, str] | None:
    """(the transpose of the input is CPU too, why) when rk3566 has to bring the reduced axis into the channel:
    a single-axis reduce over anything but the channel of the toolkit's form."""
    axis = _reduce_axis(graph, node)
    src = graph.shape(node.inputs[0]) if node.inputs else None
    if axis is None or not _static(src):
        return None
    channel = channel_axis(graph, node.inputs[0])
    if channel is None or channel == axis or src[axis] == 1:
        return None
    if axis > channel and channel != len(src) - 1:
        aligned = src[channel] % align == 0 and src[axis] % align == 0
        return (not aligned, f"reduces axis {axis} ({src[axis]}) of a map whose channel is axis {channel} "
                             f"({src[channel]}): a transpose into the channel and back")
    return (True, f"reduces axis {axis} ({src[axis]}), held in the batch of the NPU form (channel axis {channel}): "
                  "reshapes into a row and back")


def reduce_relayout(rule: Rule, view: LayerView) -> str | None:
    """rk3566 reduces only over the channel (a 1x1 convolution): a ReduceSum/ReduceMean over one other axis of a
    rank >= 4 tensor gets a relayout in, named after the producer of its input (a transpose of W into the channel,
    CPU unless both dims are whole 8-byte groups; a reshape out of the batch axis, always CPU), and a relayout of
    its one-wide result back, named after the reduce, that is always CPU."""
    graph, node = view.graph, view.node
    align = int(rule.params.get("align", {}).get(view.precision, 1))
    found = _reduce_moves(graph, node, align)
    if found is not None:
        return f"{node.op_type} {found[1]}; the relayout of its result back runs on the CPU"
    for output in node.outputs:
        for user in graph.consumers(output):
            found = _reduce_moves(graph, user, align)
            if found is not None and found[0]:
                return (f"{node.op_type} feeds a {user.op_type} that {found[1]}; the relayout of this output runs "
                        "on the CPU")
            if _grouped_reduce(graph, user):
                return (f"{node.op_type} feeds {user.name}, a {user.op_type} over the last three axes of a rank-5 "
                        "tensor: the reshape of this output into one row per group runs on the CPU")
    return None


def _grouped_reduce(graph: Graph, node: Node) -> bool:
    """A ReduceMean/ReduceSum over the last three axes of a rank-5 [N, G, C, H, W] tensor (EvoNorm-S0's group
    statistics): the toolkit flattens each group's C*H*W into the channel of one row before its 1x1 Conv sum."""
    if node.op_type not in ("ReduceMean", "ReduceSum") or not node.inputs:
        return False
    shape = graph.shape(node.inputs[0])
    axes = reduce_axes(graph, node)
    if shape is None or len(shape) != 5 or axes is None:
        return False
    return sorted(a % 5 for a in axes) == [2, 3, 4]


_SCORE_STEPS = frozenset({"Mul", "Add", "Div", "Sub", "Softmax"})


def _reaches(graph: Graph, tensor: str, want: Callable[[Node], bool], depth: int = 4) -> Node | None:
    """The first consumer satisfying `want` that `tensor` reaches through element-wise ops or a Softmax."""
    for _ in range(depth):
        users = graph.consumers(tensor)
        if len(users) != 1:
            return None
        if want(users[0]):
            return users[0]
        if users[0].op_type not in _SCORE_STEPS:
            return None
        tensor = users[0].outputs[0]
    return None


_TO_LAST, _FROM_LAST = (0, 2, 3, 1), (0, 3, 1, 2)


def _heads_mix(graph: Graph, node: Node | None) -> bool:
    """A constant MatMul over the heads of attention scores: [B, h, N, M] brought heads-last by a Transpose
    (0, 2, 3, 1), multiplied by an [h, h] weight (CaiT's talking heads). The toolkit runs it as a 1x1 Conv with
    the heads as its channel, like EfficientFormerV2's Conv."""
    if not _const_matmul(graph, node) or node is None:
        return False
    before = graph.producer(node.inputs[0])
    weight = graph.shape(node.inputs[1])
    return (before is not None and before.op_type == "Transpose"
            and tuple(before.attrs.get("perm") or ()) == _TO_LAST
            and _static(weight) and len(weight) == 2 and weight[0] == weight[1])


def _score_source(graph: Graph, tensor: str, depth: int = 4) -> Node | None:
    """The MatMul of two activations whose result `tensor` is, through score steps (scale, bias, Softmax)."""
    return _up_to(graph, tensor, lambda n: _is_activation_matmul(graph, n), lambda n: n.op_type in _SCORE_STEPS,
                  depth)


def _heads_mix_transpose(graph: Graph, node: Node) -> str | None:
    """A Transpose of CaiT-style talking heads that carries a relayout (probe tools/probe_rknn_rk3566.py talk):
    the one bringing exMatMul's scores heads-last into the mixing MatMul (the relayout out of (h, N, 1, M)),
    and the one bringing the mixed heads back when its result goes straight into a MatMul of two activations
    (the relayout into exMatMul's form). With a Softmax between the mix and that MatMul the Softmax runs in
    the Conv's form and the relayout after it is named after the chain's first Transpose instead."""
    perm = tuple(node.attrs.get("perm") or ())
    users = _data_users(graph, node.outputs[0]) if node.outputs else ()
    if perm == _TO_LAST and len(users) == 1 and _heads_mix(graph, users[0]) \
            and _score_source(graph, node.inputs[0]) is not None:
        return (f"Transpose brings the heads of attention scores last for the heads-mixing MatMul "
                f"{users[0].name}: the scores are relaid out of exMatMul's form on the CPU")
    if perm != _FROM_LAST:
        return None
    source = graph.producer(node.inputs[0])
    if source is not None and source.op_type == "Add":
        source = graph.producer(_activation_input(graph, source))
    if not _heads_mix(graph, source):
        return None
    tensor = node.outputs[0]
    for _ in range(4):
        users = _data_users(graph, tensor)
        if len(users) != 1:
            return None
        if _is_activation_matmul(graph, users[0]):
            return (f"Transpose brings the mixed heads back into the MatMul of two activations {users[0].name}: "
                    "relaid into exMatMul's form on the CPU")
        if users[0].op_type not in ("Mul", "Add", "Div", "Sub"):
            return None
        tensor = users[0].outputs[0]
    return None


def exmatmul_conv(rule: Rule, view: LayerView) -> str | None:
    """exMatMul holds its result and operands as (b, rows, 1, cols), the leading dims (heads) in the batch axis;
    a convolution over those heads (talking heads on the attention scores) needs them as its channel, so the
    toolkit relays the scores out of exMatMul's form (a layer named after the MatMul) and back into it (named
    after the Conv), both on the CPU on rk3566."""
    graph, node = view.graph, view.node
    if node.op_type == "Transpose" and node.inputs and node.outputs:
        return _heads_mix_transpose(graph, node)
    if _is_activation_matmul(graph, node) and node.outputs:
        conv = _reaches(graph, node.outputs[0], lambda n: n.op_type == "Conv")
        if conv is not None:
            return f"MatMul of two activations feeds the convolution {conv.name} over its heads: its result is " \
                   "relaid out of exMatMul's form on the CPU"
    if node.op_type == "Conv" and node.outputs:
        matmul = _reaches(graph, node.outputs[0], lambda n: _is_activation_matmul(graph, n))
        if matmul is not None:
            return f"Conv feeds the MatMul of two activations {matmul.name}: its output is relaid into exMatMul's " \
                   "form on the CPU"
    return None


_WINDOW_PERM = (0, 1, 3, 2, 4, 5)  # Swin's block partition and its reverse
_GRID_PERM, _GRID_BACK = (0, 2, 4, 1, 3, 5), (0, 3, 1, 4, 2, 5)  # MaxViT's grid partition and its reverse
_PARTITIONS, _REVERSES = frozenset({_WINDOW_PERM, _GRID_PERM}), frozenset({_WINDOW_PERM, _GRID_BACK})
_WINDOW_PERMS = _PARTITIONS | _REVERSES
_REVERSE_BY_OP = 16  # probe winpart: the reverse's relayout is named after the token op with 4, 9, 16 windows, not 25


def _window_windows(graph: Graph, transpose: Node) -> tuple[bool, int] | None:
    """(is a partition, window count) for a 2-D window Transpose (0, 1, 3, 2, 4, 5): a partition takes
    [b, nH, wh, nW, ww, C] split from a map [b, H, W, C]; a reverse takes [b, nH, nW, wh, ww, C] split from
    windows [b*nH*nW, ...] in the batch. Only a square grid of windows (nH = nW) is relaid out: the probe's
    4x5 and 2x8 grids stay in exWindow's form end to end (no CPU layer)."""
    src = graph.shape(transpose.inputs[0]) if transpose.inputs else None
    perm = tuple(transpose.attrs.get("perm") or ())
    if transpose.op_type != "Transpose" or perm not in _WINDOW_PERMS or not _static(src) or len(src) != 6:
        return None
    split = graph.producer(transpose.inputs[0])
    before = graph.shape(split.inputs[0]) if split is not None and split.op_type == "Reshape" else None
    if not _static(before) or not before:
        return None
    after = [int(src[p]) for p in perm]
    if perm in _PARTITIONS and len(before) == 4 and tuple(before[:3]) == (src[0], src[1] * src[2], src[3] * src[4]):
        return (True, after[1] * after[2]) if after[1] == after[2] else None
    if perm in _REVERSES and int(before[0]) == src[0] * src[1] * src[2]:
        return (False, int(src[1] * src[2])) if src[1] == src[2] else None
    return None


def _window_tokens_out(graph: Graph, transpose: Node | None, node: Node) -> bool:
    """`node` makes rank-3 windowed tokens [b*nH*nW, wh*ww, C] out of the partition `transpose`'s
    [b, nH, wh, nW, ww, C] (windows in the batch axis, as Swin's attention takes them)."""
    src = graph.shape(transpose.inputs[0]) if transpose is not None else None
    out = graph.shape(node.outputs[0]) if node.outputs else None
    if transpose is None or not _static(src) or not _static(out) or len(src) != 6 or len(out) != 3:
        return False
    after = [int(src[p]) for p in tuple(transpose.attrs.get("perm") or range(6))]
    return tuple(out) == (after[0] * after[1] * after[2], after[3] * after[4], after[5])


def _window_batch(graph: Graph, tensor: str, depth: int = 4) -> bool:
    """`tensor` holds 4-D windows [B, ws, ws, C] (B > 1) a square-grid partition made, through a token MatMul
    and element-wise ops (MaxViT's block attention keeps its windows that way, with no rank-3 token reshape)."""
    node = _up_to(graph, tensor, lambda n: n.op_type == "Reshape", lambda n: _token_step(graph, n), depth)
    if node is None:
        return False
    out = graph.shape(node.outputs[0])
    found = _window_windows(graph, graph.producer(node.inputs[0]) or node)
    return found is not None and found[0] and found[1] > 1 and _static(out) and len(out) == 4 \
        and int(out[0]) % found[1] == 0


def _window_head_transpose(graph: Graph, node: Node | None) -> bool:
    """The head Transpose (0, 2, 1, 3) after a Reshape [B, N, h, e] of 4-D windows (`_window_batch`)."""
    if node is None or node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != (0, 2, 1, 3):
        return False
    split = graph.producer(node.inputs[0])
    return split is not None and split.op_type == "Reshape" and len(_data_users(graph, node.inputs[0])) == 1 \
        and _window_batch(graph, split.inputs[0])


def _axis_window_heads(graph: Graph, node: Node | None) -> bool:
    """Twins' unbind Transpose (3, 0, 1, 4, 2, 5) of [1, W, N, 3, h, d]: q/k/v of W > 1 windows kept in axis 1,
    the windows before the heads."""
    src = graph.shape(node.inputs[0]) if node is not None and node.inputs else None
    return (node is not None and node.op_type == "Transpose" and _static(src) and len(src) == 6
            and tuple(node.attrs.get("perm") or ()) == (3, 0, 1, 4, 2, 5) and int(src[1]) > 1 and int(src[3]) == 3)


def _window_attention(graph: Graph, matmul: Node, depth: int = 4,
                      head: Callable[[Graph, Node | None], bool] | None = None) -> bool:
    """An operand of `matmul` comes from a window head Transpose through Slice/Split/Squeeze/Mul/Transpose."""
    head = head or _window_head_transpose
    for operand in matmul.inputs[:2]:
        tensor = operand
        for _ in range(depth):
            node = graph.producer(tensor)
            if node is None:
                break
            if head(graph, node):
                return True
            if node.op_type not in ("Slice", "Split", "Squeeze", "Mul", "Transpose", "Softmax", "Add", "MatMul"):
                break
            tensor = node.inputs[0]
    return False


def window_tokens(rule: Rule, view: LayerView) -> str | None:
    """A 2-D window partition runs as exWindow on the NPU, which leaves the windows inside the pixels,
    (C, 1, B, N); making them the batch of windowed tokens [B, N, C] (B > 1) is a relayout on the CPU, named
    after the last reshape of the partition's layout run; the window reverse needs the tokens back in that
    form, a relayout named after the op that makes them (probe tools/probe_rknn_rk3566.py winpart)."""
    graph, node = view.graph, view.node
    if _window_head_transpose(graph, node):
        return ("Transpose splits the heads of 4-D windows [B, ws, ws, C]: the windows are relaid out of exWindow's "
                "form into the batch on the CPU")
    if _axis_window_heads(graph, node):
        return ("Transpose unbinds q/k/v of windows kept in axis 1, windows before heads: relaid out of exWindow's "
                "form into the batch on the CPU")
    if _is_activation_matmul(graph, node) and node.outputs and _softmax_side(graph, node.inputs[0]) \
            and _window_attention(graph, node, head=_axis_window_heads):
        return "P.V of attention on windows kept in axis 1: its result is relaid out of exMatMul's form on the CPU"
    if node.op_type == "Transpose" and tuple(node.attrs.get("perm") or ()) == (0, 1, 3, 2, 4):
        pv = graph.producer(node.inputs[0])
        if pv is not None and _is_activation_matmul(graph, pv) \
                and _window_attention(graph, pv, head=_axis_window_heads):
            return "joins the heads of attention on windows kept in axis 1: a relayout on the CPU"
    if _is_activation_matmul(graph, node) and node.outputs and _window_attention(graph, node):
        join = _only_user(graph, node.outputs[0])
        back = _only_user(graph, join.outputs[0]) if join is not None and join.op_type == "Transpose" else None
        out = graph.shape(back.outputs[0]) if back is not None and back.op_type == "Reshape" else None
        if _static(out) and len(out) == 4 and _softmax_side(graph, node.inputs[0]):
            return "P.V of 4-D window attention: its result is relaid out of exMatMul's form on the CPU"
    if node.op_type == "Reshape" and node.inputs:
        before = graph.producer(node.inputs[0])
        pv = graph.producer(before.inputs[0]) if before is not None and before.op_type == "Transpose" \
            and tuple(before.attrs.get("perm") or ()) == (0, 2, 1, 3) else None
        out = graph.shape(node.outputs[0])
        if pv is not None and _is_activation_matmul(graph, pv) and _window_attention(graph, pv) \
                and _static(out) and len(out) == 4 and _softmax_side(graph, pv.inputs[0]):
            return "joins the heads of 4-D window attention back into [B, ws, ws, C]: a relayout on the CPU"
    if node.op_type in RESHAPES and node.inputs:
        users = _data_users(graph, node.outputs[0]) if node.outputs else ()
        if len(users) == 1 and users[0].op_type in RESHAPES:
            return None  # not the last reshape of the run
        tensor, transpose = node.inputs[0], None
        for _ in range(4):
            producer = graph.producer(tensor)
            if producer is None or len(_data_users(graph, tensor)) != 1:
                break
            if producer.op_type == "Transpose":
                transpose = producer
                break
            if producer.op_type not in RESHAPES:
                break
            tensor = producer.inputs[0]
        found = _window_windows(graph, transpose) if transpose is not None else None
        if found is not None and found[0] and found[1] > 1 and _window_tokens_out(graph, transpose, node):
            return (f"{node.op_type} makes the {found[1]} windows of the 2-D window partition {transpose.name} "  # type: ignore[union-attr]
                    "the batch of windowed tokens: a relayout out of exWindow's form on the CPU")
        return None
    shape = graph.shape(node.outputs[0]) if node.outputs else None
    if node.op_type in LAYOUT_OPS or not _static(shape) or len(shape) != 3:
        return None  # the reverse takes rank-3 windowed tokens [B, N, C]
    tensor = node.outputs[0]
    for _ in range(4):
        users = _data_users(graph, tensor)
        if len(users) != 1:
            return None
        user = users[0]
        if user.op_type == "Transpose":
            found = _window_windows(graph, user)
            if found is not None and not found[0] and 1 < found[1] <= _REVERSE_BY_OP:
                return (f"makes the windowed tokens the window reverse {user.name} takes: relaid into exWindow's "
                        "form on the CPU")
            return None
        if user.op_type not in RESHAPES:
            return None
        tensor = user.outputs[0]
    return None


def _channel_vector(shape: Shape) -> int | None:
    """C when `shape` is a channel vector, [1, C] or [1, C, 1, 1] (held as (1, C, 1, 1))."""
    if not _static(shape) or len(shape) not in (2, 4) or int(shape[0]) != 1 or int(shape[1]) <= 1:
        return None
    return int(shape[1]) if all(int(d) == 1 for d in shape[2:]) else None


def _one_channel_sequence(shape: Shape) -> int | None:
    """C when `shape` is [1, 1, C] (C > 1): held as (1, 1, 1, C), the values along W of a single channel."""
    if not _static(shape) or len(shape) != 3 or int(shape[0]) != 1 or int(shape[1]) != 1 or int(shape[2]) <= 1:
        return None
    return int(shape[2])


def vector_sequence(rule: Rule, view: LayerView) -> str | None:
    """ECA's 1-D convolution over the channels: the pooled vector [1, C] (held as (1, C, 1, 1)) reshaped into a
    one-channel sequence [1, 1, C] (held as (1, 1, 1, C)) moves the channels into W, a CPU Transpose named after
    the Reshape, and the result goes back into a vector the same way, a CPU Transpose named after the op making
    the sequence (the Conv, its Sigmoid fused into it)."""
    graph, node = view.graph, view.node
    src, dst = view.in_shape(), view.out_shape()
    if node.op_type in RESHAPES:
        length = _channel_vector(src)
        users = _data_users(graph, node.outputs[0]) if node.outputs else ()
        if length is not None and _one_channel_sequence(dst) == length and len(users) == 1 \
                and users[0].op_type == "Conv":
            return (f"{node.op_type} {list(src or ())} -> {list(dst or ())} moves a channel vector into W: a "
                    "transpose on the CPU")
        return None
    length = _one_channel_sequence(dst)
    if length is None or not node.outputs or node.op_type != "Conv":
        return None  # an element-wise op after the Conv is fused into it (ConvSigmoid)
    tensor = node.outputs[0]
    for _ in range(4):
        user = _only_user(graph, tensor)
        if user is None:
            return None
        if user.op_type in RESHAPES:
            if _channel_vector(graph.shape(user.outputs[0])) == length:
                return (f"makes a one-channel sequence {list(dst or ())} that {user.name} turns back into a channel "
                        "vector: a transpose out of W on the CPU")
            return None
        if user.op_type not in _LAYOUT_NEUTRAL:
            return None
        tensor = user.outputs[0]
    return None


def sdpa_channels(graph: Graph, node: Node) -> tuple[int, int] | None:
    """(query channel, value channel) when `node` is the P.V MatMul of an attention, softmax(Q.K^T [* s]).V,
    the pattern the toolkit fuses into exSDPAttention; the channel is the last (per-head) dim of Q and V."""
    if node.op_type != "MatMul" or len(node.inputs) < 2 or graph.is_constant(node.inputs[1]):
        return None
    softmax = graph.producer(node.inputs[0])
    if softmax is None or softmax.op_type != "Softmax":
        return None
    scores = graph.producer(softmax.inputs[0])
    while scores is not None and scores.op_type in ("Mul", "Div", "Add"):
        scores = next((graph.producer(i) for i in scores.inputs if i and not graph.is_constant(i)), None)
    if scores is None or scores.op_type != "MatMul":
        return None
    query, value = graph.shape(scores.inputs[0]), graph.shape(node.inputs[1])
    if not _static(query) or not _static(value) or not query or not value:
        return None
    return int(query[-1]), int(value[-1])


def _bytes_per_element(precision: str) -> int:
    return 1 if precision == "int8" else 2


def _radix_reduce(graph: Graph, node: Node | None) -> tuple[int, int, int, int] | None:
    """(R, C, H, W) when `node` sums a rank-5 [1, R, C, H, W] tensor over R > 1 (split attention's radix sum,
    ResNeSt/SKNet): the toolkit holds the input as a flat row per radix, (1, R, 1, C*H*W), sums the rows with a
    1x1 convolution and unflattens the result to the map (1, C, H, W)."""
    if node is None or node.op_type != "ReduceSum" or not node.inputs:
        return None
    src = graph.shape(node.inputs[0])
    if not _static(src) or len(src) != 5 or src[0] != 1 or src[1] < 2:
        return None
    axes = reduce_axes(graph, node)
    if axes is None or [a % 5 for a in axes] != [1]:
        return None
    return int(src[1]), int(src[2]), int(src[3]), int(src[4])


def _flat_vector(shape: tuple[int, ...]) -> bool:
    return len(_unit_stripped(shape)) <= 1


def _folds_into_fc(graph: Graph, node: Node, src: tuple[int, ...], precision: str, params: Mapping[str, Any]) -> bool:
    """A small map flattened into a constant-weight Gemm/MatMul is folded into one convolution whose kernel is
    the whole map: no Reshape layer is left."""
    users = graph.consumers(node.outputs[0]) if node.outputs else ()
    if len(users) != 1 or users[0].op_type not in ("Gemm", "MatMul") or len(users[0].inputs) < 2:
        return False
    if not graph.is_constant(users[0].inputs[1]):
        return False
    fold = params.get("fold", {})
    kernel_ok = max(src[2], src[3]) <= int(fold.get("kernel", 0))
    return kernel_ok and math.prod(src[1:]) * _bytes_per_element(precision) < int(fold.get("bytes", 0))


def pixel_rows(rule: Rule, view: LayerView) -> str | None:
    """A relayout between a map (1, C, H, W) with H*W > 1 and a flat row (a Flatten into a classifier, a vector
    unflattened into a map, the row sum of split attention unflattened back) is a Reshape layer that is only
    an NPU layer when every channel's H*W pixels fill whole 16-byte groups."""
    graph, node = view.graph, view.node
    align = int(rule.params["align"][view.precision])
    radix = _radix_reduce(graph, node)
    if radix is not None:
        _, channels, height, width = radix
        if (height * width) % align:
            return (f"ReduceSum over the radix axis of {list(graph.shape(node.inputs[0]) or ())}: its row sum is "
                    f"unflattened into (1, {channels}, {height}, {width}) and {height}x{width} = {height * width} "
                    f"pixels per channel are not a multiple of {align}")
        return None
    if node.op_type not in ("Reshape", "Flatten") or not node.inputs or not node.outputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not _static(src) or not _static(dst) or math.prod(src) != math.prod(dst) or _in_group_norm(graph, node):
        return None
    if len(src) == 4 and src[2] * src[3] > 1 and _flat_vector(dst):
        pixels, what = src[2] * src[3], f"folds {src[2]}x{src[3]} pixels into the channel axis"
        if _folds_into_fc(graph, node, src, view.precision, rule.params):
            return None
    elif len(dst) == 4 and dst[2] * dst[3] > 1 and _flat_vector(src):
        pixels, what = dst[2] * dst[3], f"unfolds a vector into {dst[2]}x{dst[3]} pixels per channel"
    else:
        return None
    if pixels % align:
        return (f"{node.op_type} {list(src)} -> {list(dst)} {what}: {pixels} pixels per channel are not a multiple "
                f"of {align}")
    return None


def _patch_split(wide: tuple[int, ...], split: tuple[int, ...]) -> bool:
    """`split` is the map `wide` [1, C, H, W] cut into patch rows [C*H/ph, ph, W/pw, pw] with ph and pw above 1
    (MobileViT's unfold): H and W are each split, and the pieces of W stay the last two axes."""
    if len(wide) != 4 or len(split) != 4 or wide[0] != 1:
        return False
    _, channels, height, width = wide
    rows, ph, pieces, pw = split
    return (1 < ph < height and height % ph == 0 and rows == channels * height // ph and pw > 1
            and pieces * pw == width)


def _next_to_map_op(graph: Graph, tensor: str, upstream: bool, depth: int = 3,
                    ops: frozenset[str] = _MAP_OPS) -> bool:
    """`tensor` is made by (upstream) or feeds (downstream) a convolution or pooling (`ops`), through element-wise
    ops."""
    frontier = [tensor]
    for _ in range(depth):
        nodes = ([p for p in map(graph.producer, frontier) if p is not None] if upstream
                 else [u for t in frontier for u in graph.consumers(t)])
        if any(n.op_type in ops for n in nodes):
            return True
        frontier = [t for n in nodes if n.op_type in _AXIS_KEEPING
                    for t in (([i for i in n.inputs if i and not graph.is_constant(i)]) if upstream else n.outputs)]
    return False


def width_split(rule: Rule, view: LayerView) -> str | None:
    """A Reshape that cuts a map's W axis into (W/p, p) pieces (or joins them back) moves data inside each row
    of W pixels; the NPU does it only when a row fills whole 16-byte groups."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not _static(src) or not _static(dst) or math.prod(src) != math.prod(dst):
        return None
    align = int(rule.params["align"][view.precision])
    for wide, split, verb in ((src, dst, "cuts"), (dst, src, "joins")):
        if not _next_to_map_op(graph, node.inputs[0] if verb == "cuts" else node.outputs[0], verb == "cuts"):
            continue  # not a feature map (the patch tokens between the unfold's steps are 4-D too)
        if _patch_split(wide, split) and wide[-1] % align:
            return (f"Reshape {list(src)} -> {list(dst)} {verb} the {wide[-1]}-pixel rows of a map into "
                    f"({split[-2]}, {split[-1]}) pieces: a row of {wide[-1]} is not a multiple of {align}")
    return None


_GRID_MERGE = (0, 3, 1, 4, 2, 5)


def _grid_merge(graph: Graph, node: Node) -> bool:
    """A Transpose of channel-last windows [1, nh, nw, gh, gw, C] into [1, gh, nh, gw, nw, C]: MaxViT's grid
    reverse, each pixel row made of the in-window index outside the window index (the inverse of the grid
    partition (0,2,4,1,3,5)), with more than one window on each axis."""
    if node.op_type != "Transpose" or tuple(node.attrs.get("perm") or ()) != _GRID_MERGE:
        return False
    shape = graph.shape(node.inputs[0]) if node.inputs else None
    return _static(shape) and len(shape) == 6 and all(d > 1 for d in shape[1:5])


def einsum_labels(rule: Rule, view: LayerView) -> str | None:
    """An Einsum whose equation the toolkit reads as repeating a label (two blanks in one operand term: torch's
    spaced 'B G H I D, B G H J D -> B G H I J') is not rewritten to exMatMul, a convolution or an element-wise op."""
    spaced = spaced_einsum_operand(view.node)
    if spaced is None:
        return None
    i, term = spaced
    return (f"Einsum equation {str(view.attr('equation') or '')!r}: operand {i} subscripts {term!r} hold "
            f"{term.count(' ')} blanks, which the toolkit reads as a repeated label; it keeps the Einsum on the CPU "
            "(no exMatMul)")


def einsum_operand_relayout(rule: Rule, view: LayerView) -> str | None:
    """rk3588 hands a rank>4 tensor from the NPU's 4-D form to a CPU Einsum through a Reshape layer named after
    the tensor; that Reshape is a CPU layer itself when the innermost axis is not a whole number of 16-byte
    groups (8 FP16 / 16 INT8 elements), so the op that made the tensor counts as CPU."""
    graph, node = view.graph, view.node
    align = int(rule.params["align"][view.precision])
    for out in node.outputs:
        shape = graph.shape(out) if out else None
        if not _static(shape) or len(shape) <= 4 or shape[-1] % align == 0:
            continue
        for user in graph.consumers(out):
            if spaced_einsum_operand(user):
                return (f"{node.op_type} output '{out}' {list(shape)} feeds the CPU Einsum {user.name}: its "
                        f"relayout from the NPU's 4-D form is a CPU Reshape when the last axis ({shape[-1]}) is "
                        f"not a multiple of {align}")
    return None


def grid_merge(rule: Rule, view: LayerView) -> str | None:
    """rknn-toolkit2 lowers window partitions (block and grid) and the block merge as exWindow, but not the grid
    merge: that one becomes a 5-D Transpose (C, nh, nw, gh, gw) -> (C, gh, nh, gw, nw) on the CPU, named after
    the last op of the run of layout ops it sits in, which carries the verdict."""
    graph, node = view.graph, view.node
    if node.op_type not in LAYOUT_OPS or not node.outputs:
        return None
    users = _data_users(graph, node.outputs[0])
    if len(users) == 1 and users[0].op_type in LAYOUT_OPS:
        return None  # not the last op of its run
    current: Node | None = node
    for _ in range(8):
        if current is None or current.op_type not in LAYOUT_OPS:
            return None
        if _grid_merge(graph, current):
            dims = graph.shape(current.inputs[0])
            return (f"{current.op_type} {current.name} merges grid windows {list(dims or ())} back into pixels "
                    "(perm (0,3,1,4,2,5)): no exWindow form, a 5-D Transpose on the CPU")
        if current is not node and len(_data_users(graph, current.outputs[0])) != 1:
            return None
        current = graph.producer(current.inputs[0]) if current.inputs else None
    return None


def _score_grid_view(graph: Graph, node: Node) -> tuple[int, int, int] | None:
    """(heads, N, M) when `node` is a Reshape viewing attention scores [1,h,N,M] made by a MatMul of two
    activations as a grid [1,h,qh,qw,kh,kw] (N = qh*qw, M = kh*kw), as decomposed relative positions add to them."""
    if node.op_type != "Reshape" or not node.inputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not (_static(src) and _static(dst)) or len(src) != 4 or len(dst) != 6 or src[0] != 1:
        return None
    if tuple(dst[:2]) != tuple(src[:2]) or dst[2] * dst[3] != src[2] or dst[4] * dst[5] != src[3]:
        return None
    producer = graph.producer(node.inputs[0])
    if producer is None or not _is_activation_matmul(graph, producer):
        return None
    return src[1], src[2], src[3]


def _grid_column(graph: Graph, node: Node, align: int) -> str | None:
    """A relative-position term [1,h,qh,qw,kh] unsqueezed at the last axis into a column [...,kh,1] and added to
    a score grid: held as (1, h*qh*qw, kh, 1), the relayout from the term's (h*qh, qw, 1, kh) form is free only
    when the qw rows fill 16-byte groups."""
    out = graph.shape(node.outputs[0]) if node.outputs else None
    if not _static(out) or len(out) != 6 or out[5] != 1 or out[4] == 1:
        return None
    for user in _data_users(graph, node.outputs[0]):
        if user.op_type != "Add":
            continue
        others = [graph.producer(t) for t in graph.runtime_inputs(user) if t != node.outputs[0]]
        if any(p is not None and _score_grid_view(graph, p) is not None for p in others) and out[3] % align:
            return (f"Unsqueeze to a column {list(out)} for a grid of attention scores: qw = {out[3]} is not a "
                    f"multiple of {align}; its relayout runs on the CPU")
    return None


def score_grid(rule: Rule, view: LayerView) -> str | None:
    """rk3588 relays attention scores out of exMatMul's (h, N, 1, M) form into a map (1, h*N, kh, kw) for the grid
    adds, free only when the N rows or the M columns fill whole 16-byte groups, and back into (1, h, N, M) after
    them, free only when the M columns do."""
    graph, node = view.graph, view.node
    align = int(rule.params["align"][view.precision])
    if node.op_type == "Unsqueeze" and view.precision in rule.params["column_precisions"]:
        return _grid_column(graph, node, align)
    if _is_activation_matmul(graph, node) and node.outputs:
        for user in _data_users(graph, node.outputs[0]):
            grid = _score_grid_view(graph, user)
            if grid is not None and grid[0] > 1 and grid[1] % align and grid[2] % align:
                return (f"attention scores [1,{grid[0]},{grid[1]},{grid[2]}] viewed as a grid: neither N = {grid[1]} "
                        f"nor M = {grid[2]} is a multiple of {align}; their relayout runs on the CPU")
        return None
    merge = _score_grid_merge(graph, node, columns_whole=True)
    if merge is None:
        return None
    src, dst = merge
    if dst[3] % align:
        return (f"Reshape {list(src)} -> {list(dst)} merges a grid of attention scores back: M = {dst[3]} is not a "
                f"multiple of {align}; the relayout runs on the CPU")
    return None


def score_grid_back(rule: Rule, view: LayerView) -> str | None:
    """rk3566 views exMatMul's attention scores as a [1,h,qh,qw,kh,kw] grid (decomposed relative positions, MViTv2)
    without a layer, but merges the grid back into [1,h,N,M] with a CPU Reshape whatever the alignment (corpus
    timm_mvitv2_tiny: M 196 and 784, FP16 and INT8)."""
    graph, node = view.graph, view.node
    merge = _score_grid_merge(graph, node, columns_whole=True)
    if merge is None:
        return None
    src, dst = merge
    return f"Reshape {list(src)} -> {list(dst)} merges a grid of attention scores back: a CPU relayout on rk3566"


_HEAD_PATH = frozenset({"Transpose", "Add", "Sub", "Mul", "Div", "Identity"})


def _token_axis_edit(graph: Graph, node: Node, ops: tuple[str, ...]) -> bool:
    """A Slice or Pad of attention heads [1,h,T,d] on the token axis (dropping or restoring a class token)."""
    if node.op_type not in ops:
        return False
    if node.op_type == "Pad":
        value = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
        pads = [int(v) for v in value.reshape(-1)] if value is not None else list(node.attrs.get("pads") or ())
        return len(pads) == 8 and any(pads[i] for i in (2, 6)) and not any(pads[i] for i in (0, 1, 3, 4, 5, 7))
    value = graph.constants.get(node.inputs[3]) if len(node.inputs) > 3 else None
    axes = [int(v) for v in value.reshape(-1)] if value is not None else list(node.attrs.get("axes") or ())
    return axes in ([2], [-2])


def _reaches_token_edit(graph: Graph, tensor: str, upstream: bool, ops: tuple[str, ...], depth: int = 4) -> bool:
    current = tensor
    for _ in range(depth):
        nodes = ([graph.producer(current)] if upstream else list(_data_users(graph, current)))
        if len(nodes) != 1 or nodes[0] is None:
            return False
        hop = nodes[0]
        if _token_axis_edit(graph, hop, ops):
            return True
        if hop.op_type not in _HEAD_PATH or not hop.outputs:
            return False
        runtime = graph.runtime_inputs(hop)
        current = (runtime[0] if runtime else "") if upstream else hop.outputs[0]
        if not current:
            return False
    return False


def class_token_map(rule: Rule, view: LayerView) -> str | None:
    """Attention heads of a token sequence that carries a class token, turned into a map for a convolution
    (CoaT's convolutional relative position: the image tokens sliced out, [1,h,d,N] -> [1,h*d,H,W]) and back
    ([1,h*d,H,W] -> [1,h,d,N], padded with the class token's row again): rk3588 regroups the N pixels between
    the two forms, free only for whole 16-byte groups, and in INT8 only while the map fits 128 KiB."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not (_static(src) and _static(dst)) or len(src) != 4 or len(dst) != 4 or src[0] != 1 or dst[0] != 1:
        return None
    align = int(rule.params["align"][view.precision])
    if src[1] * src[2] == dst[1] and src[3] == dst[2] * dst[3] and src[1] > 1 and dst[2] > 1 \
            and _reaches_token_edit(graph, node.inputs[0], upstream=True, ops=("Slice",)):
        if view.precision not in rule.params["to_map_precisions"]:
            return None
        pixels, elements = src[3], math.prod(src)
        limit = rule.params["max_elements"].get(view.precision)
        if pixels % align or (limit is not None and elements > int(limit)):
            return (f"Reshape {list(src)} -> {list(dst)} turns the image tokens' heads into a map: {pixels} pixels "
                    f"(not a multiple of {align})" + ("" if limit is None or elements <= int(limit) else
                                                     f", {elements} elements (over {limit})") + "; it runs on the CPU")
        return None
    if dst[1] * dst[2] == src[1] and dst[3] == src[2] * src[3] and dst[1] > 1 and src[2] > 1 and dst[3] % align \
            and _reaches_token_edit(graph, node.outputs[0], upstream=False, ops=("Pad",)):
        return (f"Reshape {list(src)} -> {list(dst)} cuts a map back into the heads of tokens padded with a class "
                f"token: {dst[3]} pixels are not a multiple of {align}; it runs on the CPU")
    return None


def _joins_levels(graph: Graph, tensor: str) -> bool:
    """`tensor` [1, C, N] enters a last-axis Concat of rank-3 tensors: a detector head joining its levels."""
    return any(user.op_type == "Concat" and user.attrs.get("axis") in (2, -1)
               and len(graph.shape(user.outputs[0]) or ()) == 3 for user in graph.consumers(tensor))


_RESAMPLING = _MAP_OPS | {"Resize", "Upsample"}  # ops that read a tensor as a map of pixels
_PER_TOKEN = frozenset({"Transpose", "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Erf", "Gelu",
                        "HardSwish", "HardSigmoid", "Clip", "LeakyRelu", "Softplus", "Identity", "Dropout",
                        "LayerNormalization"})


def _pointwise_conv(graph: Graph, node: Node) -> bool:
    """A 1x1 convolution with stride 1, no padding and one group: it commutes with a reshape of the pixels."""
    kernel = node.attrs.get("kernel_shape") or ()
    return (node.op_type == "Conv" and tuple(kernel) == (1, 1) and node.attrs.get("group", 1) == 1
            and not any(node.attrs.get("pads") or ()) and all(s == 1 for s in node.attrs.get("strides") or (1, 1)))


def _token_round_trip(graph: Graph, node: Node, map_shape: tuple[int, ...], downstream: bool, depth: int = 10) -> bool:
    """Between this flatten and an unflatten back to the same map (or this unflatten and the flatten it undoes)
    the tokens pass only per-token ops (a constant-weight MatMul, element-wise ops, LayerNorm): the toolkit runs
    the whole stretch on the map as 1x1 convolutions and neither reshape has a layer (probe maptok_*)."""
    current = node
    for _ in range(depth):
        if downstream:
            users = _data_users(graph, current.outputs[0])
            if len(users) != 1:
                return False
            current = users[0]
        else:
            runtime = graph.runtime_inputs(current)
            producer = graph.producer(runtime[0]) if len(runtime) == 1 or current is node else None
            if producer is None:
                return False
            current = producer
        if current.op_type == "Reshape":
            other = graph.shape(current.outputs[0] if downstream else current.inputs[0])
            return _static(other) and tuple(other) == tuple(map_shape)
        if current.op_type in ("MatMul", "Gemm"):
            if not any(graph.is_constant(t) for t in current.inputs[1:2]):
                return False
        elif current.op_type not in _PER_TOKEN:
            return False
    return False


def level_rows(rule: Rule, view: LayerView) -> str | None:
    """A map (1, C, H, W) flattened into rows (1, C, H*W) (a detector head's levels before they are joined, a
    hybrid's map into tokens) or rows unflattened into a map for a convolution: the toolkit regroups the pixels,
    which needs no data move when the channels fill whole channel groups or the H*W pixels whole 16-byte groups.
    Cutting the joined channels into groups [1, C/b, b, N] (the DFL's bins, YOLO pose's keypoint triples) moves
    them out of that map form, again free only for whole channel groups."""
    graph, node = view.graph, view.node
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not _static(src) or not _static(dst) or len(src) < 3 or src[0] != 1:
        return None
    group, align = int(rule.params["group"][view.precision]), int(rule.params["align"][view.precision])
    if (len(src) == 3 and len(dst) == 4 and dst[0] == 1 and dst[1] * dst[2] == src[1] and dst[3] == src[2]
            and dst[2] % group and _from_map_concat(graph, node.inputs[0])):
        return (f"Reshape {list(src)} -> {list(dst)} cuts the joined head levels' {src[1]} channels into groups of "
                f"{dst[2]} (not a multiple of {group}): the toolkit moves them out of its map form on the CPU")
    if len(src) == 3 and len(dst) == 4 and tuple(src) == (1, dst[1], dst[2] * dst[3]) and dst[2] > 1 \
            and dst[3] > 1 and dst[1] > 1 and _next_to_map_op(graph, node.outputs[0], upstream=False, ops=_RESAMPLING):
        channels = dst[1]
        users = _data_users(graph, node.outputs[0])
        conv_out = graph.shape(users[0].outputs[0]) if len(users) == 1 and _pointwise_conv(graph, users[0]) else None
        if _static(conv_out) and len(conv_out) == 4:
            channels = conv_out[1]  # the toolkit convolves the rows first
        if channels % group and src[2] % align and not _token_round_trip(graph, node, tuple(dst), downstream=False):
            return (f"Reshape {list(src)} -> {list(dst)} unflattens rows of {channels} channels (not a multiple of "
                    f"{group}) and {src[2]} pixels (not a multiple of {align}) into a map: the regrouping runs on "
                    "the CPU")
        return None
    if len(src) != 4 or len(dst) != 3:
        return None
    channels, pixels = src[1], src[2] * src[3]
    if tuple(dst) != (1, channels, pixels) or channels == 1:
        return None  # one channel is a flat row: RKNN-PIXEL-ROWS
    if not (_joins_levels(graph, node.outputs[0]) or _next_to_map_op(graph, node.inputs[0], upstream=True,
                                                                      ops=_RESAMPLING)):
        return None  # not a feature map (a token tensor split into heads is 4-D too)
    if channels % group and pixels % align and not _token_round_trip(graph, node, tuple(src), downstream=True):
        return (f"Reshape {list(src)} -> {list(dst)} flattens a map of {channels} channels (not a multiple of "
                f"{group}) and {src[2]}x{src[3]} = {pixels} pixels (not a multiple of {align}) into rows: the "
                "regrouping runs on the CPU")
    return None


def radix_row(rule: Rule, view: LayerView) -> str | None:
    """The tensor split attention sums over its radix axis is relaid out as flat rows (1, R, 1, C*H*W) by a
    Reshape named after the node making it: on the CPU when a row exceeds the SoC's byte limit or, where the
    SoC needs it, when H*W is not a whole number of 16-byte groups."""
    graph, node = view.graph, view.node
    soc = view.target.rules_id
    for tensor in node.outputs:
        for user in graph.consumers(tensor) if tensor else ():
            radix = _radix_reduce(graph, user)
            if radix is None or user.inputs[0] != tensor:
                continue
            rows, channels, height, width = radix
            row = channels * height * width
            row_bytes = row * _bytes_per_element(view.precision)
            align = view.per_target(rule.params.get("align", {}))
            max_bytes = rule.params.get("max_row_bytes", {}).get(soc)
            why = None
            if align and (height * width) % int(align):
                why = f"{height}x{width} = {height * width} pixels per channel are not a multiple of {align}"
            elif max_bytes is not None and row_bytes > int(max_bytes):
                why = f"a row of {row_bytes} bytes exceeds {max_bytes}"
            if why:
                return (f"feeds the radix sum '{user.name}': the toolkit relays out its {rows} radix maps "
                        f"(1, {channels}, {height}, {width}) as rows (1, {rows}, 1, {row}) and {why}")
    return None


def _window_partition(graph: Graph, tensor: str) -> bool:
    """The map `tensor` [1, C, H, W] is cut into windows as NesT blockifies: a Transpose (0, 2, 3, 1) straight
    into a rank-6 Reshape [1, H/b, b, W/b, b, C] with more than one window, the NHWC map read by nothing else."""
    shape = graph.shape(tensor)
    if not _static(shape) or len(shape) != 4 or shape[0] != 1:
        return False
    for user in graph.consumers(tensor):
        if user.op_type != "Transpose" or tuple(user.attrs.get("perm") or ()) != (0, 2, 3, 1):
            continue
        if len(graph.consumers(user.outputs[0])) != 1:
            continue  # the NHWC map is read again (TinyViT's residual): exWindow works in channel form
        for reshape in graph.consumers(user.outputs[0]):
            target = graph.shape(reshape.outputs[0]) if reshape.op_type == "Reshape" else None
            if (_static(target) and len(target) == 6 and target[0] == 1 and target[5] == shape[1]
                    and target[1] * target[2] == shape[2] and target[3] * target[4] == shape[3]
                    and target[1] * target[3] > 1):
                return True
    return False


def channel_batch_relayout(rule: Rule, view: LayerView) -> str | None:
    """Moving a map's channel into the batch axis, (1, C, H, W) -> (C, 1, H, W) (a Transpose (1, 0, 2, 3), or the
    one the toolkit puts before exWindow when a map is cut into windows, named after the map's producer), is a
    Transpose layer that runs on the NPU only up to a size."""
    graph, node = view.graph, view.node
    limit = int(rule.params["max_bytes"])
    bpe = _bytes_per_element(view.precision)
    if node.op_type == "Transpose" and tuple(node.attrs.get("perm") or ()) == (1, 0, 2, 3) and node.inputs:
        shape = graph.shape(node.inputs[0])
        if _static(shape) and len(shape) == 4 and shape[0] == 1 and shape[1] > 1 and math.prod(shape) * bpe > limit:
            return (f"Transpose {list(shape)} moves {shape[1]} channels into the batch axis: "
                    f"{math.prod(shape) * bpe} bytes exceed {limit}")
        return None
    for tensor in node.outputs:
        shape = graph.shape(tensor) if tensor else None
        if _static(shape) and _window_partition(graph, tensor) and math.prod(shape) * bpe > limit:
            return (f"its map {list(shape)} is cut into windows: the toolkit first moves the {shape[1]} channels into "
                    f"the batch axis for exWindow, and {math.prod(shape) * bpe} bytes exceed {limit}")
    return None


def _from_matmul(graph: Graph, tensor: str, depth: int = 6) -> bool:
    """The tensor is made, through element-wise ops and softmaxes, from a MatMul/Gemm/Einsum: attention scores,
    which the toolkit holds with the heads in the batch axis, not as an NCHW map."""
    frontier, seen = [tensor], set()
    for _ in range(depth):
        nxt = []
        for name in frontier:
            producer = graph.producer(name)
            if producer is None or producer.name in seen:
                continue
            seen.add(producer.name)
            if producer.op_type in ("MatMul", "Gemm", "Einsum"):
                return True
            if producer.op_type in _LAYOUT_NEUTRAL or producer.op_type in ("Softmax", "Neg", "Exp"):
                nxt += [i for i in producer.inputs if i and not graph.is_constant(i)]
        frontier = nxt
    return False


def width_sum_transpose(rule: Rule, view: LayerView) -> str | None:
    """A ReduceSum over the last axis (W) of a map [1, C, H, W] is lowered to a Transpose of W into the channel,
    (1, W, H, C), and a 1x1 convolution; in the listed precisions that Transpose, named after the node making
    the summed map, runs on the CPU once the map has more than `max_pixels` pixels, unless H is 1 or a
    multiple of `h_group`."""
    if view.precision not in rule.params["precisions"]:
        return None
    graph, node = view.graph, view.node
    limit, group = int(rule.params["max_pixels"]), int(rule.params["h_group"])
    for tensor in node.outputs:
        shape = graph.shape(tensor) if tensor else None
        if not _static(shape) or len(shape) != 4 or shape[0] != 1:
            continue
        for user in graph.consumers(tensor):
            axes = reduce_axes(graph, user) if user.op_type == "ReduceSum" else None
            if axes is None or [a % 4 for a in axes] != [3] or user.inputs[0] != tensor:
                continue
            height, width = int(shape[2]), int(shape[3])
            if height > 1 and height * width > limit and height % group and not _from_matmul(graph, tensor):
                return (f"feeds the sum over W of '{user.name}': the toolkit transposes {list(shape)} W into the "
                        f"channel and {height}x{width} = {height * width} pixels exceed {limit} with H not a "
                        f"multiple of {group}")
    return None


def _sdpa_scores_of(graph: Graph, node: Node) -> Node | None:
    """The Q.K^T MatMul whose scores (through scale/bias ops) `node`'s Softmax normalises, when `node` is the
    P.V MatMul of an attention the toolkit fuses into exSDPAttention."""
    if node.op_type != "MatMul" or len(node.inputs) < 2 or sdpa_channels(graph, node) is None:
        return None
    softmax = graph.producer(node.inputs[0])
    scores = graph.producer(softmax.inputs[0]) if softmax is not None else None
    while scores is not None and scores.op_type in ("Mul", "Div", "Add"):
        scores = next((graph.producer(i) for i in scores.inputs if i and not graph.is_constant(i)), None)
    return scores


def _broadcast_heads(shape: Shape, other: Shape) -> bool:
    """`shape` is broadcast over `other`'s batch (head) dims: a dim of 1 (or a missing one) against one above 1."""
    if not _static(shape) or not _static(other) or len(shape) < 3 or len(other) < 3:
        return False
    mine, theirs = list(shape[:-2]), list(other[:-2])
    width = max(len(mine), len(theirs))
    mine, theirs = [1] * (width - len(mine)) + mine, [1] * (width - len(theirs)) + theirs
    return any(a == 1 and b > 1 for a, b in zip(mine, theirs))


def sdpa_kv_broadcast(rule: Rule, view: LayerView) -> str | None:
    """An attention fused into exSDPAttention takes q, k and v with the same heads: a k or v shared by several
    q heads (multi-query attention, a head dim of 1 broadcast by the MatMul) is first expanded to every head by
    an Expand layer named after the tensor's producer, which runs on the CPU (a lone Expand is NPU: this one is
    the toolkit's own). A lone MatMul (no softmax between two) broadcasts inside exMatMul and needs none."""
    graph, node = view.graph, view.node
    for tensor in node.outputs:
        for user in graph.consumers(tensor) if tensor else ():
            if user.op_type != "MatMul" or len(user.inputs) < 2:
                continue
            if user.inputs[1] == tensor and _sdpa_scores_of(graph, user) is not None:
                role, other = "value", graph.shape(user.inputs[0])
            else:
                pv = [m for after in graph.consumers(user.outputs[0]) for m in _after_scale(graph, after)]
                if not any(_sdpa_scores_of(graph, m) is user for m in pv):
                    continue
                role = "key" if user.inputs[1] == tensor else "query"
                other = graph.shape(user.inputs[0 if role == "key" else 1])
            shape = graph.shape(tensor)
            if _broadcast_heads(shape, other):
                return (f"the {role} {list(shape or ())} of the fused attention '{user.name}' is shared by "
                        f"{list(other or ())[:-2]} heads: the toolkit expands it to every head with an Expand layer "
                        "on the CPU")
    return None


def _after_scale(graph: Graph, node: Node, depth: int = 4) -> list[Node]:
    """The P.V MatMuls reached from a scores consumer through scale/bias ops and the Softmax."""
    frontier, found = [node], []
    for _ in range(depth):
        nxt: list[Node] = []
        for current in frontier:
            if current.op_type == "Softmax":
                found += [u for u in graph.consumers(current.outputs[0]) if u.op_type == "MatMul"]
            elif current.op_type in ("Mul", "Div", "Add"):
                nxt += graph.consumers(current.outputs[0])
        frontier = nxt
    return found


def _group_norm_parts(graph: Graph, node: Node) -> tuple[Node, Node, Node] | None:
    """(the Reshape in, the InstanceNormalization, the Reshape out) of the GroupNorm `node` belongs to."""
    norm: Node | None = node
    if node.op_type == "Reshape":
        users = graph.consumers(node.outputs[0]) if node.outputs else ()
        norm = users[0] if len(users) == 1 else graph.producer(node.inputs[0]) if node.inputs else None
        if norm is not None and norm.op_type != "InstanceNormalization" and node.inputs:
            norm = graph.producer(node.inputs[0])
    if norm is None or norm.op_type != "InstanceNormalization" or not norm.inputs or not norm.outputs:
        return None
    into = graph.producer(norm.inputs[0])
    back = graph.consumers(norm.outputs[0])
    if into is None or len(back) != 1 or _group_norm_groups(graph, into) is None:
        return None
    if _group_norm_groups(graph, back[0]) is None:
        return None
    return into, norm, back[0]


def _affine_step(graph: Graph, node: Node) -> bool:
    """A Mul or Add of a tensor by a constant (a norm's per-channel affine, which exNorm takes as scale/bias)."""
    return node.op_type in ("Mul", "Add") and len(node.inputs) == 2 and any(graph.is_constant(i) for i in node.inputs)


def _back_carrier(graph: Graph, back: Node, depth: int = 3) -> Node:
    """The node a GroupNorm's Reshape out is lowered under: itself, or a reshape that alone reads it through the
    affine Mul/Add (measured: corpus hf_deformable_detr input_proj.2/3, the reshape out named Reshape_4/Reshape_6,
    the flatten into tokens)."""
    tensor = back.outputs[0]
    for _ in range(depth):
        users = _data_users(graph, tensor)
        if len(users) != 1:
            return back
        if users[0].op_type in RESHAPES:
            return users[0]
        if not _affine_step(graph, users[0]):
            return back
        tensor = users[0].outputs[0]
    return back


def _affine_source(graph: Graph, node: Node, depth: int = 3) -> Node | None:
    """The reshape upstream of `node` through affine Mul/Add steps (the candidate GroupNorm Reshape out)."""
    current = graph.producer(_activation_input(graph, node)) if node.inputs else None
    for _ in range(depth):
        if current is None or current.op_type == "Reshape":
            return current
        if not _affine_step(graph, current):
            return None
        current = graph.producer(_activation_input(graph, current))
    return None


def group_norm_split(rule: Rule, view: LayerView) -> str | None:
    """rk3588 lowers GroupNorm's regrouping by the channels per group k = C/G: k whole channel blocks (`c2`: 8
    FP16, 16 INT8) keep the map form (G, k, H, W) on the NPU; otherwise the groups are flattened, (G, k*HW, 1, 1),
    or with an odd G or odd HW (1, G, 1, k*HW) between two transposes, and those reshapes run on the NPU only
    when the map's pixel count HW is a multiple of `pixels`, the transposes only up to `transpose_max` elements
    per group. The Reshape in carries the reshape and the first transpose, the InstanceNormalization the
    transpose back, the Reshape out its own reshape, unless the GroupNorm's per-channel affine (folded into exNorm)
    leads into another reshape, which then carries the reshape out as one run."""
    graph, node = view.graph, view.node
    parts = _group_norm_parts(graph, node)
    if parts is None and node.op_type in RESHAPES:
        back = _affine_source(graph, node)
        parts = _group_norm_parts(graph, back) if back is not None else None
        if parts is None or parts[2] is not back or _back_carrier(graph, back) is not node:
            return None
    elif (parts is None or node.op_type not in ("Reshape", "InstanceNormalization")
          or (node is parts[2] and _back_carrier(graph, node) is not node)):
        return None
    into, norm, _ = parts
    src = graph.shape(into.inputs[0])
    found = _group_norm_groups(graph, into)
    if not _static(src) or len(src) < 3 or found is None:
        return None
    channels, groups = found
    if groups <= 1 or channels % groups:
        return None
    per_group, pixels = channels // groups, int(np.prod(src[2:]))
    if per_group % rule.params["c2"][view.precision] == 0:
        return None  # the map form (G, k, H, W)
    reshape_cpu = pixels % rule.params["pixels"] != 0
    transposed = groups % 2 == 1 or pixels % 2 == 1
    transpose_cpu = transposed and per_group * pixels > rule.params["transpose_max"]
    what = f"GroupNorm of {groups} groups of {per_group} channels over {pixels} pixels"
    if node is norm:
        return None if not transpose_cpu else (
            f"{what}: the transpose back from (1, L, 1, G) with L = {per_group * pixels} > "
            f"{rule.params['transpose_max']} runs on the CPU")
    if reshape_cpu:
        return (f"{what}: the groups are flattened ({view.precision}: {per_group} channels are not whole blocks of "
                f"{rule.params['c2'][view.precision]}) and {pixels} pixels are not a multiple of "
                f"{rule.params['pixels']}: the reshape runs on the CPU")
    if node is into and transpose_cpu:
        return (f"{what}: the groups go through (1, G, 1, L) and its transpose with L = {per_group * pixels} > "
                f"{rule.params['transpose_max']} runs on the CPU")
    return None


CHECKS: Mapping[str, Check] = {
    "einsum_labels": einsum_labels,
    "einsum_operand_relayout": einsum_operand_relayout,
    "class_token_map": class_token_map,
    "score_grid": score_grid,
    "grid_merge": grid_merge,
    "static_shapes": static_shapes, "dla_batch": dla_batch, "dla_dims": dla_dims,
    "platform_unsupported": platform_unsupported, "rank4": rank4, "spatial_2d": spatial_2d,
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
    "bn_inference": bn_inference,
    "runtime_int_data": runtime_int_data,
    "rnn_layout": rnn_layout,
    "narrow_cast": narrow_cast,
    "empty_tensor": empty_tensor,
    "rank_kept_operand": rank_kept_operand,
    "data_dtypes": data_dtypes, "norm_limits": norm_limits, "output_relayout": output_relayout,
    "exmatmul_operand": exmatmul_operand, "group_norm_split": group_norm_split, "vector_division": vector_division,
    "volume_max_pool": volume_max_pool,
    "conv_stride": conv_stride, "head_relayout": head_relayout,
    "split_projection_value": split_projection_value,
    "token_relayout": token_relayout,
    "head_split": head_split,
    "map_output_relayout": map_output_relayout,
    "vector_output": vector_output,
    "window_heads": window_heads,
    "norm_relayout": norm_relayout,
    "pixel_rows": pixel_rows,
    "radix_row": radix_row,
    "channel_batch_relayout": channel_batch_relayout,
    "width_sum_transpose": width_sum_transpose,
    "channel_scatter": channel_scatter,
    "reduce_relayout": reduce_relayout,
    "exmatmul_conv": exmatmul_conv,
    "window_tokens": window_tokens,
    "vector_sequence": vector_sequence,
    "pixel_reduce": lambda rule, view: pixel_reduce(rule, view, channel_axis),
    "einsum_operands": einsum_operands,
    "einsum_heads": einsum_heads,
    "swapped_lstm_join": swapped_lstm_join,
    "cosine_window_operands": cosine_window_operands,
    "relpos_query_split": relpos_query_split,
    "factorised_attention": factorised_attention,
    "grid_merge_ends": grid_merge_ends,
    "channels_last_merge": channels_last_merge,
    "score_grid_back": score_grid_back,
    "pooled_value": pooled_value,
    "kv_heads": kv_heads,
    "sdpa_kv_broadcast": sdpa_kv_broadcast,
    "width_split": width_split,
    "level_rows": level_rows,
    # optimizer/catalog/_partitions.py: layout runs with no 4-D form and no exWindow rewrite
    "lone_transpose_runs": lone_transpose_runs,
    "window_batch_merge": window_batch_merge,
    "grid_rows": grid_rows,
    "batched_rows": batched_rows,
    "window_head_join": window_head_join,
    "grid_swap_ends": grid_swap_ends,
    "window_batch_split": window_batch_split,
    "batch_rows_stream": batch_rows_stream,  # optimizer/catalog/_stream.py (rk3566/rk3568)
    "block_join_5d": block_join_5d,  # optimizer/catalog/_joins.py
    "token_unpatchify": token_unpatchify,  # optimizer/catalog/_joins.py
    "video_flatten": video_flatten,  # optimizer/catalog/_video.py
    "pair_split": pair_split,  # optimizer/catalog/_pairs.py
    "rect_window": rect_window,  # optimizer/catalog/_rect_windows.py
    "rows_pad": rows_pad,  # optimizer/catalog/_flat_rows.py
    "unfold_rows": unfold_rows,  # optimizer/catalog/_unfold.py (rk3588)
}


def _erf_in_gelu(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """x*0.5*(1+erf(x/sqrt2)): the toolkit fuses the pattern into exGelu on the NPU."""
    graph, node = view.graph, view.node
    producer = graph.producer(node.inputs[0]) if node.inputs else None
    users = graph.consumers(node.outputs[0]) if node.outputs else ()
    if (producer is not None and producer.op_type in ("Div", "Mul")
            and any(graph.is_constant(i) for i in producer.inputs[1:])
            and len(users) == 1 and users[0].op_type == "Add"):
        return None
    return "a lone Erf has no NPU kernel; only the GELU pattern x*0.5*(1+erf(x/sqrt2)) fuses into exGelu"


def _exponent_constant(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """Pow with a build-time exponent is an NPU layer (or fuses into exGelu/exNorm); a run-time one is not."""
    inputs = view.node.inputs
    if len(inputs) > 1 and view.graph.is_constant(inputs[1]):
        return None
    return f"{view.node.op_type} exponent is computed at run time; only a constant exponent has an NPU kernel"


def _data_dtypes(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """The element type of the data inputs (unknown types pass: the toolkit converts float graphs)."""
    allowed = params["dtypes"]
    for index in params["inputs"]:
        if index >= len(view.node.inputs) or not view.node.inputs[index]:
            continue
        info = view.graph.tensors.get(view.node.inputs[index])
        dtype = info.dtype if info is not None else "unknown"
        if dtype != "unknown" and dtype not in allowed:
            return (f"{view.node.op_type} data input {index} is {dtype}; the NPU kernel takes "
                    f"{'/'.join(allowed)} only")
    return None


def _is_norm_sqrt(graph: Graph, node: Node | None, numerator: str | None) -> bool:
    """Sqrt(ReduceMean(d*d or Pow(d, 2)) [+ eps]) dividing that same tensor d (or a constant: the reciprocal
    form): a written-out LayerNorm or RMSNorm as the toolkit's exNorm fusion matches it. A norm that centres x
    twice (CRAFT: x - mean computed by a second ReduceMean and Sub for the numerator) squares one tensor and
    divides another, and is not fused; NAFNet's duplicate Sub of the same mean is one tensor to the toolkit,
    which merges identical nodes once (`_same_value`)."""
    if node is None or node.op_type != "Sqrt":
        return False
    inner = graph.producer(node.inputs[0])
    if inner is not None and inner.op_type == "Add" and any(graph.is_constant(i) for i in inner.inputs):
        inner = next((graph.producer(i) for i in inner.inputs if not graph.is_constant(i)), None)
    if inner is None or inner.op_type != "ReduceMean":
        return False
    square = graph.producer(inner.inputs[0])
    if square is None:
        return False
    if numerator is not None and not _same_value(graph, square.inputs[0], numerator):
        return False
    if square.op_type == "Pow":
        exponent = graph.constants.get(square.inputs[1]) if len(square.inputs) > 1 else None
        return exponent is not None and float(exponent.reshape(-1)[0]) == 2.0
    return square.op_type == "Mul" and len(square.inputs) == 2 and square.inputs[0] == square.inputs[1]


def _same_value(graph: Graph, a: str, b: str) -> bool:
    """The same tensor, or the outputs of two nodes with the same op, inputs and attributes (one round of the
    toolkit's duplicate-node merge: corpus spandrel_nafnet's LayerNorm2d writes x - mean twice and is fused,
    spandrel_craft's, whose two means are themselves duplicates, is not)."""
    if a == b:
        return True
    pa, pb = graph.producer(a), graph.producer(b)
    return (pa is not None and pb is not None and pa.op_type == pb.op_type and pa.inputs == pb.inputs
            and pa.attrs == pb.attrs and pa.outputs.index(a) == pb.outputs.index(b))


def _numerator(graph: Graph, div: Node) -> str | None:
    """The run-time tensor a Div divides, None for a constant (1 / Sqrt(..): the reciprocal form)."""
    return None if graph.is_constant(div.inputs[0]) else div.inputs[0]


def _in_norm(graph: Graph, node: Node) -> bool:
    """The Sqrt and the Div of a written-out LayerNorm/RMSNorm. Only the division form fuses: a Sqrt whose
    result is inverted by Reciprocal and multiplied (rsqrt, as the dynamo exporter writes RMSNorm) stays a
    Sqrt layer."""
    if node.op_type == "Sqrt":
        users = graph.consumers(node.outputs[0]) if node.outputs else []
        return bool(users) and all(u.op_type == "Div" and len(u.inputs) > 1 and u.inputs[1] == node.outputs[0]
                                   and _is_norm_sqrt(graph, node, _numerator(graph, u)) for u in users)
    if node.op_type == "Div" and len(node.inputs) > 1:
        return _is_norm_sqrt(graph, graph.producer(node.inputs[1]), _numerator(graph, node))
    return False


_EPS_GUARDS = frozenset({"Clip", "Max", "Add", "Expand"})


def _in_l2norm(graph: Graph, node: Node) -> bool:
    """Div(x, ReduceL2(x) [guarded by Clip/Max/Add eps, broadcast by Expand]): F.normalize as exporters write
    it, which the toolkit fuses into one exNorm (lpnorm2) layer."""
    if node.op_type != "Div" or len(node.inputs) < 2:
        return False
    divisor = graph.producer(node.inputs[1])
    for _ in range(4):
        if divisor is None or divisor.op_type not in _EPS_GUARDS:
            break
        runtime = [i for i in divisor.inputs if i and not graph.is_constant(i)]
        if divisor.op_type == "Expand":
            runtime = runtime[:1]
        if len(runtime) != 1:
            return False
        divisor = graph.producer(runtime[0])
    return divisor is not None and divisor.op_type == "ReduceL2" and divisor.inputs[0] == node.inputs[0]


def _group_norm_core(graph: Graph, node: Node | None) -> bool:
    """InstanceNormalization on a Reshape [N, G, -1] of a tensor whose result is reshaped back to that
    tensor's shape: GroupNorm as torch exports it."""
    if node is None or node.op_type != "InstanceNormalization" or not node.inputs or not node.outputs:
        return False
    opener = graph.producer(node.inputs[0])
    if opener is None or opener.op_type != "Reshape" or not opener.inputs:
        return False
    grouped, source = graph.shape(node.inputs[0]), graph.shape(opener.inputs[0])
    if not _static(grouped) or not _static(source) or len(grouped) != 3:
        return False
    users = graph.consumers(node.outputs[0])
    return bool(users) and all(u.op_type == "Reshape" and graph.shape(u.outputs[0]) == source for u in users)


def _in_group_norm(graph: Graph, node: Node) -> bool:
    """The Reshape in, the InstanceNormalization or the Reshape out of a GroupNorm: the toolkit fuses the three
    into one exNorm on the original tensor (no layout change of its own)."""
    if node.op_type == "InstanceNormalization":
        return _group_norm_core(graph, node)
    if node.op_type != "Reshape" or not node.inputs or not node.outputs:
        return False
    if _group_norm_core(graph, graph.producer(node.inputs[0])):
        return True
    users = graph.consumers(node.outputs[0])
    return bool(users) and all(_group_norm_core(graph, u) for u in users)


def _l2_reduce_in_norm(graph: Graph, node: Node) -> bool:
    """The ReduceL2 of an L2 normalisation: its result reaches, through the eps guards only, a Div that divides
    the ReduceL2's own input by it (the pattern _in_l2norm recognises from the Div's side)."""
    if node.op_type != "ReduceL2" or not node.outputs:
        return False
    frontier = [node.outputs[0]]
    for _ in range(5):
        users = [u for t in frontier for u in graph.consumers(t)]
        if any(u.op_type == "Div" and _in_l2norm(graph, u) for u in users):
            return True
        frontier = [o for u in users if u.op_type in _EPS_GUARDS for o in u.outputs]
        if not frontier:
            return False
    return False


PATTERNS: Mapping[str, Callable[[Graph, Node], bool]] = {"norm": _in_norm, "l2norm": _in_l2norm,
                                                         "l2norm_reduce": _l2_reduce_in_norm,
                                                         "group_norm": _in_group_norm}


def _subsampling_pool(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """An AveragePool whose kernel is smaller than its stride (LeViT's 1x1/stride-2 subsample) skips pixels
    instead of pooling them."""
    kernel, strides = view.attr("kernel_shape"), view.attr("strides")
    if kernel is None or strides is None or not any(k < s for k, s in zip(kernel, strides)):
        return None
    return (f"AveragePool kernel {list(kernel)} smaller than its stride {list(strides)} (a subsample) runs on the CPU "
            f"in {view.precision.upper()}")


def _same_type_cast(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A Cast of a tensor to its own element type does nothing and is removed at build time."""
    node, graph = view.node, view.graph
    source, target = (graph.tensors.get(t) for t in (node.inputs[0] if node.inputs else "",
                                                      node.outputs[0] if node.outputs else ""))
    kinds = [info.dtype if info is not None else "unknown" for info in (source, target)]
    if kinds[0] == kinds[1] and kinds[0] in params["dtypes"]:
        return None
    return f"Cast {kinds[0]} -> {kinds[1]} converts data; only a Cast to its own type is removed"


def _linear_resize(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A linear Resize runs on the NPU only at whole-number scales, up or down per axis, without align_corners."""
    mode = view.attr("mode")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode in params.get("cpu_interpolation", ()):
        return f"{mode} Resize runs on the CPU"
    if mode != "linear":
        return None
    ctm = view.attr("coordinate_transformation_mode")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    if ctm in params.get("cpu_modes", ("align_corners",)):
        return f"linear Resize with {ctm} runs on the CPU"
    src, dst = view.in_shape(), view.out_shape()
    if params.get("whole_scales", True) and _static(src) and _static(dst) and len(src) == len(dst) >= 3:
        ratios = [(d, s) for s, d in zip(src[2:], dst[2:]) if s and d and d != s]
        if any(d % s and s % d for d, s in ratios):
            return (f"linear Resize {list(src[2:])} -> {list(dst[2:])} is not a whole-number scale; it runs on "
                    "the CPU")
    return None


def _token_channel_pad(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A constant Pad of a token tensor's last axis pads the channels of the 1x1 convolution the toolkit made
    of the token MatMul (held as [1, C, rows, N]); the NPU Pad does not extend the channels of a map with more
    than one pixel, so it runs on the CPU (a flattened vector padded in its channels stays on the NPU)."""
    graph, node = view.graph, view.node
    if (node.attrs.get("mode") or "constant") != "constant" or len(node.inputs) < 2 or not node.inputs[1]:
        return None
    pads = graph.constants.get(node.inputs[1])
    shape = graph.shape(node.inputs[0])
    if pads is None or not _static(shape) or len(shape) < 2 or pads.size != 2 * len(shape):
        return None
    flat = [int(v) for v in pads.reshape(-1)]
    rank = len(shape)
    axes = [i for i in range(rank) if flat[i] or flat[i + rank]]
    if len(node.inputs) > 3 and node.inputs[3]:
        return None  # opset-18 axes: not measured
    if axes != [rank - 1] or math.prod(shape[:-1]) <= 1 or not _token_form(graph, node.inputs[0]):
        return None
    return (f"Pad of the last axis of token tensor {list(shape)} ({flat[rank - 1]}, {flat[-1]}) extends the "
            "channels of the toolkit's convolution layout over several pixels; it runs on the CPU")


def _strided_slice(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A Slice with a step other than 1 gathers every k-th row/column/channel of a map; on token tensors
    (channel last) the toolkit regroups it as an NPU Gather instead."""
    node, graph = view.node, view.graph
    if len(node.inputs) < 5 or not node.inputs[4] or graph.is_constant(node.inputs[0]):
        return None
    steps = graph.constants.get(node.inputs[4])
    if steps is None or all(abs(int(v)) == 1 for v in steps.reshape(-1)):
        return None
    if _token_form(graph, node.inputs[0]) or _space_to_depth(graph, node):
        return None
    return f"Slice with steps {[int(v) for v in steps.reshape(-1)]} gathers strided data; it runs on the CPU"


def _slice_form(graph: Graph, node: Node) -> tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(source, axes, steps, starts) of a Slice with constant starts, axes and steps, else None."""
    if node.op_type != "Slice" or len(node.inputs) < 5:
        return None
    starts, axes, steps = (graph.constants.get(node.inputs[i]) for i in (1, 3, 4))
    if starts is None or axes is None or steps is None:
        return None
    rank = len(graph.shape(node.inputs[0]) or ())
    return (node.inputs[0], tuple(int(a) % rank if rank else int(a) for a in axes.reshape(-1)),
            tuple(int(v) for v in steps.reshape(-1)), tuple(int(v) for v in starts.reshape(-1)))


_PHASE_CARRIERS = frozenset({"Neg", "Unsqueeze"})  # between a phase and its Concat in rotary embeddings


def _carried(graph: Graph, tensor: str) -> tuple[str, tuple[int, ...]] | None:
    """Walks a Concat input back through Neg and at most one constant-axes Unsqueeze (a rotary embedding's
    interleave: x[..., ::2] and -x[..., 1::2] stacked on a new last axis): the first other tensor and the axes the
    Unsqueeze inserted, as axes of the Concat input; None for anything else on the way."""
    rank = len(graph.shape(tensor) or ())
    inserted: tuple[int, ...] = ()
    producer = graph.producer(tensor)
    while producer is not None and producer.op_type in _PHASE_CARRIERS:
        if producer.op_type == "Unsqueeze":
            axes = graph.constants.get(producer.inputs[1]) if len(producer.inputs) > 1 else None
            if inserted or axes is None or not rank:
                return None
            inserted = tuple(sorted(int(a) % rank for a in axes.reshape(-1)))
        tensor = producer.inputs[0]
        producer = graph.producer(tensor)
    return tensor, inserted


def _phase_chain(graph: Graph, tensor: str) -> tuple[str, dict[int, tuple[int, int]], set[str], tuple[int, ...]] | None:
    """Walks a tensor back through Neg/Unsqueeze carriers, then constant-parameter Slices (one per axis, as
    exporters write x[..., 0::2, 1::2, :]): the first tensor that is no Slice's output, {axis: (start mod step,
    step)}, the Slices passed and the axes the carriers inserted (as axes of the Concat input)."""
    carried = _carried(graph, tensor)
    if carried is None:
        return None
    tensor, inserted = carried
    phase: dict[int, tuple[int, int]] = {}
    names: set[str] = set()
    producer = graph.producer(tensor)
    while producer is not None and producer.op_type == "Slice":
        form = _slice_form(graph, producer)
        if form is None:
            return None
        source, axes, steps, starts = form
        for axis, step, start in zip(axes, steps, starts):
            if axis in phase or step < 1:
                return None
            phase[axis] = (start % step, step)
        names.add(producer.name)
        tensor, producer = source, graph.producer(source)
    return (tensor, phase, names, inserted) if phase else None


def _space_to_depth_slices(graph: Graph, concat: Node) -> set[str]:
    """The Slices of a space-to-depth ending in this Concat: every (start mod step) phase of one map, joined over
    an axis none of them slices (an axis a Neg/Unsqueeze carrier inserted counts as unsliced); empty when the
    Concat is anything else."""
    chains = [chain for part in concat.inputs if (chain := _phase_chain(graph, part)) is not None]
    if not chains or len(chains) != len(concat.inputs):
        return set()
    source, first, _, inserted = chains[0]
    axes = {axis: step for axis, (_, step) in first.items()}
    rank = len(graph.shape(concat.inputs[0]) or ())
    if not rank:
        return set()
    axis = int(concat.attrs.get("axis", 0)) % rank
    if axis not in inserted and axis - sum(1 for a in inserted if a < axis) in axes:
        return set()
    phases = set()
    for tensor, phase, _, carried in chains:
        if tensor != source or carried != inserted or {a: step for a, (_, step) in phase.items()} != axes:
            return set()
        phases.add(tuple(sorted((a, r) for a, (r, _) in phase.items())))
    if len(phases) != len(chains) or len(phases) != math.prod(axes.values()):
        return set()
    return set().union(*(names for _, _, names, _ in chains))


def _slices_behind(graph: Graph, node: Node) -> set[str]:
    """The Slice itself, or the Slice a run of Neg/Unsqueeze carriers starts from."""
    while node.op_type in _PHASE_CARRIERS:
        producer = graph.producer(node.inputs[0])
        if producer is None:
            return set()
        node = producer
    return {node.name} if node.op_type == "Slice" else set()


def _space_to_depth(graph: Graph, node: Node, depth: int = 4) -> bool:
    """The strided Slice belongs to a space-to-depth: every path from it runs through Slices (and Neg/Unsqueeze
    carriers) only into a Concat of every (start mod step) phase of one map, which the toolkit lowers to one
    strided or gather convolution (YOLOv5's Focus, Swin's patch merging, EVA-02's interleaved rotary embedding)."""
    frontier = [node]
    for _ in range(depth):
        following = []
        for current in frontier:
            users = graph.consumers(current.outputs[0])
            if not users:
                return False
            for user in users:
                if user.op_type == "Slice" or user.op_type in _PHASE_CARRIERS:
                    following.append(user)
                elif user.op_type != "Concat" or not (_space_to_depth_slices(graph, user)
                                                      & _slices_behind(graph, current)):
                    return False
        if not following:
            return True  # every path ended in a space-to-depth Concat
        frontier = following
    return False


def _in_pattern(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """An op whose lone kernel is missing on this SoC but which the toolkit fuses into a pattern layer."""
    if any(PATTERNS[name](view.graph, view.node) for name in params["patterns"]):
        return None
    return f"{view.node.op_type} has no NPU kernel on {view.target.id} outside {params['what']}"


def _fused_or_constant(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """An op the NPU lacks in this precision still runs there when the toolkit fuses it into a pattern
    layer (exNorm for a written-out LayerNorm/RMSNorm) or, with `constant_operand`, folds a constant
    second operand into the neighbouring convolution (x / 3 becomes a scale)."""
    node, graph = view.node, view.graph
    if any(PATTERNS[name](graph, node) for name in params.get("patterns", ())):
        return None
    if params.get("constant_operand") and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]):
        return None
    return (f"{node.op_type} has no {view.precision.upper()} NPU kernel; only "
            f"{params['what']} run on the NPU in {view.precision.upper()}")


def _runtime_dividend(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """The NPU's Div divides a run-time tensor; a constant divided by a tensor (c / x, a reciprocal) has no
    NPU form, so the toolkit runs it on the CPU in float, unless a norm pattern absorbs it into exNorm."""
    node, graph = view.node, view.graph
    if len(node.inputs) < 2 or not graph.is_constant(node.inputs[0]) or graph.is_constant(node.inputs[1]):
        return None
    if any(PATTERNS[name](graph, node) for name in params.get("patterns", ())):
        return None
    return (f"{node.op_type} of a constant by a run-time tensor {list(graph.shape(node.inputs[1]) or ())} "
            f"(a reciprocal) has no NPU form outside {params['what']}; it runs on the CPU")


def _max_rank(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """An element-wise op the toolkit leaves in its own rank: above the NPU's 4-D form it runs on the CPU."""
    shape = view.graph.shape(view.node.inputs[0]) if view.node.inputs else None
    limit = int(params["rank"])
    if shape is None or len(shape) <= limit:
        return None
    return (f"{view.node.op_type} of a rank-{len(shape)} tensor {list(shape)}: the NPU kernel takes at most "
            f"{limit}-D and the toolkit keeps this op's rank; it runs on the CPU")


def _as_npu_4d(shape: tuple[Dim, ...]) -> Shape:
    """The 4-D form the toolkit holds a tensor in: NCHW as is, a 3-D [A, B, C] as (A, B, 1, C)."""
    if len(shape) == 4:
        return tuple(shape)
    if len(shape) == 3:
        return (shape[0], shape[1], 1, shape[2])
    return None


def _moving_transpose(graph: Graph, node: Node) -> bool:
    """A 4-D Transpose that moves data on its own (`moves_data`)."""
    src = graph.shape(node.inputs[0]) if node.inputs else None
    return node.op_type == "Transpose" and _static(src) and len(src) == 4 and moves_data(graph, node)


_TO_NHWC, _TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


def _channels_last_pair(graph: Graph, node: Node, limit: int = 64) -> bool:
    """A 4-D NCHW->NHWC Transpose with its inverse NHWC->NCHW downstream (or the inverse with its opener
    upstream): the toolkit runs the channels-last region between them in NCHW and both fold away."""
    perm = tuple(node.attrs.get("perm") or ())
    if perm not in (_TO_NHWC, _TO_NCHW):
        return False
    downstream = perm == _TO_NHWC
    want = _TO_NCHW if downstream else _TO_NHWC
    frontier, seen = [node], {node.name}
    while frontier and len(seen) <= limit:
        current = frontier.pop()
        if downstream:
            nxt = [c for out in current.outputs for c in graph.consumers(out)]
        else:
            nxt = [p for i in current.inputs if i and not graph.is_constant(i)
                   for p in (graph.producer(i),) if p is not None]
        for other in nxt:
            if other.name in seen:
                continue
            seen.add(other.name)
            if other.op_type == "Transpose":
                other_perm = tuple(other.attrs.get("perm") or ())
                if other_perm == want:
                    return True
                if other_perm == perm:
                    continue
            frontier.append(other)
    return False


def _is_activation_matmul(graph: Graph, node: Node | None) -> bool:
    return (node is not None and node.op_type == "MatMul" and len(node.inputs) > 1
            and not graph.is_constant(node.inputs[0]) and not graph.is_constant(node.inputs[1]))


def _attention_head_reshape(graph: Graph, node: Node) -> bool:
    """A Reshape splitting a feature map into attention heads or joining them back: it makes or takes an
    operand of a MatMul of two activations, directly or through the Split into q/k/v, and the toolkit
    folds it into exMatMul's operand layout."""
    def feeds_matmul(tensor: str, depth: int = 4) -> bool:
        for _ in range(depth):  # heads transposed into tokens (and K^T), q/k/v unbound and squeezed on the way
            users = _data_users(graph, tensor)
            if len(users) == 1 and users[0].op_type == "Split" and depth > 1:
                return any(feeds_matmul(o, depth - 1) for o in users[0].outputs)
            if len(users) != 1 or (users[0].op_type not in ("Transpose", "Squeeze", "Unsqueeze")
                                   and not _unit_move(graph, users[0])):
                break
            tensor = users[0].outputs[0]
        return _activation_matmul_operand(graph, tensor) is not None

    producer = graph.producer(node.inputs[0])
    for _ in range(2):  # the attention result transposed back before the join
        if producer is None or producer.op_type != "Transpose":
            break
        producer = graph.producer(producer.inputs[0])
    if _is_activation_matmul(graph, producer):
        return True
    if producer is not None and producer.op_type == "Split" and any(feeds_matmul(o) for o in producer.outputs):
        return True
    users = _data_users(graph, node.outputs[0])
    if len(users) == 1 and users[0].op_type == "Split":
        return any(feeds_matmul(o) for o in users[0].outputs)
    if len(users) > 1 and all(u.op_type == "Slice" for u in users):  # q, k, v sliced apart (CoAtNet)
        return any(feeds_matmul(u.outputs[0]) for u in users)
    return feeds_matmul(node.outputs[0])


def _group_norm_groups(graph: Graph, node: Node) -> tuple[int, int] | None:
    """(channels, groups) when `node` is a Reshape of GroupNorm as exporters write it: a map [1, C, H, W] (or a
    Conv1d map [1, C, L]) reshaped to [1, G, L'] into an InstanceNormalization, or that InstanceNormalization's
    result reshaped back."""
    if node.op_type != "Reshape" or not node.outputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not _static(src) or not _static(dst):
        return None
    users = graph.consumers(node.outputs[0])
    producer = graph.producer(node.inputs[0])
    if len(src) in (3, 4) and len(dst) == 3 and len(users) == 1 and users[0].op_type == "InstanceNormalization":
        return int(src[1]), int(dst[1])
    if (len(src) == 3 and len(dst) in (3, 4) and producer is not None
            and producer.op_type == "InstanceNormalization"):
        return int(dst[1]), int(src[1])
    return None


def _group_norm_reshape(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """GroupNorm's reshapes move the groups into the batch axis, (G, C/G, H, W): a Reshape layer on the NPU when
    a group's C/G channels are whole 8-byte groups (`align`: 4 FP16, 8 INT8), else on the CPU."""
    found = _group_norm_groups(view.graph, view.node)
    if found is None:
        return None
    channels, groups = found
    if groups == 1:
        return None  # one group: nothing moves into the batch axis
    align = params.get("align", {}).get(view.precision, 1)
    per_group = channels // groups if groups else 0
    if groups and channels % groups == 0 and per_group % align == 0:
        return None
    return (f"GroupNorm Reshape with {groups} groups of {per_group} channels, not a multiple of {align} "
            f"({view.precision}: 8-byte groups): the regrouping into the batch axis runs on the CPU")


def _map_rank3_output(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A rank-3 graph output leaves the NPU's 4-D layout through a layer named after the node making it that
    runs on the CPU: a Reshape out of (1, C, 1, N) for a feature map, a transpose back to [B, N, C] for tokens."""
    graph, node = view.graph, view.node
    align = params.get("align", {}).get(view.precision, 1)
    for name in node.outputs:
        shape = graph.shape(name)
        if name not in graph.outputs or not _static(shape) or len(shape) != 3:
            continue
        source: Node | None = node
        for _ in range(8):  # back through element-wise ops to a token MatMul whose CPU transpose leaves plain data
            if source is None or _const_matmul(graph, source) or source.op_type not in _LAYOUT_NEUTRAL:
                break
            source = graph.producer(_activation_input(graph, source))
        if source is not None and _misaligned_token_output(graph, source, align):
            return None  # the MatMul's transpose ran on the CPU: the Reshape into the output is free
        form = "tokens" if _token_form(graph, name) else "feature-map form"
        return (f"produces the rank-3 graph output '{name}' {list(shape)} ({form}); the Reshape out of the NPU's "
                "4-D layout into it runs on the CPU")
    return None


def _moves_across_channel(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A layout op that really moves data in the NPU's NC1HWC2 layout (C innermost): a 4-D Transpose that
    reorders non-unit axes, or a Reshape that changes the channel of the 4-D form. A Transpose right after
    a Reshape is merged into it (the Reshape then carries the move); other layout ops fold away."""
    graph, node = view.graph, view.node
    src, dst = view.in_shape(), view.out_shape()
    if not _static(src) or not _static(dst) or not src or not dst:
        return None  # a scalar has no layout to move
    if _group_norm_groups(graph, node) is not None:
        return _group_norm_reshape(view, params)
    if node.op_type == "Transpose":
        producer = graph.producer(node.inputs[0])
        if producer is not None and producer.op_type == "Reshape" and len(_data_users(graph, node.inputs[0])) == 1:
            return None
        if transpose_into_reshape(graph, node):
            return None
        if _matmul_result(graph, node.inputs[0]) or _activation_matmul_operand(graph, node.outputs[0]) is not None:
            return None  # folded into exMatMul's operand or result layout
        if _channels_last_pair(graph, node) or _to_form_channel(graph, node) or _direction_join(graph, node):
            return None
        if _channels_last_relabel(graph, node):
            return None
        if grid_unswap(graph, node):
            return None  # merged into the departition run (optimizer/catalog/_partitions.py)
        if _moving_transpose(graph, node):
            perm = list(view.attr("perm") or ())
            return f"Transpose perm {perm} of {list(src)} moves data (a gather in the NC1HWC2 layout)"
        return None
    if node.op_type == "Reshape" and _attention_head_reshape(graph, node):
        return None
    if pooled_heads_flatten(graph, node):
        return None
    users = _data_users(graph, node.outputs[0])
    if len(users) == 1 and _moving_transpose(graph, users[0]) and not _token_form(graph, node.inputs[0]):
        return (f"{node.op_type} {list(src)} -> {list(dst)} with the Transpose after it moves data across the "
                "channel axis")
    return _form_channel_change(view)


def _direction_join(graph: Graph, node: Node) -> bool:
    """The Transpose (0, 2, 1, 3) of a bidirectional LSTM/GRU's Y [seq, 2, batch, hidden] followed by the
    Reshape merging the directions into [seq, batch, 2*hidden], as torch exports it: exLSTM/exGRU write that
    joined form themselves, at any batch."""
    producer = graph.producer(node.inputs[0])
    shape = graph.shape(node.inputs[0])
    if (producer is None or producer.op_type not in ("LSTM", "GRU") or producer.outputs[0] != node.inputs[0]
            or tuple(node.attrs.get("perm") or ()) != (0, 2, 1, 3) or not _static(shape) or shape[1] != 2):
        return False
    user = _only_user(graph, node.outputs[0])
    out = graph.shape(user.outputs[0]) if user is not None and user.op_type == "Reshape" else None
    return _static(out) and tuple(out) == (shape[0], shape[2], 2 * shape[3])


def _matmul_result(graph: Graph, tensor: str, depth: int = 4) -> bool:
    """The tensor is a MatMul's result, directly or through element-wise ops (MViTv2's residual pooling adds q to
    P.V, CoaT adds its convolutional position term): it is still held in the MatMul's layout."""
    return _up_to(graph, tensor, lambda n: n.op_type == "MatMul", lambda n: n.op_type in _LAYOUT_NEUTRAL,
                  depth) is not None


def _up_to(graph: Graph, tensor: str, stop: Callable[[Node], bool], through: Callable[[Node], bool],
           depth: int) -> Node | None:
    """The first producer up the tensor's activation inputs for which `stop` holds, passing only nodes
    `through` admits, within `depth` producers; None otherwise."""
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None:
            return None
        if stop(node):
            return node
        if not through(node):
            return None
        tensor = _activation_input(graph, node)
    return None


def _form_channel_change(view: LayerView) -> str | None:
    """A Reshape whose 4-D form (NCHW; a 3-D [A, B, C] as (A, B, 1, C)) has another channel than its input's,
    unless it only regroups the token axis of a [B, C, 1, N] tensor or splits/joins attention heads."""
    graph, node = view.graph, view.node
    src, dst = view.in_shape(), view.out_shape()
    if (not _static(src) or not _static(dst) or not src or not dst
            or node.op_type not in ("Reshape", "Squeeze", "Unsqueeze", "Flatten")
            or _group_norm_groups(graph, node) is not None):
        return None
    if node.op_type == "Reshape" and _attention_head_reshape(graph, node):
        return None
    head = _only_user(graph, node.outputs[0]) if node.outputs else None
    if _window_head_transpose(graph, head):
        return None  # the head Transpose of 4-D windows carries the relayout (RKNN-WINDOW-TOKENS)
    if src[-1] == dst[-1] and len(src) in (3, 4) and _token_form(graph, node.inputs[0]):
        return None  # regroups the token axis of a [B, C, 1, N] tensor (e.g. LeViT's subsample)
    axis = channel_axis(graph, _activation_input(graph, node))
    carried = _carried_axis(src, axis, dst) if axis is not None else None
    if (axis is not None and carried is not None and dst[carried] == src[axis] and len(dst) <= 4
            and src[0] == dst[0]):
        return None  # keeps the batch and carries the channel whole ([1,H,W,C] -> [1,HW,C]): pixels relabelled
    if len(_unit_stripped(src)) <= 1 and len(dst) == 4 and dst[0] > 1 and dst[2] * dst[3] > 1:
        return (f"{node.op_type} {list(src)} -> {list(dst)} spreads a vector over {dst[0]} batch rows of "
                f"{dst[2]}x{dst[3]} pixels (a run-time k x k filter bank): a gather, on the CPU")
    if batch_channel_split(src, dst):
        return None
    a, b = _as_npu_4d(src), _as_npu_4d(dst)
    if a is None or b is None or a[1] == b[1] or _unit_stripped(src) == _unit_stripped(dst):
        return None
    if len(_unit_stripped(src)) <= 1:
        return None  # a vector ([1, C, 1, 1]: one run of channel blocks) regroups without a gather
    return f"{node.op_type} {list(src)} -> {list(dst)} moves data across the channel axis"


def batch_channel_split(src: Sequence[Any], dst: Sequence[Any]) -> bool:
    """[1, B*C, H, W] <-> [B, C, H, W] with C > 1 (deformable attention's per-head value maps): each batch row
    is a whole run of channel blocks, so the toolkit relabels the rows without a gather (probes bcast_c_* and
    deform_*: NPU on rk3566 for C = 4..32 in FP16, 8..32 in INT8). C = 1 is not: the toolkit transposes it."""
    if len(src) != 4 or len(dst) != 4 or tuple(src[2:]) != tuple(dst[2:]):
        return False
    one, many = (src, dst) if src[0] == 1 else (dst, src)
    return bool(one[0] == 1 and many[0] > 1 and many[1] > 1 and one[1] == many[0] * many[1])


def _channels_last_relabel(graph: Graph, node: Node) -> bool:
    """A map's NCHW -> NHWC Transpose whose readers all take the last axis as the channel (a LayerNorm over it, a
    token MatMul, a reshape into tokens keeping it, an element-wise op): the toolkit keeps the map in NC1HWC2 and
    lets them read its channel, so the transpose has no layer (Swin's and ViT's patch embedding)."""
    if tuple(node.attrs.get("perm") or ()) != _TO_NHWC or channel_axis(graph, node.inputs[0]) != 1:
        return False
    out = graph.shape(node.outputs[0])
    users = _data_users(graph, node.outputs[0])
    if not _static(out) or not users:
        return False
    for user in users:
        if user.op_type == "LayerNormalization":
            if int(user.attrs.get("axis", -1)) % 4 != 3:
                return False
        elif user.op_type in ("MatMul", "Gemm"):
            if user.inputs[0] != node.outputs[0] or len(user.inputs) < 2 or not graph.is_constant(user.inputs[1]):
                return False
        elif user.op_type == "Reshape":
            after = graph.shape(user.outputs[0])
            if not _static(after) or not after or after[-1] != out[-1]:
                return False
        elif user.op_type not in ("Add", "Sub", "Mul", "Div"):
            return False
    return True


def _to_form_channel(graph: Graph, node: Node) -> bool:
    """A 4-D Transpose that brings the toolkit's channel (check channel_axis) to axis 1 and keeps the order of
    the other non-unit axes: the data is already held that way (NCHW with C innermost), so it is a relabel."""
    src = graph.shape(node.inputs[0]) if node.inputs else None
    perm = tuple(node.attrs.get("perm") or ())
    if not _static(src) or len(src) != 4 or len(perm) != 4:
        return False
    channel = channel_axis(graph, node.inputs[0])
    if channel is None or perm[1] != channel:
        return False
    rest = [axis for axis in perm if axis != channel and src[axis] != 1]
    return rest == sorted(rest)


def _token_form(graph: Graph, tensor: str, depth: int = 32) -> bool:
    """The tensor holds tokens with the channel last, made by a token MatMul, a (0, 2, 1) Transpose or a
    LayerNorm, possibly through element-wise ops and reshapes/slices that keep the last axis: the toolkit
    holds it as [B, C, 1, N], so the token axes can be regrouped without crossing the channel."""
    last = graph.shape(tensor)
    for _ in range(depth):
        node = graph.producer(tensor)
        if node is None or last is None:
            return False
        if node.op_type in ("MatMul", "Gemm") and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]):
            return True
        if node.op_type in ("LayerNormalization", "RMSNormalization"):
            return True
        if node.op_type == "Transpose":
            return tuple(node.attrs.get("perm") or ()) == (0, 2, 1)
        if node.op_type in ("Reshape", "Slice", "Flatten"):
            before = graph.shape(node.inputs[0])
            if before is None or not before or before[-1] != last[-1]:
                return False
        elif node.op_type not in _LAYOUT_NEUTRAL and node.op_type != "BatchNormalization":
            return False
        source = _activation_input(graph, node)
        others = _other_activations(graph, node, source) if node.op_type in _LAYOUT_NEUTRAL and depth > 1 else []
        if any(_token_form(graph, other, min(depth - 1, _SECOND_LOOK)) for other in others):
            return True  # a residual Add: the branch fixes the layout
        tensor = source
    return False


def _activation_input(graph: Graph, node: Node) -> str:
    """The input carrying the activation: computed by a node or fed by the graph, preferring the one shaped like
    the output (an affine's scale may be a weight the IR does not mark constant, e.g. ResMLP's alpha)."""
    out = graph.shape(node.outputs[0]) if node.outputs else None
    runtime = [i for i in node.inputs if i and not graph.is_constant(i)]
    live = [i for i in runtime if graph.producer(i) is not None or i in graph.inputs]
    for group in (live, runtime):
        for name in group:
            if graph.shape(name) == out:
                return name
    return (live or runtime or [""])[0]


_LAYOUT_NEUTRAL = frozenset({"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Erf", "Gelu", "HardSwish",
                             "HardSigmoid", "Clip", "LeakyRelu", "Pow", "Sqrt", "Identity", "Dropout", "Softplus"})


def _token_layout_end(graph: Graph, tensor: str, upstream: bool, depth: int = 8) -> bool:
    """True when walking through element-wise ops from `tensor` reaches a node that already holds tokens in
    the convolution layout: a Transpose (0,2,1) or another token MatMul with constant weights."""
    for _ in range(depth):
        nodes = (graph.producer(tensor),) if upstream else graph.consumers(tensor)
        if len(nodes) != 1 or nodes[0] is None:
            return False
        node = nodes[0]
        if node.op_type == "Transpose" and tuple(node.attrs.get("perm") or ()) == (0, 2, 1):
            return True
        if node.op_type in ("MatMul", "Gemm") and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]):
            return True
        if node.op_type not in _LAYOUT_NEUTRAL:
            return False
        tensor = next((i for i in node.inputs if i and not graph.is_constant(i)), "") if upstream \
            else node.outputs[0]
        if not tensor:
            return False
    return False


def _reaches_output(graph: Graph, tensor: str, depth: int = 8) -> bool:
    """True when `tensor` flows through element-wise ops (or a last-axis (Log)Softmax) only into a graph output."""
    for _ in range(depth):
        if tensor in graph.outputs:
            return True
        users = graph.consumers(tensor)
        if len(users) != 1 or users[0].op_type not in _LAYOUT_NEUTRAL | {"Softmax", "LogSoftmax"}:
            return False
        tensor = users[0].outputs[0]
    return False


def _misaligned_token_output(graph: Graph, node: Node, align: int) -> bool:
    """A token MatMul (constant weights, [B, N, C] with N > 1) whose result reaches a graph output and whose
    transpose back to [B, N, C] misses whole 8-byte groups (`align` elements)."""
    src = graph.shape(node.inputs[0]) if node.inputs else None
    out = graph.shape(node.outputs[0]) if node.outputs else None
    if (not _const_matmul(graph, node) or not _static(src) or len(src) != 3 or src[1] == 1 or not _static(out)
            or not _reaches_output(graph, node.outputs[0])):
        return False
    return not _whole_groups(out[1:], align)


def _token_matmul_transposes(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A MatMul with constant weights on a [B, N, C] token tensor runs as a 1x1 convolution on the
    toolkit's [B, C, 1, N] form; token tensors stay in that form inside the graph (through LayerNorm, GELU,
    residual adds), but the one that leaves as a graph output is transposed back to [B, N, C]."""
    node, graph = view.node, view.graph
    src = view.input_shape(0)
    if (len(node.inputs) < 2 or not graph.is_constant(node.inputs[1]) or not _static(src) or len(src) != 3
            or src[1] == 1):
        return None
    align = params.get("align", {}).get(view.precision, 1)
    if not _misaligned_token_output(graph, node, align):
        return None  # aligned: the transpose runs on the NPU, the output's Reshape does not (RKNN-MAP-OUTPUT)
    return (f"{node.op_type} on tokens {list(src)} makes a graph output; the transpose from the toolkit's "
            "[B, C, 1, N] form back to [B, N, C] moves data across the channel axis")


def _output_relayout(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A graph output of rank below 4 made from a 4-D NPU layout: the toolkit appends a Reshape layer. When the
    output is a map's rows (Reshape [1,C,H,W] -> [1,C,H*W]) reached only through ops that commute with that
    reshape, the toolkit moves those ops before it and the output's Reshape is the rows Reshape itself."""
    graph, node = view.graph, view.node
    precision = "fp16" if node.op_type in params.get("float_outputs", ()) else view.precision
    align = params["align"][precision]
    if _rows_reshape(graph, node):
        end = _commuted_output(graph, node.outputs[0])
        shape = graph.shape(end) if end else None
        if end and _static(shape) and len(shape) in params["ranks"] and shape[-1] % align:
            return (f"flattens a map into the rows of the rank-{len(shape)} graph output '{end}' {list(shape)}, last "
                    f"dim not a multiple of {align} ({view.precision} channel group); the ops after it move before "
                    "it and this Reshape out of the NPU layout runs on the CPU")
        if end != node.outputs[0]:
            return None
    for name in node.outputs:
        shape = graph.shape(name)
        if (name in graph.outputs and _static(shape) and len(shape) in params["ranks"]
                and shape[-1] % align):
            if _commutes(graph, node) and _rows_reshape(graph, _commuted_source(graph, node)):
                return None  # the rows Reshape before it carries the relayout
            return (f"produces the rank-{len(shape)} graph output '{name}' {list(shape)}, last dim not a "
                    f"multiple of {align} ({precision} channel group); the Reshape out of the NPU layout "
                    "that the toolkit appends runs on the CPU ('Unkown op target: 0')")
    return None


_COMMUTING_UNARY = frozenset({"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Clip", "LeakyRelu",
                              "Softplus", "Gelu", "Neg", "Abs", "Identity", "Dropout"})


def _rows_reshape(graph: Graph, node: Node | None) -> bool:
    """A Reshape/Flatten of a map [1, C, H, W] (H*W > 1) into its rows [1, C, H*W], or a last-axis Concat of such
    rows (a detector head joining its levels: the joined rows are still the toolkit's map)."""
    if node is not None and node.op_type == "Concat" and node.attrs.get("axis") in (2, -1) and node.inputs:
        return all(_rows_reshape(graph, graph.producer(t)) for t in node.inputs if t)
    if node is None or node.op_type not in ("Reshape", "Flatten") or not node.inputs or not node.outputs:
        return False
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    return (_static(src) and _static(dst) and len(src) == 4 and len(dst) == 3 and src[0] == dst[0] == 1
            and src[1] == dst[1] and src[2] * src[3] == dst[2] > 1 and src[2] > 1)


def _commutes(graph: Graph, node: Node) -> bool:
    """An op the toolkit can apply to the map before its rows Reshape: a unary activation, an element-wise op
    whose other operands are constants, or a softmax over the channel of [1, C, N]."""
    runtime = [i for i in node.inputs if i and not graph.is_constant(i)]
    if len(runtime) != 1 or len(node.outputs) != 1:
        return False
    if node.op_type in _COMMUTING_UNARY or node.op_type in ("Add", "Sub", "Mul", "Div"):
        return True
    shape = graph.shape(runtime[0])
    axis = node.attrs.get("axis")
    return (node.op_type in ("Softmax", "LogSoftmax") and shape is not None and len(shape) == 3
            and axis is not None and axis % 3 == 1)


def _commuted_source(graph: Graph, node: Node, depth: int = 6) -> Node | None:
    """Walking back from `node` through commuting ops with a single reader each, the first node that is not one."""
    for _ in range(depth):
        runtime = [i for i in node.inputs if i and not graph.is_constant(i)]
        producer = graph.producer(runtime[0]) if runtime else None
        if producer is None or len(graph.consumers(runtime[0])) != 1:
            return producer
        if not _commutes(graph, producer):
            return producer
        node = producer
    return None


def _commuted_output(graph: Graph, tensor: str, depth: int = 6) -> str | None:
    """The graph output `tensor` reaches through commuting ops with a single reader each, if any."""
    for _ in range(depth):
        if tensor in graph.outputs:
            return tensor
        users = graph.consumers(tensor)
        if len(users) != 1 or not _commutes(graph, users[0]):
            return None
        tensor = users[0].outputs[0]
    return None


def _batch_major_transpose(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A rank-3 Transpose of a [N, B, C] tensor with N > 1 (an RNN's sequence-first output): the toolkit
    holds it as (N, B, 1, C), so bringing N out of the batch axis is a gather."""
    src = view.in_shape()
    if view.node.op_type != "Transpose" or not _static(src) or len(src) != 3 or src[0] == 1:
        return None
    perm = tuple(view.attr("perm") or (2, 1, 0))
    if perm[0] == 0:
        return None
    moved = [axis for axis in perm if src[axis] != 1]
    if moved == sorted(moved) and channel_axis(view.graph, view.node.inputs[0]) == 2:
        return None  # tokens [N, 1, C] of a token MatMul are held as (1, C, 1, N): moving the unit axis is free
    if _exmatmul_heads(view.graph, view.node):
        return None
    return f"Transpose perm {list(perm)} of {list(src)} moves the non-unit leading axis out of the batch axis"


def _seq_first_heads(graph: Graph, node: Node) -> bool:
    """A rank-3 Transpose of sequence-first heads [N, H, d] -> [H, N, d] (nn.MultiheadAttention as TorchScript
    writes it): it keeps a layer of its own beside the head-splitting Reshape before it."""
    src = graph.shape(node.inputs[0])
    return (node.op_type == "Transpose" and _static(src) and len(src) == 3 and src[0] != 1 and src[1] != 1
            and tuple(node.attrs.get("perm") or ()) == (1, 0, 2))


def _exmatmul_heads(graph: Graph, node: Node) -> bool:
    """Sequence-first attention heads [N, H, d] (nn.MultiheadAttention as TorchScript writes it) brought to or
    from [H, N, d] around exMatMul: the toolkit holds them as (H, d, 1, N) on both sides, so the move is its
    operand or result layout, not a transpose."""
    src = graph.shape(node.inputs[0])
    if not _static(src) or len(src) != 3 or src[2] == 1:
        return False
    producer = graph.producer(node.inputs[0])
    while producer is not None and _unit_move(graph, producer):
        producer = graph.producer(producer.inputs[0])
    return _is_activation_matmul(graph, producer) or _activation_matmul_operand(graph, node.outputs[0]) is not None


def _into_batch_transpose(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A rank-3 Transpose that brings a non-unit axis into the leading (batch) axis and reorders the data, e.g. a
    CRNN's map [1, C, T] -> sequence-first [T, 1, C]: a real transpose layer (a unit-axis swap is a Reshape)."""
    src = view.in_shape()
    if view.node.op_type != "Transpose" or not _static(src) or len(src) != 3:
        return None
    perm = tuple(view.attr("perm") or (2, 1, 0))
    if perm[0] == 0 or src[perm[0]] == 1:
        return None
    moved = [axis for axis in perm if src[axis] != 1]
    if moved == sorted(moved) or _exmatmul_heads(view.graph, view.node):
        return None
    return f"Transpose perm {list(perm)} of {list(src)} moves a non-unit axis into the batch axis, reordering the data"


def _output_concat_relayout(view: LayerView, params: Mapping[str, Any]) -> str | None:
    if not _output_token_concat(view.graph, view.node):
        return None
    return ("Concat on axis 1 of rank-3 tensors into a graph output: the toolkit joins them in (C, 1, 1, N) form "
            "and the Reshape back to [1, C, N] moves data across the channel axis")


def _spatial_into_channel(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """Flattening a 4-D map with H*W > 1 into a vector (AlexNet's 256x6x6 -> 9216): every pixel moves into the
    channel axis of the NC1HWC2 layout, a gather."""
    src, dst = view.in_shape(), view.out_shape()
    if not _static(src) or not _static(dst) or len(src) != 4 or src[2] * src[3] == 1:
        return None
    if _in_group_norm(view.graph, view.node):
        return None  # the Reshape into a GroupNorm's [N, G, -1] fuses into its exNorm
    if len(_unit_stripped(dst)) > 1 or math.prod(src[1:]) != math.prod(dst[1:]):
        return None
    return f"{view.node.op_type} {list(src)} -> {list(dst)} folds {src[2]}x{src[3]} pixels into the channel axis"


def _pixels_into_channel(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """rk3566: as spatial_into_channel, except GroupNorm's reshape into [1, G, L], which is exNorm's own layout."""
    if _group_norm_groups(view.graph, view.node) is not None:
        return None
    src, dst = view.in_shape(), view.out_shape()
    form = _as_npu_4d(tuple(dst)) if _static(dst) and len(dst) == 3 else None
    if _static(src) and len(src) == 4 and form is not None and form[1] == src[1]:
        return None  # [1, C, H, W] -> [1, C, HW] is held as (1, C, 1, HW): the pixels stay in W, the channel stays
    return _spatial_into_channel(view, params)


def _channel_reduce(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """The NPU's ReduceMax reduces the channel of the toolkit's 4-D form only: axis 1 of a 4-D tensor, or axis 2
    of a rank-5 [1, A, C, H, W] (held as (A, C, H, W)); H, W, the batch axis and higher ranks run on the CPU, and
    so does every rank-3 reduce the corpus holds (over either axis, whichever axis the toolkit took as channel)."""
    graph, node = view.graph, view.node
    src = graph.shape(node.inputs[0]) if node.inputs else None
    if src is None or len(src) < 3:
        return None
    axes = reduce_axes(graph, node)
    rank = len(src)
    reduced = sorted({a % rank for a in axes}) if axes else list(range(rank))
    if (rank == 4 and reduced == [1]) or (rank == 5 and src[0] == 1 and reduced == [2]):
        return None
    return (f"{node.op_type} over axes {reduced} of a rank-{rank} tensor {list(src)}: the NPU reduces only the "
            "channel of its 4-D form")


def _tile_repeats(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """The NPU's Tile repeats one axis of a 4-D map (channel, H or W); several axes at once, or a tensor of
    another rank, is a CPU Tile, unless every repeated axis has size 1 at rank <= 4 (a broadcast: an Expand)."""
    graph, node = view.graph, view.node
    src = graph.shape(node.inputs[0]) if node.inputs else None
    value = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    if src is None or value is None:
        return None
    repeats = [int(r) for r in value.reshape(-1)]
    tiled = [axis for axis, r in enumerate(repeats) if r != 1]
    if not tiled or (len(src) == 4 and len(tiled) == 1):
        return None  # every repeat 1: an identity the toolkit drops, whatever the rank
    if len(src) <= 4 and all(src[axis] == 1 for axis in tiled):
        return None  # repeats of size-1 axes only: a broadcast, rewritten as an NPU Expand (rank 5 is not)
    return (f"Tile of a rank-{len(src)} tensor {list(src)} repeating axes {tiled} ({repeats}): the NPU tiles one "
            "axis of a 4-D map only")


def _identity_scatter(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A ScatterND whose build-time indices list every element of its data in order overwrites all of it: its
    output is its updates, and the toolkit's optimiser removes it (torch writes `x[:, :, a:, b:] = y` with
    a = b = 0 this way). Any other write (a part, a reordering, run-time indices) is a CPU ScatterND."""
    graph, node = view.graph, view.node
    reduction = node.attrs.get("reduction", "none")
    if len(node.inputs) < 3 or (reduction or "none") != "none":
        return f"ScatterND with reduction '{reduction}' runs on the CPU"
    data, indices, updates = (graph.shape(t) for t in node.inputs[:3])
    if not (_static(data) and _static(indices) and _static(updates)) or not indices:
        return "ScatterND with unknown shapes runs on the CPU"
    depth = indices[-1]
    value = build_time_value(graph, node.inputs[1])
    if value is not None and _last_axis_slice(value, tuple(data)):
        return None  # rewritten as a Split of the data and a Concat with the updates
    if not 0 < depth <= len(data) or tuple(indices[:-1]) != tuple(data[:depth]) or tuple(updates) != tuple(data):
        return (f"ScatterND writes {list(indices[:-1])} of data {list(data)}: a partial write runs on the CPU "
                "(only a write of every element, or of one contiguous piece of the last axis, is rewritten)")
    if value is None:
        return "ScatterND with run-time indices runs on the CPU"
    grid = np.moveaxis(np.indices(tuple(data[:depth]), dtype=np.int64), 0, -1)
    if value.shape != grid.shape or not np.array_equal(value, grid):
        return "ScatterND indices do not list the data's elements in order: it runs on the CPU"
    return None


def _last_axis_slice(indices: np.ndarray, data: tuple[int, ...]) -> bool:
    """The indices list, in row-major order, every element of `data` whose last coordinate lies in one
    contiguous range [lo, hi) (DETR decoders' `boxes[..., :2] = ...`): the toolkit splits the data along its last
    axis and concatenates the updates in (probe scatter_last_*)."""
    rank = len(data)
    if indices.ndim != rank + 1 or indices.shape[-1] != rank or tuple(indices.shape[:-2]) != data[:-1]:
        return False
    lo = int(indices.reshape(-1, rank)[0, -1])
    width = indices.shape[-2]
    if lo < 0 or lo + width > data[-1] or width == data[-1]:
        return False
    grid = np.moveaxis(np.indices((*data[:-1], width), dtype=np.int64), 0, -1)
    grid[..., -1] += lo
    return bool(np.array_equal(indices, grid))


def _build_time_only(graph: Graph, tensor: str, limit: int = 256) -> bool:
    """The tensor is computed from constants alone (ConViT's positional scores from fixed relative indices): the
    toolkit folds it, whatever its size."""
    pending, seen = [tensor], set()
    while pending:
        name = pending.pop()
        if name in seen or graph.is_constant(name):
            continue
        seen.add(name)
        producer = graph.producer(name)
        if producer is None or len(seen) > limit:
            return False
        pending.extend(t for t in (*producer.inputs, *producer.outer_inputs) if t)
    return True


def _free_grid_merge(graph: Graph, node: Node, align: int) -> bool:
    """`node` merges a grid of attention scores [1,h,qh,qw,kh,kw] back into [1,h,N,M] with M a whole number of
    `align`-element groups (an NPU Reshape, RKNN-SCORE-GRID)."""
    merge = _score_grid_merge(graph, node, columns_whole=False)
    return merge is not None and merge[1][3] % align == 0


def _score_grid_merge(graph: Graph, node: Node, columns_whole: bool) -> tuple[list[int], list[int]] | None:
    """The static dims of a Reshape of a grid of attention scores [1,h,qh,qw,kh,kw] back into a 4-D [.., M]
    (with M = kh*kw when `columns_whole`), else None."""
    if node.op_type != "Reshape" or not node.inputs:
        return None
    src, dst = graph.shape(node.inputs[0]), graph.shape(node.outputs[0])
    if not (_static(src) and _static(dst)) or len(src) != 6 or len(dst) != 4:
        return None
    if columns_whole and dst[3] != src[4] * src[5]:
        return None
    if not _merges_score_grid(graph, node, tuple(src)):
        return None
    return list(src), list(dst)


def _merges_score_grid(graph: Graph, node: Node, grid: tuple[int, ...], depth: int = 6) -> bool:
    """`node`'s input is a score grid (`_score_grid_view`), directly or through the element-wise adds of
    relative positions onto it (each step followed along its operand shaped like the grid)."""
    current = graph.producer(node.inputs[0])
    for _ in range(depth):
        if current is None:
            return False
        if _score_grid_view(graph, current) is not None:
            return True
        if current.op_type not in ("Add", "Sub", "Mul", "Div"):
            return False
        grids = [t for t in graph.runtime_inputs(current) if graph.shape(t) == grid]
        current = graph.producer(grids[0]) if grids else None
    return False


def _map_softmax_plane(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """rk3588 runs a Softmax over the last axis of a map (1,C,H,W) (heads in the channel axis, as CaiT's talking
    heads and MViTv2's relative-position scores reach it) on the NPU only while one channel's plane H*W fits;
    attention scores straight from a MatMul are held with the heads in the batch axis, (h,N,1,M), one row a plane."""
    graph, node = view.graph, view.node
    shape = graph.shape(node.inputs[0]) if node.inputs else None
    if not _static(shape) or len(shape) != 4 or shape[0] != 1 or node.attrs.get("axis", -1) not in (3, -1):
        return None
    if _from_matmul(graph, node.inputs[0]) or _build_time_only(graph, node.inputs[0]):
        return None
    limit = int(params["max_plane"][view.precision])
    merge = graph.producer(node.inputs[0])
    if merge is not None and _free_grid_merge(graph, merge, int(params["grid_align"][view.precision])):
        limit = int(params["max_plane"]["fp16"])  # measured: INT8 then keeps the FP16 plane (probe relpos_*)
    plane = shape[2] * shape[3]
    if plane <= limit:
        return None
    return (f"Softmax over the last axis of a map {list(shape)}: a plane of {shape[2]}x{shape[3]} = {plane} exceeds "
            f"{limit} elements in {view.precision.upper()}; it runs on the CPU")


Condition = Callable[[LayerView, Mapping[str, Any]], "str | None"]


def _source_axes(src: Sequence[int], dst: Sequence[int]) -> list[int] | None:
    """For a Reshape that only splits axes (each output axis inside one input axis), the input axis each output
    axis comes from; None when an output axis straddles input axes."""
    labels: list[int] = []
    i, left = 0, 1
    for size in dst:
        while i < len(src) and left == 1 and src[i] == 1 and size != 1:
            i += 1
        if i >= len(src):
            if size != 1:
                return None
            labels.append(len(src) - 1)
            continue
        if left == 1:
            left = src[i]
        if left % size:
            return None
        labels.append(i)
        left //= size
        if left == 1:
            i += 1
    return labels


def _reorders_tokens(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """A rank > 4 Transpose after a Reshape that splits a tensor's axes (an attention's qkv/head split): moving
    pieces of the channel to the front is a block move the toolkit does with Reshape layers, and interleaving the
    pieces of two pixel axes is a 2-D window (exWindow), but reordering the pieces of one token axis among
    themselves is a real transpose, which rk3566 runs on the CPU together with the Reshape before it (Hiera's
    mask-unit split of [1, 3136, 576] into [1, 64, 49, 3, 2, 96], perm (3,0,4,2,1,5))."""
    graph, node = view.graph, view.node
    transpose = node
    if node.op_type == "Reshape":
        users = graph.consumers(node.outputs[0]) if node.outputs else ()
        if len(users) != 1 or users[0].op_type != "Transpose":
            return None
        transpose = users[0]
    if transpose.op_type != "Transpose" or _next_reshape(graph, transpose) is not None:
        return None  # a reshape right after takes the composed move (_reorder_before)
    return _token_reorder(graph, transpose)


def _reorder_before(view: LayerView) -> str | None:
    """A Reshape right after a token-reordering rank > 4 Transpose: the toolkit composes the split, the transpose
    and this reshape and names the CPU layers after this one (probe mu:8:8:16:1: qf_rs, qf_rs_tp)."""
    graph, node = view.graph, view.node
    producer = graph.producer(node.inputs[0]) if node.op_type in RESHAPES and node.inputs else None
    if producer is None or producer.op_type != "Transpose" or len(graph.consumers(producer.outputs[0])) != 1:
        return None
    reason = _token_reorder(graph, producer)
    return None if reason is None else f"{node.op_type} takes the composed move of {producer.name}: {reason}"


def _token_reorder(graph: Graph, transpose: Node) -> str | None:
    """Why a rank > 4 Transpose right after an axis-splitting Reshape is a real data move, or None."""
    reshape = graph.producer(transpose.inputs[0]) if transpose.inputs else None
    mid = graph.shape(transpose.inputs[0]) if transpose.inputs else None
    if reshape is None or reshape.op_type != "Reshape" or not _static(mid) or len(mid) <= 4:
        return None
    before = graph.shape(reshape.inputs[0])
    channel = channel_axis(graph, reshape.inputs[0])
    if not _static(before) or channel is None:
        return None
    labels = _source_axes(before, mid)
    if labels is None:
        return None
    perm = tuple(transpose.attrs.get("perm") or reversed(range(len(mid))))
    order = [axis for axis in perm if mid[axis] != 1]
    if order and labels[max(order)] == channel and labels[order[-1]] != channel:
        return (f"Transpose perm {list(perm)} of {list(mid)} moves the channel of {list(before)} out of the innermost "
                "axis (channels as rows, e.g. cross-covariance attention): a real transpose")
    others = [axis for axis in perm if mid[axis] != 1 and labels[axis] != channel]
    crossed = {labels[a] for i, a in enumerate(others) for b in others[i + 1:] if a > b}
    crossed |= {labels[b] for i, a in enumerate(others) for b in others[i + 1:] if a > b}
    if len(crossed) != 1:
        return None  # nothing reordered, or pieces of two axes interleaved: a 2-D window (exWindow, NPU)
    return (f"Transpose perm {list(perm)} of {list(mid)} reorders pieces of one token/pixel axis of "
            f"{list(before)} among themselves: a real transpose")


_CHAIN_OPS = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Gather", "Split"})


def _reshape_pixels_into_channel(view: LayerView, params: Mapping[str, Any]) -> str | None:
    return _pixels_into_channel(view, params) if view.node.op_type in RESHAPES else None


_ALONE: tuple[Condition, ...] = (_moves_across_channel, _batch_major_transpose, _into_batch_transpose,
                                 _reorders_tokens, _reshape_pixels_into_channel)


def _next_reshape(graph: Graph, node: Node) -> Node | None:
    users = graph.consumers(node.outputs[0]) if node.outputs else ()
    return users[0] if len(users) == 1 and users[0].op_type in RESHAPES else None


def _reshape_run_moves(view: LayerView, params: Mapping[str, Any], depth: int = 8) -> str | None:
    """The own verdict of an earlier reshape in the run of reshapes that ends at this node (the toolkit folds a
    run of reshapes into one layer, named after the last)."""
    graph, node = view.graph, view.node
    for _ in range(depth):
        producer = graph.producer(_activation_input(graph, node)) if node.inputs else None
        if producer is None or producer.op_type not in RESHAPES or len(graph.consumers(producer.outputs[0])) != 1:
            return None
        reason = _moves_alone(_member_view(view, producer), params)
        if reason is not None:
            return f"{producer.op_type} {producer.name}: {reason}"
        node = producer
    return None


def _chain_member(graph: Graph, node: Node | None) -> bool:
    """A pure layout op the toolkit merges with its neighbours: reshapes, transposes, and the constant-index
    Gather/Split that unbind q, k and v."""
    if node is None or node.op_type not in _CHAIN_OPS:
        return False
    return node.op_type != "Gather" or (len(node.inputs) > 1 and graph.is_constant(node.inputs[1]))


def _reorders(graph: Graph, node: Node) -> bool:
    """A Transpose of rank above 4 that changes the order of the non-unit axes: it has no 4-D form of its own,
    so the toolkit composes it with the layout ops around it."""
    src = graph.shape(node.inputs[0]) if node.inputs else None
    if node.op_type != "Transpose" or not _static(src) or len(src) <= 4:
        return False
    perm = node.attrs.get("perm") or tuple(reversed(range(len(src))))
    moved = [axis for axis in perm if src[axis] != 1]
    return moved != sorted(moved)


def _moves_alone(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """The verdict a layout op gets on its own (before the chain it sits in is merged); none inside a stretch
    of layout ops that composes to a reshape keeping the channel (`in_identity_run`)."""
    if in_identity_run(view.graph, view.node):
        return None
    for condition in _ALONE:
        reason = condition(view, params)
        if reason is not None:
            return reason
    return None


def _member_view(view: LayerView, node: Node) -> LayerView:
    return LayerView(view.graph, node, view.family, view.target, view.precision, view.kind)


def _chain_mover_before(view: LayerView, params: Mapping[str, Any], depth: int = 12) -> Node | None:
    """The first op upstream in the same chain of layout ops that moves data (a reordering Transpose or an op
    whose own verdict is a move): the toolkit lowers the whole chain from there, in layers named after it."""
    graph, node = view.graph, view.node
    mover: Node | None = None
    for _ in range(depth):
        producer = graph.producer(_activation_input(graph, node)) if node.inputs else None
        if not _chain_member(graph, producer):
            break
        assert producer is not None
        if _reorders(graph, producer):
            own = _moves_alone(_member_view(view, producer), params) or _token_reorder(graph, producer)
            mover = producer if own is None else None  # a mover that transposes alone breaks the chain
        node = producer
    return mover


def _chain_moves_after(view: LayerView, params: Mapping[str, Any], limit: int = 48) -> str | None:
    """The own verdict of the first later member of the chain that moves data (walking down the chain)."""
    graph = view.graph
    frontier, seen = [view.node], {view.node.name}
    while frontier and len(seen) <= limit:
        current = frontier.pop(0)
        for user in (u for out in current.outputs for u in graph.consumers(out)):
            if user.name in seen or not _chain_member(graph, user):
                continue
            seen.add(user.name)
            member = _member_view(view, user)
            reason = _moves_alone(member, params) if user.op_type == "Transpose" else \
                None if in_identity_run(graph, user) else _form_channel_change(member)
            if reason is not None:
                return f"{user.op_type} {user.name}: {reason}"
            frontier.append(user)
    return None


def _layout_chain(view: LayerView, params: Mapping[str, Any]) -> str | None:
    """rk3566 merges a run of layout ops (Reshape/Transpose/Squeeze/Unsqueeze/Flatten and the unbinding
    Gather/Split) and lowers it once, from its first op that moves data: a later member has no layer of its
    own (NPU), and the first mover carries the move of the whole chain, so it is CPU when any later member
    would move data across the channel on its own."""
    if in_identity_run(view.graph, view.node):
        return None
    if _chain_mover_before(view, params) is not None:
        return None
    if view.node.op_type in RESHAPES and _next_reshape(view.graph, view.node) is not None:
        return None  # folded into the last reshape of the run
    own = _moves_alone(view, params) or _reorder_before(view)
    if own is not None:
        return own
    if view.node.op_type in RESHAPES:
        earlier = _reshape_run_moves(view, params)
        return None if earlier is None else f"{view.node.op_type} ends a run of reshapes that moves data ({earlier})"
    if not _reorders(view.graph, view.node):
        return None
    later = _chain_moves_after(view, params)
    if later is None:
        return None
    return f"Transpose carries the layout chain it starts; a later member moves data ({later})"


CONDITIONS: Mapping[str, Condition] = {
    "avgpool_count_include_pad": _avgpool_count_include_pad,
    "erf_in_gelu": _erf_in_gelu,
    "exponent_constant": _exponent_constant,
    "data_dtypes": _data_dtypes,
    "fused_or_constant": _fused_or_constant,
    "runtime_dividend": _runtime_dividend,
    "max_rank": _max_rank,
    "moves_across_channel": _moves_across_channel,
    "token_matmul_transposes": _token_matmul_transposes,
    "batch_major_transpose": _batch_major_transpose,
    "into_batch_transpose": _into_batch_transpose,
    "output_concat_relayout": _output_concat_relayout,
    "spatial_into_channel": _spatial_into_channel,
    "in_pattern": _in_pattern,
    "subsampling_pool": _subsampling_pool,
    "same_type_cast": _same_type_cast,
    "linear_resize": _linear_resize,
    "strided_slice": _strided_slice,
    "token_channel_pad": _token_channel_pad,
    "pixels_into_channel": _pixels_into_channel,
    "map_rank3_output": _map_rank3_output,
    "channel_reduce": _channel_reduce,
    "tile_repeats": _tile_repeats,
    "layout_chain": _layout_chain,
    "identity_scatter": _identity_scatter,
    "map_softmax_plane": _map_softmax_plane,
}
