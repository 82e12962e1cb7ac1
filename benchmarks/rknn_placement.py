"""RKNN placement benchmark: edgeplan's NPU/CPU verdicts against rknn-toolkit2 2.5.0's real layer tables.

One command (no toolkit needed; it reads the committed tables):
    python benchmarks/rknn_placement.py [--corpus corpus] [--details] [--split derive|held-out|all] [--json out.json]

The truth is corpus/rknn/layers.csv.gz (one row per compiled layer: Target NPU/CPU and the ONNX node it
was mapped to) for every run whose status in corpus/rknn/runs.csv starts with "ok" ("ok-with-disable_rules":
the toolkit built after disabling the graph rewrite it named itself; its table is still the real placement).
edgeplan runs `check` on the structure-only model corpus/models/M.onnx for the same SoC and reads each
node's NPU verdict in the same precision.

How toolkit layers map to ONNX nodes (one verdict per ONNX node, never per layer):
- a layer's `onnx_nodes` column names the node it came from (exact name, output tensor, or the longest
  node-name prefix of a derived name such as `Conv_2conv0`); a derived name the table left unmapped is
  retried with its `#N` suffix removed (`mm#2` is a rewrite of node `mm`);
- a node that became several layers is CPU when any of them runs on the CPU (it forces a hand-off);
- a node absent from the table was folded away (constant arithmetic, Identity, Dropout) or fused into a
  neighbour's layer (Relu into Conv, the GELU and LayerNorm sub-graphs into exGelu/exNorm): it counts as
  NPU. A fused node inherits its layer's target only through this rule, so a node fused into a CPU layer
  would count as NPU; the benchmark prints how many CPU layers could not be mapped to any node;
- InputOperator/OutputOperator rows are not nodes and are skipped; runs the toolkit failed are listed, not
  scored.
edgeplan's side: a node is CPU when its verdict does not run on the NPU in that precision (op placement,
any NPU rule, unresolved shapes); nodes edgeplan folds as build-time constants count as NPU.

The figure is the CPU class (precision, recall, F1: CPU is the rare class; an all-NPU guess already
scores ~99% node agreement, shown beside it). The catalog's [ops] entries and RKNN rules were derived
from the DERIVE families only; every other family is held out and reported separately. The op summary and
--details list the derive split's disagreements unless --split says otherwise: the held-out split is a
score, not something to read while writing entries. Every model the toolkit crashed, failed or timed out
on is printed with its status and error (a fact a user needs before converting).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.check import refusals as refused_by
from optimizer.errors import EdgeplanError
from optimizer.ir import load_model

REPO = Path(__file__).resolve().parents[1]
SOCS = ("rk3588", "rk3576", "rk3566", "rk3562", "rv1126b")
PRECISIONS = ("fp16", "int8")
# Families whose tables were read to write catalog entries. Every other family (torchvision/detection-backbone,
# torchvision/segmentation and torchvision/video now, and any family added to the corpus later) is held out:
# detection backbones and segmenters bring FPNs, dilated convolutions and upsampling heads.
# torch.nn/rnn, torch.nn/transformer and timm/vit (first session), timm/hybrid (second session, when 21
# held-out models had tables) and ultralytics/seg-pose-obb-cls (fourth session: its rk3588 head relayouts were
# read for RKNN-HEAD-RELAYOUT's majority form and RKNN-LEVEL-ROWS) were held out at first and moved here after
# their disagreements had been read (the README says so); they do not count as held out. transformers/vision,
# /audio and /text (wave 6) and wave 7's transformers/detection, transformers/dense, smp/segmentation,
# monai/segmentation and kornia/feature were each scored held out by family in session 33, then read.
DERIVE = frozenset({"torchvision/classification", "timm/cnn", "ultralytics/detect", "torch.nn/patterns",
                    "torch.nn/rnn", "torch.nn/transformer", "timm/vit", "timm/hybrid",
                    "ultralytics/seg-pose-obb-cls", "transformers/vision", "transformers/audio",
                    "transformers/text", "transformers/detection", "transformers/dense", "smp/segmentation",
                    "monai/segmentation", "kornia/feature", "diffusers/generative", "transformers/video",
                    "transformers/timeseries", "transformers/multimodal", "transformers/promptable",
                    "transformers/pose"})
_SUFFIX = re.compile(r"#\d+$")


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, mine_cpu: bool, truth_cpu: bool) -> None:
        if mine_cpu and truth_cpu:
            self.tp += 1
        elif mine_cpu:
            self.fp += 1
        elif truth_cpu:
            self.fn += 1
        else:
            self.tn += 1

    def merge(self, other: Score) -> None:
        self.tp, self.fp, self.fn, self.tn = (self.tp + other.tp, self.fp + other.fp, self.fn + other.fn,
                                              self.tn + other.tn)

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else None

    @property
    def agreement(self) -> float | None:
        total = self.tp + self.fp + self.fn + self.tn
        return (self.tp + self.tn) / total if total else None


@dataclass
class Run:
    model: str
    family: str
    soc: str
    precision: str
    layers: list[dict[str, str]] = field(default_factory=list)


def read_corpus(corpus: Path) -> tuple[dict[str, str], list[Run], list[dict[str, str]]]:
    with (corpus / "MANIFEST.csv").open(newline="") as handle:
        families = {row["name"]: row["family"] for row in csv.DictReader(handle)}
    with (corpus / "rknn" / "runs.csv").open(newline="") as handle:
        statuses = list(csv.DictReader(handle))
    runs = {(r["model"], r["soc"], r["precision"]): Run(r["model"], families.get(r["model"], r["family"]),
                                                          r["soc"], r["precision"])
            for r in statuses if r["status"].startswith("ok")}
    with gzip.open(corpus / "rknn" / "layers.csv.gz", "rt", newline="") as handle:
        for row in csv.DictReader(handle):
            run = runs.get((row["model"], row["soc"], row["precision"]))
            if run is not None:
                run.layers.append(row)
    failed = [r for r in statuses if not r["status"].startswith("ok")]
    return families, sorted(runs.values(), key=lambda r: (r.model, r.soc, r.precision)), failed


def toolkit_targets(run: Run, node_names: set[str]) -> tuple[dict[str, str], list[str]]:
    """ONNX node -> "CPU"/"NPU" from the layer table, and the CPU layers no node could be found for."""
    targets: dict[str, str] = {}
    lost: list[str] = []
    for layer in run.layers:
        if layer["op_type"] in ("InputOperator", "OutputOperator"):
            continue
        node = layer["onnx_nodes"]
        if not node:
            derived = _SUFFIX.sub("", layer["full_name"].partition(":")[2])
            node = derived if derived in node_names else ""
        if not node:
            if layer["target"] == "CPU":
                lost.append(f"{layer['op_type']}:{layer['full_name']}")
            continue
        if targets.get(node) != "CPU":
            targets[node] = layer["target"]
    return targets, lost


@dataclass
class Disagreement:
    model: str
    family: str
    soc: str
    precision: str
    node: str
    op_type: str
    mine: str
    truth: str
    why: str


def read_seen(runs_csv: Path) -> frozenset[str]:
    """The models whose tables existed when the catalog was last written (a runs.csv from that commit)."""
    with runs_csv.open(newline="") as f:
        return frozenset(row["model"] for row in csv.DictReader(f))


def evaluate(corpus: Path, seen: frozenset[str] | None = None) -> dict[str, Any]:
    """Score every run; with `seen`, the models outside it also form the split "unseen" (held out by
    arrival: converted after the catalog's entries were written, whatever their family)."""
    catalog = load_catalog()
    families, runs, failed = read_corpus(corpus)
    cells: dict[tuple[str, str, str], Score] = defaultdict(Score)
    disagreements: list[Disagreement] = []
    lost_total: Counter[tuple[str, str]] = Counter()
    load_errors: dict[str, str] = {}
    by_model: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_model[run.model].append(run)
    for model, model_runs in sorted(by_model.items()):
        try:
            graph = load_model(corpus / "models" / f"{model}.onnx")
        except EdgeplanError as exc:
            load_errors[model] = str(exc)
            continue
        names = {n.name for n in graph.nodes}
        reports = {}
        for run in model_runs:
            if run.soc not in reports:
                reports[run.soc] = check_graph(graph, catalog, run.soc)
            report = reports[run.soc]
            truth, lost = toolkit_targets(run, names)
            lost_total[(run.soc, run.precision)] += len(lost)
            split = "all"
            held = run.family not in DERIVE
            splits = [(split, run.soc, run.precision), ("held-out" if held else "derive", run.soc, run.precision)]
            if seen is not None and model not in seen:
                splits.append(("unseen", run.soc, run.precision))
            for node in graph.nodes:
                verdict = report.verdict(node.name)
                mine_cpu = not verdict.runs_on("npu", run.precision)
                truth_cpu = truth.get(node.name) == "CPU"
                for key in splits:
                    cells[key].add(mine_cpu, truth_cpu)
                if mine_cpu != truth_cpu:
                    why = "; ".join(v.line() for v in verdict.violations
                                    if v.accelerator == "npu" and v.precision == run.precision)
                    disagreements.append(Disagreement(model, run.family, run.soc, run.precision, node.name,
                                                      node.op_type, "CPU" if mine_cpu else "NPU",
                                                      "CPU" if truth_cpu else "NPU", why))
    models = sorted(by_model)
    refusals = refusal_rules(corpus, catalog, failed)
    return {"cells": cells, "disagreements": disagreements, "failed": failed, "lost": lost_total, "refusals": refusals,
            "load_errors": load_errors,
            "models": {"held-out": [m for m in models if families.get(m) not in DERIVE],
                       "derive": [m for m in models if families.get(m) in DERIVE],
                       "unseen": [m for m in models if seen is not None and m not in seen]}}


REFUSED = ("failed", "crashed")


def refusal_rules(corpus: Path, catalog: Any, failed: list[dict[str, str]]) -> dict[str, list[str]]:
    """For each model the toolkit refused or crashed on, the rules marked `refuses` (a violation stops the whole
    conversion) that edgeplan's check names on the first such SoC (empty: edgeplan predicted no refusal, so the
    failure is news to a user of `check`). Timeouts are left out: a conversion that runs on is not refused."""
    out: dict[str, list[str]] = {}
    for row in failed:
        if row["status"] not in REFUSED or row["model"] in out:
            continue
        try:
            graph = load_model(corpus / "models" / f"{row['model']}.onnx")
        except EdgeplanError:
            continue
        out[row["model"]] = [entry["rule"] for entry in refused_by(check_graph(graph, catalog, row["soc"]))]
    return out


def failure_lines(failed: list[dict[str, str]], refusals: dict[str, list[str]] | None = None) -> list[str]:
    """One line per model the toolkit could not convert (crashed, failed, timeout): a fact a user needs, with
    the refusal rule edgeplan names for it, if any."""
    by_model: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in failed:
        by_model[(row["model"], row["status"])].append(row)
    lines = []
    for (model, status), rows in sorted(by_model.items()):
        configs = ", ".join(f"{r['soc']}/{r['precision']}" for r in rows)
        error = " ".join(rows[0].get("error", "").split())
        named = ""
        if refusals is not None and status in REFUSED and model in refusals:
            named = f" [edgeplan: {', '.join(refusals[model]) or 'no refusal rule'}]"
        lines.append(f"toolkit {status}: {model} ({len(rows)} configs: {configs}): {error[-160:]}{named}")
    return lines


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def table(cells: dict[tuple[str, str, str], Score], split: str) -> list[str]:
    lines = [f"{split}: soc precision | CPU precision recall F1 | TP FP FN | node agreement (nodes)"]
    total = Score()
    for soc in SOCS:
        for precision in PRECISIONS:
            score = cells.get((split, soc, precision))
            if score is None:
                continue
            total.merge(score)
            lines.append(f"  {soc:8s} {precision:5s} | {_fmt(score.precision)} {_fmt(score.recall)} "
                         f"{_fmt(score.f1)} | {score.tp} {score.fp} {score.fn} | {_fmt(score.agreement)} "
                         f"({score.tp + score.fp + score.fn + score.tn})")
    lines.append(f"  {'total':14s} | {_fmt(total.precision)} {_fmt(total.recall)} {_fmt(total.f1)} | "
                 f"{total.tp} {total.fp} {total.fn} | {_fmt(total.agreement)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "corpus")
    parser.add_argument("--details", action="store_true", help="list every disagreement")
    parser.add_argument("--split", choices=("held-out", "derive", "all"), default="derive",
                        help="whose disagreements the op summary and --details list (default derive: the "
                             "held-out split is a score, not something to read while writing catalog entries)")
    parser.add_argument("--json", type=Path, help="write the figures and disagreements here")
    parser.add_argument("--seen", type=Path, metavar="RUNS_CSV",
                        help="the runs.csv the catalog was written against (e.g. from `git show COMMIT:corpus/rknn/"
                             "runs.csv`): models not in it are also scored as the split 'unseen' (held out by arrival)")
    args = parser.parse_args()
    missing = [p for p in ("MANIFEST.csv", "rknn/runs.csv", "rknn/layers.csv.gz") if not (args.corpus / p).exists()]
    if missing:
        print(f"rknn_placement: {args.corpus}: no corpus tables ({', '.join(missing)} missing; "
              "tools/run_rknn_corpus.py --collect writes them)", file=sys.stderr)
        return 2
    result = evaluate(args.corpus, read_seen(args.seen) if args.seen else None)
    cells = result["cells"]
    print(f"derive families: {', '.join(sorted(DERIVE))}")
    print(f"models: {len(result['models']['derive'])} derive, {len(result['models']['held-out'])} held out; "
          f"toolkit failures (not scored): {len(result['failed'])}; edgeplan load errors: "
          f"{len(result['load_errors'])}")
    print(f"held-out models: {', '.join(result['models']['held-out']) or 'none'}")
    for line in failure_lines(result["failed"], result["refusals"]):
        print(line)
    named = sum(1 for rules in result["refusals"].values() if rules)
    print(f"toolkit refusals and crashes (status failed or crashed) for which edgeplan names a refusal rule: "
          f"{named} of {len(result['refusals'])} models")
    if args.seen:
        print(f"unseen models (not in {args.seen}): {', '.join(result['models']['unseen']) or 'none'}")
    for split in ("held-out", "derive", "all") + (("unseen",) if args.seen else ()):
        print("\n".join(table(cells, split)))
    lost = sum(result["lost"].values())
    print(f"CPU layers mapped to no ONNX node (not scored): {lost}")
    kinds = Counter((d.op_type, d.mine, d.truth, d.soc, d.precision) for d in result["disagreements"]
                    if args.split == "all" or (d.family in DERIVE) == (args.split == "derive"))
    print(f"{args.split} disagreements by op (op, edgeplan, toolkit, soc, precision: nodes):")
    for (op, mine, truth, soc, precision), count in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:40]:
        print(f"  {op} {mine}->{truth} {soc} {precision}: {count}")
    if args.details:
        for d in result["disagreements"]:
            if args.split == "all" or (d.family in DERIVE) == (args.split == "derive"):
                print(f"  {d.model} {d.soc} {d.precision} {d.node} ({d.op_type}): edgeplan {d.mine}, toolkit "
                      f"{d.truth}  {d.why}")
    if args.json:
        args.json.write_text(json.dumps({
            "derive_families": sorted(DERIVE),
            "cells": {"/".join(k): {"tp": s.tp, "fp": s.fp, "fn": s.fn, "tn": s.tn, "precision": s.precision,
                                    "recall": s.recall, "f1": s.f1, "agreement": s.agreement}
                      for k, s in sorted(cells.items())},
            "disagreements": [d.__dict__ for d in result["disagreements"]],
            "failed": result["failed"], "load_errors": result["load_errors"], "refusals": result["refusals"],
        }, indent=1, sort_keys=True) + "\n")
    held = [cells[k].f1 for k in cells if k[0] == "held-out"]
    return 0 if held and all(f is None or f >= 0.9 for f in held) else 1


if __name__ == "__main__":
    sys.exit(main())
