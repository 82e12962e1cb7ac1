"""--time-limit sizes a deterministic budget; the plan depends on deterministic work only, the wall clock marks it."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time
from pathlib import Path

import pytest
from onnx import helper

from optimizer.fileio import dumps_json
from optimizer.plan import optimize
from optimizer.solver import WALL_FACTOR, Budget, Outcome, PlanRequest, Stop, wall_cap_s
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
def test_a_tiny_limit_falls_back_to_the_best_baseline_for_every_objective(tmp_path, favour_dla, objective):
    """With DLA favoured the bounds prove nothing, so the baseline is handed over with its real gap."""
    result = _optimize(tmp_path / "out", "--time-limit", "0.01", "--profile", favour_dla, model=_long_chain(tmp_path),
                       objective=objective)
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["solver"]["outcome"] == "baseline" and 0.0 < plan["solver"]["gap"] < 1.0  # the bound gives a real gap
    assert any("best baseline" in w for w in plan["warnings"])
    assert "warning: no plan found within --time-limit 0.01 s" in result.stdout


@pytest.mark.parametrize("objective", ["throughput", "dual-stream"])
def test_the_lp_bound_proves_a_pipelined_baseline_before_any_model(tmp_path, objective):
    """With the calibrated profile the long chain's best pipelined baseline meets the LP bound: proven
    optimal with no model built, whatever the limit."""
    result = _optimize(tmp_path / "out", "--time-limit", "0.01", model=_long_chain(tmp_path), objective=objective)
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert (plan["solver"]["outcome"], plan["solver"]["gap"]) == ("exact", 0.0)
    assert json.loads((tmp_path / "out" / "run.json").read_text())["solver"]["variables"] == 0


def test_the_printed_objective_is_the_written_plans(tmp_path):
    result = _optimize(tmp_path / "out", "--time-limit", "3")
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert f"{plan['solver']['objective_ms']:.3f} ms objective" in result.stdout
    assert plan["solver"]["objective_ms"] == plan["predicted"]["busiest_engine_ms"]
    assert plan["solver"]["bound_ms"] <= plan["solver"]["objective_ms"]


def test_the_wall_clock_safety_net_reports_itself(tmp_path):
    """A deterministic budget far beyond the wall cap: the wall clock stops the solver mid-search, and the plan
    says so in a field and a warning (it may then differ from run to run). `started` leaves about 3 s of it."""
    planned = optimize(str(YOLO), "xavier-agx", PlanRequest(objective="throughput", time_limit_s=1.5,
                                                            deterministic_limit_s=1000.0),
                       started=time.monotonic() - wall_cap_s(1.5, 0) + 3)
    assert planned.run["solver"]["wall_limit_fired"] and planned.run["solver"]["stopped_by"] == "wall-limit"
    assert planned.plan.solver.stopped_by == "wall-limit" and planned.plan.solver.outcome == "best-found"
    assert any("wall-clock safety net" in w for w in planned.plan.warnings)


def test_the_whole_call_counts_against_the_wall_cap(tmp_path, favour_dla):
    """A command already past its wall cap before optimize() (the CLI's start) leaves the solver nothing:
    baseline, marked as cut by the clock, not a hang."""
    planned = optimize(str(_long_chain(tmp_path)), "orin-agx",  # DLA favoured: the bounds prove nothing
                       PlanRequest(objective="throughput", time_limit_s=5, deterministic_limit_s=50),
                       started=time.monotonic() - wall_cap_s(5, 1000), profile_path=favour_dla)
    assert planned.plan.solver.outcome == "baseline" and planned.plan.solver.stopped_by == "wall-limit"
    assert planned.run["solver"]["wall_limit_fired"]


def test_a_slow_machine_writes_the_same_plan_and_a_far_slower_one_says_it_was_cut():
    """The clock stands in for machine load: `started` in the past is a run that spent that long before the
    solver. The limit gone three times over (a machine at a third of the speed the budget assumes, a
    twelfth of full speed) leaves plan.json byte-identical to the undisturbed run's; a run past the wall cap
    writes a plan marked as cut (solver.stopped_by and a warning), never a silently different one."""
    request = PlanRequest(objective="throughput", time_limit_s=3)
    normal = optimize(str(YOLO), "xavier-agx", request)
    assert normal.plan.solver.stopped_by == "deterministic-limit"  # the budget binds: the search is cut by work
    slow = optimize(str(YOLO), "xavier-agx", request, started=time.monotonic() - 3 * request.time_limit_s)
    assert dumps_json(slow.plan.to_json()) == dumps_json(normal.plan.to_json())
    assert not slow.run["solver"]["wall_limit_fired"]
    cut = optimize(str(YOLO), "xavier-agx", request,
                   started=time.monotonic() - wall_cap_s(request.time_limit_s, normal.plan.solver.groups))
    assert cut.plan.solver.stopped_by == "wall-limit" and cut.run["solver"]["wall_limit_fired"]
    assert any("wall-clock safety net" in w for w in cut.plan.warnings)


def test_the_wall_cap_is_far_past_the_budget():
    """At the calibrated fifth of full speed a run ends within its limit; the cap is four times further."""
    assert wall_cap_s(60, 100) == pytest.approx(WALL_FACTOR * (60 + 0.5 + 1.0))
    assert wall_cap_s(0.01, 0) > 2.0  # a tiny limit's fixed allowance dominates
    budget = Budget(10, started=time.monotonic() - wall_cap_s(10, 0) - 1)
    assert not budget.wall_fired and budget.exhausted() and budget.wall_fired  # a clock-exhausted run is marked
    assert budget.stop(Stop.DETERMINISTIC_LIMIT) is Stop.WALL_LIMIT
    assert Budget(10).stop(Stop.DETERMINISTIC_LIMIT) is Stop.DETERMINISTIC_LIMIT


def test_budget_arithmetic():
    assert deterministic_budget(60, 0) == pytest.approx(DETERMINISTIC_PER_SECOND * 59.5)
    assert deterministic_budget(1, 1000) == pytest.approx(DETERMINISTIC_PER_SECOND * 0.1)  # >= a tenth of it
    budget = Budget(10, groups=0)
    assert budget.charge(2.0, 4.75, finished=True) is Stop.PROVEN
    assert budget.charge(2.75, 2.75, finished=False) is Stop.DETERMINISTIC_LIMIT and not budget.wall_fired
    assert budget.deterministic_left() == 0.0 and budget.exhausted()
    assert Budget(10).charge(0.1, 4.0, finished=False) is Stop.WALL_LIMIT
    assert Outcome("best-found") is Outcome.BEST_FOUND
