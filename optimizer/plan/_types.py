"""plan.json (`edgeplan.plan/v1`) as frozen, typed values, and the exact codec between the two.

Each dataclass field is one JSON key, in the order plan.json writes them, so `Plan.from_json(d).to_json()`
equals `d` key for key and order for order (and `dumps_json` of it, byte for byte). Adding a field to the
format is one line here, at its place in the order: a field with its type (and
`= field(default=None, metadata=OPTIONAL)` when the key may be absent; every type is keyword-only, so a
defaulted field may sit anywhere). Keys the
types do not know are kept in `extra` (so a newer plan still loads and writes back whole) and listed by
`unknown_fields()`, which the round-trip tests require to be empty. `schemas/edgeplan.plan.v1.schema.json`
is generated from these types (`python -m optimizer.plan._schema`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from optimizer.enums import Device, Precision
from optimizer.errors import BadInputError

PLAN_SCHEMA = "edgeplan.plan/v1"
T = TypeVar("T")


# Field metadata: `OPTIONAL` marks a key plan.json may leave out (absent exactly when the value is None);
# {"optional": True, "present_with": F} one that is present exactly when field F is (so it may be null);
# {"key": K} a field whose JSON key is not a Python name; EXTRA the keys the types do not know.
OPTIONAL: Mapping[str, Any] = {"optional": True}
EXTRA: Mapping[str, Any] = {"extra": True}


# -- values ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ModelRef:
    path: str
    sha256: str
    num_nodes: int
    models: tuple[ModelFile, ...] | None = field(default=None, metadata=OPTIONAL)  # multi: the merged files
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class SolverSummary:
    status: str  # OPTIMAL only when proved
    outcome: str  # solver.Outcome value
    objective_ms: float
    bound_ms: float
    gap: float
    seed: int
    workers: int
    deterministic_budget_s: float
    groups: int
    objective_unit: str | None = field(default=None, metadata=OPTIONAL)  # multi-model plans: ms, mJ, ...
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class LatencyBand:
    low: float
    high: float
    ratio_low: float
    ratio_high: float
    rows: int
    scope: str
    basis: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Predicted:
    latency_ms: float
    throughput_fps: float
    busiest_engine_ms: float
    latency_band_ms: LatencyBand | None
    energy_mj: float | None = field(default=None, metadata=OPTIONAL)  # targets with power figures
    gpu_busy_share: float | None = field(default=None, metadata=OPTIONAL)  # Jetson: GPU busy / period
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Baseline:
    latency_ms: float
    throughput_fps: float
    speedup: float | None
    subgraphs: int
    pipelined_fps: float | None = field(default=None, metadata=OPTIONAL)  # pipelined objectives only
    throughput_speedup: float | None = field(default=None, metadata={"optional": True, "present_with": "pipelined_fps"})
    # multi-model plans (optimizer/multi): the baseline in the plan's objective, energy, GPU share, per model
    objective: float | None = field(default=None, metadata=OPTIONAL)
    assignment: tuple[str, ...] | None = field(default=None, metadata=OPTIONAL)  # one_per_engine: engine per model
    energy_mj: float | None = field(default=None, metadata=OPTIONAL)
    gpu_busy_share: float | None = field(default=None, metadata=OPTIONAL)
    meets_request: bool | None = field(default=None, metadata=OPTIONAL)
    models_ms: tuple[float, ...] | None = field(default=None, metadata=OPTIONAL)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    allowed_precisions: tuple[Precision, ...]
    pins: Mapping[str, str]  # node -> device or "dla"
    precision_pins: Mapping[str, Precision]
    int8_budget: float | None
    latency_cap_ms: float | None
    dla_standalone: bool
    max_loadables: int | None
    sram_bytes: int | None
    sram_per_loadable: tuple[int, ...]
    sparsity: str
    with_edits: bool
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class BreakdownRecord:
    layers_ms: float
    transfers_ms: float
    reformats_ms: float
    launches_ms: float
    loadables: int
    busy_ms: Mapping[Device, float]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Layer:
    node: str
    op_type: str
    device: Device
    precision: Precision
    sparsity: str
    cores: int | None
    latency_ms: float
    group: int | None
    subgraph: int | None
    role: str  # anchor, fused or constant
    edit: str | None = field(default=None, metadata=OPTIONAL)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class MemoryNeeds:
    dla_local_dram_bytes: int
    dla_global_dram_bytes: int
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class MemoryPools:
    dla_sram_bytes: int
    dla_local_dram_bytes: int
    dla_global_dram_bytes: int
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class SubgraphPlan:
    id: int
    device: Device
    nodes: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    precision: str  # a Precision, or "mixed"
    precisions: tuple[Precision, ...]
    io_formats: Mapping[str, str] | None = field(default=None, metadata=OPTIONAL)  # DLA subgraphs
    memory_needs: MemoryNeeds | None = field(default=None, metadata=OPTIONAL)
    memory_pools: MemoryPools | None = field(default=None, metadata=OPTIONAL)
    loadable: int | None = field(default=None, metadata=OPTIONAL)
    cores: int | None = field(default=None, metadata=OPTIONAL)  # NPU subgraphs
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Transfer:
    tensor: str
    src: Device = field(metadata={"key": "from"})
    dst: Device = field(metadata={"key": "to"})
    bytes: int
    precision: Precision
    format: str
    latency_ms: float
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class DynamicInput:
    tensor: str
    axis: int
    symbol: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class SizeExample:
    node: str
    tensor: str
    origin: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class UnknownSizes:
    needs_shapes: bool
    dynamic_inputs: tuple[DynamicInput, ...]
    tensors: Mapping[str, int]  # per cause
    nodes: Mapping[str, int]
    origins: Mapping[str, tuple[str, ...]]
    examples: Mapping[str, tuple[SizeExample, ...]]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class OpsetConversion:
    from_opset: int = field(metadata={"key": "from"})
    to_opset: int = field(metadata={"key": "to"})
    by: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class CostOption:
    device: str  # an accelerator kind: gpu, dla, npu, cpu
    core: int
    precision: Precision
    cores: int
    sparsity: str
    latency_ms: float
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class CostLayer:
    group: int
    anchor: str
    members: tuple[str, ...]
    options: tuple[CostOption, ...]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class CostTensor:
    tensor: str
    from_group: int
    to_groups: tuple[int, ...]
    transfer_ms: Mapping[str, float]  # "src->dst/precision"
    reformat_ms: float
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Costs:
    layers: tuple[CostLayer, ...]
    tensors: tuple[CostTensor, ...]
    loadable_launch_ms: float
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)



# -- several models (optimizer/multi) and replication --------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ModelFile:
    """One of the files a multi-model plan merged (model.models)."""

    name: str
    path: str
    sha256: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class PlannedModel:
    """One model of a multi-model plan: its frame with and without shared-DRAM contention."""

    name: str
    path: str
    prefix: str
    nodes: int
    latency_ms: float
    latency_without_contention_ms: float
    contention_ms: float
    busy_ms: Mapping[str, float]
    rate_fps: float | None
    latency_cap_ms: float | None
    weight: float | None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Contention:
    on: bool
    source: str
    pressure_pct: Mapping[str, int]
    extra_ms: Mapping[str, float]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class PowerFigures:
    engine_w: Mapping[str, float]
    idle_w: float
    budget_w: float
    source: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class MultiSummary:
    """A multi-model plan's period, contention, engine loads, energy and GPU budget (plan.multi)."""

    schema: str
    objective: str
    objective_unit: str
    period: str
    period_ms: float
    period_without_contention_ms: float
    contention_ms: float
    contention: Contention
    load_ms: Mapping[str, float]
    utilisation: Mapping[str, float]
    energy_mj: float | None
    power: PowerFigures | None
    gpu_busy_share: float | None
    gpu_budget: float | None
    makespan_cap_ms: float | None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)


@dataclass(frozen=True, kw_only=True)
class Replication:
    """Throughput plans: whole copies on the GPU and each DLA core with the best frame split, against the
    pipelined plan (optimizer/plan/_replicate.py)."""

    split: Mapping[str, float]
    fps: float
    cycle_ms: float
    pipelined_fps: float
    chosen: str
    why: str
    copies_ms: Mapping[str, Mapping[str, float]]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)

@dataclass(frozen=True, kw_only=True)
class Plan:
    """One plan.json. Read it with `Plan.from_json`, write it with `to_json` (then fileio.dumps_json)."""

    schema: str
    tool_version: str
    target: str
    model: ModelRef
    objective: str
    solver: SolverSummary
    predicted: Predicted
    baselines: Mapping[str, Baseline]
    request: RequestRecord
    tensorrt_rules: str | None = field(default=None, metadata=OPTIONAL)  # Jetson: the DLA rule set (--trt)
    breakdown: BreakdownRecord
    layers: tuple[Layer, ...]
    subgraphs: tuple[SubgraphPlan, ...]
    warnings: tuple[str, ...]
    transfers: tuple[Transfer, ...]
    unknown_sizes: UnknownSizes
    opset_conversion: OpsetConversion | None
    edits: tuple[str, ...]
    costs: Costs | None = field(default=None, metadata=OPTIONAL)  # --explain
    replication: Replication | None = field(default=None, metadata=OPTIONAL)  # throughput: copies vs pipeline
    models: tuple[PlannedModel, ...] | None = field(default=None, metadata=OPTIONAL)  # several models
    multi: MultiSummary | None = field(default=None, metadata=OPTIONAL)  # several models: period, energy, ...
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata=EXTRA)

    @classmethod
    def from_json(cls, document: Any, *, file: str | None = None) -> Plan:
        """The plan a parsed plan.json holds; a missing key or a value of the wrong type is a
        BadInputError naming the file and the field (`layers[3].precision`)."""
        if not isinstance(document, Mapping) or document.get("schema") != PLAN_SCHEMA:
            raise BadInputError(f"not an {PLAN_SCHEMA} document", file=file)
        return read_as(cls, document, file=file)

    def to_json(self) -> dict[str, Any]:
        """plan.json as plain JSON values, keys in the order the format lists them."""
        out = encode(self)
        assert isinstance(out, dict)
        return out

    def replace(self, **changes: Any) -> Plan:
        return dataclasses.replace(self, **changes)

    @functools.cached_property
    def layer_of(self) -> Mapping[str, Layer]:
        """Each node's layer, by node name."""
        return {layer.node: layer for layer in self.layers}

    def anchors(self) -> dict[int, Layer]:
        """Each layer group's anchor layer, by group index (a group's placement is its anchor's)."""
        return {layer.group: layer for layer in self.layers if layer.role == "anchor" and layer.group is not None}


# -- codec -------------------------------------------------------------------------------------------------

def json_key(f: dataclasses.Field[Any]) -> str:
    return f.metadata.get("key") or f.name


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(f for f in dataclasses.fields(cls) if not f.metadata.get("extra"))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _present(obj: Any, f: dataclasses.Field[Any]) -> bool:
    if not f.metadata.get("optional"):
        return True
    sibling = f.metadata.get("present_with")
    return getattr(obj, sibling if sibling else f.name) is not None


def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in _fields(type(value)):
            if _present(value, f):
                out[json_key(f)] = encode(getattr(value, f.name))
        extra = getattr(value, "extra", None) or {}
        out.update({k: v for k, v in extra.items() if k not in out})
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {encode(k): encode(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    return value


def _fail(where: str, message: str, file: str | None) -> BadInputError:
    return BadInputError(f"plan field '{where or '(top level)'}': {message}", file=file)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def decode(tp: Any, value: Any, where: str = "", *, file: str | None = None) -> Any:
    """`value` (parsed JSON) as type `tp`, checked all the way down."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return decode(rest[0], value, where, file=file)
        raise _fail(where, f"unsupported union {tp}", file)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise _fail(where, f"expected an object, got {_describe(value)}", file)
        hints = _hints(tp)
        kwargs: dict[str, Any] = {}
        known = set()
        for f in _fields(tp):
            key = json_key(f)
            known.add(key)
            inner = f"{where}.{key}" if where else key
            if key not in value:
                sibling = f.metadata.get("present_with")
                if f.metadata.get("optional") and not (sibling and _json_has(value, tp, sibling)):
                    continue
                raise _fail(inner, "missing", file)
            kwargs[f.name] = decode(hints[f.name], value[key], inner, file=file)
        if any(f.metadata.get("extra") for f in dataclasses.fields(tp)):
            kwargs["extra"] = {k: v for k, v in value.items() if k not in known}
        return tp(**kwargs)
    if origin is tuple:
        if not isinstance(value, list):
            raise _fail(where, f"expected a list, got {_describe(value)}", file)
        (item, _) = typing.get_args(tp)
        return tuple(decode(item, v, f"{where}[{i}]", file=file) for i, v in enumerate(value))
    if origin in (Mapping, dict):
        if not isinstance(value, Mapping):
            raise _fail(where, f"expected an object, got {_describe(value)}", file)
        key_type, item = typing.get_args(tp)
        return {decode(key_type, k, f"{where}.{k}", file=file): decode(item, v, f"{where}.{k}", file=file)
                for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise _fail(where, f"{_describe(value)} is not one of {[m.value for m in tp]}", file) from None
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _fail(where, f"expected true or false, got {_describe(value)}", file)
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _fail(where, f"expected an integer, got {_describe(value)}", file)
        return value
    if tp is float:  # an integral figure stays an int, so that it writes back as it was read
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(where, f"expected a number, got {_describe(value)}", file)
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _fail(where, f"expected a string, got {_describe(value)}", file)
        return value
    raise _fail(where, f"unsupported type {tp}", file)


def _json_has(value: Mapping[str, Any], tp: type, name: str) -> bool:
    f = next(f for f in _fields(tp) if f.name == name)
    return json_key(f) in value


def unknown_fields(value: Any, where: str = "") -> list[str]:
    """Every key a document carried that the types do not know, as field paths."""
    found: list[str] = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found += [f"{where}.{k}" if where else k for k in getattr(value, "extra", {}) or {}]
        for f in _fields(type(value)):
            found += unknown_fields(getattr(value, f.name), f"{where}.{json_key(f)}" if where else json_key(f))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            found += unknown_fields(v, f"{where}.{k}")
    elif isinstance(value, tuple):
        for i, v in enumerate(value):
            found += unknown_fields(v, f"{where}[{i}]")
    return found


def as_json(value: Any) -> Any:
    """Any part of a plan (a Layer, the breakdown, ...) as the plain JSON plan.json holds for it."""
    return encode(value)


def read_as(tp: type[T], value: Any, *, file: str | None = None) -> T:
    result: T = decode(tp, value, file=file)
    return result
