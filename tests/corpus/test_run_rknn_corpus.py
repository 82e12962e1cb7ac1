"""The corpus runner's collect step and its QDQ handling, without the toolkit."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import run_rknn_corpus as runner

REPO = Path(__file__).resolve().parents[2]
MODELS = ("nn_bigru_1x64", "nn_attention_unet", "nn_gru_1x128")


def _tiny_corpus(tmp: Path) -> Path:
    """A corpus of three committed models with their committed manifest rows and tables."""
    corpus = tmp / "corpus"
    (corpus / "models").mkdir(parents=True)
    (corpus / "rknn").mkdir()
    with (REPO / "corpus" / "MANIFEST.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [r for r in reader if r["name"] in MODELS]
        fields = reader.fieldnames
    assert fields and len(rows) == len(MODELS)
    with (corpus / "MANIFEST.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    for name in MODELS:
        shutil.copy(REPO / "corpus" / "models" / f"{name}.onnx", corpus / "models")
    with (REPO / "corpus" / "rknn" / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        runs = [r for r in reader if r["model"] in MODELS]
    with (corpus / "rknn" / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, runner.RUN_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(sorted(runs, key=lambda r: r["model"]))
    with gzip.open(REPO / "corpus" / "rknn" / "layers.csv.gz", "rt", newline="") as handle:
        layers = [r for r in csv.DictReader(handle) if r["model"] in MODELS]
    with gzip.open(corpus / "rknn" / "layers.csv.gz", "wt", newline="") as handle:
        writer = csv.DictWriter(handle, runner.LAYER_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(sorted(layers, key=lambda r: r["model"]))  # stable: keeps each cell's order
    return corpus


def _read(path: Path) -> list[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as handle:  # type: ignore[operator]
        return list(csv.DictReader(handle))


def test_collect_on_an_empty_build_dir_keeps_every_committed_cell(tmp_path):
    corpus = _tiny_corpus(tmp_path)
    before_runs, before_layers = _read(corpus / "rknn" / "runs.csv"), _read(corpus / "rknn" / "layers.csv.gz")
    assert len(before_runs) == 30 and before_layers
    assert runner.collect(tmp_path / "empty-build", corpus) == 0
    assert _read(corpus / "rknn" / "runs.csv") == before_runs
    assert _read(corpus / "rknn" / "layers.csv.gz") == before_layers


def test_collect_replaces_only_the_cells_the_build_dir_converted(tmp_path):
    corpus = _tiny_corpus(tmp_path)
    build = tmp_path / "build"
    out = runner._result_path(build, "nn_gru_1x128", "rk3566", "int8")
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps({"status": "failed", "error": "E build: a new failure", "seconds": 1.5,
                               "cpu_seconds": 1.0, "disabled_rules": [], "default_build_error": "",
                               "e_lines": ["E build: a new failure"], "layers": []}))
    before = {(r["model"], r["soc"], r["precision"]): r for r in _read(corpus / "rknn" / "runs.csv")}
    assert runner.collect(build, corpus) == 0
    after = {(r["model"], r["soc"], r["precision"]): r for r in _read(corpus / "rknn" / "runs.csv")}
    assert set(after) == set(before)
    cell = ("nn_gru_1x128", "rk3566", "int8")
    assert after[cell]["status"] == "failed" and after[cell]["error"] == "E build: a new failure"
    assert {k: v for k, v in after.items() if k != cell} == {k: v for k, v in before.items() if k != cell}
    layers = _read(corpus / "rknn" / "layers.csv.gz")
    assert not [r for r in layers if (r["model"], r["soc"], r["precision"]) == cell]
    assert [r for r in layers if r["model"] == "nn_bigru_1x64"]


def _save(tmp: Path, name: str, ops: list[str]) -> Path:
    corpus = tmp / "corpus"
    (corpus / "models").mkdir(parents=True, exist_ok=True)
    nodes, last = [], "x"
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]),
             helper.make_tensor("z", TensorProto.INT8, [], [0])]
    for i, op in enumerate(ops):
        args = [last, "s", "z"] if op in ("QuantizeLinear", "DequantizeLinear") else [last]
        nodes.append(helper.make_node(op, args, [f"t{i}"]))
        last = f"t{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, 4])], inits)
    onnx.save(helper.make_model(graph), corpus / "models" / f"{name}.onnx")
    return corpus


def test_a_qdq_model_is_built_with_its_own_scales(tmp_path):
    corpus = _save(tmp_path, "qdq", ["QuantizeLinear", "DequantizeLinear", "Relu"])
    assert runner._prequantized("qdq", corpus)
    plain = _save(tmp_path, "plain", ["Relu", "Sigmoid"])
    assert not runner._prequantized("plain", plain)


def _drive_fake(tmp_path: Path, monkeypatch, status_of, jobs: int, seen: list[Path] | None = None) -> Path:
    """Runs the driver on nn_bigru_1x64 for rk3588 FP16 and INT8 with a fake worker answering `status_of(task)`;
    returns the build dir. `seen` collects each worker's scratch dir."""
    class Fake:
        def __init__(self, scratch: str) -> None:
            self.scratch = scratch
            assert Path(scratch).is_dir()
            if seen is not None:
                seen.append(Path(scratch))

        def run(self, task: dict, timeout: float) -> dict:
            return {"status": status_of(task), "error": "fake", "seconds": 0.0}

        def stop(self) -> None:
            pass

    monkeypatch.setattr(runner, "Worker", Fake)
    build = tmp_path / "build"
    (build / "models").mkdir(parents=True)
    shutil.copy(REPO / "corpus" / "models" / "nn_bigru_1x64.onnx", build / "models")
    with (REPO / "corpus" / "MANIFEST.csv").open(newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["name"] == "nn_bigru_1x64")
    assert runner.drive(build, [row], ["rk3588"], ["fp16", "int8"], jobs=jobs, timeout=1.0) == 0
    return build


def test_each_worker_converts_in_its_own_scratch_dir(tmp_path, monkeypatch):
    """The toolkit writes check*.onnx files into its working directory: two workers (or two runners on one
    build dir) sharing it could read each other's files, so each gets its own, removed when it ends."""
    seen: list[Path] = []
    build = _drive_fake(tmp_path, monkeypatch, lambda task: "failed", jobs=2, seen=seen)
    assert len(seen) == 2 and len(set(seen)) == 2
    assert all(path.parent == build / "scratch" and not path.exists() for path in seen)
    assert {json.loads(p.read_text())["status"] for p in (build / "rknn" / "nn_bigru_1x64").glob("*.json")} == {
        "failed"}


def test_a_worker_the_kernel_killed_records_nothing_so_a_rerun_retries(tmp_path, monkeypatch):
    """tv_deeplabv3_resnet50 on rk3588 was killed by the out-of-memory killer with two workers (signal 9): the
    machine's limit, not the toolkit's, so it must not land in the tables as the toolkit crashing."""
    build = _drive_fake(tmp_path, monkeypatch, lambda task: "killed" if task["precision"] == "fp16" else "failed",
                        jobs=1)
    assert sorted(p.name for p in (build / "rknn" / "nn_bigru_1x64").glob("*.json")) == ["rk3588-int8.json"]


def test_a_worker_s_resident_memory_is_read():
    import os

    assert runner._rss_bytes(os.getpid()) > 10 * 2**20
    assert runner._rss_bytes(2**22 + 12345) == 0  # no such process
