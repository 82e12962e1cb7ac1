"""Multi-objective studies: a stored, reproducible Pareto front of latency x energy x GPU share (x throughput).

Each trial is one multi-model plan (optimizer/multi) with the planner's objective, a GPU budget and a loadable
limit chosen by Optuna's NSGA-II sampler; the first trials are the configured GPU budgets in order (the first is
the planner alone), so the front always holds the budget sweep the user asked for. Every front point keeps its
plan (front/trial_<n>.json); plan.json is the front point with the lowest latency.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from optimizer import __version__
from optimizer.errors import BadInputError, EdgeplanError
from optimizer.fileio import atomic_write_text, dumps_json, write_json
from optimizer.solver import PlanRequest
from optimizer.solver._multi import MultiRequest
from optimizer.study._config import (
    MAX_PARTITIONS,
    MAX_SEED,
    MAX_TIME_LIMIT_S,
    Key,
    _plain_name,
    config_profile,
    config_relative,
    read_config,
    validate_table,
)
from optimizer.study._pareto_space import DEFAULT_STAGE_ENGINES, STAGE_ENGINES, ParetoSpace

log = logging.getLogger(__name__)
PARETO_SCHEMA = "edgeplan.pareto/v1"
METRICS = {"latency_ms": "makespan of one frame of every model (ms)", "energy_mj": "energy per frame (mJ)",
           "gpu_share": "GPU busy share of the frame", "cycle_ms": "busiest engine per frame (ms, 1/throughput)"}
PLANNER_OBJECTIVES = ("makespan", "energy", "throughput")
SCHEMA: dict[str, Key] = {
    "name": Key(str, required=True, check=_plain_name),
    "models": Key(list, required=True),
    "target": Key(str, required=True),
    "objectives": Key(list, required=True),
    "n_trials": Key(int, required=True, low=1, high=10_000),
    "seed": Key(int, required=True, low=0, high=MAX_SEED),
    "sampler": Key(str, choices=("nsga2",)),
    "time_limit": Key((int, float), low=0.001, high=MAX_TIME_LIMIT_S),
    "profile": Key(str),
    "search": Key(dict),
}
SEARCH_SCHEMA: dict[str, Key] = {
    "gpu_budgets": Key(list),
    "planner_objectives": Key(list),
    "max_loadables": Key(list),
    "sram": Key(bool),
    "max_partitions": Key(int, low=0, high=MAX_PARTITIONS),
    "stage_engines": Key(list),
}


@dataclass(frozen=True)
class ParetoConfig:
    name: str
    models: tuple[Path, ...]
    target: str
    objectives: tuple[str, ...]
    n_trials: int
    seed: int
    time_limit_s: float
    profile: Path | None
    gpu_budgets: tuple[float, ...]
    planner_objectives: tuple[str, ...]
    max_loadables: tuple[int, ...]
    source: Path
    text: str
    search_sram: bool = False  # one SRAM pool per DLA loadable (DLA-SRAM-PER-LOADABLE)
    max_partitions: int = 0  # cut points per model; each stage auto or pinned to one of stage_engines
    stage_engines: tuple[str, ...] = DEFAULT_STAGE_ENGINES


@dataclass(frozen=True)
class ParetoOutcome:
    folder: Path
    trials: int
    front: tuple[int, ...]  # trial numbers on the front


def is_pareto_config(path: str | Path) -> bool:
    """A study config that names several `models` (or `objectives`) is a Pareto study."""
    try:
        raw, _ = read_config(Path(path))
    except (OSError, BadInputError):
        return False  # load_config says what is wrong with it
    return "models" in raw or "objectives" in raw


def load_pareto_config(path: str | Path) -> ParetoConfig:
    path = Path(path)
    where = str(path)
    raw, text = read_config(path)
    validate_table(raw, SCHEMA, where)
    search = raw.get("search", {})
    validate_table(search, SEARCH_SCHEMA, where, prefix="search.")
    if not raw["models"] or not all(isinstance(m, str) for m in raw["models"]):
        raise BadInputError("models: a list of ONNX paths (one or several)", file=where)
    bad = [o for o in raw["objectives"] if o not in METRICS]
    if len(raw["objectives"]) < 2 or bad:
        raise BadInputError(f"objectives: two or more of {', '.join(METRICS)}" + (f" (not: {bad})" if bad else ""),
                            file=where)
    budgets = search.get("gpu_budgets", [1.0, 0.75, 0.5, 0.25])
    if not budgets or not all(isinstance(b, (int, float)) and 0 < b <= 1 for b in budgets):
        raise BadInputError("search.gpu_budgets: shares in (0, 1]", file=where)
    planners = search.get("planner_objectives", ["makespan", "energy"])
    if not planners or any(p not in PLANNER_OBJECTIVES for p in planners):
        raise BadInputError(f"search.planner_objectives: a subset of {', '.join(PLANNER_OBJECTIVES)}", file=where)
    loadables = search.get("max_loadables", [4])
    if not loadables or not all(isinstance(k, int) and 1 <= k <= 4 for k in loadables):
        raise BadInputError("search.max_loadables: integers in [1, 4]", file=where)
    engines = search.get("stage_engines", list(DEFAULT_STAGE_ENGINES))
    if not engines or "auto" not in engines or any(e not in STAGE_ENGINES for e in engines) \
            or len(set(engines)) != len(engines):
        raise BadInputError(f"search.stage_engines: 'auto' and any of gpu, dla (distinct), got {engines}", file=where)
    models = tuple(config_relative(path, m) for m in raw["models"])
    profile = config_profile(raw, path)
    return ParetoConfig(name=raw["name"], models=models, target=raw["target"],
                        objectives=tuple(raw["objectives"]), n_trials=raw["n_trials"], seed=raw["seed"],
                        time_limit_s=float(raw.get("time_limit", 10.0)), profile=profile,
                        gpu_budgets=tuple(float(b) for b in budgets), planner_objectives=tuple(planners),
                        max_loadables=tuple(loadables), source=path, text=text,
                        search_sram=bool(search.get("sram", False)),
                        max_partitions=int(search.get("max_partitions", 0)), stage_engines=tuple(engines))


def _values(plan: dict[str, Any], objectives: Sequence[str]) -> list[float]:
    multi = plan["multi"]
    table = {"latency_ms": plan["predicted"]["latency_ms"], "energy_mj": plan["predicted"]["energy_mj"] or 0.0,
             "gpu_share": plan["predicted"]["gpu_busy_share"] or 0.0,
             "cycle_ms": max(multi["load_ms"].values(), default=0.0)}
    return [float(table[o]) for o in objectives]


def _plan_trial(cfg: ParetoConfig, space: ParetoSpace, trial: optuna.trial.Trial) -> dict[str, Any]:
    from optimizer.multi import MERGED_NAME, optimize_multi

    budget = trial.suggest_categorical("gpu_budget", list(cfg.gpu_budgets))
    planner = trial.suggest_categorical("planner_objective", list(cfg.planner_objectives))
    loadables = trial.suggest_categorical("max_loadables", list(cfg.max_loadables))
    pools = space.pools(trial)
    pins = space.pins(trial)
    trial.set_user_attr("sram_per_loadable", list(pools))
    trial.set_user_attr("pins", pins)
    request = PlanRequest(objective="latency", time_limit_s=cfg.time_limit_s * 4,
                          deterministic_limit_s=_deterministic(cfg.time_limit_s), seed=cfg.seed,
                          max_loadables=None if loadables == 4 else loadables, explain_infeasible=False,
                          pins=pins, sram_per_loadable=pools)
    multi = MultiRequest(objective=planner, gpu_budget=None if budget >= 1 else budget)
    planned = optimize_multi([str(m) for m in cfg.models], cfg.target, request, multi,
                             profile_path=str(cfg.profile) if cfg.profile else None, merged_path=MERGED_NAME)
    return planned.plan


def _deterministic(time_limit_s: float) -> float:
    from optimizer.solver._outcome import deterministic_budget

    return deterministic_budget(time_limit_s, 0)


def _space(cfg: ParetoConfig) -> ParetoSpace:
    return ParetoSpace(cfg.models, cfg.target, cfg.profile, cfg.search_sram, cfg.max_partitions, cfg.stage_engines)


def _study(cfg: ParetoConfig, storage: str, space: ParetoSpace) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.NSGAIISampler(seed=cfg.seed, population_size=max(2, min(cfg.n_trials, 8)))
    study = optuna.create_study(study_name=cfg.name, storage=storage, directions=["minimize"] * len(cfg.objectives),
                                sampler=sampler, load_if_exists=False)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optuna marks set_metric_names experimental
        study.set_metric_names(list(cfg.objectives))
    for budget in cfg.gpu_budgets[:cfg.n_trials]:  # the sweep the user asked for comes first
        study.enqueue_trial({"gpu_budget": budget, "planner_objective": cfg.planner_objectives[0],
                             "max_loadables": max(cfg.max_loadables), **space.default_params()})
    return study


def _run_trials(cfg: ParetoConfig, study: optuna.Study, space: ParetoSpace,
                progress: Callable[[int, int], None] | None) -> None:
    for done in range(cfg.n_trials):
        trial = study.ask()
        try:
            plan = _plan_trial(cfg, space, trial)
        except EdgeplanError as exc:
            trial.set_user_attr("error", exc.one_line()[:300])
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            text = dumps_json(plan)
            trial.set_user_attr("plan_sha256", hashlib.sha256(text.encode()).hexdigest())
            trial.set_user_attr("plan_zlib_b64", base64.b64encode(zlib.compress(text.encode(), 9)).decode())
            study.tell(trial, _values(plan, cfg.objectives))
        if progress:
            progress(done + 1, cfg.n_trials)


def _stored_plan(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    text = zlib.decompress(base64.b64decode(trial.user_attrs["plan_zlib_b64"])).decode()
    if hashlib.sha256(text.encode()).hexdigest() != trial.user_attrs.get("plan_sha256"):
        raise EdgeplanError(f"trial {trial.number}'s stored plan does not match its plan_sha256")
    plan: dict[str, Any] = json.loads(text)
    return plan


def run_pareto_study(config_path: str, out_dir: str | None = None, command: Sequence[str] = (),
                     progress: Callable[[int, int], None] | None = None) -> ParetoOutcome:
    """Runs the study into out_dir (default: studies/<name>/ beside the config) from a fresh SQLite storage,
    so the same config and seed give the same front and files."""
    cfg = load_pareto_config(config_path)
    folder = Path(out_dir) if out_dir else cfg.source.parent / cfg.name
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "study.db"
    if db.exists():
        db.unlink()  # a Pareto study is rerun whole: its front is a function of the config and seed
    storage = f"sqlite:///{db}"
    space = _space(cfg)
    study = _study(cfg, storage, space)
    _run_trials(cfg, study, space, progress)
    return _write(cfg, folder, study, storage, command)


def _write(cfg: ParetoConfig, folder: Path, study: optuna.Study, storage: str, command: Sequence[str]
           ) -> ParetoOutcome:
    from optimizer.study._plots import pareto_svg

    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise EdgeplanError("no trial produced a plan; see trials.csv for the errors", file=str(folder))
    front = []
    seen: set[object] = set()
    # one point per distinct plan and per distinct trade-off: a mirror plan (the same layers on the other,
    # identical DLA core) scores exactly the same and would only repeat a point
    for t in sorted(study.best_trials, key=lambda t: (t.values, t.number)):
        keys = (t.user_attrs["plan_sha256"], tuple(t.values))
        if not seen.intersection(keys):
            seen.update(keys)
            front.append(t)
    (folder / "front").mkdir(exist_ok=True)
    points = []
    for t in front:
        plan = _stored_plan(t)
        name = f"front/trial_{t.number}.json"
        write_json(folder / name, plan)
        dla = sorted({layer["device"] for layer in plan["layers"] if layer["device"].startswith("dla")})
        points.append({"trial": t.number, "values": dict(zip(cfg.objectives, t.values)), "params": t.params,
                       "plan": name, "plan_sha256": t.user_attrs["plan_sha256"], "dla": dla,
                       "pins": t.user_attrs.get("pins", {}),
                       "sram_per_loadable": t.user_attrs.get("sram_per_loadable", [])})
    best = min(front, key=lambda t: (t.values[0], t.number))
    write_json(folder / "plan.json", _stored_plan(best))
    write_json(folder / "front.json", {"schema": PARETO_SCHEMA, "objectives": list(cfg.objectives),
                                       "points": points})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    fixed = ("gpu_budget", "planner_objective", "max_loadables")
    searched = sorted({k for t in study.trials for k in t.params if k not in fixed})
    writer.writerow(["number", "state", *fixed, *cfg.objectives, "on_front", "plan_sha256", "error", *searched,
                     "sram_per_loadable", "pins"])
    on_front = {t.number for t in front}
    for t in sorted(study.trials, key=lambda t: t.number):
        pools = t.user_attrs.get("sram_per_loadable") or []
        pins = t.user_attrs.get("pins") or {}
        writer.writerow([t.number, t.state.name, *(t.params.get(k, "") for k in fixed),
                         *([round(v, 6) for v in t.values] if t.values else [""] * len(cfg.objectives)),
                         t.number in on_front, t.user_attrs.get("plan_sha256", ""), t.user_attrs.get("error", ""),
                         *(t.params.get(k, "") for k in searched), " ".join(str(b) for b in pools),
                         " ".join(f"{n}={d}" for n, d in sorted(pins.items()))])
    atomic_write_text(folder / "trials.csv", buffer.getvalue())
    atomic_write_text(folder / "config.toml", cfg.text)
    write_json(folder / "manifest.json", {
        "schema": PARETO_SCHEMA, "tool_version": __version__, "name": cfg.name, "config": str(cfg.source),
        "models": [{"path": str(m), "sha256": hashlib.sha256(m.read_bytes()).hexdigest()} for m in cfg.models],
        "target": cfg.target, "objectives": list(cfg.objectives), "seed": cfg.seed, "sampler": "nsga2",
        "n_trials": cfg.n_trials, "storage": "study.db", "command_line": list(command),
        "front": [p["trial"] for p in points], "best_trial": best.number,
        "plan_sha256": hashlib.sha256((folder / "plan.json").read_bytes()).hexdigest()})
    svg = pareto_svg(study, list(cfg.objectives))
    atomic_write_text(folder / "report.html", _report(cfg, points, svg))
    return ParetoOutcome(folder=folder, trials=len(study.trials), front=tuple(p["trial"] for p in points))


def _report(cfg: ParetoConfig, points: list[dict[str, Any]], svg: str) -> str:
    import html

    heads = "".join(f"<th>{html.escape(METRICS[o])}</th>" for o in cfg.objectives)
    rows = []
    for p in points:
        cells = "".join(f"<td>{p['values'][o]:.4g}</td>" for o in cfg.objectives)
        params = ", ".join(f"{k}={v}" for k, v in sorted(p["params"].items()))
        rows.append(f"<tr><td><a href=\"./{html.escape(p['plan'])}\">trial {p['trial']}</a></td>{cells}"
                    f"<td>{html.escape(params)}</td><td>{html.escape(', '.join(p['dla']) or 'none')}</td></tr>")
    models = ", ".join(html.escape(m.name) for m in cfg.models)
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>" + html.escape(cfg.name) +
            "</title><style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}</style>"
            f"</head><body><h1>{html.escape(cfg.name)}</h1><p>{models} on {html.escape(cfg.target)}: the Pareto "
            f"front of {len(points)} plan(s). Each point is a plan the planner wrote under the trial's GPU budget, "
            "objective and loadable limit; a point uses the DLA where it appears in the last column.</p>"
            f"<figure class=\"chart\" aria-label=\"Pareto front\">{svg}</figure>"
            f"<table><tr><th>plan</th>{heads}<th>parameters</th><th>DLA</th></tr>{''.join(rows)}</table>"
            "</body></html>\n")


def reproduce_pareto(folder: str, progress: Callable[[int, int], None] | None = None) -> tuple[bool, str]:
    """Reruns the study from the config it names into a temporary folder; plan.json, front.json, trials.csv and
    every front point's plan (front/*.json) must be byte-identical."""
    import tempfile

    root = Path(folder)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="edgeplan-pareto-") as tmp:
        run_pareto_study(manifest["config"], tmp, manifest.get("command_line", ()), progress)
        names = ["plan.json", "front.json", "trials.csv"]
        names += sorted({p.relative_to(d).as_posix() for d in (root, Path(tmp)) for p in (d / "front").glob("*.json")})
        diffs = [name for name in names if not (Path(tmp) / name).is_file() or not (root / name).is_file()
                 or (Path(tmp) / name).read_bytes() != (root / name).read_bytes()]
    return not diffs, ", ".join(diffs) + (" differ" if diffs else "")
