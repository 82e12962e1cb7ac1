"""Optuna studies: SRAM pools and pipeline partitions searched around the CP-SAT planner.

Each trial fixes the SRAM pool and (optionally) cut points that split the layer groups into stages with
an engine each; the planner decides everything else under those pins and scores the plan. Trial 0 is
the planner's own result (no pins, default SRAM), so the best plan is never worse than the planner's.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import difflib
import fcntl
import hashlib
import importlib.metadata
import io
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import optuna
import tomli_w

from optimizer import __version__
from optimizer.backends import backend_of
from optimizer.catalog import TENSORRT_VERSIONS, Catalog, Target, load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError, EdgeplanError
from optimizer.fileio import atomic_write_text, dumps_json, redact_url, sha256_file, write_json
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import load_profile
from optimizer.plan import Plan, optimize, plan_html, planned_from_plan
from optimizer.plan._types import as_json
from optimizer.solver import PlanRequest, check_target
from optimizer.solver._outcome import deterministic_budget
from optimizer.study._config import StudyConfig, load_config
from optimizer.study._report import study_report_html

STATES_DONE = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
STATES_TAKEN = (*STATES_DONE, optuna.trial.TrialState.RUNNING)
# A worker writes a heartbeat every HEARTBEAT_S while its trial runs; a RUNNING trial silent for GRACE_S
# belongs to a dead worker (kill -9, lost host): fail_stale_trials fails it and RetryFailedTrialCallback
# queues its parameters again, on SQLite and PostgreSQL alike.
HEARTBEAT_S = 2
GRACE_S = 10
MAX_RETRY = 3
# A trial gets the deterministic budget `optimize --time-limit` would get, and the wall clock stops it only
# at this multiple: a study is only worth its `reproduce`, and a load-cut trial would not reproduce.
TRIAL_WALL_FACTOR = 4
METRICS = {"latency": "latency_ms", "throughput": "busiest_engine_ms", "dual-stream": "busiest_engine_ms"}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StudyOutcome:
    folder: Path
    best_value: float
    best_trial: int
    trials: int
    baseline_value: float


def _sram_choices(catalog: Catalog, target: Target) -> list[int]:
    managed = backend_of(target).managed_sram
    if managed and not target.has_accelerator:
        return [0]  # a GPU-only module: no DLA SRAM to search
    if managed:
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
        self.catalog = load_catalog(tensorrt=config.tensorrt)
        self.target = self.catalog.target(config.target)
        # exit 2 before any trial runs
        check_target(PlanRequest(objective=config.objective, tensorrt=config.tensorrt), self.target)
        graph = load_model(config.model, config.input_shapes or None)
        report = check_graph(graph, self.catalog, config.target)
        self.groups = build_groups(report)
        self.sram = _sram_choices(self.catalog, self.target)
        self.engines = _engines(self.target)
        self.default_sram = self._default_sram()
        self.loadables = backend_of(self.target).loadable_limit(self.catalog, self.target)

    def _default_sram(self) -> int:
        target = self.target
        profile = load_profile(target.family, self.config.profile)
        pools = profile.memory_pools.get("dla_sram_bytes", {}) if backend_of(target).managed_sram else {}
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
        sram: int | None = None
        per_loadable: tuple[int, ...] = ()
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
        return PlanRequest(objective=cfg.objective, time_limit_s=cfg.time_limit_s * TRIAL_WALL_FACTOR,
                           deterministic_limit_s=deterministic_budget(cfg.time_limit_s, len(self.groups.groups)),
                           seed=cfg.seed, pins=pins,
                           sram_bytes=sram, sram_per_loadable=per_loadable, explain_infeasible=False,
                           tensorrt=cfg.tensorrt)


def _score(plan: Plan, objective: str) -> float:
    return plan.predicted.latency_ms if objective == "latency" else plan.predicted.busiest_engine_ms


def _objective(space: _Space) -> Callable[[optuna.trial.Trial], float]:
    cfg = space.config

    def run(trial: optuna.trial.Trial) -> float:
        request = space.request(trial)
        try:
            planned = optimize(str(cfg.model), cfg.target, request, input_shapes=cfg.input_shapes or None,
                               profile_path=str(cfg.profile) if cfg.profile else None, catalog=space.catalog)
        except EdgeplanError as exc:
            trial.set_user_attr("error", exc.one_line()[:300])
            raise optuna.TrialPruned(exc.one_line()[:200]) from None
        plan = planned.plan
        text = dumps_json(plan.to_json())
        trial.set_user_attr("plan_sha256", hashlib.sha256(text.encode()).hexdigest())
        trial.set_user_attr("plan_zlib_b64", base64.b64encode(zlib.compress(text.encode(), 9)).decode())
        trial.set_user_attr("breakdown", as_json(plan.breakdown))
        trial.set_user_attr("pins", len(request.pins))
        if planned.run["solver"].get("wall_limit_fired"):
            trial.set_user_attr("wall_limit_fired", True)  # this trial's plan depended on the machine's load
        return _score(plan, cfg.objective)

    return run


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Heartbeats are experimental in Optuna and it warns when ask/tell (not optimize) uses them; the
    exact trial count needs ask/tell under a lock, and _heartbeat below records the beats itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
        yield


def _retry() -> type:
    """Optuna 4.9 renamed RetryFailedTrialCallback (same behaviour): the one this Optuna has."""
    return getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", optuna.storages.RetryFailedTrialCallback)


def _storage(url: str) -> optuna.storages.RDBStorage:
    try:
        kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
        with _quiet():
            return optuna.storages.RDBStorage(
                url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S,
                heartbeat_stale_trial_callback=_retry()(max_retry=MAX_RETRY))
    except Exception as exc:  # invalid URL, unreachable server, corrupted file
        detail = redact_url(" ".join(str(exc).split()))[:200]
        raise BadInputError(f"study storage {redact_url(url)} cannot be opened: {type(exc).__name__}: {detail} "
                            "(remove or repair it, or pass another --storage)") from None


def redact(url: str) -> str:
    """The storage URL without its password, as storage.json and logs keep it."""
    if "://" not in url or url.startswith("sqlite"):
        return url
    try:
        import sqlalchemy

        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL sqlalchemy can parse: keep only the part after the credentials
        return url.split("@")[-1]


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


def check_pruner(cfg: StudyConfig) -> None:
    """A trial is one CP-SAT solve that reports no intermediate value, so a pruner would never prune."""
    if cfg.pruner != "none":
        raise BadInputError(f"pruner '{cfg.pruner}' is not supported: a trial is one CP-SAT solve with no "
                            "intermediate values to prune on (remove the 'pruner' line)",
                            file=str(cfg.source or ""))


def identity(space: _Space) -> dict[str, Any]:
    """What decides a study's trials; a stored study run with other values is another study."""
    cfg = space.config
    profile = load_profile(space.target.family, cfg.profile).text
    return {"model_sha256": sha256_file(cfg.model), "target": cfg.target, "objective": cfg.objective,
            "seed": cfg.seed, "sampler": cfg.sampler, "time_limit_s": cfg.time_limit_s,
            "search_sram": cfg.search_sram, "max_partitions": cfg.max_partitions,
            "input_shapes": {k: list(v) for k, v in sorted(cfg.input_shapes.items())},
            "profile_sha256": hashlib.sha256(profile.encode()).hexdigest(), "catalog_sha256": space.catalog.sha256}


def _done(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=STATES_DONE))


def _count(study: optuna.Study, states: Sequence[optuna.trial.TrialState]) -> int:
    return len(study.get_trials(deepcopy=False, states=tuple(states)))


def _open(space: _Space, storage_url: str, new_study: bool) -> tuple[optuna.storages.RDBStorage, optuna.Study]:
    """Creates or loads the study; refuses one stored with another identity unless a new study is asked for."""
    cfg = space.config
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    wanted = identity(space)
    with _lock(storage_url):  # also serialises creating the storage's schema on a fresh database
        storage = _storage(storage_url)
        names = {s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}
        if cfg.name in names:
            stored = optuna.load_study(study_name=cfg.name, storage=storage).user_attrs.get("edgeplan_identity")
            if stored != wanted and not new_study:
                differs = sorted(k for k in {*wanted, *(stored or {})} if (stored or {}).get(k) != wanted.get(k))
                raise BadInputError(f"study '{cfg.name}' in {redact(storage_url)} was run with another config "
                                    f"({', '.join(differs)} differ); pass --new-study to replace it, or rename "
                                    "the study", file=str(cfg.source or ""))
            if stored != wanted:
                log.warning("replacing study '%s' in %s (--new-study)", cfg.name, redact(storage_url))
                optuna.delete_study(study_name=cfg.name, storage=storage)
        study = optuna.create_study(study_name=cfg.name, storage=storage, direction="minimize",
                                    sampler=_sampler(cfg), pruner=optuna.pruners.NopPruner(), load_if_exists=True)
        if not study.trials:
            study.set_user_attr("edgeplan_identity", wanted)
            with _quiet():
                study.set_metric_names([METRICS[cfg.objective]])
            study.enqueue_trial(space.default_params())
    return storage, study


@contextlib.contextmanager
def _heartbeat(storage: optuna.storages.RDBStorage, trial_id: int) -> Iterator[None]:
    """Records the running trial's heartbeat from a thread (CP-SAT releases the GIL while it solves)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(Exception):  # a missed beat is retried; a dead storage ends the trial anyway
                storage.record_heartbeat(trial_id)

    thread = threading.Thread(target=beat, name=f"edgeplan-heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _fail_orphans(study: optuna.Study, storage: optuna.storages.RDBStorage) -> None:
    """A worker asks for its trial, records its first heartbeat and names itself ("worker") all under the
    lock, so a RUNNING trial with no name seen by the lock's holder lost its worker inside the lock, maybe
    before any heartbeat; fail_stale_trials never fails a trial without one, and resume would wait forever."""
    callback = storage.get_heartbeat_stale_trial_callback()
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if "worker" in trial.user_attrs:
            continue
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            if storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.FAIL) and callback:
                callback(study, storage.get_trial(trial._trial_id))


def _execute(space: _Space, storage_url: str, new_study: bool = False,
             progress: Callable[[int, int], None] | None = None) -> optuna.Study:
    """Runs trials until n_trials are done. Counting and asking are one step under a lock, so workers never
    overshoot; a worker with nothing left to ask waits for the others' RUNNING trials, and takes over a
    trial whose worker died (its heartbeat stopped), so every worker ends on the same finished study."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = space.config
    storage, study = _open(space, storage_url, new_study)
    study_id = storage.get_study_id_from_name(cfg.name)
    objective = _objective(space)
    reported = -1
    while True:
        with _lock(storage_url), _quiet():
            optuna.storages.fail_stale_trials(study)
            _fail_orphans(study, storage)
            taken = _count(study, STATES_TAKEN)
            trial = study.ask() if taken < cfg.n_trials else None
            if trial is not None:
                trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
                storage.record_heartbeat(trial_id)
                trial.set_user_attr("worker", f"{platform.node()}:{os.getpid()}")
        done = _done(study)
        if progress and done != reported:
            progress(done, cfg.n_trials)
            reported = done
        if trial is None:
            if _count(study, (optuna.trial.TrialState.RUNNING,)) == 0:
                break
            time.sleep(HEARTBEAT_S)  # another worker's trial is running (or its worker is dead: GRACE_S tells)
            continue
        with _heartbeat(storage, trial_id):
            try:
                value = objective(trial)
            except optuna.TrialPruned:
                with _quiet():
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            except BaseException:
                with _quiet():
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                raise
        with _quiet():
            study.tell(trial, value)
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
    plan = best_plan(best, folder)
    write_json(folder / "plan.json", plan.to_json())
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
        "target": cfg.target, **_tensorrt_rules(space), "objective": cfg.objective, "seed": cfg.seed,
        "sampler": cfg.sampler,
        "n_trials": cfg.n_trials, "storage": redact_url(storage_url),
        "metric": METRICS[cfg.objective],
        "wall_limited_trials": sorted(t.number for t in completed if t.user_attrs.get("wall_limit_fired")),
        "command_line": [redact_url(c) for c in command], "best_trial": best.number, "best_value": best.value,
        "first_trial_value": baseline,
        "plan_sha256": hashlib.sha256((folder / "plan.json").read_bytes()).hexdigest(),
    }
    write_json(folder / "manifest.json", manifest)
    atomic_write_text(folder / "report.html", study_report_html(cfg, study, plan))
    atomic_write_text(folder / "plan.html", plan_html(planned_from_plan(
        plan, input_shapes=cfg.input_shapes or None, profile_path=str(cfg.profile) if cfg.profile else None,
        catalog=space.catalog)))
    assert best.value is not None and baseline is not None  # complete trials have values
    return StudyOutcome(folder=folder, best_value=best.value, best_trial=best.number,
                        trials=_done(study), baseline_value=baseline)


def with_tensorrt(cfg: StudyConfig, tensorrt: str | None) -> StudyConfig:
    """The config with --trt applied (as if the config said `tensorrt = "..."`)."""
    if tensorrt is None or tensorrt == cfg.raw.get("tensorrt"):
        return cfg
    if tensorrt not in TENSORRT_VERSIONS:
        raise BadInputError(f"--trt must be one of {', '.join(TENSORRT_VERSIONS)}, got '{tensorrt}'")
    return replace(cfg, tensorrt=tensorrt, raw={**cfg.raw, "tensorrt": tensorrt})


def _tensorrt_rules(space: _Space) -> dict[str, str]:
    """The DLA rule set the study ran under, where the target's toolchain is TensorRT (as in its plans)."""
    rules = backend_of(space.target).tensorrt_rules(space.catalog)
    return {"tensorrt_rules": rules} if rules else {}


def best_plan(trial: optuna.trial.FrozenTrial, folder: Path) -> Plan:
    """The plan the trial stored, checked against the hash it stored beside it (never re-solved)."""
    packed = trial.user_attrs.get("plan_zlib_b64")
    if not packed:
        raise EdgeplanError(f"trial {trial.number} stored no plan (a study from an older edgeplan?); "
                            "run it again with --new-study", file=str(folder))
    text = zlib.decompress(base64.b64decode(packed)).decode()
    if hashlib.sha256(text.encode()).hexdigest() != trial.user_attrs.get("plan_sha256"):
        raise EdgeplanError(f"trial {trial.number}'s stored plan does not match its plan_sha256", file=str(folder))
    return Plan.from_json(json.loads(text), file=f"{folder}: trial {trial.number}'s stored plan")


def _latency(trial: optuna.trial.FrozenTrial) -> float | str:
    breakdown = trial.user_attrs.get("breakdown", {})
    parts = ("layers_ms", "transfers_ms", "reformats_ms", "launches_ms")
    return round(sum(breakdown.get(p, 0.0) for p in parts), 6) if breakdown else ""


def run_study(config_path: str, out_dir: str | None = None, storage: str | None = None,
              command: Sequence[str] = (), new_study: bool = False,
              progress: Callable[[int, int], None] | None = None, tensorrt: str | None = None) -> StudyOutcome:
    """Runs (or continues) the study a config describes; returns its best trial. A study stored under the
    same name with another config is refused unless `new_study` replaces it. `progress(done, total)` is
    called as trials finish. `tensorrt` (--trt) overrides the config's `tensorrt`; the study folder's
    config.toml keeps the one used, so resume and reproduce use it too."""
    cfg = with_tensorrt(load_config(config_path), tensorrt)
    check_pruner(cfg)
    folder = Path(out_dir) if out_dir else Path(config_path).resolve().parent / cfg.name
    storage_url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    space = _Space(cfg)  # the model, target and profile are checked before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    _open(space, storage_url, new_study)  # refuses a changed config before anything in the folder is replaced
    raw = dict(cfg.raw, model=str(cfg.model))
    if cfg.profile is not None:  # the study folder keeps the profile it ran with, so reproduce needs nothing else
        atomic_write_text(folder / "profile.toml", cfg.profile.read_text(encoding="utf-8"))
        raw["profile"] = "profile.toml"
    atomic_write_text(folder / "config.toml", tomli_w.dumps(raw))  # re-serialised: no text spliced into TOML
    write_json(folder / "storage.json", {"url": redact_url(storage_url), "shared": storage is not None,
                                         "url_redacted": redact(storage_url), "password_stored": False})
    study = _execute(space, storage_url, progress=progress)
    return _write_artifacts(space, folder, study, storage_url, command or sys.argv)


def stored_storage(folder: Path) -> str:
    """The storage a study folder ran on: its own SQLite file, or the shared URL if it can be rebuilt
    without a password; a shared study whose URL needs one must be given --storage again."""
    local = f"sqlite:///{(folder / 'study.db').resolve()}"
    try:
        record = json.loads((folder / "storage.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return local
    if not record.get("shared"):
        return local
    url: str = record.get("url_redacted", "")
    if url and "***" not in url and "://" in url:
        return url
    raise BadInputError(f"this study lives in shared storage ({url or record.get('url')}); pass --storage URL "
                        "(its password is not stored), rather than starting a new local study", file=str(folder))


def resume_study(folder: str, storage: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> StudyOutcome:
    """Continues a study folder on the storage it ran on: a dead worker's trial is failed and run again."""
    folder_path = Path(folder)
    config = folder_path / "config.toml"
    if not config.is_file():
        raise BadInputError("not a study folder (no config.toml)", file=folder)
    cfg = load_config(config)
    check_pruner(cfg)
    url = storage or stored_storage(folder_path)
    space = _Space(cfg)
    study = _execute(space, url, progress=progress)
    return _write_artifacts(space, folder_path, study, url, sys.argv)


def reproduce_study(folder: str, progress: Callable[[int, int], None] | None = None) -> tuple[bool, str]:
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
        run_study(str(scratch), str(Path(tmp) / "rerun"), command=["reproduce", folder], progress=progress)
        again = (Path(tmp) / "rerun" / "plan.json").read_text()
    before = original.read_text()
    if again == before:
        return True, ""
    diff = difflib.unified_diff(before.splitlines(), again.splitlines(), "plan.json (study)", "plan.json (rerun)",
                                lineterm="", n=1)
    return False, "\n".join(list(diff)[:60])
