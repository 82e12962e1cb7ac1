"""A tampered-plan corpus: plan.json is a file anyone can edit. export validates the whole plan first and
refuses a bad one in one line naming the plan file and the field; the previous export set is left byte
for byte as it was, and nothing is written anywhere else. A plan whose hostile text is harmless
(a comment-only field) exports, and its scripts run nothing but the stub tools."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from optimizer.cli import main
from optimizer.errors import BadInputError
from optimizer.export import export_plan
from optimizer.plan import optimize, write_plan_files
from optimizer.solver import PlanRequest
from tests.robustness import stubs
from tests.robustness.test_hostile_names import _model
from tests.solver.conftest import FAVOUR_DLA

NAMES = ["c0", "r1", "e2", "c3", "a4", "r5", "x", "a", "b", "c", "d", "e", "g", "p"]
Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def apply(plan: dict[str, Any]) -> None:
        keys: list[Any] = [int(k) if k.lstrip("-").isdigit() else k for k in path.split(".")]
        target = plan
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return apply


def _append_empty(device: Any) -> Mutation:
    def apply(plan: dict[str, Any]) -> None:
        plan["subgraphs"].append({"id": 99, "device": device, "nodes": [], "inputs": [], "outputs": [],
                                  "memory_pools": plan["subgraphs"][0].get("memory_pools", {})})
    return apply


def _duplicate_id(plan: dict[str, Any]) -> None:
    plan["subgraphs"][-1]["id"] = plan["subgraphs"][0]["id"]


def _node_twice(plan: dict[str, Any]) -> None:
    plan["subgraphs"][0]["nodes"].append(plan["subgraphs"][0]["nodes"][0])


def _node_in_two(plan: dict[str, Any]) -> None:
    plan["subgraphs"][-1]["nodes"].append(plan["subgraphs"][0]["nodes"][0])


def _unproduced_output(plan: dict[str, Any]) -> None:
    plan["subgraphs"][0]["outputs"].append("x")


def _reordered_layers(plan: dict[str, Any]) -> None:
    plan["layers"].reverse()


def _dla(plan: dict[str, Any]) -> int:
    return next(i for i, s in enumerate(plan["subgraphs"]) if s["device"].startswith("dla"))


def _pool(value: Any) -> Mutation:
    def apply(plan: dict[str, Any]) -> None:
        plan["subgraphs"][_dla(plan)]["memory_pools"]["dla_local_dram_bytes"] = value
    return apply


def _pool_key(extra: bool) -> Mutation:
    def apply(plan: dict[str, Any]) -> None:
        pools = plan["subgraphs"][_dla(plan)]["memory_pools"]
        if extra:
            pools["dla_evil_bytes"] = 4096
        else:
            del pools["dla_sram_bytes"]
    return apply


def _format(plan: dict[str, Any]) -> None:
    formats = plan["subgraphs"][_dla(plan)]["io_formats"]
    formats[next(iter(formats))] = "chw99; touch PWNED"


def _last_subgraph(key: str, value: Any) -> Mutation:
    def apply(plan: dict[str, Any]) -> None:
        plan["subgraphs"][-1][key] = value
    return apply


MARK = "$(touch PWNED)\n`touch PWNED`"
# (label, mutation, text the one-line refusal must contain)
TAMPERED: list[tuple[str, Mutation, str]] = [
    ("device-traversal", _set("subgraphs.0.device", "dla/../../../x"), "subgraphs[0].device"),
    ("device-traversal-empty", _append_empty("dla0/../../x"), "].device"),
    ("device-unknown-empty", _append_empty("dla9"), "].device"),
    ("device-rknn-on-jetson", _set("subgraphs.0.device", "npu"), "subgraphs[0].device"),
    ("device-empty", _set("subgraphs.0.device", ""), "subgraphs[0].device"),
    ("device-int", _set("subgraphs.0.device", 7), "subgraphs[0].device"),
    ("device-shell", _set("subgraphs.0.device", "gpu\n" + MARK), "subgraphs[0].device"),
    ("device-dla-prefix", _set("subgraphs.0.device", "dla0x"), "subgraphs[0].device"),
    ("layer-device", _set("layers.0.device", "dla/../x"), "layers[0].device"),
    ("layer-precision", _set("layers.0.precision", "int4"), "layers[0].precision"),
    ("layer-node-type", _set("layers.0.node", 5), "layers[0].node"),
    ("layer-cores", _set("layers.0.cores", "2"), "layers[0].cores"),
    ("id-negative", _set("subgraphs.0.id", -1), "subgraphs[0].id"),
    ("id-bool", _set("subgraphs.0.id", True), "subgraphs[0].id"),
    ("id-huge", _set("subgraphs.0.id", 2 ** 64), "subgraphs[0].id"),
    ("id-float", _set("subgraphs.0.id", 1.5), "subgraphs[0].id"),
    ("id-string", _set("subgraphs.0.id", "0"), "subgraphs[0].id"),
    ("id-shell", _set("subgraphs.0.id", MARK), "subgraphs[0].id"),
    ("id-duplicate", _duplicate_id, "is used by an earlier subgraph"),
    ("node-twice", _node_twice, "lists a name twice"),
    ("node-in-two", _node_in_two, "is also in subgraphs[0]"),
    ("output-unproduced", _unproduced_output, "none of its nodes produces"),
    ("pool-2^80", _pool(2 ** 80), "memory_pools.dla_local_dram_bytes"),
    ("pool-zero", _pool(0), "memory_pools.dla_local_dram_bytes"),
    ("pool-negative", _pool(-4096), "memory_pools.dla_local_dram_bytes"),
    ("pool-bool", _pool(True), "memory_pools.dla_local_dram_bytes"),
    ("pool-string", _pool("1024"), "memory_pools.dla_local_dram_bytes"),
    ("pool-float-inf", _pool(float("inf")), "dla_local_dram_bytes"),
    ("pool-missing-key", _pool_key(False), "memory_pools"),
    ("pool-extra-key", _pool_key(True), "memory_pools"),
    ("format", _format, "io_formats"),
    ("precision-shell", _last_subgraph("precision", MARK), "].precision"),
    ("nodes-not-list", _last_subgraph("nodes", "c0"), "].nodes"),
    ("inputs-numbers", _last_subgraph("inputs", [1, 2]), "].inputs"),
    ("unknown-node", _last_subgraph("nodes", ["no such node"]), "lacks"),
    ("objective-shell", _set("objective", "latency\n" + MARK), "objective"),
    ("objective-type", _set("objective", ["latency"]), "objective"),
    ("figure-inf", _set("solver.bound_ms", float("inf")), "solver.bound_ms"),
    ("figure-nan", _set("predicted.latency_ms", float("nan")), "predicted.latency_ms"),
    ("figure-string", _set("predicted.latency_ms", "fast"), "predicted.latency_ms"),
    ("baseline-nan", _set("baselines.gpu_only.latency_ms", float("nan")), "baselines.gpu_only.latency_ms"),
    ("needs-inf", _last_subgraph("memory_needs", {"dla_local_dram_bytes": float("inf")}), "memory_needs"),
    ("request-type", _set("request", "pins"), "request"),
    ("shapes-zero", _set("model.input_shapes", {"x": [0, 8, 16, 16]}), "model.input_shapes"),
    ("shapes-string", _set("model.input_shapes", {"x": "1x8x16x16"}), "model.input_shapes"),
    ("shapes-shell", _set("model.input_shapes", {"x": [MARK]}), "model.input_shapes"),
    ("replication-traversal", _set("replication", {"chosen": "replication", "split": {"../../x": 1.0}}),
     "replication.split"),
    ("replication-share", _set("replication", {"chosen": "replication", "split": {"gpu": "all"}}),
     "replication.split"),
    ("target-unknown", _set("target", "orin-agx\n" + MARK), "unknown target"),
    ("target-rknn", _set("target", "rk3588"), "device"),
    ("schema", _set("schema", "edgeplan.plan/v0"), "edgeplan.plan/v1"),
    ("subgraphs-empty", _set("subgraphs", []), "subgraphs"),
    ("subgraphs-object", _set("subgraphs", {"0": {}}), "subgraphs"),
    ("layers-reordered", _reordered_layers, "one entry per ONNX node"),
    ("model-sha", _set("model.sha256", "0" * 64), "sha256"),
    ("model-path-nul", _set("model.path", "m\0.onnx"), "NUL"),
]


def _dump(plan: dict[str, Any]) -> str:
    return json.dumps(plan, allow_nan=True)  # NaN as the JSON token a hand-edited file would hold


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("tampered")
    profile = root / "favour.toml"
    profile.write_text(FAVOUR_DLA)
    model = root / "m.onnx"
    _model(model, NAMES)
    planned = optimize(str(model), "orin-agx", PlanRequest(time_limit_s=10, precision_pins={"c3": "fp16"}),
                       profile_path=str(profile))
    write_plan_files(planned, root / "plan")
    plan = json.loads((root / "plan" / "plan.json").read_text())
    assert len(plan["subgraphs"]) >= 2 and any(s["device"] == "gpu" for s in plan["subgraphs"])
    out = root / "out"
    export_plan(root / "plan" / "plan.json", out)
    return root, model, plan, out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_every_tampered_plan_is_refused_in_one_line_and_the_previous_set_survives(base):
    root, model, plan, out = base
    previous = _files(out)
    before = stubs.snapshot(root)
    missed = []
    for label, mutate, expected in TAMPERED:
        tampered = copy.deepcopy(plan)
        mutate(tampered)
        path = root / "tampered" / f"{label}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(_dump(tampered))
        try:
            export_plan(path, out, str(model))
        except BadInputError as exc:
            line = exc.one_line()
            if "\n" in line or expected not in line or (str(path) not in line and str(model) not in line):
                missed.append((label, line))
        else:
            missed.append((label, "exported"))
        assert _files(out) == previous, label
    assert missed == []
    after = stubs.snapshot(root)
    written = [str(root / "tampered" / f"{label}.json") for label, _, _ in TAMPERED]
    assert sorted(after - before) == sorted([*written, str(root / "tampered")])  # the plans themselves only


def test_the_cli_refuses_a_sample_with_exit_2_and_one_line(base, capsys):
    root, model, plan, out = base
    previous = _files(out)
    for label, mutate, expected in TAMPERED[::6]:
        tampered = copy.deepcopy(plan)
        mutate(tampered)
        path = root / f"cli-{label}.json"
        path.write_text(_dump(tampered))
        code = main(["export", str(path), "--model", str(model), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and expected in err, (label, err)
        assert "internal error" not in err and "Traceback" not in err
    assert _files(out) == previous


def test_hostile_comment_fields_export_and_run_nothing(base, tmp_path):
    """model.path only reaches a comment of build.sh (the model itself comes from --model): it exports,
    and the script runs only the stub trtexec."""
    _, model, plan, _ = base
    tampered = copy.deepcopy(plan)
    tampered["model"]["path"] = f"m.onnx\n{MARK}\n'''\"\"\"\nimport os; os.system('touch PWNED')"
    path = tmp_path / "plan.json"
    path.write_text(_dump(tampered))
    out = tmp_path / "out"
    export_plan(path, out, str(model))
    env = stubs.install(tmp_path / "stubs")
    before = stubs.snapshot(tmp_path)
    shell = stubs.run_shell_scripts([out / "build.sh"], env, tmp_path)
    results = stubs.run_python_scripts([out / "build_trt.py"], env, tmp_path, tmp_path / "stubs")
    assert shell.returncode == 0 and "FAILED" not in shell.stderr, shell.stderr
    assert results == [[str(out / "build_trt.py"), "ok"]]
    assert not list(tmp_path.rglob("PWNED"))
    new = stubs.snapshot(tmp_path) - before
    assert all(p.startswith(str(out) + "/") or p.startswith(str(tmp_path / "stubs")) for p in new), sorted(new)
    assert {c["tool"] for c in stubs.calls(tmp_path / "stubs")} == {"trtexec", "tensorrt"}
