"""TensorRT build files: build.sh with one trtexec command per engine, and the same with the builder API."""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from optimizer.export._submodels import SubModel
from optimizer.fileio import one_line

_FORMAT = {"dla_linear": "dla_linear", "dla_hwc4": "dla_hwc4", "chw16": "chw16", "chw32": "chw32",
           "linear": "chw", "chw4": "chw4"}


def trtexec_spec() -> Mapping[str, Any]:
    return tomllib.loads((resources.files("optimizer.constraints") / "trtexec_flags.toml").read_text())


def _mib(value: int) -> str:
    return f"{value / (1 << 20):g}"


def _precision_flags(precisions: set[str]) -> list[str]:
    return [f"--{p}" for p in ("int8", "fp16") if p in precisions]


def engine_command(sub: SubModel, plan_sub: Mapping[str, Any], layers: Mapping[str, Mapping[str, Any]],
                   standalone: bool) -> list[str]:
    precisions = {layers[n]["precision"] for n in sub.nodes if n in layers}
    cmd = ["trtexec", f"--onnx={sub.name}", f"--saveEngine={sub.name[:-5]}.engine"]
    cmd += _precision_flags(precisions)
    if sub.device.startswith("dla"):
        cmd.append(f"--useDLACore={sub.device[-1]}")
        dtype = "int8" if "int8" in precisions else "fp16"
        formats = plan_sub.get("io_formats", {})
        if sub.inputs:
            cmd.append("--inputIOFormats=" + ",".join(f"{dtype}:{_FORMAT[formats.get(t, 'dla_linear')]}"
                                                      for t in sub.inputs))
        if sub.outputs:
            cmd.append("--outputIOFormats=" + ",".join(f"{dtype}:{_FORMAT[formats.get(t, 'dla_linear')]}"
                                                       for t in sub.outputs))
        pools = plan_sub["memory_pools"]
        cmd.append(f"--memPoolSize=dlaSRAM:{_mib(pools['dla_sram_bytes'])},"
                   f"dlaLocalDRAM:{_mib(pools['dla_local_dram_bytes'])},"
                   f"dlaGlobalDRAM:{_mib(pools['dla_global_dram_bytes'])}")
        if standalone:
            cmd.append("--buildDLAStandalone")
    if len(precisions) > 1:
        cmd.append("--precisionConstraints=obey")
        cmd.append("--layerPrecisions=" + ",".join(f"{n}:{layers[n]['precision']}" for n in sub.nodes
                                                   if n in layers and layers[n]["role"] != "constant"))
    return cmd


def single_engine_command(model_file: str, plan: Mapping[str, Any]) -> list[str]:
    """The whole plan as one engine: TensorRT partitions it by --layerDeviceTypes; GPU layers sit inside
    the DLA engine, so --allowGPUFallback is needed here (and only here)."""
    layers = [layer for layer in plan["layers"] if layer["role"] != "constant"]
    cores = sorted({layer["device"] for layer in layers if layer["device"].startswith("dla")})
    precisions = {layer["precision"] for layer in layers}
    cmd = ["trtexec", f"--onnx={model_file}", "--saveEngine=model_single.engine", *_precision_flags(precisions)]
    if cores:
        cmd += [f"--useDLACore={cores[0][-1]}", "--allowGPUFallback"]
        cmd.append("--layerDeviceTypes=" + ",".join(
            f"{layer['node']}:{'DLA' if layer['device'].startswith('dla') else 'GPU'}" for layer in layers))
    if len(precisions) > 1:
        cmd += ["--precisionConstraints=obey",
                "--layerPrecisions=" + ",".join(f"{layer['node']}:{layer['precision']}" for layer in layers)]
    return cmd


def build_script(subs: Sequence[SubModel], plan: Mapping[str, Any], model_file: str) -> str:
    """Every word that comes from the model or plan goes through shlex.quote, and comments carry only
    one-line sanitised text, so no name can end a line or a quote; the single-engine alternative is
    code behind SINGLE_ENGINE=1 rather than a commented-out command."""
    layers = {layer["node"]: layer for layer in plan["layers"]}
    by_id = {s["id"]: s for s in plan["subgraphs"]}
    standalone = bool(plan.get("request", {}).get("dla_standalone"))
    spec = trtexec_spec()
    lines = ["#!/usr/bin/env bash",
             f"# TensorRT engines for {one_line(plan['model']['path'])} on {one_line(plan['target'])} "
             f"(edgeplan plan, {one_line(plan['objective'])}).",
             f"# Flags checked against: {one_line(spec['checked_against'])}.",
             "# INT8 engines need calibration: set CALIB=cache-file (or export a QDQ model); without it trtexec",
             "# builds with placeholder scales, fine for timing only.",
             "# SINGLE_ENGINE=1 builds the whole plan as one engine instead (TensorRT partitions it by layer",
             "# device types).",
             "set -euo pipefail", 'cd "$(dirname "$0")"', 'TRTEXEC="${TRTEXEC:-trtexec}"', "",
             'if [ "${SINGLE_ENGINE:-0}" != 1 ]; then']
    for sub in subs:
        cmd = engine_command(sub, by_id[sub.index], layers, standalone)
        calib = ' ${CALIB:+--calib="$CALIB"}' if "--int8" in cmd else ""
        lines.append(f"# engine {int(sub.index)}: {one_line(sub.device)}, {len(sub.nodes)} nodes")
        lines.append('"$TRTEXEC" ' + " ".join(shlex.quote(c) for c in cmd[1:]) + calib)
        lines.append("")
    single = single_engine_command(model_file, plan)
    lines += ["else", "# the alternative: the whole plan as a single engine",
              '"$TRTEXEC" ' + " ".join(shlex.quote(c) for c in single[1:]), "fi"]
    return "\n".join(lines) + "\n"


def builder_script(subs: Sequence[SubModel], plan: Mapping[str, Any]) -> str:
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
            "io_formats": plan_sub.get("io_formats", {}), "memory_pools": plan_sub.get("memory_pools", {}),
        })
    spec = repr(json.dumps(engines, indent=1, sort_keys=True))  # a Python literal, whatever the names hold
    return f'''"""Builds the plan's TensorRT engines with the builder API (same settings as build.sh).

Run on the Jetson: python3 build_trt.py [--calib CACHE]
"""

import argparse
import json
import os

import tensorrt as trt

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = json.loads({spec})
FORMATS = {{"dla_linear": trt.TensorFormat.DLA_LINEAR, "dla_hwc4": trt.TensorFormat.DLA_HWC4,
           "chw16": trt.TensorFormat.CHW16, "chw32": trt.TensorFormat.CHW32, "chw4": trt.TensorFormat.CHW4,
           "linear": trt.TensorFormat.LINEAR}}
PRECISION = {{"int8": trt.int8, "fp16": trt.float16, "fp32": trt.float32}}


def build(spec, logger, calib):
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    with open(os.path.join(HERE, spec["onnx"]), "rb") as handle:
        if not parser.parse(handle.read()):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise SystemExit(f"{{spec['onnx']}}: {{errors}}")
    config = builder.create_builder_config()
    used = {{layer["precision"] for layer in spec["layers"].values()}}
    if "int8" in used:
        config.set_flag(trt.BuilderFlag.INT8)
    if "fp16" in used:
        config.set_flag(trt.BuilderFlag.FP16)
    if len(used) > 1:
        config.set_flag(trt.BuilderFlag.OBEY_PRECISION_CONSTRAINTS)
    if spec["device"].startswith("dla"):
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(spec["device"][-1])
        pools = spec["memory_pools"]
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_MANAGED_SRAM, pools["dla_sram_bytes"])
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_LOCAL_DRAM, pools["dla_local_dram_bytes"])
        config.set_memory_pool_limit(trt.MemoryPoolType.DLA_GLOBAL_DRAM, pools["dla_global_dram_bytes"])
        dtype = trt.int8 if "int8" in used else trt.float16
        for i in range(network.num_inputs):
            tensor = network.get_input(i)
            tensor.dtype = dtype
            tensor.allowed_formats = 1 << int(FORMATS[spec["io_formats"].get(tensor.name, "dla_linear")])
        for i in range(network.num_outputs):
            tensor = network.get_output(i)
            tensor.dtype = dtype
            tensor.allowed_formats = 1 << int(FORMATS[spec["io_formats"].get(tensor.name, "dla_linear")])
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        wanted = spec["layers"].get(layer.name)
        if wanted is None:
            continue
        layer.precision = PRECISION[wanted["precision"]]
        config.set_device_type(layer, trt.DeviceType.DLA if wanted["device"] == "DLA" else trt.DeviceType.GPU)
    if calib and "int8" in used:
        raise SystemExit("attach your IInt8Calibrator reading " + calib + " to config.int8_calibrator here")
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise SystemExit(f"{{spec['onnx']}}: the build failed (see the log above)")
    with open(os.path.join(HERE, spec["engine"]), "wb") as handle:
        handle.write(serialized)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calib")
    args = parser.parse_args()
    logger = trt.Logger(trt.Logger.INFO)
    for spec in ENGINES:
        build(spec, logger, args.calib)


if __name__ == "__main__":
    main()
'''
