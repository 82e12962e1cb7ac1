"""suggest: the candidate edits with their predicted gain; edit: apply them and prove nothing changed."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from optimizer.catalog import Catalog, load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError, EdgeplanError
from optimizer.fileio import refuse_unless_replaceable
from optimizer.ir import load_model
from optimizer.ir._safety import parse_model, read_model_bytes
from optimizer.plan import optimize
from optimizer.rewrite import Edit, apply_edits, candidate_edits
from optimizer.solver import PlanRequest

# Edits that make a model convertible at all rather than faster: re-planning prices nothing the toolkit would build.
_NO_REPLAN = frozenset({"fold-statistics"})


@dataclass(frozen=True)
class Suggestion:
    edit: Edit
    gain_ms: float | None  # predicted latency gain, re-planned with the edit; None for advice


def _replan_ms(path: Path, target: str, request: PlanRequest, shapes: Mapping[str, tuple[int, ...]] | None
               ) -> float | None:
    try:
        return optimize(str(path), target, request, input_shapes=shapes).plan.predicted.latency_ms
    except EdgeplanError:
        return None


def suggest(model_path: str, target: str, *, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
            request: PlanRequest | None = None, catalog: Catalog | None = None) -> tuple[float | None,
                                                                                         list[Suggestion]]:
    """Model edits that remove vendor violations, each re-planned for its gain; returns (base latency, edits)."""
    catalog = catalog or load_catalog()
    request = request or PlanRequest(time_limit_s=20)
    graph = load_model(model_path, input_shapes)
    report = check_graph(graph, catalog, target)
    base = None
    boundary: list[str] = []
    try:
        planned = optimize(model_path, target, request, input_shapes=input_shapes, catalog=catalog)
        base = planned.plan.predicted.latency_ms
        boundary = sorted({t.tensor for t in planned.plan.transfers})
    except EdgeplanError:
        pass
    proto = parse_model(read_model_bytes(Path(model_path)), model_path)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for edit in candidate_edits(report, input_shapes, boundary):
            gain = None
            if edit.applicable and base is not None and edit.kind not in _NO_REPLAN:
                edited = apply_edits(proto, graph, [edit])
                path = _save_beside(edited, Path(model_path), Path(tmp))
                replanned = _replan_ms(path, target, request, None)
                gain = None if replanned is None else round(base - replanned, 6)
            out.append(Suggestion(edit, gain))
    return base, out


def _save_beside(model: onnx.ModelProto, source: Path, folder: Path) -> Path:
    """Saved where relative external-data locations still resolve (structure-only weights stay missing)."""
    path = folder / f"{source.stem}.edited.onnx"
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            for entry in tensor.external_data:
                if entry.key == "location" and (source.parent / entry.value).exists():
                    entry.value = str((source.parent / entry.value).resolve())
    onnx.save(model, path)
    return path


def _runnable(model: onnx.ModelProto) -> bool:
    return all(t.data_location != onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def _outputs(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], reference: bool = False) -> list[np.ndarray]:
    """onnxruntime, or with `reference` onnx's own evaluator, which follows the spec where onnxruntime does not
    (onnxruntime's BatchNormalization ignores training_mode and normalises by the running statistics)."""
    if reference:
        from onnx.reference import ReferenceEvaluator

        return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, dict(feeds))]
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs: list[np.ndarray] = session.run(None, dict(feeds))
    return outputs


def edit(model_path: str, edit_ids: Sequence[str], out_path: str, *, target: str | None = None,
         input_shapes: Mapping[str, tuple[int, ...]] | None = None, catalog: Catalog | None = None
         ) -> dict[str, Any]:
    """Applies the edits, then verifies: same outputs in onnxruntime (when weights are present) and no
    more violation of each edit's rule on its node."""
    catalog = catalog or load_catalog()
    graph = load_model(model_path, input_shapes)
    proto = parse_model(read_model_bytes(Path(model_path)), model_path)
    targets = [target] if target else ["orin-agx", "xavier-agx", "rk3588"]
    known: dict[str, Edit] = {}
    for t in targets:
        for candidate in candidate_edits(check_graph(graph, catalog, t), input_shapes):
            known.setdefault(candidate.id, candidate)
    chosen = []
    for edit_id in edit_ids:
        if edit_id not in known:
            raise BadInputError(f"no edit '{edit_id}' applies to this model (see edgeplan suggest)", file=model_path)
        chosen.append(known[edit_id])
    edited = apply_edits(proto, graph, chosen)
    verification: dict[str, Any] = {"numerical": "skipped: structure-only model (no weights)"}
    if _runnable(proto):
        dims = {}
        for value in proto.graph.input:
            if value.name in {t.name for t in proto.graph.initializer}:
                continue
            shape = graph.shape(value.name) or ()
            fixed = next((e.params["dims"] for e in chosen if e.kind == "fix-dims" and e.target == value.name), None)
            dims[value.name] = [d if isinstance(d, int) else 1 for d in (fixed or shape)]
        rng = np.random.default_rng(0)
        feeds = {name: rng.normal(0, 1, shape).astype(np.float32) for name, shape in dims.items()}
        exact = any(graph.batch_statistics(n) for n in graph.nodes)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(_outputs(proto, feeds, exact),
                                                                 _outputs(edited, feeds, exact)))
        if diff > 1e-4:
            raise EdgeplanError(f"edited model's outputs differ by {diff:.3g} > 1e-4; not written", file=model_path)
        engine = "onnx.reference" if exact else "onnxruntime"
        verification["numerical"] = f"max abs difference {diff:.3g} ({engine}, random input)"
    out = Path(out_path)
    refuse_unless_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staged = _save_beside(edited, Path(model_path), Path(tmp))
        new_graph = load_model(staged)
        fixed = []
        for e in chosen:
            rule_target = target or ("orin-agx" if e.rule.startswith("DLA") else "rk3588")
            report = check_graph(new_graph, catalog, rule_target)
            if e.kind == "fix-dims":
                still = bool(new_graph.dynamic_dims)
            else:
                still = new_graph.has_node(e.target) and any(v.rule == e.rule for v in
                                                            report.verdict(e.target).violations)
            if still:
                raise EdgeplanError(f"after {e.id}, check still reports {e.rule}; not written", file=model_path,
                                    node=e.target, rule=e.rule)
            fixed.append({"id": e.id, "rule": e.rule, "checked_on": rule_target})
        refuse_unless_replaceable(out)
        staged.replace(out)
    verification["rules"] = fixed
    return {"schema": "edgeplan.edit/v1", "model": model_path, "out": str(out), "edits": [e.id for e in chosen],
            "verification": verification}
