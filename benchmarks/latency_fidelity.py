"""Latency-model fidelity: predicted vs published figures, each source and each model family held out.

One command:  python benchmarks/latency_fidelity.py [--csv FILE --models DIR] [--out DIR]
Any CSV in the calibration format works (new measurements need no code). Prints, per calibration key
(`edgeplan targets` shows each target's) with at least 5 rows, per family and overall: leave-one-source-out
first (each publisher's rows predicted by a fit on the other publishers': how the model fares on a harness
it has never seen), its median, 90th percentile and share within 20%; then leave-one-family-out, the
hand-set prior and the in-sample fit. Writes every row's figures to OUT/latency_fidelity.csv.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

from _zoo import REPO

from optimizer.calibrate._run import run_calibration
from optimizer.catalog import load_catalog

DATA = REPO.parent / "shared" / "data"


def _errors(rows: list[dict], field: str) -> list[float]:
    return sorted(abs(r[field] / r["observed"] - 1) for r in rows)


def _median(values: list[float]) -> float:
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _p90(values: list[float]) -> float:
    """The 90th percentile, linear between order statistics (numpy's default)."""
    pos = 0.9 * (len(values) - 1)
    low = int(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


HEADER = (f"{'device key':<28} {'rows':>5} {'LOSO':>7} {'LOSO p90':>9} {'LOSO<=20%':>10} {'LOFO':>7} "
          f"{'LOFO p90':>9} {'prior':>7} {'fit':>7}")


def _line(name: str, rows: list[dict]) -> str:
    loso, lofo = _errors(rows, "predicted_loso"), _errors(rows, "predicted_cv")
    return (f"{name:<28} {len(rows):>5} {_median(loso):>7.1%} {_p90(loso):>9.1%} "
            f"{sum(e <= 0.20 for e in loso) / len(rows):>10.0%} {_median(lofo):>7.1%} {_p90(lofo):>9.1%} "
            f"{_median(_errors(rows, 'predicted_prior')):>7.1%} {_median(_errors(rows, 'predicted_fit')):>7.1%}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default=str(DATA / "published_latency_calibration.csv"))
    parser.add_argument("--models", default=str(DATA / "latency-models"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        document = run_calibration(args.csv, args.models, tmp, cross=True)
    catalog = load_catalog()
    rows = [r for family in document["families"].values() for r in family["rows"]]
    for r in rows:
        r["key"] = catalog.target(r["target"]).calibration
    print("median absolute % error per calibration key; LOSO = each publishing source held out in turn (the "
          "headline), LOFO = each model family held out, prior = hand-set constants, fit = in-sample")
    print(HEADER)
    keys = sorted({r["key"] for r in rows})
    for key in keys:
        chosen = [r for r in rows if r["key"] == key]
        if len(chosen) >= 5:
            print(_line(key, chosen))
    small = [r for r in rows if sum(x["key"] == r["key"] for x in rows) < 5]
    if small:
        print(_line("keys with < 5 rows, pooled", small))
    for family in document["families"]:
        print(_line(f"all {family}", document["families"][family]["rows"]))
    print(_line("overall", rows))
    print(f"skipped rows: {len(document['skipped'])} (not whole-network figures, no matching ONNX, unmodelled "
          "situations; reasons in calibration.json from edgeplan calibrate)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = ["label", "device", "target", "key", "family", "origin", "situation", "metric", "observed",
              "predicted_prior",
              "predicted_fit", "predicted_cv", "predicted_loso", "command"]
    with (out / "latency_fidelity.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
