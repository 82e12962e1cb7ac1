"""Time-limit benchmark: `edgeplan optimize --time-limit 5` on the largest zoo model returns within 5 s
plus start-up, for every objective; also prints the deterministic-seconds-per-wall-second figure the
solver's budget is calibrated on (optimizer/solver/_outcome.py).

One command:  python benchmarks/time_limit.py [--zoo ../shared/zoo] [--limit 5] [--target xavier-agx]
Start-up is the wall time of importing edgeplan's CLI and planner in a fresh interpreter (median of 3).
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _zoo import EDGEPLAN, zoo_parser


def _largest(zoo: Path, count: int) -> list[Path]:
    """By the manifest's node count (ssdlite320: 3422 nodes before folding) and by layer groups after
    folding (RT-DETR-L: 324 groups, the largest CP-SAT model), so both are the `count` largest here."""
    with (zoo / "MANIFEST.csv").open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if (zoo / r["file"]).is_file()]
    rows.sort(key=lambda r: -int(r["num_nodes"]))
    return [zoo / r["file"] for r in rows[:count]]


def _startup() -> float:
    walls = []
    for _ in range(3):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "import optimizer.cli, optimizer.plan"], check=True)
        walls.append(time.monotonic() - started)
    return statistics.median(walls)


def main() -> int:
    parser = zoo_parser()
    parser.add_argument("--limit", type=float, default=5.0)
    parser.add_argument("--target", default="xavier-agx")
    parser.add_argument("--models", type=int, default=3, help="how many of the largest zoo models")
    args = parser.parse_args()
    startup = _startup()
    print(f"target {args.target}, --time-limit {args.limit:g} s, start-up {startup:.2f} s")
    worst = 0.0
    for model, objective in ((m, o) for m in _largest(Path(args.zoo), args.models)
                             for o in ("latency", "throughput", "dual-stream")):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            result = subprocess.run([EDGEPLAN, "optimize", str(model), "--target", args.target, "--objective",
                                     objective, "--time-limit", str(args.limit), "--out", tmp],
                                    capture_output=True, text=True)
            wall = time.monotonic() - started
            if result.returncode != 0:
                print(f"{model.stem[:24]:<24} {objective:<12} exit {result.returncode}: {result.stderr.strip()[-200:]}")
                return 1
            run = json.loads((Path(tmp) / "run.json").read_text())
        solver = run["solver"]
        rate = solver["deterministic_s"] / solver["wall_s"] if solver["wall_s"] else 0.0
        over = wall - startup
        worst = max(worst, over)
        print(f"{model.stem[:24]:<24} {objective:<12} wall {wall:5.2f} s (minus start-up {over:5.2f} s; "
              f"inside main {run['timings']['total_s']:.2f} s)"
              f"  outcome {solver['outcome']:<10} stopped by {solver['stopped_by']:<19} "
              f"deterministic {solver['deterministic_s']:.2f}/{solver['deterministic_budget_s']:.2f} "
              f"in {solver['wall_s']:.2f} s ({rate:.2f} per s)")
    print(f"worst wall minus start-up {worst:.2f} s: {'within' if worst <= args.limit else 'OVER'} the limit")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
