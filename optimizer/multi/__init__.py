"""Several models on one SoC in one plan: merge, plan with shared engines, contention, energy, budgets."""

from __future__ import annotations

import argparse

from optimizer.errors import BadInputError
from optimizer.multi._build import MERGED_NAME, MultiPlanned, optimize_multi
from optimizer.multi._evaluate import MultiBreakdown, multi_evaluate
from optimizer.multi._merge import Part, merge_models, part_of
from optimizer.multi._summary import multi_summary
from optimizer.solver._multi import MULTI_ONLY, MultiRequest


def _pairs(values: list[str] | None, flag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for value in values or []:
        name, sep, number = value.rpartition("=")
        try:
            out[name] = float(number)
        except ValueError:
            name = ""
        if not sep or not name:
            raise BadInputError(f"{flag} '{value}' must look like NAME=NUMBER (NAME: a model's file stem)")
    return out


def wants_multi(args: argparse.Namespace) -> bool:
    """Several models, a multi-only objective, a GPU budget or per-model caps take the multi-model planner."""
    return (len(args.model) > 1 or args.objective in MULTI_ONLY or args.gpu_budget is not None
            or bool(args.rate) or bool(args.weight) or args.makespan_cap is not None
            or any("=" in v for v in args.latency_cap or []))


def multi_request(args: argparse.Namespace) -> MultiRequest:
    caps = [v for v in args.latency_cap or [] if "=" in v]
    plain = [v for v in args.latency_cap or [] if "=" not in v]
    cap = args.makespan_cap
    if plain:
        if len(args.model) > 1 or len(plain) > 1:
            raise BadInputError("--latency-cap MS caps one model; with several use NAME=MS or --makespan-cap MS")
        try:
            cap = float(plain[0])
        except ValueError:
            raise BadInputError(f"--latency-cap takes milliseconds, got '{plain[0]}'") from None
    objective = args.objective or "makespan"
    if objective == "latency" and len(args.model) == 1:
        objective = "makespan"  # one model: its makespan is its latency
    if objective in ("latency", "dual-stream"):
        raise BadInputError(f"--objective {objective} plans one model; several models take makespan, throughput, "
                            "weighted or energy")
    return MultiRequest(objective=objective, rates=_pairs(args.rate, "--rate"),
                        latency_caps=_pairs(caps, "--latency-cap"), weights=_pairs(args.weight, "--weight"),
                        cap_ms=cap, gpu_budget=args.gpu_budget, contention=not args.no_contention)


__all__ = ["MERGED_NAME", "MultiBreakdown", "MultiPlanned", "MultiRequest", "Part", "merge_models",
           "multi_evaluate", "multi_request", "multi_summary", "optimize_multi", "part_of", "wants_multi"]
