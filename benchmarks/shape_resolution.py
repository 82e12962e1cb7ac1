"""Shape resolution: how many dims stay unknown on static-input models, per cause, per family.

One command:  python benchmarks/shape_resolution.py [--zoo ../shared/zoo] [--corpus corpus/models] [--per-model]
For every model whose inputs are static, counts the tensors whose shape is not fully concrete, the dims
among them, and the nodes whose verdict touches one, split by cause (unresolved, data-dependent; dynamic
only for models with symbolic inputs, listed apart). Families come from the zoo's MANIFEST.csv and the
corpus's manifest (a `family` column) or else the file name's first word. The target is 0 unresolved.
Works on an older checkout too (without causes, everything unknown counts as unresolved), which is how
the before/after figures in the README were taken.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from pathlib import Path

from _zoo import REPO

from optimizer.errors import EdgeplanError
from optimizer.ir import load_model


def _families(folder: Path) -> dict[str, str]:
    out = {}
    for name in ("MANIFEST.csv", "manifest.csv", "../manifest.csv", "../MANIFEST.csv"):
        path = folder / name
        if path.is_file():
            for row in csv.DictReader(path.open(encoding="utf-8")):
                file = row.get("file") or row.get("model") or row.get("name") or ""
                if file and row.get("family"):
                    out[Path(file).stem] = row["family"].split("/")[0]
    return out


def _measure(path: Path) -> dict[str, object]:
    started = time.monotonic()
    graph = load_model(path)
    causes = getattr(graph, "shape_causes", {})
    tensors: dict[str, int] = defaultdict(int)
    dims: dict[str, int] = defaultdict(int)
    for name, info in graph.tensors.items():
        if not info.is_static:
            cause = causes.get(name, "unresolved")
            tensors[cause] += 1
            dims[cause] += sum(not isinstance(d, int) for d in info.shape) if info.shape is not None else 1
    nodes: dict[str, int] = defaultdict(int)
    for node in graph.nodes:
        if node.folded:
            continue
        touched = {causes.get(t, "unresolved") for t in (*graph.runtime_inputs(node), *node.outputs)
                   if t and (t not in graph.tensors or not graph.tensors[t].is_static)}
        for cause in touched:
            nodes[cause] += 1
    return {"nodes": len(graph.nodes), "static": not graph.dynamic_dims, "tensors": tensors, "dims": dims,
            "affected": nodes, "load_s": time.monotonic() - started}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zoo", default=str(REPO.parent / "shared" / "zoo"))
    parser.add_argument("--corpus", default=str(REPO / "corpus" / "models"))
    parser.add_argument("--per-model", action="store_true")
    args = parser.parse_args()
    rows = []
    for source, folder in (("zoo", Path(args.zoo)), ("corpus", Path(args.corpus))):
        if not folder.is_dir():
            continue
        families = _families(folder)
        for path in sorted(folder.glob("*.onnx")):
            family = families.get(path.stem, path.stem.split("_")[0])
            try:
                result = _measure(path)
            except EdgeplanError as exc:
                print(f"{source}/{path.name}: load error {exc.one_line()}")
                continue
            rows.append((source, family, path.name, result))
    totals: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for source, family, name, r in rows:
        group = totals[(source, family if r["static"] else "(dynamic inputs)")]
        group["models"] += 1
        group["nodes"] += r["nodes"]
        for cause in ("unresolved", "data-dependent", "dynamic"):
            group[f"{cause}_dims"] += r["dims"].get(cause, 0)
            group[f"{cause}_nodes"] += r["affected"].get(cause, 0)
        group["bad_models"] += bool(r["static"] and r["dims"].get("unresolved", 0))
        if args.per_model and (r["dims"] or not r["static"]):
            print(f"{source}/{name}: static={r['static']} dims={dict(r['dims'])} affected={dict(r['affected'])} "
                  f"load {r['load_s']:.2f} s")
    print(f"{'source':<7} {'family':<22} {'models':>6} {'nodes':>7} {'unres dims':>10} {'unres nodes':>11} "
          f"{'models w/ unres':>15} {'data-dep dims':>13} {'data-dep nodes':>14} {'dyn dims':>8}")
    grand: dict[str, int] = defaultdict(int)
    for (source, family), g in sorted(totals.items()):
        print(f"{source:<7} {family:<22} {g['models']:>6} {g['nodes']:>7} {g['unresolved_dims']:>10} "
              f"{g['unresolved_nodes']:>11} {g['bad_models']:>15} {g['data-dependent_dims']:>13} "
              f"{g['data-dependent_nodes']:>14} {g['dynamic_dims']:>8}")
        if family != "(dynamic inputs)":
            for key in ("models", "unresolved_dims", "unresolved_nodes", "bad_models"):
                grand[key] += g[key]
    print(f"static models {grand['models']}: {grand['unresolved_dims']} unresolved dims, "
          f"{grand['unresolved_nodes']} affected nodes, {grand['bad_models']} models with any")
    return 0 if grand["unresolved_dims"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
