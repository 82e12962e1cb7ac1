"""Frozen values the catalog TOML files load into."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCOPES = ("node", "context", "cost", "io", "memory", "target")
TENSORRT_VERSIONS = ("10", "11")  # the TensorRT majors a DLA rule can be scoped to (`tensorrt = [...]`)
DEFAULT_TENSORRT = "10"  # the seed's rule set (one TensorRT release's DLA chapter)


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str
    derived: bool = False
    assumed: bool = False


@dataclass(frozen=True)
class Rule:
    """One vendor limit. `check` names a function in the check registry (node-scope rules)."""

    id: str
    family: str
    scope: str
    kinds: tuple[str, ...]
    source: str
    summary: str
    check: str | None = None
    params: Mapping[str, Any] = None  # type: ignore[assignment]
    generations: tuple[str, ...] = ()  # empty: every generation of the family
    targets: tuple[str, ...] = ()  # empty: every target of the family
    precisions: tuple[str, ...] = ()  # empty: every precision
    new: bool = False  # an ID this project added beside the digest's
    tensorrt: tuple[str, ...] = ()  # TensorRT majors whose DLA docs state this rule (empty: every one)
    refuses: bool = False  # a violation stops the vendor tool converting the model at all, not one node

    def for_tensorrt(self, version: str) -> bool:
        return not self.tensorrt or version in self.tensorrt

    def applies(self, target: Target, kind: str, precision: str) -> bool:
        return ((not self.generations or target.generation in self.generations)
                and (not self.targets or target.rules_id in self.targets)
                and (not self.precisions or precision in self.precisions)
                and (("*" in self.kinds and kind not in ("none", "constant")) or kind in self.kinds))


@dataclass(frozen=True)
class OpCondition:
    """A per-node limit on an op's NPU placement: a named check, its params, where it applies, its evidence."""

    check: str
    source: str
    params: Mapping[str, Any] = None  # type: ignore[assignment]
    socs: tuple[str, ...] = ()  # empty: every SoC the op runs on
    precisions: tuple[str, ...] = ()  # empty: every NPU precision

    def applies(self, soc: str, precision: str) -> bool:
        return (not self.socs or soc in self.socs) and (not self.precisions or precision in self.precisions)


@dataclass(frozen=True)
class OpSupport:
    """Where an ONNX op runs on an RKNN SoC, as found in the vendor docs or the toolkit's log."""

    op: str
    npu_socs: tuple[str, ...]
    precisions: tuple[str, ...]  # NPU precisions it runs in (empty: every NPU precision)
    multicore: bool
    source: str
    condition: str | None = None  # a named condition checked per node (e.g. count_include_pad)
    conditions: tuple[OpCondition, ...] = ()  # [[ops.X.when]]: limits scoped by SoC/precision, with params

    @property
    def all_conditions(self) -> tuple[OpCondition, ...]:
        plain = (OpCondition(check=self.condition, source=self.source),) if self.condition else ()
        return plain + self.conditions


@dataclass(frozen=True)
class Target:
    id: str
    family: str
    name: str
    generation: str
    accelerator: str  # dla or npu
    fallback: str  # gpu or cpu
    devices: tuple[str, ...]
    precisions: Mapping[str, tuple[str, ...]]  # accelerator kind -> precisions it offers
    figures: Mapping[str, Figure]
    features: Mapping[str, Any]
    base: str = ""  # a variant (power mode, memory size) shares its base target's rules and op support
    calibration: str = ""  # the key of this target's fitted constants in a latency profile
    cores: int = 0  # accelerator cores this target has (0: none, e.g. an Orin Nano has no DLA)
    toolkit_platform: str = ""  # the vendor toolkit's own SoC name (rknn-toolkit2 target_platform)
    backend: str = ""  # the family's toolchain, as its file names it (optimizer.backends)

    @property
    def rules_id(self) -> str:
        return self.base or self.id

    def figure(self, name: str) -> float:
        return self.figures[name].value

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.precisions)

    @property
    def has_accelerator(self) -> bool:
        """False for a module whose family has an accelerator it lacks (GPU-only Jetsons)."""
        return self.cores > 0

    @property
    def accelerator_devices(self) -> tuple[str, ...]:
        """The engines of the accelerator as the plan names them: dla0, dla1 / npu."""
        return tuple(d for d in self.devices if d == self.accelerator
                     or (d.startswith(self.accelerator) and d[len(self.accelerator):].isdigit()))


@dataclass(frozen=True)
class Family:
    name: str
    accelerator: str
    fallback: str
    layer_kinds: Mapping[str, str]
    default_kind: str  # kind of an op absent from layer_kinds ("none": no accelerator layer)
    rules: tuple[Rule, ...]
    formats: Mapping[str, Any]
    op_support: Mapping[str, OpSupport]
    sources: Mapping[str, str]
    path: str
    backend: str = ""  # the toolchain class that builds for this family (optimizer.backends)


@dataclass(frozen=True)
class Catalog:
    families: Mapping[str, Family]
    targets: Mapping[str, Target]
    sha256: str
    tensorrt: str = DEFAULT_TENSORRT  # the TensorRT major whose DLA rules the families hold

    def target(self, target_id: str) -> Target:
        from optimizer.errors import BadInputError

        if target_id not in self.targets:
            raise BadInputError(f"unknown target '{target_id}' (known: {', '.join(self.targets)})")
        return self.targets[target_id]

    def family_of(self, target: Target) -> Family:
        return self.families[target.family]

    def rule(self, rule_id: str) -> Rule:
        for family in self.families.values():
            for rule in family.rules:
                if rule.id == rule_id:
                    return rule
        raise KeyError(rule_id)

    def rules_of(self, target: Target) -> tuple[Rule, ...]:
        return self.families[target.family].rules

    def sram_is_shared(self, target: Target) -> bool:
        """DLA-SRAM-XAVIER: every DLA loadable's SRAM pool comes out of one SRAM the target's cores share."""
        return any(r.id == "DLA-SRAM-XAVIER" and target.generation in r.generations for r in self.rules_of(target))

    def all_rules(self) -> tuple[Rule, ...]:
        return tuple(r for f in self.families.values() for r in f.rules)

    def loadables_per_core(self) -> int | None:
        """DLA-LOADABLES as a per-core limit where the rule set states one (TensorRT 11's docs), else None."""
        params = self.rule("DLA-LOADABLES").params
        return int(params["max"]) if params.get("per") == "core" else None

    def loadables_at_once(self, target: Target) -> int:
        """DLA-LOADABLES over the whole plan: the limit, or the per-core limit times the target's cores."""
        per_core = self.loadables_per_core()
        if per_core is None:
            return int(self.rule("DLA-LOADABLES").params["max"])
        return per_core * max(target.cores, 1)
