"""--time-limit is wall-clock seconds for the whole command; the plan depends on deterministic work only."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
from pathlib import Path

import pytest
from onnx import helper

from optimizer.plan import optimize
from optimizer.solver import Budget, Outcome, PlanRequest, Stop
from optimizer.solver._outcome import DETERMINISTIC_PER_SECOND, deterministic_budget
from tests.conftest import EXAMPLES, save_model, value, weight
from tests.test_cli import EDGEPLAN

YOLO = EXAMPLES / "yolov8n.onnx"


def _spin() -> None:
    while True:
        pass


def _optimize(out: Path, *extra: str, model: Path = YOLO, objective: str = "throughput"
              ) -> subprocess.CompletedProcess:
    return subprocess.run([EDGEPLAN, "optimize", str(model), "--target", "xavier-agx", "--objective", objective,
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=300)


def _long_chain(tmp_path: Path) -> Path:
    nodes, src = [], "x"
    for i in range(400):
        dst = "y" if i == 399 else f"t{i}"
        nodes.append(helper.make_node("Conv" if i % 2 == 0 else "Exp", [src, "w"] if i % 2 == 0 else [src], [dst],
                                      name=f"n{i}", **({"kernel_shape": [1, 1]} if i % 2 == 0 else {})))
        src = dst
    return save_model(tmp_path / "long.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)],
                      [weight("w", [8, 8, 1, 1])])


@pytest.mark.slow
def test_the_same_limited_request_gives_the_same_plan_with_busy_cores(tmp_path):
    """The deterministic limit binds (the plan is not proven) in both runs; busy loops on every core slow the
    second run several times over, and the plan must not change by a byte."""
    args = ("--time-limit", "40", "--deterministic-limit", "1.5")
    quiet = _optimize(tmp_path / "quiet", *args)
    assert quiet.returncode == 0, quiet.stderr
    spinners = [multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
                for _ in range(os.cpu_count() or 2)]
    for spinner in spinners:
        spinner.start()
    try:
        busy = _optimize(tmp_path / "busy", *args)
    finally:
        for spinner in spinners:
            spinner.kill()
    assert busy.returncode == 0, busy.stderr
    for folder in ("quiet", "busy"):
        solver = json.loads((tmp_path / folder / "run.json").read_text())["solver"]
        assert (solver["outcome"], solver["stopped_by"], solver["wall_limit_fired"]) == \
            ("best-found", "deterministic-limit", False), (folder, solver)
    assert (tmp_path / "quiet" / "plan.json").read_bytes() == (tmp_path / "busy" / "plan.json").read_bytes()


@pytest.mark.parametrize("objective", ["throughput", "dual-stream"])
def test_a_tiny_limit_falls_back_to_the_best_baseline_for_every_objective(tmp_path, objective):
    result = _optimize(tmp_path / "out", "--time-limit", "0.01", model=_long_chain(tmp_path), objective=objective)
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["solver"]["outcome"] == "baseline" and 0.0 < plan["solver"]["gap"] < 1.0  # the bound gives a real gap
    assert any("best baseline" in w for w in plan["warnings"])
    assert "warning: no plan found within --time-limit 0.01 s" in result.stdout


def test_the_printed_objective_is_the_written_plans(tmp_path):
    result = _optimize(tmp_path / "out", "--time-limit", "3")
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert f"{plan['solver']['objective_ms']:.3f} ms objective" in result.stdout
    assert plan["solver"]["objective_ms"] == plan["predicted"]["busiest_engine_ms"]
    assert plan["solver"]["bound_ms"] <= plan["solver"]["objective_ms"]


def test_the_wall_clock_safety_net_reports_itself(tmp_path):
    """A deterministic budget far beyond the wall limit: the wall clock stops the solver, and the plan says
    it may then differ from run to run."""
    planned = optimize(str(YOLO), "xavier-agx", PlanRequest(objective="throughput", time_limit_s=1.5,
                                                            deterministic_limit_s=1000.0))
    assert planned.run["solver"]["wall_limit_fired"] and planned.run["solver"]["stopped_by"] == "wall-limit"
    assert any("wall-clock limit" in w for w in planned.plan.warnings)


def test_the_whole_call_counts_against_the_limit(tmp_path):
    """Time already spent before optimize() (the CLI's start) leaves the solver nothing: baseline, not a hang."""
    import time
    planned = optimize(str(_long_chain(tmp_path)), "orin-agx",  # throughput: the cheapest-option bound proves nothing
                       PlanRequest(objective="throughput", time_limit_s=5, deterministic_limit_s=50),
                       started=time.monotonic() - 5)
    assert planned.plan.solver.outcome == "baseline"
    assert planned.run["solver"]["wall_limit_fired"]


def test_budget_arithmetic():
    assert deterministic_budget(60, 0) == pytest.approx(DETERMINISTIC_PER_SECOND * 59.5)
    assert deterministic_budget(1, 1000) == pytest.approx(DETERMINISTIC_PER_SECOND * 0.1)  # >= a tenth of it
    budget = Budget(10, groups=0)
    assert budget.charge(2.0, 4.75, finished=True) is Stop.PROVEN
    assert budget.charge(2.75, 2.75, finished=False) is Stop.DETERMINISTIC_LIMIT and not budget.wall_fired
    assert budget.deterministic_left() == 0.0 and budget.exhausted()
    assert Budget(10).charge(0.1, 4.0, finished=False) is Stop.WALL_LIMIT
    assert Outcome("best-found") is Outcome.BEST_FOUND
