"""edgeplan predict: fixed situations scored by the planner's latency model, as a user runs them."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
import tomli_w
from onnx import helper

from optimizer.calibrate import Situation, predict, prepare, score
from optimizer.calibrate._situation import combine, stage_times
from optimizer.catalog import load_catalog
from optimizer.latency import load_profile
from tests.conftest import save_model, value, weight
from tests.test_cli import run

CATALOG = load_catalog()


def _net(tmp_path, fallback: bool = False, batch: int = 1, c: int = 128, hw: int = 56):
    """conv -> relu -> (Sin, which no accelerator runs) -> conv."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="r1")]
    last = "b"
    if fallback:
        nodes.append(helper.make_node("Sin", ["b"], ["s"], name="sin"))
        last = "s"
    nodes.append(helper.make_node("Conv", [last, "w2"], ["y"], name="c2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    name = f"net_{int(fallback)}_{batch}_{c}_{hw}.onnx"
    return save_model(tmp_path / name, nodes, [value("x", [batch, c, hw, hw])], [value("y", None)],
                      [weight("w1", [c, c, 3, 3]), weight("w2", [c, c, 3, 3])])


def _predict(path, target, **kw):
    return predict(path, target, Situation(**kw), catalog=CATALOG)


def test_batch_amortises_overheads_and_throughput_is_items_per_second(tmp_path):
    path = _net(tmp_path)
    one = _predict(path, "orin-agx", accelerator="gpu", precision="fp16", batch=1)
    eight = _predict(path, "orin-agx", accelerator="gpu", precision="fp16", batch=8)
    assert one.figure.latency_s < eight.figure.latency_s < 8 * one.figure.latency_s
    assert eight.figure.throughput == pytest.approx(8 / eight.figure.latency_s)
    assert eight.figure.throughput > one.figure.throughput


def test_two_dla_cores_double_throughput_unless_they_queue_on_the_gpu(tmp_path):
    pure = _net(tmp_path)
    one = _predict(pure, "orin-agx", accelerator="dla", precision="int8", metric="throughput")
    two = _predict(pure, "orin-agx", accelerator="dla", precision="int8", cores=2, metric="throughput")
    # each stream reads DRAM while the other does (test_physics: shared DRAM), so not quite twice
    assert one.figure.throughput < two.figure.throughput < 2 * one.figure.throughput
    assert two.figure.throughput > 1.5 * one.figure.throughput
    assert two.figure.latency_s == one.figure.latency_s
    assert one.scenario.accelerator_share == 1.0
    mixed = _net(tmp_path, fallback=True)
    profile = load_profile("nvidia-dla")
    scenario = prepare(mixed, "orin-agx", Situation("dla", "int8", cores=2, metric="throughput"), CATALOG, profile)
    latency, busy = stage_times(scenario.stage, profile.constants)
    assert busy["gpu"] > 0  # Sin and the copies around it
    crowded = combine(scenario.situation, latency, {"gpu": latency})  # the GPU is the bottleneck
    assert crowded.throughput == pytest.approx(2 / (2 * latency))


def test_a_gpu_engine_beside_the_dla_engines_adds_its_throughput(tmp_path):
    path = _net(tmp_path)
    dla = _predict(path, "orin-agx", accelerator="dla", precision="int8", cores=2, batch=2, metric="throughput")
    both = _predict(path, "orin-agx", accelerator="dla", precision="int8", cores=2, batch=2, gpu_batch=16,
                    metric="throughput")
    gpu = _predict(path, "orin-agx", accelerator="gpu", precision="int8", batch=16, metric="throughput")
    # the engines share the DRAM: more than either alone, less than the sum of both alone
    assert max(dla.figure.throughput, gpu.figure.throughput) < both.figure.throughput
    assert both.figure.throughput < dla.figure.throughput + gpu.figure.throughput


def test_npu_cores_split_one_inference_and_io_conversion_is_optional(tmp_path):
    path = _net(tmp_path, c=256, hw=80)
    one = _predict(path, "rk3588", accelerator="npu", precision="int8")
    three = _predict(path, "rk3588", accelerator="npu", precision="int8", cores=3)
    assert three.figure.latency_s < one.figure.latency_s
    bare = _predict(path, "rk3588", accelerator="npu", precision="int8", io_included=False)
    assert bare.figure.latency_s < one.figure.latency_s  # NCHW <-> NC1HWC2 on the CPU left out


def test_scenario_scores_equal_the_planner_evaluation(tmp_path):
    """predict and optimize score one placement identically: predict's GPU-only equals the plan's baseline."""
    from optimizer.plan import optimize
    from optimizer.solver import PlanRequest

    path = _net(tmp_path, fallback=True)
    planned = optimize(str(path), "orin-agx", PlanRequest(allowed_precisions=frozenset({"fp16"})))
    gpu = _predict(path, "orin-agx", accelerator="gpu", precision="fp16")
    assert gpu.figure.latency_s * 1e3 == pytest.approx(planned.plan.baselines["gpu_only"].latency_ms, abs=1e-5)
    auto = _predict(path, "orin-agx", accelerator="auto", precision="fp16")
    assert auto.figure.latency_s * 1e3 == pytest.approx(planned.plan.predicted.latency_ms, abs=1e-5)
    # a scenario carries Work, not times: other constants rescore it (what calibration relies on)
    prior = load_profile("nvidia-dla", prior=True)
    assert score(auto.scenario, prior.constants).latency_s != pytest.approx(auto.figure.latency_s, rel=1e-3)


def test_predict_cli_prints_the_spec_json(tmp_path):
    path = _net(tmp_path)
    result = run("predict", str(path), "--target", "orin-agx", "--accelerator", "dla", "--precision", "int8",
                 "--batch", "8", "--cores", "2", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "edgeplan.predict/v1"
    assert (data["target"], data["accelerator"], data["precision"], data["batch"], data["cores"]) == \
        ("orin-agx", "dla", "int8", 8, 2)
    assert data["model"]["path"] == str(path) and len(data["model"]["sha256"]) == 64
    assert data["throughput_fps"] == pytest.approx(2 * 8 / (data["latency_ms"] / 1e3), rel=1e-4)
    text = run("predict", str(path), "--target", "orin-agx-15w", "--accelerator", "dla", "--precision", "int8")
    assert text.returncode == 0 and "ms per batch of 1" in text.stdout
    maxn = json.loads(run("predict", str(path), "--target", "orin-agx", "--accelerator", "dla", "--precision",
                          "int8", "--json").stdout)
    low = json.loads(run("predict", str(path), "--target", "orin-agx-15w", "--accelerator", "dla", "--precision",
                         "int8", "--json").stdout)
    assert low["latency_ms"] > maxn["latency_ms"]  # a power mode is slower clocks, same rules


@pytest.mark.parametrize(("args", "message"), [
    (("--target", "rk3588", "--accelerator", "dla", "--precision", "int8"), "rk3588 has no DLA"),
    (("--target", "orin-agx", "--accelerator", "npu", "--precision", "int8"), "orin-agx has no NPU"),
    (("--target", "orin-agx", "--accelerator", "dla", "--precision", "fp32"), "not fp32"),
    (("--target", "orin-agx", "--accelerator", "dla", "--precision", "int8", "--cores", "3"), "--cores must be 1..2"),
    (("--target", "rk3566", "--accelerator", "npu", "--precision", "int8", "--cores", "2"), "--cores must be 1..1"),
    (("--target", "rk3588", "--accelerator", "npu", "--precision", "int8", "--sparse"), "sparse weights"),
    (("--target", "orin-agx", "--accelerator", "gpu", "--precision", "int8", "--batch", "0"), "--batch must be"),
    (("--target", "orin-agx", "--accelerator", "gpu", "--precision", "int8", "--gpu-batch", "4"), "gpu_batch"),
    (("--target", "orin-agx", "--accelerator", "gpu", "--precision", "int8", "--profile", "nope.toml"),
     "profile file not found"),
    (("--target", "orin-agx", "--accelerator", "cpu", "--precision", "fp32"), "modelled for RKNN targets"),
    (("--target", "rk3588", "--accelerator", "cpu", "--precision", "int8"), "cpu on rk3588 offers fp32"),
    (("--target", "rk3588", "--accelerator", "npu", "--precision", "int8", "--nms"), "rk3588 has none"),
])
def test_impossible_situations_are_one_line_errors(tmp_path, args, message):
    path = _net(tmp_path)
    result = run("predict", str(path), *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_batch_must_be_a_multiple_of_the_exported_batch(tmp_path):
    path = _net(tmp_path, batch=4, c=16, hw=8)
    result = run("predict", str(path), "--target", "orin-agx", "--accelerator", "gpu", "--precision", "fp16",
                 "--batch", "6")
    assert result.returncode == 2 and "exported at batch 4" in result.stderr and str(path) in result.stderr
    ok = json.loads(run("predict", str(path), "--target", "orin-agx", "--accelerator", "gpu", "--precision", "fp16",
                        "--batch", "8", "--json").stdout)
    assert ok["batch"] == 8


def test_predict_carries_the_leave_one_source_out_band_of_comparable_rows(tmp_path):
    """The shipped profiles hold [bands] from LOSO; predict prints "likely LOW-HIGH ms" and puts it in JSON."""
    path = _net(tmp_path)
    data = json.loads(run("predict", str(path), "--target", "rk3588", "--accelerator", "npu", "--precision", "int8",
                          "--json").stdout)
    band = data["latency_band_ms"]
    assert band["low"] < data["latency_ms"] < band["high"]
    assert band["low"] == pytest.approx(data["latency_ms"] * band["ratio_low"], rel=1e-4)
    assert band["rows"] >= 5 and band["scope"].startswith(("rk3588/npu/int8", "rk3588/npu/*", "*/npu/"))
    profile = load_profile("rockchip-rknn")
    assert profile.band("rk3588", "npu", "int8").scope == band["scope"]
    text = run("predict", str(path), "--target", "rk3588", "--accelerator", "npu", "--precision", "int8").stdout
    printed = re.search(r"\(likely ([\d.]+)-([\d.]+) ms\)", text)  # 4 significant digits of the same figures
    assert printed is not None
    assert float(printed.group(1)) == pytest.approx(band["low"], rel=1e-3)
    assert float(printed.group(2)) == pytest.approx(band["high"], rel=1e-3)
    # a profile calibrated without cross-validation has no band, and says so
    bare = tmp_path / "bare.toml"
    raw = tomllib.loads(profile.text)
    del raw["bands"]
    bare.write_text(tomli_w.dumps(raw), encoding="utf-8")
    plain = run("predict", str(path), "--target", "rk3588", "--accelerator", "npu", "--precision", "int8",
                "--profile", str(bare))
    assert plain.returncode == 0 and "no error band" in plain.stdout


def test_predict_cpu_answers_for_every_rknn_target(tmp_path):
    path = _net(tmp_path, c=32, hw=28)
    for target in sorted(t for t, v in CATALOG.targets.items() if v.accelerator == "npu"):
        cpu = json.loads(run("predict", str(path), "--target", target, "--accelerator", "cpu", "--precision", "fp32",
                             "--json").stdout)
        npu = json.loads(run("predict", str(path), "--target", target, "--accelerator", "npu", "--precision",
                             "int8", "--json").stdout)
        assert cpu["accelerator_share_of_macs"] == 0.0 and cpu["latency_ms"] > npu["latency_ms"], target


def test_nms_adds_one_fp32_read_of_every_output_and_four_launches_on_the_gpu(tmp_path):
    """nms_seconds = 4 B x outputs / (bandwidth x GPU bandwidth efficiency) + 4 x layer overhead; the output
    here is 128 x 56 x 56 = 401,408 elements (1.6 MB: 12 us on AGX Orin). A DLA engine's images need the same
    GPU pass, which the GPU's busy time carries."""
    from optimizer.latency._postprocess import NMS_KERNELS, nms_seconds

    path = _net(tmp_path)
    target = CATALOG.target("orin-agx")
    profile = load_profile(target.family)
    gpu = profile.constants(target.calibration, "gpu")
    bandwidth = target.figures["emc_mhz"].value * 1e6 * 2 * target.figures["dram_bus_bits"].value / 8
    expected = 4 * 128 * 56 * 56 / (bandwidth * gpu.bandwidth_efficiency) + NMS_KERNELS * gpu.layer_overhead_us * 1e-6
    assert nms_seconds(128 * 56 * 56, bandwidth, gpu.bandwidth_efficiency, gpu.layer_overhead_us) == expected
    for accelerator in ("gpu", "dla"):
        plain = _predict(path, "orin-agx", accelerator=accelerator, precision="int8")
        nms = _predict(path, "orin-agx", accelerator=accelerator, precision="int8", nms=True)
        assert nms.figure.latency_s - plain.figure.latency_s == pytest.approx(expected, rel=1e-6)
        busy = stage_times(nms.scenario.stage, profile.constants)[1]["gpu"]
        assert busy - stage_times(plain.scenario.stage, profile.constants)[1].get("gpu", 0.0) == pytest.approx(
            expected, rel=1e-6)
    assert nms_seconds(0, bandwidth, 0.5, 4.0) == 0.0
    cli = run("predict", str(path), "--target", "orin-agx", "--accelerator", "dla", "--precision", "int8", "--nms",
              "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["latency_ms"] == pytest.approx(nms.figure.latency_s * 1e3, abs=1e-6)
