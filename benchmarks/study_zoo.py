"""Study benchmark: how much an Optuna study (SRAM pools, partitions) improves on the plain planner.

One command:  python benchmarks/study_zoo.py [--zoo ../shared/zoo] [--trials 8] [--targets orin-agx,xavier-agx]
For each static zoo model and target: trial 0 is the planner alone; prints the best trial's gain.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from _zoo import DYNAMIC_SHAPES, zoo_parser

from optimizer.study import run_study


def main() -> int:
    parser = zoo_parser()
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--targets", default="orin-agx,xavier-agx")
    args = parser.parse_args()
    gains = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted(Path(args.zoo).glob("*.onnx")):
            if model.stem in DYNAMIC_SHAPES:
                continue
            for target in args.targets.split(","):
                config = Path(tmp) / f"{model.stem}-{target}.toml"
                config.write_text(f'name = "{model.stem}-{target}"\nmodel = "{model}"\ntarget = "{target}"\n'
                                  f'objective = "latency"\nn_trials = {args.trials}\nseed = 0\ntime_limit = 20\n')
                outcome = run_study(str(config), str(Path(tmp) / config.stem), command=["benchmark"])
                gain = (outcome.baseline_value - outcome.best_value) / outcome.baseline_value
                gains.append(gain)
                print(f"{model.stem:40s} {target:10s} planner {outcome.baseline_value:9.4f} ms  best "
                      f"{outcome.best_value:9.4f} ms  gain {gain:6.2%}", flush=True)
    print(f"cases {len(gains)}, median gain {statistics.median(gains):.2%}, max gain {max(gains):.2%}, "
          f"cases improved {sum(g > 0 for g in gains)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
