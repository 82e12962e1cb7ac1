"""The CP-SAT model: one block of constraints per catalog rule, variables named after what they hold.

Decisions per layer group: device (and DLA core or NPU cores), precision, sparsity mode, DLA loadable.
Tensor formats at DLA boundaries follow from the boundary's precision in closed form (the cheapest
format the DLA-IO rules allow), so they need no variables of their own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from ortools.sat.python import cp_model

from optimizer.catalog import Catalog
from optimizer.check import CheckReport
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError, InfeasibleError
from optimizer.fusion import GroupGraph, topological_order
from optimizer.latency import (
    LatencyModel,
    Option,
    Placement,
    group_options,
    reformat_engine,
    tensor_routes,
    transfer_engine,
)
from optimizer.solver._outcome import Budget, Outcome, Stop
from optimizer.solver._request import DUAL_STREAMS, PlanRequest

SCALE_SENSITIVITY = 1_000_000
# The pipelined objectives' portfolio: this share of the deterministic budget at linearization level 1 first,
# when at least twice PORTFOLIO_MIN_S is left.
PORTFOLIO_SHARE = 0.4
PORTFOLIO_MIN_S = 0.5
# A hint within this fraction of a proven bound needs little proof: probing is skipped (it took 7 of 7.1 s
# at 436 groups with the hint already optimal).
TIGHT_GAP = 0.01


@dataclass(frozen=True)
class Choice:
    option: Option
    core: int
    cost_ns: int


@dataclass(frozen=True)
class SolveResult:
    placements: tuple[Placement, ...]
    status: str
    objective_ns: int
    bound_ns: int
    total_ns: int
    wall_s: float
    iterations: int  # connectivity cuts rounds
    num_variables: int
    num_constraints: int
    choices: tuple[tuple[Choice, ...], ...] = field(default=(), repr=False)
    outcome: Outcome = Outcome.EXACT
    stop: Stop = Stop.PROVEN
    deterministic_s: float = 0.0


def _sum(variables: list[cp_model.IntVar]) -> cp_model.LinearExpr:
    """sum() of literals, typed (the builtin's 0 start is no LinearExpr to mypy)."""
    return cast(cp_model.LinearExpr, sum(variables))


def _lin(terms: Iterable[tuple[int, cp_model.LinearExpr]]) -> cp_model.LinearExpr:
    terms = [(c, v) for c, v in terms if c]
    if not terms:
        return cp_model.LinearExpr.constant(0)
    return cp_model.LinearExpr.weighted_sum([v for _, v in terms], [c for c, _ in terms])


def dominant_precisions(lm: LatencyModel, request: PlanRequest) -> list[dict[str, str]] | None:
    """Per group and device, the precision that dominates the others, or None when none provably does.

    On Jetson the model is monotone in precision: INT8 computes faster than FP16 and FP16 than FP32,
    moves fewer bytes in every format (chw32 pads C to 32 bytes, chw16 to 16 elements; kDLA_LINEAR pads
    W to 64 bytes), DLA-CONV-CBUF passes in INT8 whenever in FP16, and INT8 scale ties hold when all is
    INT8. Replacing every group's precision by its device's fastest one therefore never raises the
    latency or any engine's busy time, unless the request constrains precisions (pins, INT8 budget) or
    an op lacks the faster precision. On RKNN some NPU ops run in FP16 only, so nothing is fixed there."""
    if not lm.backend.monotone_precisions or request.precision_pins or request.int8_budget is not None:
        return None
    top = next(p for p in PRECISIONS if p in request.allowed_precisions)
    out = []
    for g, group in enumerate(lm.groups.groups):
        options = group_options(lm, g, request.allowed_precisions)
        best: dict[str, str] = {}
        for device in sorted({o.device for o in options}):
            costs = {o.precision: lm.option_ns(group, o) for o in options if o.device == device}
            if top not in costs or costs[top] > min(costs.values()):
                return None  # a group without the top precision could add reformats: no reduction
            best[device] = top
        out.append(best)
    return out


def loadable_limit(request: PlanRequest, at_once: int) -> int:
    """DLA-LOADABLES per plan: at most `at_once` loadables are in use together (seed 000 §12). A
    dual-stream plan runs as one engine per DLA core (seed 004), so its loadables are in use twice."""
    limit = request.max_loadables or at_once
    return min(limit, at_once // DUAL_STREAMS) if request.objective == "dual-stream" else limit


class PlanModel:
    """Builds and solves one CP-SAT model; `explain` builds the assumption-literal variant."""

    def __init__(self, lm: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest,
                 explain: bool = False) -> None:
        self.lm = lm
        self.report = report
        self.catalog = catalog
        self.request = request
        self.explain = explain
        self.target = lm.target
        self.groups = lm.groups.groups
        self.jetson = lm.backend.cores_are_engines
        self.dla_cores = tuple(range(self.target.cores)) if self.jetson else ()  # from the target, 0 to 2
        self.model = cp_model.CpModel()
        self.assumptions: dict[str, cp_model.IntVar] = {}
        self.cuts = 0
        self.floor_index = -1  # the objective-floor constraint, when a bound was given
        self.probing = True
        self.neighbours = group_neighbours(self.lm.groups)
        self._choices()
        self._slots()
        self._slot_sram()
        self._request_constraints()
        self._transfers()
        self._objective()

    # ---- assumption literals (only in explain mode) ----------------------------------------------
    def _lit(self, name: str) -> list[cp_model.IntVar]:
        if not self.explain:
            return []
        if name not in self.assumptions:
            self.assumptions[name] = self.model.new_bool_var(f"assume[{name}]")
        return [self.assumptions[name]]

    def _enforce(self, constraint: cp_model.Constraint, name: str) -> None:
        lits = self._lit(name)
        if lits:
            constraint.only_enforce_if(lits)

    # ---- per-group choices -------------------------------------------------------------------------
    def _allowed_cores(self, group_index: int) -> tuple[int, ...]:
        if not self.jetson:
            return (0,)
        pinned = {self.request.pins.get(m) for m in self.groups[group_index].members}
        if self.request.objective == "throughput":
            return self.dla_cores
        if "dla1" in pinned and 1 in self.dla_cores:
            return (1,)
        return (0,)

    def _choices(self) -> None:
        m = self.model
        all_precisions = frozenset(PRECISIONS)
        self.choices: list[list[Choice]] = []
        self.x: list[list[cp_model.IntVar]] = []
        self.excluded: list[list[set[str]]] = []
        violations_by_node = {v.name: v.violations for v in self.report.verdicts}
        dominant = None if self.explain else dominant_precisions(self.lm, self.request)
        for g, group in enumerate(self.groups):
            allowed = all_precisions if self.explain else self.request.allowed_precisions
            options = self._explain_options(g) if self.explain else group_options(self.lm, g, allowed)
            if dominant is not None:
                options = tuple(o for o in options if o.precision == dominant[g][o.device])
            if self.request.sparsity == "off":
                options = tuple(o for o in options if o.sparsity == "dense")
            if not options:
                raise InfeasibleError(f"group of {group.anchor} has no device it may run on under "
                                      f"--allow-precisions {','.join(sorted(self.request.allowed_precisions))}",
                                      node=group.anchor)
            choices, xs, why = [], [], []
            for option in options:
                cores = self._allowed_cores(g) if option.device == "dla" else (0,)
                for core in cores:
                    choice = Choice(option, core, self.lm.option_ns(group, option))
                    choices.append(choice)
                    xs.append(m.new_bool_var(f"x[{group.anchor}|{option.label()}|c{core}]"))
                    reasons = set()
                    if self.explain:
                        for member in group.members:
                            for v in violations_by_node[member]:
                                if v.accelerator == option.device and v.precision == option.precision:
                                    reasons.add(v.rule)
                        if option.device != "cpu" and option.precision not in self.request.allowed_precisions:
                            reasons.add("--allow-precisions")
                    why.append(reasons)
            m.add_exactly_one(xs)
            for var, reasons in zip(xs, why):
                for reason in sorted(reasons):
                    self._enforce(m.add(var == 0), reason)
            self.choices.append(choices)
            self.x.append(xs)
            self.excluded.append(why)
        self.on: list[dict[str, cp_model.LinearExpr]] = []
        self.prec: list[dict[str, cp_model.LinearExpr]] = []
        self.dp: list[dict[tuple[str, str], cp_model.LinearExpr]] = []
        for g in range(len(self.groups)):
            on: dict[str, list[cp_model.IntVar]] = {}
            prec: dict[str, list[cp_model.IntVar]] = {}
            dp: dict[tuple[str, str], list[cp_model.IntVar]] = {}
            for choice, var in zip(self.choices[g], self.x[g]):
                on.setdefault(choice.option.device, []).append(var)
                prec.setdefault(choice.option.precision, []).append(var)
                dp.setdefault((choice.option.device, choice.option.precision), []).append(var)
            self.on.append({k: _sum(v) for k, v in on.items()})
            self.prec.append({k: _sum(v) for k, v in prec.items()})
            self.dp.append({k: _sum(v) for k, v in dp.items()})

    def _explain_options(self, g: int) -> tuple[Option, ...]:
        """Every device/precision the target has, so that the rules excluding them can be named."""
        target = self.target
        group = self.groups[g]
        options: list[Option] = []
        for device, precisions in target.precisions.items():
            for precision in precisions:
                cores = int(target.features.get("npu_cores", 1)) if device == "npu" and group.multicore else 1
                options.extend(Option(device, precision, cores=k) for k in range(1, cores + 1))
        return tuple(options)

    def _on(self, g: int, device: str) -> cp_model.LinearExpr:
        return self.on[g].get(device, cp_model.LinearExpr.constant(0))

    # ---- DLA-LOADABLES: loadable slots, convex (no path leaves and re-enters), connected by cuts ----
    def _slots(self) -> None:
        m = self.model
        self.dla_groups = [g for g in range(len(self.groups)) if "dla" in self.on[g]]
        self.slots: list[int] = []
        self.inslot: dict[tuple[int, int], cp_model.IntVar] = {}
        self.used: list[cp_model.IntVar] = []
        self.slot_core: dict[tuple[int, int], cp_model.IntVar] = {}
        self.limit = 0
        if not self.lm.backend.loadables or not self.dla_groups:
            return
        limit = loadable_limit(self.request, self.catalog.loadables_at_once(self.target))
        count = min(len(self.dla_groups), max(limit, 16) if self.explain else limit)
        self.limit = limit
        self.slots = list(range(count))
        cores = self.dla_cores
        for s in self.slots:
            self.used.append(m.new_bool_var(f"loadable_used[{s}]"))
            for c in cores:
                self.slot_core[s, c] = m.new_bool_var(f"loadable_core[{s},dla{c}]")
            m.add(sum(self.slot_core[s, c] for c in cores) == self.used[s])
            if s and not self.explain:
                m.add(self.used[s - 1] >= self.used[s])
            if s >= limit:
                self._enforce(m.add(self.used[s] == 0), "DLA-LOADABLES")
        per_core = self.catalog.loadables_per_core()  # TensorRT 11's DLA-LOADABLES counts each core's own
        if per_core is not None and len(self.slots) > per_core:
            for c in cores:
                self._enforce(m.add(sum(self.slot_core[s, c] for s in self.slots) <= per_core), "DLA-LOADABLES")
        for g in self.dla_groups:
            name = self.groups[g].anchor
            for s in self.slots:
                self.inslot[g, s] = m.new_bool_var(f"in_loadable[{name},{s}]")
                m.add(self.used[s] >= self.inslot[g, s])
            m.add(sum(self.inslot[g, s] for s in self.slots) == self._on(g, "dla"))
            for choice, var in zip(self.choices[g], self.x[g]):
                if choice.option.device == "dla":
                    for s in self.slots:
                        m.add(var + self.inslot[g, s] - 1 <= self.slot_core[s, choice.core])
        for s in self.slots:
            m.add(self.used[s] <= sum(self.inslot[g, s] for g in self.dla_groups))
        self._slot_symmetry()
        parts = components(set(self.dla_groups), self.neighbours)
        self._one_part_per_slot(parts)
        self._convexity(parts)

    def interchangeable_slots(self) -> bool:
        """Slots are labels unless they carry their own SRAM pool (DLA-SRAM-PER-LOADABLE) or the infeasibility
        explanation counts them."""
        return not self.explain and not self.lm.loadable_sram

    def interchangeable_cores(self) -> bool:
        """Throughput scores DLA0 and DLA1 alike; a pin naming one core breaks the tie."""
        return (not self.explain and self.request.objective == "throughput"
                and not any(d in ("dla0", "dla1") for d in self.request.pins.values()))

    def _slot_symmetry(self) -> None:
        """Symmetry breaking (every plan keeps one canonical copy, so every optimum survives): slots are
        numbered by their first member (slot s holds a group g only if slot s-1 holds a group before g), and
        with interchangeable cores slot 0 runs on DLA0. Without it a plan has up to 4! x 2 copies."""
        m = self.model
        if self.interchangeable_slots():
            order = sorted(self.dla_groups)
            for s in self.slots[1:]:
                m.add(self.inslot[order[0], s] == 0)
                seen = self.inslot[order[0], s - 1]  # does slot s-1 hold a group before the current one?
                for g in order[1:]:
                    m.add(self.inslot[g, s] <= seen)
                    started = m.new_bool_var(f"loadable_started[{s - 1},{self.groups[g].anchor}]")
                    m.add_max_equality(started, [seen, self.inslot[g, s - 1]])
                    seen = started
        if self.interchangeable_cores() and self.slots and self.interchangeable_slots():
            m.add(self.slot_core[0, 0] == self.used[0])

    def canonical(self, placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
        """The same plan relabelled as the symmetry-breaking constraints number it: slots by first member,
        cores swapped so that slot 0 is on DLA0. A hint in another labelling would be discarded."""
        if not self.slots:
            return placements
        slots = sorted({p.loadable for p in placements if p.loadable >= 0},
                       key=lambda s: min(g for g, p in enumerate(placements) if p.loadable == s))
        relabel = {old: new for new, old in enumerate(slots)} if self.interchangeable_slots() else \
            {s: s for s in slots}
        swap = False
        if self.interchangeable_cores() and self.interchangeable_slots() and slots:
            swap = next(p.core for p in placements if p.loadable == slots[0]) == 1
        return tuple(Placement(p.option, core=(1 - p.core) if swap and p.option.device == "dla" else p.core,
                               loadable=relabel.get(p.loadable, -1)) if p.loadable >= 0 else p
                     for p in placements)

    def _convexity(self, parts: list[set[int]]) -> None:
        """DLA-LOADABLES convexity: no path leaves a loadable and re-enters it (TensorRT cannot build a
        loadable that depends on itself through the GPU). A group downstream of a member (after) and
        upstream of a member (before) must itself be a member. after/before are only bounded below, so
        minimisation keeps them at the reachability they encode. They exist only where a violating path
        can run (`convexity_region`): a connected loadable lies in one part of the DLA-capable groups
        (`_one_part_per_slot`)."""
        m = self.model
        nodes, edges = convexity_region(parts, self.lm.groups.group_edges(), topological_order(self.lm.groups))
        heads, tails = {b for _, b in edges}, {a for a, _ in edges}
        for s in self.slots:
            after = {g: m.new_bool_var(f"after_loadable[{self.groups[g].anchor},{s}]") for g in nodes if g in heads}
            before = {g: m.new_bool_var(f"before_loadable[{self.groups[g].anchor},{s}]") for g in nodes
                      if g in tails}
            for a, b in edges:
                if (a, s) in self.inslot:
                    m.add(after[b] >= self.inslot[a, s])
                if a in after:
                    m.add(after[b] >= after[a])
                if (b, s) in self.inslot:
                    m.add(before[a] >= self.inslot[b, s])
                if b in before:
                    m.add(before[a] >= before[b])
            for g in nodes:
                if g in after and g in before:
                    m.add(after[g] + before[g] <= 1 + self.inslot.get((g, s), 0))

    def _one_part_per_slot(self, parts: list[set[int]]) -> None:
        """A loadable is connected, so its groups lie in one connected part of the DLA-capable groups: one choice
        of part per slot. The connectivity cuts would find this one split at a time; convexity over the whole
        graph used to imply it between parts in series, and sized to each part's region it no longer does."""
        if len(parts) < 2:
            return
        for s in self.slots:
            within = [self.model.new_bool_var(f"loadable_part[{s},{p}]") for p in range(len(parts))]
            self.model.add_at_most_one(within)
            for p, part in enumerate(parts):
                for g in part:
                    self.model.add_implication(self.inslot[g, s], within[p])

    def _parts(self, placements: tuple[Placement, ...]) -> list[list[set[int]]]:
        """Per used loadable (in slot order), its connected parts; more than one part means split."""
        slots = sorted({p.loadable for p in placements if p.loadable >= 0})
        return [components({g for g, p in enumerate(placements) if p.loadable == slot}, self.neighbours)
                for slot in slots]

    def add_connectivity_cuts(self, placements: tuple[Placement, ...]) -> int:
        """Each loadable must be connected: for a split slot, one part plus any other member needs a neighbour."""
        added = 0
        for parts in self._parts(placements):
            if len(parts) < 2:
                continue
            members = set().union(*parts)
            for part in parts:
                outside = sorted(members - part)
                border = sorted({n for g in part for n in self.neighbours.get(g, ()) if n not in part
                                 and n in self.dla_groups})
                for s in self.slots:
                    lhs = sum(self.inslot[g, s] for g in part) + self.inslot[outside[0], s] - len(part)
                    self.model.add(lhs <= sum(self.inslot[n, s] for n in border))
                    added += 1
        self.cuts += added
        return added

    # ---- user requests -----------------------------------------------------------------------------
    def _group_of(self, node: str) -> int:
        groups = self.lm.groups.node_group
        if node not in groups:
            raise BadInputError(f"'{node}' is not a node of the model", node=node)
        g = groups[node]
        if g < 0:
            raise BadInputError("is a folded constant; it runs nowhere and cannot be pinned", node=node)
        return g

    def _request_constraints(self) -> None:
        m = self.model
        req = self.request
        for node, device in sorted(req.pins.items()):
            g = self._group_of(node)
            name = f"--pin {node}={device}"
            if device in ("dla0", "dla1"):
                core = int(device[-1])
                vars_ = [v for c, v in zip(self.choices[g], self.x[g]) if c.option.device == "dla" and c.core == core]
                self._require(_sum(vars_) if vars_ else None, name, g, "dla")
            else:
                self._require(self.on[g].get(device), name, g, device)
        for node, precision in sorted(req.precision_pins.items()):
            g = self._group_of(node)
            self._require(self.prec[g].get(precision), f"--precision {node}={precision}", g, None)
        if req.int8_budget is not None and req.sensitivity:
            terms = []
            for node, score in sorted(req.sensitivity.items()):
                if node in self.lm.groups.node_group and self.lm.groups.node_group[node] >= 0:
                    g = self.lm.groups.node_group[node]
                    if "int8" in self.prec[g]:
                        terms.append((round(score * SCALE_SENSITIVITY), self.prec[g]["int8"]))
            budget = math.floor(req.int8_budget * SCALE_SENSITIVITY)
            if terms:
                self._enforce(m.add(_lin(terms) <= budget), "--int8-budget")
        if req.dla_standalone:
            for g in range(len(self.groups)):
                self._enforce(m.add(self._on(g, "gpu") == 0), "--dla-standalone")
        self._int8_scale_ties()

    def _require(self, expr: cp_model.LinearExpr | None, name: str, g: int, device: str | None) -> None:
        if expr is None:
            if self.explain:
                self._enforce(self.model.add(self.model.new_constant(0) == 1), name)
                return
            group = self.groups[g]
            reasons = sorted({f"{v.rule}: {v.message}" for member in group.members
                              for v in self.report.verdict(member).violations
                              if device is None or v.accelerator == device})
            why = "; ".join(reasons[:3]) or "the option is not offered on this target"
            raise InfeasibleError(f"{name} cannot be met: {why}", node=group.anchor)
        self._enforce(self.model.add(expr == 1), name)

    def _int8_scale_ties(self) -> None:
        """DLA-CONCAT-INT8-RANGE / DLA-POOL-INT8-SCALE: an INT8 concat or pooling on DLA shares its
        inputs' quantization scale, so each input must be produced in INT8 too."""
        if not self.jetson:
            return
        graph = self.lm.graph
        m = self.model
        ties = [r for r in self.catalog.rules_of(self.target)
                if r.id in ("DLA-CONCAT-INT8-RANGE", "DLA-POOL-INT8-SCALE")]
        for g, group in enumerate(self.groups):
            dla_int8 = self.dp[g].get(("dla", "int8"))
            if dla_int8 is None:
                continue
            for name in group.members:
                node = graph.node(name)
                kind = self.report.verdict(name).kind  # the rules' kinds: every pooling, global ones too
                rule = next((r.id for r in ties if r.applies(self.target, kind, "int8")), None)
                if rule is None:
                    continue
                for t in graph.runtime_inputs(node):
                    producer = graph.producer(t)
                    if producer is None:
                        continue
                    u = self.lm.groups.node_group[producer.name]
                    if u == g or u < 0:
                        continue
                    self._enforce(m.add(dla_int8 <= self.prec[u].get("int8", 0)), rule)

    # ---- transfers and precision changes ------------------------------------------------------------
    def _engines(self, g: int) -> dict[str, cp_model.LinearExpr]:
        if self.jetson:
            engines = {"gpu": self._on(g, "gpu")} if "gpu" in self.on[g] else {}
            for s in self.slots:
                if (g, s) in self.inslot:
                    engines[f"slot{s}"] = self.inslot[g, s]
            return engines
        return dict(self.on[g])

    def _transfers(self) -> None:
        m = self.model
        self.transfer_terms: list[tuple[int, cp_model.IntVar]] = []
        self.change_terms: list[tuple[int, cp_model.IntVar]] = []
        self.term_src: list[int] = []  # producing group of each transfer term, then of each change term
        change_src: list[int] = []
        for tensor, src, consumers in tensor_routes(self.lm):
            if src < 0:
                continue
            src_engines = self._engines(src)
            dst_engines: dict[str, list[int]] = {}
            for v in consumers:
                for e in self._engines(v):
                    dst_engines.setdefault(e, []).append(v)
            for e, vs in sorted(dst_engines.items()):
                if set(src_engines) == {e}:
                    continue
                cross = m.new_bool_var(f"cross[{tensor}->{e}]")
                for v in vs:
                    m.add(cross >= self._engines(v)[e] - src_engines.get(e, 0))
                dst_kind = "gpu" if e == "gpu" else ("dla" if e.startswith("slot") else e)
                for (kind, precision), expr in sorted(self.dp[src].items(), key=lambda kv: kv[0]):
                    if kind == dst_kind and kind != "dla":
                        continue
                    ns = self.lm.transfer(tensor, kind, dst_kind, precision)[1]
                    both = m.new_bool_var(f"copy[{tensor}->{e}|{kind}/{precision}]")
                    m.add(both >= cross + expr - 1)
                    self.transfer_terms.append((ns, both))
                    self.term_src.append(src)
            for v in consumers:
                common = set(self.prec[src]) | set(self.prec[v])
                if len(common) < 2:
                    continue
                change = m.new_bool_var(f"reformat[{tensor}->{self.groups[v].anchor}]")
                for q in sorted(self.prec[v]):
                    m.add(change >= self.prec[v][q] - self.prec[src].get(q, 0))
                self.change_terms.append((self.lm.precision_change_ns(tensor), change))
                change_src.append(src)
        self.term_src.extend(change_src)

    def _slot_sram(self) -> None:
        """DLA-SRAM-PER-LOADABLE: a slot with its own SRAM pool changes what its groups cost; the
        difference from the shared default is paid when the choice and the slot are both taken."""
        self.sram_terms: list[tuple[int, cp_model.IntVar, int]] = []  # (delta ns, literal, DLA core)
        self.sram_group: list[int] = []  # each term's layer group
        if not self.lm.loadable_sram:
            return
        for g in self.dla_groups:
            group = self.groups[g]
            for choice, var in zip(self.choices[g], self.x[g]):
                if choice.option.device != "dla" or choice.option.edit is not None:
                    continue
                for s in self.slots:
                    delta = self.lm.option_ns(group, choice.option, sram_bytes=self.lm.sram_of(s)) - choice.cost_ns
                    if delta == 0 or (g, s) not in self.inslot:
                        continue
                    both = self.model.new_bool_var(f"sram[{group.anchor}|{choice.option.label()}|{s}]")
                    self.model.add_bool_and([var, self.inslot[g, s]]).only_enforce_if(both)
                    self.model.add_bool_or([var.Not(), self.inslot[g, s].Not(), both])
                    self.sram_terms.append((delta, both, choice.core))
                    self.sram_group.append(g)

    # ---- objective ---------------------------------------------------------------------------------
    def _busy(self) -> dict[str, cp_model.LinearExpr]:
        busy: dict[str, list[tuple[int, cp_model.IntVar]]] = {}
        for g in range(len(self.groups)):
            for choice, var in zip(self.choices[g], self.x[g]):
                device = f"dla{choice.core}" if choice.option.device == "dla" else choice.option.device
                busy.setdefault(device, []).append((choice.cost_ns, var))
        for delta, both, core in self.sram_terms:
            busy.setdefault(f"dla{core}", []).append((delta, both))
        busy.setdefault(transfer_engine(self.target), []).extend(self.transfer_terms)
        busy.setdefault(reformat_engine(self.target), []).extend(self.change_terms)
        launch = self.lm.launch_ns() if self.lm.backend.loadables else 0
        for s in self.slots:
            for c in self.dla_cores:
                busy.setdefault(f"dla{c}", []).append((launch, self.slot_core[s, c]))
        return {k: _lin(v) for k, v in busy.items()}

    def _objective(self) -> None:
        m = self.model
        launch = self.lm.launch_ns() if self.lm.backend.loadables else 0
        total_terms = [(c.cost_ns, v) for g in range(len(self.groups)) for c, v in zip(self.choices[g], self.x[g])]
        total_terms += self.transfer_terms + self.change_terms + [(launch, u) for u in self.used]
        total_terms += [(delta, both) for delta, both, _ in self.sram_terms]
        self.total = _lin(total_terms) + self.lm.inference_ns()  # per-inference overhead: placement-independent
        self.upper = sum(max(c.cost_ns for c in cs) for cs in self.choices) + sum(c for c, _ in total_terms
                                                                                if c > 0) + 1
        if self.request.latency_cap_ms is not None:
            cap = int(self.request.latency_cap_ms * 1e6)
            self._enforce(m.add(self.total <= cap), "--latency-cap")
        self.busy = self._busy()
        if self.explain:
            return
        if self.request.objective == "latency":
            self.goal = self.total
        else:
            horizon = self.upper * 2
            self.makespan = m.new_int_var(0, horizon, "busiest_engine_ns")
            for device, expr in sorted(self.busy.items()):
                if self.request.objective == "dual-stream":
                    factor = 2 if device in ("gpu", "npu", "cpu") else 1
                    if device == "dla1":
                        continue
                    m.add(self.makespan >= factor * expr)
                else:
                    m.add(self.makespan >= expr)
            self.goal = self.makespan
        m.minimize(self.goal)

    # ---- solving -----------------------------------------------------------------------------------
    def _solver(self, budget: Budget, deterministic_s: float | None = None, linearization: int = 2
                ) -> cp_model.CpSolver:
        """Stops on deterministic time (work done, not seconds elapsed), so a plan found under the limit is
        the same on any machine and load; the command's wall-clock deadline is only a safety net."""
        solver = cp_model.CpSolver()
        params = solver.parameters
        left = budget.deterministic_left() if deterministic_s is None else min(deterministic_s,
                                                                                budget.deterministic_left())
        params.max_deterministic_time = max(left, 1e-3)
        params.max_time_in_seconds = max(budget.wall_left(), 1e-3)
        params.num_workers = self.request.workers
        params.random_seed = self.request.seed
        params.log_search_progress = False
        params.linearization_level = linearization  # 2, the full LP relaxation, proves these models 10-100x faster
        if not self.probing:
            params.cp_model_probing_level = 0
        if self.request.workers > 1:
            params.interleave_search = True  # deterministic with several workers
        return solver

    def _search(self, budget: Budget, known_bound: int) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, Stop,
                                                                   int]:
        """One search within the budget; for the pipelined objectives a portfolio: a share of the budget at
        linearization level 1 (few LP rows: many more solutions tried; finds balanced pipelines fast), then
        level 2 from its best plan (the full LP proves them). Returns the last solver, its status, why it
        stopped, and the best bound either phase proved."""
        first = None
        if self.request.objective != "latency" and budget.deterministic_left() > 2 * PORTFOLIO_MIN_S:
            first = self._solver(budget, budget.deterministic_left() * PORTFOLIO_SHARE, linearization=1)
            status, stop = self._run(first, budget)
            if status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) or budget.exhausted():
                return first, status, stop, known_bound
            if status == cp_model.FEASIBLE:
                known_bound = max(known_bound, round(first.best_objective_bound))
            else:
                first = None
        solver = self._solver(budget)
        status, stop = self._run(solver, budget)
        if first is not None and (status not in (cp_model.OPTIMAL, cp_model.FEASIBLE)
                                  or solver.objective_value > first.objective_value):
            return first, cp_model.FEASIBLE, stop, max(known_bound, round(solver.best_objective_bound)
                                                       if status != cp_model.UNKNOWN else known_bound)
        return solver, status, stop, known_bound

    def _run(self, solver: cp_model.CpSolver, budget: Budget) -> tuple[cp_model.CpSolverStatus, Stop]:
        limit = solver.parameters.max_deterministic_time
        status = solver.solve(self.model)
        finished = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        return status, budget.charge(solver.deterministic_time, limit, finished)

    def floor(self, bound_ns: int) -> None:
        """A proven lower bound as the objective's floor: CP-SAT stops as soon as a plan reaches it, where
        its own LP might need a long search to prove the same."""
        if bound_ns > 0 and not self.explain:
            self.floor_index = self.model.add(self.goal >= bound_ns).index

    def hint(self, placements: tuple[Placement, ...]) -> None:
        self.model.clear_hints()  # type: ignore[no-untyped-call]
        placements = self.canonical(placements)
        for g, placement in enumerate(placements):
            for choice, var in zip(self.choices[g], self.x[g]):
                hit = choice.option == placement.option and (choice.option.device != "dla"
                                                             or choice.core == placement.core)
                self.model.add_hint(var, 1 if hit else 0)
            for s in self.slots:
                if (g, s) in self.inslot:
                    self.model.add_hint(self.inslot[g, s], 1 if placement.loadable == s else 0)

    def extract(self, solver: cp_model.CpSolver) -> tuple[Placement, ...]:
        placements = []
        for g in range(len(self.groups)):
            index = next(i for i, v in enumerate(self.x[g]) if solver.boolean_value(v))
            choice = self.choices[g][index]
            slot = -1
            if choice.option.device == "dla":
                slot = next(s for s in self.slots if solver.boolean_value(self.inslot[g, s]))
            placements.append(Placement(choice.option, core=choice.core, loadable=slot))
        return tuple(placements)

    def solve(self, hint: tuple[Placement, ...] | None = None, budget: Budget | None = None,
              bound_ns: int = 0, hint_ns: int | None = None) -> SolveResult:
        """Solve, add connectivity cuts for split loadables, solve again; EXACT only when proven. Nothing
        found within the budget is Outcome.NOT_FOUND (no placements), proven infeasibility raises.
        `bound_ns` is a proven lower bound on the objective (optimizer.solver._bounds), `hint_ns` the hint's
        objective: when the two nearly meet, probing (most of presolve on easy models) is skipped."""
        started = time.monotonic()
        budget = budget or Budget(self.request.time_limit_s, groups=len(self.groups),
                                 deterministic_s=self.request.deterministic_limit_s)
        self.floor(bound_ns)
        if hint is not None:
            self.hint(hint)
        rounds = 0
        self.probing = not tight_bound(hint_ns, bound_ns)
        found_bound = 0
        while True:
            solver, status, stop, found_bound = self._search(budget, found_bound)
            if status == cp_model.INFEASIBLE:
                raise InfeasibleError("no plan meets every constraint")
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                return self._result((), started, rounds, Outcome.NOT_FOUND, stop, budget, 0, 0)
            placements = self.extract(solver)
            if not self.add_connectivity_cuts(placements) or budget.exhausted():
                break
            rounds += 1
            self.hint(placements)
        objective = round(solver.objective_value)
        bound = min(max(round(solver.best_objective_bound), found_bound), objective)
        split = self._split(placements)
        proven = status == cp_model.OPTIMAL and not split
        if split:
            placements = self.repair(placements, hint)
        if self.request.objective != "latency" and proven and not budget.exhausted():
            # The tie-break gets at most as much deterministic time as the proof it refines.
            placements, stop = self._second_phase(objective, placements, budget, max(1.0, solver.deterministic_time))
        return self._result(placements, started, rounds, Outcome.EXACT if proven else Outcome.BEST_FOUND,
                            stop, budget, objective, bound)

    def _result(self, placements: tuple[Placement, ...], started: float, rounds: int, outcome: Outcome, stop: Stop,
                budget: Budget, objective: int, bound: int) -> SolveResult:
        proto = self.model.proto
        return SolveResult(
            placements=placements, status="OPTIMAL" if outcome is Outcome.EXACT else "FEASIBLE",
            objective_ns=objective, bound_ns=bound, total_ns=-1, wall_s=time.monotonic() - started,
            iterations=rounds, num_variables=len(proto.variables), num_constraints=len(proto.constraints),
            choices=tuple(tuple(c) for c in self.choices), outcome=outcome, stop=stop,
            deterministic_s=round(budget.used_s, 6))

    def repair(self, placements: tuple[Placement, ...], fallback: tuple[Placement, ...] | None
               ) -> tuple[Placement, ...]:
        """Out of time with a split loadable: relabel its parts as loadables of their own if the limit
        allows, else return the (valid) hint."""
        parts = [part for slot_parts in self._parts(placements) for part in slot_parts]
        if len(parts) <= self.limit or fallback is None:
            label = {g: k for k, part in enumerate(sorted(parts, key=min)) for g in part}
            return tuple(Placement(p.option, p.core, label.get(g, -1)) for g, p in enumerate(placements))
        if len({p.loadable for p in fallback if p.loadable >= 0}) > self.limit:  # a dual-stream hint
            raise InfeasibleError(f"no plan with connected DLA loadables found within --time-limit "
                                  f"{self.request.time_limit_s:g} s; raise the limit")
        return fallback

    def _split(self, placements: tuple[Placement, ...]) -> bool:
        return any(len(parts) > 1 for parts in self._parts(placements))

    def _second_phase(self, best: int, placements: tuple[Placement, ...], budget: Budget,
                      deterministic_s: float) -> tuple[tuple[Placement, ...], Stop]:
        """Among plans with the optimal busiest-engine time, the one with the lowest latency; the
        incoming plan stays proven optimal for the busiest engine whatever this phase finds."""
        self.model.add(self.goal <= best)
        self.model.minimize(self.total)
        self.hint(placements)
        solver = self._solver(budget, deterministic_s)
        status, stop = self._run(solver, budget)
        if stop is Stop.WALL_LIMIT:
            return placements, stop  # cut short by load: keep the proven plan rather than a load-dependent one
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            candidate = self.extract(solver)
            if not self._split(candidate):
                return candidate, stop
        return placements, stop

    def conflict(self, budget: Budget | None = None) -> list[str] | None:
        """Names of the assumptions in a sufficient infeasible core (explain mode); None when the budget
        left no time to find them."""
        budget = budget or Budget(self.request.time_limit_s, groups=len(self.groups),
                                 deterministic_s=self.request.deterministic_limit_s)
        if budget.exhausted():
            return None
        solver = self._solver(budget)
        self.model.clear_assumptions()
        self.model.add_assumptions(list(self.assumptions.values()))
        status, _ = self._run(solver, budget)
        if status != cp_model.INFEASIBLE:
            return None if status == cp_model.UNKNOWN else []
        core = set(solver.sufficient_assumptions_for_infeasibility())
        return sorted(name for name, var in self.assumptions.items() if var.index in core)


def tight_bound(hint_ns: int | None, bound_ns: int) -> bool:
    return hint_ns is not None and bound_ns > 0 and hint_ns - bound_ns <= TIGHT_GAP * hint_ns


def group_neighbours(groups: GroupGraph) -> dict[int, set[int]]:
    """Each layer group's neighbours in the group graph, edges taken both ways."""
    neighbours: dict[int, set[int]] = {}
    for a, b in groups.group_edges():
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    return neighbours


def components(members: set[int], neighbours: Mapping[int, set[int]]) -> list[set[int]]:
    """The connected parts of `members`, in order of their smallest group."""
    parts, seen = [], set()
    for start in sorted(members):
        if start in seen:
            continue
        part, stack = set(), [start]
        while stack:
            g = stack.pop()
            if g in part:
                continue
            part.add(g)
            stack.extend(n for n in neighbours.get(g, ()) if n in members and n not in part)
        seen |= part
        parts.append(part)
    return parts


def convexity_region(parts: list[set[int]], edges: Iterable[tuple[int, int]], order: list[int]
                     ) -> tuple[list[int], list[tuple[int, int]]]:
    """The groups and edges a loadable's convexity can concern. A connected loadable lies in one connected
    part P of the DLA-capable groups (`parts`), and a path that leaves it and re-enters it runs between two
    groups of P, so every group on it is downstream and upstream of P: P's region. Only edges with both ends in
    one region are kept; every kept edge is a real one, so no convex loadable is cut off. The searches are
    bounded by position in the topological `order` (a group past P's last one cannot lead back into P), which
    keeps a long chain of short DLA runs linear."""
    edge_list = sorted(set(edges))
    succ: dict[int, list[int]] = {}
    pred: dict[int, list[int]] = {}
    for a, b in edge_list:
        succ.setdefault(a, []).append(b)
        pred.setdefault(b, []).append(a)
    position = {g: p for p, g in enumerate(order)}
    member: dict[int, set[int]] = {}
    for r, part in enumerate(parts):
        span = (min(position[g] for g in part), max(position[g] for g in part))
        down = _bounded_reach(part, succ, position, span)
        up = _bounded_reach(part, pred, position, span)
        for g in part | (down & up):
            member.setdefault(g, set()).add(r)
    kept = [(a, b) for a, b in edge_list if a in member and b in member and member[a] & member[b]]
    return sorted(member), kept


def _bounded_reach(starts: Iterable[int], nxt: Mapping[int, list[int]], position: Mapping[int, int],
                   span: tuple[int, int]) -> set[int]:
    """Groups reachable from `starts` (not counting them unless reached again) through groups whose
    topological position lies within `span`."""
    low, high = span
    seen: set[int] = set()
    stack = [b for a in starts for b in nxt.get(a, ()) if low <= position[b] <= high]
    while stack:
        g = stack.pop()
        if g not in seen:
            seen.add(g)
            stack.extend(b for b in nxt.get(g, ()) if low <= position[b] <= high and b not in seen)
    return seen
