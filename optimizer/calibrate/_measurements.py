"""Published measurements (the calibration CSV format) -> situations edgeplan can reproduce, or a reason why not.

A row is usable only when its figure covers the whole network in a situation the latency model describes;
every other row stays in the table with the reason, so the report says what was left out and why.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from optimizer.calibrate._situation import Situation
from optimizer.errors import BadInputError

COLUMNS = ("source", "device", "accelerator", "cores", "precision", "batch", "model", "input_shape", "metric",
           "value", "unit", "notes", "onnx", "match")

# Device names as the sources print them -> edgeplan targets (power modes are read from the notes).
DEVICES = {
    "Jetson AGX Orin 64GB": "orin-agx", "Jetson AGX Orin (variant unstated)": "orin-agx",
    "Jetson Orin (variant unstated)": "orin-agx", "Jetson AGX Orin 32GB": "orin-agx-32gb",
    "Jetson Orin NX 16GB": "orin-nx", "Jetson AGX Xavier": "xavier-agx", "Jetson AGX Xavier 32GB": "xavier-agx",
    "Jetson Xavier NX": "xavier-nx", "RK3588": "rk3588", "RK3576": "rk3576", "RK3566": "rk3566",
    "RK3566/RK3568": "rk3566", "RK3568": "rk3568", "RK3562": "rk3562", "RV1126B": "rv1126b", "RV1106": "rv1106",
    "RV1103": "rv1103",
}
POWER_MODES = {"orin-agx": {"50W": "orin-agx-50w", "30W": "orin-agx-30w", "15W": "orin-agx-15w"}}
# The machine a publishing harness really ran on, where its own records say more than the device column:
# (source text fragment, device column, target, why)
SYSTEMS = (
    ("/results/Orin_TRT/", "Jetson AGX Orin 32GB", "orin-agx",
     "MLPerf systems/Orin_TRT.json: 32 GB host memory but a 12-core Cortex-A78AE CPU, i.e. the AGX Orin "
     "Developer Kit (full 2048-core GPU, 275 TOPS); the production 32GB module has 8 cores and 1792 GPU cores"),
    ("NVIDIA-AI-IOT/jetson_benchmarks", "Jetson Xavier NX", "xavier-nx-15w",
     "jetson_benchmarks @a4afb02 runs `nvpmodel -m 0` by default (benchmark_argparser power_mode=0), which on "
     "Xavier NX is MODE_15W_2CORE (nvpmodel_t194_p3668.conf ID 0): EMC capped at 1600 MHz"),
)
# How a harness timed several DLA cores, where its own records say: (source text fragment, why). A figure for
# K cores that is K times one core timed on its own has no shared DRAM between the cores.
SEPARATE_RUNS = (
    ("NVIDIA/Deep-Learning-Accelerator-SW",
     "DLA-SW @ea61780: the '2x DLA' tables are reproduced with the trtexec commands of "
     "scripts/prepare_models/README.md, one trtexec on --useDLACore=0 with nothing beside it (the sparse table: "
     "'just add --sparsity=force to the trtexec commands'), i.e. twice one core timed alone"),
)
# Harnesses whose figure is the TensorRT engine's GPU-side time, without the host's enqueue and stream sync:
# (source text fragment, why)
ENGINE_TIMED = (
    ("NVIDIA-AI-IOT/jetson_benchmarks",
     "jetson_benchmarks @a4afb02 utils/read_write_data.py: FPS = batch x 1000 / the 'GPU latency' of trtexec's "
     "'Average on N runs' lines (TensorRT 7: CUDA events on the stream around the engine), per process"),
    ("ismetdagli/HaX-CoNN", "HaX-CoNN's whole-network rows: trtexec mean GPU-compute time (the CSV's notes)"),
)
# Harnesses whose engines (GPU and DLA) were built without --inputIOFormats/--outputIOFormats, so TensorRT's
# default formats apply (FP32 linear model I/O reformatted on the GPU, kDLA_LINEAR hand-overs): (fragment, why)
DEFAULT_FORMATS = (
    ("NVIDIA-AI-IOT/jetson_benchmarks",
     "jetson_benchmarks @a4afb02 utils/load_store_engine.py: trtexec --deploy/--onnx, --int8, --workspace (DLA "
     "engines also --allowGPUFallback --useDLACore=N); no I/O format flags on any engine"),
    ("NVIDIA-AI-IOT/jetson_dla_tutorial",
     "the tutorial's command (CSV notes): trtexec --int8 --useDLACore=0 --allowGPUFallback --useSpinWait"),
    ("ismetdagli/HaX-CoNN",
     "HaX-CoNN src/build_engine.py: TensorRT builder API with FP16, DLA_core 0 and GPU_FALLBACK; no allowed formats "
     "on the network's inputs or outputs"),
)
PARTIAL = ("value covers only", "value is the added latency", "value is for this single node",
           "value is for this single")
# a harness that times box decoding + NMS beside the graph (MLPerf detection: optimizer/latency/_postprocess.py)
NMS_TIMED = "also runs box decoding/NMS"
PRECISIONS = {"int8": "int8", "fp16": "fp16", "fp32": "fp32", "int8 2:4-sparse": "int8"}


@dataclass(frozen=True)
class Measurement:
    row: int  # line in the CSV (header = 1)
    source: str
    device: str
    model: str
    onnx: str  # path, or "" when there is none
    family: str  # model family, for leave-one-family-out
    origin: str  # the publishing repository, for leave-one-source-out
    metric: str  # latency (ms per batch) or throughput (frames/s)
    observed: float
    target: str
    situation: Situation | None
    reason: str  # why the row is not usable ("" when it is)

    @property
    def usable(self) -> bool:
        return not self.reason


def model_family(onnx_name: str) -> str:
    """yolov5s_640_rknn.onnx -> yolov5, resnet50_v2_224.onnx -> resnet, ssd_mobilenet_v1 -> ssd."""
    match = re.match(r"(yolov\d+|[a-z]+)", Path(onnx_name).stem.lower())
    return match.group(1) if match else Path(onnx_name).stem


def origin_of(source: str) -> str:
    """'GitHub mlcommons/inference_results_v3.0 ...' -> 'mlcommons/inference_results' (releases are one source)."""
    match = re.search(r"[\w.-]+/[\w.-]+", source)
    return re.sub(r"_v[\d.]+$", "", match.group(0)) if match else source.split(" ")[0]


def _int(text: str) -> int | None:
    match = re.fullmatch(r"\s*(\d+)\s*", text)
    return int(match.group(1)) if match else None


def _observed(metric: str, value: float, unit: str, batch: int) -> tuple[str, float] | None:
    """(latency | throughput, value in ms per batch | frames per second)."""
    unit = unit.lower()
    if metric == "fps" and unit.startswith("frames/s"):
        return "throughput", value
    if metric == "latency" and unit.startswith("ms"):
        return "latency", value
    if metric == "throughput":
        if unit.startswith(("images/s", "samples/s", "frames/s")):
            return "throughput", value
        if unit.startswith("batches/s"):
            return "throughput", value * batch
    return None


def _parse(n: int, raw: dict[str, str], models: Path) -> Measurement:
    onnx_name = (raw.get("onnx") or "").strip()
    notes, match_notes = raw.get("notes", ""), raw.get("match_notes", "")
    device = raw["device"].strip()
    accel = raw["accelerator"].strip().lower()
    precision_text = raw["precision"].strip().lower()
    try:
        value = float(raw["value"])
    except ValueError:
        value = float("nan")
    target = DEVICES.get(device, "")
    target = next((t for fragment, name, t, _ in SYSTEMS if fragment in raw["source"] and name == device), target)
    mode = re.search(r"power mode (\w+)", notes)
    if target in POWER_MODES and mode and mode.group(1) in POWER_MODES[target]:
        target = POWER_MODES[target][mode.group(1)]

    def fail(reason: str, metric: str = "", observed: float = value) -> Measurement:
        return Measurement(row=n, source=raw["source"], device=device, model=raw["model"],
                           onnx=str(models / onnx_name) if onnx_name else "",
                           family=model_family(onnx_name or raw["model"]), origin=origin_of(raw["source"]),
                           metric=metric, observed=observed, target=target, situation=None, reason=reason)

    if not onnx_name or raw.get("match", "").strip() not in ("exact", "close"):
        return fail("no matching ONNX file")
    if not target:
        return fail(f"device '{device}' is not an edgeplan target")
    if any(p in match_notes for p in PARTIAL):
        return fail("the figure covers part of the network or one transition, not the network")
    if "2:4" in precision_text and accel in ("dla", "dla+gpu"):
        return fail("DLA 2:4 structured-sparse build: edgeplan does not model DLA sparsity")
    precision = PRECISIONS.get(precision_text)
    if precision is None:
        return fail(f"precision '{raw['precision']}' is not stated or not a single precision")
    if "pool of" in match_notes or "pipelined" in raw["unit"] or "runtimes" in raw["cores"]:
        return fail("pipelined pool of runtimes incl. host pre/post-processing")
    batch_text = raw["batch"].strip()
    gpu_batch = 0
    split = re.fullmatch(r"GPU (\d+) / DLA (\d+).*", batch_text)
    if accel == "dla+gpu" and split and "GPU" in raw["cores"] and "2 DLA" in raw["cores"]:
        gpu_batch, batch = int(split.group(1)), int(split.group(2))
        situation = Situation("dla", precision, batch=batch, cores=2, metric="throughput", gpu_batch=gpu_batch)
    else:
        stated = _int(batch_text)
        if stated is None:
            return fail(f"batch '{batch_text}' not stated per engine")
        batch = stated
        cores_match = re.match(r"\s*(\d+)", raw["cores"])
        cores = int(cores_match.group(1)) if cores_match else 1
        if accel == "dla+gpu" and "GPU" in raw["cores"] and "DLA0" not in raw["cores"]:
            return fail("GPU and DLA engines together without per-engine batches")
        kind = {"gpu": "gpu", "dla": "dla", "dla+gpu": "dla", "npu": "npu"}.get(accel)
        if kind is None:
            return fail(f"accelerator '{accel}' is not modelled")
        situation = Situation(kind, precision, batch=batch, cores=cores if kind != "gpu" else 1,
                              sparse="sparse" in raw["model"].lower() or "sparse_weight" in notes)
    observed = _observed(raw["metric"].strip().lower(), value, raw["unit"], situation.batch)
    if observed is None or not 0 < observed[1] < float("inf"):
        return fail(f"metric '{raw['metric']}' in '{raw['unit']}' is not a latency or a throughput")
    metric, figure = observed
    io = "I/O handling" in notes + match_notes or "IO handling" in notes + match_notes
    nms = NMS_TIMED in match_notes and situation.accelerator in ("gpu", "dla")
    apart = (situation.accelerator == "dla" and situation.cores > 1 and not situation.gpu_batch
             and metric == "throughput" and any(fragment in raw["source"] for fragment, _ in SEPARATE_RUNS))
    engine_only = (situation.accelerator in ("gpu", "dla")
                   and any(fragment in raw["source"] for fragment, _ in ENGINE_TIMED))
    situation = Situation(**{**situation.__dict__, "metric": metric,
                             "io_included": io if situation.accelerator == "npu" else True, "nms": nms,
                             "separate_runs": apart, "host_timed": not engine_only,
                             "default_formats": situation.accelerator in ("gpu", "dla") and any(
                                 fragment in raw["source"] for fragment, _ in DEFAULT_FORMATS)})
    return Measurement(row=n, source=raw["source"], device=device, model=raw["model"], onnx=str(models / onnx_name),
                       family=model_family(onnx_name), origin=origin_of(raw["source"]), metric=metric,
                       observed=figure, target=target, situation=situation, reason="")


def read_measurements(csv_path: str | Path, models: str | Path) -> list[Measurement]:
    """Every row of a calibration CSV; `models` is the folder its `onnx` column is relative to."""
    path = Path(csv_path)
    if not path.is_file():
        raise BadInputError("measurement CSV not found", file=str(path))
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise BadInputError(f"measurement CSV lacks columns {', '.join(missing)}", file=str(path))
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise BadInputError(f"measurement CSV unreadable: {exc}", file=str(path)) from None
    return [_parse(n, raw, Path(models)) for n, raw in enumerate(rows, start=2)]
