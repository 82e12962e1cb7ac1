"""edgeplan calibrate: measurements in, one fitted profile per target family out, with the evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from optimizer.calibrate._calibrate import (
    Observation,
    Skipped,
    cross_validate,
    csv_fitted_on,
    error_bands,
    errors,
    fit_observations,
    observations,
    profile_text,
    summary,
)
from optimizer.calibrate._fit import predict_all
from optimizer.calibrate._measurements import Measurement, read_measurements
from optimizer.calibrate._vendor import vendor_observations
from optimizer.catalog import Catalog, family_files, load_catalog
from optimizer.errors import BadInputError
from optimizer.fileio import atomic_write_text, sha256_file, write_json
from optimizer.latency import load_profile
from optimizer.latency._profile import profile_file

CALIBRATION_SCHEMA = "edgeplan.calibration/v1"


# per-row prediction fields -> the summary names calibration.json gives them
# (leave-one-source-out first: the honest figure for measurements from a harness the fit never saw)
SUMMARIES = {"predicted_loso": "source_cross_validation", "predicted_cv": "cross_validation",
             "predicted_prior": "prior", "predicted_fit": "fit"}


@dataclass(frozen=True)
class FamilyResult:
    family: str
    profile: str  # TOML text
    rows: list[dict[str, Any]]


def _summary(rows: Sequence[dict[str, Any]], field: str) -> dict[str, float] | None:
    """Error summary of one prediction field over rows; None when the field was not computed (--no-cv)."""
    if any(row[field] is None for row in rows):
        return None
    return summary(errors([row[field] for row in rows], [row["observed"] for row in rows]))


def _by_device(rows: Sequence[dict[str, Any]], field: str) -> dict[str, dict[str, float] | None]:
    devices = sorted({row["device"] for row in rows})
    return {d: _summary([row for row in rows if row["device"] == d], field) for d in devices}


def calibrate_family(obs: Sequence[Observation], family: str, prior_path: str | None, fitted_on: str,
                     cross: bool, generations: Mapping[str, str] | None = None) -> FamilyResult:
    """`generations`: every calibration key of the family -> its hardware generation (the catalog's), so a key
    without rows gets its generation's fitted constants in the profile."""
    prior = load_profile(family, prior_path, prior=prior_path is None)
    prior = replace(prior, targets=MappingProxyType({}))  # refit from family constants, not an earlier fit
    fitted = fit_observations(obs, prior)
    before = predict_all(fitted.problem, fitted.problem.prior)
    cv = cross_validate(obs, prior, full=fitted.problem) if cross else None
    loso = cross_validate(obs, prior, by="origin", full=fitted.problem) if cross else None
    rows = []
    for i, o in enumerate(obs):
        s = o.scenario.situation
        rows.append({"label": o.label, "family": o.family, "origin": o.origin, "device": o.device, "target": o.target,
                     "situation": s.describe(), "metric": o.metric, "observed": o.observed,
                     "command": s.command(o.model, o.target) if o.model else "",
                     "predicted_prior": round(float(before[i]), 6),
                     "predicted_fit": round(float(fitted.predicted[i]), 6),
                     "predicted_cv": round(float(cv[i]), 6) if cv is not None else None,
                     "predicted_loso": round(float(loso[i]), 6) if loso is not None else None})
    bands = error_bands(obs, loso) if loso is not None else None
    return FamilyResult(family=family, profile=profile_text(prior, fitted, obs, fitted_on, bands, generations),
                        rows=rows)


@dataclass(frozen=True)
class LayerInput:
    """Per-layer timings of one model on one target: trtexec profile (+ layer info) or rknn eval_perf."""

    model: str
    target: str
    trtexec_profile: str | None = None
    trtexec_layers: str | None = None
    rknn_perf: str | None = None
    precision: str = "fp16"  # trtexec layers without layer info


def run_calibration(csv_path: str | Path | None, models: str | Path | None, out: str | Path, *,
                    families: Sequence[str] = (), priors: dict[str, str] | None = None, cross: bool = True,
                    layer_inputs: Sequence[LayerInput] = (), catalog: Catalog | None = None) -> dict[str, Any]:
    catalog = catalog or load_catalog()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadInputError("--out exists and is not a directory", file=str(out))
    if csv_path is None and not layer_inputs:
        raise BadInputError("nothing to fit: give --csv and/or per-layer timings (--trtexec-profile, --rknn-perf)")
    measurements = read_measurements(csv_path, models or Path(csv_path).parent) if csv_path else []
    known = family_files()
    chosen = list(families) or list(known)
    unknown = set(chosen) - set(known)
    if unknown:
        raise BadInputError(f"unknown family {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    prior_profiles = {f: load_profile(f, (priors or {}).get(f), prior=f not in (priors or {})) for f in chosen}
    relevant: list[Measurement] = []
    elsewhere: list[Measurement] = []
    for m in measurements:
        (relevant if m.target and catalog.target(m.target).family in chosen else elsewhere).append(m)
    obs, skipped = observations(relevant, catalog, prior_profiles)
    skipped += [Skipped(f"csv row {m.row}", m.reason or "device is not an edgeplan target") for m in elsewhere]
    for entry in layer_inputs:
        family = catalog.target(entry.target).family
        if family not in chosen:
            continue
        found, unmatched = vendor_observations(
            model=entry.model, target=entry.target, catalog=catalog, prior=prior_profiles[family],
            trtexec_profile=entry.trtexec_profile, trtexec_layers_path=entry.trtexec_layers,
            rknn_perf=entry.rknn_perf, precision=entry.precision)
        obs += found
        source = entry.trtexec_profile or entry.rknn_perf
        skipped += [Skipped(f"{Path(str(source)).name}: {name}", "no ONNX node of the model in the layer name")
                    for name in unmatched]
    fitted_on = _fitted_on(csv_path, layer_inputs, len(obs), len(measurements))
    results = []
    for family in chosen:
        family_obs = [o for o in obs if catalog.target(o.target).family == family]
        if not family_obs:
            continue
        generations = {t.calibration: t.generation for t in catalog.targets.values() if t.family == family}
        results.append(calibrate_family(family_obs, family, (priors or {}).get(family), fitted_on, cross,
                                        generations))
    if not results:
        raise BadInputError("no usable measurement for the chosen families", file=str(csv_path))
    out.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {"schema": CALIBRATION_SCHEMA, "csv": str(csv_path) if csv_path else None,
                                "models": str(models) if models else None,
                                "families": {}, "skipped": [{"label": s.label, "reason": s.reason}
                                                           for s in sorted(skipped, key=lambda s: _row(s.label))]}
    all_rows = []
    for result in results:
        path = out / profile_file(result.family)
        atomic_write_text(path, result.profile)
        all_rows += result.rows
        document["families"][result.family] = {
            "profile": path.name, **{name: _summary(result.rows, field) for field, name in SUMMARIES.items()},
            "rows": result.rows, "by_device_loso": _by_device(result.rows, "predicted_loso") if cross else None,
            "by_device_cv": _by_device(result.rows, "predicted_cv") if cross else None,
            "by_device_fit": _by_device(result.rows, "predicted_fit")}
    document["overall"] = {name: _summary(all_rows, field) for field, name in SUMMARIES.items()}
    write_json(out / "calibration.json", document)
    return document


def _fitted_on(csv_path: str | Path | None, layer_inputs: Sequence[LayerInput], used: int, rows: int) -> str:
    parts = [csv_fitted_on(sha256_file(Path(csv_path)), used, rows)] if csv_path else [f"{used} observations"]
    for entry in layer_inputs:
        source = Path(str(entry.trtexec_profile or entry.rknn_perf))
        parts.append(f"per-layer times {source.name} (sha256 {sha256_file(source)[:16]}...) of "
                     f"{Path(entry.model).name} on {entry.target}")
    return "; ".join(parts)


def _row(label: str) -> tuple[int, str]:
    tail = label.rsplit(" ", 1)[-1]
    return (int(tail), label) if tail.isdigit() else (0, label)
