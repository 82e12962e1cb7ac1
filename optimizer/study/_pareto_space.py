"""What a Pareto trial may fix besides the budget: partition points of each model and the SRAM pool of each
DLA loadable, for one model or several planned together.

Partition points: each model's layer groups (in graph order) are cut into stages at up to `max_partitions`
points; a stage is left to the planner ("auto") or pinned whole to the GPU (the head of the "DLA backbone, GPU
head" split of the scheduling guide, seed 004) or, when `stage_engines` offers it, the DLA, pinning only the
groups that can run there (a DLA stage with GPU-only layers inside often needs more than 4 loadables, so it is
not offered by default). SRAM pools: one
power-of-two pool per loadable slot (DLA-SRAM-PER-LOADABLE), fitted into the shared SRAM on Xavier
(DLA-SRAM-XAVIER). The planner decides everything else under those pins and pools.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from optimizer.backends import backend_of
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import load_profile

STAGE_ENGINES = ("auto", "gpu", "dla")
DEFAULT_STAGE_ENGINES = ("auto", "gpu")  # a stage pinned to the DLA often needs more than 4 loadables


@dataclass(frozen=True)
class ModelStages:
    name: str  # the model's name in the plan (its file stem), used in parameter names
    anchors: tuple[str, ...]  # its layer groups' anchors in graph order (prefixed in a merged graph)
    kinds: tuple[frozenset[str], ...]  # accelerator kinds each group may run on


class ParetoSpace:
    """Turns a trial into pins and pools (and says what it chose, for trials.csv and front.json)."""

    def __init__(self, models: Sequence[Path], target_id: str, profile: Path | None, search_sram: bool,
                 max_partitions: int, stage_engines: Sequence[str] = DEFAULT_STAGE_ENGINES) -> None:
        from optimizer.multi._merge import merge_models, part_names, part_of
        from optimizer.study._run import _sram_choices

        catalog = load_catalog()
        self.target = catalog.target(target_id)
        self.max_partitions = max_partitions
        self.stage_engines = tuple(stage_engines)
        pools = backend_of(self.target).managed_sram and self.target.has_accelerator
        self.sram = _sram_choices(catalog, self.target) if search_sram and pools else []
        self.loadables = int(catalog.rule("DLA-LOADABLES").params["max"]) if self.sram else 0
        self.shared = bool(self.sram) and catalog.sram_is_shared(self.target)
        self.sram_budget = int(self.target.figure("dla_sram_bytes")) if self.sram else 0
        self.default_sram = self._default_sram(profile)
        self.stages: tuple[ModelStages, ...] = ()
        if max_partitions:
            paths = [str(m) for m in models]
            merged, parts = merge_models(paths)
            with tempfile.TemporaryDirectory(prefix="edgeplan-pareto-") as tmp:
                path = Path(tmp) / "models.onnx"
                path.write_bytes(merged)
                graph = load_model(path if len(parts) > 1 else Path(paths[0]))
            groups = build_groups(check_graph(graph, catalog, target_id)).groups
            names = part_names(paths)
            stages = []
            for k, name in enumerate(names):
                mine = [g for g in groups if part_of(g.anchor, parts) == k]
                stages.append(ModelStages(name, tuple(g.anchor for g in mine),
                                          tuple(frozenset(acc for acc, _ in g.support) for g in mine)))
            self.stages = tuple(stages)

    def _default_sram(self, profile: Path | None) -> int:
        if not self.sram:
            return 0
        pools = load_profile(self.target.family, str(profile) if profile else None).memory_pools
        value = int(pools.get("dla_sram_bytes", {}).get(self.target.generation, 0))
        return value if value in self.sram else self.sram[-1]

    def default_params(self) -> dict[str, Any]:
        """The planner alone: every pool at the profile's default, no cut."""
        params: dict[str, Any] = {f"sram_loadable_{k}": self.default_sram for k in range(self.loadables)}
        for m in self.stages:
            if len(m.anchors) > 1:
                params.update({f"cuts[{m.name}]": 0, f"stage_0[{m.name}]": "auto"})
        return params

    def pools(self, trial: optuna.trial.BaseTrial) -> tuple[int, ...]:
        if not self.loadables:
            return ()
        from optimizer.study._run import fit_shared_sram

        chosen = tuple(trial.suggest_categorical(f"sram_loadable_{k}", self.sram) for k in range(self.loadables))
        return fit_shared_sram(chosen, self.sram_budget, self.sram[0]) if self.shared else chosen

    def pins(self, trial: optuna.trial.BaseTrial) -> dict[str, str]:
        pins: dict[str, str] = {}
        for model in self.stages:
            count = len(model.anchors)
            if count < 2:
                continue
            cuts = trial.suggest_int(f"cuts[{model.name}]", 0, self.max_partitions)
            positions = sorted({trial.suggest_int(f"cut_{i}[{model.name}]", 1, count - 1) for i in range(cuts)})
            bounds = [0, *positions, count]
            for stage in range(len(bounds) - 1):
                engine = trial.suggest_categorical(f"stage_{stage}[{model.name}]", list(self.stage_engines))
                if engine == "auto":
                    continue
                for g in range(bounds[stage], bounds[stage + 1]):
                    if engine in model.kinds[g]:
                        pins[model.anchors[g]] = engine
        return dict(sorted(pins.items()))


__all__ = ["DEFAULT_STAGE_ENGINES", "STAGE_ENGINES", "ModelStages", "ParetoSpace"]
