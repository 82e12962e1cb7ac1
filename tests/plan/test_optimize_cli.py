"""`edgeplan optimize` as a user runs it: files, schema, determinism, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer.catalog import load_catalog
from optimizer.plan import validate_plan
from tests.conftest import EXAMPLES, ZOO, needs_zoo
from tests.test_cli import run


def _optimize(tmp_path, *args, name="out"):
    out = tmp_path / name
    result = run("optimize", *args, "--out", str(out))
    return result, out


@pytest.mark.parametrize("target", ["orin-agx", "rk3588"])
def test_plan_json_follows_the_spec(tmp_path, target):
    result, out = _optimize(tmp_path, str(EXAMPLES / "resnet18.onnx"), "--target", target)
    assert result.returncode == 0, result.stderr
    assert "predicted latency" in result.stdout and "latency x" in result.stdout
    plan = json.loads((out / "plan.json").read_text())
    assert plan["schema"] == "edgeplan.plan/v1" and plan["target"] == target
    assert set(plan) >= {"tool_version", "model", "objective", "solver", "predicted", "baselines", "layers",
                         "subgraphs", "transfers"}
    assert plan["solver"]["status"] == "OPTIMAL" and plan["solver"]["bound_ms"] == plan["solver"]["objective_ms"]
    assert len(plan["layers"]) == plan["model"]["num_nodes"] == 49
    for layer in plan["layers"]:
        assert set(layer) >= {"node", "op_type", "device", "precision", "sparsity", "cores", "latency_ms"}
        assert layer["device"] in ("gpu", "dla0", "dla1", "npu", "cpu")
        assert layer["precision"] in ("int8", "fp16", "fp32")
    expected = {"gpu_only", "trt_default"} if target == "orin-agx" else {"npu_default"}
    assert set(plan["baselines"]) == expected
    for sub in plan["subgraphs"]:
        assert set(sub) >= {"id", "device", "nodes", "inputs", "outputs"}
        if sub["device"].startswith("dla"):
            assert set(sub["memory_pools"]) == {"dla_sram_bytes", "dla_local_dram_bytes", "dla_global_dram_bytes"}
            assert set(sub["io_formats"]) == set(sub["inputs"]) | set(sub["outputs"])
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["timings"]["total_s"] > 0
    assert (out / "report.md").read_text().startswith("# edgeplan plan")
    assert validate_plan(plan, load_catalog(), str(EXAMPLES / "resnet18.onnx")) == []


def test_reruns_are_byte_identical(tmp_path):
    outs = []
    for name in ("a", "b"):
        result, out = _optimize(tmp_path, str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx",
                                "--objective", "throughput", "--explain", "--time-limit", "3", name=name)
        assert result.returncode == 0, result.stderr
        outs.append((out / "plan.json").read_bytes())
    assert outs[0] == outs[1]
    assert b'"costs"' in outs[0]


def test_reruns_are_identical_in_a_fresh_process_with_other_solver_threads(tmp_path):
    # the planner fixes its own worker count, so the host's core count cannot change the plan
    code = ("import os, sys; os.sched_setaffinity(0, {0}); from optimizer.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    out_a = tmp_path / "a"
    subprocess.run([str(run.__globals__["EDGEPLAN"]), "optimize", str(EXAMPLES / "resnet18.onnx"), "--target",
                    "rk3576", "--out", str(out_a)], check=True, capture_output=True)
    import sys
    out_b = tmp_path / "b"
    subprocess.run([sys.executable, "-c", code, "optimize", str(EXAMPLES / "resnet18.onnx"), "--target", "rk3576",
                    "--out", str(out_b)], check=True, capture_output=True)
    assert (out_a / "plan.json").read_bytes() == (out_b / "plan.json").read_bytes()


def test_infeasible_request_exits_1_naming_rules(tmp_path):
    result, out = _optimize(tmp_path, str(EXAMPLES / "yolov8n.onnx"), "--target", "xavier-agx",
                            "--pin", "/model.22/Reshape=dla")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and "DLA-LAYOUT-SHUFFLE" in line and "yolov8n.onnx" in line
    assert not out.exists()


def test_standalone_infeasible_names_nodes(tmp_path):
    result, _ = _optimize(tmp_path, str(EXAMPLES / "yolov8n.onnx"), "--target", "orin-agx", "--dla-standalone")
    assert result.returncode == 1 and "DLA-STANDALONE-IO" in result.stderr and "cannot run on DLA" in result.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (("--objective", "fastest"), "usage:"),
    (("--sram-bytes", "1000"), "DLA-POOL-POW2"),
    (("--allow-precisions", "int4"), "--allow-precisions"),
    (("--pin", "nonode=gpu"), "not a node"),
    (("--pin", "x"), "NODE=VALUE"),
    (("--time-limit", "0"), "--time-limit"),
])
def test_bad_requests_exit_2(tmp_path, args, needle):
    result, out = _optimize(tmp_path, str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx", *args)
    assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_sensitivity_file_and_budget(tmp_path):
    csv_path = tmp_path / "sens.csv"
    csv_path.write_text("node,score\n/conv1/Conv,0.9\n/layer1/layer1.0/conv1/Conv,0.01\n")
    result, out = _optimize(tmp_path, str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx",
                            "--sensitivity", str(csv_path), "--int8-budget", "0.5")
    assert result.returncode == 0, result.stderr
    layers = {layer["node"]: layer for layer in json.loads((out / "plan.json").read_text())["layers"]}
    assert layers["/conv1/Conv"]["precision"] != "int8"


def test_rknn_accuracy_analysis_table_is_read(tmp_path):
    from optimizer.ir import load_model
    from optimizer.solver._sensitivity import load_sensitivity
    table = tmp_path / "error_analysis.txt"
    table.write_text("layer_name  simulator_error\n                 entire      single\n"
                     "[Conv] /conv1/Conv_output_0   0.95000 | 12.3   0.96000 | 10.1\n"
                     "[Relu] /relu/Relu_output_0    0.99000 | 1.0\n")
    graph = load_model(EXAMPLES / "resnet18.onnx")
    scores = load_sensitivity(table, graph)
    assert scores["/conv1/Conv"] == pytest.approx(0.04)
    assert scores["/relu/Relu"] == pytest.approx(0.01)


@needs_zoo
def test_dynamic_model_plans_after_fixing_dims(tmp_path):
    result, out = _optimize(tmp_path, str(ZOO / "tv_mobilenet_v2_dynbatch.onnx"), "--target", "orin-agx",
                            "--input-shape", "input=1x3x224x224")
    assert result.returncode == 0, result.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert any(layer["device"].startswith("dla") or layer["device"] == "gpu" for layer in plan["layers"])


@needs_zoo
@pytest.mark.slow
@pytest.mark.parametrize("target", ["orin-agx", "xavier-agx", "rk3588", "rk3576"])
def test_zoo_plans_validate(target):
    from optimizer.plan import optimize
    from optimizer.solver import PlanRequest
    shapes = {"tv_mobilenet_v2_dynbatch": {"input": (1, 3, 224, 224)},
              "unet_convtranspose_dynbatch": {"input": (1, 3, 256, 256)},
              "transformer_encoder_dynseq": {"input": (1, 128, 256)}}
    catalog = load_catalog()
    for path in sorted(ZOO.glob("*.onnx")):
        if path.stem in ("tv_densenet121", "tv_ssdlite320_mobilenet_v3_large", "rtdetr_l"):
            continue  # the benchmark covers the slowest three
        planned = optimize(str(path), target, PlanRequest(), input_shapes=shapes.get(path.stem), catalog=catalog)
        assert planned.plan.solver.status == "OPTIMAL", path.name
        assert validate_plan(planned.plan, catalog, str(path), shapes.get(path.stem)) == [], path.name


def test_export_cli_writes_manifest_and_build_files(tmp_path):
    result, out = _optimize(tmp_path, str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx")
    assert result.returncode == 0
    export = tmp_path / "export"
    done = run("export", str(out / "plan.json"), "--out", str(export))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["schema"] == "edgeplan.export/v1"
    assert [e["id"] for e in manifest["engines"]] == list(range(len(manifest["engines"])))
    for engine in manifest["engines"]:
        assert (export / engine["onnx"]).is_file()
        assert set(engine) >= {"id", "device", "onnx", "inputs", "outputs", "precision"}
    assert (export / "build.sh").is_file() and (export / "build_trt.py").is_file()
    bad = run("export", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "plan file not found" in bad.stderr


def test_no_cliff_past_the_exact_models_size(tmp_path):
    """Past MAX_EXACT_GROUPS the plan is the best baseline, with the cheapest-option bound as its proof: a
    chain whose baseline meets the bound is OPTIMAL (no cliff at 2,000 groups); otherwise FEASIBLE with its
    real gap, said in the warnings."""
    from optimizer.plan._build import MAX_EXACT_GROUPS

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the benchmark's generator
    from large_graph import chain_model

    path = tmp_path / "chain.onnx"
    chain_model(path, 2 * (MAX_EXACT_GROUPS + 1))
    result = run("optimize", str(path), "--target", "orin-agx", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["solver"]["status"] == "OPTIMAL" and plan["solver"]["gap"] == 0.0
    best = min(b["latency_ms"] for b in plan["baselines"].values())
    assert plan["predicted"]["latency_ms"] == best
    result = run("optimize", str(path), "--target", "orin-agx", "--objective", "throughput",
                 "--out", str(tmp_path / "tp"))
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "tp" / "plan.json").read_text())
    assert plan["solver"]["status"] == "FEASIBLE" and 0.0 < plan["solver"]["gap"] < 1.0
    assert f"exceed the exact solver's {MAX_EXACT_GROUPS}" in plan["warnings"][0]
