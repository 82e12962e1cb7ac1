"""Classify the Transpose layers of the committed rknn-toolkit2 layer tables by what they do in the toolkit's own
4-D shapes, and count their targets: the evidence for "rk3566 runs only aligned C<->W swaps on the NPU".

    .venv/bin/python tools/rknn_transpose_layers.py [--soc rk3566]

Classes: `relabel` (the permutation keeps the order of the non-unit axes), `cw_aligned` / `cw_unaligned` (a swap of C
and W, (n, c, h, w) -> (n, w, h, c), with C and W both whole 8-byte groups or not: 4 elements in FP16, 8 in INT8),
`other` (any other data-moving permutation), `not4d`.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
from collections import Counter
from pathlib import Path

TABLES = Path(__file__).resolve().parent.parent / "corpus" / "rknn" / "layers.csv.gz"
ALIGN = {"fp16": 4, "int8": 8}


def first_shape(text: str) -> tuple[int, ...] | None:
    head = text.split("),")[0].strip('()"')
    try:
        return tuple(int(x) for x in head.split(",") if x)
    except ValueError:
        return None


def classify(src: tuple[int, ...] | None, dst: tuple[int, ...] | None, precision: str) -> str:
    if src is None or dst is None or len(src) != 4 or len(dst) != 4:
        return "not4d"
    perms = [p for p in itertools.permutations(range(4)) if tuple(src[i] for i in p) == dst]
    if not perms:
        return "not4d"
    moved = [axis for axis in perms[0] if src[axis] != 1]
    if moved == sorted(moved):
        return "relabel"
    if (src[0], src[3], src[2], src[1]) == dst:
        align = ALIGN[precision]
        return "cw_aligned" if src[1] % align == 0 and src[3] % align == 0 else "cw_unaligned"
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="rk3566")
    parser.add_argument("--tables", type=Path, default=TABLES)
    args = parser.parse_args()
    counts: Counter[tuple[str, str]] = Counter()
    with gzip.open(args.tables, "rt", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["soc"] == args.soc and row["op_type"] == "Transpose":
                kind = classify(first_shape(row["input_shapes"]), first_shape(row["output_shapes"]), row["precision"])
                counts[(kind, row["target"])] += 1
    for kind in ("cw_unaligned", "cw_aligned", "other", "relabel", "not4d"):
        print(f"{kind:13s} NPU {counts[(kind, 'NPU')]:5d}  CPU {counts[(kind, 'CPU')]:5d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
