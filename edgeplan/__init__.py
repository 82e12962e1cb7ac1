"""edgeplan's Python API: the same stages as the command line, under one import name.

    import edgeplan
    planned = edgeplan.optimize("model.onnx", "orin-agx", edgeplan.PlanRequest(objective="throughput",
                                                                                time_limit_s=10))
    edgeplan.write_plan_files(planned, pathlib.Path("plan"))
    print(planned.plan.predicted.latency_ms, planned.plan.solver.outcome)  # a typed edgeplan.Plan

Names are imported on first use, so `import edgeplan` stays cheap (Optuna loads only for studies). The
implementation lives in the `optimizer` package; these are its public entry points.
"""

from __future__ import annotations

import importlib
from typing import Any

from optimizer import __version__

_PUBLIC = {
    # model -> graph IR -> checks
    "load_model": "optimizer.ir", "parse_input_shapes": "optimizer.ir", "Graph": "optimizer.ir",
    "load_catalog": "optimizer.catalog", "Catalog": "optimizer.catalog", "Target": "optimizer.catalog",
    "check_graph": "optimizer.check", "check_json": "optimizer.check", "CheckReport": "optimizer.check",
    # planning
    "PlanRequest": "optimizer.solver", "Outcome": "optimizer.solver", "Stop": "optimizer.solver",
    "optimize": "optimizer.plan", "Planned": "optimizer.plan", "write_plan_files": "optimizer.plan",
    "validate_plan": "optimizer.plan", "baselines": "optimizer.plan", "Plan": "optimizer.plan",
    "Device": "optimizer.enums", "Precision": "optimizer.enums",
    # after the plan
    "export_plan": "optimizer.export", "read_plan": "optimizer.export",
    "suggest": "optimizer.edits", "edit": "optimizer.edits",
    "predict": "optimizer.calibrate", "Situation": "optimizer.calibrate",
    # many runs
    "run_study": "optimizer.study", "resume_study": "optimizer.study", "reproduce_study": "optimizer.study",
    "StudyOutcome": "optimizer.study", "run_batch": "optimizer.batch",
    # errors
    "EdgeplanError": "optimizer.errors", "BadInputError": "optimizer.errors", "InfeasibleError": "optimizer.errors",
}

__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'edgeplan' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
