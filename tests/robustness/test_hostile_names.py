"""Hostile names through optimize, export and every generated script, against recording stubs of
trtexec, tensorrt and rknn: no injected command runs and nothing is written outside the out dir.

Most cases go through the Python API in this process (fast); a sample goes through the CLI. The
generated build.sh, build_trt.py and convert.py are really executed (bash, and a Python driver that
runs many scripts in one process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from optimizer.errors import EdgeplanError
from optimizer.export import export_plan
from optimizer.plan import optimize, write_plan_files
from optimizer.solver import PlanRequest
from tests.robustness import stubs
from tests.robustness.hostile_names import file_stem, hostile_names
from tests.solver.conftest import FAVOUR_DLA

NAMES_PER_CASE = 14  # 6 nodes, 6 tensors, the graph and the file


def _model(path: Path, names: list[str]) -> tuple[list[str], list[str]]:
    """x -> Conv -> Relu -> Exp (GPU-only on DLA targets) -> Conv -> Add(skip) -> Relu -> y, all hostile."""
    nodes, tensors = names[:6], names[6:12]
    x, a, b, c, d, e = tensors
    y = f"{x}\u2192out"
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array(rng.normal(0, 0.1, (8, 8, 3, 3)).astype(np.float32), f"{a}.w0")
    w1 = numpy_helper.from_array(rng.normal(0, 0.1, (8, 8, 3, 3)).astype(np.float32), f"{a}.w1")
    graph = helper.make_graph([
        helper.make_node("Conv", [x, w0.name], [a], name=nodes[0], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", [a], [b], name=nodes[1]),
        helper.make_node("Exp", [b], [c], name=nodes[2]),
        helper.make_node("Conv", [c, w1.name], [d], name=nodes[3], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", [d, b], [e], name=nodes[4]),
        helper.make_node("Relu", [e], [y], name=nodes[5]),
    ], names[12], [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], [w0, w1])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name=names[13])
    model.ir_version = 8
    onnx.save(model, path)
    return nodes, tensors


def _cases(root: Path) -> list[list[str]]:
    names = hostile_names(str(root / "PWNED"))
    assert len(names) >= 200
    cases = [names[i:i + NAMES_PER_CASE] for i in range(0, len(names), NAMES_PER_CASE)]
    cases[-1] = (cases[-1] + names)[:NAMES_PER_CASE]
    return cases


def _plan_and_export(root: Path, index: int, names: list[str], target: str, profile: str | None
                     ) -> tuple[Path, list[str]] | str:
    models = root / "models" / f"{target}-{index}"
    models.mkdir(parents=True)
    path = models / f"{file_stem(names[13])}.onnx"
    nodes, _ = _model(path, names)
    pins = {nodes[3] or "Conv_3": "fp16"}
    planned = optimize(str(path), target, PlanRequest(time_limit_s=10, precision_pins=pins), profile_path=profile)
    plan_dir = root / "plans" / f"{target}-{index}"
    write_plan_files(planned, plan_dir)
    out = root / "out" / f"{target}-{index}"
    try:  # TensorRT 10 and 11 builds alternate (11: Cast and Q/DQ tensors named after the hostile ones)
        export_plan(plan_dir / "plan.json", out, tensorrt="11" if index % 2 else None)
    except EdgeplanError as exc:
        return exc.one_line()
    return out, nodes


def _outside(before: set[str], after: set[str], allowed: list[Path]) -> list[str]:
    prefixes = tuple(str(p) + os.sep for p in allowed)
    return sorted(p for p in after - before if not p.startswith(prefixes) and p not in map(str, allowed))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Plans and exports every case for a DLA target and an RKNN target, then runs every script."""
    root = tmp_path_factory.mktemp("hostile-names")
    stub_dir = root / "stubs"
    env = stubs.install(stub_dir)
    profile = root / "favour.toml"
    profile.write_text(FAVOUR_DLA)
    cases = _cases(root)
    cwd = root / "cwd"
    cwd.mkdir()
    before = stubs.snapshot(root)
    outputs: dict[str, list[tuple[Path, list[str]]]] = {"orin-agx": [], "rk3588": []}
    refused: list[str] = []
    for index, names in enumerate(cases):
        for target in outputs:
            rotated = names[index % 3:] + names[:index % 3]  # a name is a node in one case, a tensor in another
            result = _plan_and_export(root, index, rotated, target, str(profile) if target == "orin-agx" else None)
            if isinstance(result, str):
                refused.append(result)
            else:
                outputs[target].append(result)
    planned = stubs.snapshot(root)
    dla = [out for out, _ in outputs["orin-agx"]]
    shell = stubs.run_shell_scripts([out / "build.sh" for out in dla], env, cwd)
    single = stubs.run_shell_scripts([out / "build.sh" for out in dla], env, cwd, {"SINGLE_ENGINE": "1"})
    calibrated = [out for out in dla if (out / "calibrate_qdq.py").exists()]
    for out in calibrated:  # TensorRT 11 exports: their INT8 scales set from one sample, as a user would
        np.save(out / "sample.npy", np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16)).astype(np.float32))
        (out / "samples.txt").write_text("sample.npy\n")
    python = stubs.run_python_scripts([out / "build_trt.py" for out in dla]
                                      + [out / "calibrate_qdq.py" for out in calibrated]
                                      + [out / "convert.py" for out, _ in outputs["rk3588"]], env, cwd, stub_dir)
    after = stubs.snapshot(root)
    return {"root": root, "cases": cases, "outputs": outputs, "refused": refused, "before": before,
            "planned": planned, "after": after, "shell": shell, "single": single, "python": python,
            "calls": stubs.calls(stub_dir), "stub_dir": stub_dir}


def test_the_corpus_is_large_and_almost_every_case_exports(corpus):
    names = sum(len(c) for c in corpus["cases"])
    assert names >= 200
    exported = len(corpus["outputs"]["orin-agx"]) + len(corpus["outputs"]["rk3588"])
    # names are data: every case goes all the way, except node names holding NUL on a TensorRT target
    # (no command line can carry them), refused in one line
    assert all(r.count("\n") == 0 and "NUL byte cannot reach trtexec" in r for r in corpus["refused"]), corpus["refused"]
    with_nul = sum(any("\0" in n for n in case[:6] + case[-2:]) for case in corpus["cases"])
    assert exported >= 2 * len(corpus["cases"]) - with_nul - 2


def test_both_tensorrt_majors_are_exported_and_typed_models_check(corpus):
    """Odd cases build for TensorRT 11: their Cast and Q/DQ tensors are named after the hostile names."""
    outs = [out for out, _ in corpus["outputs"]["orin-agx"]]
    majors = {out: json.loads((out / "manifest.json").read_text())["tensorrt"] for out in outs}
    assert set(majors.values()) == {"10", "11"}
    for out, major in majors.items():
        if major == "11":
            for path in out.glob("*.onnx"):
                onnx.checker.check_model(onnx.load(path, load_external_data=False))


def test_no_injected_command_ran(corpus):
    root = corpus["root"]
    assert not (root / "PWNED").exists()
    assert not any(Path(p).name == "PWNED" for p in corpus["after"])
    assert corpus["shell"].returncode == 0 and "FAILED" not in corpus["shell"].stderr, corpus["shell"].stderr[-2000:]
    assert corpus["single"].returncode == 0 and "FAILED" not in corpus["single"].stderr, corpus["single"].stderr[-2000:]
    assert all(status == "ok" for _, status in corpus["python"]), [r for r in corpus["python"] if r[1] != "ok"][:3]
    tools = {c["tool"] for c in corpus["calls"]}
    assert tools == {"trtexec", "tensorrt", "rknn"}


def test_nothing_is_written_outside_the_out_dirs(corpus):
    root = corpus["root"]
    allowed = [root / "models", root / "plans", root / "out", corpus["stub_dir"]]
    assert _outside(corpus["before"], corpus["planned"], allowed) == []
    # the scripts write only into their own export folder (engines, rknn files); the cwd stays empty
    assert _outside(corpus["planned"], corpus["after"], [root / "out", corpus["stub_dir"]]) == []
    assert list((root / "cwd").iterdir()) == []


def test_every_word_reaches_trtexec_intact(corpus):
    """Each engine command names its own sub-model and engine file, and every node name arrives as it
    is in the model, inside one argv word."""
    runs = [c for c in corpus["calls"] if c["tool"] == "trtexec"]
    dla = corpus["outputs"]["orin-agx"]
    singles = [r for r in runs if any(a.startswith("--saveEngine=model_single") for a in r["argv"])]
    assert len(singles) == len(dla)
    for run in runs:
        onnx_arg = next(a for a in run["argv"] if a.startswith("--onnx="))[len("--onnx="):]
        assert (Path(run["cwd"]) / onnx_arg).is_file(), onnx_arg
        engine = next(a for a in run["argv"] if a.startswith("--saveEngine="))[len("--saveEngine="):]
        assert "/" not in engine and not engine.startswith(".")
    for run, (out, nodes) in zip(singles, dla):
        assert run["cwd"] == str(out)
        devices = next(a for a in run["argv"] if a.startswith("--layerDeviceTypes="))[len("--layerDeviceTypes="):]
        for node in nodes:
            if node:
                assert f"{node}:" in devices


def test_builder_api_and_rknn_get_the_real_names(corpus):
    tensorrt = [c for c in corpus["calls"] if c["tool"] == "tensorrt"]
    named = {name for call in tensorrt for name in call["layers"]}
    for _, nodes in corpus["outputs"]["orin-agx"]:
        assert {n for n in nodes if n} & named  # the builder saw the model's own layer names
    assert all(call["cwd"] for call in tensorrt)
    rknn = [c for c in corpus["calls"] if c["tool"] == "rknn"]
    loads = [c for c in rknn if c["call"] == "load_onnx"]
    assert len(loads) == len(corpus["outputs"]["rk3588"]) and all(c["exists"] for c in loads)
    for call in loads:
        assert Path(call["model"]).parent.parent == corpus["root"] / "out"
    assert sum(c["call"] == "export_rknn" for c in rknn) == len(loads)


CLI_SAMPLE = 6


def test_cli_sample_end_to_end(tmp_path):
    """The same through the CLI as a user runs it (a sample: each is a few processes)."""
    env = stubs.install(tmp_path / "stubs")
    cases = _cases(tmp_path)[::7][:CLI_SAMPLE]
    before = stubs.snapshot(tmp_path)
    edgeplan = [sys.executable, "-m", "optimizer"]
    exports = []
    for index, names in enumerate(cases):
        model = tmp_path / "models" / str(index) / f"{file_stem(names[13])}.onnx"
        model.parent.mkdir(parents=True)
        _model(model, names)
        target = "orin-agx" if index % 2 == 0 else "rk3576"
        plan_dir, out = tmp_path / "plans" / str(index), tmp_path / "out" / str(index)
        done = subprocess.run([*edgeplan, "optimize", str(model), "--target", target, "--out", str(plan_dir),
                               "--time-limit", "10"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        done = subprocess.run([*edgeplan, "export", str(plan_dir / "plan.json"), "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        exports.append((target, out))
    shell = stubs.run_shell_scripts([o / "build.sh" for t, o in exports if t == "orin-agx"], env, tmp_path)
    assert shell.returncode == 0 and "FAILED" not in shell.stderr, shell.stderr
    results = stubs.run_python_scripts([o / ("build_trt.py" if t == "orin-agx" else "convert.py") for t, o in exports],
                                       env, tmp_path, tmp_path / "stubs")
    assert all(status == "ok" for _, status in results), results
    after = stubs.snapshot(tmp_path)
    assert not (tmp_path / "PWNED").exists()
    allowed = [tmp_path / "models", tmp_path / "plans", tmp_path / "out", tmp_path / "stubs"]
    assert _outside(before, after, allowed) == []
