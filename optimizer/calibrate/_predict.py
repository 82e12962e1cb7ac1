"""predict(): one model, one target, one fixed situation -> the figure the latency model expects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.calibrate._situation import Figure, Scenario, Situation, prepare, score
from optimizer.catalog import Catalog, load_catalog
from optimizer.fileio import sha256_file
from optimizer.latency import Band, load_profile
from optimizer.latency._profile import band_json
from optimizer.solver import PlanRequest

PREDICT_SCHEMA = "edgeplan.predict/v1"


@dataclass(frozen=True)
class Prediction:
    scenario: Scenario
    figure: Figure
    profile: str  # name of the latency profile used
    band: Band | None = None  # the LOSO error of comparable rows, as latency ratios

    @property
    def value(self) -> float:
        return self.figure.value(self.scenario.situation.metric)

    @property
    def unit(self) -> str:
        return "ms" if self.scenario.situation.metric == "latency" else "frames/s"

    def to_json(self, model: str | Path) -> dict[str, Any]:
        s = self.scenario.situation
        return {"schema": PREDICT_SCHEMA, "target": self.scenario.target,
                "model": {"path": str(model), "sha256": sha256_file(Path(model))},
                "accelerator": s.accelerator, "precision": s.precision, "batch": s.batch, "cores": s.cores,
                "latency_ms": round(self.figure.latency_s * 1e3, 6),
                "throughput_fps": round(self.figure.throughput, 6),
                "metric": s.metric, "value": round(self.value, 6), "unit": self.unit, "sparse": s.sparse,
                "gpu_batch": s.gpu_batch, "separate_runs": s.separate_runs, "io_included": s.io_included,
                "host_timed": s.host_timed, "default_formats": s.default_formats,
                "profile": self.profile,
                "accelerator_share_of_macs": round(self.scenario.accelerator_share, 6), "tf32": s.tf32,
                "latency_band_ms": band_json(self.band, self.figure.latency_s * 1e3)}


def predict(model_path: str | Path, target_id: str, situation: Situation, *, catalog: Catalog | None = None,
            profile_path: str | Path | None = None,
            input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Prediction:
    """The figure one fixed deployment is predicted to reach (`edgeplan predict`), with the LOSO error band
    of comparable published rows when the profile has one."""
    catalog = catalog or load_catalog()
    target = catalog.target(target_id)
    profile = load_profile(target.family, profile_path)
    planned = None
    if situation.accelerator == "auto":
        from optimizer.plan import optimize  # the planner is only needed for 'auto'

        objective = "throughput" if situation.metric == "throughput" else "latency"
        request = PlanRequest(objective=objective, allowed_precisions=frozenset({situation.precision}))
        planned = optimize(str(model_path), target_id, request, input_shapes=input_shapes,
                           profile_path=str(profile_path) if profile_path else None, catalog=catalog).placements
    scenario = prepare(model_path, target_id, situation, catalog, profile, input_shapes=input_shapes,
                       planned=planned)
    device = target.accelerator if situation.accelerator == "auto" else situation.accelerator
    band = profile.band(target.calibration, device, situation.precision)
    return Prediction(scenario=scenario, figure=score(scenario, profile.constants), profile=profile.name, band=band)

