"""export_plan(): plan.json + model -> sub-models, manifest.json, TensorRT or RKNN build files.

Everything is rendered and checked first and then written as one set (fileio.write_file_set), so a
plan that fails anywhere leaves the previous export as it was. File names come from subgraph indices,
catalog device names and a sanitised model stem, never from plan or model text.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnx

from optimizer.catalog import DEFAULT_TENSORRT, TENSORRT_VERSIONS, Catalog, Target, load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError
from optimizer.export._rknn import convert_script, hybrid_yaml, rknn_settings
from optimizer.export._submodels import SubModel, split_model, value_infos
from optimizer.export._tensorrt import boundary_io, build_script, builder_script
from optimizer.export._typed import calibrate_script, check_opset, plan_typing, typed_submodel
from optimizer.fileio import FileData, dumps_json, safe_name, write_file_set
from optimizer.ir import apply_input_shapes, load_model, node_names
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
    dla = target.accelerator == "dla"
    typed: list[tuple[str, FileData]] = []
    if dla and tensorrt == "11":
        subs, typed = _strongly_typed(model, plan, subs, graph, model_file, out_abs, dla_formats(catalog, target))
    for sub in subs:
        _link_external_data(model_file.parent, out_abs, sub.model)
        files.append((sub.name, sub.model.SerializeToString()))
    engines = [{"id": sub.index, "device": sub.device, "onnx": sub.name, "inputs": list(sub.inputs),
                "outputs": list(sub.outputs), "precision": sub.precision, "nodes": len(sub.nodes)} for sub in subs]
    manifest = {"schema": EXPORT_SCHEMA, "plan": os.path.relpath(plan_path.resolve(), out_abs.resolve()),
                "model": {"path": str(model_file), "sha256": graph.sha256}, "target": target.id,
                "engines": engines, "outputs": list(graph.outputs), "inputs": list(graph.inputs)}
    if dla:
        for layer in plan["layers"]:  # trtexec takes layer names on its command line: argv cannot hold NUL
            if "\0" in layer["node"]:
                raise BadInputError("a node name with a NUL byte cannot reach trtexec's command line; rename the "
                                    "node", file=str(model_file), node=layer["node"])
        manifest["tensorrt"] = tensorrt
        keep = frozenset(graph.inputs) | frozenset(graph.outputs) if tensorrt == "11" else frozenset()
        io = boundary_io(subs, plan, keep, dla_formats(catalog, target))
        whole = typed[0][0] if typed else os.path.relpath(model_file.resolve(), out_abs.resolve())
        files.append(("build.sh", (build_script(subs, plan, whole, tensorrt, io), 0o755)))
        files.append(("build_trt.py", builder_script(subs, plan, tensorrt, io)))
        files += typed
        manifest["build"] = ["build.sh", "build_trt.py", *(name for name, _ in typed)]
    else:
        report = check_graph(graph, catalog, target.id)
        settings = rknn_settings(plan, graph, report.io, target.toolkit_platform)
        copy = f"{safe_name(model_file.stem)}.onnx"
        files.append((copy, model.SerializeToString()))
        files.append(("convert.py", convert_script(settings, copy)))
        files.append(("custom_quantize_layers.yaml", hybrid_yaml(settings)))
        files.append(("runtime.json", dumps_json(settings)))
        manifest["build"] = ["convert.py", "custom_quantize_layers.yaml", "runtime.json"]
    files.append(("manifest.json", dumps_json(manifest)))
    names = [name for name, _ in files]
    for name in names:
        if names.count(name) > 1:
            raise BadInputError(f"two exported files would be named '{name}' (rename the model file)",
                                file=str(model_file))
    write_file_set(out, dict(files))
    return manifest


def dla_formats(catalog: Catalog, target: Target) -> Mapping[str, Any]:
    """DLA-IO-IN/OUT: which I/O formats each DLA type allows, per side."""
    standard: Mapping[str, Any] = catalog.family_of(target).formats.get("standard", {})
    return standard


def _strongly_typed(model: onnx.ModelProto, plan: dict[str, Any], subs: list[SubModel], graph: Any,
                    model_file: Path, out: Path, formats: Mapping[str, Any]
                    ) -> tuple[list[SubModel], list[tuple[str, FileData]]]:
    """TensorRT 11: the sub-models with the plan's precisions as tensor types, the whole model typed the same
    way (the single-engine alternative) and the INT8 scales they hold (qdq_scales.json)."""
    check_opset(model, any(layer["precision"] == "int8" for layer in plan["layers"]), str(model_file))
    io = boundary_io(subs, plan, frozenset(graph.inputs) | frozenset(graph.outputs), formats)
    infos = value_infos(model)
    typing = plan_typing(model, plan, subs, infos, io)
    typed = [typed_submodel(sub, typing) for sub in subs]
    source = onnx.ModelProto()
    source.CopyFrom(model)
    for value in source.graph.output:  # inferred shapes, as the sub-models have, so the checker can type it
        if value.name in infos:
            value.CopyFrom(infos[value.name])
    everything = SubModel(index=-1, device="gpu", name=f"{safe_name(model_file.stem)}_typed.onnx",
                          inputs=tuple(graph.inputs), outputs=tuple(graph.outputs),
                          nodes=tuple(node_names(model)), precision="mixed", model=source)
    whole = typed_submodel(everything, typing, whole=True)
    _link_external_data(model_file.parent, out, whole.model)
    scales: dict[str, dict[str, Any]] = {}
    for sub in (*typed, whole):
        for tensor in sub.model.graph.initializer:
            base = tensor.name[:-len("__edgeplan_scale")]
            if tensor.name.endswith("__edgeplan_scale") and base in typing.scales:
                scales[base] = {"initializer": tensor.name, "value": typing.scales[base],
                                "from": "weights" if base in typing.weights else "placeholder"}
    listing = {"schema": "edgeplan.qdq-scales/v1", "note": "INT8 scales in the engine ONNX files; 'placeholder' "
               "ones (1.0) are for timing only: python calibrate_qdq.py samples.txt sets them (max|x|/127)",
               "scales": dict(sorted(scales.items()))}
    placeholders = {t: s["initializer"] for t, s in sorted(scales.items()) if s["from"] == "placeholder"}
    original = os.path.relpath(model_file.resolve(), out.resolve())
    script = calibrate_script(original, graph.inputs, placeholders, [sub.name for sub in (*typed, whole)])
    return typed, [(whole.name, whole.model.SerializeToString()), ("qdq_scales.json", dumps_json(listing)),
                   ("calibrate_qdq.py", script)]


def _first(problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more


def _link_external_data(src_dir: Path, out: Path, model: onnx.ModelProto) -> None:
    """External weights stay where they are: the sub-model points at them through a relative path."""
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for entry in tensor.external_data:
            if entry.key == "location":
                source = (src_dir / entry.value).resolve()
                entry.value = os.path.relpath(source, out.resolve()) if source.exists() else entry.value
