"""`--trt 10|11` on study and batch, as a user runs them: the same switch as check/optimize/export, kept in the
study folder (config.toml, manifest.json, plan.json) and in the batch summary, rows and job hashes."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import numpy as np
from onnx import helper

from optimizer.cli import main
from tests.conftest import const, save_model, value


def _model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = [const("w1", rng.standard_normal((16, 8, 3, 3), dtype=np.float32)),
             const("w2", rng.standard_normal((16, 16, 3, 3), dtype=np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Conv", ["b", "w2"], ["c"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Softmax", ["c"], ["y"], name="softmax", axis=1)]
    return save_model(path, nodes, [value("x", [1, 8, 32, 32])], [value("y", [1, 16, 32, 32])], inits)


def _config(folder: Path, model: Path, extra: str = "") -> Path:
    config = folder / "s.toml"
    config.write_text(f'name = "s"\nmodel = "{model}"\ntarget = "orin-agx"\nobjective = "latency"\nn_trials = 2\n'
                      f'seed = 0\ntime_limit = 3\n{extra}[search]\nsram = true\nmax_partitions = 1\n')
    return config


def _run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_study_trt_is_kept_in_the_folder_and_reproduces(capsys, tmp_path):
    config = _config(tmp_path, _model(tmp_path / "m.onnx"))
    folder = tmp_path / "s11"
    code, out, err = _run(capsys, "study", config, "--trt", "11", "--out", folder)
    assert code == 0, err
    assert json.loads((folder / "plan.json").read_text())["tensorrt_rules"] == "11"
    assert json.loads((folder / "manifest.json").read_text())["tensorrt_rules"] == "11"
    assert tomllib.loads((folder / "config.toml").read_text())["tensorrt"] == "11"
    code, out, err = _run(capsys, "study", "reproduce", folder)
    assert code == 0 and "byte-identical" in out, err
    code, out, err = _run(capsys, "study", "resume", folder, "--trt", "10")
    assert code == 2 and "--trt applies when a study starts" in err and len(err.strip().splitlines()) == 1

    code, out, err = _run(capsys, "study", config, "--out", tmp_path / "s10")
    assert code == 0, err
    assert json.loads((tmp_path / "s10" / "plan.json").read_text())["tensorrt_rules"] == "10"
    assert json.loads((tmp_path / "s10" / "manifest.json").read_text())["tensorrt_rules"] == "10"


def test_a_study_config_may_name_the_major_and_a_bad_one_is_refused(capsys, tmp_path):
    model = _model(tmp_path / "m.onnx")
    config = _config(tmp_path, model, 'tensorrt = "11"\n')
    code, _out, err = _run(capsys, "study", config, "--out", tmp_path / "cfg11")
    assert code == 0, err
    assert json.loads((tmp_path / "cfg11" / "plan.json").read_text())["tensorrt_rules"] == "11"
    bad = _config(tmp_path, model, 'tensorrt = "12"\n')
    code, _, err = _run(capsys, "study", bad, "--out", tmp_path / "bad")
    assert code == 2 and "tensorrt" in err and not (tmp_path / "bad").exists()
    code, _, err = _run(capsys, "study", config, "--trt", "9", "--out", tmp_path / "bad")
    assert code == 2 and "--trt" in err


def _summary(folder: Path) -> dict[str, dict[str, str]]:
    with (folder / "summary.csv").open() as f:
        return {row["target"]: row for row in csv.DictReader(f)}


def test_batch_trt_reaches_every_jetson_job_and_its_hash(capsys, tmp_path):
    model = _model(tmp_path / "m.onnx")
    out_dir = tmp_path / "batch"
    args = ("batch", model, "--target", "orin-agx", "--target", "rk3588", "--time-limit", "5", "--out", out_dir)
    code, out, err = _run(capsys, *args, "--trt", "11")
    assert code == 0, err
    rows = _summary(out_dir)
    assert (rows["orin-agx"]["tensorrt_rules"], rows["rk3588"]["tensorrt_rules"]) == ("11", "")
    assert json.loads((out_dir / "m" / "orin-agx" / "plan.json").read_text())["tensorrt_rules"] == "11"
    assert "tensorrt_rules" not in json.loads((out_dir / "m" / "rk3588" / "plan.json").read_text())

    code, out, err = _run(capsys, *args)  # the default, 10: the Jetson job is planned again, the RKNN one is not
    assert code == 0, err
    assert "1 skipped (already done)" in out
    assert _summary(out_dir)["orin-agx"]["tensorrt_rules"] == "10"
    assert json.loads((out_dir / "m" / "orin-agx" / "plan.json").read_text())["tensorrt_rules"] == "10"
