"""export_plan(): plan.json + model -> sub-models, manifest.json, TensorRT or RKNN build files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import onnx

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError
from optimizer.export._rknn import convert_script, hybrid_yaml, rknn_settings
from optimizer.export._submodels import split_model
from optimizer.export._tensorrt import build_script, builder_script
from optimizer.fileio import atomic_write_bytes, atomic_write_text, write_json
from optimizer.ir import load_model
from optimizer.ir._safety import parse_model, read_model_bytes
from optimizer.plan import PLAN_SCHEMA
from optimizer.plan._validate import validate_plan

EXPORT_SCHEMA = "edgeplan.export/v1"


def read_plan(path: Path) -> dict[str, Any]:
    """Reads and validates the shape of a plan.json; bad input is a BadInputError naming the file."""
    if not path.is_file():
        raise BadInputError("plan file not found", file=str(path))
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"not a JSON plan: {exc}", file=str(path)) from None
    if not isinstance(plan, dict) or plan.get("schema") != PLAN_SCHEMA:
        raise BadInputError(f"not an {PLAN_SCHEMA} file", file=str(path))
    for key in ("target", "model", "layers", "subgraphs"):
        if key not in plan:
            raise BadInputError(f"plan lacks '{key}'", file=str(path))
    problem = _shape_problem(plan)
    if problem:
        raise BadInputError(f"malformed plan: {problem}", file=str(path))
    return plan


def _shape_problem(plan: dict[str, Any]) -> str:
    """The structure export relies on; what the values mean is checked by the plan validator."""
    model = plan["model"]
    if not isinstance(plan["target"], str):
        return "'target' must be a target ID"
    if not isinstance(model, dict) or not all(isinstance(model.get(k), str) for k in ("path", "sha256")):
        return "'model' must hold a 'path' and a 'sha256' string"
    if not isinstance(plan["layers"], list) or not all(isinstance(x, dict) for x in plan["layers"]):
        return "'layers' must be a list of objects"
    subgraphs = plan["subgraphs"]
    if not isinstance(subgraphs, list) or not subgraphs:
        return "'subgraphs' must be a non-empty list"
    for sub in subgraphs:
        if not isinstance(sub, dict):
            return "every subgraph must be an object"
        for key in ("nodes", "inputs", "outputs"):
            if not isinstance(sub.get(key), list) or not all(isinstance(x, str) for x in sub[key]):
                return f"subgraph {sub.get('id')!r}: '{key}' must be a list of names"
        if not isinstance(sub.get("device"), str) or not isinstance(sub.get("id"), int):
            return f"subgraph {sub.get('id')!r}: needs an integer 'id' and a 'device'"
    return ""


def export_plan(plan_path: str | Path, out_dir: str | Path, model_path: str | None = None) -> dict[str, Any]:
    """Writes one ONNX sub-model per plan subgraph, manifest.json and the vendor build files; returns the manifest."""
    plan_path = Path(plan_path)
    plan = read_plan(plan_path)
    model_file = Path(model_path or plan["model"]["path"])
    if not model_file.is_absolute() and not model_file.exists():
        model_file = plan_path.parent / model_file
    shapes = {k: tuple(v) for k, v in plan.get("input_shapes", {}).items()} or None
    graph = load_model(model_file, shapes)
    if graph.sha256 != plan["model"]["sha256"]:
        raise BadInputError("the model's sha256 differs from the plan's (re-plan or pass --model)",
                            file=str(model_file))
    catalog = load_catalog()
    if plan["target"] not in catalog.targets:
        raise BadInputError(f"unknown target '{plan['target']}' in the plan", file=str(plan_path))
    target = catalog.target(plan["target"])
    try:
        problems = validate_plan(plan, catalog, str(model_file), shapes, graph=graph)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise BadInputError(f"malformed plan: {type(exc).__name__}: {exc}", file=str(plan_path)) from None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BadInputError(f"the plan does not hold for this model: {problems[0]}{more}", file=str(plan_path))
    model = parse_model(read_model_bytes(model_file), str(model_file))
    folded = {n.name for n in graph.nodes if n.folded}
    subs = split_model(model, plan, graph.constants, folded)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BadInputError("--out exists and is not a directory", file=str(out))
    out.mkdir(parents=True, exist_ok=True)
    for sub in subs:
        _link_external_data(model_file.parent, out, sub.model)
        atomic_write_bytes(out / sub.name, sub.model.SerializeToString())
    engines = [{"id": sub.index, "device": sub.device, "onnx": sub.name, "inputs": list(sub.inputs),
                "outputs": list(sub.outputs), "precision": sub.precision, "nodes": len(sub.nodes)} for sub in subs]
    manifest = {"schema": EXPORT_SCHEMA, "plan": os.path.relpath(plan_path.resolve(), out.resolve()),
                "model": {"path": str(model_file), "sha256": graph.sha256}, "target": target.id,
                "engines": engines, "outputs": list(graph.outputs), "inputs": list(graph.inputs)}
    if target.accelerator == "dla":
        atomic_write_text(out / "build.sh", build_script(subs, plan, model_file.name), mode=0o755)
        atomic_write_text(out / "build_trt.py", builder_script(subs, plan))
        manifest["build"] = ["build.sh", "build_trt.py"]
    else:
        report = check_graph(graph, catalog, target.id)
        settings = rknn_settings(plan, graph, report.io)
        atomic_write_bytes(out / model_file.name, model.SerializeToString())
        atomic_write_text(out / "convert.py", convert_script(settings, model_file.name))
        atomic_write_text(out / "custom_quantize_layers.yaml", hybrid_yaml(settings))
        write_json(out / "runtime.json", settings)
        manifest["build"] = ["convert.py", "custom_quantize_layers.yaml", "runtime.json"]
    write_json(out / "manifest.json", manifest)
    return manifest


def _link_external_data(src_dir: Path, out: Path, model: onnx.ModelProto) -> None:
    """External weights stay where they are: the sub-model points at them through a relative path."""
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for entry in tensor.external_data:
            if entry.key == "location":
                source = (src_dir / entry.value).resolve()
                entry.value = os.path.relpath(source, out.resolve()) if source.exists() else entry.value


