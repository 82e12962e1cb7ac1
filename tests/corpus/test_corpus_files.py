"""The committed corpus: structure-only models that match their manifest and load, and rknn-toolkit2 layer
tables that parse and refer only to manifest models (no toolkit needed)."""

from __future__ import annotations

import csv
import gzip
import hashlib
from collections import Counter
from pathlib import Path

import onnx
import pytest

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
MANIFEST = CORPUS / "MANIFEST.csv"
SOCS = {"rk3588", "rk3576", "rk3566", "rk3562", "rv1126b"}


def _manifest() -> list[dict[str, str]]:
    with MANIFEST.open(newline="") as handle:
        return list(csv.DictReader(handle))


ROWS = _manifest()


def _layers() -> list[dict[str, str]]:
    with gzip.open(CORPUS / "rknn" / "layers.csv.gz", "rt", newline="") as handle:
        return list(csv.DictReader(handle))


def _runs() -> list[dict[str, str]]:
    with (CORPUS / "rknn" / "runs.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_manifest_lists_exactly_the_committed_models():
    names = [r["name"] for r in ROWS]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(p.stem for p in (CORPUS / "models").glob("*.onnx"))


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_model_matches_manifest_and_is_structure_only(row):
    path = CORPUS / "models" / f"{row['name']}.onnx"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == row["sha256_structure"]
    model = onnx.load(str(path), load_external_data=False)
    assert len(model.graph.node) == int(row["num_nodes"])
    dims = [[int(d) for d in s.split("x")] for s in row["input_shapes"].split(";")]
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    assert [[d.dim_value for d in i.type.tensor_type.shape.dim] for i in inputs] == dims
    for tensor in model.graph.initializer:  # big floats are placeholders; integers (shape data) stay inline
        if tensor.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            assert tensor.data_location != onnx.TensorProto.EXTERNAL


def test_models_carry_no_build_paths():
    """A file that records where it was built (the dynamo exporter's per-node stack traces hold the script's
    path and line numbers) hashes differently per checkout, so the manifest could not be rebuilt byte-identical."""
    for path in sorted((CORPUS / "models").glob("*.onnx")):
        data = path.read_bytes()
        assert b"pkg.torch.onnx.stack_trace" not in data and b"site-packages" not in data, path.name


def test_every_model_the_manifest_calls_loadable_is_a_committed_file():
    """Each of them is loaded (and its shapes resolved) by tests/ir/test_shapes.py, which walks corpus/models."""
    ok = [r["name"] for r in ROWS if r["edgeplan_load"] == "ok"]
    assert ok and all((CORPUS / "models" / f"{name}.onnx").is_file() for name in ok)


def test_layer_tables_refer_to_manifest_models_and_parse():
    names = {r["name"] for r in ROWS}
    layers = _layers()
    assert layers, "no layer rows committed"
    for row in layers:
        assert row["model"] in names
        assert row["soc"] in SOCS and row["precision"] in ("fp16", "int8")
        assert row["target"] in ("NPU", "CPU")
        ddr, npu, total = int(row["cycles_ddr"]), int(row["cycles_npu"]), int(row["cycles_total"])
        assert total == max(ddr, npu)
        assert row["mapping"] in ("exact", "tensor", "prefix", "tensor-prefix", "io-tensor", "graph-input",
                                  "unmapped")
        assert bool(row["onnx_nodes"]) == (row["mapping"] not in ("unmapped", "io-tensor", "graph-input"))


def test_runs_agree_with_layer_tables():
    names = {r["name"] for r in ROWS}
    counts = Counter((r["model"], r["soc"], r["precision"]) for r in _layers())
    npu = Counter((r["model"], r["soc"], r["precision"]) for r in _layers() if r["target"] == "NPU")
    runs = _runs()
    keys = [(r["model"], r["soc"], r["precision"]) for r in runs]
    assert len(keys) == len(set(keys))
    for run in runs:
        key = (run["model"], run["soc"], run["precision"])
        assert run["model"] in names
        assert run["status"] in ("ok", "ok-with-disable_rules", "failed", "crashed", "timeout")
        assert int(run["layers"]) == counts[key]
        assert int(run["npu_layers"]) == npu[key]
        if run["status"].startswith("ok"):
            assert counts[key] > 0
        else:
            assert run["error"], f"{key}: a failed conversion must say why"
        if run["status"] == "ok-with-disable_rules":
            assert run["disabled_rules"] and run["default_build_error"]
