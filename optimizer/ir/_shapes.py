"""Shapes that resolve: onnx's own per-node inference, fed with every shape value known so far.

onnx's whole-model inference propagates shape values through a few ops only (Shape, Gather, Slice,
Concat, simple arithmetic), so shape arithmetic through Range, Where, Expand, ConstantOfShape, Reduce*,
Pad, Tile... leaves `unk__N` dims even when every input is static. Here one topological pass does, per
node: evaluate it with onnx's reference ops when all its inputs are known values (shape sub-graphs are
small), else re-run onnx's inference for that node alone with the values known so far as input data.
An If on a constant condition is resolved through the branch it takes. Nodes whose outputs the
whole-model inference already made concrete are not revisited, so a plain CNN costs nothing extra.

Every dim still unknown afterwards gets a cause: `dynamic` (it follows from a symbolic input dim),
`data-dependent` (NonZero, NonMaxSuppression, a TopK k or a Reshape target computed from run-time
values) or `unresolved` (neither: a gap in inference; should not happen on a static model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from optimizer.ir._fold import MAX_FOLD_ELEMENTS, constant_node_value, fold_node
from optimizer.ir._graph import Dim, Shape

DYNAMIC = "dynamic"
DATA_DEPENDENT = "data-dependent"
UNRESOLVED = "unresolved"
_DATA = "data"  # a run-time value (an activation): fine as a value, but a shape computed from it is data-dependent
_PRIORITY = (DYNAMIC, DATA_DEPENDENT, UNRESOLVED)

# Ops whose output sizes follow from the values of some inputs (index list), not only from input shapes.
SHAPE_INPUTS: Mapping[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "Slice": (1, 2, 3, 4), "Pad": (1, 3), "Resize": (1, 2, 3), "Upsample": (1,), "TopK": (1,), "OneHot": (1,),
    "Split": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,),
    "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceSumSquare": (1,),
    "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "CenterCropPad": (1,), "MaxUnpool": (2,), "If": (0,),
    "Loop": (0, 1),
}
# Output sizes that depend on the data itself, whatever is known about the inputs' shapes.
DATA_DEPENDENT_OPS = frozenset({"NonZero", "NonMaxSuppression", "Unique", "Compress", "StringSplit",
                                "RegexFullMatch"})


@dataclass(frozen=True)
class Resolved:
    """The outcome of the pass: refined shapes, element types, build-time values and causes."""

    shapes: dict[str, Shape]
    elem_types: dict[str, int]
    values: dict[str, np.ndarray]
    folded: frozenset[int]  # indices of top-level nodes whose outputs are all build-time values
    causes: dict[str, str]  # tensor -> DYNAMIC | DATA_DEPENDENT | UNRESOLVED, for every non-concrete shape
    origins: dict[str, str]  # tensor -> the node where its size became unknown (or the symbolic input)


def _shape_of(tp: onnx.TypeProto, name: str) -> Shape:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims: list[Dim] = []
    for i, dim in enumerate(tp.tensor_type.shape.dim):
        dims.append(int(dim.dim_value) if dim.HasField("dim_value") else (dim.dim_param or f"?{name}:{i}"))
    return tuple(dims)


def concrete(shape: Shape) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _score(shape: Shape) -> tuple[int, int]:
    """More static dims first, then more named (rather than generated) symbols."""
    if shape is None:
        return (-1, 0)
    named = sum(isinstance(d, str) and not d.startswith(("unk__", "?")) for d in shape)
    return (sum(isinstance(d, int) for d in shape), named)


def _more_known(new: Shape, old: Shape) -> bool:
    if new is None:
        return False
    if old is None:
        return True
    return len(new) == len(old) and _score(new) > _score(old)


class _Env:
    """Types, shapes, values and causes by tensor name, for the graph and the branches it resolves."""

    def __init__(self, model: onnx.ModelProto, inferred: onnx.ModelProto, values: MutableMapping[str, np.ndarray]):
        self.opsets = {imp.domain or "": imp.version for imp in model.opset_import}
        self.opset = self.opsets.get("", self.opsets.get("ai.onnx", 0))
        self.opset_imports = list(model.opset_import)
        self.ir_version = model.ir_version
        self.types: dict[str, onnx.TypeProto] = {}
        graph = inferred.graph
        for value in (*graph.input, *graph.value_info, *graph.output):
            old = self.types.get(value.name)
            if old is None or _more_known(_shape_of(value.type, value.name), _shape_of(old, value.name)):
                self.types[value.name] = value.type
        for tensor in model.graph.initializer:
            self.types[tensor.name] = onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))
        self.shapes: dict[str, Shape] = {n: _shape_of(t, n) for n, t in self.types.items()}
        self.values = values
        self.vsource: dict[str, str] = {}  # why a tensor's value is unknown (tensors without a known value)
        self.causes: dict[str, str] = {}
        self.origins: dict[str, str] = {}  # where the unknown size of a tensor comes from
        self.vorigins: dict[str, str] = {}  # where the unknown value of a tensor comes from
        self.schemas: dict[tuple[str, str], onnx.defs.OpSchema | None] = {}
        initializers = {t.name for t in model.graph.initializer}
        for value in model.graph.input:
            if value.name not in initializers:
                self.vsource[value.name] = _DATA
                shape = self.shapes.get(value.name)
                self.origins[value.name] = self.vorigins[value.name] = value.name
                if not concrete(shape):
                    self.causes[value.name] = DYNAMIC
        for name in initializers - set(values):
            self.vsource[name] = UNRESOLVED  # weights not in the file (structure only) or too large to hold

    def schema(self, node: onnx.NodeProto) -> onnx.defs.OpSchema | None:
        domain = "" if node.domain == "ai.onnx" else node.domain
        key = (domain, node.op_type)
        if key not in self.schemas:
            try:
                self.schemas[key] = onnx.defs.get_schema(node.op_type, self.opsets.get(domain, self.opset), domain)
            except onnx.defs.SchemaError:
                self.schemas[key] = None
        return self.schemas[key]

    def set_value(self, name: str, value: np.ndarray) -> None:
        self.values[name] = value
        self.vsource.pop(name, None)
        self.causes.pop(name, None)
        self.shapes[name] = tuple(int(d) for d in value.shape)
        old = self.types.get(name)
        elem = old.tensor_type.elem_type if old is not None and old.HasField("tensor_type") else 0
        if not elem:
            try:
                elem = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
            except (KeyError, TypeError, ValueError):
                elem = 0
        self.types[name] = onnx.helper.make_tensor_type_proto(elem, list(value.shape))

    def set_type(self, name: str, tp: onnx.TypeProto) -> None:
        shape = _shape_of(tp, name)
        if _more_known(shape, self.shapes.get(name)) or name not in self.types:
            old = self.types.get(name)
            if (old is not None and old.HasField("tensor_type") and tp.HasField("tensor_type")
                    and not tp.tensor_type.elem_type):
                tp = onnx.helper.make_tensor_type_proto(old.tensor_type.elem_type, list(shape or ()))
            self.types[name] = tp
            self.shapes[name] = shape


def _as_tensor(name: str, value: np.ndarray) -> onnx.TensorProto | None:
    try:
        return numpy_helper.from_array(value, name)
    except (TypeError, ValueError):
        return None


def _infer_one(env: _Env, node: onnx.NodeProto) -> None:
    """onnx's inference of this node alone, with every known value as input data."""
    schema = env.schema(node)
    if schema is None or not schema.has_type_and_shape_inference_function:
        return
    types = {i: env.types[i] for i in node.input if i and i in env.types}
    if any(i and i not in types for i in node.input):
        return
    data = {}
    for i in node.input:
        if i and i in env.values and i not in data and env.values[i].size <= MAX_FOLD_ELEMENTS:
            tensor = _as_tensor(i, env.values[i])
            if tensor is not None:
                data[i] = tensor
    try:
        out = shape_inference.infer_node_outputs(schema, node, types, data, opset_imports=env.opset_imports,
                                                 ir_version=env.ir_version)
    except Exception:  # inference that rejects this instance leaves the shapes as the whole-model pass had them
        return
    for name, tp in out.items():
        if name:
            env.set_type(name, tp)


def _branch(node: onnx.NodeProto, env: _Env) -> onnx.GraphProto | None:
    """The branch an If takes when its condition is a build-time value."""
    cond = env.values.get(node.input[0]) if node.input else None
    if cond is None or cond.size != 1:
        return None
    wanted = "then_branch" if bool(cond.reshape(())) else "else_branch"
    return next((a.g for a in node.attribute if a.name == wanted), None)


def _run_if(node: onnx.NodeProto, env: _Env) -> bool:
    """Resolves a constant-condition If through its branch; True when it was."""
    branch = _branch(node, env)
    if branch is None:
        return False
    for tensor in branch.initializer:
        env.types[tensor.name] = onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))
        env.shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
        if tensor.data_location != onnx.TensorProto.EXTERNAL and int(np.prod(tensor.dims)) <= MAX_FOLD_ELEMENTS:
            try:
                env.set_value(tensor.name, numpy_helper.to_array(tensor))
            except Exception:  # a malformed payload: the value stays unknown
                env.vsource[tensor.name] = UNRESOLVED
    for index, inner in enumerate(branch.node):
        _visit(inner, inner.name or f"{inner.op_type}_{index}", env)
    for outer, result in zip(node.output, branch.output):
        if not outer:
            continue
        name = result.name
        if name in env.values:
            env.set_value(outer, env.values[name])
        else:
            if name in env.types:
                env.types[outer] = env.types[name]
                env.shapes[outer] = env.shapes.get(name)
            env.vsource[outer] = env.vsource.get(name, UNRESOLVED)
            if name in env.causes:
                env.causes[outer] = env.causes[name]
                env.origins[outer] = env.origins.get(name, node.name)
    return all(o in env.values for o in node.output if o)


def _worst(causes: list[str]) -> str | None:
    return next((c for c in _PRIORITY if c in causes), None)


def _input_cause(env: _Env, name: str) -> str | None:
    """Why a tensor that a shape is computed from is not known at build time (None when it is)."""
    if not name or name in env.values:
        return None
    source = env.vsource.get(name, UNRESOLVED)
    return DATA_DEPENDENT if source == _DATA else source


def _explain(node: onnx.NodeProto, name: str, env: _Env) -> None:
    """Causes for the outputs left non-concrete, and the value source of outputs without a value."""
    inputs = [i for i in node.input if i]
    unknown_shapes = [i for i in inputs if not concrete(env.shapes.get(i))]
    shape_causes = [env.causes.get(i, UNRESOLVED) for i in unknown_shapes]
    if node.op_type in ("Shape", "Size"):
        value_source = _worst(shape_causes) or UNRESOLVED
        value_origin = env.origins.get(unknown_shapes[0], name) if unknown_shapes else name
    elif node.op_type in DATA_DEPENDENT_OPS:
        value_source, value_origin = _DATA, name
    else:
        unknown = [i for i in inputs if i not in env.values]
        sources = [env.vsource.get(i, UNRESOLVED) for i in unknown]
        value_source = _DATA if _DATA in sources else (_worst(sources) or UNRESOLVED)
        value_origin = next((env.vorigins.get(i, name) for i, s in zip(unknown, sources) if s == value_source),
                            name)
    for out in (o for o in node.output if o):
        if out not in env.values:
            env.vsource[out] = value_source
            env.vorigins[out] = value_origin
        if concrete(env.shapes.get(out)):
            continue
        cause = _worst(shape_causes)
        origin = name
        if cause is not None:
            origin = next(env.origins.get(i, name) for i, c in zip(unknown_shapes, shape_causes) if c == cause)
        elif node.op_type in DATA_DEPENDENT_OPS:
            cause = DATA_DEPENDENT
        else:
            positions = [p for p in SHAPE_INPUTS.get(node.op_type, ()) if p < len(node.input)]
            found = [(c, node.input[p]) for p in positions if (c := _input_cause(env, node.input[p]))]
            cause = _worst([c for c, _ in found]) or UNRESOLVED
            if cause != UNRESOLVED:
                source = next(t for c, t in found if c == cause)
                origin = name if env.vsource.get(source) == _DATA else env.vorigins.get(source, name)
        env.causes[out] = cause
        env.origins[out] = origin


def _visit(node: onnx.NodeProto, name: str, env: _Env) -> bool:
    """One node: fold it, or refine its output shapes; True when all its outputs are build-time values."""
    outputs = [o for o in node.output if o]
    if node.op_type == "Constant":
        value = constant_node_value(node)
        if value is not None and outputs:
            env.set_value(outputs[0], value)
            return True
    values = fold_node(node, env.opset, env.values, env.shapes)
    if values is not None and len(values) >= len(outputs):
        for name, value in zip(node.output, values):
            if name:
                env.set_value(name, value)
        return True
    if node.op_type == "If" and node.domain in ("", "ai.onnx") and _run_if(node, env):
        return True
    if any(not concrete(env.shapes.get(o)) for o in outputs) and node.domain in ("", "ai.onnx", "ai.onnx.ml"):
        _infer_one(env, node)
    _explain(node, name, env)
    return False


def _long_vector(shape: Shape) -> bool:
    return shape is not None and len(shape) == 1 and isinstance(shape[0], int) and shape[0] > MAX_FOLD_ELEMENTS


def initializers_as_inputs(graph: onnx.GraphProto, names: set[str]) -> None:
    """Turns these initializers into typed graph inputs: onnx's inference then knows their size, not their values."""
    moved = [t for t in graph.initializer if t.name in names]
    if not moved:
        return
    kept = [t for t in graph.initializer if t.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    listed = {v.name for v in graph.input}
    graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                       for t in moved if t.name not in listed)


def _without_long_vectors(working: onnx.ModelProto, shapes: Mapping[str, Shape],
                          types: Mapping[str, onnx.TypeProto]) -> None:
    """onnx's data propagation copies every 1-D tensor it can compute into a list of dims, about 200 bytes
    per element: a hostile ConstantOfShape, Range or 1-D initializer of 10^8 elements asks for tens of
    gigabytes. A shape vector holds one entry per dim, so a 1-D tensor longer than the folding limit is
    never shape data: it becomes a typed graph input, keeping its size for its consumers but no values."""
    graph = working.graph
    initializers_as_inputs(graph, {t.name for t in graph.initializer
                                   if len(t.dims) == 1 and t.dims[0] > MAX_FOLD_ELEMENTS})
    cut = [n for n in graph.node if any(_long_vector(shapes.get(o)) for o in n.output if o)]
    if not cut:
        return
    gone = {id(n) for n in cut}
    kept = [n for n in graph.node if id(n) not in gone]
    outputs = [o for n in cut for o in n.output if o]
    del graph.node[:]
    graph.node.extend(kept)
    for name in outputs:
        value = onnx.ValueInfoProto(name=name)
        if name in types:
            value.type.CopyFrom(types[name])
        graph.input.append(value)


def _with_constants(model: onnx.ModelProto, folded: set[int], env: _Env) -> onnx.ModelProto:
    """The model with its folded nodes as Constants, so onnx's whole-model data propagation starts from them,
    and without long 1-D tensors that propagation would copy."""
    working = onnx.ModelProto()
    working.CopyFrom(model)
    for index in sorted(folded):
        node = working.graph.node[index]
        if node.op_type == "Constant" or len(node.output) != 1 or node.output[0] not in env.values:
            continue
        tensor = _as_tensor(node.output[0], env.values[node.output[0]])
        if tensor is not None:
            node.CopyFrom(onnx.helper.make_node("Constant", [], [node.output[0]], name=node.name, value=tensor))
    _without_long_vectors(working, env.shapes, env.types)
    return working


def resolve(model: onnx.ModelProto, inferred: onnx.ModelProto, order: list[int], names: list[str],
            values: MutableMapping[str, np.ndarray],
            reinfer: Callable[[onnx.ModelProto], onnx.ModelProto | None], rounds: int = 4) -> Resolved:
    """`inferred` is `model` after onnx's whole-model inference; `names` are the IR's node names;
    `values` holds the inline initializers.

    While dims stay unknown for a reason other than data (symbolic inputs carry named dims through
    onnx's data propagation, which the per-node pass cannot), the whole-model inference is rerun on
    the model with its folded nodes as Constants and the pass continues from the result."""
    env = _Env(model, inferred, values)
    folded: set[int] = set()
    for _ in range(rounds):
        for index in order:
            if index not in folded and _visit(model.graph.node[index], names[index], env):
                folded.add(index)
        if not any(c != DATA_DEPENDENT and not concrete(env.shapes.get(n)) for n, c in env.causes.items()):
            break
        again = reinfer(_with_constants(model, folded, env))
        if again is None:
            break
        graph = again.graph
        before = {n: _score(s) for n, s in env.shapes.items()}
        for value in (*graph.value_info, *graph.output):
            env.set_type(value.name, value.type)
        if all(_score(env.shapes.get(n)) == before.get(n) for n in env.shapes):
            break
    elem = {n: t.tensor_type.elem_type for n, t in env.types.items() if t.HasField("tensor_type")}
    causes = {n: c for n, c in env.causes.items() if not concrete(env.shapes.get(n))}
    return Resolved(shapes=env.shapes, elem_types=elem, values=dict(env.values), folded=frozenset(folded),
                    causes=causes, origins={n: env.origins[n] for n in causes if n in env.origins})
