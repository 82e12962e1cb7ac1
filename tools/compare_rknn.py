"""Compare `edgeplan check` NPU/CPU verdicts with rknn-toolkit2's real placement, layer by layer.

Run with edgeplan's interpreter; the toolkit runs in its own venv (../shared/spec/rknn-toolkit.md):
    python tools/compare_rknn.py MODEL.onnx [...] --rknn-python RKNN_VENV/bin/python [--socs rk3588,rk3566]
Structure-only models get random weights of the same dims first (the toolkit needs real tensors).
Prints, per model, SoC and precision, how many layers agree and every disagreement.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.ir import load_model

_CONVERT = """
import json, os, sys
sys.path.insert(0, {tools!r})
import numpy as np
import probe_rknn_ops as p
model, soc, quantize, shape = sys.argv[1], sys.argv[2], sys.argv[3] == "int8", tuple(json.loads(sys.argv[4]))
data = os.path.join(os.path.dirname(model), "x.npy")
np.save(data, np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))
listing = os.path.join(os.path.dirname(model), "dataset.txt")
open(listing, "w").write(data + "\\n")
ok, rows, errors = p.convert(model, soc, quantize, listing)
print(json.dumps({{"ok": ok, "rows": rows, "errors": errors}}))
"""


def with_weights(src: Path, dst: Path) -> None:
    model = onnx.load(src, load_external_data=False)
    rng = np.random.default_rng(0)
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
            tensor.CopyFrom(numpy_helper.from_array(rng.normal(0, 0.05, tuple(tensor.dims)).astype(dtype),
                                                    tensor.name))
    onnx.save(model, dst)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rknn-python", required=True)
    parser.add_argument("--socs", default="rk3588,rk3576,rk3566")
    args = parser.parse_args()
    catalog = load_catalog()
    tools = str(Path(__file__).resolve().parent)
    total_disagree = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source in args.models:
            path = Path(tmp) / Path(source).name
            with_weights(Path(source), path)
            graph = load_model(path)
            shape = graph.shape(graph.inputs[0])
            for soc in args.socs.split(","):
                report = check_graph(graph, catalog, soc)
                for precision in catalog.target(soc).precisions["npu"]:
                    out = subprocess.run([args.rknn_python, "-c", _CONVERT.format(tools=tools), str(path), soc,
                                          precision, json.dumps(list(shape))], capture_output=True, text=True, cwd=tmp)
                    result = json.loads(out.stdout.strip().splitlines()[-1])
                    placed: dict[str, set[str]] = {}
                    for _kind, _dtype, where, full in result["rows"]:
                        placed.setdefault(full.partition(":")[2], set()).add(where)
                    agree, notes = 0, []
                    for node in graph.nodes:
                        if node.name not in placed:
                            continue
                        mine = "NPU" if report.verdict(node.name).runs_on("npu", precision) else "CPU"
                        if placed[node.name] == {mine}:
                            agree += 1
                        else:
                            notes.append(f"{node.name} ({node.op_type}): edgeplan {mine}, toolkit "
                                         f"{'/'.join(sorted(placed[node.name]))}")
                    total_disagree += len(notes)
                    status = "built" if result["ok"] else "toolkit build failed"
                    print(f"{Path(source).name} {soc} {precision}: {status}, {agree} agree, {len(notes)} disagree")
                    for note in notes:
                        print(f"  {note}")
    return 1 if total_disagree else 0


if __name__ == "__main__":
    sys.exit(main())
