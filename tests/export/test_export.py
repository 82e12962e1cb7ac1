"""`edgeplan export`: sub-models that reproduce the model in onnxruntime, and valid build files."""

from __future__ import annotations

import json
import py_compile
import shlex

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from optimizer.backends._tensorrt_files import trtexec_spec
from optimizer.errors import BadInputError
from optimizer.export import export_plan, run_chain
from optimizer.fileio import write_json
from optimizer.plan import optimize
from optimizer.solver import PlanRequest
from tests.conftest import ZOO, save_model, value
from tests.solver.conftest import FAVOUR_DLA

ort = pytest.importorskip("onnxruntime")


def _plan(tmp_path, model, target, profile=None, **request):
    planned = optimize(str(model), target, PlanRequest(**request), profile_path=profile)
    path = tmp_path / "plan.json"
    write_json(path, planned.plan.to_json())
    return path, planned.plan.to_json()


def _reference(model_path, feeds):
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def _check_equivalent(tmp_path, model_path, plan_path, shape):
    out = tmp_path / "export"
    manifest = export_plan(plan_path, out, str(model_path))
    feeds = {manifest["inputs"][0]: np.random.default_rng(0).normal(0, 1, shape).astype(np.float32)}
    chain = [(e["onnx"], out / e["onnx"]) for e in manifest["engines"]]
    available = set(feeds)
    for engine in manifest["engines"]:  # every engine input is a model input or an earlier output
        assert set(engine["inputs"]) <= available
        available |= set(engine["outputs"])
        sub = onnx.load(out / engine["onnx"])
        onnx.checker.check_model(sub, full_check=True)
    got = run_chain(chain, feeds, manifest["outputs"])
    want = _reference(model_path, feeds)
    for name in manifest["outputs"]:
        assert np.max(np.abs(got[name] - want[name])) <= 1e-4
    return manifest


@pytest.fixture
def favour(tmp_path):
    path = tmp_path / "favour.toml"
    path.write_text(FAVOUR_DLA)
    return str(path)


@pytest.mark.skipif(not (ZOO / "with-weights").exists(), reason="../shared/zoo is not present")
@pytest.mark.parametrize("name", ["tv_squeezenet1_1.onnx", "tv_mobilenet_v3_small.onnx"])
def test_zoo_models_split_and_reproduce(tmp_path, favour, name):
    model = ZOO / "with-weights" / name
    plan_path, plan = _plan(tmp_path, model, "orin-agx", favour)
    manifest = _check_equivalent(tmp_path, model, plan_path, (1, 3, 224, 224))
    assert len(manifest["engines"]) == len(plan["subgraphs"])
    if name == "tv_mobilenet_v3_small.onnx":
        assert len(manifest["engines"]) > 2  # HardSwish is GPU-only: DLA and GPU engines alternate


# The branchy model is tiny: with the NPU/CPU hand-over priced, an RKNN planner would run it whole on the CPU
# beside its CPU-only Exp. These tests are about exporting mixed plans, so the convolutions are pinned to the NPU.
NPU_PINS = {"c0": "npu", "c1": "npu", "c2": "npu", "skip2": "npu", "side": "npu"}


def _branchy(tmp_path):
    """Conv -> (Exp branch | Conv branch) -> Add skip -> Conv, with real random weights."""
    rng = np.random.default_rng(1)
    def w(name, shape):
        return numpy_helper.from_array(rng.normal(0, 0.2, shape).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Exp", ["a"], ["e"], name="exp"),
             helper.make_node("Conv", ["a", "w1"], ["b"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["e", "b"], ["s"], name="skip"),
             helper.make_node("Add", ["s", "a"], ["t"], name="skip2"),
             helper.make_node("Conv", ["t", "w2"], ["y"], name="c2", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["a"], ["z"], name="side")]
    return save_model(tmp_path / "branchy.onnx", nodes, [value("x", [1, 8, 16, 16])],
                      [value("y", None), value("z", None)], [w("w0", (8, 8, 3, 3)), w("w1", (8, 8, 3, 3)),
                                                             w("w2", (4, 8, 1, 1))])


@pytest.mark.parametrize("target", ["orin-agx", "rk3588"])
def test_branches_and_skips_reproduce(tmp_path, favour, target):
    model = _branchy(tmp_path)
    plan_path, plan = _plan(tmp_path, model, target, favour if target == "orin-agx" else None,
                            **({} if target == "orin-agx" else {"pins": NPU_PINS}))
    assert len(plan["subgraphs"]) >= 2
    _check_equivalent(tmp_path, model, plan_path, (1, 8, 16, 16))


def test_structure_only_models_give_structure_only_submodels(tmp_path):
    plan_path, _ = _plan(tmp_path, ZOO / "tv_resnet18.onnx", "orin-agx") if ZOO.exists() else pytest.skip()
    manifest = export_plan(plan_path, tmp_path / "out")
    sub = onnx.load(tmp_path / "out" / manifest["engines"][0]["onnx"], load_external_data=False)
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in sub.graph.initializer)


def test_trtexec_commands_use_only_known_flags(tmp_path, favour):
    model = _branchy(tmp_path)
    plan_path, plan = _plan(tmp_path, model, "orin-agx", favour)
    out = tmp_path / "out"
    export_plan(plan_path, out)
    spec = trtexec_spec()
    script = (out / "build.sh").read_text()
    commands = [line for line in script.splitlines() if "--onnx=" in line]
    assert len(commands) == len(plan["subgraphs"]) + 1  # one per engine plus the single-engine alternative
    for line in commands:
        for token in shlex.split(line):
            if token.startswith("--"):
                flag = token.split("=")[0]
                assert flag in spec["flags"], flag
                if flag in ("--inputIOFormats", "--outputIOFormats"):
                    for item in token.split("=", 1)[1].split(","):
                        dtype, fmt = item.split(":")
                        assert dtype in spec["io_types"] and fmt in spec["io_formats"]
                if flag == "--memPoolSize":
                    pools = dict(p.split(":") for p in token.split("=", 1)[1].split(","))
                    assert set(pools) <= set(spec["memory_pools"])
    dla = [line for line in commands[:-1] if "--useDLACore" in line]
    assert dla and all("--allowGPUFallback" not in line for line in dla)
    assert "--allowGPUFallback" in commands[-1]
    py_compile.compile(str(out / "build_trt.py"), doraise=True)
    assert (out / "build.sh").stat().st_mode & 0o111


def test_rknn_files(tmp_path):
    model = _branchy(tmp_path)
    plan_path, plan = _plan(tmp_path, model, "rk3576", precision_pins={"c1": "fp16"}, pins=NPU_PINS)
    by_node = {layer["node"]: layer["device"] for layer in plan["layers"]}
    out = tmp_path / "out"
    manifest = export_plan(plan_path, out)
    settings = json.loads((out / "runtime.json").read_text())
    assert settings["target_platform"] == "rk3576" and settings["do_quantization"]
    assert settings["custom_quantize_layers"] == {"b": "float16"}
    cpu_tensors = {"e"} if by_node["exp"] == "cpu" else set()  # op_target is keyed by output tensor, not node
    assert settings["op_target"] == {t: "cpu" for t in cpu_tensors}
    pinned_path, pinned = _plan(tmp_path, model, "rk3576", pins={"exp": "cpu", **NPU_PINS})
    assert {layer["node"]: layer["device"] for layer in pinned["layers"]}["exp"] == "cpu"
    export_plan(pinned_path, tmp_path / "pinned")
    assert json.loads((tmp_path / "pinned" / "runtime.json").read_text())["op_target"] == {"e": "cpu"}
    assert "custom_quantize_layers:" in (out / "custom_quantize_layers.yaml").read_text()
    py_compile.compile(str(out / "convert.py"), doraise=True)
    assert manifest["build"] == ["convert.py", "custom_quantize_layers.yaml", "runtime.json"]


def test_plan_for_another_model_is_refused(tmp_path, favour):
    plan_path, _ = _plan(tmp_path, _branchy(tmp_path), "orin-agx", favour)
    other = save_model(tmp_path / "other.onnx", [helper.make_node("Relu", ["x"], ["y"], name="r")],
                       [value("x", [1, 4])], [value("y", None)])
    with pytest.raises(BadInputError, match="sha256"):
        export_plan(plan_path, tmp_path / "out", str(other))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(BadInputError, match="not a JSON plan"):
        export_plan(tmp_path / "bad.json", tmp_path / "out")


RKNN_PYTHON = __import__("os").environ.get("RKNN_PYTHON")


@pytest.mark.slow
@pytest.mark.skipif(not RKNN_PYTHON, reason="RKNN_PYTHON (rknn-toolkit2's own venv) is not set")
def test_rknn_convert_round_trip_keeps_fp16_layers(tmp_path):
    """convert.py and the hybrid-quantization cfg go through the real rknn-toolkit2: the plan's FP16
    layers come out FLOAT16 in its layer table, the rest INT8."""
    import re
    import subprocess

    model = _branchy(tmp_path)
    plan_path, _ = _plan(tmp_path, model, "rk3588", precision_pins={"c1": "fp16", "c0": "int8"})  # 8-channel INT8
    out = tmp_path / "out"  # convs fill 1/16 of the MAC array: unpinned, the plan would be all FP16
    export_plan(plan_path, out)
    np.save(out / "x.npy", np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16)).astype(np.float32))
    (out / "dataset.txt").write_text("x.npy\n")
    result = subprocess.run([RKNN_PYTHON, "convert.py", "--dataset", "dataset.txt", "--out", "m.rknn"], cwd=out,
                            capture_output=True, text=True, timeout=600)
    log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    assert result.returncode == 0, log[-2000:]
    assert (out / "m.rknn").stat().st_size > 0
    rows = {m.group(3): m.group(1) for m in re.finditer(r"\s(INT8|FLOAT16)\s+(NPU|CPU)\s.*?\s\w+:(\S+)\s*$", log, re.M)}
    def precision(node: str) -> str | None:  # fused layers are named after their first node ("c1_ConvAdd")
        return next((p for name, p in rows.items() if name == node or name.startswith(f"{node}_")), None)
    assert precision("c1") == "FLOAT16"
    assert precision("c0") == "INT8"


def _qdq(tmp_path):
    """QuantizeLinear/DequantizeLinear around a Conv + Relu, as a quantization-aware export writes it."""
    rng = np.random.default_rng(3)
    scale = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    inits = [scale("s", 0.05), numpy_helper.from_array(np.array(128, np.uint8), "z"), scale("ws", 0.01),
             numpy_helper.from_array(np.array(0, np.int8), "wz"), numpy_helper.from_array(np.zeros(8, np.float32), "b"),
             numpy_helper.from_array(rng.integers(-127, 128, (8, 8, 3, 3)).astype(np.int8), "wq")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dqx"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dqw"),
             helper.make_node("Conv", ["xd", "wd", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="qr"),
             helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dqr")]
    return save_model(tmp_path / "qdq.onnx", nodes, [value("x", [1, 8, 16, 16])], [value("y", [1, 8, 16, 16])],
                      inits, opset=13)


def test_a_qdq_model_is_built_with_its_own_scales(tmp_path):
    plan_path, plan = _plan(tmp_path, _qdq(tmp_path), "rk3588", precision_pins={"conv": "int8"})
    assert {layer["precision"] for layer in plan["layers"] if layer["node"] == "conv"} == {"int8"}
    export_plan(plan_path, tmp_path / "out")
    settings = json.loads((tmp_path / "out" / "runtime.json").read_text())
    assert settings["prequantized"] and not settings["do_quantization"]
    assert settings["custom_quantize_layers"] == {}


@pytest.mark.slow
@pytest.mark.skipif(not RKNN_PYTHON, reason="RKNN_PYTHON (rknn-toolkit2's own venv) is not set")
def test_a_qdq_model_converts_with_the_real_toolkit(tmp_path):
    """rknn-toolkit2 2.5.0 refuses do_quantization=True on a QDQ model ('If a quantized model has been import,
    please set do_quantization = False'); the exported convert.py builds it."""
    import subprocess

    plan_path, _ = _plan(tmp_path, _qdq(tmp_path), "rk3588", precision_pins={"conv": "int8"})
    out = tmp_path / "out"
    export_plan(plan_path, out)
    result = subprocess.run([RKNN_PYTHON, "convert.py", "--out", "m.rknn"], cwd=out, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
    assert (out / "m.rknn").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.skipif(not RKNN_PYTHON, reason="RKNN_PYTHON (rknn-toolkit2's own venv) is not set")
def test_verify_rknn_agrees_with_the_toolkit(tmp_path, monkeypatch):
    from optimizer.export._verify_rknn import verify_rknn
    model = _branchy(tmp_path)
    _, plan = _plan(tmp_path, model, "rk3566", pins=NPU_PINS)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    comparison = verify_rknn(plan, str(model), RKNN_PYTHON)
    assert list((tmp_path / "cwd").iterdir()) == []  # the toolkit's check*.onnx stay in its temp folder
    assert comparison.built and comparison.agree >= 3 and comparison.disagreements == ()
    wrong = dict(plan, layers=[dict(layer, device="npu") if layer["node"] == "exp" else layer
                               for layer in plan["layers"]])
    assert any("exp" in d for d in verify_rknn(wrong, str(model), RKNN_PYTHON).disagreements)


def test_verify_rknn_needs_the_interpreter(tmp_path):
    from optimizer.export._verify_rknn import verify_rknn
    _, plan = _plan(tmp_path, _branchy(tmp_path), "rk3566")
    with pytest.raises(BadInputError, match="interpreter not found"):
        verify_rknn(plan, str(tmp_path / "branchy.onnx"), str(tmp_path / "no-python"))


def test_a_plan_made_with_input_shape_exports_at_those_shapes(tmp_path, favour):
    """A dynamic-batch model planned with --input-shape: the plan records the shapes, so export reads the
    model as it was planned (DLA-STATIC holds), writes static engines, and the single engine gets --shapes."""
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["y"], name="r0")]
    model = save_model(tmp_path / "dyn.onnx", nodes, [value("x", ["N", 8, 16, 16])], [value("y", None)],
                       [numpy_helper.from_array(rng.normal(0, 0.2, (8, 8, 3, 3)).astype(np.float32), "w0")])
    planned = optimize(str(model), "orin-agx", PlanRequest(), input_shapes={"x": (1, 8, 16, 16)},
                       profile_path=favour)
    plan = planned.plan.to_json()
    assert plan["model"]["input_shapes"] == {"x": [1, 8, 16, 16]}
    assert any(layer["device"].startswith("dla") for layer in plan["layers"])
    plan_path = tmp_path / "plan.json"
    write_json(plan_path, plan)
    manifest = _check_equivalent(tmp_path, model, plan_path, (1, 8, 16, 16))
    for engine in manifest["engines"]:
        sub = onnx.load(tmp_path / "export" / engine["onnx"])
        dims = [d.dim_value for d in sub.graph.input[0].type.tensor_type.shape.dim]
        assert dims[0] == 1 and 0 not in dims
    assert "--shapes=x:1x8x16x16" in (tmp_path / "export" / "build.sh").read_text()
    without = dict(plan, model={k: v for k, v in plan["model"].items() if k != "input_shapes"})
    write_json(plan_path, without)
    with pytest.raises(BadInputError, match="DLA-STATIC"):  # the same plan without its shapes does not hold
        export_plan(plan_path, tmp_path / "again", str(model))


def _if_reads_outer(tmp_path):
    """Conv -> If whose branches read the Conv's output and a weight from the outer graph by name."""
    rng = np.random.default_rng(3)
    then = helper.make_graph([helper.make_node("Add", ["t", "bias"], ["o1"], name="then_add")], "then", [],
                             [helper.make_tensor_value_info("o1", onnx.TensorProto.FLOAT, [1, 8, 16, 16])])
    other = helper.make_graph([helper.make_node("Mul", ["t", "t"], ["o2"], name="else_mul")], "else", [],
                              [helper.make_tensor_value_info("o2", onnx.TensorProto.FLOAT, [1, 8, 16, 16])])
    nodes = [helper.make_node("Conv", ["x", "w0"], ["t"], name="c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="greater"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)]
    inits = [numpy_helper.from_array(rng.normal(0, 0.2, (8, 8, 3, 3)).astype(np.float32), "w0"),
             numpy_helper.from_array(rng.normal(0, 1, (1, 8, 1, 1)).astype(np.float32), "bias"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    return save_model(tmp_path / "outer.onnx", nodes, [value("x", [1, 8, 16, 16])], [value("y", None)], inits)


def test_a_tensor_only_a_control_flow_body_reads_crosses_the_engine_boundary(tmp_path, favour):
    """The Conv runs on the DLA, the If on the GPU: the body's outer read `t` is the GPU engine's input, the
    body's weight comes along, and the chain of engines reproduces both branches."""
    model = _if_reads_outer(tmp_path)
    plan_path, plan = _plan(tmp_path, model, "orin-agx", favour)
    device = {layer["node"]: layer["device"] for layer in plan["layers"]}
    assert device["c0"].startswith("dla") and device["branch"] == "gpu"
    holder = next(s for s in plan["subgraphs"] if "branch" in s["nodes"])
    assert "t" in holder["inputs"]
    producer = next(s for s in plan["subgraphs"] if "c0" in s["nodes"])
    assert "t" in producer["outputs"]
    for sign in (1.0, -1.0):
        out = tmp_path / f"export{sign:+.0f}"
        manifest = export_plan(plan_path, out, str(model))
        feeds = {"x": sign * np.abs(np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16))).astype(np.float32)}
        for engine in manifest["engines"]:
            onnx.checker.check_model(onnx.load(out / engine["onnx"]), full_check=True)
        got = run_chain([(e["onnx"], out / e["onnx"]) for e in manifest["engines"]], feeds, manifest["outputs"])
        assert np.max(np.abs(got["y"] - _reference(model, feeds)["y"])) <= 1e-4
