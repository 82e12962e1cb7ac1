"""What a solve achieved and how much time it may spend: typed, so no caller reads error messages.

A command's `--time-limit S` sizes a deterministic budget (work counted, not seconds elapsed) that ends the
command within S seconds on a machine running at a fifth of full speed, so the same request gives the same
plan under any machine load. The wall clock only stops a run far past that (WALL_FACTOR times S and the
fixed allowance), and a plan it cut short says so (`solver.stopped_by` = "wall-limit" and a warning).
"""

from __future__ import annotations

import enum
import time

# The deterministic budget is a function of the request and the graph only (never of a clock), so the plan
# is the same under any load. Calibrated on the 2-core session machine shared by nine jobs
# (benchmarks/time_limit.py prints the rate): CP-SAT did 1.0-1.3 deterministic s per wall s when the
# machine was quiet, 0.5 with load average 3 and 0.2-0.27 with load average 9-10; everything else (check,
# latency model, baselines, building the CP-SAT model, writing) took up to 10 ms per layer group plus
# half a second. The solver gets 0.2 deterministic s per wall second of what that allowance leaves (at
# least a tenth of the limit), so a limited run fits its wall limit even at a fifth of full speed.
DETERMINISTIC_PER_SECOND = 0.2
ALLOWANCE_S = 0.5
ALLOWANCE_PER_GROUP_S = 0.01
# The wall-clock safety net: a command that reaches WALL_FACTOR times its limit and allowance runs at a
# twentieth of full speed or less, far past its deterministic budget; only then is the solver stopped on
# the clock (plans under lighter load are byte-identical to quiet ones).
WALL_FACTOR = 4.0


def deterministic_budget(time_limit_s: float, groups: int) -> float:
    """CP-SAT deterministic seconds for a whole command limited to `time_limit_s` wall seconds."""
    allowance = ALLOWANCE_S + ALLOWANCE_PER_GROUP_S * groups
    return round(DETERMINISTIC_PER_SECOND * max(time_limit_s - allowance, 0.1 * time_limit_s), 6)


def wall_cap_s(time_limit_s: float, groups: int) -> float:
    """Wall seconds after the command's start at which the solver is stopped on the clock: WALL_FACTOR times
    the limit and the allowance for the work outside the solver, so that only a run at a twentieth of full
    speed or less reaches it (tiny limits included: their allowance dominates)."""
    return WALL_FACTOR * (time_limit_s + ALLOWANCE_S + ALLOWANCE_PER_GROUP_S * groups)


class Outcome(enum.Enum):
    """EXACT: proven optimal. BEST_FOUND: a valid plan, the limit stopped the proof. BASELINE: the best
    baseline handed over (nothing found in time, or the model is too large). NOT_FOUND: nothing in time
    (the caller decides whether a baseline may stand in)."""

    EXACT = "exact"
    BEST_FOUND = "best-found"
    BASELINE = "baseline"
    NOT_FOUND = "not-found"


class Stop(enum.Enum):
    """Why the last solve ended: a proof, the deterministic budget (reproducible), or the wall clock
    (a safety net; the plan may then differ from run to run)."""

    PROVEN = "proven"
    DETERMINISTIC_LIMIT = "deterministic-limit"
    WALL_LIMIT = "wall-limit"
    NOT_RUN = "not-run"


class Budget:
    """The solver's share of one command's time limit, spent across every phase (solve, connectivity
    rounds, the throughput tie-break, the infeasibility explanation)."""

    def __init__(self, time_limit_s: float, started: float | None = None, groups: int = 0,
                 deterministic_s: float | None = None) -> None:
        self.time_limit_s = time_limit_s
        self.deterministic_s = deterministic_s if deterministic_s is not None else \
            deterministic_budget(time_limit_s, groups)
        self.deadline = (time.monotonic() if started is None else started) + wall_cap_s(time_limit_s, groups)
        self.used_s = 0.0
        self.wall_fired = False

    def deterministic_left(self) -> float:
        return max(self.deterministic_s - self.used_s, 0.0)

    def wall_left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def exhausted(self) -> bool:
        """No budget left for another solve; when the clock is the reason, the run is marked as cut by it."""
        if self.deterministic_left() <= 1e-3:
            return True
        if self.wall_left() <= 0.0:
            self.wall_fired = True
            return True
        return False

    def charge(self, deterministic_s: float, limit_s: float, finished: bool) -> Stop:
        """Count one solve's work; `finished` means it ended on a proof (optimal or infeasible)."""
        self.used_s += deterministic_s
        if finished:
            return Stop.PROVEN
        if deterministic_s < limit_s * 0.999:
            self.wall_fired = True
            return Stop.WALL_LIMIT
        return Stop.DETERMINISTIC_LIMIT

    def stop(self, last: Stop) -> Stop:
        """What ended the run as a whole: the wall clock when it cut any phase, else the last solve's reason."""
        return Stop.WALL_LIMIT if self.wall_fired else last
