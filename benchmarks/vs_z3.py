"""edgeplan's CP-SAT model against the same model solved by Z3 Optimize, at growing sizes.

One command:  python benchmarks/vs_z3.py [--groups 50,100,200,400,800] [--objectives latency,throughput]
              [--z3-timeout 300] [--target orin-agx]
Needs the benchmark extra: pip install -e '.[bench]' (z3-solver; never a runtime dependency).

Each instance is benchmarks/large_graph.py's branching DAG (residual, inception-like and non-DLA-branch
blocks) sized to about N layer groups. edgeplan builds its model exactly as `optimize` does: the bounds
first (cheapest options, LP relaxation), then the CP-SAT model with the bound as the objective's floor, the
best baseline as hint, connectivity rounds. The Z3 model is built from that same CP-SAT model once it is
final (every variable, domain, constraint, cut and objective coefficient exported one to one, so the costs,
loadable slots, convexity and connectivity cuts are the same) and given the same hint as initial values.
Both run single-threaded in this process; CPU time (process_time, so machine load counts less than in wall
time) covers building and solving. Both optima are asserted equal when both are proven.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from large_graph import dag_model

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, evaluate, load_profile
from optimizer.plan._baselines import baselines
from optimizer.plan._build import _hint, objective_ns
from optimizer.solver import Budget, PlanModel, PlanRequest, Stop, loadable_limit, lower_bound_ns

INT64_MAX = 2**63 - 1


def _instance(tmp: Path, groups: int, target: str) -> tuple[Path, int]:
    """The DAG with about `groups` layer groups (the generator counts nodes; about 0.87 groups a node)."""
    catalog = load_catalog()
    nodes = max(8, round(groups / 0.87))
    for _ in range(6):
        path = tmp / f"dag{groups}.onnx"
        dag_model(path, nodes)
        count = len(build_groups(check_graph(load_model(str(path)), catalog, target)).groups)
        if abs(count - groups) <= max(2, groups // 50):
            break
        nodes = max(8, round(nodes * groups / count))
    return path, count


def to_z3(proto, z3, skip: frozenset[int] = frozenset()):
    """A Z3 Optimize model equal to a CP-SAT model: integer variables with their domains, every constraint
    type the planner uses (linear with domain, bool_or, bool_and, exactly_one, lin_max, enforcement)."""
    opt = z3.Optimize()
    xs = []
    for i, var in enumerate(proto.variables):
        x = z3.Int(f"v{i}")
        xs.append(x)
        opt.add(_in_domain(z3, x, list(var.domain)))

    def lit(index: int):
        return xs[index] == 1 if index >= 0 else xs[-index - 1] == 0

    def linear(vars_, coeffs, offset: int = 0):
        terms = [c * xs[v] if c != 1 else xs[v] for v, c in zip(vars_, coeffs)]
        return z3.Sum(terms) + offset if terms else z3.IntVal(offset)

    for index, ct in enumerate(proto.constraints):
        if index in skip:
            continue
        if ct.has_linear():
            body = _in_domain(z3, linear(ct.linear.vars, ct.linear.coeffs), list(ct.linear.domain))
        elif ct.has_bool_or():
            body = z3.Or([lit(v) for v in ct.bool_or.literals])
        elif ct.has_bool_and():
            body = z3.And([lit(v) for v in ct.bool_and.literals])
        elif ct.has_exactly_one():
            body = z3.Sum([z3.If(lit(v), 1, 0) for v in ct.exactly_one.literals]) == 1
        elif ct.has_lin_max():
            target = linear(ct.lin_max.target.vars, ct.lin_max.target.coeffs, ct.lin_max.target.offset)
            exprs = [linear(e.vars, e.coeffs, e.offset) for e in ct.lin_max.exprs]
            body = z3.And(*[target >= e for e in exprs], z3.Or([target == e for e in exprs]))
        else:
            raise SystemExit(f"vs_z3: constraint type not translated: {ct}")
        enforce = [lit(v) for v in ct.enforcement_literal]
        opt.add(z3.Implies(z3.And(enforce), body) if enforce else body)
    objective = linear(proto.objective.vars, proto.objective.coeffs)
    handle = opt.minimize(objective)
    return opt, handle, xs, int(proto.objective.offset)


def objective_of(xs, proto):
    import z3

    return z3.Sum([c * xs[v] for v, c in zip(proto.objective.vars, proto.objective.coeffs)])


def _in_domain(z3, expr, domain: list[int]):
    ranges = []
    for lo, hi in zip(domain[::2], domain[1::2]):
        parts = []
        if lo > -INT64_MAX:
            parts.append(expr >= lo)
        if hi < INT64_MAX:
            parts.append(expr <= hi)
        ranges.append(z3.And(parts) if parts else z3.BoolVal(True))
    return ranges[0] if len(ranges) == 1 else z3.Or(ranges)


def run_case(path: Path, target: str, objective: str, z3_timeout_s: float, deterministic_s: float) -> dict:
    import z3

    catalog = load_catalog()
    spec = catalog.target(target)
    graph = load_model(str(path))
    report = check_graph(graph, catalog, target)
    groups = build_groups(report)
    lm = LatencyModel(groups, catalog, spec, load_profile(spec.family, None), io=report.io)
    request = PlanRequest(objective=objective, deterministic_limit_s=deterministic_s, time_limit_s=3600)
    limit = loadable_limit(request, int(catalog.rule("DLA-LOADABLES").params["max"]))
    base = baselines(lm, limit, request.allowed_precisions)
    hint = _hint(lm, base, request, limit)
    started = time.process_time()
    hint_ns = objective_ns(objective, evaluate(lm, hint))
    bound = lower_bound_ns(lm, request, proves=hint_ns)  # as optimize: no LP when the cheapest bound proves
    bounds_s = time.process_time() - started
    started = time.process_time()
    plan_model = PlanModel(lm, report, catalog, request)
    # The throughput tie-break (lowest latency among the optimal plans) is a second model: left out on both sides.
    plan_model._second_phase = lambda best, placements, budget, s: (placements, Stop.PROVEN)  # type: ignore
    result = plan_model.solve(hint, Budget(3600, groups=len(groups.groups), deterministic_s=deterministic_s), bound)
    model_s = time.process_time() - started
    cpsat_objective = objective_ns(objective, evaluate(lm, result.placements))
    # what optimize spends: the bounds, and the exact model only when they do not prove the best baseline
    edgeplan_s = bounds_s + (0.0 if hint_ns <= bound else model_s)

    started = time.process_time()
    proto = plan_model.model.proto
    # Z3 gets the formulation (with every connectivity cut) and the hint, not edgeplan's bound
    opt, _, xs, offset = to_z3(proto, z3, frozenset({plan_model.floor_index}))
    hinted = {v: val for v, val in zip(proto.solution_hint.vars, proto.solution_hint.values)}
    for v, val in sorted(hinted.items()):
        opt.set_initial_value(xs[v], val)
    opt.set("timeout", int(z3_timeout_s * 1000))  # milliseconds of wall time
    verdict = opt.check()
    z3_s = time.process_time() - started
    proven = verdict == z3.sat  # Optimize answers sat only with the optimum proven; unknown on the timeout
    z3_objective = None
    if verdict != z3.unsat:
        try:
            z3_objective = opt.model().eval(objective_of(xs, proto)).as_long() + offset
        except z3.Z3Exception:  # no model at all within the timeout
            z3_objective = None
    row = {"groups": len(groups.groups), "objective": objective, "cpsat_status": result.status,
           "cpsat_ns": cpsat_objective, "cpsat_model_ns": result.objective_ns, "cpsat_cpu_s": round(model_s, 2),
           "edgeplan_cpu_s": round(edgeplan_s, 2), "bounds_proved": hint_ns <= bound,
           "z3_status": "OPTIMAL" if proven else ("timeout" if verdict != z3.unsat else "infeasible"),
           "z3_ns": z3_objective, "z3_cpu_s": round(z3_s, 2), "variables": len(proto.variables),
           "constraints": len(proto.constraints)}
    if result.status == "OPTIMAL" and proven:
        assert z3_objective == result.objective_ns, (z3_objective, result.objective_ns)
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", default="50,100,200,400,800")
    parser.add_argument("--objectives", default="latency,throughput")
    parser.add_argument("--target", default="orin-agx")
    parser.add_argument("--z3-timeout", type=float, default=300.0, help="wall seconds for Z3 per case")
    parser.add_argument("--deterministic-limit", type=float, default=60.0, help="CP-SAT deterministic s per case")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    print("| groups | objective | edgeplan | edgeplan CPU s | CP-SAT model CPU s | Z3 | Z3 CPU s | same optimum "
          "| Z3 / edgeplan | Z3 / CP-SAT model |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.groups.split(",")):
            path, _ = _instance(Path(tmp), size, args.target)
            for objective in args.objectives.split(","):
                row = run_case(path, args.target, objective, args.z3_timeout, args.deterministic_limit)
                same = "yes" if row["z3_status"] == row["cpsat_status"] == "OPTIMAL" else "-"
                more = ">=" if row["z3_status"] == "timeout" else ""
                z3_text = f"{row['z3_status']} {row['z3_ns']}" if row["z3_ns"] is not None else row["z3_status"]
                how = " (bounds)" if row["bounds_proved"] else ""
                print(f"| {row['groups']} | {objective} | {row['cpsat_status']} {row['cpsat_ns']}{how} | "
                      f"{row['edgeplan_cpu_s']} | {row['cpsat_cpu_s']} | {z3_text} | {row['z3_cpu_s']} | {same} | "
                      f"{more}{row['z3_cpu_s'] / max(row['edgeplan_cpu_s'], 1e-2):.0f}x | "
                      f"{more}{row['z3_cpu_s'] / max(row['cpsat_cpu_s'], 1e-2):.0f}x |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
