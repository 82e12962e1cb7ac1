"""Compare edgeplan's NPU/CPU verdicts with the toolkit's on the cases tools/probe_rknn_placement.py saved, or on
the lines tools/probe_rknn_patterns.py printed.

    python tools/compare_probe.py DIR                (DIR from `probe_rknn_placement.py --out DIR`)
    python tools/compare_probe.py --patterns FILE    (FILE: the output of `probe_rknn_patterns.py --cases ...`)
Prints one line per node where the two disagree (as benchmarks/rknn_placement.py counts it: a node with no
layer of its own was folded or fused and counts as NPU), then the count per SoC and precision.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from optimizer.catalog import Catalog, load_catalog
from optimizer.check import CheckReport, check_graph
from optimizer.errors import EdgeplanError
from optimizer.ir import Graph, Node, load_model

FRAME = ("pre_conv", "post_conv")
_SUFFIX = re.compile(r"#\d+$")


def pattern_truth(layers: dict[str, list[str]], node_name: str, outputs: tuple[str, ...]) -> str:
    """A probe node's toolkit target: CPU when a layer named after it or after one of its output tensors (the
    toolkit's derived names: `t_rs`, `t_tp#2`) runs on the CPU."""
    cpu = {_SUFFIX.sub("", name) for name, kinds in layers.items() if any(k.endswith(":CPU") for k in kinds)}
    named = node_name in cpu or any(name == out or name.startswith(f"{out}_") for out in outputs for name in cpu)
    return "CPU" if named else "NPU"


def compare_patterns(results: Path, catalog: Catalog, counts: Counter[tuple[str, str, str]]) -> None:
    """Every node of every probe case in `results` against the toolkit's layers, counted into `counts`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import probe_rknn_patterns

    cases = dict(probe_rknn_patterns.all_cases())
    for line in results.read_text().splitlines():
        label, _, text = line.partition(" ")
        if label not in cases or not text.startswith("{"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{label}.onnx"
            onnx.save(cases[label], path)
            graph = load_model(path)
        compare_runs(label, graph, json.loads(text), catalog, counts,
                     lambda run, node: pattern_truth(run["layers"], node.name, node.outputs))


def compare_runs(case: str, graph: Graph, runs: dict[str, Any], catalog: Catalog,
                 counts: Counter[tuple[str, str, str]], truth_of: Callable[[dict[str, Any], Node], str]) -> None:
    """One case's runs ({"soc/precision": run}) node by node; `truth_of` reads the toolkit's target of a node."""
    reports: dict[str, CheckReport] = {}
    for config, run in sorted(runs.items()):
        soc, precision = config.split("/")
        if not run.get("built"):
            print(f"{case} {config}: the toolkit did not build it")
            continue
        if soc not in reports:
            reports[soc] = check_graph(graph, catalog, soc)
        for node in graph.nodes:
            if node.name in FRAME or node.op_type == "Constant":
                continue
            verdict = reports[soc].verdict(node.name)
            mine = "NPU" if verdict.runs_on("npu", precision) else "CPU"
            truth = truth_of(run, node)
            counts[(soc, precision, "agree" if mine == truth else f"edgeplan {mine}")] += 1
            if mine != truth:
                why = "; ".join(v.line() for v in verdict.violations
                                if v.accelerator == "npu" and v.precision == precision)
                print(f"{case} {config} {node.name} ({node.op_type}): edgeplan {mine}, toolkit {truth}  {why}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, nargs="?")
    parser.add_argument("--patterns", type=Path, action="append", default=[],
                        help="output of tools/probe_rknn_patterns.py (repeatable)")
    args = parser.parse_args()
    if args.dir is None and not args.patterns:
        parser.error("give DIR or --patterns FILE")
    catalog = load_catalog()
    counts: Counter[tuple[str, str, str]] = Counter()
    for results in args.patterns:
        compare_patterns(results, catalog, counts)
    for record in (sorted(args.dir.glob("*.json")) if args.dir is not None else ()):
        try:
            graph = load_model(record.with_suffix(".onnx"))
        except EdgeplanError as exc:
            print(f"{record.stem}: edgeplan cannot load it: {exc}")
            continue
        compare_runs(record.stem, graph, json.loads(record.read_text()), catalog, counts,
                     lambda run, node: str(run["nodes"].get(node.name, "NPU")))
    for key, count in sorted(counts.items()):
        print(" ".join(key), count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
