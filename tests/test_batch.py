"""Batch: one broken model never stops the others; resume by content hash; same plans with 1 or 2 workers."""

from __future__ import annotations

import csv
import shutil

import pytest

from optimizer.batch import run_batch
from optimizer.errors import BadInputError
from tests.conftest import EXAMPLES
from tests.test_cli import run


def _models(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("resnet18.onnx", "yolov8n.onnx"):
        shutil.copy(EXAMPLES / name, folder / name)
    (folder / "broken.onnx").write_bytes(b"\x08garbage")
    return folder


def test_broken_model_is_recorded_and_the_rest_finish(tmp_path):
    folder = _models(tmp_path)
    rows = run_batch([str(folder / "*.onnx")], ["orin-agx", "rk3576"], str(tmp_path / "out"))
    by = {(r["model"].split("/")[-1], r["target"]): r for r in rows}
    assert len(rows) == 6
    assert by[("broken.onnx", "orin-agx")]["status"] == "failed"
    assert "broken.onnx" in by[("broken.onnx", "orin-agx")]["error"]
    assert all(by[(m, t)]["status"] == "ok" for m in ("resnet18.onnx", "yolov8n.onnx") for t in ("orin-agx", "rk3576"))
    assert (tmp_path / "out" / "yolov8n" / "rk3576" / "plan.json").is_file()
    summary = list(csv.DictReader((tmp_path / "out" / "summary.csv").open()))
    assert len(summary) == 6 and {"model", "target", "status", "error", "latency_ms", "speedup", "solve_s",
                                  "accelerator_coverage", "nodes"} <= set(summary[0])
    assert "<table class=\"sortable\">" in (tmp_path / "out" / "summary.html").read_text()


def test_resume_skips_finished_jobs_by_content_hash(tmp_path):
    folder = _models(tmp_path)
    out = tmp_path / "out"
    run_batch([str(folder / "*.onnx")], ["rk3588"], str(out))
    again = run_batch([str(folder / "*.onnx")], ["rk3588"], str(out))
    assert all(r.get("skipped") for r in again)
    shutil.copy(EXAMPLES / "resnet18.onnx", folder / "yolov8n.onnx")  # content changed: rerun that job only
    third = run_batch([str(folder / "*.onnx")], ["rk3588"], str(out))
    assert [bool(r.get("skipped")) for r in third if "yolov8n" in r["model"]] == [False]
    assert sum(bool(r.get("skipped")) for r in third) == 2


def test_one_and_two_workers_give_identical_plans(tmp_path):
    folder = _models(tmp_path)
    run_batch([str(folder / "*.onnx")], ["orin-agx", "rk3588"], str(tmp_path / "w1"), workers=1)
    run_batch([str(folder / "*.onnx")], ["orin-agx", "rk3588"], str(tmp_path / "w2"), workers=2)
    for stem in ("resnet18", "yolov8n"):
        for target in ("orin-agx", "rk3588"):
            a = (tmp_path / "w1" / stem / target / "plan.json").read_bytes()
            b = (tmp_path / "w2" / stem / target / "plan.json").read_bytes()
            assert a == b


def test_list_file_and_cli(tmp_path):
    folder = _models(tmp_path)
    listing = tmp_path / "models.txt"
    listing.write_text("# two models\nmodels/resnet18.onnx\nmodels/broken.onnx\n")
    result = run("batch", str(listing), "--target", "rk3566", "--out", str(tmp_path / "out"))
    assert result.returncode == 2  # a job failed: the pipeline running the batch must notice
    assert "2 jobs, 1 ok, 1 failed" in result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("edgeplan: failed: ") and "broken.onnx" in line
    good = run("batch", str(folder / "resnet18.onnx"), "--target", "rk3566", "--out", str(tmp_path / "good"))
    assert good.returncode == 0 and good.stderr == ""
    bad = run("batch", str(folder / "none*.onnx"), "--target", "rk3566", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "no file matches" in bad.stderr


def test_bad_target_fails_before_any_job(tmp_path):
    with pytest.raises(BadInputError, match="unknown target"):
        run_batch([str(EXAMPLES / "resnet18.onnx")], ["nope"], str(tmp_path / "out"))


@pytest.mark.slow
def test_dask_local_cluster_runs_the_same_jobs(tmp_path):
    distributed = pytest.importorskip("distributed")
    folder = _models(tmp_path)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        rows = run_batch([str(folder / "*.onnx")], ["rk3588"], str(tmp_path / "dask"), dask_address=cluster.scheduler_address)
    local = run_batch([str(folder / "*.onnx")], ["rk3588"], str(tmp_path / "local"))
    assert [r["status"] for r in rows] == [r["status"] for r in local]
    assert (tmp_path / "dask" / "yolov8n" / "rk3588" / "plan.json").read_bytes() == \
        (tmp_path / "local" / "yolov8n" / "rk3588" / "plan.json").read_bytes()


def _slow_npu_profile(tmp_path):
    from optimizer.latency import load_profile

    text = load_profile("rockchip-rknn", prior=True).text.replace("conv = 0.45,", "conv = 0.02,", 1)
    path = tmp_path / "slow_npu.toml"
    path.write_text(text)
    return path


def test_a_calibrated_profile_reaches_every_job_of_its_family(tmp_path):
    folder = _models(tmp_path)
    out = tmp_path / "out"
    shipped = {(r["model"], r["target"]): r for r in run_batch([str(folder / "resnet18.onnx")], ["rk3588", "orin-agx"],
                                                                str(out))}
    slow = _slow_npu_profile(tmp_path)
    again = {(r["model"], r["target"]): r for r in run_batch([str(folder / "resnet18.onnx")], ["rk3588", "orin-agx"],
                                                              str(out), profiles=[str(slow)])}
    model = str(folder / "resnet18.onnx")
    assert not again[(model, "rk3588")].get("skipped")  # a new profile is a new job
    assert again[(model, "rk3588")]["latency_ms"] > 3 * shipped[(model, "rk3588")]["latency_ms"]
    assert again[(model, "orin-agx")].get("skipped")  # the Jetson job never used the RKNN profile
    with pytest.raises(BadInputError, match="two --profile files for family rockchip-rknn"):
        run_batch([model], ["rk3588"], str(out), profiles=[str(slow), str(slow)])
    result = run("batch", model, "--target", "rk3588", "--out", str(tmp_path / "cli"), "--profile", str(slow))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader((tmp_path / "cli" / "summary.csv").open()))
    assert float(rows[0]["latency_ms"]) == again[(model, "rk3588")]["latency_ms"]
    missing = run("batch", model, "--target", "rk3588", "--out", str(tmp_path / "x"), "--profile", "nope.toml")
    assert missing.returncode == 2 and "nope.toml: profile file not found" in missing.stderr


def _workers_of(pid: int) -> list:
    psutil = pytest.importorskip("psutil")
    try:
        children = psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return []
    return [c for c in children if "multiprocessing.spawn" in " ".join(c.cmdline())]


def _slow_batch(tmp_path, jobs: int) -> tuple:
    import subprocess

    from tests.test_cli import EDGEPLAN
    folder = tmp_path / "models"
    folder.mkdir()
    for i in range(jobs):
        shutil.copy(EXAMPLES / "yolov8n.onnx", folder / f"m{i}.onnx")
    out = tmp_path / "out"
    proc = subprocess.Popen([EDGEPLAN, "batch", str(folder / "*.onnx"), "--target", "xavier-agx", "--out", str(out),
                             "--workers", "2", "--objective", "throughput", "--time-limit", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


def _wait_for_workers(pid: int, count: int) -> list:
    import time
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = _workers_of(pid)
        if len(found) >= count:
            time.sleep(1.5)  # past the spawn: planning a job
            return found
        time.sleep(0.1)
    raise AssertionError("the batch started no workers")


@pytest.mark.slow
def test_a_killed_worker_fails_its_job_and_every_other_job_finishes(tmp_path):
    import os
    import signal
    proc, out = _slow_batch(tmp_path, 5)
    victim = _wait_for_workers(proc.pid, 2)[0]
    os.kill(victim.pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err  # a failed job: the pipeline must notice
    assert "internal error" not in err and "Traceback" not in err
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert len(rows) == 5
    dead = [r for r in rows if r["status"] != "ok"]
    assert len(dead) == 1 and "worker process died" in dead[0]["error"] and "SIGKILL" in dead[0]["error"], rows
    for row in rows:
        if row["status"] == "ok":
            assert (out / row["model"].rsplit("/", 1)[1].removesuffix(".onnx") / "xavier-agx" / "plan.json").is_file()


@pytest.mark.slow
def test_killing_the_batch_ends_its_workers(tmp_path):
    import os
    import signal
    psutil = pytest.importorskip("psutil")
    proc, _ = _slow_batch(tmp_path, 4)
    workers = _wait_for_workers(proc.pid, 2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _, alive = psutil.wait_procs(workers, timeout=15)
    for worker in alive:
        worker.kill()
    assert not alive, f"{len(alive)} worker(s) outlived their batch"


def test_a_model_the_converter_refuses_is_not_ok(tmp_path):
    """corpus yolo26n_sem_320: a class map cast to uint8 stops rknn-toolkit2 (RKNN-CAST-UINT8); the plan is
    written, but the row says refused, names the rule and node, and the batch exits 1 for the pipeline."""
    import numpy as np
    from onnx import TensorProto, helper

    from tests.conftest import const, save_model, value

    folder = tmp_path / "models"
    folder.mkdir()
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("ArgMax", ["c"], ["a"], name="argmax", axis=1, keepdims=1),
             helper.make_node("Cast", ["a"], ["y"], name="to_uint8", to=TensorProto.UINT8)]
    save_model(folder / "sem.onnx", nodes, [value("x", [1, 3, 16, 16])], [value("y", None, TensorProto.UINT8)],
               [const("w", np.full((4, 3, 1, 1), 0.1, np.float32))])
    result = run("batch", str(folder / "sem.onnx"), "--target", "rk3588", "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert "1 refused by the converter" in result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("edgeplan: refused: ") and "RKNN-CAST-UINT8 at to_uint8" in line
    (row,) = csv.DictReader((tmp_path / "out" / "summary.csv").open())
    assert row["status"] == "refused" and (tmp_path / "out" / "sem" / "rk3588" / "plan.json").is_file()
