"""Seed 004's poor-partition heuristic: DMA copies of 20% of the total or more (20％以上), not only above."""

from __future__ import annotations

import pytest

from optimizer.plan import optimize
from optimizer.plan._build import partition_warning
from optimizer.solver import PlanRequest
from tests.solver.conftest import FAVOUR_DLA, chain


@pytest.mark.parametrize(("transfer_ns", "total_ns", "warns"), [
    (20, 100, True), (19, 100, False), (1, 5, True), (1999, 10_000, False), (2000, 10_000, True),
    (200_000_001, 1_000_000_000, True), (199_999_999, 1_000_000_000, False), (0, 0, False)])
def test_warning_at_exactly_twenty_percent(transfer_ns, total_ns, warns):
    warning = partition_warning(transfer_ns, total_ns)
    assert (warning is not None) is warns
    if warns:
        assert "20% or more" in warning and "seed 004" in warning


def test_plan_with_costly_copies_warns(tmp_path):
    """A DLA-GPU-DLA split priced with slow DLA<->GPU syncs: the plan carries the warning, and only then."""
    slow = FAVOUR_DLA.replace('"dla->gpu" = 2.0, "gpu->dla" = 2.0', '"dla->gpu" = 300.0, "gpu->dla" = 300.0')
    for text, name in ((FAVOUR_DLA, "fast"), (slow, "slow")):
        profile = tmp_path / f"{name}.toml"
        profile.write_text(text)
        planned = optimize(str(chain(tmp_path / "m.onnx", "CXC")), "orin-agx",
                           PlanRequest(pins={"C0": "dla", "C2": "dla"}), profile_path=str(profile))
        share = planned.breakdown.transfer_ns / planned.breakdown.total_ns
        warned = any("poor partition" in w for w in planned.plan.warnings)
        assert warned is (share >= 0.2)
        assert warned is (name == "slow")
