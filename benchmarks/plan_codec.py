"""What the typed Plan costs: plan.json values -> Plan (checked all the way down) and back, on the largest
zoo plan (SSDlite320, 3,422 layers) per target.

    python benchmarks/plan_codec.py [--model PATH] [--targets orin-agx,rk3588]
Plans once per target, then times Plan.from_json(values) and Plan.to_json() seven times each; prints the best.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from optimizer.fileio import json_values  # noqa: E402
from optimizer.plan import Plan, optimize  # noqa: E402
from optimizer.solver import PlanRequest  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    zoo = REPO.parent / "shared" / "zoo"
    parser.add_argument("--model", default=str(zoo / "tv_ssdlite320_mobilenet_v3_large.onnx"))
    parser.add_argument("--targets", default="orin-agx,rk3588")
    args = parser.parse_args()
    print(f"{'target':<10} {'layers':>7} {'from_json ms':>13} {'to_json ms':>11}")
    for target in args.targets.split(","):
        planned = optimize(args.model, target, PlanRequest(deterministic_limit_s=0.05, explain_infeasible=False))
        values = json_values(planned.plan.to_json())
        best_in = best_out = float("inf")
        for _ in range(7):
            started = time.perf_counter()
            plan = Plan.from_json(values)
            decoded = time.perf_counter()
            plan.to_json()
            best_in, best_out = min(best_in, decoded - started), min(best_out, time.perf_counter() - decoded)
        print(f"{target:<10} {len(plan.layers):>7} {best_in * 1e3:>13.1f} {best_out * 1e3:>11.1f}")


if __name__ == "__main__":
    main()
