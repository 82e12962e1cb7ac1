"""report.html, the batch summary and the study report as a person opens them: in a real browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest
from onnx import helper

from optimizer.batch import run_batch
from optimizer.plan import optimize, plan_html, write_plan_files
from optimizer.plan._views import timeline
from optimizer.solver import PlanRequest
from optimizer.study import run_study
from tests.conftest import EXAMPLES, ZOO, needs_zoo
from tests.test_cli import run

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")


def _chromium(page: Path, profile: Path, screenshot: Path | None = None) -> subprocess.CompletedProcess:
    args = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--window-size=1400,1800"]
    args += [f"--screenshot={screenshot}", "--hide-scrollbars"] if screenshot else ["--dump-dom"]
    return subprocess.run([*args, page.as_uri()], capture_output=True, text=True, timeout=120, check=False)


def _console_errors(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def _lanes(page: str) -> set[str]:
    return set(re.findall(r'<g class="lane" data-lane="([^"]+)"', page))


@needs_dot
def test_graph_has_one_coloured_group_per_layer_group_and_a_cluster_per_engine():
    planned = optimize(str(EXAMPLES / "resnet18.onnx"), "xavier-agx", PlanRequest(objective="throughput",
                                                                               time_limit_s=5))
    page = plan_html(planned)
    groups = re.findall(r'<g id="g(\d+)" class="node group dev_(\w+) prec_(\w+)"', page)
    assert sorted(int(g) for g, _, _ in groups) == list(range(len(planned.groups.groups)))
    for g, device, precision in groups:
        placement = planned.placements[int(g)]
        assert (device, precision) == (placement.device, placement.option.precision)
    fills = set(re.findall(r'<g id="g\d+" class="node group[^"]*">\s*<title>[^<]*</title>\s*<g[^>]*>\s*'
                           r'<a[^>]*>\s*<path fill="(#[0-9a-f]{6})"', page))
    assert len(fills) >= len({(d, p) for _, d, p in groups}) > 1
    assert len(re.findall(r'<g id="engine\d+" class="cluster engine', page)) == len(planned.subgraphs)


def test_timeline_has_a_lane_per_engine_in_use_and_sums_to_the_prediction():
    planned = optimize(str(EXAMPLES / "yolov8n.onnx"), "rk3566", PlanRequest())
    engines = {p.device for p in planned.placements} - {"npu"}
    engines |= {f"npu core {k}" for p in planned.placements if p.device == "npu" for k in range(p.option.cores)}
    if planned.breakdown.transfers:
        engines.add("transfers")
    line = timeline(planned)
    assert set(line.lanes) == engines
    assert line.span_ms == pytest.approx(planned.breakdown.total_ns / 1e6, abs=1e-4)
    assert _lanes(plan_html(planned)) == engines


def test_throughput_timeline_is_the_pipelined_cycle_and_ratios_name_their_metric(tmp_path):
    result = run("optimize", str(EXAMPLES / "resnet18.onnx"), "--target", "xavier-agx", "--objective", "throughput",
                 "--time-limit", "5", "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert re.search(r"vs gpu_only .*\(latency x\d\.\d\d, throughput x\d\.\d\d\)", result.stdout), result.stdout
    assert "speedup" not in result.stdout
    page = (tmp_path / "o" / "report.html").read_text()
    assert "pipelined steady state (throughput)" in page and "throughput (fps; higher is better)" in page
    report = (tmp_path / "o" / "report.md").read_text()
    assert re.search(r"\| gpu_only \|.*\| latency x\d\.\d\d, throughput x\d\.\d\d \|", report)


def test_every_group_states_its_reason_in_numbers():
    planned = optimize(str(EXAMPLES / "resnet18.onnx"), "orin-agx", PlanRequest())
    page = plan_html(planned)
    for g, placement in enumerate(planned.placements):
        ms = planned.breakdown.group_ns[g] / 1e6
        assert f"{placement.device.upper()} {ms:.3f} ms" in page
    assert re.search(r"DLA/INT8 \d+\.\d{3} ms [+-] \d+\.\d{3} ms transfers", page)


def test_hostile_names_stay_text(tmp_path):
    evil = '</script><script>alert(1)</script>"]; x [label="pwn'
    nodes = [helper.make_node("Relu", ["x"], ["y"], name=evil), helper.make_node("Sigmoid", ["y"], ["z"],
                                                                                   name="a\\Nb\nc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8, 4, 4])],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 8, 4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    page = plan_html(optimize(str(tmp_path / "m.onnx"), "orin-agx", PlanRequest()))
    assert "<script>alert(1)" not in page and page.count("<script>") == 1
    assert page.count("</script>") == 2  # the JSON data block and the page's own script, nothing else


def test_report_is_byte_identical_across_runs(tmp_path):
    pages = []
    for name in ("a", "b"):
        write_plan_files(optimize(str(EXAMPLES / "yolov8n.onnx"), "orin-agx", PlanRequest()), tmp_path / name)
        pages.append((tmp_path / name / "report.html").read_bytes())
    assert pages[0] == pages[1]


@needs_chromium
@needs_dot
def test_plan_report_opens_in_chromium_without_console_errors(tmp_path):
    folder = tmp_path / "plan"
    write_plan_files(optimize(str(EXAMPLES / "resnet18.onnx"), "xavier-agx",
                              PlanRequest(objective="throughput", time_limit_s=5)), folder)
    result = _chromium(folder / "report.html", tmp_path / "profile")
    assert result.returncode == 0, result.stderr[-2000:]
    assert _console_errors(result) == []
    assert 'class="node group' in result.stdout and 'class="timeline"' in result.stdout
    shot = tmp_path / "report.png"
    _chromium(folder / "report.html", tmp_path / "profile2", shot)
    assert shot.stat().st_size > 10_000  # a person can look at it: kept beside the test's files, not in the repo


@needs_chromium
def test_batch_summary_links_resolve_and_it_sorts(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(EXAMPLES / "resnet18.onnx", folder / "resnet18.onnx")
    (folder / "broken.onnx").write_bytes(b"\x08garbage")
    out = tmp_path / "out"
    run_batch([str(folder / "*.onnx")], ["orin-agx", "rk3576"], str(out))
    page = (out / "summary.html").read_text()
    links = re.findall(r'<a href="([^"]+)">report</a>', page)
    assert len(links) == 2 and all((out / link).is_file() for link in links)
    assert page.count('<g class="speedup">') == 2 and 'class="sortable"' in page
    result = _chromium(out / "summary.html", tmp_path / "profile")
    assert result.returncode == 0 and _console_errors(result) == []
    assert result.stdout.count(">report</a>") == 2


@needs_chromium
def test_study_report_plots_open_offline(tmp_path):
    config = tmp_path / "s.toml"
    config.write_text(f'name = "s"\nmodel = "{EXAMPLES / "resnet18.onnx"}"\ntarget = "xavier-agx"\n'
                      'objective = "latency"\nn_trials = 4\nseed = 0\n')
    run_study(str(config), str(tmp_path / "out"))
    report = (tmp_path / "out" / "report.html").read_text()
    assert "trial number" in report and "objective (ms)" in report and 'href="plan.html"' in report
    assert re.findall(r'(?:src|href)\s*=\s*"(?:https?:)?//[^"]*"', report) == []  # nothing fetched
    assert (tmp_path / "out" / "plan.html").is_file()
    result = _chromium(tmp_path / "out" / "report.html", tmp_path / "profile")
    assert result.returncode == 0 and _console_errors(result) == []


@needs_zoo
@needs_dot
def test_largest_zoo_model_report_draws_every_group():
    model = max(ZOO.glob("*.onnx"), key=lambda p: p.stat().st_size if "ssdlite" in p.name else 0)
    planned = optimize(str(model), "rk3588", PlanRequest())
    page = plan_html(planned)
    assert len(re.findall(r'<g id="g\d+" class="node group', page)) == len(planned.groups.groups)


@pytest.mark.parametrize(("target", "objective"), [("xavier-agx", "throughput"), ("rk3588", "latency")])
def test_a_written_plan_rebuilds_to_the_same_figures(tmp_path, target, objective):
    """The study's page comes from the best trial's stored plan: rebuilt, it scores exactly as written."""
    import json

    from optimizer.plan import planned_from_plan

    planned = optimize(str(EXAMPLES / "resnet18.onnx"), target, PlanRequest(objective=objective, time_limit_s=5))
    write_plan_files(planned, tmp_path)
    again = planned_from_plan(json.loads((tmp_path / "plan.json").read_text()))
    assert again.placements == planned.placements
    assert again.breakdown.total_ns == planned.breakdown.total_ns
    assert plan_html(again).count('class="bar group"') == plan_html(planned).count('class="bar group"')
