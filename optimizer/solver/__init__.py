"""The CP-SAT planner: decisions per layer group under every catalog rule, explained when infeasible."""

from optimizer.solver._cpsat import Choice, PlanModel, SolveResult
from optimizer.solver._request import (
           DUAL_STREAMS,
           OBJECTIVES,
           PIN_DEVICES,
           PlanRequest,
           check_target,
           parse_assignments,
)

__all__ = ["DUAL_STREAMS", "OBJECTIVES", "PIN_DEVICES", "Choice", "PlanModel", "PlanRequest", "SolveResult",
           "check_target", "parse_assignments"]
