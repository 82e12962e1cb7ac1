"""The CP-SAT planner: decisions per layer group under every catalog rule, explained when infeasible."""

from optimizer.solver._cpsat import Choice, PlanModel, SolveResult
from optimizer.solver._request import OBJECTIVES, PIN_DEVICES, PlanRequest, parse_assignments

__all__ = ["OBJECTIVES", "PIN_DEVICES", "Choice", "PlanModel", "PlanRequest", "SolveResult", "parse_assignments"]
