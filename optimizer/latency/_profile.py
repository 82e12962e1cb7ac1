"""The latency model's free constants, per target family, loaded from a TOML profile."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomli_w

from optimizer.catalog import extra_family, family_files
from optimizer.errors import BadInputError

OP_CLASSES = ("conv", "dwconv", "gconv", "deconv", "matmul", "vector")
# the constants `edgeplan calibrate` fits per device, besides one efficiency per op class
FITTED_SCALARS = ("layer_overhead_us", "bandwidth_efficiency", "overlap", "inference_overhead_us")


@dataclass(frozen=True)
class DeviceConstants:
    efficiency: Mapping[str, float]
    layer_overhead_us: float
    bandwidth_efficiency: float
    sram_speedup: float
    multicore_efficiency: float = 1.0
    multicore_overhead_us: float = 0.0
    overlap: float = 1.0  # share of the shorter of compute and memory time hidden under the longer
    inference_overhead_us: float = 0.0  # once per inference on the family's host device (enqueue, rknn_run)
    multicore_split: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # per op class

    def split_efficiency(self, op_class: str) -> float:
        """Share of ideal k-core speed-up an op class reaches when a layer is split over NPU cores."""
        return self.multicore_split.get(op_class, self.multicore_efficiency)


@dataclass(frozen=True)
class Band:
    """Where a prediction's truth likely lies: observed/predicted latency ratios of comparable rows, each
    predicted by a fit that never saw its publishing source (LOSO), 10th and 90th percentile."""

    low: float  # ratio: likely latency >= low * predicted
    high: float
    rows: int
    scope: str  # "KEY/ACCELERATOR/PRECISION" with * where the rows were pooled

    def describe(self) -> str:
        return f"{self.rows} comparable published rows ({self.scope}), each predicted without its source"


BAND_MIN_ROWS = 5


def band_json(band: Band | None, latency_ms: float) -> dict[str, Any] | None:
    """The likely range of a latency: the prediction times the band's ratios, and what they rest on."""
    if band is None:
        return None
    return {"low": round(latency_ms * band.low, 6), "high": round(latency_ms * band.high, 6),
            "ratio_low": band.low, "ratio_high": band.high, "rows": band.rows, "scope": band.scope,
            "basis": "10th-90th percentile of observed/predicted over comparable published rows, each predicted "
                     "by a fit without its source (leave-one-source-out)"}


def band_scopes(key: str, accelerator: str, precision: str) -> tuple[str, ...]:
    """From the most comparable rows to the whole family: the first scope with enough rows gives the band."""
    return (f"{key}/{accelerator}/{precision}", f"{key}/{accelerator}/*", f"*/{accelerator}/{precision}",
            f"*/{accelerator}/*", "*/*/*")


@dataclass(frozen=True)
class Profile:
    family: str
    name: str
    fitted_on: str
    devices: Mapping[str, DeviceConstants]
    loadable_launch_us: float
    sync_us: Mapping[str, float]
    reformat_us: float
    precision_change_us: float
    memsync_us: float
    layout_convert_gbps: float
    handover_us: float
    memory_pools: Mapping[str, Any]
    text: str  # the TOML as read, for hashing into manifests
    targets: Mapping[str, Mapping[str, DeviceConstants]] = field(default_factory=lambda: MappingProxyType({}))
    bands: Mapping[str, Band] = field(default_factory=lambda: MappingProxyType({}))
    # per device, per fitted constant (an op class or a FITTED_SCALARS name): the standard deviation, in log
    # space, of calibration's pull towards this profile's value, where its source justifies a tighter one
    prior_sigma: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: MappingProxyType({}))

    def band(self, key: str, accelerator: str, precision: str) -> Band | None:
        """The error band of a prediction (None when the profile was calibrated without cross-validation)."""
        for scope in band_scopes(key, accelerator, precision):
            found = self.bands.get(scope)
            if found is not None and found.rows >= BAND_MIN_ROWS:
                return found
        return None

    def constants(self, key: str, device: str) -> DeviceConstants:
        """A target's fitted constants where the profile has them, else the family's."""
        fitted = self.targets.get(key, {})
        return fitted[device] if device in fitted else self.devices[device]


def _merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A target section lists only what it refits; efficiency merges per op class."""
    out = {**base, **override}
    out["efficiency"] = {**base.get("efficiency", {}), **override.get("efficiency", {})}
    if "multicore_split" in base or "multicore_split" in override:
        out["multicore_split"] = {**base.get("multicore_split", {}), **override.get("multicore_split", {})}
    return out


def _fractions(raw: Mapping[str, Any], name: str, where: str, every_class: bool) -> dict[str, float]:
    """A fraction in (0, 1] per op class; `every_class`: each class must have one."""
    values = {k: float(v) for k, v in dict(raw.get(name, {})).items()}
    missing = set(OP_CLASSES) - set(values) if every_class else set()
    if missing:
        raise BadInputError(f"profile {where}: {name} lacks {sorted(missing)}")
    unknown = set(values) - set(OP_CLASSES)
    if unknown:
        raise BadInputError(f"profile {where}: {name} names unknown op classes {sorted(unknown)}")
    for key, value in values.items():
        if not 0 < value <= 1:
            raise BadInputError(f"profile {where}: {name} {key} = {value} must be in (0, 1]")
    return values


def _device(raw: Mapping[str, Any], where: str) -> DeviceConstants:
    eff = _fractions(raw, "efficiency", where, every_class=True)
    split = _fractions(raw, "multicore_split", where, every_class=False)
    return DeviceConstants(
        efficiency=MappingProxyType(eff), layer_overhead_us=float(raw["layer_overhead_us"]),
        bandwidth_efficiency=float(raw["bandwidth_efficiency"]), sram_speedup=float(raw["sram_speedup"]),
        multicore_efficiency=float(raw.get("multicore_efficiency", 1.0)),
        multicore_overhead_us=float(raw.get("multicore_overhead_us", 0.0)),
        overlap=_unit_interval(raw.get("overlap", 1.0), "overlap", where),
        inference_overhead_us=float(raw.get("inference_overhead_us", 0.0)),
        multicore_split=MappingProxyType(split),
    )


def _unit_interval(value: Any, name: str, where: str) -> float:
    value = float(value)
    if not 0 <= value <= 1:
        raise BadInputError(f"profile {where}: {name} = {value} must be in [0, 1]")
    return float(value)


def _prior_sigma(devices: Mapping[str, Any], where: str) -> dict[str, Mapping[str, float]]:
    """[devices.DEV] prior_sigma = { NAME = sigma }: how far (log space) calibration may move a constant
    whose prior value has a source, before the pull towards the prior outweighs a row."""
    out: dict[str, Mapping[str, float]] = {}
    for device, raw in devices.items():
        values = {k: float(v) for k, v in dict(raw.get("prior_sigma", {})).items()}
        unknown = set(values) - set(OP_CLASSES) - set(FITTED_SCALARS)
        if unknown:
            raise BadInputError(f"profile {where} [devices.{device}]: prior_sigma names unknown constants "
                                f"{sorted(unknown)}")
        if any(v <= 0 for v in values.values()):
            raise BadInputError(f"profile {where} [devices.{device}]: prior_sigma values must be > 0")
        if values:
            out[device] = MappingProxyType(values)
    return out


def _bands(raw: Mapping[str, Any], where: str) -> dict[str, Band]:
    out = {}
    for scope, entry in raw.items():
        low, high = float(entry["low"]), float(entry["high"])
        if not 0 < low <= high:
            raise BadInputError(f"profile {where}: [bands] {scope}: need 0 < low <= high, got {low}, {high}")
        out[scope] = Band(low=low, high=high, rows=int(entry["rows"]), scope=scope)
    return out


def parse_profile(text: str, where: str) -> Profile:
    try:
        raw = tomllib.loads(text)
        transfer = raw.get("transfer", {})
        family_devices = raw["devices"]
        targets = {}
        for key, section in raw.get("targets", {}).items():
            unknown = set(section.get("devices", {})) - set(family_devices)
            if unknown:
                raise BadInputError(f"profile {where}: [targets.{key}] names devices {sorted(unknown)}, "
                                    "which the family lacks")
            targets[key] = MappingProxyType({
                dev: _device(_merged(family_devices[dev], values), f"{where} [targets.{key}.devices.{dev}]")
                for dev, values in section.get("devices", {}).items()})
        return Profile(
            family=raw["family"], name=raw.get("name", Path(where).stem), fitted_on=raw.get("fitted_on", ""),
            devices=MappingProxyType({k: _device(v, f"{where} [{k}]") for k, v in raw["devices"].items()}),
            loadable_launch_us=float(raw.get("loadable", {}).get("launch_us", 0.0)),
            sync_us=MappingProxyType(dict(transfer.get("sync_us", {}))),
            reformat_us=float(transfer.get("reformat_us", 0.0)),
            precision_change_us=float(transfer.get("precision_change_us", 0.0)),
            memsync_us=float(transfer.get("memsync_us", 0.0)),
            layout_convert_gbps=float(transfer.get("layout_convert_gbps", 1.0)),
            handover_us=float(transfer.get("handover_us", 0.0)),
            memory_pools=MappingProxyType(dict(raw.get("memory_pools", {}))), text=text,
            targets=MappingProxyType(targets), bands=MappingProxyType(_bands(raw.get("bands", {}), where)),
            prior_sigma=MappingProxyType(_prior_sigma(family_devices, where)),
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise BadInputError(f"latency profile invalid: {type(exc).__name__}: {exc}", file=where) from None


def profile_file(family: str, *, prior: bool = False) -> str:
    """The shipped profile of a family is named after its catalog file: latency_<stem>[.prior].toml."""
    files = family_files()
    if family not in files:
        raise BadInputError(f"unknown family {family} (known: {', '.join(files)})")
    return f"latency_{files[family].removesuffix('.toml')}{'.prior' if prior else ''}.toml"


def load_profile(family: str, path: str | Path | None = None, *, prior: bool = False) -> Profile:
    """The shipped profile of a family (calibrated on the public measurements; `prior`: the hand-set
    constants calibration starts from), or a user's calibrated one."""
    if path is None and family not in family_files():
        return _extra_profile(family)
    if path is None:
        name = profile_file(family, prior=prior)
        return parse_profile((resources.files("optimizer.constraints") / name).read_text(encoding="utf-8"), name)
    path = Path(path)
    if not path.is_file():
        raise BadInputError("profile file not found", file=str(path))
    profile = parse_profile(path.read_text(encoding="utf-8"), str(path))
    if profile.family != family:
        raise BadInputError(f"profile is for family {profile.family}, the target is {family}", file=str(path))
    return profile


def profile_family(path: str | Path) -> str:
    """The family a profile file is for, so a batch can take one profile per family."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError("profile file not found", file=str(path))
    try:
        return str(tomllib.loads(path.read_text(encoding="utf-8"))["family"])
    except (tomllib.TOMLDecodeError, KeyError, UnicodeDecodeError) as exc:
        raise BadInputError(f"not a latency profile: {type(exc).__name__}", file=str(path)) from None


def _extra_profile(family: str) -> Profile:
    """The [latency] table of a family defined in the extra catalog folder ($EDGEPLAN_CATALOG_DIR): a new
    family brings its profile in its one file (the same keys as a latency_*.toml)."""
    found = extra_family(family)
    if found is None:
        raise BadInputError(f"unknown family {family} (known: {', '.join(family_files())})")
    path, raw = found
    if not isinstance(raw.get("latency"), dict):
        raise BadInputError(f"family {family} has no [latency] table (its latency profile)", file=path)
    return parse_profile(tomli_w.dumps({"family": family, **raw["latency"]}), f"{path} [latency]")
