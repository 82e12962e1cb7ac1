"""A third vendor family is one TOML plus one backend class: a made-up NPU family ("acme-npu") defined in a
tmp EDGEPLAN_CATALOG_DIR (rules, targets and its latency profile in one file) and a small backend registered
here runs check, optimize, predict and export as a user runs them, with no solver or latency-model edit; and a
GPU-only family of a known toolchain (Jetson-Thor-like) is that one TOML alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from onnx import helper

from optimizer.backends import Backend, BaselineSpec, BuildFiles, CostView, ExportInputs, OptionView, registered
from optimizer.backends import backend_of as find_backend
from optimizer.catalog import load_catalog
from optimizer.catalog._load import CATALOG_ENV
from optimizer.cli import main
from optimizer.fileio import dumps_json
from optimizer.ir import BYTES_PER_ELEMENT
from tests.conftest import const, save_model, value

ACME = """
schema = "edgeplan.catalog/v1"
family = "acme-npu"
backend = "acme"
accelerator = "npu"
fallback = "cpu"
default_kind = "none"

[sources]
toy = "a made-up family for the backend-protocol test"

[layer_kinds]
Conv = "conv"
Relu = "act"
GlobalAveragePool = "pool"
Flatten = "reshape"
Gemm = "fc"

[[rules]]
id = "ACME-KIND"
scope = "node"
kinds = ["none"]
check = "never"
source = "toy"
summary = "the op has no ACME NPU layer"

[targets.acme-1]
name = "ACME A1 (toy)"
generation = "a1"
devices = ["npu", "cpu"]
precisions = { npu = ["int8", "fp16"], cpu = ["fp32"] }
[targets.acme-1.figures]
npu_int8_tops = { value = 4.0, unit = "TOPS", source = "toy" }
npu_fp16_tops = { value = 1.0, unit = "TFLOPS", source = "toy" }
cpu_gflops = { value = 40.0, unit = "GFLOPS", source = "toy" }
dram_gbps = { value = 17.0, unit = "GB/s", source = "toy" }

[latency]
name = "acme-prior"
[latency.devices.npu]
efficiency = { conv = 0.5, dwconv = 0.2, gconv = 0.3, deconv = 0.3, matmul = 0.4, vector = 0.1 }
layer_overhead_us = 5.0
bandwidth_efficiency = 0.6
sram_speedup = 1.0
inference_overhead_us = 50.0
[latency.devices.cpu]
efficiency = { conv = 0.1, dwconv = 0.1, gconv = 0.1, deconv = 0.1, matmul = 0.1, vector = 0.1 }
layer_overhead_us = 10.0
bandwidth_efficiency = 0.5
sram_speedup = 1.0
[latency.transfer]
memsync_us = 25.0
"""

THOR = """schema = "edgeplan.catalog/v1"
family = "nvidia-thor"
backend = "tensorrt"
accelerator = "dla"
fallback = "gpu"
[sources]
toy = "a GPU-only Jetson-Thor-like family for the backend test (figures made up)"
[layer_kinds]
Conv = "convolution"
[targets.thor-like]
name = "Thor-like GPU-only module (made-up figures)"
generation = "thor"
devices = ["gpu"]
precisions = { gpu = ["int8", "fp16", "fp32"] }
[targets.thor-like.figures]
gpu_int8_tops = { value = 500.0, unit = "TOPS", source = "toy" }
gpu_fp16_tops = { value = 250.0, unit = "TFLOPS", source = "toy" }
gpu_fp32_tops = { value = 8.0, unit = "TFLOPS", source = "toy" }
dram_gbps = { value = 273.0, unit = "GB/s", source = "toy" }
[latency]
name = "thor-prior"
[latency.devices.gpu]
efficiency = { conv = 0.5, dwconv = 0.2, gconv = 0.3, deconv = 0.3, matmul = 0.4, vector = 0.1 }
layer_overhead_us = 5.0
bandwidth_efficiency = 0.7
sram_speedup = 1.0
inference_overhead_us = 30.0
"""

HANDOVER_S = 25e-6  # the toolchain's fixed cost per NPU<->CPU hand-over (its [latency.transfer] memsync_us)


class AcmeBackend(Backend):
    """The toolchain of the toy family: NCHW everywhere, a synced copy per hand-over, a JSON build list."""

    name: ClassVar[str] = "acme"
    host_device: ClassVar[str] = "npu"
    transfer_engine: ClassVar[str] = "cpu"
    reformat_engine: ClassVar[str] = "npu"
    baselines: ClassVar[tuple[BaselineSpec, ...]] = (BaselineSpec("acme_default", "accelerator_one_precision"),)
    static_rule: ClassVar[str] = "ACME-KIND"

    def input_format(self, model: CostView, tensor: str, option: OptionView,
                     default_formats: bool = False) -> tuple[str, float]:
        return "nchw", 0.0

    def output_format(self, model: CostView, tensor: str, option: OptionView,
                      default_formats: bool = False) -> tuple[str, float]:
        return "nchw", 0.0

    def transfer(self, model: CostView, tensor: str, src: str, dst: str, precision: str,
                 default_formats: bool = False) -> tuple[str, float]:
        size = (model.graph.tensors[tensor].num_elements or 0) * model.batch * BYTES_PER_ELEMENT[precision]
        return "nchw", model.profile.memsync_us * 1e-6 + 2 * size / model.bandwidth

    def export(self, inputs: ExportInputs) -> BuildFiles:
        engines = [{"onnx": sub.name, "device": sub.device, "precision": sub.precision} for sub in inputs.subs]
        return BuildFiles(subs=inputs.subs, files=[("acme_build.json", dumps_json({"engines": engines}))],
                          manifest={"build": ["acme_build.json"]})


def _model(path: Path) -> Path:
    """Conv -> Relu -> Conv -> GlobalAveragePool -> Flatten -> Gemm -> Softmax: the Softmax has no ACME layer."""
    rng = np.random.default_rng(0)
    inits = [const("w1", rng.standard_normal((16, 8, 3, 3), dtype=np.float32)),
             const("w2", rng.standard_normal((16, 16, 3, 3), dtype=np.float32)),
             const("fc", rng.standard_normal((10, 16), dtype=np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Conv", ["b", "w2"], ["c"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["d"], name="pool"),
             helper.make_node("Flatten", ["d"], ["e"], name="flat"),
             helper.make_node("Gemm", ["e", "fc"], ["f"], name="fc", transB=1),
             helper.make_node("Softmax", ["f"], ["y"], name="softmax", axis=1)]
    return save_model(path, nodes, [value("x", [1, 8, 32, 32])], [value("y", [1, 10])], inits)


@pytest.fixture
def acme(tmp_path, monkeypatch):
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "acme_npu.toml").write_text(ACME)
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    with registered(AcmeBackend) as backend:
        yield backend


def _run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_family_file_names_its_backend(acme):
    catalog = load_catalog()
    target = catalog.target("acme-1")
    assert (target.family, target.backend, target.cores) == ("acme-npu", "acme", 1)
    assert find_backend(target) is acme
    assert find_backend(catalog.target("orin-agx")).name == "tensorrt"
    assert find_backend(catalog.target("rk3588")).name == "rknn"


def test_a_new_family_runs_check_optimize_predict_and_export(capsys, tmp_path, acme):
    model = _model(tmp_path / "m.onnx")
    code, out, err = _run(capsys, "targets")
    assert code == 0 and any(line.split()[:2] == ["acme-1", "npu,cpu"] for line in out.splitlines())
    code, out, err = _run(capsys, "check", model, "--target", "acme-1", "--json", tmp_path / "check.json")
    assert code == 0, err
    check = json.loads((tmp_path / "check.json").read_text())
    by_node = {n["name"]: n for n in check["nodes"]}
    assert by_node["conv1"]["supported"]["npu"] == {"int8": True, "fp16": True}
    assert by_node["softmax"]["supported"]["npu"] == {"int8": False, "fp16": False}
    assert "tensorrt_rules" not in check or not check["tensorrt_rules"]

    for objective in ("latency", "throughput"):
        folder = tmp_path / f"plan-{objective}"
        code, out, err = _run(capsys, "optimize", model, "--target", "acme-1", "--objective", objective,
                              "--time-limit", "10", "--out", folder)
        assert code == 0, err
        plan = json.loads((folder / "plan.json").read_text())
        devices = {layer["node"]: layer["device"] for layer in plan["layers"]}
        assert devices["softmax"] == "cpu" and devices["conv1"] == "npu"
        assert set(plan["baselines"]) == {"acme_default"}
        assert plan["predicted"]["latency_ms"] > 0
        handovers = [t for t in plan["transfers"] if {t["from"], t["to"]} == {"npu", "cpu"}]
        assert handovers and all(t["latency_ms"] >= HANDOVER_S * 1e3 for t in handovers)  # the backend priced them

        code, out, err = _run(capsys, "export", folder / "plan.json", "--out", tmp_path / f"export-{objective}")
        assert code == 0, err
        exported = tmp_path / f"export-{objective}"
        manifest = json.loads((exported / "manifest.json").read_text())
        assert manifest["build"] == ["acme_build.json"]
        build = json.loads((exported / "acme_build.json").read_text())
        assert [e["onnx"] for e in build["engines"]] == [e["onnx"] for e in manifest["engines"]]
        assert {e["device"] for e in build["engines"]} == {"npu", "cpu"}
        assert all((exported / e["onnx"]).is_file() for e in build["engines"])

    code, out, err = _run(capsys, "predict", model, "--target", "acme-1", "--accelerator", "npu",
                          "--precision", "int8")
    assert code == 0, err
    assert "(profile acme-prior)" in out and "latency" in out


def test_a_family_naming_an_unregistered_backend_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "acme_npu.toml").write_text(ACME)
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    code, _, err = _run(capsys, "check", _model(tmp_path / "m.onnx"), "--target", "acme-1")
    assert code == 2
    assert "family acme-npu names backend 'acme', which is not registered" in err
    assert len(err.strip().splitlines()) == 1


def test_a_gpu_only_family_of_a_known_toolchain_is_one_toml(capsys, tmp_path, monkeypatch):
    """A Jetson-Thor-like GPU-only family: its file names the existing TensorRT backend, no class to write."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "nvidia_thor.toml").write_text(THOR)
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    model = _model(tmp_path / "m.onnx")
    code, out, err = _run(capsys, "check", model, "--target", "thor-like")
    assert code == 0 and "thor-like has no DLA: every node runs on the GPU" in out, err
    code, out, err = _run(capsys, "optimize", model, "--target", "thor-like", "--time-limit", "5",
                          "--out", tmp_path / "plan")
    assert code == 0, err
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert {layer["device"] for layer in plan["layers"]} == {"gpu"}
    assert set(plan["baselines"]) == {"gpu_only", "trt_default"} and plan["tensorrt_rules"] == "10"
    code, out, err = _run(capsys, "export", tmp_path / "plan" / "plan.json", "--out", tmp_path / "export")
    assert code == 0, err
    assert "--useDLACore" not in (tmp_path / "export" / "build.sh").read_text()
    code, out, err = _run(capsys, "predict", model, "--target", "thor-like", "--accelerator", "gpu",
                          "--precision", "fp16")
    assert code == 0 and "profile thor-prior" in out, err
