"""Per-layer timings from the vendor tools -> observations of single layer groups.

trtexec `--exportProfile` (with `--exportLayerInfo` for precisions) and the performance table that
rknn-toolkit2's `eval_perf` prints time what the engine ran, layer by layer. Each timed layer is matched
to edgeplan's layer groups through the ONNX node names the tools keep in layer names; its time becomes
one observation of those groups on that device, so the fit sees per-layer evidence, not just totals.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from optimizer.calibrate._calibrate import Observation
from optimizer.calibrate._measurements import model_family
from optimizer.calibrate._situation import Checked, Scenario, Situation, Stage, check_model
from optimizer.catalog import Catalog
from optimizer.errors import BadInputError
from optimizer.latency import LatencyModel, Option, Profile

TRT_PRECISIONS = {"int8": "int8", "half": "fp16", "fp16": "fp16", "float": "fp32", "fp32": "fp32"}
RKNN_PRECISIONS = {"INT8": "int8", "UINT8": "int8", "FLOAT16": "fp16", "FP16": "fp16", "FLOAT": "fp32"}


@dataclass(frozen=True)
class LayerTime:
    name: str  # as the tool prints it
    nodes: tuple[str, ...]  # ONNX node names it covers
    device: str  # gpu, dla, npu or cpu
    precision: str
    ms: float


def _group_of(checked: Checked) -> dict[str, int]:
    index = {}
    for group in checked.groups.groups:
        for name in (*group.members, *group.attached):
            index[name] = group.index
    return index


def observations_from_layers(layers: list[LayerTime], checked: Checked, target_id: str, catalog: Catalog,
                             prior: Profile, source: str) -> tuple[list[Observation], list[str]]:
    """One observation per timed layer whose nodes edgeplan knows; the rest are listed, not guessed."""
    target = catalog.target(target_id)
    model = LatencyModel(checked.groups, catalog, target, prior, io=checked.report.io, io_costs=False)
    group_of = _group_of(checked)
    out, unmatched = [], []
    for layer in layers:
        groups = sorted({group_of[n] for n in layer.nodes if n in group_of})
        if not groups or (layer.device not in target.precisions and layer.device not in ("gpu", "cpu")):
            unmatched.append(layer.name)
            continue
        option = Option(layer.device, layer.precision)
        works = tuple((layer.device, model.work(model.groups.groups[g], option)) for g in groups)
        fixed = model.launch_ns() / 1e9 if layer.device == "dla" else 0.0
        stage = Stage(works=works, fixed_s=fixed, fixed_busy_s=MappingProxyType({}), key=target.calibration,
                      bandwidth=model.bandwidth, sram_bytes=model.sram_bytes, generation=target.generation)
        # only the metric matters for a single layer: its time, with no model I/O around it
        situation = Situation("npu" if layer.device == "cpu" else layer.device, layer.precision, io_included=False)
        scenario = Scenario(situation=situation, target=target_id, stage=stage, gpu_stage=None,
                            accelerator_share=1.0 if layer.device in ("dla", "npu") else 0.0)
        out.append(Observation(label=f"{source}: {layer.name}", family=model_family(checked.path), origin=source,
                               device=target_id, target=target_id, scenario=scenario, observed=layer.ms,
                               metric="latency"))
    return out, unmatched


# ---- trtexec -------------------------------------------------------------------------------------
def _load_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError("file not found", file=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"not JSON: {exc}", file=str(path)) from None


def _trt_layer_precisions(layer_info: Any) -> dict[str, str]:
    """Layer name -> precision of its first output, from --exportLayerInfo (--profilingVerbosity=detailed)."""
    layers = layer_info.get("Layers", []) if isinstance(layer_info, dict) else []
    out = {}
    for layer in layers:
        if not isinstance(layer, dict) or not layer.get("Outputs"):
            continue
        fmt = str(layer["Outputs"][0].get("Format/Datatype", "")).lower()
        for word, precision in TRT_PRECISIONS.items():
            if re.search(rf"\b{word}\b", fmt):
                out[str(layer.get("Name", ""))] = precision
                break
    return out


def _trt_nodes(name: str, order: list[str]) -> tuple[str, tuple[str, ...]]:
    """(device, ONNX nodes) of a TensorRT layer name: fused names joined by ' + ', DLA as ForeignNode[a...b]."""
    foreign = re.search(r"ForeignNode\[(.+?)\.\.\.(.+?)\]", name)
    if foreign:
        first, last = foreign.group(1), foreign.group(2)
        if first in order and last in order:
            i, j = order.index(first), order.index(last)
            return "dla", tuple(order[min(i, j):max(i, j) + 1])
        return "dla", ()
    known = set(order)
    parts = [p.strip() for p in re.split(r"\s\+\s", name)]
    return "gpu", tuple(p for p in parts if p in known)


def trtexec_layers(profile_path: str | Path, layer_info_path: str | Path | None, checked: Checked,
                   default_precision: str) -> list[LayerTime]:
    profile = _load_json(profile_path)
    if not isinstance(profile, list):
        raise BadInputError("not a trtexec --exportProfile file (a JSON list expected)", file=str(profile_path))
    precisions = _trt_layer_precisions(_load_json(layer_info_path)) if layer_info_path else {}
    order = [n.name for n in checked.report.graph.nodes]
    out = []
    for entry in profile:
        if not isinstance(entry, dict) or "name" not in entry:
            continue
        name = str(entry["name"])
        ms = entry.get("averageMs")
        if ms is None and entry.get("timeMs") is not None:
            ms = float(entry["timeMs"]) / max(int(profile[0].get("count", 1)) if isinstance(profile[0], dict)
                                              else 1, 1)
        if ms is None or "reformat" in name.lower() or not float(ms) > 0:
            continue
        device, nodes = _trt_nodes(name, order)
        out.append(LayerTime(name=name, nodes=nodes, device=device,
                             precision=precisions.get(name, default_precision), ms=float(ms)))
    return out


# ---- rknn-toolkit2 eval_perf ----------------------------------------------------------------------
def rknn_perf_layers(text: str, where: str) -> list[LayerTime]:
    """Rows of the 'Network Layer Information Table': ID OpType DataType Target ... Time(us) ... FullName."""
    out = []
    header = None
    for raw in text.splitlines():
        line = re.sub(r"^[A-Z] RKNN: \[[^\]]*\]\s?", "", raw).strip()
        fields = line.split()
        if fields[:4] == ["ID", "OpType", "DataType", "Target"]:
            header = fields
            continue
        if header is None or len(fields) < len(header) or not fields[0].isdigit():
            continue
        row = dict(zip(header, fields[:len(header) - 1]))
        row[header[-1]] = " ".join(fields[len(header) - 1:])
        try:
            micros = float(row["Time(us)"])
        except (KeyError, ValueError):
            continue
        device = {"NPU": "npu", "CPU": "cpu"}.get(row.get("Target", ""), "")
        precision = "fp32" if device == "cpu" else RKNN_PRECISIONS.get(row.get("DataType", ""), "")
        full = row.get("FullName", "")
        node = full.split(":", 1)[1] if ":" in full else full
        if not device or not precision or micros <= 0 or row.get("OpType") in ("InputOperator", "OutputOperator"):
            continue
        out.append(LayerTime(name=full, nodes=(node,), device=device, precision=precision, ms=micros / 1e3))
    if header is None:
        raise BadInputError("no 'ID OpType DataType Target ...' table (rknn-toolkit2 eval_perf output)", file=where)
    return out


def vendor_observations(*, model: str, target: str, catalog: Catalog, prior: Profile,
                        trtexec_profile: str | None = None, trtexec_layers_path: str | None = None,
                        rknn_perf: str | None = None, precision: str = "fp16"
                        ) -> tuple[list[Observation], list[str]]:
    checked = check_model(model, target, catalog)
    if trtexec_profile:
        layers = trtexec_layers(trtexec_profile, trtexec_layers_path, checked, precision)
        source = Path(trtexec_profile).name
    else:
        assert rknn_perf is not None
        try:
            text = Path(rknn_perf).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise BadInputError("file not found", file=rknn_perf) from None
        layers = rknn_perf_layers(text, rknn_perf)
        source = Path(rknn_perf).name
    return observations_from_layers(layers, checked, target, catalog, prior, source)
