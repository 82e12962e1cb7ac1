"""Strongly typed sub-models for TensorRT 11: each planned layer's precision written into the ONNX itself.

TensorRT 11 has no precision flags: a layer runs in the type of its tensors. So an FP16 layer reads and
writes FLOAT16 (Cast nodes where its neighbours differ), an INT8 layer reads its activations and weights
through QuantizeLinear -> DequantizeLinear, and an FP32 layer keeps FLOAT. A tensor's type under its own
name is its producer's compute type, except at the edges that must agree: the model's inputs and outputs
keep their declared types, and a tensor entering or leaving a DLA engine has that engine's I/O type (FP16,
or INT8 as a quantized tensor), so both sides of every GPU/DLA boundary build the same buffer. Conversions
are added once per sub-model and tensor; their names derive from the tensor's, with an `__edgeplan_` part.

INT8 scales: a weight's is max|w|/127 when the weights are in the file, an activation's is a placeholder
(1.0, timing only) that `qdq_scales.json` lists for replacement with calibrated values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from optimizer.backends._submodels import SubModel
from optimizer.backends._tensorrt_files import Boundary
from optimizer.errors import BadInputError

FLOAT, FLOAT16, INT8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT8
QDQ = -1  # a representation, not a type: the tensor quantized and dequantized, what an INT8 layer reads
FLOATS = (FLOAT, FLOAT16)
_SUFFIX = {FLOAT: "fp32", FLOAT16: "fp16", INT8: "int8", QDQ: "qdq"}
_COMPUTE = {"fp16": FLOAT16, "fp32": FLOAT, "int8": FLOAT}
_KEEP = {"Resize": {1, 2, 3}, "Upsample": {1}}  # float inputs with their own fixed type (roi, scales)
_WEIGHT = {"Conv": 1, "ConvTranspose": 1, "Gemm": 1, "MatMul": 1}  # the weight an INT8 layer quantizes
_BOUNDARY_TYPE = {"fp16": FLOAT16, "int8": INT8}
PLACEHOLDER_SCALE = 1.0


@dataclass(frozen=True)
class Typing:
    precision: Mapping[str, str]  # planned compute node -> its precision
    declared: Mapping[str, int]  # float tensor -> its element type in the original model
    stored: Mapping[str, int]  # tensor -> its type under its own name where that is fixed (edges, boundaries)
    scales: Mapping[str, float]  # tensor -> the scale of its Q/DQ
    weights: frozenset[str]  # tensors whose scale came from their values


def plan_typing(model: onnx.ModelProto, plan: Mapping[str, object], subs: Sequence[SubModel],
                infos: Mapping[str, onnx.ValueInfoProto], io: Boundary) -> Typing:
    layers = [layer for layer in plan["layers"] if isinstance(layer, dict)]  # type: ignore[attr-defined]
    precision = {str(layer["node"]): str(layer["precision"]) for layer in layers if layer.get("role") != "constant"}
    declared = {name: info.type.tensor_type.elem_type for name, info in infos.items()
                if info.type.tensor_type.elem_type in FLOATS}
    for tensor in model.graph.initializer:
        if tensor.data_type in FLOATS:
            declared[tensor.name] = tensor.data_type
    stored = {t: declared[t] for t in (*(v.name for v in model.graph.input), *(v.name for v in model.graph.output))
              if t in declared}
    for t, (dtype, _fmt) in io.items():
        if t in declared and t not in stored:
            stored[t] = _BOUNDARY_TYPE[dtype]
    for t in _body_reads(model.graph):  # an If/Loop body reads these by name: they keep their declared type
        if t in declared:
            stored[t] = declared[t]
    scales, weights = _scales(model, precision)
    for name in (*declared, *(n for n in stored)):
        if name in scales:
            continue
        scales[name] = PLACEHOLDER_SCALE
    return Typing(precision=precision, declared=declared, stored=stored, scales=scales, weights=frozenset(weights))


def _bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [g for a in node.attribute for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                                                list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else [])]


def _body_reads(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name a control-flow body of this graph reads (outer-scope names among them)."""
    reads: set[str] = set()
    for node in graph.node:
        for body in _bodies(node):
            reads |= {t for n in body.node for t in n.input if t} | _body_reads(body)
    return reads


def _scales(model: onnx.ModelProto, precision: Mapping[str, str]) -> tuple[dict[str, float], set[str]]:
    """max|w|/127 for the weights INT8 layers quantize, where the file holds their values."""
    from optimizer.ir import node_names

    inits = {t.name: t for t in model.graph.initializer}
    scales: dict[str, float] = {}
    for name, node in zip(node_names(model), model.graph.node):
        index = _WEIGHT.get(node.op_type)
        if precision.get(name) != "int8" or index is None or len(node.input) <= index:
            continue
        weight = inits.get(node.input[index])
        if weight is None or weight.data_location == TensorProto.EXTERNAL:
            continue
        values = numpy_helper.to_array(weight)
        peak = float(np.max(np.abs(values))) if values.size else 0.0
        if peak > 0 and np.isfinite(peak):
            scales[weight.name] = peak / 127.0
    return scales, set(scales)


class _Rewriter:
    """One sub-model's nodes, with the conversions its layers' types need."""

    def __init__(self, sub: SubModel, typing: Typing, stored: Mapping[str, int]) -> None:
        graph = sub.model.graph
        self.typing = typing
        self.stored = stored
        self.initializers = frozenset(t.name for t in graph.initializer)
        own = {t.name: int(t.data_type) for t in graph.initializer if t.data_type in FLOATS}
        self.declared: dict[str, int] = {**typing.declared, **own}
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, onnx.TensorProto] = {}
        self.have: dict[tuple[str, int], str] = {}
        self.taken = {t for n in graph.node for t in (*n.input, *n.output)} | set(self.initializers)
        self.taken |= {v.name for v in graph.input}
        for value in graph.input:
            if value.name in self.declared:
                self.have[value.name, stored.get(value.name, self.declared[value.name])] = value.name
        for tensor in graph.initializer:
            if tensor.data_type in FLOATS:
                self.have[tensor.name, tensor.data_type] = tensor.name

    def _name(self, tensor: str, rep: int) -> str:
        name = f"{tensor}__edgeplan_{_SUFFIX[rep]}"
        if name in self.taken:
            raise BadInputError(f"the model already has a tensor named '{name}'; rename it to export for TensorRT 11")
        self.taken.add(name)
        return name

    def _scale(self, tensor: str) -> tuple[str, str]:
        scale, zero = f"{tensor}__edgeplan_scale", f"{tensor}__edgeplan_zero"
        if scale not in self.inits:
            value = self.typing.scales.get(tensor, PLACEHOLDER_SCALE)
            self.inits[scale] = numpy_helper.from_array(np.array(value, dtype=np.float32), scale)
            self.inits[zero] = numpy_helper.from_array(np.array(0, dtype=np.int8), zero)
        return scale, zero

    def obtain(self, tensor: str, rep: int, name: str | None = None) -> str:
        """The tensor in representation `rep`, converted from what this sub-model already has (memoised)."""
        if (tensor, rep) in self.have and name is None:
            return self.have[tensor, rep]
        out = name or self._name(tensor, rep)
        if rep == QDQ:
            scale, zero = self._scale(tensor)
            self._add("DequantizeLinear", [self.obtain(tensor, INT8), scale, zero], out)
        elif rep == INT8:
            scale, zero = self._scale(tensor)
            self._add("QuantizeLinear", [self.obtain(tensor, FLOAT), scale, zero], out)
        elif rep == FLOAT and (tensor, FLOAT16) not in self.have and (tensor, INT8) in self.have:
            scale, zero = self._scale(tensor)
            self._add("DequantizeLinear", [self.have[tensor, INT8], scale, zero], out)
        else:
            other = FLOAT16 if rep == FLOAT else FLOAT
            if (tensor, other) not in self.have and (tensor, INT8) not in self.have:
                raise BadInputError(f"tensor '{tensor}' reaches this sub-model in no float form")
            self._add("Cast", [self.obtain(tensor, other)], out, to=rep)
        self.have[tensor, rep] = out
        return out

    def _add(self, op: str, inputs: list[str], output: str, to: int | None = None) -> None:
        node = helper.make_node(op, inputs, [output], name=f"{output}__node")
        if to is not None:
            node.attribute.append(helper.make_attribute("to", to))
        self.nodes.append(node)

    def _need(self, node: onnx.NodeProto, index: int, precision: str | None) -> int:
        """What a layer of this precision reads at this input: its compute type, Q/DQ for an INT8 layer's
        activations and weight; a fixed-type input (Resize scales) or an unplanned node reads as declared."""
        tensor = node.input[index]
        if precision is None or index in _KEEP.get(node.op_type, ()):
            return self.declared[tensor]
        if precision == "int8" and (tensor not in self.initializers or index == _WEIGHT.get(node.op_type)):
            return QDQ
        return _COMPUTE[precision]  # an INT8 layer's other constants (a bias) join its dequantized FLOAT

    def node(self, node: onnx.NodeProto, name: str) -> None:
        precision = None if _bodies(node) else self.typing.precision.get(name)  # control flow: as declared
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for i, tensor in enumerate(node.input):
            if tensor and tensor in self.declared:
                copy.input[i] = self.obtain(tensor, self._need(node, i, precision))
        own = _COMPUTE[precision] if precision is not None else None
        converted = []
        for j, tensor in enumerate(node.output):
            if not tensor or tensor not in self.declared:
                continue
            native = own if own is not None else self.declared[tensor]
            if self.stored.get(tensor, native) == native:
                self.have[tensor, native] = tensor
            else:
                copy.output[j] = self._name(tensor, native)
                self.have[tensor, native] = copy.output[j]
                converted.append(tensor)
        self.nodes.append(copy)
        for tensor in converted:  # the fixed type under the tensor's own name, next to its producer
            self.obtain(tensor, self.stored[tensor], name=tensor)


def typed_submodel(sub: SubModel, typing: Typing, whole: bool = False) -> SubModel:
    """The sub-model with its layers' precisions as tensor types; `whole`: the model as one engine, whose only
    fixed types are the model's own inputs and outputs."""
    graph = sub.model.graph
    if whole:
        stored = {t: typing.declared[t] for t in (*sub.inputs, *sub.outputs) if t in typing.declared}
    else:
        stored = dict(typing.stored)
    stored.update({t: typing.declared[t] for t in _body_reads(graph) if t in typing.declared})
    writer = _Rewriter(sub, typing, stored)
    for name, node in zip(sub.nodes, graph.node):  # sub.nodes: the plan's names, in the graph's order
        writer.node(node, name)
    for tensor in sub.outputs:  # an output that only passes through (an input of this sub-model)
        if tensor in stored and (tensor, stored[tensor]) not in writer.have:
            writer.obtain(tensor, stored[tensor], name=tensor)
    inputs = [_retyped(v, stored) for v in graph.input]
    outputs = [_retyped(v, stored) for v in graph.output]
    new_graph = helper.make_graph(writer.nodes, graph.name, inputs, outputs,
                                  [*graph.initializer, *writer.inits.values()])
    model = helper.make_model(new_graph, opset_imports=list(sub.model.opset_import), producer_name="edgeplan",
                              ir_version=sub.model.ir_version)
    model.functions.extend(sub.model.functions)
    return replace(sub, model=model)


def _retyped(value: onnx.ValueInfoProto, stored: Mapping[str, int]) -> onnx.ValueInfoProto:
    copy = onnx.ValueInfoProto()
    copy.CopyFrom(value)
    if value.name in stored:
        copy.type.tensor_type.elem_type = stored[value.name]
    return copy


def check_opset(model: onnx.ModelProto, plan_has_int8: bool, path: str) -> None:
    """QuantizeLinear/DequantizeLinear need opset 10; Cast to FLOAT16 is in every opset the IR reads."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if plan_has_int8 and opset < 10:
        raise BadInputError(f"INT8 layers for TensorRT 11 need QuantizeLinear (opset 10+); the model is opset {opset}",
                            file=path)


def calibrate_script(model_file: str, inputs: Sequence[str], scales: Mapping[str, str], files: Sequence[str]) -> str:
    """calibrate_qdq.py: TensorRT 11 has no --calib, so the placeholder activation scales are set offline from
    sample data: max|x|/127 of each quantized tensor over the samples, run through the original model. Names
    reach the script only inside repr() literals, so none can run as Python."""
    spec = repr(json.dumps({"model": model_file, "inputs": list(inputs), "scales": dict(scales), "files": list(files)},
                           sort_keys=True))
    return _CALIBRATE.replace("@SPEC@", spec)


_CALIBRATE = '''"""Sets the INT8 scales of the engine ONNX files from sample data (TensorRT 11 has no --calib).

python calibrate_qdq.py [samples.txt]
samples.txt (the default) lists one .npy per line (the model's one input), or one .npz holding an array per input name.
Runs on any host with numpy, onnx and onnxruntime: the original model gives each quantized tensor's max|x|,
and its scale becomes max|x|/127 in every engine file that quantizes it (qdq_scales.json is updated).
"""

import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = json.loads(@SPEC@)


def samples(listing):
    with open(listing) as handle:
        for line in handle:
            path = line.strip()
            if not path:
                continue
            path = os.path.join(os.path.dirname(os.path.abspath(listing)), path)
            data = np.load(path)
            if isinstance(data, np.ndarray):
                yield {SPEC["inputs"][0]: data}
            else:
                yield {name: data[name] for name in SPEC["inputs"]}


def main():
    model = onnx.load(os.path.join(HERE, SPEC["model"]))
    outputs = {o.name for o in model.graph.output}
    for tensor in SPEC["scales"]:
        if tensor not in outputs and tensor not in SPEC["inputs"]:
            model.graph.output.append(onnx.ValueInfoProto(name=tensor))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    peak = dict.fromkeys(SPEC["scales"], 0.0)
    for feeds in samples(sys.argv[1] if len(sys.argv) > 1 else "samples.txt"):
        values = dict(zip(names, session.run(names, feeds)))
        values.update(feeds)
        for tensor in peak:
            peak[tensor] = max(peak[tensor], float(np.max(np.abs(values[tensor]))))
    scales = {SPEC["scales"][t]: p / 127.0 for t, p in peak.items() if p > 0}
    for name in SPEC["files"]:
        path = os.path.join(HERE, name)
        sub = onnx.load(path, load_external_data=False)
        for init in sub.graph.initializer:
            if init.name in scales:
                init.CopyFrom(numpy_helper.from_array(np.array(scales[init.name], dtype=np.float32), init.name))
        onnx.save(sub, path)
    listing_path = os.path.join(HERE, "qdq_scales.json")
    with open(listing_path) as handle:
        listing = json.load(handle)
    for tensor, entry in listing["scales"].items():
        if entry["initializer"] in scales:
            entry.update(value=scales[entry["initializer"]], **{"from": "calibrated"})
    with open(listing_path, "w") as handle:
        json.dump(listing, handle, indent=2, sort_keys=True)
    print(f"calibrate_qdq: {len(scales)} of {len(peak)} scales set from the samples")


if __name__ == "__main__":
    main()
'''
