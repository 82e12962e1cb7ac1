"""Energy per frame: engine power per power mode times the time each engine is busy, plus the idle floor.

    energy = P_gpu * busy_gpu + P_dla * (busy_dla0 + busy_dla1) + P_idle * period

P_gpu = gpu_share * module budget of the power mode; one DLA core draws P_gpu * (DLA INT8 TOPS / GPU INT8
TOPS) / dla_perf_per_watt (NVIDIA: DLA perf/W is 3-5x the GPU's); P_idle = idle_share * budget is paid for
the whole period (the frame's latency, or the makespan of a multi-model frame). The figures and their
sources are in constraints/power.toml; targets without a DLA/GPU (RKNN) have none, and their plans say so.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from optimizer.backends import backend_of
from optimizer.catalog import Target
from optimizer.errors import BadInputError

POWER_FILE = "power.toml"


@dataclass(frozen=True)
class Power:
    """Milliwatts per engine while busy (gpu, dla0, dla1), and the idle floor over the whole period."""

    engine_mw: Mapping[str, int]
    idle_mw: int
    budget_w: float
    source: str

    def energy_pj(self, busy_ns: Mapping[str, int], period_ns: int) -> int:
        """mW x ns = pJ, in integers (what the CP-SAT energy objective counts)."""
        return sum(self.engine_mw.get(e, 0) * ns for e, ns in sorted(busy_ns.items())) + self.idle_mw * period_ns


def _table() -> dict[str, Any]:
    text = (resources.files("optimizer.constraints") / POWER_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


def _budget_w(target: Target, table: Mapping[str, Any]) -> tuple[float, str] | None:
    mode = str(target.features.get("power_mode", ""))
    found = re.fullmatch(r"(\d+(?:\.\d+)?)W", mode)
    if found:
        return float(found.group(1)), f"power mode {mode}"
    for tid in (target.id, target.base):
        if tid and tid in table["module_w"]:
            entry = table["module_w"][tid]
            return float(entry["value"]), entry["source"]
    return None


def target_power(target: Target) -> Power | None:
    """The target's engine power, or None when the target has no power figures (RKNN, unknown modules)."""
    if not backend_of(target).power_figures:
        return None
    table = _table()
    if table.get("schema") != "edgeplan.power/v1":
        raise BadInputError("power table: schema must be edgeplan.power/v1", file=POWER_FILE)
    budget = _budget_w(target, table)
    if budget is None:
        return None
    watts, source = budget
    model = {k: float(v["value"]) for k, v in table["model"].items()}
    gpu_mw = round(watts * model["gpu_share"] * 1000)
    engine_mw = {"gpu": gpu_mw}
    if target.cores and "dla_int8_tops" in target.figures and "gpu_int8_tops" in target.figures:
        ratio = target.figure("dla_int8_tops") / target.figure("gpu_int8_tops")
        dla_mw = round(gpu_mw * ratio / model["dla_perf_per_watt"])
        engine_mw |= {f"dla{c}": dla_mw for c in range(target.cores)}
    return Power(engine_mw=engine_mw, idle_mw=round(watts * model["idle_share"] * 1000), budget_w=watts,
                 source=f"{source}; constraints/{POWER_FILE} [model] shares (assumed)")


def energy_mj(power: Power | None, busy_ns: Mapping[str, int], period_ns: int) -> float | None:
    if power is None:
        return None
    return round(power.energy_pj(busy_ns, period_ns) / 1e9, 6)


def gpu_share(busy_ns: Mapping[str, int], period_ns: int) -> float | None:
    """Share of the period the GPU is busy (what --gpu-budget bounds)."""
    if period_ns <= 0:
        return None
    return round(busy_ns.get("gpu", 0) / period_ns, 6)
