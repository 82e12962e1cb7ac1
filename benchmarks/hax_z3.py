"""HaX-CoNN's scheduling model on identical inputs, in Z3 (as HaX-CoNN solves it) and in CP-SAT: the speed ratio.

HaX-CoNN's formulation (its artifact's src/z3_solver_multi_dnn.py, re-expressed, no code copied): each network
is a chain of layer-group segments; each segment runs on the GPU or the DLA; a network switches accelerator at
most once; consecutive segments on different accelerators pay a transition; two segments on one accelerator
never overlap in time; minimise the time the last segment of any network ends. The instance comes from
edgeplan's latency model: each model's layer groups in order, cut into SEGMENTS equal runs; a segment's GPU and
DLA times are its groups' fastest options there (a segment with a layer the DLA cannot run is GPU-only); the
transition is the copy of the tensors crossing the cut. All times are integer nanoseconds in both solvers, so
both optima are exact and must be equal.

    python benchmarks/hax_z3.py          (z3-solver: pip install z3-solver; the benchmark's only extra)
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SEGMENTS = 10
INF = 10**12


@dataclass(frozen=True)
class Chain:
    name: str
    gpu_ns: tuple[int, ...]
    dla_ns: tuple[int, ...]  # INF: the segment cannot run on the DLA
    transition_ns: tuple[int, ...]  # after segment i (len = segments - 1)


def chains(mp) -> list[Chain]:
    """The HaX-CoNN instance of a multi-model plan's merged graph (optimizer.multi.MultiPlanned)."""
    from optimizer.latency import group_options
    from optimizer.multi import part_of

    lm = mp.planned.model
    groups = lm.groups.groups
    out = []
    for k, part in enumerate(mp.parts):
        mine = [g for g in range(len(groups)) if part_of(groups[g].anchor, mp.parts) == k]
        size = max(1, -(-len(mine) // SEGMENTS))
        runs = [mine[i:i + size] for i in range(0, len(mine), size)]
        gpu, dla, trans = [], [], []
        where = {g: s for s, run in enumerate(runs) for g in run}
        for run in runs:
            g_ns = d_ns = 0
            for g in run:
                options = group_options(lm, g, frozenset({"int8", "fp16", "fp32"}))
                g_ns += min(lm.option_ns(groups[g], o) for o in options if o.device == "gpu")
                dla_costs = [lm.option_ns(groups[g], o) for o in options if o.device == "dla"]
                d_ns = INF if not dla_costs or d_ns >= INF else d_ns + min(dla_costs)
            gpu.append(g_ns)
            dla.append(d_ns)
        for s in range(len(runs) - 1):
            cost = 0
            for edge in lm.groups.edges:
                if edge.src >= 0 and where.get(edge.src) == s and where.get(edge.dst) == s + 1:
                    cost += lm.transfer(edge.tensor, "gpu", "dla", "fp16")[1]
            trans.append(cost)
        out.append(Chain(part.name, tuple(gpu), tuple(dla), tuple(trans)))
    return out


def solve_z3(instance: list[Chain], timeout_s: float = 600.0) -> tuple[int | None, float]:
    import z3

    started = time.monotonic()
    opt = z3.Optimize()
    opt.set("timeout", int(timeout_s * 1000))
    ends = []
    on_gpu_all = []
    for m, chain in enumerate(instance):
        n = len(chain.gpu_ns)
        on_gpu = [z3.Bool(f"gpu_{m}_{i}") for i in range(n)]
        start = [z3.Int(f"start_{m}_{i}") for i in range(n)]
        dur = [z3.If(on_gpu[i], chain.gpu_ns[i], chain.dla_ns[i]) for i in range(n)]
        for i in range(n):
            if chain.dla_ns[i] >= INF:
                opt.add(on_gpu[i])
            opt.add(start[i] >= 0)
            if i:
                switch = z3.If(on_gpu[i] != on_gpu[i - 1], chain.transition_ns[i - 1], 0)
                opt.add(start[i] >= start[i - 1] + dur[i - 1] + switch)
                later = [on_gpu[j] == on_gpu[i] for j in range(i + 1, n)]
                opt.add(z3.Implies(on_gpu[i] != on_gpu[i - 1], z3.And(later) if later else z3.BoolVal(True)))
        ends.append(start[-1] + dur[-1])
        on_gpu_all.append((on_gpu, start, dur))
    for a in range(len(instance)):
        for b in range(a + 1, len(instance)):
            ga, sa, da = on_gpu_all[a]
            gb, sb, db = on_gpu_all[b]
            for i in range(len(ga)):
                for j in range(len(gb)):
                    apart = z3.Or(sa[i] + da[i] <= sb[j], sb[j] + db[j] <= sa[i])
                    opt.add(z3.Implies(ga[i] == gb[j], apart))
    makespan = z3.Int("makespan")
    for end in ends:
        opt.add(makespan >= end)
    opt.minimize(makespan)
    result = opt.check()
    wall = time.monotonic() - started
    if result != z3.sat:
        return None, wall
    return opt.model()[makespan].as_long(), wall


def solve_cpsat(instance: list[Chain], timeout_s: float = 600.0) -> tuple[int | None, float]:
    from ortools.sat.python import cp_model

    started = time.monotonic()
    m = cp_model.CpModel()
    horizon = sum(max(g, d if d < INF else g) for c in instance for g, d in zip(c.gpu_ns, c.dla_ns)) + \
        sum(sum(c.transition_ns) for c in instance)
    engines: dict[str, list] = {"gpu": [], "dla": []}
    ends = []
    for k, chain in enumerate(instance):
        n = len(chain.gpu_ns)
        on_gpu = [m.new_bool_var(f"gpu_{k}_{i}") for i in range(n)]
        start = [m.new_int_var(0, horizon, f"start_{k}_{i}") for i in range(n)]
        end = [m.new_int_var(0, horizon, f"end_{k}_{i}") for i in range(n)]
        switches = []
        for i in range(n):
            if chain.dla_ns[i] >= INF:
                m.add(on_gpu[i] == 1)
                dla_ns = 0
            else:
                dla_ns = chain.dla_ns[i]
            engines["gpu"].append(m.new_optional_fixed_size_interval_var(start[i], chain.gpu_ns[i], on_gpu[i],
                                                                        f"g_{k}_{i}"))
            engines["dla"].append(m.new_optional_fixed_size_interval_var(start[i], dla_ns, on_gpu[i].Not(),
                                                                        f"d_{k}_{i}"))
            m.add(end[i] == start[i] + chain.gpu_ns[i]).only_enforce_if(on_gpu[i])
            m.add(end[i] == start[i] + dla_ns).only_enforce_if(on_gpu[i].Not())
            if i:
                switch = m.new_bool_var(f"switch_{k}_{i}")
                m.add(on_gpu[i] != on_gpu[i - 1]).only_enforce_if(switch)
                m.add(on_gpu[i] == on_gpu[i - 1]).only_enforce_if(switch.Not())
                m.add(start[i] >= end[i - 1] + chain.transition_ns[i - 1] * switch)
                switches.append(switch)
        if switches:
            m.add(sum(switches) <= 1)  # at most one switch of accelerator per network
        ends.append(end[-1])
    m.add_no_overlap(engines["gpu"])
    m.add_no_overlap(engines["dla"])
    makespan = m.new_int_var(0, horizon, "makespan")
    m.add_max_equality(makespan, ends)
    m.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = timeout_s
    solver.parameters.num_workers = 1
    status = solver.solve(m)
    wall = time.monotonic() - started
    if status != cp_model.OPTIMAL:
        return None, wall
    return int(solver.objective_value), wall


def main() -> int:
    from benchmarks.multi_dnn import MODELS, PAIRS
    from optimizer.multi import optimize_multi
    from optimizer.solver import PlanRequest
    from optimizer.solver._multi import MultiRequest

    print("| pair | target | segments per model | Z3 makespan ms | Z3 s | CP-SAT makespan ms | CP-SAT s | "
          "Z3 / CP-SAT |")
    print("|---|---|---|---|---|---|---|---|")
    for first, second, *_ in PAIRS:
        for target in ("xavier-agx", "orin-agx"):
            mp = optimize_multi([str(MODELS[first]), str(MODELS[second])], target,
                                PlanRequest(time_limit_s=5, deterministic_limit_s=0.01),
                                MultiRequest(objective="makespan", contention=False))
            instance = chains(mp)
            z, z_s = solve_z3(instance)
            c, c_s = solve_cpsat(instance)
            assert z is None or c is None or z == c, (z, c)
            print(f"| {first}+{second} | {target} | {'/'.join(str(len(i.gpu_ns)) for i in instance)} | "
                  f"{'-' if z is None else f'{z / 1e6:.4f}'} | {z_s:.2f} | {'-' if c is None else f'{c / 1e6:.4f}'} | "
                  f"{c_s:.2f} | {z_s / c_s:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
