"""rknn-toolkit2's per-layer cycle estimates as a calibration signal for the NPU per-layer model's shape.

The toolkit's build log gives, per compiled layer, DDR and NPU cycle estimates (Total = max of the two;
non-zero for convolutions and matmuls only, shared/spec/rknn-toolkit.md). They are offline compiler
figures, not timings, so they fix the *shape* of the per-layer model (how op classes and tensor shapes
compare), while the absolute scale stays anchored on the published whole-model rows:

    npu_cycles(layer) ~ r[class] * 2*MACs*pad/peak      (relative cost of each op class; pad: the MAC-array
                                                          term of optimizer/latency/_rknn.py on dense convs)
    ddr_cycles(layer) ~ m * (weight_bytes + activation_bytes)
    total(layer)      = max(npu_cycles, ddr_cycles)

`r` and `m` are geometric means over training layers (per SoC and precision); `class_shape` turns `r`
into efficiency ratios relative to dense conv, which is what the NPU prior's per-class efficiencies are.
Held out by model family, the fitted shape is scored by Spearman rank correlation and median error.

The same table also gives each SoC's MAC array: on large convolutions the compiler's NPU cycles are the
padded MACs over the array width, so `macs_per_cycle` = padded MACs / NPU cycles (median over the largest
fifth of conv layers); times 2 and the NPU clock it is the peak (constraints/rockchip_rknn.toml cites it).
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optimizer.catalog import Catalog
from optimizer.errors import EdgeplanError
from optimizer.ir import BYTES_PER_ELEMENT, Graph, load_model
from optimizer.latency import op_class
from optimizer.latency._model import npu_padding
from optimizer.latency._rknn import array_figures


@dataclass(frozen=True)
class CompiledLayer:
    """One ONNX node's compiler estimate (cycles summed over the layers it was compiled into) and the
    demands edgeplan's model puts on it."""

    model: str
    family: str
    soc: str
    precision: str
    node: str
    op_class: str
    unit_compute_s: float  # 2*MACs / peak, at efficiency 1 (MACs padded to the channel atoms)
    bytes: float  # weights + input and output activations at the precision
    npu_cycles: float
    ddr_cycles: float
    total_cycles: float
    peak_ops: float = 0.0  # the catalog's NPU peak the unit compute was taken at (ops/s)


def read_layer_table(path: str | Path) -> list[dict[str, str]]:
    """Rows of corpus/rknn/layers.csv.gz with a non-zero cycle estimate on the NPU."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["target"] == "NPU" and float(r["cycles_total"] or 0) > 0
                and r["onnx_nodes"]]


def compiled_layers(rows: Iterable[Mapping[str, str]], models: Path, families: Mapping[str, str],
                    catalog: Catalog, atoms: tuple[int, int] | None = None) -> tuple[list[CompiledLayer], list[str]]:
    """Joins the compiler's layers to the ONNX nodes of the corpus models; models edgeplan cannot load are
    listed, not guessed."""
    cycles: dict[tuple[str, str, str, str], list[float]] = {}
    for r in rows:
        key = (r["model"], r["soc"], r["precision"], r["onnx_nodes"])
        acc = cycles.setdefault(key, [0.0, 0.0, 0.0])
        acc[0] += float(r["cycles_npu"])
        acc[1] += float(r["cycles_ddr"])
        acc[2] += float(r["cycles_total"])
    graphs: dict[str, Graph | None] = {}
    skipped: list[str] = []
    out: list[CompiledLayer] = []
    for (model, soc, precision, node_name), (npu, ddr, total) in sorted(cycles.items()):
        if model not in graphs:
            try:
                graphs[model] = load_model(models / f"{model}.onnx")
            except EdgeplanError as exc:
                graphs[model] = None
                skipped.append(f"{model}: {exc.one_line()}")
        graph = graphs[model]
        if graph is None or node_name not in {n.name for n in graph.nodes}:
            continue
        node = graph.node(node_name)
        if not node.macs:
            continue
        target = catalog.target(soc)
        peak = target.figures[f"npu_{precision}_tops"].value * 1e12
        bpe = BYTES_PER_ELEMENT[precision]
        out.append(CompiledLayer(
            model=model, family=families.get(model, model), soc=soc, precision=precision, node=node_name,
            op_class=op_class(graph, node),
            unit_compute_s=2 * node.macs * npu_padding(graph, node, target.figures, precision, atoms) / peak,
            bytes=float(graph.weight_bytes(node, precision) + graph.activation_elements(node) * bpe),
            npu_cycles=npu, ddr_cycles=ddr, total_cycles=total, peak_ops=peak))
    return out, skipped


@dataclass(frozen=True)
class Shape:
    """Per (soc, precision): NPU cycles per second of ideal compute for each op class, DDR cycles per byte."""

    npu_rate: Mapping[tuple[str, str, str], float]  # (soc, precision, class) -> cycles per unit-compute second
    ddr_rate: Mapping[tuple[str, str], float]

    def predict(self, layer: CompiledLayer) -> float | None:
        rate = self.npu_rate.get((layer.soc, layer.precision, layer.op_class))
        ddr = self.ddr_rate.get((layer.soc, layer.precision))
        if rate is None or ddr is None:
            return None
        return max(rate * layer.unit_compute_s, ddr * layer.bytes)


def _geomean(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def fit_shape(layers: Sequence[CompiledLayer], single_class: bool = False) -> Shape:
    """Geometric-mean rates; `single_class` pools every op class (the shape without per-class costs)."""
    npu: dict[tuple[str, str, str], list[float]] = {}
    ddr: dict[tuple[str, str], list[float]] = {}
    for layer in layers:
        cls = "all" if single_class else layer.op_class
        if layer.npu_cycles > 0:
            npu.setdefault((layer.soc, layer.precision, cls), []).append(layer.npu_cycles / layer.unit_compute_s)
        if layer.ddr_cycles > 0 and layer.bytes > 0:
            ddr.setdefault((layer.soc, layer.precision), []).append(layer.ddr_cycles / layer.bytes)
    rates = {k: _geomean(v) for k, v in npu.items()}
    if single_class:
        from optimizer.latency import OP_CLASSES

        rates = {(s, p, c): v for (s, p, _), v in rates.items() for c in OP_CLASSES}
    return Shape(npu_rate=rates, ddr_rate={k: _geomean(v) for k, v in ddr.items()})


def class_shape(shape: Shape, soc: str, precision: str) -> dict[str, float]:
    """Efficiency of each op class relative to dense conv (conv = 1): fewer cycles per ideal second = higher."""
    conv = shape.npu_rate.get((soc, precision, "conv"))
    if conv is None:
        return {}
    return {cls: round(conv / rate, 4) for (s, p, cls), rate in sorted(shape.npu_rate.items())
            if s == soc and p == precision}


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Rank correlation (ties get their mean rank)."""
    from scipy.stats import spearmanr

    if len(a) < 3:
        return float("nan")
    return float(spearmanr(a, b).statistic)


@dataclass(frozen=True)
class HeldOut:
    layers: tuple[CompiledLayer, ...]
    predicted: tuple[float, ...]  # per-class shape, each family predicted by a fit without it
    pooled: tuple[float, ...]  # one rate for every class: what the per-class costs add


def hold_out_by_family(layers: Sequence[CompiledLayer]) -> HeldOut:
    kept, predicted, pooled = [], [], []
    for family in sorted({layer.family for layer in layers}):
        train = [x for x in layers if x.family != family]
        shape, flat = fit_shape(train), fit_shape(train, single_class=True)
        for layer in (x for x in layers if x.family == family):
            p, q = shape.predict(layer), flat.predict(layer)
            if p is not None and q is not None:
                kept.append(layer)
                predicted.append(p)
                pooled.append(q)
    return HeldOut(layers=tuple(kept), predicted=tuple(predicted), pooled=tuple(pooled))


def score_by_class(held: HeldOut) -> dict[str, dict[str, float]]:
    """Per op class (and 'all'): layers, Spearman of predicted vs compiler total cycles, median |error|."""
    out = {}
    classes = sorted({x.op_class for x in held.layers})
    for cls in [*classes, "all"]:
        index = [i for i, x in enumerate(held.layers) if cls in ("all", x.op_class)]
        truth = [held.layers[i].total_cycles for i in index]
        pred = [held.predicted[i] for i in index]
        flat = [held.pooled[i] for i in index]
        out[cls] = {"layers": len(index), "spearman": round(spearman(pred, truth), 4),
                    "median_abs_error": round(float(np.median(np.abs(np.array(pred) / truth - 1))), 4),
                    "spearman_pooled": round(spearman(flat, truth), 4),
                    "median_abs_error_pooled": round(float(np.median(np.abs(np.array(flat) / truth - 1))), 4)}
    return out


def macs_per_cycle(layers: Sequence[CompiledLayer], share: float = 0.2) -> dict[tuple[str, str], float]:
    """Per (soc, precision): padded MACs per NPU cycle of the largest `share` of conv layers (median), the
    compiler's MAC-array width; small layers are left out because fixed per-layer cycles dominate them."""
    out: dict[tuple[str, str], float] = {}
    for soc, precision in sorted({(x.soc, x.precision) for x in layers}):
        convs = [x for x in layers if (x.soc, x.precision) == (soc, precision) and x.op_class == "conv"
                 and x.npu_cycles > 0 and x.peak_ops > 0]
        if not convs:
            continue
        convs.sort(key=lambda x: x.unit_compute_s)
        big = convs[int(len(convs) * (1 - share)):]
        out[(soc, precision)] = float(np.median([x.unit_compute_s * x.peak_ops / 2 / x.npu_cycles for x in big]))
    return out


def conv_cycle_error(layers: Sequence[CompiledLayer]) -> dict[tuple[str, str], tuple[int, float]]:
    """Per (soc, precision): conv layers and the median |error| of their NPU cycles predicted as padded MACs
    over the array width (`macs_per_cycle`): how well the padding term in `unit_compute_s` explains the
    compiler's per-layer cost of convolutions of every shape."""
    arrays = macs_per_cycle(layers)
    out: dict[tuple[str, str], tuple[int, float]] = {}
    for key, macs in arrays.items():
        convs = [x for x in layers if (x.soc, x.precision) == key and x.op_class == "conv" and x.npu_cycles > 0]
        errors = [abs(x.unit_compute_s * x.peak_ops / 2 / macs / x.npu_cycles - 1) for x in convs]
        out[key] = (len(convs), float(np.median(errors)))
    return out


def _shapes(text: str) -> list[tuple[int, ...]]:
    """The toolkit's "(1,3,320,320),(16,3,3,3),..." shape lists (an elided "..." entry is left out)."""
    out = []
    for part in text.split("),"):
        dims = part.strip().strip("()").split(",")
        if all(d.strip().isdigit() for d in dims if d.strip()) and any(d.strip() for d in dims):
            out.append(tuple(int(d) for d in dims if d.strip()))
    return out


def fused_activation_ratios(rows: Iterable[Mapping[str, str]], catalog: Catalog,
                            least: int = 20) -> dict[tuple[str, str, str], tuple[int, float]]:
    """Per (soc, precision, compiled layer type Conv*): dense 2-D conv layers and the median of their NPU cycles over
    the MAC-array formula's (optimizer/latency/_rknn.py), on SoCs with array figures: how much a fused activation
    (ConvRelu, ConvClip, ConvExSwish, ...) adds to the conv in the compiler's own estimate."""
    arrays = {}
    for target in catalog.targets.values():
        for precision in ("int8", "fp16"):
            figures = array_figures(target.figures, precision)
            if figures is not None:
                arrays[(target.id, precision)] = figures
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        key = (r["soc"], r["precision"])
        if key not in arrays or not r["op_type"].startswith("Conv"):
            continue
        ins, outs = _shapes(r["input_shapes"]), _shapes(r["output_shapes"])
        if len(ins) < 2 or len(ins[0]) != 4 or len(ins[1]) != 4 or not outs or len(outs[0]) != 4:
            continue
        (c_out, c_in, kh, kw), atom_in, atom_out, floor = ins[1], *arrays[key]
        if c_in != ins[0][1]:
            continue  # grouped or depthwise
        formula = outs[0][2] * outs[0][3] * -(-c_out // atom_out) * max(floor, kh * kw * -(-c_in // atom_in))
        ratios.setdefault((*key, r["op_type"]), []).append(float(r["cycles_npu"] or 0) / formula)
    return {k: (len(v), float(np.median(v))) for k, v in sorted(ratios.items()) if len(v) >= least}


def cpu_layer_types(path: str | Path) -> dict[tuple[str, str], int]:
    """(build precision, data type) -> CPU layers of that type (input/output operators left out): what precision
    the toolkit's CPU fallback layers hold their tensors in."""
    opener = gzip.open if str(path).endswith(".gz") else open
    counts: dict[tuple[str, str], int] = {}
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for r in csv.DictReader(handle):
            if r["target"] == "CPU" and r["op_type"] not in ("InputOperator", "OutputOperator"):
                key = (r["precision"], r["data_type"])
                counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
