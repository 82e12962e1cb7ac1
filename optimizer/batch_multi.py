"""Batch jobs that plan a group of models together on one target (optimizer/multi), beside the single-model jobs.

A group is one job: its models share the engines in one CP-SAT model under a multi-model objective (makespan,
throughput with per-model rates or caps, weighted, energy). Its folder is DIR/<stem+stem+...>/<target>/ with
plan.json and the merged models.onnx that export cuts. The row is honest about what the plan is: `status` ok
only when the written plan meets every requested rate, cap and budget (else infeasible); `solver_outcome` says
whether it is proven optimal, the solver's best or the best baseline, and `note` says why when it is not proven.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from optimizer import __version__
from optimizer.batch_job import failure, finish
from optimizer.errors import BadInputError
from optimizer.fileio import safe_name, sha256_file

MULTI_FIELDS = ("group", "models", "objective", "objective_value", "objective_unit", "baseline_objective",
                "meets_request", "contention_ms", "energy_mj", "gpu_busy_share", "solver_outcome", "gap", "note")
GROUP_OBJECTIVES = ("makespan", "throughput", "weighted", "energy")


@dataclass(frozen=True)
class MultiOptions:
    """The multi-model request of a batch, as plain picklable values (a worker builds its MultiRequest)."""

    objective: str = "latency"  # the batch's --objective; a group under 'latency' is planned for makespan
    rates: tuple[tuple[str, float], ...] = ()
    latency_caps: tuple[tuple[str, float], ...] = ()
    weights: tuple[tuple[str, float], ...] = ()
    gpu_budget: float | None = None
    makespan_cap: float | None = None
    contention: bool = True

    def group_objective(self) -> str:
        if self.objective == "latency":
            return "makespan"  # one frame of every model: the latency of the group
        if self.objective not in GROUP_OBJECTIVES:
            raise BadInputError(f"--objective {self.objective} plans one model; a --group takes "
                                f"{', '.join(GROUP_OBJECTIVES)} (latency: makespan)")
        return self.objective

    def whole_request(self) -> bool:
        """An objective or budget only the multi-model planner has: single models are planned as groups of one
        (as `edgeplan optimize` does)."""
        return self.objective in ("makespan", "weighted", "energy") or self.gpu_budget is not None \
            or self.makespan_cap is not None

    def named(self) -> set[str]:
        return {n for n, _ in (*self.rates, *self.latency_caps, *self.weights)}

    def request_for(self, names: Sequence[str]) -> Any:
        """The MultiRequest of one group: the per-model values of its own models only."""
        from optimizer.solver._multi import MultiRequest

        mine = set(names)

        def pick(values: tuple[tuple[str, float], ...]) -> dict[str, float]:
            return {n: v for n, v in values if n in mine}

        objective = self.group_objective()
        return MultiRequest(objective=objective, rates=pick(self.rates), latency_caps=pick(self.latency_caps),
                            weights=pick(self.weights), cap_ms=self.makespan_cap, gpu_budget=self.gpu_budget,
                            contention=self.contention)

    def identity(self) -> list[Any]:
        """What decides a group's plan, for its job key."""
        return [self.group_objective(), sorted(self.rates), sorted(self.latency_caps), sorted(self.weights),
                self.gpu_budget, self.makespan_cap, self.contention]


@dataclass(frozen=True)
class GroupJob:
    models: tuple[str, ...]
    target: str
    folder: str
    key: str
    time_limit_s: float
    options: MultiOptions
    profile: str | None = None
    tensorrt: str | None = None  # the TensorRT major whose DLA rules apply (None: the default)

    @property
    def model(self) -> str:
        """The summary's `model` cell: the group's files, joined by ' + '."""
        return " + ".join(self.models)

    def size(self) -> int:
        return sum(Path(m).stat().st_size for m in self.models if Path(m).is_file())


def batch_options(args: Any) -> MultiOptions:
    """The batch command's multi-model flags (NAME=VALUE pairs: NAME is a model's file stem)."""
    from optimizer.multi import _pairs

    caps = args.latency_cap or []
    plain = [c for c in caps if "=" not in c]
    if plain:
        raise BadInputError(f"--latency-cap '{plain[0]}': in a batch a cap names its model, NAME=MS")
    return MultiOptions(objective=args.objective, rates=tuple(sorted(_pairs(args.rate, "--rate").items())),
                        latency_caps=tuple(sorted(_pairs(caps, "--latency-cap").items())),
                        weights=tuple(sorted(_pairs(args.weight, "--weight").items())), gpu_budget=args.gpu_budget,
                        makespan_cap=args.makespan_cap, contention=not args.no_contention)


def parse_groups(specs: Sequence[str] | None) -> list[tuple[Path, ...]]:
    """--group A.onnx,B.onnx[,...]: two or more model files planned together."""
    groups = []
    for spec in specs or []:
        paths = tuple(Path(p.strip()) for p in spec.split(",") if p.strip())
        if len(paths) < 2:
            raise BadInputError(f"--group '{spec}' must name two or more ONNX files separated by commas")
        groups.append(paths)
    return groups


def check_options(options: MultiOptions, groups: Sequence[tuple[Path, ...]]) -> None:
    """Every bad combination is a one-line exit 2 before any job runs (a batch must not fail job by job)."""
    from optimizer.multi._merge import part_names

    if not groups:
        if options.named() or options.gpu_budget is not None or options.makespan_cap is not None:
            raise BadInputError("--rate, --latency-cap NAME=MS and --weight apply to models planned together: "
                                "give them a --group")
        return
    options.group_objective()
    named = [part_names([str(p) for p in group]) for group in groups]
    known = {n for names in named for n in names}
    for flag, values in (("--rate", options.rates), ("--latency-cap", options.latency_caps),
                         ("--weight", options.weights)):
        for name, _ in values:
            if name not in known:
                raise BadInputError(f"{flag} {name}=...: no model of a --group is named '{name}' (names: file "
                                    f"stems, {', '.join(sorted(known))})")
    for names in named:
        options.request_for(names).check_names(names)  # rates: every model of the group or none


def plan_group_jobs(groups: Sequence[tuple[Path, ...]], targets: Sequence[str], out: Path, time_limit_s: float,
                    options: MultiOptions, by_family: Mapping[str, str], taken: set[str],
                    tensorrt: str | None = None) -> list[GroupJob]:
    """One job per group and target; `taken`: folder stems already used by single-model jobs."""
    from optimizer.catalog import load_catalog
    from optimizer.multi._merge import part_names

    catalog = load_catalog()
    jobs = []
    for group in groups:
        paths = [str(p) for p in group]
        stem = safe_name("+".join(part_names(paths)))
        if stem in taken:
            stem = f"{stem}-{hashlib.sha256(json.dumps(paths).encode()).hexdigest()[:8]}"
        taken.add(stem)
        contents = [sha256_file(p) if p.is_file() else f"missing:{p}" for p in group]
        for target in targets:
            profile = by_family.get(catalog.target(target).family)
            profile_hash = sha256_file(Path(profile)) if profile else "shipped"
            key = hashlib.sha256(json.dumps(["group", contents, target, time_limit_s, options.identity(),
                                             __version__, catalog.sha256, profile_hash, tensorrt]).encode()
                                 ).hexdigest()
            jobs.append(GroupJob(tuple(paths), target, str(out / stem / target), key, time_limit_s, options,
                                 profile, tensorrt))
    return jobs


def run_group_job(job: GroupJob) -> dict[str, Any]:
    """One group on one target; never raises, the outcome is the row."""
    from optimizer.multi import MERGED_NAME, optimize_multi
    from optimizer.multi._evaluate import meets
    from optimizer.multi._merge import part_names
    from optimizer.solver import PlanRequest

    started = time.monotonic()
    folder = Path(job.folder)
    row: dict[str, Any] = {"model": job.model, "target": job.target, "status": "ok", "error": "",
                           "models": len(job.models), "group": folder.parent.name}
    files: dict[str, str | bytes] = {}
    try:
        multi = job.options.request_for(part_names(job.models))
        request = PlanRequest(time_limit_s=job.time_limit_s)
        if job.tensorrt:
            request = replace(request, tensorrt=job.tensorrt)
        planned = optimize_multi(list(job.models), job.target, request, multi,
                                 profile_path=job.profile, started=started,
                                 merged_path=MERGED_NAME)  # beside plan.json, whatever the folder
        row.update(group_row(planned.plan, planned.planned.run))
        if not meets(planned.evaluation, part_names(job.models), multi):  # never expected: the solver holds them
            row.update(status="infeasible", meets_request=False,
                       error=f"{job.model}: the plan found does not meet the request")
        row["plan"] = str(folder / "plan.json")
        files = planned.files()
    except Exception as exc:  # every failure, a library crash included, is the row's status
        row.update(failure(job.model, exc))
    return finish(job.key, row, files, folder, started)


def refusal_status(status: str, warnings: Sequence[str]) -> dict[str, str]:
    """A plan the vendor converter would refuse to build is not ok: status refused, the rule in `error`. A plan
    on unknown sizes stays needs-shapes (fixing the sizes comes first, and RKNN-STATIC is itself a refusal)."""
    from optimizer.check import REFUSAL_WARNING

    refused = [w for w in warnings if REFUSAL_WARNING in w]
    if status != "ok" or not refused:
        return {}
    return {"status": "refused", "error": "; ".join(refused)}


def single_notes(plan: Any) -> dict[str, Any]:
    """A single-model row's solver_outcome, gap and note (a typed Plan): what the plan is when it is not proven."""
    solver = plan.solver
    notes = [w for w in plan.warnings if w.startswith(("no plan found", "the solver found nothing"))]
    if solver.outcome == "baseline" and not notes:
        notes.append("the plan is the best baseline: the solver found nothing better in its budget")
    if solver.status != "OPTIMAL":
        notes.append(f"not proven optimal: gap {solver.gap:.1%} to the bound")
    return {"solver_outcome": solver.outcome, "gap": solver.gap, "note": "; ".join(notes)}


def group_row(plan: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """The summary cells of a group's plan. `baseline` is the best baseline that meets the request, on the
    plan's own objective; `speedup` is that baseline's objective over the plan's (> 1: the plan is better)."""
    from optimizer.check import size_note

    solver = plan["solver"]
    multi = plan["multi"]
    layers = [layer for layer in plan["layers"] if layer["role"] != "constant"]
    accelerated = sum(layer["device"] not in ("gpu", "cpu") for layer in layers)
    usable = {n: b for n, b in plan["baselines"].items() if b.get("meets_request", True)}
    value = float(solver["objective_ms"])
    row: dict[str, Any] = {
        "nodes": plan["model"]["num_nodes"], "groups": solver["groups"],
        "accelerator_coverage": round(accelerated / len(layers), 4) if layers else 0.0,
        "latency_ms": multi["period_ms"], "objective": plan["objective"], "objective_value": value,
        "objective_unit": solver["objective_unit"], "meets_request": True, "contention_ms": multi["contention_ms"],
        "energy_mj": plan["predicted"].get("energy_mj", ""), "gpu_busy_share": plan["predicted"].get(
            "gpu_busy_share", ""), "solver_status": solver["status"], "solver_outcome": run["solver"]["outcome"],
        "gap": solver["gap"], "solve_s": round(float(run["solver"]["wall_s"]), 3),
        "unknown_sizes": size_note(plan["unknown_sizes"]), "tensorrt_rules": plan.get("tensorrt_rules", "")}
    if usable:
        name = min(usable, key=lambda n: (usable[n]["objective"], n))
        best = usable[name]
        row.update(baseline=name, baseline_ms=best["latency_ms"], baseline_objective=best["objective"],
                   speedup=round(best["objective"] / value, 4) if value else "")
    notes = [w for w in plan["warnings"] if w.startswith(("no plan found", "the solver found nothing"))]
    if run["solver"]["outcome"] == "baseline" and not notes:
        same = sorted(n for n, b in usable.items() if b["objective"] == value)
        notes.append("the plan is the best baseline" + (f" ({same[0]})" if same else "") +
                     ": the solver found nothing better in its budget")
    if solver["status"] != "OPTIMAL":
        notes.append(f"not proven optimal: gap {solver['gap']:.1%} to the bound")
    row["note"] = "; ".join(notes)
    if plan["unknown_sizes"].get("needs_shapes"):
        row["status"] = "needs-shapes"
    row.update(refusal_status(row.get("status", "ok"), plan["warnings"]))
    return row


__all__ = ["GROUP_OBJECTIVES", "MULTI_FIELDS", "GroupJob", "MultiOptions", "batch_options", "check_options",
           "group_row", "parse_groups", "plan_group_jobs", "run_group_job", "single_notes"]
