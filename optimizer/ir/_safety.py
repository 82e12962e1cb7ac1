"""Checks that run before anything else looks at a model file: it is untrusted input.

Resource limits are documented here and checked before the heavy work (shape inference, folding,
solving); each can be raised through its environment variable:

| limit                | default   | environment variable          |
|----------------------|-----------|-------------------------------|
| model file size      | 2 GiB     | EDGEPLAN_MAX_FILE_BYTES       |
| nodes (all graphs)   | 100,000   | EDGEPLAN_MAX_NODES            |
| subgraph nesting     | 16        | EDGEPLAN_MAX_SUBGRAPH_DEPTH   |
| elements per tensor  | 2^34      | EDGEPLAN_MAX_TENSOR_ELEMENTS  |
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from optimizer.errors import BadInputError
from optimizer.ir._graph import Shape

MAX_FILE_BYTES = 2 << 30  # protobuf cannot hold more; larger files are not ONNX models
MAX_TENSOR_ELEMENTS = 1 << 34  # 16 G elements: no edge accelerator holds a bigger tensor
MAX_NODES = 100_000  # 30x the largest zoo model (3,422); a million-node chain would take gigabytes
MAX_SUBGRAPH_DEPTH = 16  # If/Loop/Scan bodies inside bodies; exporters nest a few levels
MIN_OPSET = 7  # the oldest opset onnx's shape inference and the vendor parsers still accept


@dataclass(frozen=True)
class Limit:
    what: str
    default: int
    env: str

    def value(self) -> int:
        text = os.environ.get(self.env, "")
        try:
            return int(text) if text else self.default
        except ValueError:
            raise BadInputError(f"{self.env}={text!r} must be an integer") from None

    def refuse(self, found: int | str, shown: str, node: str | None = None) -> BadInputError:
        return BadInputError(f"{self.what} {found} exceeds the limit {self.value()} (raise it with "
                             f"{self.env}=N)", file=shown, node=node)


FILE_BYTES = Limit("file size (bytes)", MAX_FILE_BYTES, "EDGEPLAN_MAX_FILE_BYTES")
NODES = Limit("node count", MAX_NODES, "EDGEPLAN_MAX_NODES")
SUBGRAPH_DEPTH = Limit("subgraph nesting depth", MAX_SUBGRAPH_DEPTH, "EDGEPLAN_MAX_SUBGRAPH_DEPTH")
TENSOR_ELEMENTS = Limit("tensor element count", MAX_TENSOR_ELEMENTS, "EDGEPLAN_MAX_TENSOR_ELEMENTS")


class quiet_numerics(contextlib.ContextDecorator):
    """Shape arithmetic in a hostile model divides by zero or overflows: that is the model's problem,
    reported through the checks, never as numpy warnings on the terminal."""

    def __enter__(self) -> quiet_numerics:
        self._state = np.seterr(all="ignore")
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._warnings.__exit__(*exc)
        np.seterr(**self._state)


def read_model_bytes(path: Path) -> bytes:
    shown = str(path)
    if not path.exists():
        raise BadInputError("file not found", file=shown)
    if path.is_dir():
        raise BadInputError("is a directory; pass an .onnx file", file=shown)
    if not path.is_file():
        raise BadInputError("not a regular file", file=shown)
    size = path.stat().st_size
    if size == 0:
        raise BadInputError("empty file; expected an ONNX model", file=shown)
    if size > FILE_BYTES.value():
        raise FILE_BYTES.refuse(size, shown)
    return path.read_bytes()


def parse_model(data: bytes, shown: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError and, for some garbage, RuntimeWarning-like errors
        raise BadInputError(f"not an ONNX model: protobuf parse failed ({type(exc).__name__}); the file is "
                            "truncated, not ONNX, or nests messages deeper than protobuf's limit of 100 "
                            "(about 32 levels of If/Loop bodies)", file=shown) from None
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise BadInputError("not an ONNX model: no graph with nodes (truncated or not ONNX)", file=shown)
    if model.ir_version <= 0:
        raise BadInputError("not an ONNX model: ir_version is missing", file=shown)
    check_limits(model, shown)
    _check_text(model, shown)
    return model


def _check_text(model: onnx.ModelProto, shown: str) -> None:
    """Protobuf hands back bytes for string fields that are not valid UTF-8 (a corrupted file)."""
    for graph in iter_graphs(model.graph):
        for index, node in enumerate(graph.node):
            fields = [node.name, node.op_type, node.domain, *node.input, *node.output,
                      *(a.name for a in node.attribute)]
            if any(not isinstance(f, str) for f in fields):
                raise BadInputError(f"node {index} has a name, op or tensor that is not valid UTF-8 (corrupted "
                                    "file)", file=shown)
        names = [t.name for t in graph.initializer] + [v.name for v in (*graph.input, *graph.output,
                                                                        *graph.value_info)]
        if any(not isinstance(n, str) for n in names):
            raise BadInputError("a tensor name is not valid UTF-8 (corrupted file)", file=shown)
    if any(not isinstance(i.domain, str) for i in model.opset_import):
        raise BadInputError("an opset domain is not valid UTF-8 (corrupted file)", file=shown)


def default_opset(model: onnx.ModelProto, shown: str) -> int:
    versions = {imp.domain: imp.version for imp in model.opset_import}
    version = versions.get("", versions.get("ai.onnx"))
    newest = onnx.defs.onnx_opset_version()
    if version is None:
        raise BadInputError("no opset_import for the default ONNX domain", file=shown)
    if not MIN_OPSET <= version <= newest:
        raise BadInputError(f"opset {version} is outside the supported range [{MIN_OPSET}, {newest}]; "
                            "convert it with onnx.version_converter", file=shown)
    return int(version)


def _graph_depths(graph: onnx.GraphProto) -> Iterator[tuple[onnx.GraphProto, int]]:
    """The graph and every subgraph (If/Loop/Scan bodies) with its nesting depth, depth first, without
    recursion (a hostile file may nest as deep as protobuf allows)."""
    stack = [(graph, 0)]
    while stack:
        current, depth = stack.pop()
        yield current, depth
        children = []
        for node in current.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    children.append((attr.g, depth + 1))
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    children.extend((sub, depth + 1) for sub in attr.graphs)
        stack.extend(reversed(children))


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every subgraph (If/Loop/Scan bodies), depth first."""
    for current, _ in _graph_depths(graph):
        yield current


def check_limits(model: onnx.ModelProto, shown: str) -> None:
    """Node count and nesting depth, and sizes that constants already fix, before any inference."""
    nodes_limit, depth_limit = NODES.value(), SUBGRAPH_DEPTH.value()
    count = 0
    for graph, depth in _graph_depths(model.graph):
        if depth > depth_limit:
            raise SUBGRAPH_DEPTH.refuse(depth, shown)
        count += len(graph.node)
        if count > nodes_limit:
            raise NODES.refuse(f"{count} (at least)", shown)
    _check_constant_sizes(model, shown)


_SHAPE_INPUTS = {"ConstantOfShape": 0, "Expand": 1, "Reshape": 1}
_SCALE_INPUTS = {"Resize": 2, "Upsample": 1}


def _constant_values(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """Small constants of the top graph (initializers and Constant nodes), for the size checks."""
    values: dict[str, np.ndarray] = {}
    for tensor in graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL and math.prod(tensor.dims) <= 64:
            with contextlib.suppress(Exception):
                values[tensor.name] = numpy_helper.to_array(tensor)
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_location != onnx.TensorProto.EXTERNAL \
                        and math.prod(attr.t.dims) <= 64:
                    with contextlib.suppress(Exception):
                        values[node.output[0]] = numpy_helper.to_array(attr.t)
    return values


def _check_constant_sizes(model: onnx.ModelProto, shown: str) -> None:
    """A constant shape of 2^62 elements or a NaN scale is refused before onnx's inference sees it
    (it allocates for the first and crashes on the second)."""
    values = _constant_values(model.graph)
    limit = TENSOR_ELEMENTS.value()
    for node in model.graph.node:
        index = _SHAPE_INPUTS.get(node.op_type)
        if index is not None and len(node.input) > index and node.input[index] in values:
            dims = [int(d) for d in values[node.input[index]].reshape(-1)]
            count = math.prod(d for d in dims if d > 0)
            if count > limit:
                raise TENSOR_ELEMENTS.refuse(f"{count} (its shape input {dims})", shown, node.name or node.op_type)
        index = _SCALE_INPUTS.get(node.op_type)
        if index is not None and len(node.input) > index and node.input[index] in values:
            scales = values[node.input[index]].reshape(-1)
            if scales.dtype.kind == "f" and not all(math.isfinite(float(v)) and float(v) > 0 for v in scales):
                raise BadInputError(f"{node.op_type} scales {scales.tolist()} must be finite and > 0", file=shown,
                                    node=node.name or node.op_type)


def check_shapes(model: onnx.ModelProto, shapes: Mapping[str, Shape], shown: str) -> None:
    """After inference: no tensor larger than the element limit, no negative dim (an overflowed or
    NaN-derived size), and no Reshape that changes the element count."""
    limit = TENSOR_ELEMENTS.value()
    producer = {o: n for n in model.graph.node for o in n.output if o}

    def where(tensor: str) -> str | None:
        node = producer.get(tensor)
        return (node.name or node.op_type) if node is not None else None

    for tensor, shape in shapes.items():
        if not shape:
            continue
        dims = [d for d in shape if isinstance(d, int)]
        if any(d < 0 for d in dims):
            raise BadInputError(f"tensor '{tensor}' gets a negative dim {list(shape)} (an overflowed or NaN size)",
                                file=shown, node=where(tensor))
        count = math.prod(dims)
        if count > limit:
            raise TENSOR_ELEMENTS.refuse(f"{count} (tensor '{tensor}' {list(shape)})", shown, where(tensor))
    for node in model.graph.node:
        if node.op_type != "Reshape" or len(node.input) < 1 or not node.output:
            continue
        before, after = shapes.get(node.input[0]), shapes.get(node.output[0])
        if before and after and all(isinstance(d, int) for d in (*before, *after)) \
                and math.prod(before) != math.prod(after):
            raise BadInputError(f"Reshape {list(before)} -> {list(after)} changes the element count "
                                f"({math.prod(before)} -> {math.prod(after)}); impossible", file=shown,
                                node=node.name or node.op_type)


def _iter_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    for graph in iter_graphs(model.graph):
        for tensor in graph.initializer:
            yield "", tensor
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield node.name, attr.t
                elif attr.type == onnx.AttributeProto.TENSORS:
                    for tensor in attr.tensors:
                        yield node.name, tensor


def check_tensors(model: onnx.ModelProto, model_path: Path) -> None:
    """Refuses external-data locations outside the model's folder; never opens them.

    Dims are checked too: an initializer may claim 2^40 elements with no data behind it.
    """
    shown = str(model_path)
    base = model_path.resolve().parent
    inside: set[str] = set()  # locations already resolved inside the folder (weights often share one file)
    for node_name, tensor in _iter_tensors(model):
        if not isinstance(tensor.name, str):
            raise BadInputError("a tensor name is not valid UTF-8 (corrupted file)", file=shown)
        if any(d < 0 for d in tensor.dims):
            raise BadInputError(f"tensor '{tensor.name}' has a negative dim {list(tensor.dims)}",
                                file=shown, node=node_name or None)
        count = math.prod(tensor.dims)
        if count > TENSOR_ELEMENTS.value():
            raise TENSOR_ELEMENTS.refuse(f"{count} (tensor '{tensor.name}')", shown, node_name or None)
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        if any(not isinstance(e.key, str) or not isinstance(e.value, str) for e in tensor.external_data):
            raise BadInputError(f"tensor '{tensor.name}' has external-data fields that are not valid UTF-8 "
                                "(corrupted file)", file=shown, node=node_name or None)
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        if not location or "\0" in location:
            raise BadInputError(f"tensor '{tensor.name}' has an external-data location that is empty or holds a "
                                "NUL byte; refused", file=shown, node=node_name or None)
        if os.path.isabs(location) or location.startswith(("\\", "/")) or ":" in location.split("/")[0]:
            raise BadInputError(f"tensor '{tensor.name}' external-data location '{location}' is absolute; "
                                "refused (must stay inside the model's folder)",
                                file=shown, node=node_name or None)
        parts = location.replace("\\", "/").split("/")
        if ".." in parts:
            raise BadInputError(f"tensor '{tensor.name}' external-data location '{location}' contains '..'; "
                                "refused (must stay inside the model's folder)",
                                file=shown, node=node_name or None)
        if location in inside:
            continue
        try:
            resolved = (base / location).resolve()
        except (RuntimeError, OSError) as exc:  # a symlink loop
            raise BadInputError(f"tensor '{tensor.name}' external-data location '{location}' cannot be resolved "
                                f"({' '.join(str(exc).split())[:80]}); refused", file=shown,
                                node=node_name or None) from None
        inside.add(location)
        if base != resolved and base not in resolved.parents:
            raise BadInputError(f"tensor '{tensor.name}' external-data location '{location}' resolves "
                                "outside the model's folder (symlink); refused",
                                file=shown, node=node_name or None)
