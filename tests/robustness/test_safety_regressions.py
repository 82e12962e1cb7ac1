"""One regression test per defect of issue 13 that the corpora do not already pin down by name."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from optimizer import fileio
from optimizer.batch import run_batch
from optimizer.cli import main
from optimizer.errors import BadInputError
from optimizer.export import export_plan
from optimizer.ir import load_model
from optimizer.plan import optimize, write_plan_files
from optimizer.solver import PlanRequest
from optimizer.study import load_config, run_study
from tests.conftest import EXAMPLES, const, save_model, value
from tests.robustness import stubs
from tests.robustness.hostile_protobuf import nested_ifs, relu_chain
from tests.robustness.test_hostile_names import _model

EDGEPLAN = [sys.executable, "-m", "optimizer"]
PLAIN = ["c0", "r1", "e2", "c3", "a4", "r5", "x", "a", "b", "c", "d", "e", "g", "p"]


def _cli(*args: str) -> tuple[int, str, str]:
    done = subprocess.run([*EDGEPLAN, *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def _one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "internal error" not in err and "Traceback" not in err and "Warning" not in err, err
    for needle in needles:
        assert needle in err, err


# --- generated scripts ---------------------------------------------------------------------------------

def test_newline_in_a_node_or_file_name_does_not_end_a_build_sh_comment(tmp_path):
    marker = tmp_path / "PWNED"
    names = list(PLAIN)
    names[0] = f"conv\ntouch {marker} #"
    names[13] = f"m\ntouch {marker}"
    model = tmp_path / f"m\ntouch {marker.name}.onnx"
    _model(model, names)
    planned = optimize(str(model), "orin-agx", PlanRequest(time_limit_s=10, pins={names[0]: "dla0"}))
    write_plan_files(planned, tmp_path / "plan")
    export_plan(tmp_path / "plan" / "plan.json", tmp_path / "out")
    header = (tmp_path / "out" / "build.sh").read_text().splitlines()[:8]
    assert all(line.startswith(("#", "set ", "cd ", "TRTEXEC=")) or not line for line in header)
    env = stubs.install(tmp_path / "stubs")
    for extra in ({}, {"SINGLE_ENGINE": "1"}):
        done = stubs.run_shell_scripts([tmp_path / "out" / "build.sh"], env, tmp_path, extra)
        assert done.returncode == 0 and "FAILED" not in done.stderr, done.stderr
    assert not marker.exists() and not (tmp_path / "out" / "PWNED").exists()


def test_triple_quotes_in_the_model_file_name_do_not_break_convert_py(tmp_path):
    stem = '"""; import os; os.system("touch PWNED"); """'
    model = tmp_path / f"{stem}.onnx"
    _model(model, PLAIN)
    planned = optimize(str(model), "rk3588", PlanRequest(time_limit_s=10, precision_pins={"c3": "fp16"}))
    write_plan_files(planned, tmp_path / "plan")
    export_plan(tmp_path / "plan" / "plan.json", tmp_path / "out")
    source = (tmp_path / "out" / "convert.py").read_text()
    assert stem not in source.split("import argparse")[0]  # not in the docstring
    env = stubs.install(tmp_path / "stubs")
    results = stubs.run_python_scripts([tmp_path / "out" / "convert.py"], env, tmp_path, tmp_path / "stubs")
    assert results[0][1] == "ok", results
    assert not list(tmp_path.rglob("PWNED"))
    loaded = [c for c in stubs.calls(tmp_path / "stubs") if c.get("call") == "load_onnx"]
    assert loaded and loaded[0]["exists"] and Path(loaded[0]["model"]).parent == tmp_path / "out"


def test_an_rknn_model_named_like_an_engine_never_overwrites_it(tmp_path):
    model = tmp_path / "engine_1_cpu.onnx"
    _model(model, PLAIN)
    npu = {n: "npu" for n in ("c0", "r1", "c3")}  # a tiny model: keep its convolutions off the CPU the pin sets
    planned = optimize(str(model), "rk3588", PlanRequest(time_limit_s=10, pins={"e2": "cpu", **npu}))
    assert [s.id for s in planned.plan.subgraphs if s.device == "cpu"] == [1]
    write_plan_files(planned, tmp_path / "plan")
    with pytest.raises(BadInputError, match=r"two exported files would be named 'engine_1_cpu\.onnx'"):
        export_plan(tmp_path / "plan" / "plan.json", tmp_path / "out")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


# --- the output-path guard ----------------------------------------------------------------------------

def test_safe_names_and_confinement(tmp_path):
    assert fileio.safe_name("..") == "model" and fileio.safe_name("...") == "model"
    assert fileio.safe_name("-rf") == "rf" and fileio.safe_name("a/../b") == "a_.._b"
    assert fileio.safe_name("mod\u00e8le \U0001f600;$(x)") == "modele____x_"
    for bad in ("..", ".", "a/b", "a\0b", "x\n"):
        with pytest.raises(BadInputError):
            fileio.write_file_set(tmp_path / "o", {bad: "x"})
    with pytest.raises(BadInputError, match="share the name"):
        fileio.write_file_set(tmp_path / "o", {"Plan.json": "a", "plan.json": "b"})
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (tmp_path / "o").mkdir(exist_ok=True)
    os.symlink(outside, tmp_path / "o" / "plan.json")
    with pytest.raises(BadInputError, match="symlink"):
        fileio.write_file_set(tmp_path / "o", {"plan.json": "new"})
    os.symlink(tmp_path, tmp_path / "o" / "sub")
    with pytest.raises(BadInputError, match="symlink"):
        fileio.write_file_set(tmp_path / "o", {"x.json": "new"}, subdir=("sub",))
    assert outside.read_text() == "keep" and not (tmp_path / "x.json").exists()


def test_optimize_refuses_to_write_through_a_symlink_in_its_out_dir(tmp_path):
    outside = tmp_path / "victim.md"
    outside.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "report.md")
    code = main(["optimize", str(EXAMPLES / "resnet18.onnx"), "--target", "rk3588", "--out", str(out),
                 "--time-limit", "10"])
    assert code == 2 and outside.read_text() == "keep" and not (out / "plan.json").exists()


def test_batch_over_a_model_named_dots_onnx_stays_in_the_out_dir(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    _model(models / "...onnx", PLAIN)
    out = tmp_path / "batch" / "out"
    out.parent.mkdir()
    before = stubs.snapshot(tmp_path)
    rows = run_batch([str(models / "...onnx")], ["rk3588"], str(out), time_limit_s=10)
    assert rows[0]["status"] == "ok", rows
    new = stubs.snapshot(tmp_path) - before
    assert new and all(p.startswith(str(out)) for p in new), sorted(new)
    assert (out / "model" / "rk3588" / "plan.json").is_file()


# --- all-or-nothing sets and user-named files -------------------------------------------------------------

def test_a_full_disk_mid_set_leaves_the_previous_plan_files(tmp_path, monkeypatch):
    planned = optimize(str(EXAMPLES / "resnet18.onnx"), "rk3588", PlanRequest(time_limit_s=10))
    write_plan_files(planned, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real, calls = fileio._fsync_write, []

    def full_disk(path, data, mode):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, mode)

    monkeypatch.setattr(fileio, "_fsync_write", full_disk)
    changed = optimize(str(EXAMPLES / "resnet18.onnx"), "rk3588", PlanRequest(time_limit_s=10, objective="throughput"))
    with pytest.raises(BadInputError) as caught:
        write_plan_files(changed, tmp_path)
    line = caught.value.one_line()
    assert "No space left" in line and "previous files are unchanged" in line and "\n" not in line
    assert str(tmp_path / calls[2].name) in line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temp folder left either


def test_json_dash_is_stdout_and_symlinks_fifos_devices_are_written_through(tmp_path):
    model = str(EXAMPLES / "resnet18.onnx")
    code, out, err = _cli("check", model, "--target", "orin-agx", "--json", "-")
    assert code == 0 and json.loads(out)["schema"] and not Path("-").exists(), err
    target = tmp_path / "real.json"
    target.write_text("old")
    os.symlink(target, tmp_path / "link.json")
    assert main(["check", model, "--target", "orin-agx", "--json", str(tmp_path / "link.json")]) == 0
    assert (tmp_path / "link.json").is_symlink() and json.loads(target.read_text())["schema"]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["check", model, "--target", "orin-agx", "--json", str(fifo)]) == 0
    reader.join(30)
    assert json.loads(got[0])["schema"] and fifo.is_fifo()
    assert main(["check", model, "--target", "orin-agx", "--json", "/dev/null"]) == 0
    assert Path("/dev/null").is_char_device()
    assert main(["check", model, "--target", "orin-agx", "--json", str(tmp_path)]) == 2


def test_json_onto_dev_stdout_writes_through_and_keeps_the_link():
    link = Path("/dev/stdout")
    was_link = link.is_symlink()
    code, out, err = _cli("check", str(EXAMPLES / "resnet18.onnx"), "--target", "orin-agx", "--json", "/dev/stdout")
    assert code == 0, err
    assert '"schema"' in out  # written through the link into this process's pipe
    assert link.is_symlink() == was_link and not (link.is_file() and not link.is_symlink())


# --- study configs, foreign files, secrets --------------------------------------------------------------

def _config(tmp_path: Path, **extra: str) -> Path:
    lines = {"name": '"s"', "model": f'"{EXAMPLES / "resnet18.onnx"}"', "target": '"rk3588"',
             "objective": '"latency"', "n_trials": "2", "seed": "0", **extra}
    path = tmp_path / "study.toml"
    path.write_text("".join(f"{k} = {v}\n" for k, v in lines.items()))
    return path


@pytest.mark.parametrize(("extra", "message"), [
    ({"profile": '"/etc/shadow"'}, "'profile' is not a latency profile"),
    ({"profile": '"/etc/passwd"'}, "'profile' is not a latency profile"),
    ({"model": '"/etc/passwd"'}, "/etc/passwd"),
    ({"target": '"nope"'}, "unknown target 'nope'"),
    ({"seed": "-1"}, "'seed' = -1 is outside"),
    ({"n_trials": "true"}, "'n_trials' must be an integer"),
    ({"time_limit": "nan"}, "'time_limit' must be finite"),
    ({"extra_key": "1"}, "unknown key 'extra_key'"),
    ({"name": '"../up"'}, "plain folder name"),
    ({"sampler": '"grid"'}, "'sampler'"),
])
def test_bad_study_configs_write_nothing(tmp_path, extra, message):
    path = _config(tmp_path, **extra)
    before = stubs.snapshot(tmp_path)
    with pytest.raises(BadInputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        run_study(str(path), str(tmp_path / "study"))
    assert stubs.snapshot(tmp_path) == before  # no study folder, no copied profile


def test_search_table_is_checked_too(tmp_path):
    path = _config(tmp_path)
    path.write_text(path.read_text() + "[search]\nmax_partitions = -1\n")
    with pytest.raises(BadInputError, match=r"'search.max_partitions' = -1 is outside \[0, 64\]"):
        load_config(path)
    path.write_text(path.read_text().replace("max_partitions = -1", "sram = 1"))
    with pytest.raises(BadInputError, match=r"'search\.sram' must be true or false"):
        load_config(path)


def test_the_cli_refuses_negative_seed_and_partitions_in_one_line(tmp_path):
    path = _config(tmp_path, seed="-1")
    code, _, err = _cli("study", str(path), "--out", str(tmp_path / "s"))
    _one_line_refusal(code, err, "seed", str(path))
    assert not (tmp_path / "s").exists()


def test_storage_credentials_are_redacted_everywhere(tmp_path):
    url = "postgresql://user:S3CRET@127.0.0.1:1/db"
    assert fileio.redact_url(url) == "postgresql://user:***@127.0.0.1:1/db"
    assert "S3CRET" not in fileio.redact_url(f"--storage={url}")
    assert "S3CRET" not in fileio.redact_url("host=h password=S3CRET dbname=x")
    outcome = run_study(str(_config(tmp_path)), str(tmp_path / "s"),
                        command=["edgeplan", "study", "x.toml", "--storage", url])
    manifest = (outcome.folder / "manifest.json").read_text()
    assert "S3CRET" not in manifest and "user:***@127.0.0.1" in manifest
    from optimizer.study._run import _storage
    with pytest.raises(BadInputError) as caught:
        _storage(url)
    assert "S3CRET" not in caught.value.one_line()


# --- bounded resources --------------------------------------------------------------------------------

def _hostile(tmp_path: Path, name: str, nodes, inputs, inits=()) -> Path:
    return save_model(tmp_path / f"{name}.onnx", nodes, inputs, [value("y", None)], inits)


def test_a_million_node_chain_is_refused_before_planning(tmp_path):
    path = tmp_path / "chain.onnx"
    path.write_bytes(relu_chain(1_000_000))
    with pytest.raises(BadInputError, match=r"node count 1000000 .* exceeds the limit 100000 .*EDGEPLAN_MAX_NODES"):
        optimize(str(path), "orin-agx", PlanRequest(time_limit_s=5))


def test_nesting_is_bounded(tmp_path, monkeypatch):
    deep = tmp_path / "deep.onnx"
    deep.write_bytes(nested_ifs(17))
    with pytest.raises(BadInputError, match=r"subgraph nesting depth 17 exceeds the limit 16 .*"
                                            "EDGEPLAN_MAX_SUBGRAPH_DEPTH"):
        load_model(deep)
    monkeypatch.setenv("EDGEPLAN_MAX_SUBGRAPH_DEPTH", "32")
    with pytest.raises(BadInputError, match="not produced by any node"):  # past the limit: the next check
        load_model(deep)
    deeper = tmp_path / "deeper.onnx"
    deeper.write_bytes(nested_ifs(1 << 16))
    with pytest.raises(BadInputError, match="protobuf's limit"):
        load_model(deeper)


@pytest.mark.slow
def test_two_to_the_twenty_nested_ifs_are_refused_quickly(tmp_path):
    path = tmp_path / "nested.onnx"
    path.write_bytes(nested_ifs(1 << 20))
    code, _, err = _cli("check", str(path), "--target", "orin-agx")
    _one_line_refusal(code, err, str(path), "protobuf")


def test_hostile_sizes_are_one_line_refusals(tmp_path, capsys):
    x = [value("x", [1, 4, 8, 8])]
    cases = {
        "resize_nan": ([helper.make_node("Resize", ["x", "", "s"], ["y"], name="r")], x,
                       [const("s", np.array([1, 1, np.nan, 2], np.float32))], "Resize scales"),
        "resize_inf": ([helper.make_node("Resize", ["x", "", "s"], ["y"], name="r")], x,
                       [const("s", np.array([1, 1, np.inf, 2], np.float32))], "Resize scales"),
        "expand_2_80": ([helper.make_node("Expand", ["x", "s"], ["y"], name="e")], [value("x", [1, 1])],
                        [const("s", np.array([2 ** 40, 2 ** 40], np.int64))], "EDGEPLAN_MAX_TENSOR_ELEMENTS"),
        "cos_2_62": ([helper.make_node("ConstantOfShape", ["s"], ["c"], name="k"),
                      helper.make_node("Add", ["x", "c"], ["y"], name="a")], [value("x", [1])],
                     [const("s", np.array([2 ** 62], np.int64))], "EDGEPLAN_MAX_TENSOR_ELEMENTS"),
        "reshape_impossible": ([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], x,
                               [const("s", np.array([1, 7, 7], np.int64))], "changes the element count"),
    }
    for name, (nodes, inputs, inits, message) in cases.items():
        path = _hostile(tmp_path, name, nodes, inputs, inits)
        code, _, err = _cli("check", str(path), "--target", "orin-agx")  # a fresh process: warnings included
        _one_line_refusal(code, err, str(path), message)
        code = main(["optimize", str(path), "--target", "rk3588", "--out", str(tmp_path / "o"), "--time-limit", "5"])
        err = capsys.readouterr().err
        _one_line_refusal(code, err, str(path), message)


def test_an_external_data_symlink_loop_is_one_line(tmp_path):
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "loop.bin"
    path = save_model(tmp_path / "m.onnx", [helper.make_node("Add", ["x", "w"], ["y"], name="a")],
                      [value("x", [1, 4])], [value("y", None)], [tensor])
    os.symlink("loop2.bin", tmp_path / "loop.bin")
    os.symlink("loop.bin", tmp_path / "loop2.bin")
    code, _, err = _cli("check", str(path), "--target", "orin-agx")
    _one_line_refusal(code, err, str(path), "cannot be resolved")


def test_division_by_zero_in_shape_arithmetic_prints_no_warning(tmp_path):
    nodes = [helper.make_node("Shape", ["x"], ["sh"], name="s"), helper.make_node("Div", ["sh", "z"], ["q"], name="d"),
             helper.make_node("Reshape", ["x", "q"], ["y"], name="r")]
    path = _hostile(tmp_path, "div0", nodes, [value("x", [1, 4, 8, 8])], [const("z", np.zeros(4, np.int64))])
    code, _, err = _cli("check", str(path), "--target", "orin-agx")
    assert "Warning" not in err and "divide by zero" not in err, err
    assert code in (0, 2)


def test_limits_can_be_raised_by_their_environment_variable(tmp_path, monkeypatch):
    path = tmp_path / "chain.onnx"
    path.write_bytes(relu_chain(50))
    monkeypatch.setenv("EDGEPLAN_MAX_NODES", "49")
    with pytest.raises(BadInputError, match="node count 50"):
        load_model(path)
    monkeypatch.setenv("EDGEPLAN_MAX_NODES", "50")
    assert len(load_model(path).nodes) == 50
    monkeypatch.setenv("EDGEPLAN_MAX_NODES", "many")
    with pytest.raises(BadInputError, match="EDGEPLAN_MAX_NODES='many' must be an integer"):
        load_model(path)


def test_edit_out_never_renames_over_a_link_or_device(tmp_path):
    from optimizer.edits import edit

    rng = np.random.default_rng(0)
    weights = [const("w", rng.normal(0, 0.2, (4, 4, 3, 3)).astype(np.float32)),
               const("b", np.zeros(4, np.float32))]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[3, 3, 3, 3])
    model = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 10, 10])], [value("y", None)], weights)
    victim = tmp_path / "victim.onnx"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "link.onnx")
    for out in (tmp_path / "link.onnx", Path("/dev/null")):
        with pytest.raises(BadInputError, match="not a regular file"):
            edit(str(model), ["pad-op@conv"], str(out), target="orin-agx")
    assert victim.read_text() == "keep" and (tmp_path / "link.onnx").is_symlink()
    assert Path("/dev/null").is_char_device()


_LOAD_UNDER_3_GIB = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from optimizer.ir import load_model
for path in sys.argv[1:]:
    print(path, load_model(path).tensors["y"].shape)
"""


def test_long_one_d_tensors_load_in_bounded_memory(tmp_path):
    """onnx's data propagation once held every 1-D tensor as a list of dims (~200 bytes per element):
    10^8 elements asked for 20 GB. Loading must succeed under a 3 GiB address-space limit."""
    n = 10 ** 8
    one = const("one", np.array(1, np.int64))
    cases = {
        "cos_of_shape": ([helper.make_node("Shape", ["x"], ["s"], name="s"),
                          helper.make_node("ConstantOfShape", ["s"], ["c"], name="k",
                                           value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
                          helper.make_node("Cast", ["c"], ["y"], name="y", to=TensorProto.FLOAT)],
                         [value("x", [n])], []),
        "cos_of_constant": ([helper.make_node("ConstantOfShape", ["s"], ["c"], name="k"),
                             helper.make_node("Add", ["x", "c"], ["y"], name="a")],
                            [value("x", [n])], [const("s", np.array([n], np.int64))]),
        "range": ([helper.make_node("Range", ["zero", "n", "one"], ["r"], name="r"),
                   helper.make_node("Cast", ["r"], ["y"], name="y", to=TensorProto.FLOAT)],
                  [], [const("zero", np.array(0, np.int64)), const("n", np.array(n, np.int64)), one]),
        "expand": ([helper.make_node("Shape", ["x"], ["s"], name="s"),
                    helper.make_node("Expand", ["one", "s"], ["e"], name="e"),
                    helper.make_node("Cast", ["e"], ["y"], name="y", to=TensorProto.FLOAT)],
                   [value("x", [n])], [one]),
    }
    paths = [str(_hostile(tmp_path, case, *spec)) for case, spec in cases.items()]
    run = subprocess.run([sys.executable, "-c", _LOAD_UNDER_3_GIB, *paths], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == [f"{path} ({n},)" for path in paths]
