"""Studies: seeded reproduction in a fresh process, SIGKILL and resume, artifacts."""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optimizer.errors import BadInputError
from optimizer.study import load_config, run_study
from tests.conftest import EXAMPLES
from tests.test_cli import EDGEPLAN


def _config(tmp_path: Path, n_trials: int = 6, name: str = "s", objective: str = "latency") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\nmodel = "{EXAMPLES / "resnet18.onnx"}"\ntarget = "orin-agx"\n'
                    f'objective = "{objective}"\nn_trials = {n_trials}\nseed = 7\n[search]\nsram = true\n'
                    "max_partitions = 2\n")
    return path


def test_artifacts_and_first_trial_is_the_planner(tmp_path):
    outcome = run_study(str(_config(tmp_path)), str(tmp_path / "out"))
    folder = tmp_path / "out"
    for name in ("config.toml", "manifest.json", "study.db", "trials.csv", "plan.json", "report.html"):
        assert (folder / name).is_file(), name
    rows = list(csv.DictReader((folder / "trials.csv").open()))
    assert len(rows) == 6 and [r["number"] for r in rows] == [str(i) for i in range(6)]
    assert {"number", "state", "latency_ms", "plan_sha256", "sram_bytes", "cuts"} <= set(rows[0])
    assert rows[0]["cuts"] == "0"  # trial 0 is the planner without the study's pins
    assert outcome.best_value <= outcome.baseline_value
    report = (folder / "report.html").read_text()
    assert "<svg" in report and "http://" not in report and "https://" not in report and "<script" not in report


def test_reproduce_is_byte_identical_in_a_fresh_process(tmp_path):
    run_study(str(_config(tmp_path)), str(tmp_path / "out"))
    result = subprocess.run([EDGEPLAN, "study", "reproduce", str(tmp_path / "out")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "byte-identical" in result.stdout


def test_reproduce_reports_a_difference(tmp_path):
    run_study(str(_config(tmp_path)), str(tmp_path / "out"))
    plan = tmp_path / "out" / "plan.json"
    plan.write_text(plan.read_text().replace('"objective": "latency"', '"objective": "tampered"'))
    result = subprocess.run([EDGEPLAN, "study", "reproduce", str(tmp_path / "out")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1 and "tampered" in result.stderr


def _states(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as con:
        return con.execute("select number, state from trials order by number").fetchall()


@pytest.mark.slow
def test_sigkill_mid_trial_then_resume_gives_the_exact_count(tmp_path):
    config = _config(tmp_path, n_trials=10, name="k")
    folder = tmp_path / "out"
    proc = subprocess.Popen([EDGEPLAN, "study", str(config), "--out", str(folder)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    db = folder / "study.db"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill while a trial is running, after two have finished
        time.sleep(0.05)
        if db.exists():
            try:
                states = _states(db)
            except sqlite3.Error:
                continue
            if sum(s == "COMPLETE" for _, s in states) >= 2 and any(s == "RUNNING" for _, s in states):
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(s == "RUNNING" for _, s in _states(db))
    result = subprocess.run([EDGEPLAN, "study", "resume", str(folder)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    states = _states(db)
    assert sum(s in ("COMPLETE", "PRUNED") for _, s in states) == 10
    assert sum(s == "FAIL" for _, s in states) == 1 and not any(s == "RUNNING" for _, s in states)
    assert len({n for n, _ in states}) == len(states)
    rows = list(csv.DictReader((folder / "trials.csv").open()))
    assert len(rows) == len(states)


def test_bad_configs(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmodel = "m.onnx"\ntarget = "orin-agx"\nobjective = "latency"\nn_trials = 0\nseed = 0\n')
    with pytest.raises(BadInputError, match="n_trials"):
        load_config(bad)
    bad.write_text("not toml [")
    with pytest.raises(BadInputError, match="TOML"):
        load_config(bad)
    result = subprocess.run([EDGEPLAN, "study", str(tmp_path / "missing.toml")], capture_output=True, text=True)
    assert result.returncode == 2 and "study config not found" in result.stderr


def test_shipped_example_study_config_loads():
    config = load_config(Path(__file__).resolve().parents[2] / "studies" / "yolov8n-orin.toml")
    assert config.model.is_file() and config.n_trials == 12 and sys.version_info >= (3, 10)
