"""The CLI as a user runs it: the installed console script, exit codes, files written (or not)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ZOO, needs_zoo, zoo_models

EDGEPLAN = shutil.which("edgeplan") or str(Path(sys.executable).parent / "edgeplan")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EDGEPLAN, *args], capture_output=True, text=True, timeout=600, cwd=cwd)  # a hang guard, not a speed test


def test_targets_lists_all_twelve():
    result = run("targets")
    assert result.returncode == 0
    for target in ("orin-agx", "orin-nx", "xavier-agx", "xavier-nx", "rk3588", "rk3576", "rk3566", "rk3568",
                   "rk3562", "rv1126b", "rv1106", "rv1103"):
        assert target in result.stdout
    data = json.loads(run("targets", "--json").stdout)
    assert data["schema"] == "edgeplan.targets/v1"
    orin = next(t for t in data["targets"] if t["id"] == "orin-agx")
    assert orin["devices"] == ["gpu", "dla0", "dla1"]
    assert orin["figures"]["dla_sram_bytes"]["value"] == 1048576


def test_check_example_writes_the_spec_json(tmp_path):
    out = tmp_path / "check.json"
    result = run("check", str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "accelerator" in result.stdout and "dla" in result.stdout
    data = json.loads(out.read_text())
    assert data["schema"] == "edgeplan.check/v1"
    assert data["target"] == "orin-agx"
    assert data["model"]["num_nodes"] == len(data["nodes"]) == 49
    assert len(data["model"]["sha256"]) == 64
    node = data["nodes"][0]
    assert set(node) >= {"name", "op_type", "supported", "violations"}
    assert set(node["supported"]) == {"gpu", "dla"}
    assert set(node["supported"]["dla"]) == {"int8", "fp16"}
    assert set(node["supported"]["gpu"]) == {"int8", "fp16", "fp32"}


def test_check_json_is_byte_identical_across_runs(tmp_path):
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert run("check", str(EXAMPLES / "yolov8n.onnx"), "--target", "rk3576", "--json", str(out)).returncode == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_violation_entries_name_rule_and_value(tmp_path):
    out = tmp_path / "c.json"
    assert run("check", str(EXAMPLES / "yolov8n.onnx"), "--target", "xavier-agx", "--json", str(out)).returncode == 0
    data = json.loads(out.read_text())
    entries = [v for n in data["nodes"] for v in n["violations"]]
    assert entries
    for entry in entries:
        assert set(entry) == {"rule", "accelerator", "precision", "message"}
        assert entry["accelerator"] == "dla" and entry["message"]
    assert {e["rule"] for e in entries} >= {"DLA-LAYOUT-SHUFFLE"}


@pytest.mark.parametrize(("args", "needle"), [
    (("check", "missing.onnx", "--target", "orin-agx"), "missing.onnx: file not found"),
    (("check", ".", "--target", "orin-agx"), "is a directory"),
    (("check", str(EXAMPLES / "resnet18.onnx"), "--target", "nope"), "unknown target 'nope'"),
    (("check", str(EXAMPLES / "resnet18.onnx")), "usage:"),
    (("check", str(EXAMPLES / "resnet18.onnx"), "--target", "rk3588", "--input-shape", "x=1"), "not a model input"),
    (("frobnicate",), "usage:"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr


def test_bad_model_writes_nothing_and_keeps_old_json(tmp_path):
    garbage = tmp_path / "bad.onnx"
    garbage.write_bytes(b"\x08\x07garbage" * 10)
    out = tmp_path / "check.json"
    out.write_text('{"old": true}\n')
    result = run("check", str(garbage), "--target", "orin-agx", "--json", str(out))
    assert result.returncode == 2 and "bad.onnx" in result.stderr
    assert out.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "check.json"]


@needs_zoo
@pytest.mark.slow
@pytest.mark.parametrize("target", ["orin-agx", "xavier-agx", "rk3588", "rk3576"])
def test_every_zoo_model_checks(tmp_path, target):
    from optimizer.catalog import load_catalog
    from optimizer.check import check_graph, check_json
    from optimizer.ir import load_model

    catalog = load_catalog()
    for path in zoo_models():
        graph = load_model(path)
        data = check_json(check_graph(graph, catalog, target))
        assert len(data["nodes"]) == len(graph.nodes)
        json.dumps(data)


@needs_zoo
def test_dynamic_model_cli_reports_and_fixes(tmp_path):
    model = str(ZOO / "tv_mobilenet_v2_dynbatch.onnx")
    result = run("check", model, "--target", "orin-agx")
    assert result.returncode == 0 and "dynamic dims: input[0]=N" in result.stdout and "DLA-STATIC" in result.stdout
    fixed = run("check", model, "--target", "orin-agx", "--input-shape", "input=1x3x224x224")
    assert "DLA-STATIC" not in fixed.stdout


def test_help_shows_defaults_and_an_example_for_every_command():
    from optimizer.cli import EXAMPLES as COMMANDS
    for command, example in COMMANDS.items():
        result = run(command, "--help")
        assert result.returncode == 0, command
        assert "example:" in result.stdout and example.split()[1] == command, command
        assert "-q, --quiet" in result.stdout and "-v, --verbose" in result.stdout
    optimize = run("optimize", "--help").stdout
    assert "(default: 60.0)" in " ".join(optimize.split()) and "(default: None)" not in optimize


def test_quiet_and_verbose(tmp_path):
    args = ("optimize", str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx", "--out")
    quiet = run(*args, str(tmp_path / "q"), "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = run(*args, str(tmp_path / "v"), "--verbose")
    assert loud.returncode == 0 and "edgeplan: debug: solver: exact, stopped by proven" in loud.stderr
    assert (tmp_path / "q" / "plan.json").read_bytes() == (tmp_path / "v" / "plan.json").read_bytes()


def test_progress_without_a_terminal_is_plain_periodic_lines(monkeypatch, caplog):
    import logging

    from optimizer import _progress
    clock = iter([0.0, 1.0, 6.0, 7.0, 13.0, 14.0])
    monkeypatch.setattr(_progress.time, "monotonic", lambda: next(clock))
    progress = _progress.Progress("trials")
    progress.tty = False
    with caplog.at_level(logging.INFO, logger="edgeplan.progress"):
        for done in range(1, 6):
            progress(done, 5)
    assert [r.getMessage() for r in caplog.records] == ["trials: 2/5", "trials: 4/5", "trials: 5/5"]
