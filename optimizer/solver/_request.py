"""What the user asks the planner for, validated at construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from optimizer.backends import backend_of
from optimizer.catalog import DEFAULT_TENSORRT, TENSORRT_VERSIONS, Target
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError

OBJECTIVES = ("latency", "throughput", "dual-stream")
DUAL_STREAMS = 2  # seed 004 §七.2: camera 0 on DLA0, camera 1 on DLA1
PIN_DEVICES = ("gpu", "dla", "dla0", "dla1", "npu", "cpu")


@dataclass(frozen=True)
class PlanRequest:
    objective: str = "latency"
    time_limit_s: float = 60.0  # seconds for the whole optimize call: sizes the deterministic budget
    deterministic_limit_s: float | None = None  # CP-SAT deterministic seconds; None: derived from time_limit_s
    seed: int = 0
    workers: int = 1
    allowed_precisions: frozenset[str] = frozenset(PRECISIONS)
    pins: Mapping[str, str] = field(default_factory=dict)  # node -> device
    precision_pins: Mapping[str, str] = field(default_factory=dict)  # node -> precision
    sensitivity: Mapping[str, float] = field(default_factory=dict)  # node -> INT8 accuracy cost
    int8_budget: float | None = None
    latency_cap_ms: float | None = None
    dla_standalone: bool = False
    sram_bytes: int | None = None
    sram_per_loadable: tuple[int, ...] = ()  # DLA-SRAM-PER-LOADABLE: the pool of loadable slot k
    max_loadables: int | None = None  # override of DLA-LOADABLES (tests, studies)
    sparsity: str = "allow"  # "off": dense weights only (the model was not trained sparse)
    with_edits: bool = False  # candidate model edits become decisions (optimize --with-edits)
    explain_infeasible: bool = True  # name the constraints in conflict (a second, assumption-based solve)
    tensorrt: str = DEFAULT_TENSORRT  # the TensorRT major whose DLA rule set applies (--trt)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise BadInputError(f"--objective must be one of {', '.join(OBJECTIVES)}, got '{self.objective}'")
        if self.time_limit_s <= 0:
            raise BadInputError(f"--time-limit must be > 0, got {self.time_limit_s}")
        if self.deterministic_limit_s is not None and self.deterministic_limit_s <= 0:
            raise BadInputError(f"--deterministic-limit must be > 0, got {self.deterministic_limit_s}")
        if self.workers < 1:
            raise BadInputError(f"solver workers must be >= 1, got {self.workers}")
        bad = set(self.allowed_precisions) - set(PRECISIONS)
        if bad or not self.allowed_precisions:
            raise BadInputError(f"--allow-precisions takes a subset of {', '.join(PRECISIONS)}, got "
                                f"{', '.join(sorted(self.allowed_precisions)) or 'nothing'}")
        for node, device in self.pins.items():
            if device not in PIN_DEVICES:
                raise BadInputError(f"--pin {node}={device}: device must be one of {', '.join(PIN_DEVICES)}")
        for node, precision in self.precision_pins.items():
            if precision not in PRECISIONS:
                raise BadInputError(f"--precision {node}={precision}: must be one of {', '.join(PRECISIONS)}")
        if self.int8_budget is not None and self.int8_budget < 0:
            raise BadInputError(f"--int8-budget must be >= 0, got {self.int8_budget}")
        if self.sparsity not in ("allow", "off"):
            raise BadInputError(f"--sparsity must be allow or off, got '{self.sparsity}'")
        if self.max_loadables is not None and self.max_loadables < 0:
            raise BadInputError(f"--max-loadables must be >= 0, got {self.max_loadables}")
        if self.tensorrt not in TENSORRT_VERSIONS:
            raise BadInputError(f"--trt must be one of {', '.join(TENSORRT_VERSIONS)}, got '{self.tensorrt}'")
        if self.latency_cap_ms is not None and self.latency_cap_ms <= 0:
            raise BadInputError(f"--latency-cap must be > 0 ms, got {self.latency_cap_ms}")
        object.__setattr__(self, "pins", MappingProxyType(dict(self.pins)))
        object.__setattr__(self, "precision_pins", MappingProxyType(dict(self.precision_pins)))
        object.__setattr__(self, "sensitivity", MappingProxyType(dict(self.sensitivity)))


def check_target(request: PlanRequest, target: Target) -> None:
    """What a request needs of the target's engines, checked before any model is read (exit 2)."""
    if request.objective == "dual-stream" and (not backend_of(target).cores_are_engines or target.cores < DUAL_STREAMS):
        has = f"{target.cores} DLA core(s)" if backend_of(target).cores_are_engines and target.cores else "no DLA"
        raise BadInputError(f"--objective dual-stream runs one stream per DLA core and needs {DUAL_STREAMS}; "
                            f"{target.id} has {has} (use --objective latency or throughput)")
    if request.dla_standalone and not any(d.startswith("dla") for d in target.devices):
        raise BadInputError(f"--dla-standalone needs a DLA; {target.id} has none")
    for node, device in sorted(request.pins.items()):
        exists = device in target.devices or (device == target.accelerator and target.cores > 0)
        if device.startswith("dla") and not exists:
            cores = f"{target.cores} DLA core(s)" if backend_of(target).cores_are_engines else "no DLA"
            raise BadInputError(f"--pin {node}={device}: {target.id} has {cores}")


def parse_assignments(values: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values or []:
        node, sep, choice = value.rpartition("=")
        if not sep or not node or not choice:
            raise BadInputError(f"{flag} '{value}' must look like NODE=VALUE")
        out[node] = choice.strip().lower()
    return out
