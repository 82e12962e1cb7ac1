"""The calibration CSV: which rows edgeplan can reproduce, in which situation, and why the others not."""

from __future__ import annotations

import contextlib
import csv
import io
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.calibrate._measurements import COLUMNS, model_family, origin_of, read_measurements
from optimizer.errors import BadInputError
from tests.conftest import EXAMPLES, SHARED

DATA = SHARED / "data"
HEADER = [*COLUMNS, "match_notes"]


def _row(**fields: str) -> dict[str, str]:
    base = dict.fromkeys(HEADER, "")
    base.update(source="s", device="RK3588", accelerator="npu", cores="1", precision="INT8", batch="1",
                model="m", metric="fps", value="50", unit="frames/s", onnx="m.onnx", match="exact")
    base.update(fields)
    return base


def _read(tmp_path, rows):
    path = tmp_path / "m.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    return read_measurements(path, tmp_path)


def test_situations_and_units_are_read_as_the_sources_state_them(tmp_path):
    rows = _read(tmp_path, [
        _row(notes="NPU inference time only"),
        _row(metric="latency", value="25.5", unit="ms", match_notes="value includes Go/rknn I/O handling"),
        _row(device="Jetson AGX Orin 64GB", accelerator="dla", cores="2", batch="2", metric="throughput",
             value="2037", unit="images/s", notes="power mode 30W; JetPack 5.1.1"),
        _row(device="Jetson Orin (variant unstated)", accelerator="dla+gpu", cores="1 (DLA0) + GPU fallback",
             batch="32", metric="throughput", value="305.9", unit="batches/s (qps)"),
        _row(device="Jetson AGX Orin 32GB", accelerator="dla+gpu", cores="GPU + 2 DLA",
             batch="GPU 256 / DLA 2 per core", metric="throughput", value="6438.1", unit="samples/s"),
        _row(device="Jetson Xavier NX", accelerator="gpu", batch="8", metric="throughput", value="546.69",
             unit="images/s"),
        _row(device="RK3576", model="yolov8s (sparse weights)", notes="@sparse_weight column"),
    ])
    assert all(m.usable for m in rows), [m.reason for m in rows]
    zoo, go, dla_sw, tutorial, offline, gpu, sparse = rows
    assert (zoo.metric, zoo.observed, zoo.situation.io_included) == ("throughput", 50.0, False)
    assert (go.metric, go.observed, go.situation.io_included) == ("latency", 25.5, True)
    assert dla_sw.target == "orin-agx-30w"
    assert (dla_sw.situation.accelerator, dla_sw.situation.cores, dla_sw.situation.batch) == ("dla", 2, 2)
    assert tutorial.observed == pytest.approx(305.9 * 32)  # batches/s -> frames/s
    assert (tutorial.target, tutorial.situation.cores) == ("orin-agx", 1)
    assert (offline.situation.gpu_batch, offline.situation.batch, offline.situation.cores) == (256, 2, 2)
    assert (gpu.situation.accelerator, gpu.situation.batch) == ("gpu", 8)
    assert sparse.situation.sparse and not zoo.situation.sparse


@pytest.mark.parametrize(("fields", "reason"), [
    ({"onnx": "", "match": "none"}, "no matching ONNX"),
    ({"device": "Jetson TX2"}, "not an edgeplan target"),
    ({"match_notes": "value covers only the named TensorRT layer range"}, "part of the network"),
    ({"match_notes": "value is the added latency of marking that layer's output"}, "part of the network"),
    ({"precision": "unspecified"}, "precision"),
    ({"device": "Jetson AGX Orin 64GB", "accelerator": "dla", "precision": "INT8 2:4-sparse"}, "DLA sparsity"),
    ({"unit": "ms per image (avg, pipelined)", "metric": "throughput", "cores": "2 of 3 (runtimes)"}, "pool"),
    ({"batch": "not verified"}, "batch"),
    ({"metric": "tokens", "unit": "tokens/s"}, "not a latency or a throughput"),
    ({"value": "n/a"}, "not a latency or a throughput"),
])
def test_rows_edgeplan_cannot_reproduce_say_why(tmp_path, fields, reason):
    (row,) = _read(tmp_path, [_row(**fields)])
    assert not row.usable and reason in row.reason


def test_bad_csv_files_are_one_line_errors(tmp_path):
    with pytest.raises(BadInputError, match="not found"):
        read_measurements(tmp_path / "missing.csv", tmp_path)
    (tmp_path / "short.csv").write_text("source,device\nx,y\n")
    with pytest.raises(BadInputError, match="lacks columns accelerator"):
        read_measurements(tmp_path / "short.csv", tmp_path)
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BadInputError):
        read_measurements(tmp_path / "bin.csv", tmp_path)


def test_sources_group_releases_of_one_publisher():
    assert origin_of("GitHub mlcommons/inference_results_v3.0 closed/NVIDIA ...") == "mlcommons/inference_results"
    assert origin_of("GitHub mlcommons/inference_results_v1.1 x") == origin_of("mlcommons/inference_results_v2.0")
    assert origin_of("GitHub airockchip/rknn_model_zoo README.md @bad6c73") == "airockchip/rknn_model_zoo"


def test_model_families_group_variants_of_one_network():
    assert model_family("yolov5s_640_rknn.onnx") == model_family("yolov5n_seg_640_rknn.onnx") == "yolov5"
    assert model_family("yolov8n_pose_640.onnx") == "yolov8"
    assert model_family("resnet50_v2_224.onnx") == model_family("resnet34_trunk_768x1280.onnx") == "resnet"
    assert model_family("ssd_mobilenet_v1_300x300.onnx") == "ssd"


@pytest.mark.skipif(not (DATA / "published_latency_calibration.csv").exists(), reason="../shared/data absent")
def test_the_public_csv_has_usable_rows_on_every_device_family():
    rows = read_measurements(DATA / "published_latency_calibration.csv", DATA / "latency-models")
    usable = [m for m in rows if m.usable]
    assert len(rows) == 276 and len(usable) == 147
    assert all(m.onnx and (DATA / "latency-models" / m.onnx.rsplit("/", 1)[-1]).exists() for m in usable)
    per_target = {}
    for m in usable:
        per_target[m.target] = per_target.get(m.target, 0) + 1
    assert {t for t, n in per_target.items() if n >= 5} >= {"rk3588", "rk3576", "rk3566", "rk3562", "orin-agx",
                                                           "xavier-nx"}


VALUES = ["", "x", "1", "-3", "0", "1e400", "nan", "INT8", "FP16", "npu", "dla+gpu", "fps", "latency", "frames/s",
          "ms", "GPU 8 / DLA 2", "RK3588", "Jetson AGX Orin 64GB", "exact", "m.onnx", "../../etc/passwd",
          "\u00e9\u00e8", "\x00"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.lists(st.tuples(st.sampled_from(HEADER), st.sampled_from(VALUES)), max_size=4),
                      min_size=1, max_size=5))
def test_hostile_measurement_files_end_in_one_line(tmp_path, edits):
    """calibrate reads CSVs from anywhere: valid rows with a few fields replaced by hostile values exit 0 or 2
    with one line, never a traceback."""
    from optimizer.cli import main

    shutil.copy(EXAMPLES / "resnet18.onnx", tmp_path / "m.onnx")
    path = tmp_path / "hostile.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        for row_edits in edits:
            writer.writerow({**_row(notes="NPU inference time only"), **dict(row_edits)})
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["calibrate", "--csv", str(path), "--models", str(tmp_path), "--out", str(tmp_path / "out"),
                     "--no-cv"])
    assert code in (0, 2), err.getvalue()
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), err.getvalue()
    if code == 2:
        assert len(err.getvalue().strip().splitlines()) == 1
    else:
        assert (tmp_path / "out" / "latency_rockchip_rknn.toml").is_file()


def test_a_harness_records_name_the_machine_it_ran_on(tmp_path):
    """MLPerf's Orin_TRT system (12 CPU cores, 32 GB) is the AGX Orin devkit, not the 1792-core 32GB module;
    jetson_benchmarks runs nvpmodel mode 0, on Xavier NX the 15W mode."""
    mlperf = "GitHub mlcommons/inference_results_v3.0 closed/NVIDIA/results/Orin_TRT/resnet50/SingleStream/x"
    rows = _read(tmp_path, [
        _row(source=mlperf, device="Jetson AGX Orin 32GB", accelerator="gpu", metric="latency", unit="ms"),
        _row(source="GitHub other/harness x", device="Jetson AGX Orin 32GB", accelerator="gpu", metric="latency",
             unit="ms"),
        _row(source="GitHub NVIDIA-AI-IOT/jetson_benchmarks README.md", device="Jetson Xavier NX",
             accelerator="gpu"),
        _row(source="GitHub NVIDIA-AI-IOT/jetson_benchmarks README.md", device="Jetson AGX Xavier",
             accelerator="gpu"),
    ])
    assert [m.target for m in rows] == ["orin-agx", "orin-agx-32gb", "xavier-nx-15w", "xavier-agx"]


def test_a_harness_that_times_nms_beside_the_graph_is_read_as_such(tmp_path):
    """MLPerf detection rows say the pipeline also runs decoding/NMS: their situation carries nms; an NPU row
    or a row without the note does not; 13 usable rows of the public CSV (of 16 with the note) are such, all on Jetson."""
    note = "measured pipeline also runs box decoding/NMS (not in this graph)"
    gpu, npu, plain = _read(tmp_path, [
        _row(device="Jetson AGX Orin 64GB", accelerator="gpu", metric="latency", unit="ms", value="2",
             match_notes=note),
        _row(match_notes=note), _row(device="Jetson AGX Orin 64GB", accelerator="gpu", metric="latency", unit="ms")])
    assert gpu.situation is not None and gpu.situation.nms and gpu.situation.command("m", "t").endswith("--nms")
    assert npu.situation is not None and not npu.situation.nms
    assert plain.situation is not None and not plain.situation.nms
    public = [m for m in read_measurements(DATA / "published_latency_calibration.csv", DATA / "latency-models")
              if m.situation is not None and m.situation.nms]
    assert len(public) == 13 and all(m.target.startswith(("orin", "xavier")) for m in public)


def test_a_harness_that_reports_trtexec_gpu_time_is_read_as_engine_time(tmp_path):
    """jetson_benchmarks' FPS is batch x 1000 / trtexec's 'GPU latency' and HaX-CoNN gives trtexec's GPU-compute
    time: no host enqueue or sync in either. MLPerf's loadgen latency has them; an NPU row never carries the flag.
    In the public CSV: the 5 usable jetson_benchmarks rows and HaX-CoNN's 2 whole-network rows."""
    bench = "GitHub NVIDIA-AI-IOT/jetson_benchmarks README.md"
    timed, hax, mlperf, npu = _read(tmp_path, [
        _row(source=bench, device="Jetson Xavier NX", accelerator="gpu"),
        _row(source="GitHub ismetdagli/HaX-CoNN x", device="Jetson AGX Xavier", accelerator="gpu", metric="latency",
             unit="ms"),
        _row(source="GitHub mlcommons/inference_results_v2.0 x", device="Jetson Xavier NX", accelerator="gpu",
             metric="latency", unit="ms"),
        _row(source=bench)])
    assert timed.situation is not None and not timed.situation.host_timed
    assert "--engine-time" in timed.situation.command("m", "t").split()
    assert hax.situation is not None and not hax.situation.host_timed
    assert mlperf.situation is not None and mlperf.situation.host_timed
    assert npu.situation is not None and npu.situation.host_timed
    public = [m for m in read_measurements(DATA / "published_latency_calibration.csv", DATA / "latency-models")
              if m.situation is not None and not m.situation.host_timed]
    assert sorted(m.origin for m in public) == ["NVIDIA-AI-IOT/jetson_benchmarks"] * 5 + ["ismetdagli/HaX-CoNN"] * 2


def test_harnesses_without_io_format_flags_are_read_with_tensorrt_default_formats(tmp_path):
    """jetson_benchmarks and the DLA tutorial run trtexec without --inputIOFormats/--outputIOFormats, HaX-CoNN's
    builder sets no formats: their DLA rows are scored in TensorRT's defaults; DLA-SW passes int8:dla_hwc4 /
    int8:chw32 and MLPerf's builder picks its own, so theirs are not; their GPU engines (FP32 linear model I/O)
    carry it too."""
    bench = "GitHub NVIDIA-AI-IOT/jetson_benchmarks README.md"
    dla, gpu, tutorial, dlasw = _read(tmp_path, [
        _row(source=bench, device="Jetson Xavier NX", accelerator="dla"),
        _row(source=bench, device="Jetson Xavier NX", accelerator="gpu"),
        _row(source="GitHub NVIDIA-AI-IOT/jetson_dla_tutorial README.md", device="Jetson AGX Orin 64GB",
             accelerator="dla+gpu", cores="1 (DLA0) + GPU fallback"),
        _row(source="GitHub NVIDIA/Deep-Learning-Accelerator-SW README.md", device="Jetson AGX Orin 64GB",
             accelerator="dla")])
    assert dla.situation is not None and dla.situation.default_formats
    assert tutorial.situation is not None and tutorial.situation.default_formats
    assert gpu.situation is not None and gpu.situation.default_formats
    assert dlasw.situation is not None and not dlasw.situation.default_formats
    public = [m for m in read_measurements(DATA / "published_latency_calibration.csv", DATA / "latency-models")
              if m.situation is not None and m.situation.default_formats]
    assert sorted({m.origin for m in public}) == ["NVIDIA-AI-IOT/jetson_benchmarks", "NVIDIA-AI-IOT/jetson_dla_tutorial",
                                                   "ismetdagli/HaX-CoNN"]
    assert {m.situation.accelerator for m in public if m.situation is not None} == {"gpu", "dla"}
