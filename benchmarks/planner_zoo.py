"""Planner benchmark: every zoo model on orin-agx, xavier-agx, rk3588, rk3576.

One command:  python benchmarks/planner_zoo.py [--zoo ../shared/zoo] [--objective latency|throughput|dual-stream]
              [--targets orin-agx,xavier-agx] [--out benchmarks/results/planner_zoo[-OBJECTIVE].csv]
Each case runs `edgeplan optimize` as a user would (a fresh process) and measures end-to-end wall time
from process start to plan written, the solver status, its gap to the proven bound, whether the wall clock
cut the deterministic budget short, groups, and the predicted speedups. `--table` prints a Markdown table.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _zoo import DYNAMIC_SHAPES, EDGEPLAN, REPO, zoo_parser

from optimizer.solver._outcome import deterministic_budget

TARGETS = ("orin-agx", "xavier-agx", "rk3588", "rk3576")


def _groups(model: Path, target: str) -> int:
    from optimizer.catalog import load_catalog
    from optimizer.check import check_graph
    from optimizer.fusion import build_groups
    from optimizer.ir import load_model

    shapes = None
    if model.stem in DYNAMIC_SHAPES:
        name, dims = DYNAMIC_SHAPES[model.stem].split("=")
        shapes = {name: tuple(int(d) for d in dims.split("x"))}
    catalog = load_catalog()
    return len(build_groups(check_graph(load_model(str(model), shapes), catalog, target)).groups)


def _case(model: Path, target: str, args: argparse.Namespace, out: Path, extra: list[str]) -> dict:
    cmd = [EDGEPLAN, "optimize", str(model), "--target", target, "--out", str(out),
           "--time-limit", args.time_limit, "--objective", args.objective, *extra]
    if model.stem in DYNAMIC_SHAPES:
        cmd += ["--input-shape", DYNAMIC_SHAPES[model.stem]]
    started = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - started
    row = {"model": model.name, "target": target, "exit": result.returncode, "wall_s": round(wall, 3)}
    if result.returncode == 0:
        plan = json.loads((out / "plan.json").read_text())
        run = json.loads((out / "run.json").read_text())
        row.update(status=plan["solver"]["status"], gap=plan["solver"].get("gap"),
                   objective_ms=plan["solver"].get("objective_ms"), bound_ms=plan["solver"].get("bound_ms"),
                   wall_limit_fired=run["solver"]["wall_limit_fired"], stopped_by=plan["solver"].get("stopped_by"),
                   deterministic_budget_s=run["solver"]["deterministic_budget_s"],
                   deterministic_s=run["solver"]["deterministic_s"], nodes=plan["model"]["num_nodes"],
                   groups=plan["solver"]["groups"], solve_s=round(run["timings"]["solve_s"], 3),
                   latency_ms=plan["predicted"]["latency_ms"],
                   **{f"speedup_{k}": v["speedup"] for k, v in plan["baselines"].items()})
    else:
        row.update(status="error", error=result.stderr.strip()[:200])
    return row


def main() -> int:
    parser = zoo_parser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--targets", default=None, help="default: all four; orin-agx,xavier-agx for the "
                                                          "pipelined objectives (they need a DLA)")
    parser.add_argument("--objective", default="latency", choices=("latency", "throughput", "dual-stream"))
    parser.add_argument("--time-limit", default="60")
    parser.add_argument("--table", action="store_true", help="also print a Markdown table of the cases")
    parser.add_argument("--models", default="", help="comma-separated zoo stems (default: every model)")
    parser.add_argument("--as-if-quiet", action="store_true",
                        help="run every case directly as --rerun-wall-limited reruns one (groups counted in-process)")
    parser.add_argument("--rerun-wall-limited", action="store_true",
                        help="a case the wall clock cut short (a loaded machine) runs again with the deterministic "
                             "budget the time limit gives and ten times the wall time: the plan a machine fast "
                             "enough for the limit writes")
    args = parser.parse_args()
    suffix = "" if args.objective == "latency" else f"-{args.objective}"
    args.out = args.out or str(REPO / "benchmarks" / "results" / f"planner_zoo{suffix}.csv")
    args.targets = args.targets or (",".join(TARGETS) if args.objective == "latency" else "orin-agx,xavier-agx")
    models = sorted(Path(args.zoo).glob("*.onnx"))
    if args.models:
        models = [m for m in models if m.stem in args.models.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for target in args.targets.split(","):
                out = Path(tmp) / f"{model.stem}-{target}"
                if args.as_if_quiet:
                    budget = deterministic_budget(float(args.time_limit), _groups(model, target))
                    row = _case(model, target, args, out, ["--deterministic-limit", f"{budget:g}", "--time-limit",
                                                          f"{10 * float(args.time_limit):g}"])
                    row["rerun_deterministic_s"] = budget
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    continue
                row = _case(model, target, args, out, [])
                if args.rerun_wall_limited and row.get("wall_limit_fired"):
                    # the budget the default limit gives on a machine fast enough for it, with wall time to spare
                    budget = deterministic_budget(float(args.time_limit), int(row["groups"]))
                    row = _case(model, target, args, out, ["--deterministic-limit", f"{budget:g}", "--time-limit",
                                                          f"{10 * float(args.time_limit):g}"])
                    row["rerun_deterministic_s"] = budget
                rows.append(row)
                print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("model", "target"), k))
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    if args.table:
        print(f"| model | target | status | {args.objective} objective ms | bound ms | gap | wall s |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            gap = f"{r['gap']:.1%}" if isinstance(r.get("gap"), float) else "-"
            cut = " (wall limit)" if r.get("wall_limit_fired") else " (rerun)" if r.get("rerun_deterministic_s") else ""
            print(f"| {r['model']} | {r['target']} | {r.get('status')}{cut} | {r.get('objective_ms', '-')} | "
                  f"{r.get('bound_ms', '-')} | {gap} | {r['wall_s']} |")
    walls = [r["wall_s"] for r in rows]
    optimal = sum(r.get("status") == "OPTIMAL" for r in rows)
    print(f"cases {len(rows)}, OPTIMAL {optimal}, median wall {statistics.median(walls):.2f} s, "
          f"max wall {max(walls):.2f} s ({max(rows, key=lambda r: r['wall_s'])['model']})")
    return 0 if optimal == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
