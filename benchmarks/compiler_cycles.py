"""How well the NPU per-layer model's shape matches rknn-toolkit2's own per-layer cycle estimates.

One command:  python benchmarks/compiler_cycles.py [--layers corpus/rknn/layers.csv.gz --models corpus/models]
Joins the toolkit's layer table (corpus helper's runs on real architectures) to the ONNX nodes, fits the
per-class cycle rates (optimizer/calibrate/_compiler.py) and scores them with each model family held out:
per op class, the layers, Spearman rank correlation and median absolute error of predicted vs compiler
total cycles, beside the same with one rate pooled over all classes. Prints the relative per-class
efficiencies (conv = 1) fitted on every layer, per SoC and precision, and each SoC's MAC array width
(MACs per NPU cycle), the source of the RKNN `npu_*_tops` figures in constraints/rockchip_rknn.toml.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from _zoo import REPO

from optimizer.calibrate._compiler import (
    class_shape,
    compiled_layers,
    conv_cycle_error,
    cpu_layer_types,
    fit_shape,
    fused_activation_ratios,
    hold_out_by_family,
    macs_per_cycle,
    read_layer_table,
    score_by_class,
)
from optimizer.catalog import load_catalog


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", default=str(REPO / "corpus" / "rknn" / "layers.csv.gz"))
    parser.add_argument("--models", default=str(REPO / "corpus" / "models"))
    parser.add_argument("--manifest", default=str(REPO / "corpus" / "MANIFEST.csv"))
    args = parser.parse_args()
    with open(args.manifest, encoding="utf-8", newline="") as handle:
        families = {r["name"]: r["family"] for r in csv.DictReader(handle)}
    rows, catalog = read_layer_table(args.layers), load_catalog()  # read once: the padding comparison reuses them
    layers, skipped = compiled_layers(rows, Path(args.models), families, catalog)
    models = sorted({x.model for x in layers})
    print(f"{len(layers)} compiled conv/matmul layers (node x SoC x precision) of {len(models)} models in "
          f"{len({x.family for x in layers})} families; {len(skipped)} models not loadable")
    held = hold_out_by_family(layers)
    print(f"{'op class':<10} {'layers':>7} {'Spearman':>9} {'MdAE':>7}   pooled: {'Spearman':>9} {'MdAE':>7}"
          "   (each family predicted by a fit without it)")
    for cls, row in score_by_class(held).items():
        print(f"{cls:<10} {row['layers']:>7} {row['spearman']:>9.3f} {row['median_abs_error']:>7.1%}   "
              f"        {row['spearman_pooled']:>9.3f} {row['median_abs_error_pooled']:>7.1%}")
    shape = fit_shape(layers)
    print("relative efficiency per op class (conv = 1), fitted on every layer:")
    for soc, precision in sorted({(x.soc, x.precision) for x in layers}):
        print(f"  {soc} {precision}: " + ", ".join(f"{k} {v:.3f}" for k, v in class_shape(shape, soc,
                                                                                            precision).items()))
    print("NPU MAC array per core (padded MACs per NPU cycle, median of the largest fifth of conv layers):")
    for (soc, precision), macs in macs_per_cycle(layers).items():
        print(f"  {soc} {precision}: {macs:.0f}")
    plain, _ = compiled_layers(rows, Path(args.models), families, catalog, atoms=(16, 16))
    before = conv_cycle_error(plain)
    print("conv NPU cycles as padded MACs / array width, median |error| (16-channel padding -> the target's "
          "MAC-array term, optimizer/latency/_rknn.py; targets without array figures keep the padding):")
    for key, (count, error) in conv_cycle_error(layers).items():
        print(f"  {key[0]} {key[1]}: {count} layers, {before[key][1]:.1%} -> {error:.1%}")
    print("fused conv layers, NPU cycles / the MAC-array formula, median (what a fused activation adds; "
          "optimizer/latency/_rknn.py prices ReLU-class ones free):")
    for (soc, precision, kind), (count, ratio) in fused_activation_ratios(rows, catalog).items():
        print(f"  {soc} {precision} {kind}: {count} layers, {ratio:.3f}")
    print("CPU fallback layers by (build precision, data type): the precision the CPU side holds (hand-overs):")
    for (precision, dtype), count in cpu_layer_types(args.layers).items():
        print(f"  {precision} {dtype}: {count}")
    for line in skipped:
        print(f"skipped {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
