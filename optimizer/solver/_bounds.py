"""Lower bounds computed before any CP-SAT model is built: each group at its cheapest option, and the LP
relaxation of options, transfers and precision changes (GLOP).

Every other term of the objective (transfers, reformats, loadable launches) is non-negative, and the
request's constraints only remove options, so these bound every plan the exact model could return. When
the best baseline already meets the bound it is proven optimal with no model at all, and past the exact
model's size the bound gives the handed-over baseline a real gap instead of 100%.
"""

from __future__ import annotations

import math

from ortools.linear_solver.python import model_builder as mb

from optimizer.latency import LatencyModel, Option, group_options, reformat_engine, tensor_routes, transfer_engine
from optimizer.solver._request import PlanRequest


def _dual_stream_factor(device: str) -> int:
    """Dual-stream counts two frames: each DLA core one, the shared engines (GPU, NPU, CPU) both."""
    return 1 if device == "dla" else 2


def _cheapest(lm: LatencyModel, g: int, request: PlanRequest, weighted: bool) -> int:
    group = lm.groups.groups[g]
    pools: list[int | None] = [*sorted(set(lm.loadable_sram))] or [None]
    best = None
    for option in group_options(lm, g, request.allowed_precisions):
        if request.sparsity == "off" and option.sparsity != "dense":
            continue
        if option.device == "dla":
            ns = min(lm.option_ns(group, option, sram_bytes=pool) if pool is not None
                     else lm.option_ns(group, option) for pool in pools)
        else:
            ns = lm.option_ns(group, option)
        if weighted:
            ns *= _dual_stream_factor(option.device)
        best = ns if best is None else min(best, ns)
    return 0 if best is None else int(best)


def engine_count(lm: LatencyModel) -> int:
    """Engines that can share the work of one frame: the GPU, each DLA core, the NPU (its cores are one
    engine: a split layer's cost already counts them), the CPU."""
    return max(len(lm.target.devices), 1)


def cheapest_bound_ns(lm: LatencyModel, request: PlanRequest) -> int:
    """A lower bound on the objective CP-SAT minimises for this request (latency: every group in sequence;
    throughput: the busiest engine carries at least its share of the cheapest work and the costliest group;
    dual-stream: the same with each option's frame count)."""
    groups = range(len(lm.groups.groups))
    if request.objective == "latency":
        # the per-inference overhead is in every plan's latency, whatever the placement
        return sum(_cheapest(lm, g, request, weighted=False) for g in groups) + lm.inference_ns()
    weighted = request.objective == "dual-stream"
    cheapest = [_cheapest(lm, g, request, weighted) for g in groups]
    if not cheapest:
        return 0
    engines = engine_count(lm) - (1 if weighted and "dla1" in lm.target.devices else 0)
    return max(max(cheapest), -(-sum(cheapest) // max(engines, 1)))


LP_MARGIN = 1e-3  # ns
LP_MAX_GROUPS = 4000


def _option_ns(lm: LatencyModel, g: int, option: Option) -> int:
    group = lm.groups.groups[g]
    if option.device == "dla" and lm.loadable_sram:
        return min(lm.option_ns(group, option, sram_bytes=pool) for pool in sorted(set(lm.loadable_sram)))
    return lm.option_ns(group, option)


def _options(lm: LatencyModel, g: int, request: PlanRequest, without_dla: bool = False) -> list[Option]:
    return [o for o in group_options(lm, g, request.allowed_precisions)
            if (request.sparsity != "off" or o.sparsity == "dense") and not (without_dla and o.device == "dla")]


def _engines_of(lm: LatencyModel, option: Option, request: PlanRequest, used_cores: int | None = None
                ) -> tuple[str, ...]:
    """The busy-time engines one option may load: each DLA core for throughput (the LP splits a group between
    them no better than between any two engines; only the first `used_cores` when given), DLA0 for latency and
    dual-stream (DLA1 when pinned)."""
    if option.device != "dla":
        return (option.device,)
    cores = [f"dla{c}" for c in range(lm.target.cores)]
    if request.objective == "throughput":
        return tuple(cores if used_cores is None else cores[:used_cores])
    if request.objective == "dual-stream" and "dla1" in request.pins.values() and "dla1" in cores:
        return tuple(cores[:2])
    return (cores[0],)


class _Relaxation:
    """An LP kept as rows as well as a GLOP model, so that its bound can be certified by weak duality."""

    def __init__(self) -> None:
        self.model = mb.Model()  # type: ignore[no-untyped-call]
        self.columns: list[tuple[mb.Variable, float]] = []  # (variable, upper bound); every lower bound is 0
        self.rows: list[tuple[list[tuple[float, mb.Variable]], float, float, mb.LinearConstraint]] = []
        self.objective: list[tuple[float, mb.Variable]] = []

    def var(self, name: str, upper: float = 1.0) -> mb.Variable:
        x = self.model.new_num_var(0.0, upper, name)
        self.columns.append((x, upper))
        return x

    def row(self, terms: list[tuple[float, mb.Variable]], lower: float, upper: float = math.inf) -> None:
        expr = mb.LinearExpr.weighted_sum([v for _, v in terms], [c for c, _ in terms])
        self.rows.append((terms, lower, upper, self.model.add_linear_constraint(expr, lower, upper)))

    def minimize(self, terms: list[tuple[float, mb.Variable]]) -> None:
        self.objective = terms
        self.model.minimize(mb.LinearExpr.weighted_sum([v for _, v in terms], [c for c, _ in terms]))

    def certified_bound(self) -> float | None:
        """Weak duality with GLOP's duals y: c.x = y.Ax + (c - yA).x >= sum of y_i times its row's bound on
        the side y_i pushes + each reduced cost at its column's worse bound, for every feasible x, whatever
        y is; so float error in y can only weaken the bound, never make it wrong. None without an optimum."""
        solver = mb.Solver("glop")
        if solver.solve(self.model) != mb.SolveStatus.OPTIMAL:
            return None
        reduced = {x.index: c for c, x in self.objective}
        parts = []
        for terms, lower, upper, ct in self.rows:
            y = float(solver.dual_value(ct))
            y = max(y, 0.0) if upper == math.inf else min(y, 0.0) if lower == -math.inf else y
            if y == 0.0:
                continue
            parts.append(y * (lower if y > 0 else upper))
            for c, x in terms:
                reduced[x.index] = reduced.get(x.index, 0.0) - y * c
        for x, upper in self.columns:
            r = reduced.get(x.index, 0.0)
            if r < 0:
                parts.append(r * upper)
        return math.fsum(parts)


def lp_bound_ns(lm: LatencyModel, request: PlanRequest, uncounted: frozenset[int] = frozenset(),
                without_dla: bool = False, used_cores: int | None = None, launch_ns: int = 0) -> int | None:
    """The LP relaxation of the plan's costs, solved by GLOP before any CP-SAT model exists.

    Variables: each group's options (per DLA core for throughput) as fractions summing to one. A tensor pays
    its cheapest possible transfer into device kind d as far as some consumer is on d and its producer is
    not (y >= x[v, d] - x[src, d]), and a precision change likewise; loadable launches and the DLA-LOADABLES
    structure are left out, and pins, caps and budgets only remove plans, so the value bounds every plan the
    exact model could return. The value is certified from GLOP's duals (_Relaxation.certified_bound), so it
    is a bound even where GLOP's tolerances leave its own optimum slightly off. None without an optimum.
    `uncounted` groups keep their variables (their transfers count) but not their own option costs: a
    region's share when its first group's cost belongs to the region before (optimizer.solver._decompose).
    `without_dla`: the plans that leave the DLA unused (None when some group needs it). `used_cores`
    (throughput): the plans that use exactly the first that many DLA cores, each paying at least `launch_ns`
    (one loadable) on top of its work (optimizer.solver._bounds.throughput_lp_ns)."""
    if not lm.groups.groups:
        return None
    lp = _Relaxation()
    on_device: list[dict[str, list[mb.Variable]]] = []  # per group and device kind, its option variables
    on_precision: list[dict[str, list[mb.Variable]]] = []
    busy: dict[str, list[tuple[float, mb.Variable]]] = {}
    for g in range(len(lm.groups.groups)):
        devices: dict[str, list[mb.Variable]] = {}
        precisions: dict[str, list[mb.Variable]] = {}
        xs = []
        for k, option in enumerate(_options(lm, g, request, without_dla or used_cores == 0)):
            ns = float(_option_ns(lm, g, option))
            for engine in _engines_of(lm, option, request, used_cores):
                x = lp.var(f"x{g}_{k}_{engine}")
                xs.append(x)
                devices.setdefault(option.device, []).append(x)
                precisions.setdefault(option.precision, []).append(x)
                if g not in uncounted:
                    busy.setdefault(engine, []).append((ns, x))
        if not xs:
            return None
        lp.row([(1.0, x) for x in xs], 1.0, 1.0)
        on_device.append(devices)
        on_precision.append(precisions)
    copier, reformatter = transfer_engine(lm.target), reformat_engine(lm.target)
    for tensor, src, consumers in tensor_routes(lm):
        if src < 0:
            continue
        src_kinds = sorted(on_device[src])
        src_precisions = sorted(on_precision[src])
        for d in sorted({d for v in consumers for d in on_device[v]}):
            others = [k for k in src_kinds if k != d]
            ns = min((lm.transfer(tensor, k, d, p)[1] for k in others for p in src_precisions), default=0)
            if ns <= 0:
                continue
            y = lp.var(f"t_{tensor}_{d}")
            for v in consumers:
                if d in on_device[v]:
                    lp.row([(1.0, y), *((-1.0, x) for x in on_device[v][d]),
                            *((1.0, x) for x in on_device[src].get(d, []))], 0.0)
            busy.setdefault(copier, []).append((float(ns), y))
        change = lm.precision_change_ns(tensor)
        for v in consumers:
            if change <= 0 or len(set(on_precision[src]) | set(on_precision[v])) < 2:
                continue
            z = lp.var(f"p_{tensor}_{v}")
            for q, qs in sorted(on_precision[v].items()):
                lp.row([(1.0, z), *((-1.0, x) for x in qs), *((1.0, x) for x in on_precision[src].get(q, []))], 0.0)
            busy.setdefault(reformatter, []).append((float(change), z))
    if request.objective == "latency":
        lp.minimize([t for engine in sorted(busy) for t in busy[engine]])
    else:
        # every plan's busiest engine is below twice all its work: a finite column bound for the certificate
        launched = [f"dla{c}" for c in range(used_cores or 0)] if launch_ns > 0 else []
        for engine in launched:
            busy.setdefault(engine, [])
        ceiling = 2.0 * sum(c for terms in busy.values() for c, _ in terms) + launch_ns + 1.0
        makespan = lp.var("busiest_engine", ceiling)
        for engine, engine_terms in sorted(busy.items()):
            factor = 1.0
            if request.objective == "dual-stream":
                if engine.startswith("dla") and engine != "dla0":
                    continue
                factor = 1.0 if engine.startswith("dla") else 2.0
            lp.row([(1.0, makespan), *((-factor * c, v) for c, v in engine_terms)],
                   float(launch_ns) if engine in launched else 0.0)
        lp.minimize([(1.0, makespan)])
    value = lp.certified_bound()
    if value is None:
        return None
    # Every plan costs whole nanoseconds, so the bound rounds up; LP_MARGIN absorbs float rounding in the sum.
    ns = math.ceil(value - LP_MARGIN)
    extra = lm.inference_ns() if request.objective == "latency" else 0
    return max(ns, 0) + extra


def latency_lp_ns(lm: LatencyModel, request: PlanRequest, uncounted: frozenset[int] = frozenset()) -> int | None:
    """The latency LP raised by loadable launches, which it leaves out: a plan that uses the DLA has at least
    one loadable and pays its launch, one that does not is bounded by the LP without DLA options, so the
    smaller of (LP + one launch) and (LP without the DLA) bounds every plan. On a DLA-friendly chain this
    closes the whole gap (the LP was exactly one 40 us launch short of the optimum on Xavier)."""
    value = lp_bound_ns(lm, request, uncounted)
    launch = lm.launch_ns() if lm.backend.loadables else 0
    if value is None or launch <= 0 or request.objective != "latency":
        return value
    if not any(o.device == "dla" for g in range(len(lm.groups.groups)) for o in _options(lm, g, request)):
        return value
    without = lp_bound_ns(lm, request, uncounted, without_dla=True)
    return value + launch if without is None else min(value + launch, max(without, value))


def throughput_lp_ns(lm: LatencyModel, request: PlanRequest) -> int | None:
    """The throughput LP with loadable launches, which it otherwise leaves out: a plan runs loadables on some
    number k of DLA cores, and each of those cores pays at least one launch besides its work. The LP over
    the plans on exactly k cores (the first k: a group costs the same on every core, so which k does not
    change the LP) gets that launch as its rows' floor; the smallest over k = 0..cores bounds every plan.
    Launches are 40 us on Orin, a tenth of a ResNet-50 engine's share, so this lifts the bound where the DLA
    cores carry real work. It proves the plan after the search (optimizer.plan._build), not as CP-SAT's
    floor: a different floor sends an unproven search elsewhere, and on the zoo it ended worse as often as
    better."""
    launch = lm.launch_ns() if lm.backend.loadables else 0
    if request.objective != "throughput" or launch <= 0 or lm.target.cores < 1:
        return lp_bound_ns(lm, request)
    values = []
    for k in range(lm.target.cores + 1):
        value = lp_bound_ns(lm, request, used_cores=k, launch_ns=launch)
        if value is None and k == 0:
            continue  # some group needs the DLA: no plan leaves it unused
        if value is None:
            return lp_bound_ns(lm, request)
        values.append(value)
    return min(values) if values else None


def lower_bound_ns(lm: LatencyModel, request: PlanRequest, lp: bool = True, proves: int | None = None) -> int:
    """The best bound known before the exact model: the cheapest-option bound, raised by the LP relaxation
    up to LP_MAX_GROUPS groups (GLOP and building its model took 10 s for 17,500 groups on the 2-core
    machine, past what a plan of that size may spend). `proves` is a valid plan's objective: when the
    cheapest-option bound already reaches it, that plan is optimal and the LP (0.08 of 0.1 s at 400 groups)
    is skipped; the two bounds then agree with the plan, so the result is the same either way."""
    bound = cheapest_bound_ns(lm, request)
    if proves is not None and bound >= proves:
        return bound
    if lp and len(lm.groups.groups) <= LP_MAX_GROUPS:
        bound = max(bound, (latency_lp_ns(lm, request) if request.objective == "latency" else
                            lp_bound_ns(lm, request)) or 0)
    return bound
