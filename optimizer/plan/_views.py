"""What the plan page shows, as plain values: one row per layer group, boundary edge and timeline bar.

Every view of the page (graph, timeline, charts, tables) is a small function over these values, so the
page says exactly what plan.json and the latency model say, in the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.enums import PRECISIONS
from optimizer.fusion import Edge
from optimizer.ir import BYTES_PER_ELEMENT
from optimizer.latency import (
    Breakdown,
    LatencyModel,
    Placement,
    group_options,
    reformat_engine,
    tensor_routes,
    transfer_engine,
)
from optimizer.latency._evaluate import Transfer
from optimizer.plan._build import Planned, objective_cycle_ns
from optimizer.plan._types import Baseline, Predicted, SolverSummary

DEVICE_KIND = {"gpu": "gpu", "dla0": "dla", "dla1": "dla", "npu": "npu", "cpu": "cpu"}


@dataclass(frozen=True)
class Alternative:
    option: str  # device/precision, e.g. "dla/int8"
    ms: float
    transfers_ms: float  # transfers this group would add or save next to its neighbours as placed


@dataclass(frozen=True)
class GroupView:
    index: int
    anchor: str
    members: tuple[str, ...]
    op_types: tuple[str, ...]
    device: str  # gpu, dla0, dla1, npu, cpu
    precision: str
    cores: int | None
    ms: float
    subgraph: int
    alternatives: tuple[Alternative, ...]  # best option per other device kind
    reason: str


@dataclass(frozen=True)
class EdgeView:
    src: int  # producing group, -1 for a model input
    dst: int
    tensor: str
    boundary: bool  # crosses an engine boundary: a transfer
    fmt: str
    bytes: int
    ms: float


@dataclass(frozen=True)
class Bar:
    lane: str
    start_ms: float
    end_ms: float
    label: str
    kind: str  # group, transfer, reformat, launch
    group: int | None


@dataclass(frozen=True)
class Timeline:
    title: str  # what one pass of the chart is: one frame, or one pipelined cycle
    span_ms: float
    lanes: tuple[str, ...]
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Comparison:
    name: str
    value: float
    unit: str


@dataclass(frozen=True)
class PlanView:
    model: str
    target: str
    target_name: str
    objective: str
    metric: str  # latency or throughput: what the objective optimises
    solver: SolverSummary
    groups: tuple[GroupView, ...]
    edges: tuple[EdgeView, ...]
    subgraphs: tuple[tuple[int, str, int], ...]  # (id, device, loadable)
    timeline: Timeline
    comparisons: tuple[Comparison, ...]  # the plan first, then each baseline, in the metric's unit
    band: tuple[float, float] | None  # the prediction's likely range (ms), when the profile carries one
    warnings: tuple[str, ...]


def _ms(ns: float) -> float:
    return round(ns / 1e6, 6)


def metric_of(objective: str) -> str:
    return "latency" if objective == "latency" else "throughput"


def metric_value(objective: str, breakdown: Breakdown) -> float:
    """The objective's figure of merit: ms per frame for latency, frames per second otherwise."""
    if metric_of(objective) == "latency":
        return _ms(breakdown.total_ns)
    cycle, frames = objective_cycle_ns(objective, breakdown)
    return round(frames * 1e9 / cycle, 3) if cycle else 0.0


def _transfer_delta_ns(planned: Planned, g: int, kind: str, edges: dict[int, list[Edge]]) -> int:
    """Transfers this group would need beside its neighbours as placed, were it on `kind`, minus those it has."""
    model = planned.model
    placements = planned.placements
    precision = placements[g].option.precision
    here = DEVICE_KIND[placements[g].device]
    delta = 0
    for edge in edges.get(g, ()):
        if edge.dst == g and edge.src >= 0:
            other = placements[edge.src]
            src = DEVICE_KIND[other.device]
            delta += _crossing(model, edge.tensor, src, kind, other.option.precision)
            delta -= _crossing(model, edge.tensor, src, here, other.option.precision)
        elif edge.src == g:
            dst = DEVICE_KIND[placements[edge.dst].device]
            delta += _crossing(model, edge.tensor, kind, dst, precision)
            delta -= _crossing(model, edge.tensor, here, dst, precision)
    return delta


def edges_by_group(planned: Planned) -> dict[int, list[Edge]]:
    """Each group's incoming and outgoing edges, indexed once (a scan of every edge per group is quadratic)."""
    index: dict[int, list[Edge]] = {}
    for edge in planned.groups.edges:
        index.setdefault(edge.dst, []).append(edge)
        if edge.src >= 0 and edge.src != edge.dst:
            index.setdefault(edge.src, []).append(edge)
    return index


def _crossing(model: LatencyModel, tensor: str, src: str, dst: str, precision: str) -> int:
    return 0 if src == dst else int(model.transfer(tensor, src, dst, precision)[1])


def _alternatives(planned: Planned, g: int, edges: dict[int, list[Edge]]) -> tuple[Alternative, ...]:
    model = planned.model
    group = planned.groups.groups[g]
    chosen = DEVICE_KIND[planned.placements[g].device]
    allowed: frozenset[str] = frozenset(planned.plan.request.allowed_precisions) or frozenset(PRECISIONS)
    best: dict[str, tuple[int, str]] = {}
    for option in group_options(model, g, allowed):
        if option.edit or option.device == chosen:
            continue
        ns = model.option_ns(group, option, False,
                             model.sram_of(-1) if option.device == "dla" else None)
        label = f"{option.device}/{option.precision}" + (f"/{option.cores}c" if option.device == "npu" else "")
        if option.device not in best or ns < best[option.device][0]:
            best[option.device] = (ns, label)
    return tuple(Alternative(label, _ms(ns), _ms(_transfer_delta_ns(planned, g, device, edges)))
                 for device, (ns, label) in sorted(best.items()))


def _rules_against(planned: Planned, g: int, kind: str) -> list[str]:
    group = planned.groups.groups[g]
    rules: set[str] = set()
    for member in group.members:
        rules |= {v.rule for v in planned.report.verdict(member).violations if v.accelerator == kind}
    return sorted(rules)


def _reason(planned: Planned, g: int, ms: float, alternatives: tuple[Alternative, ...]) -> str:
    placement = planned.placements[g]
    device = placement.device
    here = f"{device.upper()} {ms:.3f} ms"
    accelerator = planned.report.target.accelerator
    if not alternatives:
        if DEVICE_KIND[device] == planned.report.target.fallback and accelerator in planned.report.target.precisions:
            rules = _rules_against(planned, g, accelerator)
            return f"{here}; cannot run on the {accelerator.upper()}: {', '.join(rules) or 'no layer kind'}"
        return f"{here}; the only place it can run"
    others = "; ".join(f"{a.option.upper()} {a.ms:.3f} ms {'+' if a.transfers_ms >= 0 else '-'} "
                       f"{abs(a.transfers_ms):.3f} ms transfers" for a in alternatives)
    cheapest = min(alternatives, key=lambda a: a.ms + a.transfers_ms)
    if cheapest.ms + cheapest.transfers_ms >= ms:
        return f"{here}; {others}"
    objective = planned.plan.objective
    busy = planned.breakdown.busy_ns
    if objective != "latency" and busy:
        cycle, _ = objective_cycle_ns(objective, planned.breakdown)
        kind = cheapest.option.split("/")[0]
        lanes = [d for d in busy if DEVICE_KIND.get(d) == kind] or [kind]
        loads = ", ".join(f"{d.upper()} busy {_ms(busy.get(d, 0)):.3f} ms" for d in lanes)
        return f"{here}; {others}; kept here to balance the pipeline: {loads} of a {_ms(cycle):.3f} ms cycle"
    used = len(planned.breakdown.loadables)
    return (f"{here}; {others}; cheaper alone elsewhere, but the whole plan is faster this way "
            f"(DLA-LOADABLES: {used} loadable(s) in use; convex, connected engines)")


def group_views(planned: Planned) -> tuple[GroupView, ...]:
    subgraph_of = {g: s.id for s in planned.subgraphs for g in s.groups}
    graph = planned.report.graph
    edges = edges_by_group(planned)
    views = []
    for g, group in enumerate(planned.groups.groups):
        placement = planned.placements[g]
        ms = _ms(planned.breakdown.group_ns[g])
        alternatives = _alternatives(planned, g, edges)
        views.append(GroupView(
            index=g, anchor=group.anchor, members=group.members,
            op_types=tuple(graph.node(m).op_type for m in group.members), device=placement.device,
            precision=placement.option.precision,
            cores=placement.option.cores if placement.option.device == "npu" else None, ms=ms,
            subgraph=subgraph_of[g], alternatives=alternatives, reason=_reason(planned, g, ms, alternatives)))
    return tuple(views)


def edge_views(planned: Planned) -> tuple[EdgeView, ...]:
    graph = planned.report.graph
    moved = {(t.tensor, t.src_group, t.dst_engine): t for t in planned.breakdown.transfers}
    edges = []
    for tensor, src, consumers in tensor_routes(planned.model):
        for dst in consumers:
            placement: Placement | None = planned.placements[src] if src >= 0 else None
            transfer = moved.get((tensor, src, planned.placements[dst].engine)) if placement else None
            elements = graph.tensors[tensor].num_elements or 0 if tensor in graph.tensors else 0
            precision = transfer.precision if transfer else planned.placements[dst].option.precision
            edges.append(EdgeView(src=src, dst=dst, tensor=tensor, boundary=transfer is not None,
                                  fmt=transfer.fmt if transfer else "",
                                  bytes=int(elements * BYTES_PER_ELEMENT.get(precision, 4)),
                                  ms=_ms(transfer.ns) if transfer else 0.0))
    return tuple(edges)


def _lanes_of(placement: Placement) -> list[str]:
    if placement.option.device == "npu":
        return [f"npu core {k}" for k in range(placement.option.cores)]
    return [placement.device]


def _lane_order(lane: str) -> tuple[int, str]:
    rank = ("gpu", "dla0", "dla1", "npu", "cpu", "transfers")
    head = lane.split(" ")[0]
    return (rank.index(head) if head in rank else len(rank), lane)


def _frame_timeline(planned: Planned) -> Timeline:
    """Latency: one frame, everything in sequence, as the latency objective sums it."""
    b = planned.breakdown
    out_transfers: dict[int, list[Transfer]] = {}
    for t in b.transfers:
        out_transfers.setdefault(t.src_group, []).append(t)
    reformats: dict[int, list[tuple[str, int]]] = {}
    for tensor, dst, ns in b.precision_changes:
        reformats.setdefault(dst, []).append((tensor, ns))
    launched: set[int] = set()
    launch_each = b.launch_ns / len(b.loadables) if b.loadables else 0
    bars: list[Bar] = []
    now = 0.0
    rank = _topo_rank(planned)
    order = sorted(range(len(planned.placements)), key=lambda i: rank[i])
    if b.inference_ns and order:  # the per-inference enqueue / rknn_run submit, before the first layer
        bars.append(Bar(_lanes_of(planned.placements[order[0]])[0], 0.0, b.inference_ns / 1e6,
                        "per-inference enqueue", "launch", None))
        now = b.inference_ns / 1e6
    for g in order:
        p = planned.placements[g]
        for tensor, ns in reformats.get(g, []):
            bars.append(Bar("transfers", now, now + ns / 1e6, f"reformat {tensor}", "reformat", None))
            now += ns / 1e6
        if p.loadable >= 0 and p.loadable not in launched:
            launched.add(p.loadable)
            bars.append(Bar(p.device, now, now + launch_each / 1e6, f"launch loadable {p.loadable}", "launch", None))
            now += launch_each / 1e6
        ns = b.group_ns[g]
        for lane in _lanes_of(p):
            bars.append(Bar(lane, now, now + ns / 1e6, planned.groups.groups[g].anchor, "group", g))
        now += ns / 1e6
        for t in out_transfers.get(g, []):
            bars.append(Bar("transfers", now, now + t.ns / 1e6, f"{t.tensor} {t.src_device}->{t.dst_device}",
                            "transfer", None))
            now += t.ns / 1e6
    return _timeline("one frame (latency objective: every layer, transfer and launch in sequence)", now, bars)


def _topo_rank(planned: Planned) -> dict[int, int]:
    graph = planned.report.graph
    return {g: graph.node(group.anchor).index for g, group in enumerate(planned.groups.groups)}


def _cycle_timeline(planned: Planned) -> Timeline:
    """Throughput and dual-stream: the steady state, each engine's share of one pipelined cycle."""
    b = planned.breakdown
    objective = planned.plan.objective
    streams = ("A", "B") if objective == "dual-stream" else ("",)
    cursor: dict[str, float] = {}
    bars: list[Bar] = []

    def put(lane: str, ns: float, label: str, kind: str, group: int | None) -> None:
        start = cursor.get(lane, 0.0)
        bars.append(Bar(lane, start, start + ns / 1e6, label, kind, group))
        cursor[lane] = start + ns / 1e6

    rank = _topo_rank(planned)
    order = sorted(range(len(planned.placements)), key=lambda i: rank[i])
    copier, reformatter = transfer_engine(planned.model.target), reformat_engine(planned.model.target)
    for stream in streams:
        for g in order:
            p = planned.placements[g]
            lanes = _lanes_of(p)
            if stream and p.device.startswith("dla"):
                lanes = ["dla0" if stream == "A" else "dla1"]
            elif stream == "B" and p.device != "gpu":
                continue
            label = planned.groups.groups[g].anchor + (f" ({stream})" if stream else "")
            for lane in lanes:
                put(lane, b.group_ns[g], label, "group", g)
        for t in b.transfers:
            put(copier, t.ns, f"{t.tensor} {t.src_device}->{t.dst_device}", "transfer", None)
        for tensor, _, ns in b.precision_changes:
            put(reformatter, ns, f"reformat {tensor}", "reformat", None)
    cycle, frames = objective_cycle_ns(objective, b)
    title = (f"pipelined steady state ({objective}): one cycle of {_ms(cycle):.3f} ms gives {frames} frame(s); "
             f"each lane shows its engine's work per cycle; transfers (red) are {copier.upper()} work")
    return _timeline(title, max([_ms(cycle), *cursor.values()]), bars)


def _timeline(title: str, span: float, bars: list[Bar]) -> Timeline:
    lanes = tuple(sorted({bar.lane for bar in bars}, key=_lane_order))
    return Timeline(title=title, span_ms=round(span, 6), lanes=lanes, bars=tuple(bars))


def timeline(planned: Planned) -> Timeline:
    return _frame_timeline(planned) if planned.plan.objective == "latency" else _cycle_timeline(planned)


def comparisons(planned: Planned) -> tuple[Comparison, ...]:
    objective = planned.plan.objective
    unit = "ms" if metric_of(objective) == "latency" else "fps"
    rows = [Comparison("edgeplan", metric_value(objective, planned.breakdown), unit)]
    rows += [Comparison(name, metric_value(objective, breakdown), unit)
             for name, (_, breakdown) in planned.baselines.items()]
    return tuple(rows)


def _band(predicted: Predicted) -> tuple[float, float] | None:
    band = predicted.latency_band_ms
    return (float(band.low), float(band.high)) if band else None


def plan_view(planned: Planned) -> PlanView:
    plan = planned.plan
    target = planned.report.target
    return PlanView(
        model=plan.model.path, target=target.id, target_name=target.name, objective=plan.objective,
        metric=metric_of(plan.objective), solver=plan.solver, groups=group_views(planned),
        edges=edge_views(planned),
        subgraphs=tuple((s.id, s.device, s.loadable) for s in planned.subgraphs), timeline=timeline(planned),
        comparisons=comparisons(planned), band=_band(plan.predicted), warnings=plan.warnings)


def ratios(baseline: Baseline) -> str:
    """The plan's gain over a baseline, with the metric named: a throughput plan may trade latency for rate."""
    parts = [f"latency x{baseline.speedup:.2f}"] if baseline.speedup is not None else []
    if baseline.throughput_speedup is not None:
        parts.append(f"throughput x{baseline.throughput_speedup:.2f}")
    return ", ".join(parts)


def within_band(pred: Predicted, base: Baseline) -> str:
    """A speedup smaller than the model's error band (high/low ratio) is not a prediction to rely on."""
    band = pred.latency_band_ms
    speedup = base.speedup
    if not band or not speedup or speedup <= 1.0 or speedup >= band.ratio_high / band.ratio_low:
        return ""
    return f"; within the x{band.ratio_high / band.ratio_low:.2f} error band: measure before relying on it"
