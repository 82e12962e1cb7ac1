"""TensorRT build files: build.sh with one trtexec command per engine, and the same with the builder API, for
TensorRT 10 (weakly typed: precision flags, typed I/O formats) and 11 (strongly typed: the precisions live in
the exported ONNX as Q/DQ and Cast nodes; flags carry devices, formats and pools only)."""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import onnx

from optimizer.backends._submodels import SubModel
from optimizer.fileio import one_line

_FORMAT = {"dla_linear": "dla_linear", "dla_hwc4": "dla_hwc4", "chw16": "chw16", "chw32": "chw32",
           "linear": "chw", "chw4": "chw4", "chw": "chw"}
_IO_TYPE = {onnx.TensorProto.FLOAT: "fp32", onnx.TensorProto.FLOAT16: "fp16", onnx.TensorProto.BFLOAT16: "bf16",
            onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT64: "int64", onnx.TensorProto.INT8: "int8",
            onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.BOOL: "bool"}

Boundary = Mapping[str, tuple[str, str]]  # tensor -> (dtype, plan format) where it enters or leaves a DLA engine


def trtexec_spec(tensorrt: str = "10") -> Mapping[str, Any]:
    """The flag table of one TensorRT major (constraints/trtexec_flags.toml)."""
    text = (resources.files("optimizer.constraints") / "trtexec_flags.toml").read_text()
    table: Mapping[str, Any] = tomllib.loads(text)[f"trt{tensorrt}"]
    return table


def _mib(value: int) -> str:
    return f"{value / (1 << 20):g}"


def _precision_flags(precisions: set[str]) -> list[str]:
    return [f"--{p}" for p in ("int8", "fp16") if p in precisions]


def _is_dla(sub: SubModel) -> bool:
    return sub.device.startswith("dla")


def dla_dtype(sub: SubModel, layers: Mapping[str, Mapping[str, Any]]) -> str:
    """A DLA engine's I/O type: INT8 when any of its layers runs INT8, else FP16 (DLA has no FP32 I/O)."""
    return "int8" if any(layers[n]["precision"] == "int8" for n in sub.nodes if n in layers) else "fp16"


def boundary_io(subs: Sequence[SubModel], plan: Mapping[str, Any], keep: frozenset[str] = frozenset(),
                formats: Mapping[str, Any] | None = None) -> Boundary:
    """One (type, format) per tensor at a DLA engine's edge, so both sides of a GPU/DLA boundary build the same
    buffer: the producing DLA engine's choice, else the first DLA engine that reads it. The type is the
    engine's unless the format exists for one type only (`formats`: the catalog's DLA format table, e.g.
    kCHW16 is FP16-only). `keep`: tensors that keep the model's own type (TensorRT 11's model inputs/outputs)."""
    layers = {layer["node"]: layer for layer in plan["layers"]}
    by_id = {s["id"]: s for s in plan["subgraphs"]}
    chosen: dict[str, tuple[str, str]] = {}
    dla = [sub for sub in subs if _is_dla(sub)]
    for side in ("output", "input"):
        table = (formats or {}).get(side, {})
        for sub in dla:
            chosen_formats = by_id[sub.index].get("io_formats", {})
            for t in (sub.outputs if side == "output" else sub.inputs):
                if t in keep or t in chosen:
                    continue
                fmt = chosen_formats.get(t, "dla_linear")
                dtype = dla_dtype(sub, layers)
                if table and fmt not in table.get(dtype, ()):
                    dtype = next((d for d, allowed in sorted(table.items()) if fmt in allowed), dtype)
                chosen[t] = (dtype, fmt)
    return chosen


def _declared(sub: SubModel, tensor: str) -> str:
    for value in (*sub.model.graph.input, *sub.model.graph.output):
        if value.name == tensor:
            return _IO_TYPE.get(value.type.tensor_type.elem_type, "fp32")
    return "fp32"


def _io_flags(sub: SubModel, io: Boundary, typed: bool) -> list[str]:
    """--inputIOFormats/--outputIOFormats for every engine that touches a DLA boundary: trtexec wants one entry
    per tensor in order, so the tensors off the boundary get their own linear format (and, in 10, type)."""
    if not any(t in io for t in (*sub.inputs, *sub.outputs)):
        return []

    def entry(t: str) -> str:
        dtype, fmt = io.get(t, (_declared(sub, t), "chw"))
        return _FORMAT[fmt] if typed else f"{dtype}:{_FORMAT[fmt]}"

    flags = []
    if sub.inputs:
        flags.append("--inputIOFormats=" + ",".join(entry(t) for t in sub.inputs))
    if sub.outputs:
        flags.append("--outputIOFormats=" + ",".join(entry(t) for t in sub.outputs))
    return flags


def _dla_flags(sub: SubModel, plan_sub: Mapping[str, Any], standalone: bool) -> list[str]:
    pools = plan_sub["memory_pools"]
    flags = [f"--memPoolSize=dlaSRAM:{_mib(pools['dla_sram_bytes'])},"
             f"dlaLocalDRAM:{_mib(pools['dla_local_dram_bytes'])},"
             f"dlaGlobalDRAM:{_mib(pools['dla_global_dram_bytes'])}"]
    return [*flags, "--buildDLAStandalone"] if standalone else flags


def engine_command(sub: SubModel, plan_sub: Mapping[str, Any], layers: Mapping[str, Mapping[str, Any]],
                   standalone: bool, io: Boundary | None = None) -> list[str]:
    """TensorRT 10: precision flags enable what the layers and the boundary types need; where that is more
    than one precision, every layer's own is obeyed."""
    io = io or {}
    precisions = {layers[n]["precision"] for n in sub.nodes if n in layers}
    enabled = precisions | {io[t][0] for t in (*sub.inputs, *sub.outputs) if t in io} & {"int8", "fp16"}
    cmd = ["trtexec", f"--onnx={sub.name}", f"--saveEngine={sub.name[:-5]}.engine", *_precision_flags(enabled)]
    if _is_dla(sub):
        cmd.append(f"--useDLACore={sub.device[-1]}")
    cmd += _io_flags(sub, io, typed=False)
    if _is_dla(sub):
        cmd += _dla_flags(sub, plan_sub, standalone)
    if len(enabled | precisions) > 1:
        cmd.append("--precisionConstraints=obey")
        cmd.append("--layerPrecisions=" + ",".join(f"{n}:{layers[n]['precision']}" for n in sub.nodes
                                                   if n in layers and layers[n]["role"] != "constant"))
    return cmd


def engine_command_11(sub: SubModel, plan_sub: Mapping[str, Any], standalone: bool, io: Boundary) -> list[str]:
    """TensorRT 11: no precision flags (the ONNX is strongly typed); DLA engines parse with kADJUST_FOR_DLA, as
    the 11.4.1 DLA pages advise."""
    cmd = ["trtexec", f"--onnx={sub.name}", f"--saveEngine={sub.name[:-5]}.engine"]
    if _is_dla(sub):
        cmd += [f"--useDLACore={sub.device[-1]}", "--adjustForDLA"]
    cmd += _io_flags(sub, io, typed=True)
    if _is_dla(sub):
        cmd += _dla_flags(sub, plan_sub, standalone)
    return cmd


def _device_types(layers: Sequence[Mapping[str, Any]]) -> str:
    return "--layerDeviceTypes=" + ",".join(
        f"{layer['node']}:{'DLA' if layer['device'].startswith('dla') else 'GPU'}" for layer in layers)


def single_engine_command(model_file: str, plan: Mapping[str, Any], tensorrt: str = "10") -> list[str]:
    """The whole plan as one engine: TensorRT partitions it by --layerDeviceTypes; GPU layers sit inside
    the DLA engine, so --allowGPUFallback is needed here (and only here)."""
    layers = [layer for layer in plan["layers"] if layer["role"] != "constant"]
    cores = sorted({layer["device"] for layer in layers if layer["device"].startswith("dla")})
    precisions = {layer["precision"] for layer in layers}
    cmd = ["trtexec", f"--onnx={model_file}", "--saveEngine=model_single.engine"]
    fixed = plan["model"].get("input_shapes") or {}
    if fixed:  # the source file keeps its symbolic dims; the plan holds for these shapes only
        cmd.append("--shapes=" + ",".join(f"{name}:{'x'.join(str(int(d)) for d in dims)}"
                                          for name, dims in sorted(fixed.items())))
    if tensorrt == "10":
        cmd += _precision_flags(precisions)
    if cores:
        cmd += [f"--useDLACore={cores[0][-1]}", "--allowGPUFallback", *(["--adjustForDLA"] if tensorrt == "11" else [])]
        cmd.append(_device_types(layers))
    if tensorrt == "10" and len(precisions) > 1:
        cmd += ["--precisionConstraints=obey",
                "--layerPrecisions=" + ",".join(f"{layer['node']}:{layer['precision']}" for layer in layers)]
    return cmd


def build_script(subs: Sequence[SubModel], plan: Mapping[str, Any], model_file: str, tensorrt: str = "10",
                 io: Boundary | None = None) -> str:
    """Every word that comes from the model or plan goes through shlex.quote, and comments carry only
    one-line sanitised text, so no name can end a line or a quote; the single-engine alternative is
    code behind SINGLE_ENGINE=1 rather than a commented-out command."""
    layers = {layer["node"]: layer for layer in plan["layers"]}
    by_id = {s["id"]: s for s in plan["subgraphs"]}
    standalone = bool(plan.get("request", {}).get("dla_standalone"))
    io = io if io is not None else boundary_io(subs, plan)
    spec = trtexec_spec(tensorrt)
    if tensorrt == "11":
        notes = ["# TensorRT 11 networks are strongly typed: each layer's precision is in the engine ONNX files (Cast",
                 "# to FP16, QuantizeLinear/DequantizeLinear for INT8). The INT8 scales there are placeholders unless",
                 "# set (qdq_scales.json lists them): fine for timing only. DLA needs JetPack 7.2.2+ on AGX Orin."]
    else:
        notes = ["# INT8 engines need calibration: set CALIB=cache-file (or export a QDQ model); without it trtexec",
                 "# builds with placeholder scales, fine for timing only."]
    lines = ["#!/usr/bin/env bash",
             f"# TensorRT {tensorrt} engines for {one_line(plan['model']['path'])} on {one_line(plan['target'])} "
             f"(edgeplan plan, {one_line(plan['objective'])}).",
             f"# Flags checked against: {one_line(spec['checked_against'])}.",
             *notes,
             "# SINGLE_ENGINE=1 builds the whole plan as one engine instead (TensorRT partitions it by layer",
             "# device types).",
             "set -euo pipefail", 'cd "$(dirname "$0")"', 'TRTEXEC="${TRTEXEC:-trtexec}"', "",
             'if [ "${SINGLE_ENGINE:-0}" != 1 ]; then']
    for sub in subs:
        if tensorrt == "11":
            cmd = engine_command_11(sub, by_id[sub.index], standalone, io)
            calib = ""
        else:
            cmd = engine_command(sub, by_id[sub.index], layers, standalone, io)
            calib = ' ${CALIB:+--calib="$CALIB"}' if "--int8" in cmd else ""
        lines.append(f"# engine {int(sub.index)}: {one_line(sub.device)}, {len(sub.nodes)} nodes")
        lines.append('"$TRTEXEC" ' + " ".join(shlex.quote(c) for c in cmd[1:]) + calib)
        lines.append("")
    single = single_engine_command(model_file, plan, tensorrt)
    lines += ["else", "# the alternative: the whole plan as a single engine",
              '"$TRTEXEC" ' + " ".join(shlex.quote(c) for c in single[1:]), "fi"]
    return "\n".join(lines) + "\n"


def _engine_specs(subs: Sequence[SubModel], plan: Mapping[str, Any], io: Boundary) -> list[dict[str, Any]]:
    layers = {layer["node"]: layer for layer in plan["layers"]}
    by_id = {s["id"]: s for s in plan["subgraphs"]}
    engines = []
    for sub in subs:
        plan_sub = by_id[sub.index]
        engines.append({
            "onnx": sub.name, "engine": f"{sub.name[:-5]}.engine", "device": sub.device,
            "layers": {n: {"precision": layers[n]["precision"],
                           "device": "DLA" if layers[n]["device"].startswith("dla") else "GPU"}
                       for n in sub.nodes if n in layers},
            "io": {t: list(io[t]) for t in (*sub.inputs, *sub.outputs) if t in io},
            "memory_pools": plan_sub.get("memory_pools", {}),
        })
    return engines


def builder_script(subs: Sequence[SubModel], plan: Mapping[str, Any], tensorrt: str = "10",
                   io: Boundary | None = None) -> str:
    io = io if io is not None else boundary_io(subs, plan)
    spec = repr(json.dumps(_engine_specs(subs, plan, io), indent=1, sort_keys=True))  # a literal, whatever names hold
    return _BUILDER_11.replace("@ENGINES@", spec) if tensorrt == "11" else _BUILDER_10.replace("@ENGINES@", spec)


# The parts both builder scripts share, written once.
_SHARED = {
    "@HEAD@\n": '''HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = json.loads(@ENGINES@)
FORMATS = {"dla_linear": trt.TensorFormat.DLA_LINEAR, "dla_hwc4": trt.TensorFormat.DLA_HWC4,
           "chw16": trt.TensorFormat.CHW16, "chw32": trt.TensorFormat.CHW32, "chw4": trt.TensorFormat.CHW4,
           "linear": trt.TensorFormat.LINEAR, "chw": trt.TensorFormat.LINEAR}
''',
    "@DLA_AND_LAYERS@\n": '''        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(spec["device"][-1])
        pools = spec["memory_pools"]
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_MANAGED_SRAM, pools["dla_sram_bytes"])
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_LOCAL_DRAM, pools["dla_local_dram_bytes"])
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_GLOBAL_DRAM, pools["dla_global_dram_bytes"])
    for i in range(network.num_inputs):
        set_io(network.get_input(i), spec)
    for i in range(network.num_outputs):
        set_io(network.get_output(i), spec)
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        wanted = spec["layers"].get(layer.name)
''',
    "@SAVE@\n": '''    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise SystemExit(f"{spec['onnx']}: the build failed (see the log above)")
    with open(os.path.join(HERE, spec["engine"]), "wb") as handle:
        handle.write(serialized)
''',
}


def _filled(template: str) -> str:
    for marker, text in _SHARED.items():
        template = template.replace(marker, text)
    return template


_BUILDER_10 = _filled('''"""Builds the plan's TensorRT 10 engines with the builder API (same settings as build.sh).

Run on the Jetson: python3 build_trt.py [--calib CACHE]
"""

import argparse
import json
import os

import tensorrt as trt

@HEAD@
PRECISION = {"int8": trt.int8, "fp16": trt.float16, "fp32": trt.float32}


def set_io(tensor, spec):
    """Both sides of a GPU/DLA boundary declare the same type and format (the plan's)."""
    if tensor.name in spec["io"]:
        dtype, fmt = spec["io"][tensor.name]
        tensor.dtype = PRECISION[dtype]
        tensor.allowed_formats = 1 << int(FORMATS[fmt])


def build(spec, logger, calib):
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    with open(os.path.join(HERE, spec["onnx"]), "rb") as handle:
        if not parser.parse(handle.read()):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise SystemExit(f"{spec['onnx']}: {errors}")
    config = builder.create_builder_config()
    layer_precisions = {layer["precision"] for layer in spec["layers"].values()}
    used = layer_precisions | {dtype for dtype, _ in spec["io"].values()} & {"int8", "fp16"}
    if "int8" in used:
        config.set_flag(trt.BuilderFlag.INT8)
    if "fp16" in used:
        config.set_flag(trt.BuilderFlag.FP16)
    if len(used | layer_precisions) > 1:
        config.set_flag(trt.BuilderFlag.OBEY_PRECISION_CONSTRAINTS)
    if spec["device"].startswith("dla"):
@DLA_AND_LAYERS@
        if wanted is None:
            continue
        layer.precision = PRECISION[wanted["precision"]]
        config.set_device_type(layer, trt.DeviceType.DLA if wanted["device"] == "DLA" else trt.DeviceType.GPU)
    if calib and "int8" in used:
        raise SystemExit("attach your IInt8Calibrator reading " + calib + " to config.int8_calibrator here")
@SAVE@


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calib")
    args = parser.parse_args()
    logger = trt.Logger(trt.Logger.INFO)
    for spec in ENGINES:
        build(spec, logger, args.calib)


if __name__ == "__main__":
    main()
''')

_BUILDER_11 = _filled('''"""Builds the plan's TensorRT 11 engines with the builder API (same settings as build.sh).

The network is strongly typed: every layer's precision comes from the ONNX (Cast and Q/DQ nodes), so no
precision flag is set. Run on the Jetson (DLA: AGX Orin, JetPack 7.2.2 or later): python3 build_trt.py
"""

import json
import os

import tensorrt as trt

@HEAD@


def set_io(tensor, spec):
    """The format both sides of a GPU/DLA boundary agreed; the type is the ONNX tensor's own."""
    if tensor.name in spec["io"]:
        tensor.allowed_formats = 1 << int(FORMATS[spec["io"][tensor.name][1]])


def build(spec, logger):
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    dla = spec["device"].startswith("dla")
    if dla:
        parser.set_flag(trt.OnnxParserFlag.ADJUST_FOR_DLA)
    with open(os.path.join(HERE, spec["onnx"]), "rb") as handle:
        if not parser.parse(handle.read()):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise SystemExit(f"{spec['onnx']}: {errors}")
    config = builder.create_builder_config()
    if dla:
@DLA_AND_LAYERS@
        if wanted is not None:
            config.set_device_type(layer, trt.DeviceType.DLA if wanted["device"] == "DLA" else trt.DeviceType.GPU)
@SAVE@


def main():
    logger = trt.Logger(trt.Logger.INFO)
    for spec in ENGINES:
        build(spec, logger)


if __name__ == "__main__":
    main()
''')
