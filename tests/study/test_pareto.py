"""Multi-objective (Pareto) studies: a stored front of distinct plans, reproducible byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from optimizer.catalog import load_catalog
from optimizer.plan import validate_plan
from optimizer.study._pareto import reproduce_pareto, run_pareto_study

REPO = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, budgets: str = "[1.0, 0.4]", trials: int = 3) -> Path:
    config = tmp_path / "pair.toml"
    config.write_text(f'''name = "pair"
models = ["{REPO / 'examples' / 'resnet18.onnx'}"]
target = "orin-agx"
objectives = ["latency_ms", "energy_mj", "gpu_share"]
n_trials = {trials}
seed = 0
time_limit = 2
[search]
gpu_budgets = {budgets}
planner_objectives = ["makespan", "energy"]
''')
    return config


def test_front_keeps_distinct_plans_each_valid_and_a_budget_moves_work_to_the_dla(tmp_path):
    outcome = run_pareto_study(str(_config(tmp_path)), str(tmp_path / "out"))
    front = json.loads((outcome.folder / "front.json").read_text())
    assert len(front["points"]) >= 2
    shas = [p["plan_sha256"] for p in front["points"]]
    assert len(set(shas)) == len(shas)
    trade_offs = [tuple(p["values"].values()) for p in front["points"]]
    assert len(set(trade_offs)) == len(trade_offs), "a mirror plan (other DLA core, same figures) repeats a point"
    catalog = load_catalog()
    for point in front["points"]:
        plan = json.loads((outcome.folder / point["plan"]).read_text())
        assert validate_plan(plan, catalog, str(REPO / "examples" / "resnet18.onnx")) == []
        if point["params"]["gpu_budget"] < 1:
            assert point["values"]["gpu_share"] <= point["params"]["gpu_budget"] + 1e-9
            assert point["dla"], "a GPU budget below the planner's own GPU share must move work to the DLA"
    assert "<svg" in (outcome.folder / "report.html").read_text()


def test_reproduce_is_byte_identical_and_cli_prints_the_front(tmp_path):
    config = _config(tmp_path, "[1.0, 0.5]", 2)
    run = subprocess.run([sys.executable, "-m", "optimizer", "study", str(config), "--out", str(tmp_path / "s")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Pareto front" in run.stdout and "DLA: dla" in run.stdout
    same, diff = reproduce_pareto(str(tmp_path / "s"))
    assert same, diff


def test_a_bad_pareto_config_is_one_line_exit_2_like_any_study_config(tmp_path):
    config = _config(tmp_path)
    profile_named = config.read_text().replace('seed = 0', 'seed = 0\nprofile = "no_such_profile.toml"')
    cases = {"latin1": config.read_bytes().replace(b'"pair"', b'"p\xe9"'),
             "profile": profile_named.encode()}
    for name, content in cases.items():
        bad = tmp_path / f"{name}.toml"
        bad.write_bytes(content)
        run = subprocess.run([sys.executable, "-m", "optimizer", "study", str(bad), "--out", str(tmp_path / name)],
                             capture_output=True, text=True)
        assert run.returncode == 2, (name, run.stderr)
        assert run.stderr.count("\n") == 1 and str(bad) in run.stderr and "internal error" not in run.stderr
        assert not (tmp_path / name).exists()
