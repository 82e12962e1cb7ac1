"""The CP-SAT planner: decisions per layer group under every catalog rule, explained when infeasible."""

from optimizer.solver._bounds import LP_MAX_GROUPS, cheapest_bound_ns, lower_bound_ns, lp_bound_ns, throughput_lp_ns
from optimizer.solver._corebound import core_bound_ns
from optimizer.solver._cpsat import Choice, PlanModel, SolveResult, loadable_limit
from optimizer.solver._cutbound import region_bound_ns
from optimizer.solver._decompose import decomposed_solve
from optimizer.solver._hints import INTERVAL_MAX_GROUPS, balanced_hint, border_descent, interval_hint
from optimizer.solver._outcome import DETERMINISTIC_PER_SECOND, WALL_FACTOR, Budget, Outcome, Stop, wall_cap_s
from optimizer.solver._request import (
    DUAL_STREAMS,
    OBJECTIVES,
    PIN_DEVICES,
    PlanRequest,
    check_target,
    parse_assignments,
)

__all__ = [
    "DETERMINISTIC_PER_SECOND",
    "DUAL_STREAMS",
    "INTERVAL_MAX_GROUPS",
    "LP_MAX_GROUPS",
    "OBJECTIVES",
    "PIN_DEVICES",
    "WALL_FACTOR",
    "Budget",
    "Choice",
    "Outcome",
    "PlanModel",
    "PlanRequest",
    "SolveResult",
    "Stop",
    "balanced_hint",
    "border_descent",
    "cheapest_bound_ns",
    "check_target",
    "core_bound_ns",
    "decomposed_solve",
    "interval_hint",
    "loadable_limit",
    "lower_bound_ns",
    "lp_bound_ns",
    "parse_assignments",
    "region_bound_ns",
    "throughput_lp_ns",
    "wall_cap_s",
]
