"""Replication as a throughput option: whole copies of the model on the GPU and each DLA core, frames split.

JEDI's network duplication and MLPerf Offline's setup: engine copy c runs its share f_c of the frames. A GPU
copy is the all-GPU plan; a DLA copy is TensorRT's default on that core, whose fallback layers and copies
load the GPU too. With G_c and D_c the GPU and DLA time of one frame on copy c, the split that maximises
frames per second is the linear programme

    minimise z  subject to  sum_c f_c G_c <= z,  f_c D_c <= z (each DLA core),  sum_c f_c = 1,  f >= 0

(scipy's HiGHS). Its cycle z is compared with the pipelined plan's busiest engine: the plan says which wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from optimizer.latency import LatencyModel, Placement, evaluate
from optimizer.plan._baselines import ALL, gpu_only, trt_default


@dataclass(frozen=True)
class Replication:
    split: Mapping[str, float]  # copy -> share of the frames
    cycle_ns: float  # busiest engine per frame, frames split as above
    copies: Mapping[str, Mapping[str, int]]  # copy -> engine -> ns per frame

    @property
    def fps(self) -> float:
        return 1e9 / self.cycle_ns if self.cycle_ns else 0.0


def _copy_on(trt: tuple[Placement, ...], core: int) -> tuple[Placement, ...]:
    return tuple(Placement(p.option, core=core, loadable=p.loadable) if p.option.device == "dla" else p for p in trt)


def replication(lm: LatencyModel, limit: int, allowed: frozenset[str] = ALL) -> Replication | None:
    """The best frame split over whole copies, or None on targets without a DLA."""
    if not lm.backend.cores_are_engines or not lm.target.cores:
        return None
    from scipy.optimize import linprog

    copies: dict[str, Mapping[str, int]] = {"gpu": dict(evaluate(lm, gpu_only(lm, allowed)).busy_ns)}
    trt = trt_default(lm, limit, allowed)
    for core in range(lm.target.cores):
        copies[f"dla{core}"] = dict(evaluate(lm, _copy_on(trt, core), True).busy_ns)
    names = sorted(copies)
    engines = sorted({e for busy in copies.values() for e in busy})
    n = len(names)
    cost = [0.0] * n + [1.0]
    upper = [[float(copies[c].get(e, 0)) for c in names] + [-1.0] for e in engines]
    result = linprog(cost, A_ub=upper, b_ub=[0.0] * len(engines), A_eq=[[1.0] * n + [0.0]], b_eq=[1.0],
                     bounds=[(0, 1)] * n + [(0, None)], method="highs")
    if not result.success:
        return None
    split = {c: round(float(f), 6) for c, f in zip(names, result.x[:n])}
    cycle = max(sum(split[c] * copies[c].get(e, 0) for c in names) for e in engines)
    return Replication(split=split, cycle_ns=cycle, copies=copies)


def replication_json(rep: Replication | None, pipelined_cycle_ns: int) -> dict[str, Any] | None:
    """plan.json `replication`: the split, its fps, the pipelined plan's fps, and which the plan recommends."""
    if rep is None:
        return None
    pipelined = 1e9 / pipelined_cycle_ns if pipelined_cycle_ns else 0.0
    chosen = "replication" if rep.fps > pipelined * (1 + 1e-9) else "pipelining"
    used = {c: s for c, s in rep.split.items() if s > 1e-6}
    why = (f"whole copies on {', '.join(sorted(used))} with frames split "
           + ", ".join(f"{c} {s:.0%}" for c, s in sorted(used.items()))
           + f" give {rep.fps:.1f} fps against {pipelined:.1f} fps pipelined: "
           + ("replicate (build each copy as its own engine; export writes the pipelined plan only)"
              if chosen == "replication" else "the pipelined plan is faster"))
    return {"split": dict(rep.split), "fps": round(rep.fps, 3), "cycle_ms": round(rep.cycle_ns / 1e6, 6),
            "pipelined_fps": round(pipelined, 3), "chosen": chosen, "why": why,
            "copies_ms": {c: {e: round(ns / 1e6, 6) for e, ns in sorted(b.items())} for c, b in rep.copies.items()}}
