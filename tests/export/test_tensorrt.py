"""`edgeplan export --trt 10|11`: the same plan built for both TensorRT majors.

10: every GPU/DLA boundary tensor has one type and format on both sides (producer's --outputIOFormats, each
consumer's --inputIOFormats, and the builder API's). 11: strongly typed sub-models whose Cast and Q/DQ nodes
hold each planned layer's precision, no removed flag anywhere, and onnxruntime reproducing the model."""

from __future__ import annotations

import ast
import json
import shlex
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from optimizer.backends._tensorrt_files import trtexec_spec
from optimizer.backends._tensorrt_typed import _KEEP, _WEIGHT
from optimizer.catalog._load import CATALOG_ENV
from optimizer.errors import BadInputError
from optimizer.export import export_plan, run_chain
from optimizer.fileio import write_json
from optimizer.plan import optimize
from optimizer.solver import PlanRequest
from tests.conftest import ZOO
from tests.export.test_export import _branchy, _reference
from tests.solver.conftest import FAVOUR_DLA

ort = pytest.importorskip("onnxruntime")

MIXED = {"c0": "int8", "exp": "fp32", "c1": "int8", "c2": "fp16"}
FP16 = {"c0": "fp16", "exp": "fp16", "c1": "fp16", "skip": "fp16", "skip2": "fp16", "c2": "fp16", "side": "fp16"}


@pytest.fixture
def favour(tmp_path):
    path = tmp_path / "favour.toml"
    path.write_text(FAVOUR_DLA)
    return str(path)


def _plan(tmp_path, model, favour, target="orin-agx", **request):
    planned = optimize(str(model), target, PlanRequest(**request), profile_path=favour)
    path = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*.json')))}.json"
    write_json(path, planned.plan.to_json())
    return path, planned.plan.to_json()


def _commands(out):
    """Each engine's trtexec argv (by its --onnx file), then the single-engine alternative's."""
    lines = [line for line in (out / "build.sh").read_text().splitlines() if line.startswith('"$TRTEXEC"')]
    argvs = [shlex.split(line.replace("${CALIB:+--calib=\"$CALIB\"}", ""))[1:] for line in lines]
    return {next(a for a in argv if a.startswith("--onnx="))[7:]: argv for argv in argvs}


def _flag(argv, name):
    return next((a.split("=", 1)[1] for a in argv if a.startswith(f"{name}=")), None)


def _sides(manifest, commands):
    """tensor -> {(engine id, 'in'|'out'): entry} from the IOFormats flags, in each engine's I/O order."""
    seen: dict[str, dict[tuple[int, str], str]] = {}
    for engine in manifest["engines"]:
        argv = commands[engine["onnx"]]
        for side, flag, tensors in (("in", "--inputIOFormats", engine["inputs"]),
                                    ("out", "--outputIOFormats", engine["outputs"])):
            value = _flag(argv, flag)
            if value is None:
                continue
            entries = value.split(",")
            assert len(entries) == len(tensors)  # trtexec wants one entry per tensor, in order
            for tensor, entry in zip(tensors, entries):
                seen.setdefault(tensor, {})[engine["id"], side] = entry
    return seen


@pytest.mark.parametrize("pins", [MIXED, FP16, {}], ids=["mixed", "fp16", "planner"])
def test_trt10_both_sides_of_every_dla_boundary_agree(tmp_path, favour, pins):
    model = _branchy(tmp_path)
    plan_path, plan = _plan(tmp_path, model, favour, precision_pins=pins)
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, tensorrt="10")
    commands = _commands(out)
    sides = _sides(manifest, commands)
    devices = {e["id"]: e["device"] for e in manifest["engines"]}
    producer = {t: e["id"] for e in manifest["engines"] for t in e["outputs"]}
    by_id = {s["id"]: s for s in plan["subgraphs"]}
    crossing = 0
    for engine in manifest["engines"]:
        for tensor in engine["inputs"]:
            if tensor not in producer:
                continue
            src, dst = devices[producer[tensor]], engine["device"]
            if (src == "gpu") == (dst == "gpu"):
                continue
            crossing += 1
            # the bug this fixes: a GPU engine feeding (or fed by) a DLA engine stated no format at all
            mine = sides[tensor][engine["id"], "in"]
            theirs = sides[tensor][producer[tensor], "out"]
            assert mine == theirs, (tensor, mine, theirs)
            dtype, fmt = mine.split(":")
            dla = producer[tensor] if src != "gpu" else engine["id"]
            planned = by_id[dla]["io_formats"][tensor]
            assert fmt == {"linear": "chw"}.get(planned, planned)  # the format the plan chose
            assert dtype in ("fp16", "int8")
    assert crossing >= 2
    for tensor, entries in sides.items():  # a tensor has one type and format wherever it is named
        assert len(set(entries.values())) == 1, (tensor, entries)
    spec = trtexec_spec("10")
    for argv in commands.values():
        for token in argv:
            assert token.split("=")[0] in spec["flags"], token
    builder = _engines(out)
    for engine in builder:  # the builder API declares the same boundary types and formats
        for tensor, (dtype, fmt) in engine["io"].items():
            entry = f"{dtype}:{'chw' if fmt == 'linear' else fmt}"
            assert all(e == entry for e in sides[tensor].values())


def _engines(out):
    tree = ast.parse((out / "build_trt.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ENGINES":
            return json.loads(ast.literal_eval(node.value.args[0]))
    raise AssertionError("no ENGINES in build_trt.py")


def test_trt10_gpu_engine_in_fp32_between_dla_engines_obeys_its_layers(tmp_path, favour):
    """An FP32 GPU layer between FP16 DLA engines: --fp16 for its boundary types, so its layers are obeyed."""
    plan_path, _ = _plan(tmp_path, _branchy(tmp_path), favour, precision_pins={**FP16, "exp": "fp32"})
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, tensorrt="10")
    gpu = next(e for e in manifest["engines"] if e["device"] == "gpu")
    argv = _commands(out)[gpu["onnx"]]
    assert "--fp16" in argv and "--precisionConstraints=obey" in argv
    assert _flag(argv, "--layerPrecisions") == "exp:fp32"


def _types(model):
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {v.name: v.type.tensor_type.elem_type for v in (*inferred.graph.input, *inferred.graph.value_info,
                                                             *inferred.graph.output)}
    types.update({t.name: t.data_type for t in inferred.graph.initializer})
    return types


def _precision_problems(model, plan):
    """Each planned node's precision, read back from the types and the Q/DQ around it."""
    layers = {layer["node"]: layer for layer in plan["layers"] if layer["role"] != "constant"}
    types = _types(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    problems, checked = [], 0
    for node in model.graph.node:
        layer = layers.get(node.name)
        if layer is None:
            continue
        checked += 1
        floats = [(i, t) for i, t in enumerate(node.input) if t and types.get(t) in (TensorProto.FLOAT,
                                                                                        TensorProto.FLOAT16)
                  and i not in _KEEP.get(node.op_type, ())]
        outs = [types.get(t) for t in node.output if types.get(t) in (TensorProto.FLOAT, TensorProto.FLOAT16)]
        precision = layer["precision"]
        if precision == "fp16":
            if any(types[t] != TensorProto.FLOAT16 for _, t in floats) or any(o != TensorProto.FLOAT16 for o in outs):
                problems.append(f"{node.name}: fp16 planned, reads {[types[t] for _, t in floats]} writes {outs}")
        elif precision == "fp32":
            if any(types[t] != TensorProto.FLOAT for _, t in floats) or any(o != TensorProto.FLOAT for o in outs):
                problems.append(f"{node.name}: fp32 planned, reads {[types[t] for _, t in floats]}")
        else:
            inits = {t.name for t in model.graph.initializer}
            inits |= {o for n in model.graph.node if n.op_type == "Cast" and n.input[0] in inits for o in n.output}
            for i, tensor in floats:
                if tensor in inits and i != _WEIGHT.get(node.op_type):
                    continue  # a bias stays float (cast to FLOAT where declared FLOAT16)
                dq = producer.get(tensor)
                q = producer.get(dq.input[0]) if dq is not None else None
                quantized = dq is not None and dq.op_type == "DequantizeLinear" and types[dq.input[0]] == TensorProto.INT8
                if not quantized or not (q is None or q.op_type == "QuantizeLinear"):
                    problems.append(f"{node.name}: int8 planned, input {i} is not read through Q/DQ")
    return problems, checked


def _calibrate(out, feeds):
    """What a user does before an INT8 build: calibrate_qdq.py on sample data sets the placeholder scales."""
    for k in range(2):
        np.save(out / f"sample{k}.npy", feeds["x"] * (1.0 - 0.1 * k))
    (out / "samples.txt").write_text("sample0.npy\nsample1.npy\n")
    result = subprocess.run([sys.executable, str(out / "calibrate_qdq.py"), str(out / "samples.txt")],
                            capture_output=True, text=True, timeout=120, cwd=out.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    listing = json.loads((out / "qdq_scales.json").read_text())["scales"]
    assert "placeholder" not in {s["from"] for s in listing.values()}


@pytest.mark.parametrize("pins", [MIXED, FP16, {}], ids=["mixed", "fp16", "planner"])
def test_trt11_strongly_typed_submodels_keep_each_planned_precision(tmp_path, favour, pins):
    model = _branchy(tmp_path)
    plan_path, plan = _plan(tmp_path, model, favour, precision_pins=pins)
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, tensorrt="11")
    assert manifest["tensorrt"] == "11"
    checked = 0
    for name in [e["onnx"] for e in manifest["engines"]] + [f"{model.stem}_typed.onnx"]:
        sub = onnx.load(out / name)
        onnx.checker.check_model(sub, full_check=True)
        problems, count = _precision_problems(sub, plan)
        assert problems == [], problems
        checked += count if name.startswith("engine_") else 0
    assert checked == sum(layer["role"] != "constant" for layer in plan["layers"])  # every planned node, once
    feeds = {"x": np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16)).astype(np.float32)}
    _calibrate(out, feeds)
    chain = [(e["onnx"], out / e["onnx"]) for e in manifest["engines"]]
    got = run_chain(chain, feeds, manifest["outputs"])
    whole = _reference(out / f"{model.stem}_typed.onnx", feeds)
    want = _reference(model, feeds)
    int8 = any(layer["precision"] == "int8" for layer in plan["layers"])
    for name in manifest["outputs"]:
        assert got[name].dtype == np.float32  # the model's outputs keep their declared type
        scale = float(np.abs(want[name]).max())
        tolerance = 0.08 if int8 else 0.01  # INT8 with calibrated scales; FP16 rounding
        assert np.max(np.abs(got[name] - want[name])) <= tolerance * scale
        assert np.max(np.abs(whole[name] - want[name])) <= tolerance * scale


def test_trt11_build_files_use_no_removed_flag(tmp_path, favour):
    plan_path, _ = _plan(tmp_path, _branchy(tmp_path), favour, precision_pins=MIXED)
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, tensorrt="11")
    spec = trtexec_spec("11")
    assert {"--fp16", "--int8", "--best", "--calib"} <= set(spec["removed"])
    commands = _commands(out)
    assert len(commands) == len(manifest["engines"]) + 1
    for argv in commands.values():
        for token in argv:
            flag = token.split("=")[0]
            assert flag in spec["flags"] and flag not in spec["removed"], token
            if flag in ("--inputIOFormats", "--outputIOFormats"):
                assert all(item in spec["io_formats"] for item in token.split("=", 1)[1].split(","))
    for engine in manifest["engines"]:
        argv = commands[engine["onnx"]]
        assert ("--adjustForDLA" in argv) is engine["device"].startswith("dla")
        assert ("--useDLACore=0" in argv) is engine["device"].startswith("dla")
        assert "--allowGPUFallback" not in argv
    sides = _sides(manifest, commands)
    for tensor, entries in sides.items():
        assert len(set(entries.values())) == 1, (tensor, entries)
    single = commands[f"{_branchy(tmp_path).stem}_typed.onnx"]
    assert "--allowGPUFallback" in single and "--adjustForDLA" in single
    builder = (out / "build_trt.py").read_text()
    compile(builder, "build_trt.py", "exec")
    assert "BuilderFlag" not in builder and "ADJUST_FOR_DLA" in builder
    assert "CALIB" not in (out / "build.sh").read_text()
    listing = json.loads((out / "qdq_scales.json").read_text())
    assert listing["scales"]["w0"]["from"] == "weights" and listing["scales"]["x"]["from"] == "placeholder"
    assert set(manifest["build"]) == {"build.sh", "build_trt.py", "branchy_typed.onnx", "qdq_scales.json",
                                      "calibrate_qdq.py"}


def test_trt11_boundaries_carry_the_dla_type(tmp_path, favour):
    """A tensor between a GPU and a DLA engine is FLOAT16 (FP16 DLA) or INT8 (INT8 DLA) on both sides; the
    model's own inputs and outputs keep their declared FLOAT."""
    plan_path, _ = _plan(tmp_path, _branchy(tmp_path), favour, precision_pins=MIXED)
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, tensorrt="11")
    declared: dict[str, set[int]] = {}
    for engine in manifest["engines"]:
        sub = onnx.load(out / engine["onnx"])
        for value in (*sub.graph.input, *sub.graph.output):
            declared.setdefault(value.name, set()).add(value.type.tensor_type.elem_type)
    assert declared["x"] == {TensorProto.FLOAT} and declared["y"] == {TensorProto.FLOAT}
    assert declared["a"] == {TensorProto.INT8}  # c0 is INT8 on DLA: the quantized tensor crosses
    assert all(len(types) == 1 for types in declared.values())


@pytest.mark.skipif(not (ZOO / "with-weights").exists(), reason="../shared/zoo is not present")
def test_trt11_zoo_model_fp16_reproduces(tmp_path, favour):
    model = ZOO / "with-weights" / "tv_mobilenet_v3_small.onnx"
    plan_path, plan = _plan(tmp_path, model, favour, allowed_precisions=frozenset({"fp16", "fp32"}))
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out, str(model), tensorrt="11")
    assert len(manifest["engines"]) > 2
    for engine in manifest["engines"]:
        sub = onnx.load(out / engine["onnx"])
        onnx.checker.check_model(sub, full_check=True)
        assert _precision_problems(sub, plan)[0] == []
    feeds = {manifest["inputs"][0]: np.random.default_rng(0).normal(0, 1, (1, 3, 224, 224)).astype(np.float32)}
    got = run_chain([(e["onnx"], out / e["onnx"]) for e in manifest["engines"]], feeds, manifest["outputs"])
    want = _reference(model, feeds)
    for name in manifest["outputs"]:
        assert np.max(np.abs(got[name] - want[name])) <= 0.02 * float(np.abs(want[name]).max())


def test_export_follows_the_plans_rule_set(tmp_path, favour):
    model = _branchy(tmp_path)
    plan10, _ = _plan(tmp_path, model, favour)
    plan11, plan = _plan(tmp_path, model, favour, tensorrt="11")
    assert plan["tensorrt_rules"] == "11"
    assert export_plan(plan10, tmp_path / "a")["tensorrt"] == "10"
    assert export_plan(plan11, tmp_path / "b")["tensorrt"] == "11"
    assert export_plan(plan11, tmp_path / "c", tensorrt="10")["tensorrt"] == "10"
    with pytest.raises(BadInputError, match="TensorRT major"):
        export_plan(plan10, tmp_path / "d", tensorrt="9")
    for bad in ("12", 11, ["11"], "11; touch PWNED"):  # a tampered field: one line, nothing written
        tampered = tmp_path / "tampered.json"
        tampered.write_text(json.dumps({**plan, "tensorrt_rules": bad}))
        with pytest.raises(BadInputError, match="tensorrt_rules"):
            export_plan(tampered, tmp_path / "e")
    assert not (tmp_path / "e").exists() and not (tmp_path / "PWNED").exists()


def test_trt11_refuses_a_plan_with_dla_where_11_has_none(tmp_path, favour):
    plan_path, plan = _plan(tmp_path, _branchy(tmp_path), favour, target="xavier-agx")
    assert any(layer["device"].startswith("dla") for layer in plan["layers"])
    export_plan(plan_path, tmp_path / "ten")
    with pytest.raises(BadInputError, match="DLA-TRT11-PLATFORM"):
        export_plan(plan_path, tmp_path / "eleven", tensorrt="11")
    assert not (tmp_path / "eleven").exists()


RKNN_BOARD = """
family = "rockchip-rknn"
[targets.my-rock5b]
base = "rk3588"
name = "A test RK3588 board"
"""


def test_rknn_target_platform_is_the_toolkits_soc_name(tmp_path, monkeypatch):
    from tests.export.test_export import NPU_PINS

    folder = tmp_path / "extra"
    folder.mkdir()
    (folder / "board.toml").write_text(RKNN_BOARD)
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    model = _branchy(tmp_path)
    planned = optimize(str(model), "my-rock5b", PlanRequest(pins=NPU_PINS))
    write_json(tmp_path / "plan.json", planned.plan.to_json())
    export_plan(tmp_path / "plan.json", tmp_path / "out")
    settings = json.loads((tmp_path / "out" / "runtime.json").read_text())
    assert settings["target_platform"] == "rk3588"
    tree = ast.parse((tmp_path / "out" / "convert.py").read_text())
    literal = next(n.value.args[0] for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and getattr(n.targets[0], "id", "") == "SETTINGS")
    assert json.loads(ast.literal_eval(literal))["target_platform"] == "rk3588"
    (folder / "board.toml").write_text(RKNN_BOARD.replace('base = "rk3588"\n', 'base = "rk3588"\ntoolkit_platform = "rock5b"\n'))
    with pytest.raises(BadInputError, match="toolkit_platform 'rock5b' is not one of"):
        optimize(str(model), "my-rock5b", PlanRequest())


RKNN_PYTHON = __import__("os").environ.get("RKNN_PYTHON")


@pytest.mark.slow
@pytest.mark.skipif(not RKNN_PYTHON, reason="RKNN_PYTHON (rknn-toolkit2's own venv) is not set")
def test_a_board_variant_converts_with_the_real_toolkit(tmp_path, monkeypatch):
    """convert.py of a plan for a board target (a variant of rk3588) runs rknn-toolkit2 with the SoC name it knows."""
    from tests.export.test_export import NPU_PINS

    folder = tmp_path / "extra"
    folder.mkdir()
    (folder / "board.toml").write_text(RKNN_BOARD)
    monkeypatch.setenv(CATALOG_ENV, str(folder))
    planned = optimize(str(_branchy(tmp_path)), "my-rock5b", PlanRequest(pins=NPU_PINS,
                                                                          allowed_precisions=frozenset({"fp16"})))
    write_json(tmp_path / "plan.json", planned.plan.to_json())
    out = tmp_path / "out"
    export_plan(tmp_path / "plan.json", out)
    result = subprocess.run([RKNN_PYTHON, "convert.py", "--out", "m.rknn"], cwd=out, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
    assert (out / "m.rknn").stat().st_size > 0


@pytest.mark.skipif(not ZOO.exists(), reason="../shared/zoo is not present")
@pytest.mark.parametrize("name", ["transformer_encoder", "tv_mobilenet_v2_fp16"])
@pytest.mark.parametrize("major", ["10", "11"])
def test_structure_only_zoo_models_export_for_both_majors(tmp_path, favour, name, major):
    """Folded shape arithmetic shared by two engines (the transformer's attention scale) is no engine output;
    a model declared in FLOAT16 keeps its types where the plan does not change them."""
    plan_path, plan = _plan(tmp_path, ZOO / f"{name}.onnx", favour, tensorrt=major)
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out)
    assert manifest["tensorrt"] == major
    assert len(manifest["engines"]) > (2 if name == "transformer_encoder" else 0)
    for engine in manifest["engines"]:
        sub = onnx.load(out / engine["onnx"], load_external_data=False)
        known = {v.name for v in sub.graph.input} | {o for n in sub.graph.node for o in n.output}
        assert all(o.name in known for o in sub.graph.output), engine["onnx"]
        if major == "11":
            onnx.shape_inference.infer_shapes(sub, check_type=True, strict_mode=True)
            assert _precision_problems(sub, plan)[0] == []


def _with_if(tmp_path):
    """Relu -> If (the branches read the Relu's output from the outer graph) -> y."""
    from onnx import helper

    from tests.conftest import save_model, value

    then = helper.make_graph([helper.make_node("Add", ["t", "t"], ["o1"], name="then_add")], "then", [],
                             [helper.make_tensor_value_info("o1", TensorProto.FLOAT, [1, 8, 16, 16])])
    other = helper.make_graph([helper.make_node("Mul", ["t", "t"], ["o2"], name="else_mul")], "else", [],
                              [helper.make_tensor_value_info("o2", TensorProto.FLOAT, [1, 8, 16, 16])])
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes = [helper.make_node("Relu", ["x"], ["t"], name="relu"),
             helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="greater"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)]
    return save_model(tmp_path / "branching.onnx", nodes, [value("x", [1, 8, 16, 16])], [value("y", None)], [zero])


def test_trt11_control_flow_bodies_read_the_types_they_declare(tmp_path, favour):
    """An FP16 layer whose output an If body reads by name: the outer tensor stays FLOAT for the body. Checked on
    the typed whole model (the engine split of such a model is tested in test_export.py)."""
    model = _with_if(tmp_path)
    plan_path, plan = _plan(tmp_path, model, favour, precision_pins={"relu": "fp16"}, pins={"relu": "gpu"})
    assert {layer["node"]: layer["precision"] for layer in plan["layers"]}["relu"] == "fp16"
    out = tmp_path / "out"
    export_plan(plan_path, out, tensorrt="11")
    whole = out / "branching_typed.onnx"
    onnx.checker.check_model(onnx.load(whole), full_check=True)
    assert _precision_problems(onnx.load(whole), {"layers": [layer for layer in plan["layers"]
                                                              if layer["node"] == "relu"]})[0] == []
    for sign in (1.0, -1.0):  # both branches
        feeds = {"x": sign * np.abs(np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16))).astype(np.float32)}
        got, want = _reference(whole, feeds)["y"], _reference(model, feeds)["y"]
        assert np.max(np.abs(got - want)) <= 0.01 * max(float(np.abs(want).max()), 1.0)
