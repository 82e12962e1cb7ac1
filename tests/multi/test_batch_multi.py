"""Groups of models in `edgeplan batch`: one job plans a group together on a target; the row says honestly what
the plan is; resume by content and request; the CLI as a user runs it."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer.batch import run_batch
from optimizer.batch_multi import MultiOptions
from optimizer.catalog import load_catalog
from optimizer.errors import BadInputError
from optimizer.multi import optimize_multi
from optimizer.plan import validate_plan
from optimizer.solver import PlanRequest
from tests.multi.test_multi_solver import BALANCED, big_chain

CATALOG = load_catalog()


@pytest.fixture
def models(tmp_path: Path) -> tuple[Path, Path, Path]:
    profile = tmp_path / "balanced.toml"
    profile.write_text(BALANCED)
    return big_chain(tmp_path / "a.onnx", "CXC"), big_chain(tmp_path / "b.onnx", "CC"), profile


def _rows(out: Path) -> dict[str, dict[str, str]]:
    return {r["group"] or Path(r["model"]).stem: r for r in csv.DictReader((out / "summary.csv").open())}


def test_cli_batch_plans_a_group_together_beside_a_single_model(models, tmp_path):
    a, b, profile = models
    out = tmp_path / "runs"
    argv = [sys.executable, "-m", "optimizer", "batch", str(a), "--group", f"{a},{b}", "--target", "orin-agx",
            "--out", str(out), "--profile", str(profile), "--objective", "throughput", "--rate", "a=1000",
            "--rate", "b=1000", "--time-limit", "10"]
    run = subprocess.run(argv, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "2 jobs, 2 ok" in run.stdout
    rows = _rows(out)
    group = rows["a+b"]
    assert group["status"] == "ok" and group["models"] == "2" and group["model"] == f"{a} + {b}"
    assert group["objective"] == "throughput" and group["objective_unit"] == "utilisation"
    assert group["meets_request"] == "True" and group["solver_status"] == "OPTIMAL" and group["note"] == ""
    assert float(group["speedup"]) >= 1.0  # never worse than the best baseline that meets the rates
    plan = json.loads((out / "a+b" / "orin-agx" / "plan.json").read_text())
    assert [m["name"] for m in plan["models"]] == ["a", "b"]
    assert [m["rate_fps"] for m in plan["models"]] == [1000, 1000]
    assert float(group["objective_value"]) == plan["solver"]["objective_ms"] <= 1.0
    assert validate_plan(plan, CATALOG, str(out / "a+b" / "orin-agx" / "models.onnx")) == []
    assert rows["a"]["objective"] == "" and rows["a"]["status"] == "ok"  # the single model keeps its own planner
    exported = subprocess.run([sys.executable, "-m", "optimizer", "export", str(out / "a+b" / "orin-agx" / "plan.json"),
                               "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    again = subprocess.run(argv, capture_output=True, text=True)
    assert again.returncode == 0 and "2 skipped" in again.stdout
    changed = subprocess.run([*argv[:-6], "--rate", "a=1000", "--rate", "b=2000", "--time-limit", "10"],
                             capture_output=True, text=True)
    assert changed.returncode == 0 and "1 skipped" in changed.stdout  # another request: the group is replanned


def test_group_job_equals_optimize_with_several_models(models, tmp_path):
    """A group's plan is what `optimize A B` plans (same objective value and layers); under the batch's default
    latency objective a group is planned for its makespan."""
    a, b, profile = models
    rows = run_batch([], ["orin-agx"], str(tmp_path / "out"), time_limit_s=10, profiles=[str(profile)],
                     groups=[(a, b)])
    assert rows[0]["objective"] == "makespan" and rows[0]["status"] == "ok"
    batch_plan = json.loads(Path(rows[0]["plan"]).read_text())
    direct = optimize_multi([str(a), str(b)], "orin-agx", PlanRequest(time_limit_s=10),
                            MultiOptions().request_for(("a", "b")), profile_path=str(profile)).plan
    assert batch_plan["solver"]["objective_ms"] == direct["solver"]["objective_ms"]
    assert [(x["node"], x["device"], x["precision"]) for x in batch_plan["layers"]] == \
        [(x["node"], x["device"], x["precision"]) for x in direct["layers"]]


def test_an_unmet_rate_is_an_infeasible_row_and_exit_1_the_rest_still_run(models, tmp_path):
    a, b, profile = models
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "optimizer", "batch", str(b), "--group", f"{a},{b}", "--target",
                          "orin-agx", "--out", str(out), "--profile", str(profile), "--objective", "throughput",
                          "--rate", "a=100000", "--rate", "b=100000", "--time-limit", "10"],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    rows = _rows(out)
    assert rows["a+b"]["status"] == "infeasible" and "--rate a=100000" in rows["a+b"]["error"]
    assert rows["b"]["status"] == "ok"
    assert not (out / "a+b" / "orin-agx" / "plan.json").exists()


def test_a_budget_or_energy_objective_plans_every_model_as_a_group(models, tmp_path):
    a, b, profile = models
    rows = run_batch([str(a)], ["orin-agx"], str(tmp_path / "out"), time_limit_s=10, profiles=[str(profile)],
                     groups=[(a, b)], multi=MultiOptions(objective="energy", makespan_cap=0.05))
    by = {r["group"]: r for r in rows}
    assert set(by) == {"a", "a+b"}
    for row in rows:
        assert row["status"] == "ok" and row["objective"] == "energy" and row["objective_unit"] == "mJ"
        plan = json.loads(Path(row["plan"]).read_text())
        assert plan["multi"]["period_ms"] <= 0.05 and plan["multi"]["makespan_cap_ms"] == 0.05


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"multi": MultiOptions(objective="throughput", rates=(("zz", 3.0),))}, "no model of a --group is named 'zz'"),
    ({"multi": MultiOptions(objective="throughput", rates=(("a", 3.0),))}, "every model or none"),
    ({"multi": MultiOptions(objective="dual-stream")}, "a --group takes"),
    ({"multi": MultiOptions(objective="makespan", weights=(("a", 2.0),))}, "--weight applies"),
])
def test_bad_group_requests_are_refused_before_any_job_runs(models, tmp_path, kwargs, words):
    a, b, _ = models
    with pytest.raises(BadInputError, match=words.replace("-", r"\-").replace("'", "'")):
        run_batch([str(a)], ["orin-agx"], str(tmp_path / "out"), groups=[(a, b)], **kwargs)
    assert not (tmp_path / "out").exists()


def test_cli_group_flags_are_one_line_exit_2(models, tmp_path):
    a, b, _ = models
    for extra, words in ((["--group", str(a)], "two or more ONNX files"),
                         (["--group", f"{a},{b}", "--latency-cap", "3"], "NAME=MS"),
                         ([str(a), "--rate", "a=3", "--objective", "throughput"], "give them a --group")):
        run = subprocess.run([sys.executable, "-m", "optimizer", "batch", *extra, "--target", "orin-agx", "--out",
                              str(tmp_path / "o")], capture_output=True, text=True)
        assert run.returncode == 2 and words in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert not (tmp_path / "o").exists()


def test_group_plans_are_identical_with_one_and_two_workers(models, tmp_path):
    a, b, profile = models
    for workers in (1, 2):
        run_batch([str(b)], ["orin-agx"], str(tmp_path / f"w{workers}"), workers=workers, time_limit_s=10,
                  profiles=[str(profile)], groups=[(a, b)])
    for stem in ("a+b", "b"):
        assert (tmp_path / "w1" / stem / "orin-agx" / "plan.json").read_bytes() == \
            (tmp_path / "w2" / stem / "orin-agx" / "plan.json").read_bytes()


def test_a_plan_that_is_a_baseline_or_unproven_says_so(models, tmp_path):
    """The row of a plan the solver did not prove, or that is a baseline handed over, is never a bare ok."""
    from optimizer.batch_multi import group_row

    a, b, profile = models
    mp = optimize_multi([str(a), str(b)], "orin-agx", PlanRequest(time_limit_s=10), MultiOptions().request_for(
        ("a", "b")), profile_path=str(profile))
    plan, run = json.loads(json.dumps(mp.plan)), json.loads(json.dumps(mp.planned.run))
    assert group_row(plan, run)["note"] == ""  # proven optimal: nothing to say
    best = min(plan["baselines"], key=lambda n: plan["baselines"][n]["objective"])
    plan["solver"].update(status="FEASIBLE", gap=0.25, objective_ms=plan["baselines"][best]["objective"])
    run["solver"]["outcome"] = "baseline"
    note = group_row(plan, run)["note"]
    assert f"the plan is the best baseline ({best})" in note and "not proven optimal: gap 25.0%" in note


def test_a_single_model_row_says_when_its_plan_is_not_proven(models, tmp_path):
    from dataclasses import replace

    from optimizer.batch_multi import single_notes
    from optimizer.plan import optimize

    a, _, profile = models
    rows = run_batch([str(a)], ["orin-agx"], str(tmp_path / "out"), time_limit_s=10, profiles=[str(profile)])
    assert rows[0]["solver_outcome"] == "exact" and rows[0]["note"] == "" and rows[0]["gap"] == 0.0
    plan = optimize(str(a), "orin-agx", PlanRequest(time_limit_s=10), profile_path=str(profile)).plan
    handed = replace(plan, solver=replace(plan.solver, status="FEASIBLE", outcome="baseline", gap=0.125))
    note = single_notes(handed)["note"]
    assert "the plan is the best baseline" in note and "gap 12.5%" in note
