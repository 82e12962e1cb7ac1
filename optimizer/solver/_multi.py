"""Several models in one CP-SAT model: the single-model decisions and rules, new objectives on top.

PlanModel already holds every per-group decision, the loadable slots (DLA-LOADABLES across the whole
union, convexity, connectivity) and the transfers of the merged graph (`optimizer.multi.merge_models`).
This model adds, per model k and engine e, the busy time busy[k,e] and the DRAM bytes, and then:

    lat[k]   = sum_e busy[k,e] + extra[k] + inference overhead    (model k's frame, its engines in sequence)
    load[e]  = sum_k busy[k,e] + extra[k,e]                       (engine e's share of one frame of every model)
    makespan = max(max_k lat[k], max_e load[e])                   (HaX-CoNN's metric: all models start together)

extra[k,e] is shared-DRAM contention (optimizer/latency/_contention.py): engine e's work slows by the PCCS
step reached by x_e = 100 * bytes of the other engines / (DRAM bandwidth * P0), P0 the makespan without
contention (one fixed-point step, so the model stays linear with indicator constraints).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ortools.sat.python import cp_model

from optimizer.catalog import Catalog
from optimizer.check import CheckReport
from optimizer.errors import BadInputError
from optimizer.latency import LatencyModel, Option
from optimizer.latency._contention import MILLI, engine_kind, steps
from optimizer.latency._energy import Power
from optimizer.solver._cpsat import PlanModel, _lin
from optimizer.solver._request import PlanRequest

MULTI_OBJECTIVES = ("makespan", "throughput", "weighted", "energy")
MULTI_ONLY = ("makespan", "weighted", "energy")  # objectives only the multi-model planner has
RATE_SCALE = 1000  # rates are held in thousandths of a frame per second
NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class MultiRequest:
    """What a multi-model (or budgeted single-model) plan is asked for, on top of a PlanRequest."""

    objective: str = "makespan"
    rates: Mapping[str, float] = field(default_factory=dict)  # model -> frames/s it must sustain (throughput)
    latency_caps: Mapping[str, float] = field(default_factory=dict)  # model -> ms
    weights: Mapping[str, float] = field(default_factory=dict)  # model -> weight (weighted)
    cap_ms: float | None = None  # makespan cap (energy under a latency cap, AxoNN's form)
    gpu_budget: float | None = None  # the GPU may be busy at most this share of the period
    contention: bool = True

    def __post_init__(self) -> None:
        if self.objective not in MULTI_OBJECTIVES:
            raise BadInputError(f"--objective must be one of {', '.join(MULTI_OBJECTIVES)} for several models, "
                                f"got '{self.objective}'")
        for flag, values in (("--rate", self.rates), ("--latency-cap", self.latency_caps),
                             ("--weight", self.weights)):
            for name, value in values.items():
                if not value > 0 or value != value or value == float("inf"):
                    raise BadInputError(f"{flag} {name}={value}: must be a finite number > 0")
        if self.cap_ms is not None and not self.cap_ms > 0:
            raise BadInputError(f"--latency-cap must be > 0 ms, got {self.cap_ms}")
        if self.gpu_budget is not None and not 0 <= self.gpu_budget <= 1:
            raise BadInputError(f"--gpu-budget is the share of the period the GPU may be busy, in [0, 1]; "
                                f"got {self.gpu_budget}")
        if self.rates and self.objective != "throughput":
            raise BadInputError("--rate applies to --objective throughput")
        if self.weights and self.objective != "weighted":
            raise BadInputError("--weight applies to --objective weighted")
        object.__setattr__(self, "rates", MappingProxyType(dict(self.rates)))
        object.__setattr__(self, "latency_caps", MappingProxyType(dict(self.latency_caps)))
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))

    def check_names(self, names: Sequence[str]) -> None:
        known = set(names)
        for flag, values in (("--rate", self.rates), ("--latency-cap", self.latency_caps),
                             ("--weight", self.weights)):
            for name in sorted(values):
                if name not in known:
                    raise BadInputError(f"{flag} {name}=...: no model named '{name}' (models: "
                                        f"{', '.join(names)})")
        if self.rates and set(self.rates) != known:
            raise BadInputError(f"--rate must name every model or none (missing: "
                                f"{', '.join(sorted(known - set(self.rates)))})")

    def concurrent(self, models: int) -> bool:
        """Engines overlap in time (and contend for DRAM) when several models run or frames pipeline."""
        return self.contention and (models > 1 or self.objective == "throughput")


def milli_rate(fps: float) -> int:
    return max(1, round(fps * RATE_SCALE))


def bandwidth_x10(lm: LatencyModel) -> int:
    """DRAM peak in tenths of a byte per ns (204.8 GB/s -> 2048), so the contention tests stay integer."""
    return max(1, round(lm.bandwidth / 1e8))


class MultiPlanModel(PlanModel):
    """PlanModel over the union of several models, with per-model latency, contention, energy and budgets."""

    def __init__(self, lm: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest,
                 multi: MultiRequest, group_part: Sequence[int], names: Sequence[str], power: Power | None,
                 group_bytes: Sequence[Mapping[Option, int]], factors: Mapping[str, int] | None = None,
                 contention: bool = True) -> None:
        self.factors = factors  # fixed contention thousandths per engine (the fixed-point mode), else exact steps
        self.with_contention = contention
        self.multi = multi
        self.group_part = tuple(group_part)
        self.names = tuple(names)
        self.power = power
        self.group_bytes = group_bytes  # per group: option -> DRAM bytes
        super().__init__(lm, report, catalog, request)

    def _allowed_cores(self, group_index: int) -> tuple[int, ...]:
        """Both DLA cores for every group: models run side by side, one per core if that pays."""
        return self.dla_cores if self.jetson else (0,)

    def interchangeable_cores(self) -> bool:
        return False

    def _slot_sram(self) -> None:
        """DLA-SRAM-PER-LOADABLE as PlanModel holds it, plus each group's most negative delta (a larger pool is
        faster), which the cheapest bound needs."""
        super()._slot_sram()
        self.sram_least: dict[int, int] = {}
        for (delta, _, _), g in zip(self.sram_terms, self.sram_group):
            self.sram_least[g] = min(self.sram_least.get(g, 0), delta)

    def _sram_part_terms(self) -> dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]]:
        out: dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]] = {}
        for (delta, both, core), g in zip(self.sram_terms, self.sram_group):
            out.setdefault((self.group_part[g], f"dla{core}"), []).append((delta, both))
        return out

    # ---- per-model terms --------------------------------------------------------------------------
    def _part_terms(self) -> dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]]:
        terms: dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]] = {}
        for g in range(len(self.groups)):
            k = self.group_part[g]
            for choice, var in zip(self.choices[g], self.x[g]):
                device = f"dla{choice.core}" if choice.option.device == "dla" else choice.option.device
                terms.setdefault((k, device), []).append((choice.cost_ns, var))
        for key, more in self._sram_part_terms().items():
            terms.setdefault(key, []).extend(more)
        copier = "gpu" if self.jetson else "cpu"
        reformatter = "gpu" if self.jetson else "npu"
        n = len(self.transfer_terms)
        for i, (ns, var) in enumerate(self.transfer_terms + self.change_terms):
            k = self.group_part[self.term_src[i]]
            terms.setdefault((k, copier if i < n else reformatter), []).append((ns, var))
        launch = self.lm.launch_ns() if self.jetson else 0
        m = self.model
        for s in self.slots:
            owners = []
            for k in range(len(self.names)):
                members = [g for g in self.dla_groups if self.group_part[g] == k]
                if not members:
                    continue
                own = m.new_bool_var(f"loadable_model[{s},{self.names[k]}]")
                m.add_max_equality(own, [self.inslot[g, s] for g in members])  # exact: loads carry no slack
                owners.append(own)
                for c in self.dla_cores:
                    on = m.new_bool_var(f"loadable_model_core[{s},{self.names[k]},dla{c}]")
                    m.add_bool_and([own, self.slot_core[s, c]]).only_enforce_if(on)
                    m.add_bool_or([own.Not(), self.slot_core[s, c].Not(), on])
                    terms.setdefault((k, f"dla{c}"), []).append((launch, on))
            m.add(sum(owners) <= 1)  # a loadable is one model's engine
        return terms

    def _compute_terms(self) -> dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]]:
        out: dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]] = {}
        for g in range(len(self.groups)):
            for choice, var in zip(self.choices[g], self.x[g]):
                device = f"dla{choice.core}" if choice.option.device == "dla" else choice.option.device
                out.setdefault((self.group_part[g], device), []).append((choice.cost_ns, var))
        for key, more in self._sram_part_terms().items():  # a group's time in its loadable's own pool
            out.setdefault(key, []).extend(more)
        return out

    def _bytes(self) -> dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]]:
        out: dict[tuple[int, str], list[tuple[int, cp_model.IntVar]]] = {}
        for g in range(len(self.groups)):
            k = self.group_part[g]
            for choice, var in zip(self.choices[g], self.x[g]):
                device = f"dla{choice.core}" if choice.option.device == "dla" else choice.option.device
                out.setdefault((k, device), []).append((self.group_bytes[g][choice.option], var))
        return out

    def _int(self, expr: cp_model.LinearExpr, name: str) -> cp_model.IntVar:
        var = self.model.new_int_var(0, self.horizon, name)
        self.model.add(var == expr)
        return var

    def _objective(self) -> None:
        m = self.model
        multi = self.multi
        parts = range(len(self.names))
        terms = self._part_terms()
        engines = sorted({e for _, e in terms})
        self.horizon = 2 * (sum(max(c.cost_ns for c in cs) for cs in self.choices)
                            + sum(c for c, _ in self.transfer_terms + self.change_terms if c > 0)
                            + sum(d for d, _, _ in self.sram_terms if d > 0)
                            + (self.lm.launch_ns() if self.jetson else 0) * len(self.slots)
                            + self.lm.inference_ns() * len(self.names)) + 1
        busy = {(k, e): _lin(terms.get((k, e), [])) for k in parts for e in engines}
        inference = self.lm.inference_ns()
        lat0 = {k: self._int(_lin([]) + sum(busy[k, e] for e in engines) + inference,
                             f"latency_free[{self.names[k]}]") for k in parts}
        load0 = {e: self._int(_lin([]) + sum(busy[k, e] for k in parts), f"load_free[{e}]") for e in engines}
        extra = self._contention(terms, busy, engines, lat0, load0)
        lat = {k: lat0[k] + sum(extra.get((k, e), 0) for e in engines) for k in parts}
        load = {e: load0[e] + sum(extra.get((k, e), 0) for k in parts) for e in engines}
        self.total = _lin([]) + sum(lat0[k] for k in parts)
        self.upper = self.horizon
        self.busy = load
        for k in parts:
            cap = multi.latency_caps.get(self.names[k])
            if cap is not None:
                m.add(lat[k] <= round(cap * 1e6))
        lat_v = [self._int(lat[k], f"latency[{self.names[k]}]") for k in parts]
        load_v = {e: self._int(load[e], f"load[{e}]") for e in engines}
        if multi.objective == "throughput":
            if multi.rates:
                rate = {k: milli_rate(multi.rates[self.names[k]]) for k in parts}
                util = {e: sum(rate[k] * (busy[k, e] + extra.get((k, e), 0)) for k in parts) for e in engines}
                top = m.new_int_var(0, NS_PER_S * RATE_SCALE, "utilisation")
                for e in engines:
                    m.add(top >= util[e])
                if multi.gpu_budget is not None and "gpu" in util:
                    m.add(util["gpu"] <= round(multi.gpu_budget * NS_PER_S * RATE_SCALE))
                self.goal = top
            else:
                period = m.new_int_var(0, self.horizon, "cycle")
                m.add_max_equality(period, list(load_v.values()))
                self._gpu_budget(load_v, period)
                self.goal = period
        else:
            period = m.new_int_var(0, self.horizon, "makespan")
            m.add_max_equality(period, lat_v + list(load_v.values()))
            if multi.cap_ms is not None:
                m.add(period <= round(multi.cap_ms * 1e6))
            self._gpu_budget(load_v, period)
            if multi.objective == "makespan":
                self.goal = period
            elif multi.objective == "weighted":
                w = {k: max(1, round(multi.weights.get(self.names[k], 1.0) * 1000)) for k in parts}
                self.goal = _lin([(w[k], lat_v[k]) for k in parts])
            else:
                if self.power is None:
                    raise BadInputError(f"--objective energy: {self.target.id} has no power figures "
                                        "(constraints/power.toml)")
                mw = self.power.engine_mw
                self.goal = sum(mw.get(e, 0) * load_v[e] for e in engines) + self.power.idle_mw * period
        m.minimize(self.goal)

    def _gpu_budget(self, load: Mapping[str, cp_model.IntVar], period: cp_model.IntVar) -> None:
        if self.multi.gpu_budget is None or "gpu" not in load:
            return
        self.model.add(1000 * load["gpu"] <= round(self.multi.gpu_budget * 1000) * period)

    def _max_pressure(self, rated: bool) -> float:
        """The highest co-runner throughput (percent of peak) any plan could reach: every group's largest
        DRAM volume over the shortest possible period. PCCS steps above it can never be on, so none is built."""
        volume = sum(max(self.group_bytes[g][c.option] for c in self.choices[g]) for g in range(len(self.groups)))
        if rated:
            rate = max(milli_rate(r) for r in self.multi.rates.values())
            return 100 * rate * volume / (self.lm.bandwidth * RATE_SCALE)
        cheapest = [max(0, min(c.cost_ns for c in cs) + self.sram_least.get(g, 0))
                    for g, cs in enumerate(self.choices)]
        engines = 1 + len(self.dla_cores) if self.jetson else len(self.target.devices)
        shortest = max(max(cheapest, default=0), sum(cheapest) // max(engines, 1))  # any period is at least this
        return 100 * 1000 * volume / (bandwidth_x10(self.lm) * 100 * max(shortest, 1))

    def _contention(self, terms: Mapping[tuple[int, str], Any], busy: Mapping[tuple[int, str], cp_model.LinearExpr],
                    engines: Sequence[str], lat0: Mapping[int, cp_model.IntVar],
                    load0: Mapping[str, cp_model.IntVar]) -> dict[tuple[int, str], cp_model.IntVar]:
        """extra[k,e] >= step(x_e) * busy[k,e] / 1000, with each PCCS step an indicator: off only while the
        co-runners' throughput stays below its threshold."""
        multi = self.multi
        m = self.model
        parts = range(len(self.names))
        if not multi.concurrent(len(self.names)) or not self.with_contention:
            return {}
        if self.factors is not None:
            fixed: dict[tuple[int, str], cp_model.IntVar] = {}
            for (k, e), expr in sorted(busy.items()):
                milli = self.factors.get(e, 0)
                if milli and (k, e) in terms:
                    fixed[k, e] = m.new_int_var(0, self.horizon, f"contention_ns[{self.names[k]},{e}]")
                    m.add(MILLI * fixed[k, e] >= milli * expr)
            return fixed
        volume = self._bytes()
        dram = {e: _lin([t for k in parts for t in volume.get((k, e), [])]) for e in engines}
        rated = multi.objective == "throughput" and bool(multi.rates)
        if rated:
            rate = {k: milli_rate(multi.rates[self.names[k]]) for k in parts}
            flow = {e: sum(rate[k] * _lin(volume.get((k, e), [])) for k in parts) for e in engines}
        else:
            # The co-runners' bytes are spread over the frame's compute time (layer groups only: those
            # terms are exact, so the solver cannot stretch the period to talk contention down).
            compute = self._compute_terms()
            free = m.new_int_var(0, self.horizon, "compute_period")
            spans = [_lin([t for (_, e2), ts in compute.items() if e2 == e for t in ts]) for e in engines]
            if multi.objective != "throughput":
                spans += [_lin([t for (k2, _), ts in compute.items() if k2 == k for t in ts]) for k in parts]
            m.add_max_equality(free, spans)
        bw10 = bandwidth_x10(self.lm)
        reach = self._max_pressure(rated)
        extra: dict[tuple[int, str], cp_model.IntVar] = {}
        for e in engines:
            table = tuple(step for step in steps(engine_kind(e) if self.jetson else None) if step[0] <= reach)
            others = [f for f in engines if f != e]
            if not table or not others:
                continue
            # Exact, not only bounded below: a step is on iff its threshold is reached, and the extra time is
            # the highest step's, rounded up (slack here would let a budget or cap be met on paper).
            ons: list[cp_model.IntVar] = []
            for threshold, _ in table:
                on = m.new_bool_var(f"contention[{e},{threshold}%]")
                if rated:
                    pressure = 100 * sum(flow[f] for f in others)
                    limit = threshold * round(self.lm.bandwidth) * RATE_SCALE
                    m.add(pressure <= limit - 1).only_enforce_if(on.Not())
                    m.add(pressure >= limit).only_enforce_if(on)
                else:
                    volume_others = 1000 * sum(dram[f] for f in others)
                    m.add(volume_others <= threshold * bw10 * free - 1).only_enforce_if(on.Not())
                    m.add(volume_others >= threshold * bw10 * free).only_enforce_if(on)
                if ons:
                    m.add_implication(on, ons[-1])
                ons.append(on)
            for k in parts:
                if (k, e) not in terms:
                    continue
                var = m.new_int_var(0, self.horizon, f"contention_ns[{self.names[k]},{e}]")
                extra[k, e] = var
                m.add(var == 0).only_enforce_if(ons[0].Not())
                for j, (_, milli) in enumerate(table):
                    top = [ons[j]] + ([ons[j + 1].Not()] if j + 1 < len(ons) else [])
                    m.add(MILLI * var >= milli * busy[k, e]).only_enforce_if(top)
                    m.add(MILLI * var <= milli * busy[k, e] + MILLI - 1).only_enforce_if(top)
        return extra
