"""export_plan(): plan.json + model -> sub-models, manifest.json, TensorRT or RKNN build files.

Everything is rendered and checked first and then written as one set (fileio.write_file_set), so a
plan that fails anywhere leaves the previous export as it was. File names come from subgraph indices,
catalog device names and a sanitised model stem, never from plan or model text.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from optimizer.backends import ExportInputs, backend_of
from optimizer.backends._submodels import link_external_data, split_model
from optimizer.catalog import DEFAULT_TENSORRT, TENSORRT_VERSIONS, load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError
from optimizer.fileio import FileData, dumps_json, write_file_set
from optimizer.ir import apply_input_shapes, load_model
from optimizer.ir._safety import MAX_FILE_BYTES, parse_model, read_model_bytes
from optimizer.plan import PLAN_SCHEMA
from optimizer.plan._validate import structure_problems, validate_plan

EXPORT_SCHEMA = "edgeplan.export/v1"


def read_plan(path: Path) -> dict[str, Any]:
    """Reads and validates the shape of a plan.json; bad input is a BadInputError naming the file."""
    if not path.is_file():
        raise BadInputError("plan file not found", file=str(path))
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BadInputError(f"plan file is larger than {MAX_FILE_BYTES} bytes", file=str(path))
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))  # NaN/Infinity: refused below, by field
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadInputError(f"not a JSON plan: {type(exc).__name__}: {exc}", file=str(path)) from None
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
    """The structure export relies on before it can look up the target; the rest is the validator's."""
    model = plan["model"]
    if not isinstance(plan["target"], str):
        return "'target' must be a target ID"
    if not isinstance(model, dict) or not all(isinstance(model.get(k), str) for k in ("path", "sha256")):
        return "'model' must hold a 'path' and a 'sha256' string"
    if "\0" in model["path"]:
        return "'model.path' holds a NUL byte"
    if not isinstance(plan["layers"], list) or not all(isinstance(x, dict) for x in plan["layers"]):
        return "'layers' must be a list of objects"
    if not isinstance(plan["subgraphs"], list) or not plan["subgraphs"]:
        return "'subgraphs' must be a non-empty list"
    return ""


def _nonfinite(value: Any, where: str = "") -> str:
    """The first figure of the plan that is not a finite number, as a field path."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top level)"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _nonfinite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nonfinite(item, f"{where}[{index}]")
            if found:
                return found
    return ""


def export_plan(plan_path: str | Path, out_dir: str | Path, model_path: str | None = None,
                tensorrt: str | None = None) -> dict[str, Any]:
    """Writes one ONNX sub-model per plan subgraph, manifest.json and the vendor build files; returns the manifest.
    `tensorrt` (Jetson plans): the TensorRT major to build for and whose DLA rules the plan must meet; default
    the plan's own rule set (`tensorrt_rules`), else 10."""
    plan_path = Path(plan_path)
    plan = read_plan(plan_path)
    shown_plan = str(plan_path)
    bad = _nonfinite(plan)
    if bad:
        raise BadInputError(f"field '{bad}' is not a finite number (NaN or infinite)", file=shown_plan)
    tensorrt = tensorrt or plan.get("tensorrt_rules") or DEFAULT_TENSORRT
    if tensorrt not in TENSORRT_VERSIONS:
        raise BadInputError(f"TensorRT major {str(tensorrt)[:20]!r} is not one of {', '.join(TENSORRT_VERSIONS)} "
                            "(field 'tensorrt_rules' or --trt)", file=shown_plan)
    catalog = load_catalog(tensorrt=tensorrt)
    if plan["target"] not in catalog.targets:
        raise BadInputError(f"unknown target '{plan['target']}' in the plan", file=shown_plan)
    target = catalog.target(plan["target"])
    problems = structure_problems(plan, catalog, target)
    if problems:
        raise BadInputError(f"malformed plan: {_first(problems)}", file=shown_plan)
    model_file = Path(model_path or plan["model"]["path"])
    if not model_file.is_absolute() and not model_file.exists():
        model_file = plan_path.parent / model_file
    shapes = {k: tuple(v) for k, v in (plan["model"].get("input_shapes") or {}).items()} or None
    graph = load_model(model_file, shapes)
    if graph.sha256 != plan["model"]["sha256"]:
        raise BadInputError("the model's sha256 differs from the plan's (re-plan or pass --model)",
                            file=str(model_file))
    try:
        problems = validate_plan(plan, catalog, str(model_file), shapes, graph=graph)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise BadInputError(f"malformed plan: {type(exc).__name__}: {exc}", file=shown_plan) from None
    if problems:
        raise BadInputError(f"the plan does not hold for this model: {_first(problems)}", file=shown_plan)
    model = parse_model(read_model_bytes(model_file), str(model_file))
    if shapes:  # the engines are built at the shapes the plan was made for (DLA and RKNN need them static)
        apply_input_shapes(model, shapes, str(model_file))
    folded = {n.name for n in graph.nodes if n.folded}
    subs = split_model(model, plan, graph.constants, folded)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BadInputError("--out exists and is not a directory", file=str(out))
    out_abs = Path(os.path.abspath(out))
    files: list[tuple[str, FileData]] = []
    build = backend_of(target).export(ExportInputs(
        model=model, plan=plan, subs=subs, graph=graph, model_file=model_file, out=out_abs, catalog=catalog,
        target=target, tensorrt=tensorrt, boundary_facts=lambda: check_graph(graph, catalog, target.id).io))
    subs = build.subs
    for sub in subs:
        link_external_data(model_file.parent, out_abs, sub.model)
        files.append((sub.name, sub.model.SerializeToString()))
    engines = [{"id": sub.index, "device": sub.device, "onnx": sub.name, "inputs": list(sub.inputs),
                "outputs": list(sub.outputs), "precision": sub.precision, "nodes": len(sub.nodes)} for sub in subs]
    manifest = {"schema": EXPORT_SCHEMA, "plan": os.path.relpath(plan_path.resolve(), out_abs.resolve()),
                "model": {"path": str(model_file), "sha256": graph.sha256}, "target": target.id,
                "engines": engines, "outputs": list(graph.outputs), "inputs": list(graph.inputs), **build.manifest}
    files += build.files
    files.append(("manifest.json", dumps_json(manifest)))
    names = [name for name, _ in files]
    for name in names:
        if names.count(name) > 1:
            raise BadInputError(f"two exported files would be named '{name}' (rename the model file)",
                                file=str(model_file))
    write_file_set(out, dict(files))
    return manifest


def _first(problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more
