"""Several ONNX models as one graph: each model's names get a prefix, so one CP-SAT model plans them all.

The union has no edges between models, so every existing stage (check, fusion, latency, the loadable
rules, export) works on it unchanged: a DLA loadable cannot span two models, because a loadable must be
connected, and the 4-loadable limit (DLA-LOADABLES) counts the loadables of every model together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import compose, version_converter

from optimizer.errors import BadInputError
from optimizer.ir._safety import parse_model, read_model_bytes

SEPARATOR = "/"
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Part:
    """One model of a multi-model plan: its name (the prefix of its nodes and tensors) and its file."""

    name: str
    path: str

    @property
    def prefix(self) -> str:
        return f"{self.name}{SEPARATOR}"


def part_names(paths: Sequence[str]) -> tuple[str, ...]:
    """File stems made safe as name prefixes, numbered when two files share a stem."""
    names: list[str] = []
    for path in paths:
        stem = _NAME.sub("_", Path(path).stem).strip("_.") or "model"
        name, k = stem, 2
        while name.lower() in {n.lower() for n in names}:
            name, k = f"{stem}_{k}", k + 1
        names.append(name)
    return tuple(names)


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {(o.domain or ""): o.version for o in model.opset_import}


def merge_models(paths: Sequence[str]) -> tuple[bytes, tuple[Part, ...]]:
    """The serialised union of the models (default-domain opset raised to the highest among them) and its
    parts. One model is returned as it is (no prefix), so a single-model plan keeps its node names."""
    if not paths:
        raise BadInputError("no model given")
    models = [parse_model(read_model_bytes(Path(p)), str(p)) for p in paths]
    if len(models) == 1:
        return models[0].SerializeToString(), (Part("", str(paths[0])),)
    names = part_names(paths)
    top = max(_opsets(m).get("", 1) for m in models)
    merged = onnx.helper.make_graph([], "edgeplan_models", [], [])
    opsets: dict[str, int] = {}
    ir_version = 0
    for path, name, model in zip(paths, names, models):
        if _opsets(model).get("", 1) < top:
            try:
                model = version_converter.convert_version(model, top)
            except Exception as exc:  # the converter raises bare RuntimeErrors on ops it cannot lift
                raise BadInputError(f"cannot raise its opset to {top} to plan it beside the other models "
                                    f"({type(exc).__name__}); export all models with one opset", file=str(path)
                                    ) from None
        prefixed = compose.add_prefix(model, f"{name}{SEPARATOR}")
        g = prefixed.graph
        merged.node.extend(g.node)
        merged.initializer.extend(g.initializer)
        merged.sparse_initializer.extend(g.sparse_initializer)
        merged.input.extend(g.input)
        merged.output.extend(g.output)
        merged.value_info.extend(g.value_info)
        for domain, version in _opsets(model).items():
            opsets[domain] = max(opsets.get(domain, 0), version)
        ir_version = max(ir_version, model.ir_version)
    union = onnx.helper.make_model(merged, opset_imports=[onnx.helper.make_opsetid(d, v)
                                                          for d, v in sorted(opsets.items())],
                                   producer_name="edgeplan", ir_version=ir_version)
    return union.SerializeToString(), tuple(Part(n, str(p)) for n, p in zip(names, paths))


def part_of(node_name: str, parts: Sequence[Part]) -> int:
    """Index of the part a (prefixed) node or tensor name belongs to."""
    if len(parts) == 1:
        return 0
    head = node_name.split(SEPARATOR, 1)[0]
    for k, part in enumerate(parts):
        if part.name == head:
            return k
    raise KeyError(node_name)
