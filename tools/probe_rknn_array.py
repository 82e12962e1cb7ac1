"""Sweep single dense convolutions through rknn-toolkit2 and print the NPU cycles of each: the evidence for the
MAC-array figures (npu_conv_atom_in/out_<precision>, npu_conv_min_cycles_<precision>) in
constraints/rockchip_rknn.toml and the formula of optimizer/latency/_rknn.py.

Run with the toolkit's own interpreter (it cannot share edgeplan's venv, shared/spec/rknn-toolkit.md):
    /work/main/.ci/rknn-venv/bin/python tools/probe_rknn_array.py rk3588 [--precision int8|fp16] [--out DIR]
Prints one line per case: c_in c_out k output_pixels npu_cycles cycles_per_pixel, then the formula's
prediction for the given atoms (--atoms IN OUT FLOOR) and whether it matches.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path

from rknn_build import captured_build

CASES = [(16, 16, 1), (32, 32, 1), (64, 64, 1), (128, 128, 1), (256, 128, 1), (32, 16, 1), (64, 32, 1),
         (16, 16, 3), (32, 32, 3), (64, 64, 3), (16, 32, 3), (128, 64, 3), (8, 8, 1), (8, 8, 3), (24, 24, 1),
         (48, 48, 3)]
HW = 40
ROW = re.compile(r"\sConv\s+\S+\s+NPU\s.*?\s(\d+)/(\d+)/(\d+)\s")


def _model(path: Path, c_in: int, c_out: int, k: int) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((c_out, c_in, k, k)) * 0.1).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(c_out, np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[k, k], pads=[k // 2] * 4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, HW, HW])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, HW, HW])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    np.save(path.with_suffix(".npy"), rng.random((1, c_in, HW, HW), dtype=np.float32))
    path.with_suffix(".txt").write_text(f"{path.with_suffix('.npy').name}\n")


def _cycles(soc: str, precision: str, work: Path, c_in: int, c_out: int, k: int) -> int:
    """NPU cycles of the one Conv layer in the toolkit's layer table (printed only with verbose=True)."""
    path = work / f"conv_{c_in}_{c_out}_{k}.onnx"
    _model(path, c_in, c_out, k)
    ok, raw = captured_build(str(path), soc, precision == "int8", str(path.with_suffix(".txt")))
    found = [int(m.group(2)) for m in ROW.finditer(re.sub(r"\x1b\[[0-9;]*m", "", raw))]
    if not ok or not found:
        raise SystemExit(f"{soc} {precision}: no Conv row in the layer table for {c_in}->{c_out} k{k}")
    return found[-1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("soc")
    parser.add_argument("--precision", default="int8", choices=("int8", "fp16"))
    parser.add_argument("--atoms", nargs=3, type=int, metavar=("IN", "OUT", "FLOOR"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        here = os.getcwd()
        os.chdir(work)  # the toolkit writes check*.onnx files into the working directory
        try:
            mismatches = 0
            for c_in, c_out, k in CASES:
                cycles = _cycles(args.soc, args.precision, work, c_in, c_out, k)
                line = f"{c_in:4} {c_out:4} {k} {HW * HW:5} {cycles:8} {cycles / (HW * HW):7.2f}"
                if args.atoms:
                    a_in, a_out, floor = args.atoms
                    predicted = HW * HW * math.ceil(c_out / a_out) * max(floor, k * k * math.ceil(c_in / a_in))
                    mismatches += predicted != cycles
                    line += f"  formula {predicted:8} {'ok' if predicted == cycles else 'DIFFERS'}"
                print(line, flush=True)
        finally:
            os.chdir(here)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
