"""Study configuration: the TOML a study runs from, validated at load."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.errors import BadInputError
from optimizer.solver import OBJECTIVES

SAMPLERS = ("tpe", "random")
PRUNERS = ("none", "median")


@dataclass(frozen=True)
class StudyConfig:
    name: str
    model: Path
    target: str
    objective: str
    n_trials: int
    seed: int
    sampler: str = "tpe"
    pruner: str = "none"
    time_limit_s: float = 30.0  # per trial, for the CP-SAT solve
    search_sram: bool = True
    max_partitions: int = 2  # pipeline cut points Optuna may place (0 disables partition search)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    profile: Path | None = None  # a calibrated latency profile (edgeplan calibrate); None: the shipped one
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def _require(raw: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in raw:
        raise BadInputError(f"study config lacks '{key}'", file=where)
    value = raw[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise BadInputError(f"study config '{key}' must be {kind.__name__}, got {value!r}", file=where)
    return value


def load_config(path: str | Path) -> StudyConfig:
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise BadInputError("study config not found", file=where)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"not a TOML study config: {exc}", file=where) from None
    name = _require(raw, "name", str, where)
    if not name or any(c in name for c in "/\\") or name.startswith("."):
        raise BadInputError(f"study name '{name}' must be a plain folder name", file=where)
    model = Path(_require(raw, "model", str, where))
    if not model.is_absolute():
        model = (path.parent / model).resolve()
    objective = _require(raw, "objective", str, where)
    if objective not in OBJECTIVES:
        raise BadInputError(f"objective '{objective}' not in {OBJECTIVES}", file=where)
    n_trials = _require(raw, "n_trials", int, where)
    if n_trials < 1:
        raise BadInputError(f"n_trials must be >= 1, got {n_trials}", file=where)
    search = raw.get("search", {})
    sampler = raw.get("sampler", "tpe")
    pruner = raw.get("pruner", "none")
    if sampler not in SAMPLERS or pruner not in PRUNERS:
        raise BadInputError(f"sampler must be one of {SAMPLERS} and pruner one of {PRUNERS}", file=where)
    shapes = {k: tuple(int(d) for d in v) for k, v in raw.get("input_shapes", {}).items()}
    profile = None
    if "profile" in raw:
        profile = Path(_require(raw, "profile", str, where))
        profile = profile if profile.is_absolute() else (path.parent / profile).resolve()
        if not profile.is_file():
            raise BadInputError(f"study config 'profile' names a missing file: {profile}", file=where)
    return StudyConfig(
        name=name, model=model, target=_require(raw, "target", str, where), objective=objective,
        n_trials=n_trials, seed=_require(raw, "seed", int, where), sampler=sampler, pruner=pruner,
        time_limit_s=float(raw.get("time_limit", 30.0)), search_sram=bool(search.get("sram", True)),
        max_partitions=int(search.get("max_partitions", 2)), input_shapes=shapes, profile=profile, source=path,
        raw=raw,
    )
