"""Latency-model fidelity: predicted vs published figures, in-sample and leave-one-family-out.

One command:  python benchmarks/latency_fidelity.py [--csv FILE --models DIR] [--out DIR]
Any CSV in the calibration format works (new measurements need no code). Prints, per device as the
source names it and overall: rows, median absolute percentage error of the hand-set prior, of the fit
(in-sample) and of leave-one-family-out cross-validation (the honest number), the share of
cross-validated rows within 10% and 25%, and leave-one-source-out (each publisher's rows predicted by a
fit on the other publishers': how the model fares on measurements it has never seen the like of).
Writes every row's figures to OUT/latency_fidelity.csv.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

from _zoo import REPO

from optimizer.calibrate._run import run_calibration

DATA = REPO.parent / "shared" / "data"


def _line(name: str, rows: list[dict]) -> str:
    def mdape(field: str) -> float:
        errors = sorted(abs(r[field] / r["observed"] - 1) for r in rows)
        mid = len(errors) // 2
        return errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2

    cv = [abs(r["predicted_cv"] / r["observed"] - 1) for r in rows]
    return (f"{name:<36} {len(rows):>5} {mdape('predicted_prior'):>8.1%} {mdape('predicted_fit'):>8.1%} "
            f"{mdape('predicted_cv'):>8.1%} {sum(e <= 0.10 for e in cv) / len(rows):>8.0%} "
            f"{sum(e <= 0.25 for e in cv) / len(rows):>8.0%} {mdape('predicted_loso'):>8.1%}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default=str(DATA / "published_latency_calibration.csv"))
    parser.add_argument("--models", default=str(DATA / "latency-models"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        document = run_calibration(args.csv, args.models, tmp, cross=True)
    rows = [r for family in document["families"].values() for r in family["rows"]]
    print(f"{'device (as published)':<36} {'rows':>5} {'prior':>8} {'fit':>8} {'LOFO':>8} {'LOFO10':>8} "
          f"{'LOFO25':>8} {'LOSO':>8}   (median absolute % error; LOFO/LOSO = leave one model family/source out)")
    devices = sorted({r["device"] for r in rows})
    for device in devices:
        chosen = [r for r in rows if r["device"] == device]
        if len(chosen) >= 5:
            print(_line(device, chosen))
    small = [r for r in rows if sum(x["device"] == r["device"] for x in rows) < 5]
    if small:
        print(_line("devices with < 5 rows, pooled", small))
    for family in document["families"]:
        print(_line(f"all {family}", document["families"][family]["rows"]))
    print(_line("overall", rows))
    print(f"skipped rows: {len(document['skipped'])} (not whole-network figures, no matching ONNX, unmodelled "
          "situations; reasons in calibration.json from edgeplan calibrate)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = ["label", "device", "target", "family", "origin", "situation", "metric", "observed", "predicted_prior",
              "predicted_fit", "predicted_cv", "predicted_loso", "command"]
    with (out / "latency_fidelity.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
