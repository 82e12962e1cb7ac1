"""Checks that run before anything else looks at a model file: it is untrusted input."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import onnx

from optimizer.errors import BadInputError

MAX_FILE_BYTES = 2 << 30  # protobuf cannot hold more; larger files are not ONNX models
MAX_TENSOR_ELEMENTS = 1 << 34  # 16 G elements: no edge accelerator holds a bigger tensor
MIN_OPSET = 7  # the oldest opset onnx's shape inference and the vendor parsers still accept


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
    if size > MAX_FILE_BYTES:
        raise BadInputError(f"file is {size} bytes; an ONNX protobuf holds at most 2 GiB "
                            "(weights belong in external data)", file=shown)
    return path.read_bytes()


def parse_model(data: bytes, shown: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError and, for some garbage, RuntimeWarning-like errors
        raise BadInputError(f"not an ONNX model: protobuf parse failed ({type(exc).__name__}); "
                            "the file is truncated or not ONNX", file=shown) from None
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise BadInputError("not an ONNX model: no graph with nodes (truncated or not ONNX)", file=shown)
    if model.ir_version <= 0:
        raise BadInputError("not an ONNX model: ir_version is missing", file=shown)
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
    return version


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every subgraph (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_graphs(sub)


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
        count = 1
        for d in tensor.dims:
            count *= d
        if count > MAX_TENSOR_ELEMENTS:
            raise BadInputError(f"tensor '{tensor.name}' claims {count} elements (limit 2^34)",
                                file=shown, node=node_name or None)
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
        resolved = (base / location).resolve()
        inside.add(location)
        if base != resolved and base not in resolved.parents:
            raise BadInputError(f"tensor '{tensor.name}' external-data location '{location}' resolves "
                                "outside the model's folder (symlink); refused",
                                file=shown, node=node_name or None)
