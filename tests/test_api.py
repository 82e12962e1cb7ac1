"""The `edgeplan` import name: every public name resolves, and it plans as the command line does."""

from __future__ import annotations

import json
import subprocess
import sys

import edgeplan
from tests.conftest import EXAMPLES
from tests.test_cli import EDGEPLAN


def test_every_public_name_resolves_and_has_a_docstring_or_is_a_type():
    for name in edgeplan.__all__:
        value = getattr(edgeplan, name)
        assert value is not None, name
        if callable(value) and not isinstance(value, type):
            assert (value.__doc__ or "").strip(), f"edgeplan.{name} has no docstring"


def test_import_is_cheap():
    """`import edgeplan` must not pull the solver stack or Optuna in before they are used."""
    code = "import sys, edgeplan; print(sorted(m for m in ('optuna', 'ortools') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "[]"


def test_the_api_plan_is_the_cli_plan(tmp_path):
    request = edgeplan.PlanRequest(objective="throughput", time_limit_s=20, deterministic_limit_s=1.0)
    planned = edgeplan.optimize(str(EXAMPLES / "resnet18.onnx"), "orin-agx", request)
    edgeplan.write_plan_files(planned, tmp_path / "api")
    subprocess.run([EDGEPLAN, "optimize", str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx", "--objective",
                    "throughput", "--time-limit", "20", "--deterministic-limit", "1", "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    assert (tmp_path / "api" / "plan.json").read_bytes() == (tmp_path / "cli" / "plan.json").read_bytes()
    assert json.loads((tmp_path / "api" / "plan.json").read_text())["solver"]["outcome"] in ("exact", "best-found")
