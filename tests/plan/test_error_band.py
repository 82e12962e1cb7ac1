"""The plan's error band: plan.json carries it, the report shows it, and a speedup inside it says so."""

from __future__ import annotations

import json

import pytest

from optimizer.plan._types import Baseline, LatencyBand, Predicted
from optimizer.plan._views import within_band
from tests.conftest import EXAMPLES
from tests.test_cli import run


@pytest.mark.parametrize("target", ["orin-agx", "rk3588"])
def test_plan_json_and_report_carry_the_loso_band(tmp_path, target):
    out = tmp_path / "out"
    result = run("optimize", str(EXAMPLES / "resnet18.onnx"), "--target", target, "--out", str(out))
    assert result.returncode == 0, result.stderr
    plan = json.loads((out / "plan.json").read_text())
    predicted = plan["predicted"]
    band = predicted["latency_band_ms"]
    assert band["low"] <= predicted["latency_ms"] <= band["high"] and band["rows"] >= 5
    assert band["low"] == pytest.approx(predicted["latency_ms"] * band["ratio_low"], rel=1e-4)
    report = (out / "report.md").read_text()
    assert f"likely {band['low']:.4f}-{band['high']:.4f} ms" in report
    assert f"(likely {band['low']:.4g}-{band['high']:.4g} ms)" in result.stdout


def _predicted(band: LatencyBand | None) -> Predicted:
    return Predicted(latency_ms=1.0, throughput_fps=1000.0, busiest_engine_ms=1.0, latency_band_ms=band)


def _baseline(speedup: float) -> Baseline:
    return Baseline(latency_ms=speedup, throughput_fps=1000.0 / speedup, speedup=speedup, subgraphs=1)


def test_a_speedup_smaller_than_the_band_says_so():
    band = LatencyBand(low=0.8, high=1.25, ratio_low=0.8, ratio_high=1.25, rows=5, scope="*/*/*", basis="")
    pred = _predicted(band)  # band width x1.5625
    assert "within the x1.56 error band" in within_band(pred, _baseline(1.3))
    assert within_band(pred, _baseline(1.7)) == ""
    assert within_band(pred, _baseline(0.9)) == ""  # a slowdown is no speedup claim
    assert within_band(_predicted(None), _baseline(1.1)) == ""
