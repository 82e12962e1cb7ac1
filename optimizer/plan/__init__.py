"""Plans: baselines, subgraphs, plan.json, run.json and the human report."""

from optimizer.plan._baselines import assign_loadables, baselines, gpu_only, npu_default, trt_default
from optimizer.plan._build import Planned, check_pool_size, optimize
from optimizer.plan._html import plan_html
from optimizer.plan._rebuild import planned_from_plan
from optimizer.plan._report import write_plan_files
from optimizer.plan._subgraphs import Subgraph, build_subgraphs
from optimizer.plan._types import PLAN_SCHEMA, Plan
from optimizer.plan._validate import validate_plan
from optimizer.plan._views import ratios

__all__ = ["PLAN_SCHEMA", "Plan", "Planned", "Subgraph", "assign_loadables", "baselines", "build_subgraphs",
           "check_pool_size", "gpu_only", "npu_default", "optimize", "plan_html", "planned_from_plan", "ratios",
           "trt_default", "validate_plan", "write_plan_files"]
