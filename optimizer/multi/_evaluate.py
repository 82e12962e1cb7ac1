"""Scores a complete multi-model assignment with exactly the accounting MultiPlanModel's objective uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from optimizer.latency import Breakdown, LatencyModel, Option, Placement, evaluate
from optimizer.latency._contention import MILLI, engine_kind, extra_ns, steps
from optimizer.latency._energy import Power
from optimizer.solver._multi import NS_PER_S, RATE_SCALE, MultiRequest, bandwidth_x10, milli_rate


@dataclass(frozen=True)
class MultiBreakdown:
    """One frame of every model: per model and engine, busy and contention time; the period and energy."""

    breakdown: Breakdown
    busy: Mapping[tuple[int, str], int]  # (model, engine) -> ns without contention
    extra: Mapping[tuple[int, str], int]  # (model, engine) -> contention ns
    latency_ns: tuple[int, ...]  # per model, with contention
    latency_free_ns: tuple[int, ...]  # per model, without
    load_ns: Mapping[str, int]  # per engine, with contention
    dram_bytes: Mapping[str, int]  # per engine, one frame of every model
    pressure_pct: Mapping[str, int]  # per engine: co-runners' throughput, percent of peak, rounded down
    milli: Mapping[str, int]  # per engine: the PCCS step reached, in thousandths of extra time
    period_ns: int  # makespan (or cycle for throughput) with contention
    free_period_ns: int  # the same without contention
    utilisation: Mapping[str, float]  # per engine, busy share of each second at the requested rates
    energy_pj: int | None
    objective: int  # what CP-SAT minimises, in its units (ns, pJ, weighted ns, utilisation)

    @property
    def contention_ns(self) -> int:
        return self.period_ns - self.free_period_ns


def group_bytes(lm: LatencyModel, options: Mapping[int, Sequence[Option]]) -> list[dict[Option, int]]:
    """DRAM bytes of each group on each option: weights plus activations (what contention counts)."""
    out = []
    for g, group in enumerate(lm.groups.groups):
        row = {}
        for option in options[g]:
            work = lm.work(group, option)
            row[option] = round(work.weight_bytes + work.act_bytes)
        out.append(row)
    return out


def multi_evaluate(lm: LatencyModel, placements: tuple[Placement, ...], group_part: Sequence[int],
                   names: Sequence[str], multi: MultiRequest, power: Power | None,
                   bytes_of: Sequence[Mapping[Option, int]], default_formats: bool = False) -> MultiBreakdown:
    b = evaluate(lm, placements, default_formats)
    parts = range(len(names))
    busy: dict[tuple[int, str], int] = {}

    def add(k: int, e: str, ns: int) -> None:
        busy[k, e] = busy.get((k, e), 0) + ns

    for g, (p, ns) in enumerate(zip(placements, b.group_ns)):
        add(group_part[g], p.device, ns)
    backend = lm.backend
    for t in b.transfers:
        add(group_part[t.src_group], backend.transfer_engine, t.ns)
    for _tensor, dst, ns in b.precision_changes:
        add(group_part[dst], backend.reformat_engine, ns)
    launch = lm.launch_ns() if backend.loadables else 0
    for slot in b.loadables:
        g = next(g for g, p in enumerate(placements) if p.loadable == slot)
        add(group_part[g], placements[g].device, launch)
    engines = sorted({e for _, e in busy})
    inference = lm.inference_ns()
    lat0 = tuple(sum(busy.get((k, e), 0) for e in engines) + inference for k in parts)
    load0 = {e: sum(busy.get((k, e), 0) for k in parts) for e in engines}
    volume: dict[tuple[int, str], int] = {}
    for g, p in enumerate(placements):
        key = (group_part[g], p.device)
        volume[key] = volume.get(key, 0) + bytes_of[g].get(p.option, 0)
    dram = {e: sum(volume.get((k, e), 0) for k in parts) for e in engines}
    rated = multi.objective == "throughput" and bool(multi.rates)
    rate = {k: milli_rate(multi.rates[names[k]]) for k in parts} if rated else {}
    compute: dict[tuple[int, str], int] = {}
    for g, (p, ns) in enumerate(zip(placements, b.group_ns)):
        compute[group_part[g], p.device] = compute.get((group_part[g], p.device), 0) + ns
    spans = [sum(v for (_, e2), v in compute.items() if e2 == e) for e in engines]
    if multi.objective != "throughput":
        spans += [sum(v for (k2, _), v in compute.items() if k2 == k) for k in parts]
    free = max(spans, default=0)  # the frame's compute time: what the co-runners' bytes are spread over
    extra: dict[tuple[int, str], int] = {}
    pressure: dict[str, int] = {}
    reached_milli: dict[str, int] = {}
    bw10 = bandwidth_x10(lm)
    concurrent = multi.concurrent(len(names))
    for e in engines:
        others = [f for f in engines if f != e]
        table = steps(engine_kind(e) if backend.cores_are_engines else None)
        if rated:
            flow = sum(rate[k] * volume.get((k, f), 0) for k in parts for f in others)
            reached = [m for a, m in table if 100 * flow >= a * round(lm.bandwidth) * RATE_SCALE]
            pressure[e] = (100 * flow) // (round(lm.bandwidth) * RATE_SCALE)
        else:
            volume_others = sum(dram[f] for f in others)
            reached = [m for a, m in table if free and 1000 * volume_others >= a * bw10 * free]
            pressure[e] = (1000 * volume_others) // (bw10 * free) if free else 0
        if not concurrent or not others or not reached:
            continue
        milli = max(reached)
        reached_milli[e] = milli
        for k in parts:
            if (k, e) in busy:
                extra[k, e] = extra_ns(milli, busy[k, e])
    lat = tuple(lat0[k] + sum(extra.get((k, e), 0) for e in engines) for k in parts)
    load = {e: load0[e] + sum(extra.get((k, e), 0) for k in parts) for e in engines}
    if multi.objective == "throughput":
        period = max(load.values(), default=0)
        free_period = max(load0.values(), default=0)
    else:
        period = max(list(lat) + list(load.values()), default=0)
        free_period = max(list(lat0) + list(load0.values()), default=0)
    if rated:
        util = {e: sum(rate[k] * (busy.get((k, e), 0) + extra.get((k, e), 0)) for k in parts) for e in engines}
        utilisation = {e: round(u / (NS_PER_S * RATE_SCALE), 6) for e, u in util.items()}
    else:
        util = {}
        utilisation = {e: round(v / period, 6) if period else 0.0 for e, v in load.items()}
    energy = power.energy_pj(load, period) if power is not None else None
    if multi.objective == "throughput":
        objective = max(util.values(), default=0) if rated else period
    elif multi.objective == "weighted":
        objective = sum(max(1, round(multi.weights.get(names[k], 1.0) * 1000)) * lat[k] for k in parts)
    elif multi.objective == "energy":
        objective = energy if energy is not None else 0
    else:
        objective = period
    return MultiBreakdown(
        breakdown=b, busy=MappingProxyType(busy), extra=MappingProxyType(extra), latency_ns=lat,
        latency_free_ns=lat0, load_ns=MappingProxyType(load), dram_bytes=MappingProxyType(dram),
        pressure_pct=MappingProxyType(pressure), milli=MappingProxyType(reached_milli),
        period_ns=period, free_period_ns=free_period,
        utilisation=MappingProxyType(utilisation), energy_pj=energy, objective=objective)


def meets(mb: MultiBreakdown, names: Sequence[str], multi: MultiRequest) -> bool:
    """Whether an assignment honours the request's caps, rates and GPU budget (baselines may not)."""
    for k, name in enumerate(names):
        cap = multi.latency_caps.get(name)
        if cap is not None and mb.latency_ns[k] > round(cap * 1e6):
            return False
    if multi.cap_ms is not None and multi.objective != "throughput" and mb.period_ns > round(multi.cap_ms * 1e6):
        return False
    if multi.objective == "throughput" and multi.rates and max(mb.utilisation.values(), default=0) > 1:
        return False
    if multi.gpu_budget is not None and "gpu" in mb.load_ns:
        if multi.objective == "throughput" and multi.rates:
            return mb.utilisation.get("gpu", 0.0) <= multi.gpu_budget + 1e-12
        return 1000 * mb.load_ns["gpu"] <= round(multi.gpu_budget * 1000) * mb.period_ns
    return True


__all__ = ["MILLI", "MultiBreakdown", "group_bytes", "meets", "multi_evaluate"]
