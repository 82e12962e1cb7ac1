"""Study configuration: the TOML a study runs from, checked against a declarative schema at load.

A config is untrusted input. Every key is in SCHEMA (an unknown key is refused with its name), every
value has its type and range checked, and every file it names is checked to be what it claims (a
latency profile that parses as one) before a study writes anything.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.catalog import DEFAULT_TENSORRT, TENSORRT_VERSIONS
from optimizer.errors import BadInputError
from optimizer.solver import OBJECTIVES

SAMPLERS = ("tpe", "random")
PRUNERS = ("none", "median")
MAX_CONFIG_BYTES = 1 << 20
MAX_PROFILE_BYTES = 1 << 20
MAX_SEED = (1 << 32) - 1  # numpy's and optuna's samplers take 32-bit seeds
MAX_TRIALS = 100_000
MAX_PARTITIONS = 64
MAX_TIME_LIMIT_S = 86_400.0


@dataclass(frozen=True)
class Key:
    """One config key: its TOML type, whether it must be present, and its allowed values."""

    kind: type | tuple[type, ...]
    required: bool = False
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    check: Callable[[Any], str] | None = None  # returns a problem, or ""


def _plain_name(value: str) -> str:
    if not value or value.startswith(".") or any(c in value for c in "/\\\0") or not value.isprintable():
        return "must be a plain folder name (no '/', no leading '.', printable)"
    return ""


def _shapes(value: dict[str, Any]) -> str:
    for name, dims in value.items():
        if not isinstance(dims, list) or not dims or not all(
                isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 1 << 31 for d in dims):
            return f"input '{name}' must be a list of dims in [1, 2^31]"
    return ""


SCHEMA: dict[str, Key] = {
    "name": Key(str, required=True, check=_plain_name),
    "model": Key(str, required=True),
    "target": Key(str, required=True),
    "objective": Key(str, required=True, choices=tuple(OBJECTIVES)),
    "n_trials": Key(int, required=True, low=1, high=MAX_TRIALS),
    "seed": Key(int, required=True, low=0, high=MAX_SEED),
    "sampler": Key(str, choices=SAMPLERS),
    "pruner": Key(str, choices=PRUNERS),
    "time_limit": Key((int, float), low=0.001, high=MAX_TIME_LIMIT_S),
    "profile": Key(str),
    "input_shapes": Key(dict, check=_shapes),
    "search": Key(dict),
    "tensorrt": Key(str, choices=TENSORRT_VERSIONS),  # the DLA rule set (Jetson targets), as --trt
}
SEARCH_SCHEMA: dict[str, Key] = {
    "sram": Key(bool),
    "max_partitions": Key(int, low=0, high=MAX_PARTITIONS),
}


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
    tensorrt: str = DEFAULT_TENSORRT  # the TensorRT major whose DLA rules apply (config `tensorrt` or --trt)
    source: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def validate_table(raw: dict[str, Any], schema: dict[str, Key], where: str, prefix: str = "") -> None:
    """Refuses unknown keys, missing required ones, wrong types and out-of-range values, naming the key."""
    for key in raw:
        if key not in schema:
            raise BadInputError(f"study config: unknown key '{prefix}{key}' (known: {', '.join(schema)})", file=where)
    for key, spec in schema.items():
        name = f"{prefix}{key}"
        if key not in raw:
            if spec.required:
                raise BadInputError(f"study config lacks '{name}'", file=where)
            continue
        value = raw[key]
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise BadInputError(f"study config '{name}' must be {_type_name(spec.kind)}, got {str(value)[:40]!r}",
                                file=where)
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInputError(f"study config '{name}' must be finite, got {value}", file=where)
        if spec.choices and value not in spec.choices:
            raise BadInputError(f"study config '{name}' = {str(value)[:40]!r} is not one of {spec.choices}",
                                file=where)
        low = -math.inf if spec.low is None else spec.low
        high = math.inf if spec.high is None else spec.high
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not low <= value <= high:
            raise BadInputError(f"study config '{name}' = {value} is outside [{low:g}, {high:g}]", file=where)
        problem = spec.check(value) if spec.check else ""
        if problem:
            raise BadInputError(f"study config '{name}' {problem}", file=where)


def _regular_file(path: Path, what: str, limit: int, where: str) -> None:
    if not path.is_file():
        raise BadInputError(f"study config '{what}' names a missing file: {path}", file=where)
    if path.stat().st_size > limit:
        raise BadInputError(f"study config '{what}' names a file larger than {limit} bytes: {path}", file=where)


def _check_profile(path: Path, where: str) -> None:
    """The profile is copied into the study folder, so it must be a latency profile, nothing else."""
    from optimizer.latency._profile import parse_profile

    _regular_file(path, "profile", MAX_PROFILE_BYTES, where)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"study config 'profile' is not a readable TOML latency profile "
                            f"({type(exc).__name__})", file=where) from None
    try:
        parse_profile(text, str(path))
    except BadInputError as exc:
        raise BadInputError(f"study config 'profile' is not a latency profile: {exc.message}", file=where) from None


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    """The TOML table and text of a study config of either kind, bounded in size; one-line errors."""
    where = str(path)
    if not path.is_file():
        raise BadInputError("study config not found", file=where)
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise BadInputError(f"study config is larger than {MAX_CONFIG_BYTES} bytes", file=where)
    try:
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text), text
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"not a TOML study config: {exc}", file=where) from None


def config_relative(config: Path, value: str) -> Path:
    """A path written in a config is relative to the config's folder."""
    given = Path(value)
    return given if given.is_absolute() else (config.parent / given).resolve()


def config_profile(raw: dict[str, Any], config: Path) -> Path | None:
    """The config's latency profile, if it names one, checked to be one."""
    if "profile" not in raw:
        return None
    profile = config_relative(config, raw["profile"])
    _check_profile(profile, str(config))
    return profile


def load_config(path: str | Path) -> StudyConfig:
    path = Path(path)
    where = str(path)
    raw, _ = read_config(path)
    validate_table(raw, SCHEMA, where)
    search = raw.get("search", {})
    validate_table(search, SEARCH_SCHEMA, where, prefix="search.")
    model = config_relative(path, raw["model"])
    shapes = {k: tuple(v) for k, v in raw.get("input_shapes", {}).items()}
    profile = config_profile(raw, path)
    return StudyConfig(
        name=raw["name"], model=model, target=raw["target"], objective=raw["objective"],
        n_trials=raw["n_trials"], seed=raw["seed"], sampler=raw.get("sampler", "tpe"),
        pruner=raw.get("pruner", "none"), time_limit_s=float(raw.get("time_limit", 30.0)),
        search_sram=search.get("sram", True), max_partitions=search.get("max_partitions", 2),
        input_shapes=shapes, profile=profile, tensorrt=raw.get("tensorrt", DEFAULT_TENSORRT), source=path, raw=raw,
    )
