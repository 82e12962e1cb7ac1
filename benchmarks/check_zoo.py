"""Check benchmark: `edgeplan check` on every zoo model and target, end to end (a fresh process each).

One command:  python benchmarks/check_zoo.py [--zoo ../shared/zoo]
The target is under 10 s per model and target; prints the slowest cases and the median.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _zoo import EDGEPLAN, zoo_parser

TARGETS = ("orin-agx", "xavier-agx", "rk3588", "rk3576")


def main() -> int:
    args = zoo_parser().parse_args()
    exe = EDGEPLAN
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted(Path(args.zoo).glob("*.onnx")):
            for target in TARGETS:
                started = time.monotonic()
                result = subprocess.run([exe, "check", str(model), "--target", target, "--json",
                                         str(Path(tmp) / "c.json")], capture_output=True, text=True)
                walls.append((time.monotonic() - started, model.name, target, result.returncode))
    walls.sort(reverse=True)
    for wall, name, target, code in walls[:5]:
        print(f"{wall:6.2f} s  {name} {target} exit {code}")
    print(f"cases {len(walls)}, failures {sum(w[3] != 0 for w in walls)}, "
          f"median {statistics.median(w[0] for w in walls):.2f} s, max {walls[0][0]:.2f} s")
    return 0 if walls[0][0] < 10 and all(w[3] == 0 for w in walls) else 1


if __name__ == "__main__":
    sys.exit(main())
