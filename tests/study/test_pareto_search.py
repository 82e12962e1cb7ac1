"""Pareto studies over partition points and SRAM pools, for several models planned together: every trial's plan
keeps the pins and pools the trial chose, every front point keeps its plan, and the same seed gives
byte-identical study files."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from optimizer.catalog import load_catalog
from optimizer.errors import BadInputError
from optimizer.plan import validate_plan
from optimizer.study._pareto import load_pareto_config, reproduce_pareto, run_pareto_study
from tests.multi.test_multi_pins_pools import _pooled_profile
from tests.multi.test_multi_solver import BALANCED, big_chain

CATALOG = load_catalog()


def _config(tmp_path: Path, trials: int = 8,
            extra: str = 'sram = true\nmax_partitions = 1\nstage_engines = ["auto", "gpu", "dla"]') -> Path:
    big_chain(tmp_path / "a.onnx", "CXCC")
    big_chain(tmp_path / "b.onnx", "CC")
    (tmp_path / "pooled.toml").write_text(_pooled_profile(BALANCED))
    config = tmp_path / "pair.toml"
    config.write_text(f'''name = "pair"
models = ["a.onnx", "b.onnx"]
target = "orin-agx"
objectives = ["latency_ms", "energy_mj", "gpu_share"]
n_trials = {trials}
seed = 3
time_limit = 1
profile = "pooled.toml"
[search]
gpu_budgets = [1.0, 0.5]
planner_objectives = ["makespan", "energy"]
{extra}
''')
    return config


def test_trials_search_cuts_and_pools_and_every_plan_keeps_them(tmp_path):
    config = _config(tmp_path)
    outcome = run_pareto_study(str(config), str(tmp_path / "out"))
    rows = list(csv.DictReader((outcome.folder / "trials.csv").open()))
    assert len(rows) == 8
    assert {"cuts[a]", "cuts[b]", "sram_loadable_0", "sram_loadable_3", "sram_per_loadable", "pins"} <= set(rows[0])
    assert rows[0]["cuts[a]"] == "0" and rows[0]["pins"] == ""  # the first trial is the planner alone
    searched = [r for r in rows if r["pins"] or len(set(r["sram_per_loadable"].split())) > 1]
    assert searched, "the sampler never moved a cut or a pool"
    front = json.loads((outcome.folder / "front.json").read_text())
    assert len(front["points"]) >= 2
    merged = tmp_path / "models.onnx"
    merged.write_bytes(_merged(tmp_path))
    for point in front["points"]:
        text = (outcome.folder / point["plan"]).read_text()
        assert hashlib.sha256(text.encode()).hexdigest() == point["plan_sha256"]  # each point keeps its plan
        plan = json.loads(text)
        assert plan["request"]["pins"] == point["pins"]
        assert plan["request"]["sram_per_loadable"] == point["sram_per_loadable"]
        devices = {layer["node"]: layer["device"] for layer in plan["layers"]}
        for node, engine in point["pins"].items():
            assert devices[node] == engine or (engine == "dla" and devices[node].startswith("dla"))
        for sub in plan["subgraphs"]:
            if sub["device"].startswith("dla"):
                assert sub["memory_pools"]["dla_sram_bytes"] in point["sram_per_loadable"]
        assert validate_plan(plan, CATALOG, str(merged)) == []


def _merged(tmp_path: Path) -> bytes:
    from optimizer.multi import merge_models

    return merge_models([str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")])[0]


def test_same_seed_gives_byte_identical_study_files(tmp_path):
    config = _config(tmp_path, trials=6)
    first = run_pareto_study(str(config), str(tmp_path / "one")).folder
    second = run_pareto_study(str(config), str(tmp_path / "two")).folder
    names = ["plan.json", "front.json", "trials.csv", "report.html"]
    names += sorted(p.relative_to(first).as_posix() for p in (first / "front").iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    point = next((first / "front").iterdir())
    point.write_bytes(point.read_bytes().replace(b'"objective"', b'"objective" '))
    same, diff = reproduce_pareto(str(first))  # `study reproduce` checks every front point's plan too
    assert not same and f"front/{point.name}" in diff


def test_search_keys_are_checked(tmp_path):
    config = _config(tmp_path, extra="sram = 3")
    with pytest.raises(BadInputError, match="sram"):
        load_pareto_config(config)
    config = _config(tmp_path, extra="max_partitions = -1")
    with pytest.raises(BadInputError, match="max_partitions"):
        load_pareto_config(config)
    config = _config(tmp_path, extra='stage_engines = ["gpu"]')
    with pytest.raises(BadInputError, match="stage_engines"):
        load_pareto_config(config)
