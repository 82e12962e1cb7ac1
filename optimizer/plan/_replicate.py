"""Replication as a throughput option: whole copies of the model on the GPU and each DLA core, frames split.

JEDI's network duplication and MLPerf Offline's setup: engine copy c runs its share f_c of the frames. A GPU
copy is the all-GPU plan; a DLA copy is TensorRT's default on that core, whose fallback layers and copies
load the GPU too. With G_c and D_c the GPU and DLA time of one frame on copy c, the split that maximises
frames per second is the linear programme

    minimise z  subject to  sum_c f_c G_c <= z,  f_c D_c <= z (each DLA core),  sum_c f_c = 1,  f >= 0

(scipy's HiGHS). Its cycle z is compared with the pipelined plan's busiest engine: the plan says which wins.
Both run their engines at once, so both are also scored with shared-DRAM contention (PCCS, the multi-model
planner's form, optimizer/latency/_contention.py): each engine's time grows by the step its co-runners' DRAM
throughput reaches, their bytes spread over the cycle's compute time; the choice is made on those figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.latency import LatencyModel, Placement, evaluate
from optimizer.latency._contention import MILLI, engine_kind, extra_milli
from optimizer.plan._baselines import ALL, gpu_only, trt_default


@dataclass(frozen=True)
class Replication:
    split: Mapping[str, float]  # copy -> share of the frames
    cycle_ns: float  # busiest engine per frame, frames split as above
    copies: Mapping[str, Mapping[str, int]]  # copy -> engine -> ns per frame
    contended_ns: float = 0.0  # the same cycle with shared-DRAM contention between the engines

    @property
    def fps(self) -> float:
        return 1e9 / self.cycle_ns if self.cycle_ns else 0.0


@dataclass(frozen=True)
class EngineUse:
    """One frame of one copy (or of the pipelined plan): per engine its busy time, its layer groups' compute
    time, and the DRAM bytes its groups move (weights and activations, as the multi-model planner counts)."""

    busy: Mapping[str, float]
    compute: Mapping[str, float]
    dram: Mapping[str, float]


def engine_use(lm: LatencyModel, placements: tuple[Placement, ...], default_formats: bool = False) -> EngineUse:
    b = evaluate(lm, placements, default_formats)
    compute: dict[str, float] = {}
    dram: dict[str, float] = {}
    for group, p, ns in zip(lm.groups.groups, placements, b.group_ns):
        compute[p.device] = compute.get(p.device, 0.0) + ns
        work = lm.work(group, p.option)
        dram[p.device] = dram.get(p.device, 0.0) + round(work.weight_bytes + work.act_bytes)
    return EngineUse(busy={e: float(v) for e, v in b.busy_ns.items()}, compute=compute, dram=dram)


def contended_cycle_ns(lm: LatencyModel, uses: Sequence[tuple[float, EngineUse]]) -> float:
    """The busiest engine per frame with PCCS contention, frames shared as given: engine e slows by the step
    that x_e (percent of the DRAM peak: the other engines' bytes over the cycle's compute time) reaches."""
    engines = sorted({e for _, use in uses for e in use.busy})
    load = {e: sum(share * use.busy.get(e, 0.0) for share, use in uses) for e in engines}
    compute = {e: sum(share * use.compute.get(e, 0.0) for share, use in uses) for e in engines}
    dram = {e: sum(share * use.dram.get(e, 0.0) for share, use in uses) for e in engines}
    free = max(compute.values(), default=0.0)
    out = []
    for e in engines:
        others = sum(v for f, v in dram.items() if f != e)
        x = 100.0 * others / (lm.bandwidth * free * 1e-9) if free else 0.0
        out.append(load[e] * (1 + extra_milli(engine_kind(e), math.floor(x + 1e-9)) / MILLI))
    return max(out, default=0.0)


def _copy_on(trt: tuple[Placement, ...], core: int) -> tuple[Placement, ...]:
    return tuple(Placement(p.option, core=core, loadable=p.loadable) if p.option.device == "dla" else p for p in trt)


def replication(lm: LatencyModel, limit: int, allowed: frozenset[str] = ALL) -> Replication | None:
    """The best frame split over whole copies, or None on targets without a DLA."""
    if not lm.backend.cores_are_engines or not lm.target.cores:
        return None
    from scipy.optimize import linprog

    gpu = gpu_only(lm, allowed)
    copies: dict[str, Mapping[str, int]] = {"gpu": dict(evaluate(lm, gpu).busy_ns)}
    uses = {"gpu": engine_use(lm, gpu)}
    trt = trt_default(lm, limit, allowed)
    for core in range(lm.target.cores):
        copies[f"dla{core}"] = dict(evaluate(lm, _copy_on(trt, core), True).busy_ns)
        uses[f"dla{core}"] = engine_use(lm, _copy_on(trt, core), True)
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
    contended = contended_cycle_ns(lm, [(split[c], uses[c]) for c in names])
    return Replication(split=split, cycle_ns=cycle, copies=copies, contended_ns=contended)


def replication_json(rep: Replication | None, pipelined_cycle_ns: int, pipelined_contended_ns: float = 0.0
                     ) -> dict[str, Any] | None:
    """plan.json `replication`: the split, its fps, the pipelined plan's fps, both with contention, and which
    the plan recommends (on the contended figures when both have them)."""
    if rep is None:
        return None
    pipelined = 1e9 / pipelined_cycle_ns if pipelined_cycle_ns else 0.0
    contended = rep.contended_ns > 0 and pipelined_contended_ns > 0
    mine = 1e9 / rep.contended_ns if contended else rep.fps
    theirs = 1e9 / pipelined_contended_ns if contended else pipelined
    chosen = "replication" if mine > theirs * (1 + 1e-9) else "pipelining"
    used = {c: s for c, s in rep.split.items() if s > 1e-6}
    why = (f"whole copies on {', '.join(sorted(used))} with frames split "
           + ", ".join(f"{c} {s:.0%}" for c, s in sorted(used.items()))
           + f" give {rep.fps:.1f} fps against {pipelined:.1f} fps pipelined"
           + (f" ({mine:.1f} against {theirs:.1f} with shared-DRAM contention)" if contended else "") + ": "
           + ("replicate (build each copy as its own engine: edgeplan export writes copies.sh and the split)"
              if chosen == "replication" else "the pipelined plan is faster"))
    out = {"split": dict(rep.split), "fps": round(rep.fps, 3), "cycle_ms": round(rep.cycle_ns / 1e6, 6),
           "pipelined_fps": round(pipelined, 3), "chosen": chosen, "why": why,
           "copies_ms": {c: {e: round(ns / 1e6, 6) for e, ns in sorted(b.items())} for c, b in rep.copies.items()}}
    if contended:
        out.update(fps_with_contention=round(mine, 3), pipelined_fps_with_contention=round(theirs, 3))
    return out
