"""plan.json through the typed Plan: every zoo plan round-trips byte for byte, and the published JSON Schema
(schemas/edgeplan.plan.v1.schema.json) accepts every produced plan and refuses a misspelt or missing key."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

from optimizer.errors import BadInputError
from optimizer.fileio import dumps_json
from optimizer.plan import _build
from optimizer.plan._schema import plan_schema
from optimizer.plan._types import Plan, unknown_fields
from optimizer.solver import PlanRequest
from tests.conftest import ZOO, needs_zoo, zoo_models

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "edgeplan.plan.v1.schema.json"
VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
# Each zoo model on one of two targets, with every objective and --explain in turn, so every optional key
# of the format (pipelined baselines, costs, DLA pools, NPU cores, edits) occurs somewhere.
TARGETS = ("orin-agx", "rk3588")
OBJECTIVES = ("latency", "throughput")


def _planned_documents(monkeypatch, path: Path, target: str, objective: str, explain: bool):
    """The planner's own plan.json dict (as _build writes it, before any typing) and the Planned."""
    built = []
    original = _build._plan_json

    def capture(**kwargs):
        built.append(original(**kwargs))
        return built[-1]

    monkeypatch.setattr(_build, "_plan_json", capture)
    planned = _build.optimize(str(path), target, PlanRequest(objective=objective, deterministic_limit_s=0.05,
                                                            explain_infeasible=False), explain=explain)
    return built[0], planned


def _round_trip(document: dict) -> None:
    text = dumps_json(document)
    plan = Plan.from_json(json.loads(text))
    unknown = unknown_fields(plan)
    assert not unknown, f"plan.json keys the Plan type does not know (add them to optimizer/plan/_types.py): {unknown}"
    assert dumps_json(plan.to_json()) == text
    errors = sorted(VALIDATOR.iter_errors(json.loads(text)), key=str)
    assert not errors, errors[0].message


@needs_zoo
@pytest.mark.parametrize("index", range(len(zoo_models())), ids=[p.stem for p in zoo_models()])
def test_every_zoo_plan_round_trips_byte_for_byte_and_validates(monkeypatch, index):
    path = zoo_models()[index]
    document, planned = _planned_documents(monkeypatch, path, TARGETS[index % 2], OBJECTIVES[index // 2 % 2],
                                           explain=index % 3 == 0)
    _round_trip(document)
    assert dumps_json(_as_json(planned.plan)) == dumps_json(document)


def _as_json(plan) -> dict:
    return plan.to_json() if isinstance(plan, Plan) else plan


@needs_zoo
def test_dual_stream_and_edit_plans_round_trip(monkeypatch):
    document, _ = _planned_documents(monkeypatch, ZOO / "tv_resnet18.onnx", "xavier-agx", "dual-stream", True)
    _round_trip(document)


def test_committed_schema_is_the_generated_one():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == dumps_json(plan_schema()), \
        "regenerate: python -m optimizer.plan._schema > schemas/edgeplan.plan.v1.schema.json"


@pytest.fixture(scope="module")
def resnet_plan() -> dict:
    planned = _build.optimize(str(ZOO / "tv_resnet18.onnx"), "orin-agx",
                              PlanRequest(deterministic_limit_s=0.05, explain_infeasible=False))
    return json.loads(dumps_json(_as_json(planned.plan)))


@needs_zoo
@pytest.mark.parametrize("where", [(), ("solver",), ("predicted",), ("layers", 0), ("subgraphs", 0),
                                   ("request",), ("breakdown",), ("unknown_sizes",)])
def test_a_misspelt_key_fails_the_schema_and_is_reported_unknown(resnet_plan, where):
    document = copy.deepcopy(resnet_plan)
    obj = document
    for step in where:
        obj = obj[step]
    first = list(obj)[1]
    obj[first + "s"] = obj.pop(first)  # latency_ms -> latency_mss, node -> nodes, ...
    assert not VALIDATOR.is_valid(document)
    with pytest.raises(BadInputError, match="missing"):
        Plan.from_json(document)
    document = copy.deepcopy(resnet_plan)
    obj = document
    for step in where:
        obj = obj[step]
    obj["zz_new_field"] = 1
    assert not VALIDATOR.is_valid(document)
    plan = Plan.from_json(document)  # a newer plan still loads, and writes back whole
    assert unknown_fields(plan) == [".".join([*(f"{s}" for s in where), "zz_new_field"]).replace(".0.", "[0].")]
    assert plan.to_json() == document


@needs_zoo
@pytest.mark.parametrize(("path", "value", "field"), [
    (("layers", 2, "precision"), "int4", "layers[2].precision"),
    (("layers", 0, "device"), "tpu", "layers[0].device"),
    (("solver", "seed"), "0", "solver.seed"),
    (("predicted", "latency_ms"), True, "predicted.latency_ms"),
    (("subgraphs", 0, "nodes"), "Conv_0", "subgraphs[0].nodes"),
    (("model",), None, "model"),
])
def test_a_wrong_value_is_refused_by_both_naming_the_field(resnet_plan, path, value, field):
    document = copy.deepcopy(resnet_plan)
    obj = document
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value
    assert not VALIDATOR.is_valid(document)
    with pytest.raises(BadInputError, match=re.escape(f"plan.json: plan field '{field}'")) as info:
        Plan.from_json(document, file="plan.json")
    assert "\n" not in str(info.value)


def test_not_a_plan_is_refused():
    with pytest.raises(BadInputError, match=r"not an edgeplan\.plan/v1"):
        Plan.from_json({"schema": "edgeplan.check/v1"})
    with pytest.raises(BadInputError, match=r"not an edgeplan\.plan/v1"):
        Plan.from_json([1, 2])


@needs_zoo
def test_optional_keys_written_as_null_stay_null_and_absent_ones_stay_absent(resnet_plan):
    """Fields other stages add (energy, replication) may be null where they apply and absent elsewhere: the
    typed plan writes back exactly what it read."""
    document = copy.deepcopy(resnet_plan) | {"replication": None}  # the planner writes it last
    document["predicted"] |= {"energy_mj": None, "gpu_busy_share": 0.25}
    plan = Plan.from_json(document)
    assert plan.replication is None and plan.predicted.energy_mj is None and plan.predicted.gpu_busy_share == 0.25
    assert dumps_json(plan.to_json()) == dumps_json(document)
    assert dumps_json(plan.replace(warnings=()).to_json()) == dumps_json(document | {"warnings": []})
    assert VALIDATOR.is_valid(document)
    bare_document = copy.deepcopy(resnet_plan)
    bare_document.pop("replication", None)
    bare_document["predicted"].pop("energy_mj", None)
    bare = Plan.from_json(bare_document)
    assert "replication" not in bare.to_json() and "energy_mj" not in bare.to_json()["predicted"]
