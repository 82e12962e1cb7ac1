"""TOML -> frozen catalog, validated at load: a bad catalog fails loudly before any model is read."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from optimizer.catalog._checks import CHECKS, CONDITIONS
from optimizer.catalog._schema import SCOPES, Catalog, Family, Figure, OpCondition, OpSupport, Rule, Target
from optimizer.errors import BadInputError

FAMILY_FILES = ("nvidia_dla.toml", "rockchip_rknn.toml")
PRECISIONS = ("int8", "fp16", "fp32")


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
    return Rule(
        id=raw["id"], family=family, scope=raw["scope"], kinds=tuple(raw.get("kinds", ("*",))),
        source=raw["source"], summary=raw["summary"], check=check,
        params=_freeze(dict(raw.get("params", {}))), generations=tuple(raw.get("generations", ())),
        targets=tuple(raw.get("targets", ())), precisions=tuple(raw.get("precisions", ())),
        new=bool(raw.get("new", False)),
    )


def _target(target_id: str, raw: Mapping[str, Any], family: str, accelerator: str, fallback: str,
            path: str) -> Target:
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
    return Target(
        id=target_id, family=family, name=raw["name"], generation=raw["generation"],
        accelerator=accelerator, fallback=fallback, devices=tuple(raw["devices"]),
        precisions=MappingProxyType(precisions), figures=MappingProxyType(figures),
        features=_freeze(dict(raw.get("features", {}))), base=base,
        calibration=raw.get("calibration", base or target_id),
    )


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


def load_family(text: str, path: str) -> tuple[Family, dict[str, Target]]:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, str(exc)) from None
    name, accelerator, fallback = raw["family"], raw["accelerator"], raw["fallback"]
    resolved = _resolve_variants(raw["targets"], path)
    targets = {tid: _target(tid, t, name, accelerator, fallback, path) for tid, t in resolved.items()}
    rules = tuple(_rule(r, name, path) for r in raw.get("rules", ()))
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise _fail(path, f"rule {rule.id} appears twice")
        seen.add(rule.id)
    family = Family(
        name=name, accelerator=accelerator, fallback=fallback,
        layer_kinds=MappingProxyType(dict(raw.get("layer_kinds", {}))),
        default_kind=raw.get("default_kind", "none"), rules=rules,
        formats=_freeze(raw.get("formats", {})),
        op_support=MappingProxyType(_op_support(raw.get("ops", {}), tuple(t for t in targets if not targets[t].base),
                                                path)),
        sources=MappingProxyType(dict(raw.get("sources", {}))), path=path,
    )
    return family, targets


def load_catalog(directory: str | Path | None = None) -> Catalog:
    """The installed catalog, or the TOML files of another folder (for tests and new targets)."""
    families: dict[str, Family] = {}
    targets: dict[str, Target] = {}
    digest = hashlib.sha256()
    base = resources.files("optimizer.constraints") if directory is None else Path(directory)
    for name in FAMILY_FILES:
        entry = base / name
        text = entry.read_text(encoding="utf-8")
        digest.update(name.encode() + b"\0" + text.encode())
        family, family_targets = load_family(text, name)
        families[family.name] = family
        for tid, target in family_targets.items():
            if tid in targets:
                raise _fail(name, f"target {tid} defined twice")
            targets[tid] = target
    return Catalog(families=MappingProxyType(families), targets=MappingProxyType(targets),
                   sha256=digest.hexdigest())
