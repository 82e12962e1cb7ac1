"""Export of replicated copies: a throughput plan that chose whole copies with a frame split exports one engine
build per copy and the split; plan -> export -> manifest gives back the plan's copies and split, each copy's
ONNX runs as the model, and copies.sh builds exactly the manifest's commands."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from optimizer.export._replicas import frames_per_cycle
from tests.multi.test_multi_solver import BALANCED, big_chain

ort = pytest.importorskip("onnxruntime")


def _plan(tmp_path: Path, pattern: str, balanced: bool = True) -> Path:
    model = big_chain(tmp_path / f"m_{pattern}.onnx", pattern)
    profile = tmp_path / "balanced.toml"
    profile.write_text(BALANCED)
    out = tmp_path / f"plan_{pattern}"
    run = subprocess.run([sys.executable, "-m", "optimizer", "optimize", str(model), "--target", "orin-agx",
                          "--objective", "throughput", *(["--profile", str(profile)] if balanced else []),
                          "--time-limit", "10", "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return out / "plan.json"


def _export(plan: Path, out: Path, *extra: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "optimizer", "export", str(plan), "--out", str(out), *extra],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads((out / "manifest.json").read_text())


def _outputs(path: Path, feed: dict) -> list:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def test_replication_round_trip(tmp_path):
    plan_path = _plan(tmp_path, "C")  # one big layer: pipelining cannot split it, copies can
    plan = json.loads(plan_path.read_text())
    rep = plan["replication"]
    assert rep["chosen"] == "replication" and "copies.sh" in rep["why"]
    out = tmp_path / "x"
    manifest = _export(plan_path, out)
    block = manifest["replication"]
    used = {c: s for c, s in rep["split"].items() if s > 1e-6}
    assert {c["copy"]: c["share"] for c in block["copies"]} == used  # the plan's split, copy for copy
    assert sum(c["frames_per_cycle"] for c in block["copies"]) == block["cycle_frames"] == 100
    assert block["fps"] == rep["fps"] and block["pipelined_fps"] == rep["pipelined_fps"]
    assert "copies.sh" in manifest["build"] and manifest["engines"]  # the pipelined plan's engines stay
    x = np.random.default_rng(0).standard_normal((1, 16, 128, 128)).astype(np.float32)
    reference = _outputs(Path(plan["model"]["path"]), {"x": x})
    script = (out / "copies.sh").read_text()
    built = [[w for w in shlex.split(line)[1:] if not w.startswith("${CALIB")] for line in script.splitlines()
             if line.startswith('"$TRTEXEC"')]
    assert [c["command"][1:] for c in block["copies"]] == built  # copies.sh builds exactly the manifest's copies
    for copy in block["copies"]:
        onnx_file = out / copy["onnx"]
        assert hashlib.sha256(onnx_file.read_bytes()).hexdigest() == plan["model"]["sha256"]
        np.testing.assert_allclose(_outputs(onnx_file, {"x": x})[0], reference[0], rtol=1e-5, atol=1e-5)
        flags = copy["command"]
        assert f"--saveEngine=copy_{copy['copy']}.engine" in flags
        if copy["copy"].startswith("dla"):
            assert f"--useDLACore={copy['copy'][3:]}" in flags and "--allowGPUFallback" in flags
        else:
            assert not any(f.startswith("--useDLACore") for f in flags)
        assert "--int8" in flags  # the plan's allowed precisions enable what TensorRT may pick
    assert (out / "copies.sh").stat().st_mode & 0o111


def test_tensorrt_11_copies_use_the_strongly_typed_model(tmp_path):
    manifest = _export(_plan(tmp_path, "C"), tmp_path / "x11", "--trt", "11")
    for copy in manifest["replication"]["copies"]:
        assert copy["onnx"].endswith("_typed.onnx") and (tmp_path / "x11" / copy["onnx"]).is_file()
        assert not {"--int8", "--fp16"} & set(copy["command"])
        assert ("--adjustForDLA" in copy["command"]) == copy["copy"].startswith("dla")


def test_a_pipelined_plan_exports_no_copies(tmp_path):
    plan_path = _plan(tmp_path, "CXC", balanced=False)  # the shipped profile: all-GPU, no copy pays
    assert json.loads(plan_path.read_text())["replication"]["chosen"] == "pipelining"
    manifest = _export(plan_path, tmp_path / "p")
    assert "replication" not in manifest and not (tmp_path / "p" / "copies.sh").exists()


def test_frames_per_cycle_keeps_the_split_in_whole_frames():
    assert frames_per_cycle({"gpu": 0.403085, "dla0": 0.298458, "dla1": 0.298458}) == {"dla0": 30, "dla1": 30,
                                                                                        "gpu": 40}
    assert frames_per_cycle({"gpu": 1.0, "dla0": 0.0}) == {"gpu": 100}
    split = {"gpu": 0.335, "dla0": 0.3325, "dla1": 0.3325}
    frames = frames_per_cycle(split, 7)
    assert sum(frames.values()) == 7 and all(abs(frames[c] - 7 * s) < 1 for c, s in split.items())
