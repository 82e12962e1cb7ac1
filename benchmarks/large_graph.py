"""Large-graph benchmark: a generated chain of N nodes planned by `edgeplan optimize`, wall time and peak memory.

One command:  python benchmarks/large_graph.py [--nodes 100000] [--target orin-agx] [--time-limit 60]
The model is a chain of (Conv 3x3 + ReLU) pairs on 8x16x16 tensors whose weights are external data that is
never read (structure only), so the file stays small. Reports exit code, plan status and gap, wall time and
peak resident memory of the edgeplan process (from /usr/bin/time -v, or resource.getrusage).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx
from _zoo import EDGEPLAN
from onnx import TensorProto, helper


def chain_model(path: Path, nodes: int) -> None:
    pairs = nodes // 2
    graph_nodes, inits = [], []
    last = "x"
    for i in range(pairs):
        weight = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[8, 8, 3, 3])
        weight.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", str(i * 2304)), ("length", "2304")):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        inits.append(weight)
        graph_nodes.append(helper.make_node("Conv", [last, f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3],
                                            pads=[1, 1, 1, 1]))
        graph_nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        last = f"r{i}"
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [1, 8, 16, 16])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--target", default="orin-agx")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "chain.onnx"
        chain_model(model, args.nodes)
        out = Path(tmp) / "plan"
        command = [EDGEPLAN, "optimize", str(model), "--target", args.target, "--out", str(out), "--time-limit",
                   str(args.time_limit)]
        timed = ["/usr/bin/time", "-v", *command] if Path("/usr/bin/time").exists() else command
        started = time.monotonic()
        result = subprocess.run(timed, capture_output=True, text=True)
        wall = time.monotonic() - started
        peak_kb = next((int(line.split()[-1]) for line in result.stderr.splitlines()
                        if "Maximum resident set size" in line),
                       resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        status = gap = latency = "-"
        if (out / "plan.json").exists():
            plan = json.loads((out / "plan.json").read_text())
            status, gap, latency = plan["solver"]["status"], plan["solver"].get("gap"), plan["predicted"]["latency_ms"]
        errors = [line for line in result.stderr.splitlines() if line.startswith("edgeplan:")]
        print(f"{args.nodes} nodes on {args.target}: exit {result.returncode}, status {status}, gap {gap}, "
              f"latency {latency} ms, wall {wall:.1f} s, peak RSS {peak_kb / 1024:.0f} MiB"
              + (f"; {errors[0]}" if errors else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
