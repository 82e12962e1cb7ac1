"""Batch benchmark: every zoo model on orin-agx and rk3588, with 1 and then 2 workers.

One command:  python benchmarks/batch_zoo.py [--zoo ../shared/zoo]
Prints wall time per worker count and the speedup (target >= 1.8x with 2 workers on 2 cores).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _zoo import DYNAMIC_SHAPES, EDGEPLAN, zoo_parser


def main() -> int:
    args = zoo_parser().parse_args()
    exe = EDGEPLAN
    models = [str(p) for p in sorted(Path(args.zoo).glob("*.onnx")) if p.stem not in DYNAMIC_SHAPES]
    walls = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            result = subprocess.run([exe, "batch", *models, "--target", "orin-agx", "--target", "rk3588", "--out",
                                     tmp, "--workers", str(workers)], capture_output=True, text=True)
            walls[workers] = time.monotonic() - started
            print(f"workers {workers}: {walls[workers]:.1f} s, exit {result.returncode}; "
                  f"{result.stdout.strip().splitlines()[0] if result.stdout else result.stderr[-200:]}")
    print(f"{len(models)} models x 2 targets; speedup with 2 workers: x{walls[1] / walls[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
