"""Compare edgeplan's NPU/CPU verdicts with the toolkit's on the cases tools/probe_rknn_placement.py saved.

    python tools/compare_probe.py DIR        (DIR from `probe_rknn_placement.py --out DIR`)
Prints one line per node where the two disagree (as benchmarks/rknn_placement.py counts it: a node with no
layer of its own was folded or fused and counts as NPU), then the count per SoC and precision.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.errors import EdgeplanError
from optimizer.ir import load_model

FRAME = ("pre_conv", "post_conv")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    args = parser.parse_args()
    catalog = load_catalog()
    counts: Counter[tuple[str, str, str]] = Counter()
    for record in sorted(args.dir.glob("*.json")):
        try:
            graph = load_model(record.with_suffix(".onnx"))
        except EdgeplanError as exc:
            print(f"{record.stem}: edgeplan cannot load it: {exc}")
            continue
        runs = json.loads(record.read_text())
        reports = {}
        for config, run in sorted(runs.items()):
            soc, precision = config.split("/")
            if not run.get("built"):
                print(f"{record.stem} {config}: the toolkit did not build it")
                continue
            report = reports.setdefault(soc, check_graph(graph, catalog, soc))
            for node in graph.nodes:
                if node.name in FRAME:
                    continue
                verdict = report.verdict(node.name)
                mine = "NPU" if verdict.runs_on("npu", precision) else "CPU"
                truth = run["nodes"].get(node.name, "NPU")
                counts[(soc, precision, "agree" if mine == truth else f"edgeplan {mine}")] += 1
                if mine != truth:
                    why = "; ".join(v.line() for v in verdict.violations
                                    if v.accelerator == "npu" and v.precision == precision)
                    print(f"{record.stem} {config} {node.name} ({node.op_type}): edgeplan {mine}, toolkit {truth}"
                          f"  {why}")
    for key, count in sorted(counts.items()):
        print(" ".join(key), count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
