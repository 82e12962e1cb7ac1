"""What report.html costs on top of optimize, on the largest zoo model (by node count) per target.

    python benchmarks/report_html.py [--model PATH] [--targets orin-agx,rk3588]
Plans once per target, then times plan_html (views, Graphviz layout, page) three times; prints the median.
Target (issue 15): under 3 s extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from optimizer.plan import optimize, plan_html  # noqa: E402
from optimizer.solver import PlanRequest  # noqa: E402


def _largest_zoo_model() -> Path:
    zoo = REPO.parent / "shared" / "zoo"
    return max(zoo.glob("*.onnx"), key=lambda p: len(onnx.load(p, load_external_data=False).graph.node))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--targets", default="orin-agx,xavier-agx,rk3588")
    args = parser.parse_args()
    model = args.model or _largest_zoo_model()
    print(f"model {model.name}")
    print("target      groups  nodes  optimize_s  report_s(median of 3)  page_KiB")
    for target in args.targets.split(","):
        started = time.monotonic()
        planned = optimize(str(model), target, PlanRequest())
        plan_s = time.monotonic() - started
        times, page = [], ""
        for _ in range(3):
            started = time.monotonic()
            page = plan_html(planned)
            times.append(time.monotonic() - started)
        print(f"{target:<11} {len(planned.groups.groups):>6} {len(planned.report.graph.nodes):>6} {plan_s:>11.2f} "
              f"{statistics.median(times):>22.2f} {len(page.encode()) / 1024:>9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
