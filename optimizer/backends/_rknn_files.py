"""rknn-toolkit2 build files: convert.py, the hybrid-quantization layers and the runtime settings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from optimizer.ir import Graph

CORE_MASKS = {1: "RKNN_NPU_CORE_0", 2: "RKNN_NPU_CORE_0_1", 3: "RKNN_NPU_CORE_0_1_2"}


def rknn_settings(plan: Mapping[str, Any], graph: Graph, io: Mapping[str, Any], platform: str) -> dict[str, Any]:
    """`platform`: the toolkit's own SoC name for the plan's target (its catalog `toolkit_platform`): a variant
    target id (a board, a power mode) is no name rknn-toolkit2 accepts."""
    layers = [layer for layer in plan["layers"] if layer["role"] != "constant"]
    npu = [layer for layer in layers if layer["device"] == "npu"]
    precisions = {layer["precision"] for layer in npu}
    # A QDQ model carries its own scales: rknn-toolkit2 refuses to quantize it again ("If a quantized model has
    # been import, please set do_quantization = False"; measured on 2.5.0, corpus tv_quantized_mobilenet_v2).
    prequantized = any(node.op_type in ("QuantizeLinear", "DequantizeLinear") for node in graph.nodes)
    quantize = "int8" in precisions and not prequantized
    fp16_tensors = sorted({t for layer in npu if quantize and layer["precision"] == "fp16"
                           for t in graph.node(layer["node"]).outputs if t})
    cpu_ops = sorted({t for layer in layers if layer["device"] == "cpu"
                      for t in graph.node(layer["node"]).outputs if t})
    cores = max((layer["cores"] or 1 for layer in npu), default=1)
    sparse = any(layer["sparsity"] != "dense" for layer in npu)
    zero_copy = [{"tensor": e["tensor"], "native_layout": e["native_layout"], "zero_copy": e["zero_copy"],
                  "align_bytes": e["align_bytes"]} for e in io.get("inputs", ())]
    return {
        "target_platform": platform,
        "do_quantization": quantize,
        "prequantized": prequantized,
        "quantized_dtype": "w8a8",
        "optimization_level": 3,
        "sparse_infer": sparse,
        "custom_quantize_layers": {t: "float16" for t in fp16_tensors},
        "op_target": {t: "cpu" for t in cpu_ops},
        "core_mask": CORE_MASKS.get(cores, "RKNN_NPU_CORE_AUTO"),
        "zero_copy_inputs": zero_copy,
        "cache_sync": ("RKNN_MEMORY_SYNC_TO_DEVICE after the CPU writes an input, RKNN_MEMORY_SYNC_FROM_DEVICE "
                       "before the CPU reads an output (RKNN-MEMSYNC); avoid BIDIRECTIONAL"),
        "outputs": [{"tensor": e["tensor"], "native_layout": e["native_layout"],
                     "int8_model_types": e["int8_model_types"]} for e in io.get("outputs", ())],
    }


def hybrid_yaml(settings: Mapping[str, Any]) -> str:
    """The fragment rknn-toolkit2's hybrid_quantization_step1 cfg takes under custom_quantize_layers."""
    lines = ["# Layers the edgeplan plan keeps in FP16 (rknn-toolkit2 hybrid quantization, YAML).",
             "custom_quantize_layers:"]
    entries = settings["custom_quantize_layers"]
    lines += [f"  {json.dumps(name)}: float16" for name in entries] or ["  {}"]
    if not entries:
        lines[-2] = "custom_quantize_layers: {}"
        lines.pop()
    return "\n".join(lines) + "\n"


def convert_script(settings: Mapping[str, Any], model_file: str) -> str:
    """Names from the model reach the script only inside repr() literals (never a docstring, a comment
    or an f-string), so no name can end a string and run as Python."""
    spec = repr(json.dumps(dict(settings), indent=1, sort_keys=True))
    return f'''"""Converts the model beside this file (MODEL) with rknn-toolkit2 the way the edgeplan plan says.

python convert.py [--dataset dataset.txt] [--out model.rknn]
dataset.txt lists one .npy (or image) path per line; it is needed when the plan quantizes to INT8.
"""

import argparse
import json
import os

from rknn.api import RKNN

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), {model_file!r})
SETTINGS = json.loads({spec})


def merge_cfg(path, layers):
    """Adds the plan's FP16 layers to the cfg hybrid_quantization_step1 wrote (YAML)."""
    from ruamel.yaml import YAML
    yaml = YAML()
    with open(path) as handle:
        cfg = yaml.load(handle)
    custom = cfg.get("custom_quantize_layers") or {{}}
    custom.update(layers)
    cfg["custom_quantize_layers"] = custom
    with open(path, "w") as handle:
        yaml.dump(cfg, handle)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="dataset.txt")
    parser.add_argument("--out", default="model.rknn")
    args = parser.parse_args()
    options = dict(target_platform=SETTINGS["target_platform"], optimization_level=SETTINGS["optimization_level"])
    if SETTINGS["do_quantization"]:
        options["quantized_dtype"] = SETTINGS["quantized_dtype"]
    if SETTINGS["sparse_infer"]:
        options["sparse_infer"] = True
    if SETTINGS["op_target"]:
        options["op_target"] = SETTINGS["op_target"]
    rknn = RKNN(verbose=True)
    rknn.config(**options)
    if rknn.load_onnx(model=MODEL) != 0:
        raise SystemExit("load_onnx failed")
    layers = SETTINGS["custom_quantize_layers"]
    if SETTINGS["do_quantization"] and layers:
        if rknn.hybrid_quantization_step1(dataset=args.dataset) != 0:
            raise SystemExit("hybrid_quantization_step1 failed")
        stem = os.path.splitext(os.path.basename(MODEL))[0]
        merge_cfg(stem + ".quantization.cfg", layers)
        rknn.release()
        rknn = RKNN(verbose=True)  # step 2 starts from the files step 1 wrote, not from load_onnx
        rknn.config(**options)
        if rknn.hybrid_quantization_step2(model_input=stem + ".model", data_input=stem + ".data",
                                          model_quantization_cfg=stem + ".quantization.cfg") != 0:
            raise SystemExit("hybrid_quantization_step2 failed")
    elif rknn.build(do_quantization=SETTINGS["do_quantization"], dataset=args.dataset) != 0:
        raise SystemExit("build failed")
    if rknn.export_rknn(args.out) != 0:
        raise SystemExit("export_rknn failed")
    print("runtime: core_mask", SETTINGS["core_mask"], "(rknn_set_core_mask / init_runtime core_mask)")
    rknn.release()


if __name__ == "__main__":
    main()
'''
