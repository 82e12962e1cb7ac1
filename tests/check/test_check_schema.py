"""check --json against the published schemas/edgeplan.check.v1.schema.json (which shares the unknown-size
and opset blocks with the plan schema)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from optimizer.catalog import load_catalog
from optimizer.check import check_graph, check_json
from optimizer.ir import load_model
from tests.conftest import EXAMPLES, ZOO, needs_zoo

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def _validator() -> jsonschema.Draft202012Validator:
    documents = [json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
                 for name in ("edgeplan.check.v1.schema.json", "edgeplan.plan.v1.schema.json")]
    registry: Registry = Registry().with_resources((d["$id"], Resource.from_contents(d)) for d in documents)
    return jsonschema.Draft202012Validator(documents[0], registry=registry)


VALIDATOR = _validator()
MODELS = [EXAMPLES / "resnet18.onnx", EXAMPLES / "yolov8n.onnx", ZOO / "tv_mobilenet_v2_dynbatch.onnx",
          ZOO / "lstm_2layer.onnx", ZOO / "tv_resnet18_opset11.onnx"]


@needs_zoo
@pytest.mark.parametrize("target", ["orin-agx", "rk3588"])
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_check_json_validates(path, target):
    document = json.loads(json.dumps(check_json(check_graph(load_model(path), load_catalog(), target))))
    errors = sorted(VALIDATOR.iter_errors(document), key=str)
    assert not errors, errors[0].message


@pytest.fixture(scope="module")
def yolo_check() -> dict:
    return json.loads(json.dumps(check_json(check_graph(load_model(EXAMPLES / "yolov8n.onnx"), load_catalog(),
                                                        "orin-agx"))))


@pytest.mark.parametrize("path", [("summary",), ("nodes", 0, "supported"), ("model", "sha256"), ("unknown_sizes",)])
def test_a_missing_key_fails(yolo_check, path):
    document = copy.deepcopy(yolo_check)
    obj = document
    for step in path[:-1]:
        obj = obj[step]
    del obj[path[-1]]
    assert not VALIDATOR.is_valid(document)


def test_a_bad_violation_fails(yolo_check):
    document = copy.deepcopy(yolo_check)
    node = next(n for n in document["nodes"] if n["violations"])
    node["violations"][0]["precision"] = "int4"
    assert not VALIDATOR.is_valid(document)
    node["violations"][0] = {"rule": "X", "accelerator": "dla", "precision": "int8", "mesage": "typo"}
    assert not VALIDATOR.is_valid(document)
