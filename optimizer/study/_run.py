"""Optuna studies: SRAM pools and pipeline partitions searched around the CP-SAT planner.

Each trial fixes the SRAM pool and (optionally) cut points that split the layer groups into stages with
an engine each; the planner decides everything else under those pins and scores the plan. Trial 0 is
the planner's own result (no pins, default SRAM), so the best plan is never worse than the planner's.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import fcntl
import hashlib
import importlib.metadata
import io
import platform
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from optimizer import __version__
from optimizer.catalog import Catalog, Target, load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError, EdgeplanError
from optimizer.fileio import atomic_write_text, dumps_json, sha256_file, write_json
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import load_profile
from optimizer.plan import optimize, plan_html
from optimizer.solver import PlanRequest, check_target
from optimizer.study._config import StudyConfig, load_config
from optimizer.study._report import study_report_html

STATES_DONE = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)


@dataclass(frozen=True)
class StudyOutcome:
    folder: Path
    best_value: float
    best_trial: int
    trials: int
    baseline_value: float


def _sram_choices(catalog: Catalog, target: Target) -> list[int]:
    if target.accelerator == "dla" and not target.has_accelerator:
        return [0]  # a GPU-only module: no DLA SRAM to search
    if target.accelerator == "dla":
        top = int(target.figure("dla_sram_bytes"))
        minimum = int(catalog.rule("DLA-POOL-POW2").params["min_bytes"])
        sizes, size = [], minimum
        while size <= top:
            sizes.append(size)
            size *= 2
        return sizes
    sram = int(target.features.get("sram_bytes", 0))
    return [0, sram] if sram else [0]


def fit_shared_sram(sizes: Sequence[int], budget: int, minimum: int) -> tuple[int, ...]:
    """DLA-SRAM-XAVIER: halve the largest pool (the later slot on ties) until the pools fit the shared SRAM,
    so every sampled point is a buildable one and the same sample always maps to the same pools."""
    sizes = list(sizes)
    while sum(sizes) > budget:
        largest = max(range(len(sizes)), key=lambda k: (sizes[k], k))
        if sizes[largest] <= minimum:
            break
        sizes[largest] //= 2
    return tuple(sizes)


def _engines(target: Target) -> list[str]:
    """A stage is left to the planner ("auto") or forced onto the fallback engine (the head of a
    "DLA backbone + GPU head" split, seed 004); forcing the accelerator instead would make most cut
    positions infeasible (loadable limit), so the planner keeps deciding the accelerator side."""
    return [target.fallback]


class _Space:
    """Turns an Optuna trial into a PlanRequest (and back to readable params)."""

    def __init__(self, config: StudyConfig) -> None:
        self.config = config
        self.catalog = load_catalog()
        self.target = self.catalog.target(config.target)
        check_target(PlanRequest(objective=config.objective), self.target)  # exit 2 before any trial runs
        graph = load_model(config.model, config.input_shapes or None)
        report = check_graph(graph, self.catalog, config.target)
        self.groups = build_groups(report)
        self.sram = _sram_choices(self.catalog, self.target)
        self.engines = _engines(self.target)
        self.default_sram = self._default_sram()
        self.loadables = int(self.catalog.rule("DLA-LOADABLES").params["max"]) if self.target.accelerator == "dla" \
            and self.target.has_accelerator else 0

    def _default_sram(self) -> int:
        target = self.target
        profile = load_profile(target.family, self.config.profile)
        pools = profile.memory_pools.get("dla_sram_bytes", {}) if target.accelerator == "dla" else {}
        value = int(pools.get(target.generation, 0)) if pools else int(target.features.get("sram_bytes", 0))
        return value if value in self.sram else self.sram[-1]

    def default_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.config.search_sram and len(self.sram) > 1 and self.loadables:
            params.update({f"sram_loadable_{k}": self.default_sram for k in range(self.loadables)})
        elif self.config.search_sram and len(self.sram) > 1:
            params["sram_bytes"] = self.default_sram
        if self.config.max_partitions:
            params["cuts"] = 0
            params["stage_0_engine"] = "auto"
        return params

    def request(self, trial: optuna.trial.BaseTrial) -> PlanRequest:
        cfg = self.config
        sram, per_loadable = None, ()
        if cfg.search_sram and len(self.sram) > 1 and self.loadables:  # DLA-SRAM-PER-LOADABLE
            per_loadable = tuple(trial.suggest_categorical(f"sram_loadable_{k}", self.sram)
                                 for k in range(self.loadables))
            if self.catalog.sram_is_shared(self.target):
                per_loadable = fit_shared_sram(per_loadable, int(self.target.figure("dla_sram_bytes")), self.sram[0])
            trial.set_user_attr("sram_per_loadable", list(per_loadable))
        elif cfg.search_sram and len(self.sram) > 1:
            sram = trial.suggest_categorical("sram_bytes", self.sram)
        pins: dict[str, str] = {}
        if cfg.max_partitions and len(self.groups.groups) > 1:
            cuts = trial.suggest_int("cuts", 0, cfg.max_partitions)
            positions = sorted({trial.suggest_int(f"cut_{i}", 1, len(self.groups.groups) - 1) for i in range(cuts)})
            bounds = [0, *positions, len(self.groups.groups)]
            for stage in range(len(bounds) - 1):
                engine = trial.suggest_categorical(f"stage_{stage}_engine", ["auto", *self.engines])
                if engine == "auto":
                    continue
                kind = "dla" if engine.startswith("dla") else engine
                for group in self.groups.groups[bounds[stage]:bounds[stage + 1]]:
                    if any(acc == kind for acc, _ in group.support):
                        pins[group.anchor] = engine
        return PlanRequest(objective=cfg.objective, time_limit_s=cfg.time_limit_s, seed=cfg.seed, pins=pins,
                           sram_bytes=sram, sram_per_loadable=per_loadable, explain_infeasible=False)


def _score(plan: dict[str, Any], objective: str) -> float:
    return plan["predicted"]["latency_ms"] if objective == "latency" else plan["predicted"]["busiest_engine_ms"]


def _objective(space: _Space):
    cfg = space.config

    def run(trial: optuna.trial.Trial) -> float:
        request = space.request(trial)
        try:
            planned = optimize(str(cfg.model), cfg.target, request, input_shapes=cfg.input_shapes or None,
                               profile_path=str(cfg.profile) if cfg.profile else None)
        except EdgeplanError as exc:
            trial.set_user_attr("error", exc.one_line()[:300])
            raise optuna.TrialPruned(exc.one_line()[:200]) from None
        plan = planned.plan
        trial.set_user_attr("plan_sha256", hashlib.sha256(dumps_json(plan).encode()).hexdigest())
        trial.set_user_attr("breakdown", plan["breakdown"])
        trial.set_user_attr("pins", len(request.pins))
        return _score(plan, cfg.objective)

    return run


def _storage(url: str) -> optuna.storages.BaseStorage:
    try:
        kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
        return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)
    except Exception as exc:  # invalid URL, unreachable server, corrupted file
        detail = " ".join(str(exc).split())[:200]
        raise BadInputError(f"study storage {url.split('@')[-1]} cannot be opened: {type(exc).__name__}: {detail} "
                            "(remove or repair it, or pass another --storage)") from None


@contextlib.contextmanager
def _lock(url: str) -> Iterator[None]:
    """Serialises 'count the trials, then ask for one' across workers, so a study gets exactly n_trials:
    an advisory lock on PostgreSQL, a file lock beside an SQLite database."""
    if url.startswith("postgresql"):
        import sqlalchemy

        engine = sqlalchemy.create_engine(url)
        key = int(hashlib.sha256(url.encode()).hexdigest()[:15], 16)
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": key})
            try:
                yield
            finally:
                connection.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        engine.dispose()
        return
    path = url.split("///", 1)[-1] + ".lock" if url.startswith("sqlite") else None
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sampler(cfg: StudyConfig) -> optuna.samplers.BaseSampler:
    if cfg.sampler == "random":
        return optuna.samplers.RandomSampler(seed=cfg.seed)
    return optuna.samplers.TPESampler(seed=cfg.seed, n_startup_trials=min(5, cfg.n_trials))


def _pruner(cfg: StudyConfig) -> optuna.pruners.BasePruner:
    return optuna.pruners.MedianPruner() if cfg.pruner == "median" else optuna.pruners.NopPruner()


def _done(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=STATES_DONE))


def _recover(study: optuna.Study) -> int:
    """After a crash (SIGKILL mid-trial) a local study's RUNNING trials belong to no live worker: fail
    them and queue their parameters again, so the trial is neither lost nor counted twice."""
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in running:
        study._storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(trial.params, skip_if_exists=False)
    return len(running)


def _execute(space: _Space, storage_url: str, recover: bool = False) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = space.config
    with _lock(storage_url):  # also serialises creating the storage's schema on a fresh database
        storage = _storage(storage_url)
        study = optuna.create_study(study_name=cfg.name, storage=storage, direction="minimize",
                                    sampler=_sampler(cfg), pruner=_pruner(cfg), load_if_exists=True)
        if not study.trials:
            study.enqueue_trial(space.default_params())
        elif recover:
            _recover(study)
    objective = _objective(space)
    counted = (*STATES_DONE, optuna.trial.TrialState.RUNNING)
    while True:
        with _lock(storage_url):
            if len(study.get_trials(deepcopy=False, states=counted)) >= cfg.n_trials:
                break
            trial = study.ask()
        try:
            study.tell(trial, objective(trial))
        except optuna.TrialPruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        except BaseException:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
    return study


def _package_versions() -> dict[str, str]:
    out = {}
    for name in ("ortools", "onnx", "numpy", "optuna", "edgeplan"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _write_artifacts(space: _Space, folder: Path, study: optuna.Study, storage_url: str,
                     command: Sequence[str]) -> StudyOutcome:
    cfg = space.config
    completed = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not completed:
        raise EdgeplanError("no trial produced a plan; see trials.csv for the errors", file=str(folder))
    best = min(completed, key=lambda t: (t.value, t.number))
    request = space.request(optuna.trial.FixedTrial(best.params))
    planned = optimize(str(cfg.model), cfg.target, request, input_shapes=cfg.input_shapes or None,
                       profile_path=str(cfg.profile) if cfg.profile else None)
    write_json(folder / "plan.json", planned.plan)
    params = sorted({k for t in study.trials for k in t.params})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["number", "state", *params, "sram_per_loadable", "latency_ms", "objective_value", "plan_sha256",
                     "error"])
    for t in sorted(study.trials, key=lambda t: t.number):
        pools = t.user_attrs.get("sram_per_loadable")
        writer.writerow([t.number, t.state.name, *[t.params.get(p, "") for p in params],
                         " ".join(str(b) for b in pools) if pools else "",
                         _latency(t), "" if t.value is None else round(t.value, 6),
                         t.user_attrs.get("plan_sha256", ""), t.user_attrs.get("error", "")])
    atomic_write_text(folder / "trials.csv", buffer.getvalue())
    baseline = next((t.value for t in sorted(study.trials, key=lambda t: t.number)
                     if t.state == optuna.trial.TrialState.COMPLETE), best.value)
    catalog, target = space.catalog, space.target
    manifest = {
        "schema": "edgeplan.study/v1", "tool_version": __version__, "name": cfg.name,
        "python": platform.python_version(), "packages": _package_versions(),
        "catalog_sha256": catalog.sha256,
        "profile_sha256": hashlib.sha256(load_profile(target.family, cfg.profile).text.encode()).hexdigest(),
        "model": {"path": str(cfg.model), "sha256": sha256_file(cfg.model)},
        "target": cfg.target, "objective": cfg.objective, "seed": cfg.seed, "sampler": cfg.sampler,
        "n_trials": cfg.n_trials, "storage": storage_url.split("@")[-1] if "@" in storage_url else storage_url,
        "command_line": list(command), "best_trial": best.number, "best_value": best.value,
        "first_trial_value": baseline,
        "plan_sha256": hashlib.sha256((folder / "plan.json").read_bytes()).hexdigest(),
    }
    write_json(folder / "manifest.json", manifest)
    atomic_write_text(folder / "plan.html", plan_html(planned))
    atomic_write_text(folder / "report.html", study_report_html(cfg, study, planned.plan))
    return StudyOutcome(folder=folder, best_value=best.value, best_trial=best.number,
                        trials=_done(study), baseline_value=baseline)


def _latency(trial: optuna.trial.FrozenTrial) -> float | str:
    breakdown = trial.user_attrs.get("breakdown", {})
    parts = ("layers_ms", "transfers_ms", "reformats_ms", "launches_ms")
    return round(sum(breakdown.get(p, 0.0) for p in parts), 6) if breakdown else ""


def run_study(config_path: str, out_dir: str | None = None, storage: str | None = None,
              command: Sequence[str] = ()) -> StudyOutcome:
    cfg = load_config(config_path)
    folder = Path(out_dir) if out_dir else Path(config_path).resolve().parent / cfg.name
    folder.mkdir(parents=True, exist_ok=True)
    storage_url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    text = Path(config_path).read_text(encoding="utf-8").replace(f'"{cfg.raw["model"]}"', f'"{cfg.model}"', 1)
    if cfg.profile is not None:  # the study folder keeps the profile it ran with, so reproduce needs nothing else
        atomic_write_text(folder / "profile.toml", cfg.profile.read_text(encoding="utf-8"))
        text = text.replace(f'"{cfg.raw["profile"]}"', '"profile.toml"', 1)
    atomic_write_text(folder / "config.toml", text)
    write_json(folder / "storage.json", {"url": storage_url.split("@")[-1] if "@" in storage_url else storage_url,
                                         "shared": storage is not None})
    space = _Space(cfg)
    study = _execute(space, storage_url)
    return _write_artifacts(space, folder, study, storage_url, command or sys.argv)


def resume_study(folder: str, storage: str | None = None) -> StudyOutcome:
    folder_path = Path(folder)
    config = folder_path / "config.toml"
    if not config.is_file():
        raise BadInputError("not a study folder (no config.toml)", file=folder)
    cfg = load_config(config)
    url = storage or f"sqlite:///{(folder_path / 'study.db').resolve()}"
    space = _Space(cfg)
    study = _execute(space, url, recover=storage is None)
    return _write_artifacts(space, folder_path, study, url, sys.argv)


def reproduce_study(folder: str) -> tuple[bool, str]:
    """Reruns the study from its config and seed in a scratch folder; compares the best plan's bytes."""
    folder_path = Path(folder)
    config = folder_path / "config.toml"
    original = folder_path / "plan.json"
    if not config.is_file() or not original.is_file():
        raise BadInputError("not a finished study folder (config.toml and plan.json needed)", file=folder)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "config.toml"
        shutil.copy(config, scratch)
        if (folder_path / "profile.toml").is_file():
            shutil.copy(folder_path / "profile.toml", Path(tmp) / "profile.toml")
        run_study(str(scratch), str(Path(tmp) / "rerun"), command=["reproduce", folder])
        again = (Path(tmp) / "rerun" / "plan.json").read_text()
    before = original.read_text()
    if again == before:
        return True, ""
    diff = difflib.unified_diff(before.splitlines(), again.splitlines(), "plan.json (study)", "plan.json (rerun)",
                                lineterm="", n=1)
    return False, "\n".join(list(diff)[:60])
