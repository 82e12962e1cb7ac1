"""Per-layer timings from trtexec and rknn-toolkit2 eval_perf: parsed, matched to groups, fitted."""

from __future__ import annotations

import json
import tomllib

import pytest
from onnx import helper

from optimizer.calibrate._situation import check_model
from optimizer.calibrate._vendor import observations_from_layers, rknn_perf_layers, trtexec_layers
from optimizer.catalog import load_catalog
from optimizer.errors import BadInputError
from optimizer.latency import load_profile, parse_profile
from tests.conftest import save_model, value, weight
from tests.test_cli import run

CATALOG = load_catalog()


def _net(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="/m/c1/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["a"], ["b"], name="/m/act/Sigmoid"),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="/m/c2/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return save_model(tmp_path / "net.onnx", nodes, [value("x", [1, 64, 56, 56])], [value("y", None)],
                      [weight("w1", [64, 64, 3, 3]), weight("w2", [64, 64, 3, 3])])


PROFILE = [{"count": 200},
           {"name": "/m/c1/Conv + /m/act/Sigmoid", "timeMs": 40.0, "averageMs": 0.2, "medianMs": 0.2, "percentage": 50},
           {"name": "Reformatting CopyNode for Input Tensor 0 to /m/c2/Conv", "timeMs": 2.0, "averageMs": 0.01},
           {"name": "/m/c2/Conv", "timeMs": 30.0, "averageMs": 0.15, "medianMs": 0.15, "percentage": 40},
           {"name": "some plugin", "timeMs": 1.0, "averageMs": 0.005}]
LAYER_INFO = {"Layers": [{"Name": "/m/c1/Conv + /m/act/Sigmoid", "Outputs": [{"Format/Datatype": "Row major linear Int8 format"}]},
                         {"Name": "/m/c2/Conv", "Outputs": [{"Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}]}]}
RKNN_TABLE = """D RKNN: [10:00:00.000] ---------------------------------------------------------------
D RKNN: [10:00:00.000]                          Network Layer Information Table
D RKNN: [10:00:00.000] ID   OpType        DataType Target InputShape        OutputShape     Cycles(DDR/NPU/Total)  Time(us)  MacUsage(%)  WorkLoad(0/1/2)  RW(KB)  FullName
D RKNN: [10:00:00.000] 1    InputOperator INT8     CPU    \\                 (1,64,56,56)    0/0/0                  5         \\            0.0%/0.0%/0.0%   0       InputOperator:x
D RKNN: [10:00:00.000] 2    Conv          INT8     NPU    (1,64,56,56),(64,64,3,3) (1,64,56,56) 1000/2000/2000     420       40.1         100.0%/0.0%/0.0% 500     Conv:/m/c1/Conv
D RKNN: [10:00:00.000] 3    Sigmoid       INT8     NPU    (1,64,56,56)      (1,64,56,56)    100/200/200            80        \\            100.0%/0.0%/0.0% 300     Sigmoid:/m/act/Sigmoid
D RKNN: [10:00:00.000] 4    Conv          INT8     NPU    (1,64,56,56),(64,64,3,3) (1,64,56,56) 1000/2000/2000     400       40.2         100.0%/0.0%/0.0% 500     Conv:/m/c2/Conv
D RKNN: [10:00:00.000] 5    OutputOperator INT8    CPU    (1,64,56,56)      \\               0/0/0                  30        \\            0.0%/0.0%/0.0%   0       OutputOperator:y
D RKNN: [10:00:00.000] Total Operator Elapsed Per Frame Time(us): 935
"""


def test_trtexec_profile_layers_map_to_nodes_with_their_precisions(tmp_path):
    path = _net(tmp_path)
    (tmp_path / "p.json").write_text(json.dumps(PROFILE))
    (tmp_path / "l.json").write_text(json.dumps(LAYER_INFO))
    checked = check_model(path, "orin-agx", CATALOG)
    layers = trtexec_layers(tmp_path / "p.json", tmp_path / "l.json", checked, "fp16")
    by_name = {layer.name: layer for layer in layers}
    assert "Reformatting CopyNode for Input Tensor 0 to /m/c2/Conv" not in by_name  # transfers are not layers
    fused = by_name["/m/c1/Conv + /m/act/Sigmoid"]
    assert (fused.nodes, fused.device, fused.precision, fused.ms) == (("/m/c1/Conv", "/m/act/Sigmoid"), "gpu", "int8", 0.2)
    assert by_name["/m/c2/Conv"].precision == "fp16"
    assert by_name["some plugin"].nodes == ()
    (tmp_path / "dla.json").write_text(json.dumps([{"count": 10}, {"name": "{ForeignNode[/m/c1/Conv.../m/c2/Conv]}",
                                                                    "averageMs": 0.5}]))
    (dla,) = trtexec_layers(tmp_path / "dla.json", None, checked, "int8")
    assert (dla.device, dla.nodes, dla.precision) == ("dla", ("/m/c1/Conv", "/m/act/Sigmoid", "/m/c2/Conv"), "int8")
    obs, unmatched = observations_from_layers([*layers, dla], checked, "orin-agx", CATALOG,
                                              load_profile("nvidia-dla", prior=True), "p.json")
    assert unmatched == ["some plugin"] and len(obs) == 3
    assert obs[-1].scenario.stage.fixed_s > 0  # a DLA loadable pays its launch
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(BadInputError, match="not JSON"):
        trtexec_layers(tmp_path / "bad.json", None, checked, "fp16")


def test_rknn_eval_perf_table_rows_become_npu_layer_times(tmp_path):
    layers = rknn_perf_layers(RKNN_TABLE, "perf.txt")
    assert [(layer.nodes, layer.device, layer.precision, layer.ms) for layer in layers] == [
        (("/m/c1/Conv",), "npu", "int8", 0.42), (("/m/act/Sigmoid",), "npu", "int8", 0.08),
        (("/m/c2/Conv",), "npu", "int8", 0.4)]
    with pytest.raises(BadInputError, match="eval_perf"):
        rknn_perf_layers("no table here\n", "perf.txt")


def test_calibrate_from_per_layer_times_alone_moves_the_profile_towards_them(tmp_path):
    """Layers timed at twice the prior's prediction: the fitted profile predicts them about twice as slow."""
    path = _net(tmp_path)
    prior = load_profile("rockchip-rknn", prior=True)
    checked = check_model(path, "rk3588", CATALOG)
    layers = rknn_perf_layers(RKNN_TABLE, "perf.txt")
    obs, _ = observations_from_layers(layers, checked, "rk3588", CATALOG, prior, "perf.txt")
    from optimizer.calibrate import score

    modelled = {o.label: score(o.scenario, prior.constants).latency_s * 1e3 for o in obs}
    table = RKNN_TABLE
    for layer, o in zip(layers, obs):
        table = table.replace(f" {round(layer.ms * 1e3)} ", f" {round(2e3 * modelled[o.label])} ", 1)
    (tmp_path / "perf.txt").write_text(table)
    result = run("calibrate", "--rknn-perf", str(tmp_path / "perf.txt"), "--model", str(path), "--target", "rk3588",
                 "--out", str(tmp_path / "cal"), "--no-cv")
    assert result.returncode == 0, result.stderr
    fitted = parse_profile((tmp_path / "cal" / "latency_rockchip_rknn.toml").read_text(), "fitted")
    assert "perf.txt" in fitted.fitted_on
    sections = tomllib.loads((tmp_path / "cal" / "latency_rockchip_rknn.toml").read_text())["targets"]
    assert {key for key, section in sections.items() if section["rows"]} == {"rk3588"}
    # keys without rows: RK3588's generation (rknpu2) borrows its fit, RK3566's older NPU keeps the prior
    fitted_npu = fitted.constants("rk3588", "npu")
    for key in ("rk3562", "rk3576", "rv1126b"):
        assert fitted.constants(key, "npu").layer_overhead_us == pytest.approx(fitted_npu.layer_overhead_us, rel=1e-5)
    for key in ("rk3566", "rv1106"):
        assert fitted.constants(key, "npu") == prior.constants(key, "npu")
    for o in obs:
        ratio = score(o.scenario, fitted.constants).latency_s * 1e3 / modelled[o.label]
        assert 1.6 < ratio < 2.4, (o.label, ratio)
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert report["csv"] is None and report["families"]["rockchip-rknn"]["fit"]["rows"] == 3
    missing = run("calibrate", "--rknn-perf", str(tmp_path / "perf.txt"), "--out", str(tmp_path / "x"))
    assert missing.returncode == 2 and "need --model MODEL and --target T" in missing.stderr
    nothing = run("calibrate", "--out", str(tmp_path / "x"))
    assert nothing.returncode == 2 and "nothing to fit" in nothing.stderr
