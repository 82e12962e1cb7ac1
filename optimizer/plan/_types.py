"""plan.json (`edgeplan.plan/v1`) as frozen, typed values, and the exact codec between the two.

Each dataclass field is one JSON key, in the order plan.json writes them, so `Plan.from_json(d).to_json()`
equals `d` key for key and order for order (and `dumps_json` of it, byte for byte). Adding a field to the
format is one line here, at its place in the order: a field with its type (and
`= field(default=None, metadata=OPTIONAL)` when the key may be absent; every type is keyword-only, so a
defaulted field may sit anywhere). Keys the types do not know are kept in `extra` (so a newer plan still
loads and writes back whole) and listed by `unknown_fields()`, which the round-trip tests require to be empty.
`schemas/edgeplan.plan.v1.schema.json` is generated from these types (`python -m optimizer.plan._schema`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from optimizer.enums import Device, Precision
from optimizer.errors import BadInputError

PLAN_SCHEMA = "edgeplan.plan/v1"
T = TypeVar("T")


# Field metadata: `OPTIONAL` marks a key plan.json may leave out (absent when the value is None, unless the
# document it was read from held it as null);
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
    input_shapes: Mapping[str, tuple[int, ...]] | None = field(default=None, metadata=OPTIONAL)  # --input-shape
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
    stopped_by: str | None = field(default=None, metadata=OPTIONAL)  # solver.Stop value; wall-limit: load-dependent
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
    fps_with_contention: float | None = field(default=None, metadata=OPTIONAL)  # PCCS between the copies
    pipelined_fps_with_contention: float | None = field(default=None, metadata=OPTIONAL)
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
        changed = dataclasses.replace(self, **changes)
        if hasattr(self, NULLS):
            object.__setattr__(changed, NULLS, getattr(self, NULLS))
        return changed

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


NULLS = "_present_nulls"  # instance attribute: the optional keys its document held as null


@functools.cache
def _specs(cls: Any) -> tuple[tuple[str, str, bool, str | None], ...]:
    """Per field: (name, JSON key, optional, the sibling whose presence it follows)."""
    return tuple((f.name, json_key(f), bool(f.metadata.get("optional")), f.metadata.get("present_with"))
                 for f in _fields(cls))


def encode(value: Any) -> Any:
    cls: Any = type(value)
    if hasattr(cls, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        nulls = getattr(value, NULLS, ())
        for name, key, optional, sibling in _specs(cls):
            item = getattr(value, name)
            if optional and (getattr(value, sibling) if sibling else item) is None and name not in nulls:
                continue
            out[key] = encode(item)
        extra = getattr(value, "extra", None)
        if extra:
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


class _Bad(Exception):
    """A value that is not of its field's type; the path is filled in on the way out (success costs none)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


def decode(tp: Any, value: Any, where: str = "", *, file: str | None = None) -> Any:
    """`value` (parsed JSON) as type `tp`, checked all the way down."""
    try:
        return _decoder(tp)(value)
    except _Bad as bad:
        path = where + "".join(bad.path)
        raise _fail(path.lstrip("."), bad.message, file) from None


Decoder = Callable[[Any], Any]


@functools.cache
def _decoder(tp: Any) -> Decoder:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"unsupported union {tp}")
        inner = _decoder(rest[0])
        return lambda value: None if value is None else inner(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if origin is tuple:
        return _tuple_decoder(_decoder(typing.get_args(tp)[0]))
    if origin in (Mapping, dict):
        key_type, item = typing.get_args(tp)
        return _mapping_decoder(_decoder(key_type), _decoder(item))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_decoder(tp)
    if tp is Any:
        return lambda value: value
    checks: dict[Any, tuple[Callable[[Any], bool], str]] = {
        bool: (lambda v: isinstance(v, bool), "true or false"),
        int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
        # an integral figure stays an int, so that it writes back as it was read
        float: (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
        str: (lambda v: isinstance(v, str), "a string"),
    }
    if tp not in checks:
        raise TypeError(f"unsupported type {tp}")
    ok, what = checks[tp]

    def primitive(value: Any) -> Any:
        if not ok(value):
            raise _Bad(f"expected {what}, got {_describe(value)}")
        return value
    return primitive


def _dataclass_decoder(cls: type) -> Decoder:
    hints = _hints(cls)
    key_of = {name: key for name, key, _, _ in _specs(cls)}
    fields = [(name, key, optional, key_of[sibling] if sibling else None, _decoder(hints[name]))
              for name, key, optional, sibling in _specs(cls)]
    known = frozenset(key for _, key, _, _, _ in fields)
    has_extra = any(f.metadata.get("extra") for f in dataclasses.fields(cls))

    def decode_object(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Bad(f"expected an object, got {_describe(value)}")
        kwargs: dict[str, Any] = {}
        nulls = []
        for name, key, optional, sibling_key, decoder in fields:
            if key in value:
                item = value[key]
                if optional and item is None:
                    nulls.append(name)
                try:
                    kwargs[name] = decoder(item)
                except _Bad as bad:
                    bad.path.insert(0, f".{key}")
                    raise
            elif not optional or (sibling_key is not None and sibling_key in value):
                missing = _Bad("missing")
                missing.path.append(f".{key}")
                raise missing
        if has_extra:
            kwargs["extra"] = {k: v for k, v in value.items() if k not in known}
        result = cls(**kwargs)
        if nulls:  # an optional key written as null stays written as null
            object.__setattr__(result, NULLS, frozenset(nulls))
        return result
    return decode_object


def _tuple_decoder(item: Decoder) -> Decoder:
    def decode_list(value: Any) -> Any:
        if not isinstance(value, list):
            raise _Bad(f"expected a list, got {_describe(value)}")
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except _Bad as bad:
                bad.path.insert(0, f"[{i}]")
                raise
        return tuple(out)
    return decode_list


def _mapping_decoder(key: Decoder, item: Decoder) -> Decoder:
    def decode_mapping(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Bad(f"expected an object, got {_describe(value)}")
        out = {}
        for k, v in value.items():
            try:
                out[key(k)] = item(v)
            except _Bad as bad:
                bad.path.insert(0, f".{k}")
                raise
        return out
    return decode_mapping


def _enum_decoder(cls: type[Enum]) -> Decoder:
    members = {m.value: m for m in cls}

    def decode_enum(value: Any) -> Any:
        try:
            return members[value]
        except (KeyError, TypeError):
            raise _Bad(f"{_describe(value)} is not one of {list(members)}") from None
    return decode_enum


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
