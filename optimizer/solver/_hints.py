"""A load-balanced starting plan for the pipelined objectives, from a baseline's loadables.

The all-GPU baseline is a poor start for balancing engines, and TensorRT's default puts every loadable on
DLA0. Moving whole loadables between DLA0, DLA1 and the GPU keeps every loadable convex and connected (no
new path leaves one and re-enters it), so each step stays a valid plan; a greedy descent on the objective
the solver minimises (scored by the evaluator) gives CP-SAT a hint near a balanced pipeline.
"""

from __future__ import annotations

from collections.abc import Callable

from optimizer.latency import Breakdown, LatencyModel, Placement, evaluate, group_options


def _on_gpu(lm: LatencyModel, g: int, allowed: frozenset[str]) -> Placement | None:
    group = lm.groups.groups[g]
    options = [o for o in group_options(lm, g, allowed) if o.device == "gpu" and o.edit is None]
    return Placement(min(options, key=lambda o: (lm.option_ns(group, o), o.precision))) if options else None


def balanced_hint(lm: LatencyModel, start: tuple[Placement, ...], allowed: frozenset[str],
                  score: Callable[[Breakdown], int], cores: int) -> tuple[Placement, ...]:
    """Greedy descent over whole loadables: each move puts one loadable on another DLA core or on the GPU;
    the best improving move is taken until none improves. Deterministic (moves tried in slot order)."""
    current = start
    best = score(evaluate(lm, current))
    while True:
        slots = sorted({p.loadable for p in current if p.loadable >= 0})
        moves = []
        for slot in slots:
            members = [g for g, p in enumerate(current) if p.loadable == slot]
            core = current[members[0]].core
            for target_core in range(cores):
                if target_core != core:
                    moves.append(tuple(Placement(p.option, target_core, p.loadable) if p.loadable == slot else p
                                       for p in current))
            gpu = {g: _on_gpu(lm, g, allowed) for g in members}
            if all(p is not None for p in gpu.values()):
                moves.append(tuple(gpu.get(g) or p for g, p in enumerate(current)))
        scored = [(score(evaluate(lm, m)), k, m) for k, m in enumerate(moves)]
        if not scored:
            return current
        value, _, move = min(scored)
        if value >= best:
            return _relabel(current)
        current, best = move, value


def _relabel(placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """Loadables numbered 0.. in order of their first group (slots freed by moves to the GPU close up)."""
    order = sorted({p.loadable for p in placements if p.loadable >= 0},
                   key=lambda s: min(g for g, p in enumerate(placements) if p.loadable == s))
    label = {old: new for new, old in enumerate(order)}
    return tuple(Placement(p.option, p.core, label[p.loadable]) if p.loadable >= 0 else p for p in placements)
