"""Time-limit benchmark: `edgeplan optimize --time-limit 5` on the largest zoo model returns within 5 s
plus start-up, for every objective; also prints the deterministic-seconds-per-wall-second figure the
solver's budget is calibrated on (optimizer/solver/_outcome.py).

One command:  python benchmarks/time_limit.py [--zoo ../shared/zoo] [--limit 5] [--target xavier-agx]
Each run is a fresh interpreter that imports the CLI (start-up) and then times `main()` itself, from the
moment --time-limit starts counting to the last file written; the process wall time is printed beside it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _zoo import zoo_parser


def _largest(zoo: Path, count: int) -> list[Path]:
    """By the manifest's node count (ssdlite320: 3422 nodes before folding) and by layer groups after
    folding (RT-DETR-L: 324 groups, the largest CP-SAT model), so both are the `count` largest here."""
    with (zoo / "MANIFEST.csv").open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if (zoo / r["file"]).is_file()]
    rows.sort(key=lambda r: -int(r["num_nodes"]))
    return [zoo / r["file"] for r in rows[:count]]


TIMED_MAIN = ("import sys, time; t0 = time.monotonic(); from optimizer.cli import main; import optimizer.plan; "
              "t1 = time.monotonic(); code = main(sys.argv[1:]); t2 = time.monotonic(); "
              "print(f'TIMES {t1 - t0:.3f} {t2 - t1:.3f}', file=sys.stderr); sys.exit(code)")


def main() -> int:
    parser = zoo_parser()
    parser.add_argument("--limit", type=float, default=5.0)
    parser.add_argument("--target", default="xavier-agx")
    parser.add_argument("--models", type=int, default=3, help="how many of the largest zoo models")
    args = parser.parse_args()
    print(f"target {args.target}, --time-limit {args.limit:g} s")
    worst = 0.0
    for model, objective in ((m, o) for m in _largest(Path(args.zoo), args.models)
                             for o in ("latency", "throughput", "dual-stream")):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            result = subprocess.run([sys.executable, "-c", TIMED_MAIN, "optimize", str(model), "--target",
                                     args.target, "--objective", objective, "--time-limit", str(args.limit), "--out",
                                     tmp, "-q"], capture_output=True, text=True)
            wall = time.monotonic() - started
            startup, over = (float(x) for x in result.stderr.rsplit("TIMES ", 1)[1].split()[:2])
            if result.returncode != 0:
                print(f"{model.stem[:24]:<24} {objective:<12} exit {result.returncode}: {result.stderr.strip()[-200:]}")
                return 1
            run = json.loads((Path(tmp) / "run.json").read_text())
        solver = run["solver"]
        rate = solver["deterministic_s"] / solver["wall_s"] if solver["wall_s"] else 0.0
        worst = max(worst, over)
        print(f"{model.stem[:24]:<24} {objective:<12} main() {over:5.2f} s (process {wall:5.2f} s, "
              f"imports {startup:.2f} s)"
              f"  outcome {solver['outcome']:<10} stopped by {solver['stopped_by']:<19} "
              f"deterministic {solver['deterministic_s']:.2f}/{solver['deterministic_budget_s']:.2f} "
              f"in {solver['wall_s']:.2f} s ({rate:.2f} per s)")
    print(f"worst main() {worst:.2f} s: {'within' if worst <= args.limit else 'OVER'} the limit")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
