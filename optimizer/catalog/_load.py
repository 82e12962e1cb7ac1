"""TOML -> frozen catalog, validated at load: a bad catalog fails loudly before any model is read."""

from __future__ import annotations

import functools
import hashlib
import os
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from optimizer.catalog._checks import CHECKS, CONDITIONS
from optimizer.catalog._schema import (
    DEFAULT_TENSORRT,
    SCOPES,
    TENSORRT_VERSIONS,
    Catalog,
    Family,
    Figure,
    OpCondition,
    OpSupport,
    Rule,
    Target,
)
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError

CATALOG_SCHEMA = "edgeplan.catalog/v1"
CATALOG_ENV = "EDGEPLAN_CATALOG_DIR"  # a folder of extra target files (see load_catalog)


def _fail(path: str, message: str) -> BadInputError:
    return BadInputError(f"catalog invalid: {message}", file=path)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _rule(raw: Mapping[str, Any], family: str, path: str) -> Rule:
    for key in ("id", "scope", "kinds", "source", "summary"):
        if not raw.get(key) and key != "kinds":
            raise _fail(path, f"rule {raw.get('id', '?')} lacks '{key}'")
    if raw["scope"] not in SCOPES:
        raise _fail(path, f"rule {raw['id']} scope '{raw['scope']}' not in {SCOPES}")
    check = raw.get("check")
    if raw["scope"] == "node" and check not in CHECKS:
        raise _fail(path, f"rule {raw['id']} names check '{check}', which is not registered")
    for precision in raw.get("precisions", ()):
        if precision not in PRECISIONS:
            raise _fail(path, f"rule {raw['id']} precision '{precision}' not in {PRECISIONS}")
    versions = raw.get("tensorrt", [])
    if not isinstance(versions, list) or any(v not in TENSORRT_VERSIONS for v in versions):
        raise _fail(path, f"rule {raw['id']} tensorrt {versions!r}: a list of {TENSORRT_VERSIONS}")
    return Rule(
        id=raw["id"], family=family, scope=raw["scope"], kinds=tuple(raw.get("kinds", ("*",))),
        source=raw["source"], summary=raw["summary"], check=check,
        params=_freeze(dict(raw.get("params", {}))), generations=tuple(raw.get("generations", ())),
        targets=tuple(raw.get("targets", ())), precisions=tuple(raw.get("precisions", ())),
        new=bool(raw.get("new", False)), tensorrt=tuple(versions), refuses=bool(raw.get("refuses", False)),
    )


def _target(target_id: str, raw: Mapping[str, Any], family: str, accelerator: str, fallback: str,
            path: str, platforms: tuple[str, ...] = (), backend: str = "") -> Target:
    figures = {}
    for name, fig in raw.get("figures", {}).items():
        if not isinstance(fig, dict) or "value" not in fig or not fig.get("source"):
            raise _fail(path, f"target {target_id} figure '{name}' needs a value and a source")
        figures[name] = Figure(value=float(fig["value"]), unit=fig.get("unit", ""), source=fig["source"],
                               derived=bool(fig.get("derived")), assumed=bool(fig.get("assumed")))
    precisions = {k: tuple(v) for k, v in raw.get("precisions", {}).items()}
    for kind, values in precisions.items():
        if any(v not in PRECISIONS for v in values):
            raise _fail(path, f"target {target_id} offers unknown precision in {kind}: {values}")
    base = raw.get("base", "")
    devices = tuple(raw["devices"])
    cores = _accelerator_cores(target_id, devices, precisions, figures, raw.get("features", {}), accelerator,
                               fallback, path)
    platform = raw.get("toolkit_platform", "")
    if platforms and platform not in platforms:
        raise _fail(path, f"target {target_id} toolkit_platform {platform!r} is not one of the toolkit's SoC names "
                          f"{list(platforms)}")
    return Target(
        id=target_id, family=family, name=raw["name"], generation=raw["generation"],
        accelerator=accelerator, fallback=fallback, devices=devices,
        precisions=MappingProxyType(precisions), figures=MappingProxyType(figures),
        features=_freeze(dict(raw.get("features", {}))), base=base,
        calibration=raw.get("calibration", base or target_id), cores=cores, toolkit_platform=platform,
        backend=backend,
    )


def _accelerator_cores(target_id: str, devices: tuple[str, ...], precisions: Mapping[str, tuple[str, ...]],
                       figures: Mapping[str, Figure], features: Mapping[str, Any], accelerator: str,
                       fallback: str, path: str) -> int:
    """How many accelerator cores a target has, from its own devices: numbered engines (dla0, dla1) count
    one each; a single engine named after the accelerator (npu) has `<acc>_cores` cores (default 1). A
    target without the accelerator (an Orin Nano) lists neither the engines nor their precisions."""
    numbered = [d for d in devices if d.startswith(accelerator) and d[len(accelerator):].isdigit()]
    if numbered and numbered != [f"{accelerator}{k}" for k in range(len(numbered))]:
        raise _fail(path, f"target {target_id} devices {list(devices)}: {accelerator} engines must be "
                          f"{accelerator}0..{accelerator}{len(numbered) - 1}, in order")
    unknown = set(devices) - set(numbered) - {accelerator, fallback}
    if unknown or fallback not in devices:
        raise _fail(path, f"target {target_id} devices {list(devices)}: only {fallback}, {accelerator} or "
                          f"{accelerator}0.. are known, and {fallback} is required")
    declared = figures.get(f"{accelerator}_cores")
    if numbered:
        cores = len(numbered)
        if declared is not None and int(declared.value) != cores:
            raise _fail(path, f"target {target_id} figure {accelerator}_cores = {declared.value:g} but it lists "
                              f"{cores} {accelerator} engine(s) in devices")
    elif accelerator in devices:
        cores = int(features.get(f"{accelerator}_cores", declared.value if declared else 1))
        if declared is not None and int(declared.value) != cores:
            raise _fail(path, f"target {target_id} figure {accelerator}_cores = {declared.value:g} but its features "
                              f"say {cores}")
    else:
        cores = 0
    if (cores > 0) != (accelerator in precisions):
        raise _fail(path, f"target {target_id}: {accelerator} precisions must be given exactly when the target "
                          f"has {accelerator} engines ({cores} here)")
    if set(precisions) - {accelerator, fallback}:
        raise _fail(path, f"target {target_id} precisions name {sorted(set(precisions) - {accelerator, fallback})}; "
                          f"only {accelerator} and {fallback} are known")
    return cores


def _resolve_variants(raw_targets: Mapping[str, Any], path: str) -> dict[str, dict[str, Any]]:
    """A variant names its base and lists only what differs: figures merge, anything else replaces."""
    out = {}
    for tid, raw in raw_targets.items():
        base_id = raw.get("base")
        if base_id is None:
            out[tid] = dict(raw)
            continue
        base = raw_targets.get(base_id)
        if base is None or "base" in base:
            raise _fail(path, f"target {tid} names base '{base_id}', which is not a plain target of this family")
        merged = dict(base)
        merged.update({k: v for k, v in raw.items() if k not in ("figures", "features")})
        for key in ("figures", "features"):
            merged[key] = {**base.get(key, {}), **raw.get(key, {})}
        out[tid] = merged
    return out


def _op_support(raw: Mapping[str, Any], socs: tuple[str, ...], path: str) -> dict[str, OpSupport]:
    out = {}
    for op, entry in raw.items():
        where = entry.get("npu", "all")
        npu = socs if where == "all" else tuple(where)
        unknown = set(npu) - set(socs)
        if unknown:
            raise _fail(path, f"op {op} names unknown SoCs {sorted(unknown)}")
        if not entry.get("source"):
            raise _fail(path, f"op {op} has no source")
        if entry.get("condition") and entry["condition"] not in CONDITIONS:
            raise _fail(path, f"op {op} names condition '{entry['condition']}', which is not registered")
        conditions = tuple(_op_condition(op, when, socs, path) for when in entry.get("when", ()))
        out[op] = OpSupport(op=op, npu_socs=npu, precisions=tuple(entry.get("precisions", ())),
                            multicore=bool(entry.get("multicore", True)), source=entry["source"],
                            condition=entry.get("condition"), conditions=conditions)
    return out


def _op_condition(op: str, raw: Mapping[str, Any], socs: tuple[str, ...], path: str) -> OpCondition:
    check = str(raw.get("condition"))
    if check not in CONDITIONS:
        raise _fail(path, f"op {op} names condition '{check}', which is not registered")
    if not raw.get("source"):
        raise _fail(path, f"op {op} condition {check} has no source")
    unknown = set(raw.get("socs", ())) - set(socs)
    if unknown:
        raise _fail(path, f"op {op} condition {check} names unknown SoCs {sorted(unknown)}")
    for precision in raw.get("precisions", ()):
        if precision not in PRECISIONS:
            raise _fail(path, f"op {op} condition {check} precision '{precision}' not in {PRECISIONS}")
    return OpCondition(check=check, source=raw["source"], params=_freeze(dict(raw.get("params", {}))),
                       socs=tuple(raw.get("socs", ())), precisions=tuple(raw.get("precisions", ())))


def _parse(text: str, path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, str(exc)) from None


def load_family(text: str, path: str, extra: tuple[tuple[Mapping[str, Any], str], ...] = (),
                tensorrt: str = DEFAULT_TENSORRT) -> tuple[Family, dict[str, Target]]:
    """A family file, plus the [targets.*] of extra files (raw TOML, path) that name this family; its
    rules are those of TensorRT major `tensorrt` (rules without a `tensorrt` list hold for every one)."""
    return _family_from_raw(_parse(text, path), path, extra, tensorrt)


def _family_from_raw(raw: Mapping[str, Any], path: str, extra: tuple[tuple[Mapping[str, Any], str], ...],
                     tensorrt: str) -> tuple[Family, dict[str, Target]]:
    name, accelerator, fallback = raw["family"], raw["accelerator"], raw["fallback"]
    backend = raw.get("backend", "")  # the toolchain class (optimizer/backends); planning needs it, a check of
    if not isinstance(backend, str):  # rules alone does not
        raise _fail(path, f"family {name}: backend must be a string naming a registered backend class")
    raw_targets = dict(raw["targets"])
    origin = dict.fromkeys(raw_targets, path)
    for extra_raw, extra_path in extra:
        for tid, entry in extra_raw.get("targets", {}).items():
            if tid in raw_targets:
                raise _fail(extra_path, f"target {tid} is already defined in {origin[tid]}")
            raw_targets[tid] = entry
            origin[tid] = extra_path
    resolved = _resolve_variants(raw_targets, path)
    platforms = tuple(raw.get("toolkit_platforms", ()))
    targets = {tid: _target(tid, t, name, accelerator, fallback, origin[tid], platforms, backend)
               for tid, t in resolved.items()}
    every = tuple(_rule(r, name, path) for r in raw.get("rules", ()))
    versions: dict[str, set[str]] = {}
    for rule in every:  # one ID may appear once per TensorRT major, never twice for the same one
        scoped = set(rule.tensorrt or TENSORRT_VERSIONS)
        if versions.get(rule.id, set()) & scoped:
            raise _fail(path, f"rule {rule.id} appears twice")
        versions.setdefault(rule.id, set()).update(scoped)
    rules = tuple(rule for rule in every if rule.for_tensorrt(tensorrt))
    sources = dict(raw.get("sources", {}))
    for extra_raw, _ in extra:
        sources.update(extra_raw.get("sources", {}))
    family = Family(
        name=name, accelerator=accelerator, fallback=fallback,
        layer_kinds=MappingProxyType(dict(raw.get("layer_kinds", {}))),
        default_kind=raw.get("default_kind", "none"), rules=rules,
        formats=_freeze(raw.get("formats", {})),
        op_support=MappingProxyType(_op_support(raw.get("ops", {}), tuple(t for t in targets if not targets[t].base),
                                                path)),
        sources=MappingProxyType(sources), path=path, backend=backend,
    )
    return family, targets


EXTRA_KEYS = frozenset(("schema", "family", "sources", "targets"))


def _is_family_file(raw: Mapping[str, Any]) -> bool:
    """A catalog file that defines a family (schema, family, accelerator, fallback, backend, rules...), as
    opposed to an extra file that adds targets to one."""
    return raw.get("schema") == CATALOG_SCHEMA and "accelerator" in raw


def extra_family(family: str, extra_dir: str | Path | None = None) -> tuple[str, Mapping[str, Any]] | None:
    """(path, TOML) of the extra folder's file that defines `family` (None when no extra file does): a new
    family is one file there, holding its rules, targets and (as [latency]) its latency profile."""
    folder = extra_dir if extra_dir is not None else os.environ.get(CATALOG_ENV) or None
    if not folder:
        return None
    for path, text in _extra_files(folder):
        raw = _parse(text, path)
        if _is_family_file(raw) and raw["family"] == family:
            return path, raw
    return None


def _extra_files(directory: str | Path) -> list[tuple[str, str]]:
    """(name, text) of every *.toml in a folder of extra targets, in name order."""
    folder = Path(directory)
    if not folder.is_dir():
        raise BadInputError(f"{CATALOG_ENV}: not a folder", file=str(folder))
    return [(str(f), f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.toml"))]


def family_files(directory: str | Path | None = None) -> Mapping[str, str]:
    """Family -> catalog file name, for every *.toml of the catalog folder (default: the installed one) whose
    schema is edgeplan.catalog/v1, in name order: a new family is one new file, listed nowhere in the code."""
    if directory is None:
        return _installed_family_files()
    return _family_files(Path(directory))


@functools.cache
def _installed_family_files() -> Mapping[str, str]:
    return MappingProxyType(dict(_family_files(resources.files("optimizer.constraints"))))


def _family_files(base: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in sorted(base.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        text = entry.read_text(encoding="utf-8")
        if CATALOG_SCHEMA not in text:
            continue
        raw = _parse(text, entry.name)
        if raw.get("schema") != CATALOG_SCHEMA:
            continue
        family = raw.get("family")
        if not isinstance(family, str) or not family:
            raise _fail(entry.name, "a catalog file must name its family")
        if family in found:
            raise _fail(entry.name, f"family '{family}' is also defined in {found[family]}")
        found[family] = entry.name
    return found


def load_catalog(directory: str | Path | None = None, extra_dir: str | Path | None = None,
                 tensorrt: str = DEFAULT_TENSORRT) -> Catalog:
    """The installed catalog (or the family files of another folder), plus the targets of the TOML files
    in `extra_dir` (default: the folder named by $EDGEPLAN_CATALOG_DIR). An extra file names its
    `family` and holds only [targets.*] (and [sources]): a new module of a known family is data only.
    `tensorrt` selects the DLA rule set (the seed's, TensorRT 10, by default)."""
    if tensorrt not in TENSORRT_VERSIONS:
        raise BadInputError(f"--trt must be one of {', '.join(TENSORRT_VERSIONS)}, got '{tensorrt}'")
    base = resources.files("optimizer.constraints") if directory is None else Path(directory)
    extra_dir = extra_dir if extra_dir is not None else os.environ.get(CATALOG_ENV) or None
    texts = tuple((name, (base / name).read_text(encoding="utf-8")) for name in family_files(directory).values())
    extra_texts = tuple(_extra_files(extra_dir)) if extra_dir else ()
    return _catalog_from_texts(texts, extra_texts, tensorrt)


@functools.lru_cache(maxsize=8)
def _catalog_from_texts(texts: tuple[tuple[str, str], ...], extra_texts: tuple[tuple[str, str], ...],
                        tensorrt: str) -> Catalog:
    """Keyed on the files' contents, so an edited file is parsed afresh: parsing the TOML is most of a short
    command's time (a batch job, a refused model), and the Catalog built from it is immutable."""
    families: dict[str, Family] = {}
    targets: dict[str, Target] = {}
    digest = hashlib.sha256()
    extras: dict[str, list[tuple[Mapping[str, Any], str]]] = {}
    parsed = [(name, text, _parse(text, name)) for name, text in texts]  # each file parsed once: every command
    known = {raw["family"] for _, _, raw in parsed}                          # loads the catalog first
    for path, text in extra_texts:
        raw = _parse(text, path)
        if _is_family_file(raw):  # a whole new family: its own rules, formats and backend
            if raw["family"] in known:
                raise _fail(path, f"family '{raw['family']}' is already defined; an extra file of a known family "
                                  "adds [targets.*] only")
            known.add(raw["family"])
            parsed.append((path, text, raw))
            continue
        stray = sorted(set(raw) - EXTRA_KEYS)
        if stray or "family" not in raw:
            raise _fail(path, f"an extra catalog file names its family and adds [targets.*] only (found {stray})"
                        if stray else "an extra catalog file must name its family")
        extras.setdefault(raw["family"], []).append((raw, path))
    for name, text, raw in parsed:
        digest.update(Path(name).name.encode() + b"\0" + text.encode())
        family, family_targets = _family_from_raw(raw, name, tuple(extras.pop(raw["family"], ())), tensorrt)
        families[family.name] = family
        for tid, target in family_targets.items():
            if tid in targets:
                raise _fail(name, f"target {tid} defined twice")
            targets[tid] = target
    for family_name, files in extras.items():
        raise _fail(files[0][1], f"family '{family_name}' is not one of {sorted(families)}")
    for path, text in extra_texts:
        if not any(path == name and text == kept for name, kept, _ in parsed):
            digest.update(Path(path).name.encode() + b"\0" + text.encode())
    return Catalog(families=MappingProxyType(families), targets=MappingProxyType(targets),
                   sha256=digest.hexdigest(), tensorrt=tensorrt)
