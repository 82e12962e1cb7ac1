"""Shared-DRAM contention between engines that run at the same time (several models, or a pipeline).

Form: PCCS (Xu et al., "PCCS: Processor-Centric Contention-aware Slowdown Model for Heterogeneous
System-on-Chips", MICRO'21, doi 10.1145/3466752.3480101) as HaX-CoNN (Dagli and Belviranli, PPoPP'24)
applies it on Jetson AGX Xavier: an engine's work is slowed by 100 / (100 - p), where the pressure p is
a piecewise-linear function of x, the memory throughput its co-runners demand, in percent of the DRAM
peak. The constants are the ones the HaX-CoNN artifact feeds its solver (GitHub ismetdagli/HaX-CoNN,
src/z3_solver_multi_dnn.py @14096dc, its GPU and DLA slowdown functions; re-expressed here as data):

    GPU: x < 38.1: p = x * 4.9 / 127.5;  x < 96.2: p = x;  else p = 1.11 * (x - 41.9)
    DLA: x < 27.9: p = x;                else p = 0.35 * (x + 49)

The published GPU curve jumps at 38.1% and falls back at 96.2%; the planner uses its monotone envelope
(never less slowdown for more pressure), sampled at STEP_PCT steps of x with x rounded down, so the
CP-SAT model holds it exactly as indicator constraints. Only Jetson GPU and DLA engines have
constants; other engines get none (no published figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STEP_PCT = 5  # x is sampled at 5, 10, ..., 100 percent of the DRAM peak
MILLI = 1000  # slowdowns are held as extra time in thousandths of the engine's own time


@dataclass(frozen=True)
class Segment:
    """pressure = scale * (x + offset) for x below `upto` percent."""

    upto: float
    scale: float
    offset: float = 0.0


CURVES: dict[str, tuple[Segment, ...]] = {
    "gpu": (Segment(38.1, 4.9 / 127.5), Segment(96.2, 1.0), Segment(math.inf, 1.11, -41.9)),
    "dla": (Segment(27.9, 1.0), Segment(math.inf, 0.35, 49.0)),
}
SOURCE = ("PCCS (Xu et al., MICRO'21) as applied by HaX-CoNN (PPoPP'24): GitHub ismetdagli/HaX-CoNN "
          "src/z3_solver_multi_dnn.py @14096dc, GPU and DLA slowdown functions")


def engine_kind(engine: str) -> str | None:
    """gpu, dla (dla0, dla1) or None for an engine without published contention constants."""
    if engine == "gpu":
        return "gpu"
    if engine.startswith("dla"):
        return "dla"
    return None


def slowdown(kind: str, x_pct: float) -> float:
    """The published curve: time factor (>= 1) at co-runner throughput x (percent of peak)."""
    x = min(max(x_pct, 0.0), 100.0)
    segment = next(s for s in CURVES[kind] if x < s.upto)
    pressure = min(segment.scale * (x + segment.offset), 99.0)
    return 100.0 / (100.0 - max(pressure, 0.0))


def steps(kind: str | None) -> tuple[tuple[int, int], ...]:
    """(threshold percent, extra thousandths) per step: at x >= threshold the engine's time grows by at
    least that many thousandths. Non-decreasing (the monotone envelope of the published curve)."""
    if kind is None or kind not in CURVES:
        return ()
    out: list[tuple[int, int]] = []
    top = 0
    for threshold in range(STEP_PCT, 101, STEP_PCT):
        top = max(top, math.ceil(round((slowdown(kind, threshold) - 1.0) * MILLI, 6)))
        out.append((threshold, top))
    return tuple(out)


def extra_milli(kind: str | None, x_pct_floor: int) -> int:
    """Extra thousandths at a co-runner throughput already rounded down to a whole percent."""
    level = 0
    for threshold, milli in steps(kind):
        if x_pct_floor >= threshold:
            level = milli
    return level


def extra_ns(milli: int, busy_ns: int) -> int:
    """The contention time of `busy_ns` of work at `milli` thousandths, rounded up (as CP-SAT holds it)."""
    return -((-milli * busy_ns) // MILLI)
