"""Large-graph benchmark: a generated chain of N nodes planned by `edgeplan optimize`, wall time and peak memory.

One command:  python benchmarks/large_graph.py [--nodes 100000] [--dag] [--target orin-agx] [--time-limit 60]
The model is a chain of (Conv 3x3 + ReLU) pairs on 8x16x16 tensors whose weights are external data that is
never read (structure only), so the file stays small; `--dag` makes it a branching DAG instead: residual
blocks, inception-like blocks (three branches and a channel Concat) and residual blocks whose branch holds
an op DLA cannot run (Sin), so TensorRT's default placement has many DLA regions, skip paths that forbid
merges, and regions past the loadable limit. Reports exit code, plan status and gap, wall time and peak
resident memory and CPU time (user + system) of the edgeplan process (from /usr/bin/time -v, or
resource.getrusage), and the load average at the end (wall time on a loaded machine overstates the work).
`--baselines` instead times the baselines in this process (gpu_only, trt_default) on the same model, and
`--stages` the CPU time of each phase of `optimize` (and of writing the plan files) in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


class _Builder:
    """Conv weights as never-read external data, so a large generated model stays a small file."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.offset = 0

    def conv(self, x: str, c_in: int, c_out: int, k: int, name: str) -> str:
        weight = TensorProto(name=f"w_{name}", data_type=TensorProto.FLOAT, dims=[c_out, c_in, k, k])
        weight.data_location = TensorProto.EXTERNAL
        length = c_out * c_in * k * k * 4
        for key, value in (("location", "weights.bin"), ("offset", str(self.offset)), ("length", str(length))):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        self.offset += length
        self.inits.append(weight)
        return self.op("Conv", [x, weight.name], name, kernel_shape=[k, k], pads=[k // 2] * 4)

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [f"t_{name}"], name=name, **attrs))
        return f"t_{name}"


def dag_model(path: Path, nodes: int, channels: int = 8, size: int = 16) -> None:
    """Blocks of 5-8 nodes cycling residual / inception-like / residual with a non-DLA op in its branch
    (`channels` x `size` x `size` tensors; the default 8x16x16 keeps the file and the check small)."""
    b = _Builder()
    c = channels
    last, i = "x", 0
    while len(b.nodes) < nodes:
        kind = i % 3
        if kind == 0:  # residual: two convolutions and a skip Add
            y = b.op("Relu", [b.conv(last, c, c, 3, f"r{i}a")], f"r{i}relu")
            last = b.op("Relu", [b.op("Add", [b.conv(y, c, c, 3, f"r{i}b"), last], f"r{i}add")], f"r{i}out")
        elif kind == 1:  # inception-like: 1x1, 1x1 -> 3x3, max pool -> 1x1, channel concat, 1x1 back to c
            one = b.conv(last, c, c, 1, f"i{i}a")
            three = b.conv(b.conv(last, c, c, 1, f"i{i}b"), c, c, 3, f"i{i}c")
            pool = b.op("MaxPool", [last], f"i{i}pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            cat = b.op("Concat", [one, three, b.conv(pool, c, c, 1, f"i{i}d")], f"i{i}cat", axis=1)
            last = b.conv(cat, 3 * c, c, 1, f"i{i}e")
        else:  # residual whose branch leaves DLA: the skip is another path around the GPU op
            y = b.op("Sin", [b.conv(last, c, c, 3, f"s{i}a")], f"s{i}sin")
            last = b.op("Add", [b.conv(y, c, c, 3, f"s{i}b"), last], f"s{i}add")
        i += 1
    shape = [1, c, size, size]
    graph = helper.make_graph(b.nodes, "dag", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, shape)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def time_baselines(model_path: Path, target: str) -> str:
    """The baselines alone, in this process: what `optimize` spends before the solver starts."""
    from optimizer.catalog import load_catalog
    from optimizer.check import check_graph
    from optimizer.fusion import build_groups
    from optimizer.ir import load_model
    from optimizer.latency import LatencyModel, load_profile
    from optimizer.plan import baselines, gpu_only, trt_default

    catalog = load_catalog()
    target_spec = catalog.target(target)
    graph = load_model(str(model_path))
    report = check_graph(graph, catalog, target)
    groups = build_groups(report)
    model = LatencyModel(groups, catalog, target_spec, load_profile(target_spec.family, None), io=report.io)
    limit = int(catalog.rule("DLA-LOADABLES").params["max"])
    started = time.process_time()
    gpu_only(model)
    gpu_s = time.process_time() - started
    started = time.process_time()
    trt = trt_default(model, limit)
    trt_s = time.process_time() - started
    started = time.process_time()
    baselines(model, limit)
    all_s = time.process_time() - started
    loadables = len({p.loadable for p in trt if p.loadable >= 0})
    on_dla = sum(p.option.device == "dla" for p in trt)
    return (f"{len(graph.nodes)} nodes, {len(groups.groups)} groups on {target}: gpu_only {gpu_s:.2f} s, "
            f"trt_default {trt_s:.2f} s, both baselines scored (as optimize runs them) {all_s:.2f} s, CPU time "
            f"({on_dla} groups on DLA in {loadables} loadables)")


def time_stages(model_path: Path, target: str, time_limit: float, out: Path) -> str:
    """CPU seconds of each phase of `optimize` in this process (its progress callback marks where each begins),
    then of writing the plan files: the stage that grows faster than the graph shows here."""
    from optimizer.plan import optimize, write_plan_files
    from optimizer.plan._build import PHASES
    from optimizer.solver import PlanRequest

    marks: list[float] = []
    planned = optimize(str(model_path), target, PlanRequest(objective="latency", time_limit_s=time_limit),
                       progress=lambda step, steps, phase: marks.append(time.process_time()))
    started = time.process_time()
    write_plan_files(planned, out)
    spent = [f"{name} {b - a:.2f}" for name, a, b in zip(PHASES, marks, marks[1:])]
    return (f"{len(planned.groups.groups)} groups on {target}, {planned.plan.solver.status}: CPU s "
            + ", ".join(spent) + f", writing the plan files {time.process_time() - started:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--target", default="orin-agx")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--dag", action="store_true", help="a branching DAG instead of a chain")
    parser.add_argument("--baselines", action="store_true", help="time the baselines in-process, no optimize")
    parser.add_argument("--stages", action="store_true", help="CPU time of each optimize phase, in-process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / ("dag.onnx" if args.dag else "chain.onnx")
        (dag_model if args.dag else chain_model)(model, args.nodes)
        if args.baselines:
            print(("DAG, " if args.dag else "chain, ") + time_baselines(model, args.target))
            return 0
        out = Path(tmp) / "plan"
        if args.stages:
            print(("DAG, " if args.dag else "chain, ") + time_stages(model, args.target, args.time_limit, out))
            return 0
        command = [EDGEPLAN, "optimize", "-q", str(model), "--target", args.target, "--out", str(out),
                   "--time-limit", str(args.time_limit)]
        timed = ["/usr/bin/time", "-v", *command] if Path("/usr/bin/time").exists() else command
        started = time.monotonic()
        result = subprocess.run(timed, capture_output=True, text=True)
        wall = time.monotonic() - started
        peak_kb = next((int(line.split()[-1]) for line in result.stderr.splitlines()
                        if "Maximum resident set size" in line),
                       resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        cpu = sum(float(line.split()[-1]) for line in result.stderr.splitlines()
                  if line.strip().startswith(("User time (seconds)", "System time (seconds)")))
        load = os.getloadavg()[0]
        status = gap = latency = "-"
        if (out / "plan.json").exists():
            plan = json.loads((out / "plan.json").read_text())
            status, gap, latency = plan["solver"]["status"], plan["solver"].get("gap"), plan["predicted"]["latency_ms"]
        lines = result.stderr.splitlines()  # -q: only warnings and errors (no progress lines)
        errors = [line for line in lines if line.startswith("edgeplan: error:")]
        warnings = sum(line.startswith("edgeplan: warning:") for line in lines)
        print(f"{args.nodes} nodes on {args.target}: exit {result.returncode}, status {status}, gap {gap}, "
              f"latency {latency} ms, wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak_kb / 1024:.0f} MiB, "
              f"load average {load:.1f}" + (f", {warnings} warnings" if warnings else "")
              + (f"; {errors[0]}" if errors else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
