"""Model edits: rewrites that remove a vendor violation without changing what the model computes.

Each candidate names the rule it fixes. `apply` rewrites the ONNX model in place of the original node(s),
keeping the original node name on the part the rule is about, so `check` can confirm the fix by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from optimizer.backends import backend_of
from optimizer.check import CheckReport
from optimizer.check._verdicts import build_time_nodes
from optimizer.errors import BadInputError
from optimizer.ir import Graph, node_names

DLA_WINDOW_MAX = 8  # DLA-POOL-WINDOW
DLA_KERNEL_MAX = 32  # DLA-CONV-KERNEL
CHANNEL_VECTOR = 32  # DLA-IO-CPAD: kCHW32 (INT8) vectors; a multiple of 32 is also one of 16 (kCHW16)


@dataclass(frozen=True)
class Edit:
    id: str
    kind: str
    target: str  # the node (or input tensor) it rewrites
    rule: str
    rationale: str
    applicable: bool = True  # False: advice only, no equivalent rewrite exists
    params: Mapping[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "rule": self.rule,
                "rationale": self.rationale, "applicable": self.applicable, "params": dict(self.params)}


def _violated(report: CheckReport, node: str, rule: str) -> bool:
    return any(v.rule == rule for v in report.verdict(node).violations)


def _split_factor(size: int) -> tuple[int, int] | None:
    """size = a * b with both in [1, 8], a as large as possible."""
    for a in range(DLA_WINDOW_MAX, 0, -1):
        if size % a == 0 and size // a <= DLA_WINDOW_MAX:
            return a, size // a
    return None


def candidate_edits(report: CheckReport, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                    boundary_tensors: Sequence[str] = ()) -> list[Edit]:
    graph = report.graph
    target = report.target
    edits: list[Edit] = []
    static_rule = backend_of(target).static_rule
    # inputs still dynamic, and those --input-shape fixed for this run only (the file keeps them dynamic)
    declared: dict[str, dict[int, str]] = {}
    for tensor, axis, symbol in (*graph.dynamic_dims, *graph.fixed_dims):
        declared.setdefault(tensor, {})[axis] = symbol
    for tensor in sorted(declared):
        shape = [declared[tensor].get(i, d) for i, d in enumerate(graph.shape(tensor) or ())]
        given = (input_shapes or {}).get(tensor)
        dims = list(given) if given else [1 if (i == 0 and not isinstance(d, int)) else d for i, d in enumerate(shape)]
        known = all(isinstance(d, int) for d in dims)
        edits.append(Edit(
            id=f"fix-dims@{tensor}", kind="fix-dims", target=tensor, rule=static_rule, applicable=known,
            rationale=(f"input {tensor} has dynamic dims {shape}; fixing them to {dims} in the file lets the "
                       "accelerator build it" if known else f"input {tensor} has dynamic dims {shape}; give the "
                       "sizes with --input-shape to make this a rewrite"),
            params=MappingProxyType({"dims": dims})))
    if backend_of(target).layer_edits:
        edits += _dla_edits(report)
        edits += _channel_edits(report, boundary_tensors)
    edits += _statistics_edits(report)
    return edits


def _statistics_edits(report: CheckReport) -> list[Edit]:
    """A training-mode BatchNormalization over a weight (RKNN-BN-TRAINING) folded into the weight it makes."""
    graph = report.graph
    refused = [n for n in graph.nodes if graph.batch_statistics(n) and _violated(report, n.name, "RKNN-BN-TRAINING")]
    if not refused:
        return []
    build_time = build_time_nodes(graph)
    made = {o for node in graph.nodes if node.name in build_time for o in node.outputs}
    out = []
    for node in refused:
        constant = all(graph.is_constant(t) or t in made for t in node.inputs if t)
        why = ("BatchNormalization in training mode over a weight (weight standardisation): its result and the "
               "constant ops after it are computed once from the model's weights and stored as the weight they make, "
               "which the toolkit loads like any other (needs the weighted model)" if constant else
               "BatchNormalization in training mode over an activation: no equivalent the toolkit loads")
        out.append(Edit(f"fold-statistics@{node.name}", "fold-statistics", node.name, "RKNN-BN-TRAINING", why,
                        applicable=constant))
    return out


def _dla_edits(report: CheckReport) -> list[Edit]:
    graph = report.graph
    out = []
    for node in graph.nodes:
        name, op = node.name, node.op_type
        bad_pad = _violated(report, name, "DLA-CONV-PAD-LT-KERNEL") or _violated(report, name, "DLA-CONV-PAD")
        if op == "Conv" and bad_pad:
            out.append(Edit(f"pad-op@{name}", "explicit-pad", name, "DLA-CONV-PAD-LT-KERNEL",
                            f"padding {list(node.attrs['pads'])} with kernel {list(node.attrs['kernel_shape'])}: "
                            "move it into an explicit Pad node so the convolution itself has no padding"))
        if op in ("GlobalAveragePool", "GlobalMaxPool") and _violated(report, name, "DLA-POOL-WINDOW"):
            kernel = node.attrs.get("kernel_shape")
            found = [_split_factor(k) for k in kernel] if kernel else [None]
            factors = [f for f in found if f is not None]
            if kernel and len(factors) == len(found):
                out.append(Edit(f"split-pool@{name}", "split-pool", name, "DLA-POOL-WINDOW",
                                f"window {kernel[0]}x{kernel[1]} > 8x8: pool {factors[0][0]}x{factors[1][0]} then "
                                f"{factors[0][1]}x{factors[1][1]} (an average of equal block averages is the average)",
                                params=MappingProxyType({"first": [f[0] for f in factors],
                                                         "second": [f[1] for f in factors]})))
            else:
                out.append(Edit(f"split-pool@{name}", "split-pool", name, "DLA-POOL-WINDOW",
                                f"window {kernel} cannot be split into two windows of at most 8x8", applicable=False))
        if op == "Conv" and _violated(report, name, "DLA-CONV-KERNEL"):
            ok = node.attrs.get("group", 1) == 1 and all(d == 1 for d in node.attrs.get("dilations", (1, 1)))
            kernel = list(node.attrs["kernel_shape"])
            out.append(Edit(f"split-kernel@{name}", "split-kernel", name, "DLA-CONV-KERNEL",
                            f"kernel {kernel[0]}x{kernel[1]} > 32: a sum of convolutions over kernel slices of at "
                            "most 32" if ok else "grouped or dilated convolution: no kernel split", applicable=ok))
        if op == "Softmax" and _violated(report, name, "DLA-SOFTMAX-ORIN"):
            out.append(Edit(f"advice@{name}", "advice", name, "DLA-SOFTMAX-ORIN",
                            "DLA Softmax exists on Orin only; no equivalent rewrite on Xavier: keep it on the GPU",
                            applicable=False))
        if op in ("Resize", "Upsample") and (_violated(report, name, "DLA-RESIZE-NEAREST")
                                             or _violated(report, name, "DLA-RESIZE-BILINEAR")):
            out.append(Edit(f"advice@{name}", "advice", name,
                            "DLA-RESIZE-NEAREST" if node.attrs.get("mode") == "nearest" else "DLA-RESIZE-BILINEAR",
                            f"scales {node.attrs.get('scales')}: only integer H/W scales run on DLA; choose input "
                            "and output sizes whose ratio is an integer", applicable=False))
        if op == "Concat" and _violated(report, name, "DLA-CONCAT-AXIS"):
            out.append(Edit(f"advice@{name}", "advice", name, "DLA-CONCAT-AXIS",
                            f"concat on axis {node.attrs.get('axis')}: DLA concatenates channels only; no "
                            "equivalent rewrite", applicable=False))
    return out


def _channel_edits(report: CheckReport, boundary_tensors: Sequence[str]) -> list[Edit]:
    graph = report.graph
    out = []
    for tensor in boundary_tensors:
        producer = graph.producer(tensor)
        shape = graph.shape(tensor)
        if producer is None or producer.op_type != "Conv" or shape is None or len(shape) != 4:
            continue
        channels = shape[1]
        consumers = graph.consumers(tensor)
        if not isinstance(channels, int) or channels % CHANNEL_VECTOR == 0 or tensor in graph.outputs or not consumers:
            continue
        if producer.attrs.get("group", 1) != 1 or any(c.op_type != "Conv" or c.attrs.get("group", 1) != 1
                                                      for c in consumers):
            continue
        padded = math.ceil(channels / CHANNEL_VECTOR) * CHANNEL_VECTOR
        out.append(Edit(f"pad-channels@{producer.name}", "pad-channels", producer.name, "DLA-IO-CPAD",
                        f"{tensor} crosses a DLA boundary with C={channels}; zero filters make it C={padded}, a whole "
                        "kCHW16/kCHW32 vector, and the consumers ignore them through zero weights",
                        params=MappingProxyType({"tensor": tensor, "channels": padded})))
    return out


# ---- applying ----------------------------------------------------------------------------------------

class _Model:
    """Index over a ModelProto for the rewrites: nodes by (edgeplan) name, initializers by name."""

    def __init__(self, model: onnx.ModelProto, graph: Graph) -> None:
        self.model = model
        self.graph = graph
        self.by_name: dict[str, onnx.NodeProto] = {}
        for name, node in zip(node_names(model), model.graph.node):
            node.name = name  # unnamed nodes take the name the plan and check gave them
            self.by_name[name] = node
        self.inits = {t.name: t for t in model.graph.initializer}

    def node(self, name: str) -> onnx.NodeProto:
        if name not in self.by_name:
            raise BadInputError(f"edit names node '{name}', which the model lacks")
        return self.by_name[name]

    def array(self, name: str) -> np.ndarray | None:
        tensor = self.inits.get(name)
        if tensor is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
            return None
        return numpy_helper.to_array(tensor)

    def add_init(self, name: str, array: np.ndarray | None, dims: Sequence[int], data_type: int) -> None:
        if array is not None:
            tensor = numpy_helper.from_array(array, name)
        else:  # structure-only: dims and an external location that does not exist, like the source model
            tensor = onnx.TensorProto(name=name, data_type=data_type, dims=list(dims))
            tensor.data_location = onnx.TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", f"{name.replace('/', '_')}.weights"
        self.model.graph.initializer.append(tensor)
        self.inits[name] = tensor

    def replace(self, old: onnx.NodeProto, new: Sequence[onnx.NodeProto]) -> None:
        """Splices `new` in at `old`'s place. The repeated field copies what it is given, so the name index is
        rebuilt: a later edit must find the nodes the graph holds now, not the ones an earlier edit replaced."""
        nodes = list(self.model.graph.node)
        index = next(i for i, n in enumerate(nodes) if n.name == old.name)
        del self.model.graph.node[:]
        self.model.graph.node.extend(nodes[:index] + list(new) + nodes[index + 1:])
        self.by_name = {n.name: n for n in self.model.graph.node}

    def attr(self, node: onnx.NodeProto, name: str) -> Any:
        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return None


def _set_attr(node: onnx.NodeProto, name: str, value: Any) -> None:
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    if value is not None:
        node.attribute.append(helper.make_attribute(name, value))


def _explicit_pad(m: _Model, name: str) -> None:
    conv = m.node(name)
    attrs = m.graph.node(name).attrs
    pads = list(attrs["pads"])
    spatial = len(attrs["kernel_shape"])
    padded = f"{conv.input[0]}__pad_{name}"
    pad_values = f"{name}__pads"
    m.add_init(pad_values, np.array([0, 0, *pads[:spatial], 0, 0, *pads[spatial:]], np.int64), [], 0)
    pad = helper.make_node("Pad", [conv.input[0], pad_values], [padded], name=f"{name}/pad", mode="constant")
    conv.input[0] = padded
    _set_attr(conv, "pads", [0] * (2 * spatial))
    _set_attr(conv, "auto_pad", None)
    m.replace(conv, [pad, conv])


def _split_pool(m: _Model, name: str, first: Sequence[int], second: Sequence[int]) -> None:
    node = m.node(name)
    op = "AveragePool" if node.op_type == "GlobalAveragePool" else "MaxPool"
    middle = f"{node.output[0]}__pool_{name}"
    one = helper.make_node(op, [node.input[0]], [middle], name=f"{name}/first", kernel_shape=list(first),
                           strides=list(first))
    two = helper.make_node(op, [middle], [node.output[0]], name=name, kernel_shape=list(second),
                           strides=list(second))
    m.replace(node, [one, two])


def _chunks(size: int) -> list[tuple[int, int]]:
    count = math.ceil(size / DLA_KERNEL_MAX)
    step = math.ceil(size / count)
    return [(a, min(a + step, size)) for a in range(0, size, step)]


def _split_kernel(m: _Model, name: str) -> None:
    conv = m.node(name)
    info = m.graph.node(name)
    kh, kw = info.attrs["kernel_shape"]
    sh, sw = info.attrs["strides"]
    pads = list(info.attrs["pads"])
    out_shape = m.graph.shape(conv.output[0])
    if out_shape is None or not all(isinstance(d, int) for d in out_shape):
        raise BadInputError("split-kernel needs the output shape", node=name, rule="DLA-CONV-KERNEL")
    _, _, oh, ow = (int(d) for d in out_shape)
    weight_name = conv.input[1]
    weight = m.array(weight_name)
    w_tensor = m.inits[weight_name]
    cout, cin = w_tensor.dims[0], w_tensor.dims[1]
    nodes = []
    source = conv.input[0]
    if any(pads):
        padded = f"{source}__pad_{name}"
        m.add_init(f"{name}__pads", np.array([0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]], np.int64), [], 0)
        nodes.append(helper.make_node("Pad", [source, f"{name}__pads"], [padded], name=f"{name}/pad", mode="constant"))
        source = padded
    partials = []
    for i, ((r0, r1), (c0, c1)) in enumerate((r, c) for r in _chunks(kh) for c in _chunks(kw)):
        part_w = f"{weight_name}__k{i}"
        m.add_init(part_w, None if weight is None else np.ascontiguousarray(weight[:, :, r0:r1, c0:c1]),
                   [cout, cin, r1 - r0, c1 - c0], w_tensor.data_type)
        starts, ends = f"{name}__s{i}", f"{name}__e{i}"
        m.add_init(starts, np.array([r0, c0], np.int64), [2], 0)
        m.add_init(ends, np.array([r0 + (oh - 1) * sh + (r1 - r0), c0 + (ow - 1) * sw + (c1 - c0)], np.int64),
                   [2], 0)
        axes = f"{name}__axes"
        if axes not in m.inits:
            m.add_init(axes, np.array([2, 3], np.int64), [2], 0)
        sliced = f"{source}__slice{i}_{name}"
        nodes.append(helper.make_node("Slice", [source, starts, ends, axes], [sliced], name=f"{name}/slice{i}"))
        inputs = [sliced, part_w] + ([conv.input[2]] if i == 0 and len(conv.input) > 2 and conv.input[2] else [])
        partial = conv.output[0] if (kh <= DLA_KERNEL_MAX and kw <= DLA_KERNEL_MAX) else f"{conv.output[0]}__k{i}"
        nodes.append(helper.make_node("Conv", inputs, [partial], name=name if i == 0 else f"{name}/k{i}",
                                      kernel_shape=[r1 - r0, c1 - c0], strides=[sh, sw]))
        partials.append(partial)
    total = partials[0]
    for i, part in enumerate(partials[1:], start=1):
        out = conv.output[0] if i == len(partials) - 1 else f"{conv.output[0]}__sum{i}"
        nodes.append(helper.make_node("Add", [total, part], [out], name=f"{name}/sum{i}"))
        total = out
    m.replace(conv, nodes)


def _pad_channels(m: _Model, name: str, tensor: str, channels: int) -> None:
    producer = m.node(name)
    weight_name = producer.input[1]
    w_tensor = m.inits[weight_name]
    cout = w_tensor.dims[0]
    extra = channels - cout
    weight = m.array(weight_name)
    new_w = f"{weight_name}__cpad"
    m.add_init(new_w, None if weight is None else np.concatenate(
        [weight, np.zeros((extra, *weight.shape[1:]), weight.dtype)]), [channels, *w_tensor.dims[1:]],
        w_tensor.data_type)
    producer.input[1] = new_w
    if len(producer.input) > 2 and producer.input[2]:
        bias = m.array(producer.input[2])
        new_b = f"{producer.input[2]}__cpad"
        m.add_init(new_b, None if bias is None else np.concatenate([bias, np.zeros(extra, bias.dtype)]), [channels],
                   m.inits[producer.input[2]].data_type)
        producer.input[2] = new_b
    for consumer in [n for n in m.model.graph.node if tensor in n.input]:
        index = list(consumer.input).index(tensor)
        if index != 0:
            raise BadInputError("pad-channels: the tensor is not the consumer's data input", node=consumer.name)
        c_name = consumer.input[1]
        c_tensor = m.inits[c_name]
        c_weight = m.array(c_name)
        padded_w = f"{c_name}__cpad_{consumer.name}"
        m.add_init(padded_w, None if c_weight is None else np.concatenate(
            [c_weight, np.zeros((c_weight.shape[0], extra, *c_weight.shape[2:]), c_weight.dtype)], axis=1),
            [c_tensor.dims[0], channels, *c_tensor.dims[2:]], c_tensor.data_type)
        consumer.input[1] = padded_w


def _fold_statistics(m: _Model, name: str) -> None:
    """Replaces the BatchNormalization and the constant ops it feeds by the tensors where that constant
    region meets the rest of the graph, computed with onnx's reference evaluator (which, unlike onnxruntime,
    honours training_mode); constant nodes left with no reader are dropped. The toolkit's own constant folding cannot do
    this: it refuses the training-mode node at load, and written out as arithmetic it fails to infer the shapes."""
    from onnx.reference import ReferenceEvaluator

    graph = m.model.graph
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer):
        raise BadInputError("fold-statistics computes from the weights, and this model's are not in the file "
                            "(structure only, or external data): run it on the weighted model",
                            node=name, rule="RKNN-BN-TRAINING")
    known = {t.name for t in graph.initializer}
    constant_nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        inputs = [i for i in node.input if i]
        if node.op_type == "Constant" or (inputs and all(i in known for i in inputs)):
            constant_nodes.append(node)
            known.update(o for o in node.output if o)
    region = set(m.node(name).output)
    for node in constant_nodes:
        if node.name == name or any(i in region for i in node.input):
            region.update(o for o in node.output if o)
    outputs = {o.name for o in graph.output}
    boundary = sorted({i for n in graph.node for i in n.input if i in region and not set(n.output) <= region}
                      | (outputs & region))
    wanted, needed = set(boundary), []
    for node in reversed(constant_nodes):  # only the constant nodes the boundary values depend on
        if wanted & set(node.output):
            needed.append(node)
            wanted.update(i for i in node.input if i)
    inits = [t for t in graph.initializer if t.name in wanted]
    sub = helper.make_model(helper.make_graph(needed[::-1], "fold", [], [helper.make_tensor_value_info(t, 0, None)
                                                                          for t in boundary], inits),
                            opset_imports=list(m.model.opset_import))
    sub.ir_version = m.model.ir_version
    values = ReferenceEvaluator(sub).run(None, {})
    for tensor, array in zip(boundary, values):
        m.add_init(tensor, np.asarray(array), [], 0)
    constant = {n.name for n in constant_nodes}
    keep = [n for n in graph.node if not set(n.output) <= region]
    while True:  # drop the constant nodes only the folded region read
        read = {i for n in keep for i in n.input} | outputs
        alive = [n for n in keep if n.name not in constant or any(o in read for o in n.output if o)]
        if len(alive) == len(keep):
            break
        keep = alive
    del graph.node[:]
    graph.node.extend(keep)
    live = [t for t in graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(live)
    m.by_name = {n.name: n for n in graph.node}
    m.inits = {t.name: t for t in graph.initializer}


def _fix_dims(m: _Model, tensor: str, dims: Sequence[int]) -> None:
    value = next((v for v in m.model.graph.input if v.name == tensor), None)
    if value is None:
        raise BadInputError(f"fix-dims names '{tensor}', which is not a model input")
    shape = value.type.tensor_type.shape
    shape.ClearField("dim")
    for d in dims:
        shape.dim.add().dim_value = int(d)


def apply_edits(model: onnx.ModelProto, graph: Graph, edits: Sequence[Edit]) -> onnx.ModelProto:
    """Returns an edited copy; value_info is dropped so shapes are re-inferred from the edited graph."""
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    m = _Model(edited, graph)
    for edit in edits:
        if not edit.applicable:
            raise BadInputError(f"edit {edit.id} is advice only: {edit.rationale}", rule=edit.rule)
        if edit.kind == "explicit-pad":
            _explicit_pad(m, edit.target)
        elif edit.kind == "split-pool":
            _split_pool(m, edit.target, edit.params["first"], edit.params["second"])
        elif edit.kind == "split-kernel":
            _split_kernel(m, edit.target)
        elif edit.kind == "pad-channels":
            _pad_channels(m, edit.target, edit.params["tensor"], edit.params["channels"])
        elif edit.kind == "fix-dims":
            _fix_dims(m, edit.target, edit.params["dims"])
        elif edit.kind == "fold-statistics":
            _fold_statistics(m, edit.target)
        else:
            raise BadInputError(f"unknown edit kind {edit.kind}")
    del edited.graph.value_info[:]
    return edited
