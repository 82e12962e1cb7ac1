"""Targets with zero, one or two DLA cores through every command, as a user runs them.

A GPU-only and a one-DLA module are added from TOML alone (EDGEPLAN_CATALOG_DIR) and run through check,
optimize (every objective), export, predict, study and batch; the real new modules (Orin Nano, Orin NX 8GB)
plan, export and study end to end; `predict` answers for every target and precision it has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer.catalog import load_catalog
from optimizer.catalog._load import CATALOG_ENV
from optimizer.cli import main
from tests.catalog.test_targets import write_extra
from tests.conftest import ZOO, needs_zoo

MODEL = ZOO / "tv_resnet18.onnx"
EDGEPLAN = Path(sys.executable).parent / "edgeplan"


def edgeplan(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def study_config(folder: Path, target: str, objective: str = "latency") -> Path:
    config = folder / f"{target}-{objective}.toml"
    config.write_text(f'name = "s-{target}"\nmodel = "{MODEL}"\ntarget = "{target}"\nobjective = "{objective}"\n'
                      'n_trials = 2\nseed = 0\ntime_limit = 5\n[search]\nsram = true\nmax_partitions = 1\n')
    return config


@pytest.fixture
def extra(tmp_path, monkeypatch) -> Path:
    folder = write_extra(tmp_path / "extra")
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    return folder


def _end_to_end(capsys, tmp_path: Path, target: str, dla_engines: set[str]) -> None:
    code, out, _ = edgeplan(capsys, "check", MODEL, "--target", target)
    assert code == 0
    if not dla_engines:
        assert f"{target} has no DLA: every node runs on the GPU" in out
    for objective in ("latency", "throughput"):
        folder = tmp_path / f"plan-{objective}"
        code, out, err = edgeplan(capsys, "optimize", MODEL, "--target", target, "--objective", objective,
                                  "--time-limit", "10", "--out", folder)
        assert code == 0, err
        plan = json.loads((folder / "plan.json").read_text())
        devices = {layer["device"] for layer in plan["layers"]}
        assert devices - {"gpu"} <= dla_engines
        if objective == "throughput" and dla_engines:
            assert devices - {"gpu"} == dla_engines  # resnet18 is all-DLA-capable: every core is used
        if not dla_engines:
            assert plan["baselines"]["trt_default"]["latency_ms"] == plan["baselines"]["gpu_only"]["latency_ms"]
        code, out, err = edgeplan(capsys, "export", folder / "plan.json", "--out", tmp_path / f"export-{objective}")
        assert code == 0, err
        build = (tmp_path / f"export-{objective}" / "build.sh").read_text()
        assert ("--useDLACore" in build) is bool(devices - {"gpu"})
        assert "--useDLACore=1" not in build or "dla1" in dla_engines
    code, out, err = edgeplan(capsys, "optimize", MODEL, "--target", target, "--objective", "dual-stream",
                              "--out", tmp_path / "dual")
    if len(dla_engines) < 2:
        assert code == 2 and "dual-stream runs one stream per DLA core and needs 2" in err
        assert not (tmp_path / "dual").exists()
    else:
        assert code == 0, err
    code, out, err = edgeplan(capsys, "study", study_config(tmp_path, target), "--out", tmp_path / "study")
    assert code == 0, err
    assert "2 trials" in out
    best = json.loads((tmp_path / "study" / "plan.json").read_text())
    assert best["target"] == target


@needs_zoo
@pytest.mark.parametrize(("target", "engines"), [("my-gpu-only", set()), ("my-one-dla", {"dla0"})])
def test_targets_from_toml_alone_run_every_command(capsys, tmp_path, extra, target, engines):
    _end_to_end(capsys, tmp_path, target, engines)
    code, _, err = edgeplan(capsys, "predict", MODEL, "--target", target, "--accelerator", "dla",
                              "--precision", "int8", "--cores", "2")
    assert code == 2
    assert ("has no DLA: use --accelerator gpu" if not engines else "--cores must be 1..1") in err
    code, _, err = edgeplan(capsys, "optimize", MODEL, "--target", target, "--pin", "/conv1/Conv=dla1",
                              "--out", tmp_path / "pinned")
    assert code == 2 and f"--pin /conv1/Conv=dla1: {target} has" in err


@needs_zoo
@pytest.mark.parametrize(("target", "engines"), [("orin-nano-8gb", set()), ("orin-nano-super", set()),
                                                 ("orin-nx-8gb", {"dla0"})])
def test_new_modules_plan_export_and_study(capsys, tmp_path, target, engines):
    _end_to_end(capsys, tmp_path, target, engines)


@needs_zoo
def test_the_extra_folder_reaches_a_command_run_as_a_user_runs_it(tmp_path):
    env = {**os.environ, CATALOG_ENV: str(write_extra(tmp_path / "extra"))}
    listed = subprocess.run([EDGEPLAN, "targets"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.startswith("my-")}
    assert "no DLA: gpu 20 TOPS int8" in rows["my-gpu-only"] and " gpu,dla0 " in rows["my-one-dla"]
    batch = subprocess.run([EDGEPLAN, "batch", str(MODEL), "--target", "my-gpu-only", "--target", "my-one-dla",
                            "--time-limit", "5", "--out", str(tmp_path / "batch")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert batch.returncode == 0, batch.stderr
    assert "2 jobs, 2 ok" in batch.stdout + batch.stderr


def _predict_cases() -> list[tuple[str, str, str]]:
    cases = []
    for target in load_catalog().targets.values():
        for device, precisions in target.precisions.items():
            if device in ("gpu", "dla", "npu"):
                cases += [(target.id, device, p) for p in precisions]
    return cases


@needs_zoo
def test_predict_answers_for_every_target_and_precision(capsys):
    """Every target in `edgeplan targets`, every engine kind and precision it offers."""
    cases = _predict_cases()
    code, out, _ = edgeplan(capsys, "targets", "--json")
    assert {t["id"] for t in json.loads(out)["targets"]} == {c[0] for c in cases}
    for target, accelerator, precision in cases:
        code, out, err = edgeplan(capsys, "predict", MODEL, "--target", target, "--accelerator", accelerator,
                                  "--precision", precision, "--json")
        assert code == 0, (target, accelerator, precision, err)
        figure = json.loads(out)
        assert figure["latency_ms"] > 0, (target, accelerator, precision)
