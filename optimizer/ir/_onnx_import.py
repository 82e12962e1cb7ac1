"""ONNX file -> Graph: safety checks, shape inference with folding, normalisation, costs."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference, version_converter

from optimizer.errors import BadInputError
from optimizer.ir._cost import node_work
from optimizer.ir._fold import constant_node_value
from optimizer.ir._graph import Dim, Graph, Node, Shape, TensorInfo
from optimizer.ir._normalize import NodeContext, normalise
from optimizer.ir._safety import (
    MAX_TENSOR_ELEMENTS,
    MIN_OPSET,
    check_shapes,
    check_tensors,
    default_opset,
    iter_graphs,
    parse_model,
    quiet_numerics,
    read_model_bytes,
)
from optimizer.ir._shapes import SHAPE_INPUTS, initializers_as_inputs, resolve

CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})
INLINE_CONSTANT_LIMIT = 1 << 16  # initializers up to this many elements are kept as values
_KNOWN_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})
_DTYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.BFLOAT16: "bfloat16", onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.UINT16: "uint16", onnx.TensorProto.INT32: "int32", onnx.TensorProto.UINT32: "uint32",
    onnx.TensorProto.INT64: "int64", onnx.TensorProto.UINT64: "uint64", onnx.TensorProto.BOOL: "bool",
    onnx.TensorProto.STRING: "string",
}


def parse_input_shapes(specs: list[str] | tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """NAME=1x3x224x224 strings -> {NAME: dims}."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            values = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            values = ()
        if not sep or not name or not values or any(v < 1 for v in values):
            raise BadInputError(f"--input-shape '{spec}' must look like NAME=1x3x224x224 with dims >= 1")
        out[name] = values
    return out


def _value_shape(value: onnx.ValueInfoProto) -> Shape:
    ttype = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not ttype.HasField("shape"):
        return None
    dims: list[Dim] = []
    for i, dim in enumerate(ttype.shape.dim):
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        else:
            dims.append(dim.dim_param or f"?{value.name}:{i}")
    return tuple(dims)


def apply_input_shapes(model: onnx.ModelProto, overrides: Mapping[str, tuple[int, ...]], shown: str) -> None:
    initializers = {t.name for t in model.graph.initializer}
    runtime = {v.name: v for v in model.graph.input if v.name not in initializers}
    for name, dims in overrides.items():
        value = runtime.get(name)
        if value is None:
            raise BadInputError(f"--input-shape names '{name}', which is not a model input "
                                f"(inputs: {', '.join(sorted(runtime)) or 'none'})", file=shown)
        current = _value_shape(value)
        if current is not None and len(current) != len(dims):
            raise BadInputError(f"--input-shape {name} has rank {len(dims)}, the model input has rank "
                                f"{len(current)} {list(current)}", file=shown)
        if current is not None:
            for axis, (old, new) in enumerate(zip(current, dims)):
                if isinstance(old, int) and old != new:
                    raise BadInputError(f"--input-shape {name} sets dim {axis} to {new}, but the model "
                                        f"fixes it at {old}", file=shown)
        shape = value.type.tensor_type.shape
        shape.ClearField("dim")
        for d in dims:
            shape.dim.add().dim_value = d


def _convert_old_opset(model: onnx.ModelProto, shown: str) -> tuple[onnx.ModelProto, int | None]:
    """Opsets below 7 go through onnx.version_converter (their vendor parsers and onnx's inference start at 7);
    returns the model to use and the opset it was converted from (None when it was not)."""
    versions = {imp.domain: imp.version for imp in model.opset_import}
    version = versions.get("", versions.get("ai.onnx"))
    if version is None or not 1 <= version < MIN_OPSET:
        return model, None
    working = onnx.ModelProto()
    working.CopyFrom(model)
    listed = {v.name for v in working.graph.input}
    added = []  # before IR 4 initializers were graph inputs, and the converter's adapters still expect that
    for tensor in working.graph.initializer:
        if tensor.name not in listed:
            working.graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type,
                                                                          list(tensor.dims)))
            added.append(tensor.name)
    try:
        converted = version_converter.convert_version(working, MIN_OPSET)
    except Exception as exc:  # the converter raises its own ConvertError, RuntimeError or IndexError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        first = first.rpartition("failed: ")[2] or first  # drop the C++ assertion's file and line
        first = first.rpartition(": ")[2] if first.startswith("/") else first
        raise BadInputError(f"opset {version} is below {MIN_OPSET} and onnx.version_converter could not convert it "
                            f"to opset {MIN_OPSET} ({first[:200]}); convert the model with a newer exporter",
                            file=shown) from None
    kept = [v for v in converted.graph.input if v.name not in set(added)]
    del converted.graph.input[:]
    converted.graph.input.extend(kept)
    return converted, version


def _symbolic_dims(model: onnx.ModelProto, names: set[str]) -> tuple[tuple[str, int, str], ...]:
    """The file's own symbolic dims of these inputs (before --input-shape fixes them)."""
    out = []
    for value in model.graph.input:
        if value.name in names:
            for axis, d in enumerate(_value_shape(value) or ()):
                if not isinstance(d, int):
                    out.append((value.name, axis, str(d)))
    return tuple(out)


def _check_input_dims(model: onnx.ModelProto, shown: str) -> None:
    for value in model.graph.input:
        shape = _value_shape(value)
        if not shape:
            continue
        total = 1
        for axis, d in enumerate(shape):
            if isinstance(d, int):
                if d <= 0:
                    raise BadInputError(f"input '{value.name}' dim {axis} is {d}; every dim must be >= 1 "
                                        "(use a symbolic dim and --input-shape for dynamic sizes)", file=shown)
                total *= d
        if total > MAX_TENSOR_ELEMENTS:
            raise BadInputError(f"input '{value.name}' has {total} elements (limit 2^34)", file=shown)


def outer_refs(node: onnx.NodeProto) -> set[str]:
    """Names a control-flow body reads from the enclosing scope: real dependencies of the node."""
    refs: set[str] = set()
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for top in graphs:
            for graph in iter_graphs(top):
                defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
                defined |= {o for n in graph.node for o in n.output}
                for n in graph.node:
                    refs.update(i for i in n.input if i and i not in defined)
    return refs


def node_names(model: onnx.ModelProto) -> list[str]:
    """Stable names: the file's own, or OpType_index for unnamed nodes; duplicates are refused.

    Every stage that maps plan node names back onto a ModelProto (export, edits) uses this function."""
    explicit = [n.name for n in model.graph.node if n.name]
    taken = set(explicit)
    seen: dict[str, int] = {}
    names = []
    for index, node in enumerate(model.graph.node):
        name = node.name
        if name:
            if name in seen:
                raise BadInputError(f"node name '{name}' is used by nodes {seen[name]} and {index}; node "
                                    "names must be unique", node=name)
            seen[name] = index
        else:
            name = f"{node.op_type or 'node'}_{index}"
            while name in taken:
                name = f"{name}_"
            taken.add(name)
        names.append(name)
    return names


def _check_arity(schema: onnx.defs.OpSchema, node: onnx.NodeProto, name: str, shown: str) -> None:
    """Input and output counts the op's schema allows (trailing empty names are omitted optionals)."""
    inputs = len(node.input)
    while inputs and not node.input[inputs - 1]:
        inputs -= 1
    outputs = len([o for o in node.output if o])
    if not schema.min_input <= inputs <= schema.max_input:
        raise BadInputError(f"op {node.op_type} takes {schema.min_input} to {schema.max_input} inputs, the node has "
                            f"{inputs}", file=shown, node=name)
    if not schema.min_output <= max(outputs, 1) <= schema.max_output or outputs == 0:
        raise BadInputError(f"op {node.op_type} produces {schema.min_output} to {schema.max_output} outputs, the "
                            f"node names {outputs}", file=shown, node=name)
    for i, declared in enumerate(node.input[:inputs]):
        if not declared and i < schema.min_input:
            raise BadInputError(f"op {node.op_type} input {i} is required but empty", file=shown, node=name)


def _validate_structure(model: onnx.ModelProto, names: list[str], opset: int, shown: str) -> list[int]:
    """Ops, domains, SSA, dangling inputs and cycles; returns a topological order."""
    graph = model.graph
    functions = {(f.domain, f.name) for f in model.functions}
    available = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        name = names[index]
        if not node.op_type:
            raise BadInputError("node has no op_type", file=shown, node=name)
        if (node.domain, node.op_type) not in functions:
            if node.domain not in _KNOWN_DOMAINS:
                raise BadInputError(f"op {node.op_type} is in unknown domain '{node.domain}' (known: ai.onnx, "
                                    "ai.onnx.ml, model-local functions)", file=shown, node=name)
            domain = "" if node.domain == "ai.onnx" else node.domain
            if not onnx.defs.has(node.op_type, domain):
                raise BadInputError(f"op '{node.op_type}' is not an ONNX operator", file=shown, node=name)
            if domain == "":
                try:
                    schema = onnx.defs.get_schema(node.op_type, opset, domain)
                    _check_arity(schema, node, name, shown)
                except onnx.defs.SchemaError:
                    first = onnx.defs.get_all_schemas_with_history()
                    since = min(s.since_version for s in first if s.name == node.op_type and s.domain == "")
                    raise BadInputError(f"op {node.op_type} needs opset >= {since}; the model declares "
                                        f"opset {opset}", file=shown, node=name) from None
        for out in node.output:
            if not out:
                continue
            if out in producer or out in available:
                raise BadInputError(f"tensor '{out}' is produced twice (ONNX graphs are single-assignment)",
                                    file=shown, node=name)
            producer[out] = index
    deps: list[set[int]] = []
    for index, node in enumerate(graph.node):
        needed = {i for i in node.input if i} | (outer_refs(node) if node.op_type in CONTROL_FLOW else set())
        mine = set()
        for tensor in sorted(needed):
            if tensor in producer:
                mine.add(producer[tensor])
            elif tensor not in available:
                raise BadInputError(f"input '{tensor}' is not produced by any node, initializer or graph input",
                                    file=shown, node=names[index])
        deps.append(mine)
    for out in graph.output:
        if out.name not in producer and out.name not in available:
            raise BadInputError(f"graph output '{out.name}' is not produced by any node", file=shown)
    return _topological(deps, names, shown)


def _topological(deps: list[set[int]], names: list[str], shown: str) -> list[int]:
    """Kahn's algorithm, lowest file index first, so a valid file keeps its own order."""
    import heapq

    remaining = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in deps]
    for index, mine in enumerate(deps):
        for dep in mine:
            users[dep].append(index)
    ready = [i for i, r in enumerate(remaining) if r == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in users[index]:
            remaining[user] -= 1
            if remaining[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(deps):
        stuck = min(i for i, r in enumerate(remaining) if r > 0)
        raise BadInputError("the graph has a cycle through this node", file=shown, node=names[stuck])
    return order


def _without_external_shape_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's inference refuses a Reshape target, Pad amount or Resize scale stored as external data it
    cannot read (structure-only files); such initializers become plain typed inputs for it, so the size
    they decide is simply unknown (the pass then calls it unresolved, never a dynamic input)."""
    external = {t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    if not external:
        return model
    needed = {node.input[p] for node in model.graph.node for p in SHAPE_INPUTS.get(node.op_type, ())
              if p < len(node.input) and node.input[p] in external}
    if not needed:
        return model
    view = onnx.ModelProto()
    view.CopyFrom(model)
    initializers_as_inputs(view.graph, needed)
    return view


def _infer(model: onnx.ModelProto, shown: str, strict: bool = False) -> onnx.ModelProto:
    """strict: the model as given must type- and shape-check (a Gemm on a rank-1 tensor is bad input);
    the folding rounds after it only refine shapes. That first pass runs without onnx's data propagation,
    whose memory grows with the length of every 1-D tensor it can compute: the folding rounds size
    tensors first, and their re-inference propagates data without the long ones."""
    try:
        return shape_inference.infer_shapes(_without_external_shape_data(model), check_type=strict,
                                            strict_mode=strict, data_prop=not strict)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInputError(f"shape inference failed: {first[:300]}", file=shown) from None


def _reinfer(working: onnx.ModelProto, shown: str) -> onnx.ModelProto | None:
    try:
        return _infer(working, shown)
    except BadInputError:
        return None


def _inline_initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    values = {}
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            continue
        count = int(np.prod(tensor.dims)) if tensor.dims else 1
        if count <= INLINE_CONSTANT_LIMIT:
            try:
                values[tensor.name] = numpy_helper.to_array(tensor)
            except Exception:  # a malformed raw_data length: the value stays unknown
                continue
    return values


@quiet_numerics()
def load_model(path: str | Path, input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Graph:
    """Reads an ONNX file into the graph IR.

    Weights are never read: external data stays on disk (its location is only validated), since
    dims are all that planning needs and structure-only models must load.
    """
    path = Path(path)
    shown = str(path)
    data = read_model_bytes(path)
    model = parse_model(data, shown)
    model, converted_from = _convert_old_opset(model, shown)
    opset = default_opset(model, shown)
    check_tensors(model, path)
    try:
        names = node_names(model)
    except BadInputError as exc:
        raise BadInputError(exc.message, file=shown, node=exc.node) from None
    order = _validate_structure(model, names, opset, shown)
    fixed: tuple[tuple[str, int, str], ...] = ()
    if input_shapes:
        fixed = _symbolic_dims(model, set(input_shapes))
        apply_input_shapes(model, input_shapes, shown)
    _check_input_dims(model, shown)
    resolved = resolve(model, _infer(model, shown, strict=True), order, names, _inline_initializers(model),
                       lambda working: _reinfer(working, shown))
    shapes, known, folded = resolved.shapes, resolved.values, resolved.folded
    dtypes = {name: _DTYPES.get(elem, "unknown") for name, elem in resolved.elem_types.items()}
    check_shapes(model, shapes, shown)
    initializers = {t.name for t in model.graph.initializer}
    constant_outputs = {o for i in folded for o in model.graph.node[i].output if o}
    for index in order:
        node = model.graph.node[index]
        if node.op_type == "Constant":
            value = constant_node_value(node)
            if value is not None and node.output:
                known.setdefault(node.output[0], value)
            constant_outputs.update(o for o in node.output if o)

    nodes: list[Node] = []
    for position, index in enumerate(order):
        proto = model.graph.node[index]
        name = names[index]
        ctx = NodeContext(proto, name, opset, shown, shapes, known)
        attrs = normalise(ctx)
        in_shapes = [shapes.get(i) if i else None for i in proto.input]
        out_shapes = [shapes.get(o) if o else None for o in proto.output]
        macs, ops = node_work(proto.op_type, attrs, in_shapes, out_shapes)
        weights = 0
        for tensor in proto.input:
            if tensor and (tensor in initializers or tensor in constant_outputs):
                shape = shapes.get(tensor)
                if shape is not None and all(isinstance(d, int) for d in shape):
                    weights += int(np.prod([int(d) for d in shape], dtype=np.int64)) if shape else 1
        is_folded = index in folded or proto.op_type == "Constant"
        nodes.append(Node(
            index=position, name=name, op_type=proto.op_type, domain=proto.domain,
            inputs=tuple(proto.input), outputs=tuple(proto.output),
            attrs=MappingProxyType(attrs), opaque=proto.op_type in CONTROL_FLOW, folded=is_folded,
            outer_inputs=tuple(sorted(outer_refs(proto) - set(proto.input))) if proto.op_type in CONTROL_FLOW else (),
            macs=0 if is_folded else macs, elementwise_ops=0 if is_folded else ops,
            weight_elements=0 if is_folded else weights,
        ))

    tensors: dict[str, TensorInfo] = {}
    for name, shape in shapes.items():
        tensors[name] = TensorInfo(name=name, dtype=dtypes.get(name, "unknown"), shape=shape,
                                   is_constant=name in initializers or name in constant_outputs)
    for node in nodes:
        for out in node.outputs:
            if out and out not in tensors:
                tensors[out] = TensorInfo(name=out, dtype=dtypes.get(out, "unknown"), shape=None,
                                          is_constant=out in constant_outputs)
    inputs = tuple(v.name for v in model.graph.input if v.name not in initializers)
    dynamic = tuple((name, axis, str(d)) for name in inputs
                    for axis, d in enumerate(shapes.get(name) or ()) if not isinstance(d, int))
    return Graph.build(
        path=shown, sha256=hashlib.sha256(data).hexdigest(), opset=opset, nodes=tuple(nodes),
        tensors=tensors, inputs=inputs, outputs=tuple(v.name for v in model.graph.output),
        constants=known, dynamic_dims=dynamic, fixed_dims=fixed, shape_causes=resolved.causes,
        converted_from_opset=converted_from,
        shape_origins=resolved.origins,
    )
