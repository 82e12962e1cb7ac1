"""The throughput bounds on every zoo model: the plain LP, the launch-raised LP, the region DP, and the gap
they leave.

One command:  python benchmarks/throughput_bound.py [--zoo ../shared/zoo] [--targets orin-agx,xavier-agx]
              [--plans benchmarks/results/planner_zoo-throughput.csv] [--models a,b]
For each case it builds the latency model as `optimize` does and solves the plain LP relaxation
(`lp_bound_ns`) and the launch-raised one (`throughput_lp_ns`: one LP per number of DLA cores in use, each
used core paying a launch), and runs the region DP that keeps groups whole and charges border copies
(`region_bound_ns`, "-" where a region is too large to enumerate), and the DP that keeps the two DLA cores
apart (`core_bound_ns`, given an upper bound: the plan's objective with `--plans`, else the interval hint's
busiest engine; "-" where a region has more than 8 DLA-capable groups), with their CPU time. With `--plans`
(a `planner_zoo.py --objective throughput` CSV) it also prints each plan's objective and gap against the
bound it reported and against the best of the raised LP and both DPs, which is what `optimize` reports for a
plan the search left unproven.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from _zoo import DYNAMIC_SHAPES, zoo_parser

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, evaluate, load_profile
from optimizer.solver import (
    PlanRequest,
    core_bound_ns,
    interval_hint,
    loadable_limit,
    lp_bound_ns,
    region_bound_ns,
    throughput_lp_ns,
)


def _bounds(model: Path, target: str, upper_ns: int | None
            ) -> tuple[int, int, int, int | None, int | None, float, float]:
    shapes = None
    if model.stem in DYNAMIC_SHAPES:
        name, dims = DYNAMIC_SHAPES[model.stem].split("=")
        shapes = {name: tuple(int(d) for d in dims.split("x"))}
    catalog = load_catalog()
    spec = catalog.target(target)
    report = check_graph(load_model(str(model), shapes), catalog, target)
    groups = build_groups(report)
    lm = LatencyModel(groups, catalog, spec, load_profile(spec.family, None), io=report.io)
    request = PlanRequest(objective="throughput")
    started = time.process_time()
    plain = lp_bound_ns(lm, request) or 0
    raised = throughput_lp_ns(lm, request) or 0
    limit = loadable_limit(request, catalog.loadables_at_once(spec))
    region = region_bound_ns(lm, request, limit)
    cpu = time.process_time() - started
    if upper_ns is None:
        plan = interval_hint(lm, request.allowed_precisions, lambda b: max(b.busy_ns.values()), lm.target.cores, limit)
        upper_ns = max(evaluate(lm, plan).busy_ns.values()) if plan is not None else None
    started = time.process_time()
    core = core_bound_ns(lm, request, limit, upper_ns) if upper_ns else None
    return len(groups.groups), plain, raised, region, core, cpu, time.process_time() - started


def main() -> int:
    parser = zoo_parser()
    parser.add_argument("--targets", default="orin-agx,xavier-agx")
    parser.add_argument("--plans", default=None, help="a planner_zoo.py --objective throughput CSV")
    parser.add_argument("--models", default="", help="comma-separated zoo stems (default: every model)")
    args = parser.parse_args()
    plans = {}
    if args.plans:
        with open(args.plans, newline="") as handle:
            plans = {(r["model"], r["target"]): r for r in csv.DictReader(handle)}
    models = sorted(Path(args.zoo).glob("*.onnx"))
    if args.models:
        models = [m for m in models if m.stem in args.models.split(",")]
    print("| model | target | groups | LP us | launch-raised LP us | region DP us | bounds CPU s | per-core DP us | "
          "its CPU s | plan ms | status, gap reported | with the raised LP and both DPs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in models:
        for target in args.targets.split(","):
            row = plans.get((model.name, target))
            upper = round(float(row["objective_ms"]) * 1e6) if row and row.get("objective_ms") else None
            groups, plain, raised, region, core, cpu, core_cpu = _bounds(model, target, upper)
            best = max(raised, region or 0, core or 0)
            cells = ["-", "-", "-"]
            if row and row.get("objective_ms"):
                objective, bound = float(row["objective_ms"]), float(row["bound_ms"])
                better = max(bound, min(best / 1e6, objective))
                gap = (objective - better) / objective if objective else 0.0
                cells = [f"{objective:.4f}", f"{row['status']} {float(row['gap']):.1%}",
                         "OPTIMAL" if gap <= 0 else f"FEASIBLE {gap:.1%}"]
            shown = "-" if region is None else f"{region / 1e3:.1f}"
            per_core = "-" if core is None else f"{core / 1e3:.1f}"
            print(f"| {model.stem} | {target} | {groups} | {plain / 1e3:.1f} | {raised / 1e3:.1f} | {shown} | "
                  f"{cpu:.2f} | {per_core} | {core_cpu:.2f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
