"""Convert a sub-graph of a committed corpus model with rknn-toolkit2 2.5.0 and print its layer table, to learn
which part of a real model a placement depends on (its neighbours, its size) when a synthetic probe does not
reproduce the corpus verdict.

Run with the toolkit's interpreter, under nice:
    nice -n 10 RKNN_VENV/bin/python tools/probe_rknn_subgraph.py MODEL IN[,IN2] OUT[,OUT2] --socs rk3588
        [--precisions fp16,int8] [--input-shape 1,32,28,28]
IN/OUT are tensor names of corpus/models/MODEL.onnx (onnx.utils.Extractor cuts the graph between them); the
structure-only model's external weights are replaced by seeded random ones. --input-shape gives the (first) input
another size and infers the shapes again, which works for sub-graphs without shape constants (no Reshape targets).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rknn_build import captured_build
from rknn_log import parse_layer_table

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "models")


def extract(model: str, inputs: list[str], outputs: list[str], shape: list[int] | None) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    full = onnx.load(os.path.join(CORPUS, model + ".onnx"), load_external_data=False)
    for init in full.graph.initializer:
        if init.data_location == TensorProto.EXTERNAL:
            dtype = helper.tensor_dtype_to_np_dtype(init.data_type)
            init.CopyFrom(numpy_helper.from_array(rng.normal(0, 0.05, tuple(init.dims)).astype(dtype), init.name))
    sub = utils.Extractor(onnx.shape_inference.infer_shapes(full)).extract_model(inputs, outputs)
    if shape:
        del sub.graph.value_info[:]
        dims = sub.graph.input[0].type.tensor_type.shape.dim
        for dim, size in zip(dims, shape, strict=True):
            dim.dim_value = size
        for out in sub.graph.output:
            out.type.tensor_type.ClearField("shape")
        sub = onnx.shape_inference.infer_shapes(sub)
    return sub


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("inputs")
    parser.add_argument("outputs")
    parser.add_argument("--socs", default="rk3588")
    parser.add_argument("--precisions", default="fp16,int8")
    parser.add_argument("--input-shape", default="")
    args = parser.parse_args()
    if os.path.basename(args.model) != args.model or not os.path.isfile(os.path.join(CORPUS, args.model + ".onnx")):
        parser.error(f"{args.model!r} is not a model in {CORPUS} (give its file stem)")
    shape = [int(v) for v in args.input_shape.split(",")] if args.input_shape else None
    sub = extract(args.model, args.inputs.split(","), args.outputs.split(","), shape)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sub.onnx")
        onnx.save(sub, path)
        arrays = []
        for k, value in enumerate(sub.graph.input):
            dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
            arrays.append(os.path.join(tmp, f"x{k}.npy"))
            np.save(arrays[-1], np.random.default_rng(k).normal(0, 1, dims).astype(np.float32))
        dataset = os.path.join(tmp, "ds.txt")
        with open(dataset, "w") as handle:
            handle.write(" ".join(arrays) + "\n")
        os.chdir(tmp)  # the toolkit writes check*.onnx into the working directory
        for soc in args.socs.split(","):
            for precision in args.precisions.split(","):
                ok, text = captured_build(path, soc, precision == "int8", dataset)
                print("==", soc, precision, "built" if ok else "FAILED", flush=True)
                for layer in parse_layer_table(text):
                    if layer.op_type not in ("InputOperator", "OutputOperator", "Const"):
                        print(f"  {layer.target} {layer.op_type:<16} {layer.input_shapes} -> {layer.output_shapes} | "
                              f"{layer.derived_name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
