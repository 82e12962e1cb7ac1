"""Count what follows the toolkit layers whose name ends with a suffix, in the committed layer tables.

A catalog entry read from the tables (e.g. RKNN-QKV-SPLIT-V: "V's head reshape `_mm#2_rs` is CPU exactly when
the next layer, V's transpose, is") cites such a count; this re-measures it from corpus/rknn/layers.csv.gz,
without the toolkit:
    .venv/bin/python tools/rknn_layer_pairs.py --suffix '_mm#2_rs' --soc rk3566
prints one line per (precision, target of the layer, op and target of the next layer): its count.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from collections import Counter
from pathlib import Path

Key = tuple[str, str, str, str]


def pairs(table: Path, suffix: str, soc: str) -> Counter[Key]:
    """(precision, target, next op, next target) -> number of layers named `*suffix` on `soc`."""
    rows: dict[tuple[str, str, int], dict[str, str]] = {}
    with gzip.open(table, "rt", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["soc"] == soc:
                rows[(row["model"], row["precision"], int(row["layer"]))] = row
    counts: Counter[Key] = Counter()
    for (model, precision, layer), row in rows.items():
        if not row["full_name"].endswith(suffix):
            continue
        after = rows.get((model, precision, layer + 1))
        counts[(precision, row["target"], after["op_type"] if after else "-", after["target"] if after else "-")] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suffix", required=True, help="end of the layer's full name, e.g. _mm#2_rs")
    parser.add_argument("--soc", default="rk3566")
    parser.add_argument("--table", type=Path, default=Path("corpus/rknn/layers.csv.gz"))
    args = parser.parse_args()
    for (precision, target, op, after), count in sorted(pairs(args.table, args.suffix, args.soc).items()):
        print(f"{precision} {target} -> {op} {after}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
