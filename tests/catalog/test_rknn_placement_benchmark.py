"""benchmarks/rknn_placement.py on a tiny corpus written here: how layers map to nodes and how it scores."""

from __future__ import annotations

import csv
import gzip
import subprocess
import sys
from pathlib import Path

from onnx import TensorProto, helper

from tests.conftest import REPO, save_model, value, weight

LAYERS = ["model", "soc", "precision", "layer", "op_type", "data_type", "target", "input_shapes", "output_shapes",
          "cycles_ddr", "cycles_npu", "cycles_total", "rw_kb", "full_name", "onnx_op_type", "onnx_nodes", "mapping",
          "extra"]


def _corpus(tmp_path: Path, layers: list[tuple[str, str, str, str]],
            family: str = "torchvision/classification") -> Path:
    """One model: Conv -> Relu -> Min(x, x) -> Conv, run on rk3588 FP16; layers = (op, target, full, node)."""
    corpus = tmp_path / "corpus"
    (corpus / "models").mkdir(parents=True)
    (corpus / "rknn").mkdir()
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Min", ["r", "r"], ["m"], name="min"),
             helper.make_node("Conv", ["m", "w"], ["y"], name="conv2", kernel_shape=[1, 1])]
    save_model(corpus / "models" / "m.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", [1, 8, 4, 4])],
               [weight("w", [8, 8, 1, 1])])
    (corpus / "MANIFEST.csv").write_text(f"name,family\nm,{family}\n")
    (corpus / "rknn" / "runs.csv").write_text("model,family,soc,precision,status,error\n"
                                              f"m,{family},rk3588,fp16,ok,\n"
                                              f"m,{family},rk3588,int8,crashed,toolkit process died (signal 6)\n")
    with gzip.open(corpus / "rknn" / "layers.csv.gz", "wt", newline="") as handle:
        writer = csv.DictWriter(handle, LAYERS)
        writer.writeheader()
        for i, (op, target, full, node) in enumerate(layers):
            writer.writerow({"model": "m", "soc": "rk3588", "precision": "fp16", "layer": i, "op_type": op,
                             "target": target, "full_name": full, "onnx_nodes": node})
    return corpus


def _run(corpus: Path, *extra: str) -> str:
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "rknn_placement.py"), "--corpus", str(corpus),
                          "--details", *extra], capture_output=True, text=True, cwd=REPO)
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


def test_fused_nodes_count_as_npu_and_a_cpu_layer_makes_its_node_cpu(tmp_path):
    # Relu fused into conv (absent), Min split into an NPU and a CPU layer (-> CPU), conv2 named 'conv2#2'
    stdout = _run(_corpus(tmp_path, [("InputOperator", "CPU", "InputOperator:x", ""),
                                     ("ConvRelu", "NPU", "Conv:conv", "conv"),
                                     ("Min", "NPU", "Min:min_a", "min"), ("Transpose", "CPU", "Transpose:min_tp", "min"),
                                     ("Conv", "NPU", "Conv:conv2#2", ""),
                                     ("OutputOperator", "CPU", "OutputOperator:y", "")]))
    row = next(line for line in stdout.splitlines() if line.strip().startswith("rk3588   fp16"))
    # edgeplan says Min is CPU (no NPU kernel), the toolkit too: one true positive, nothing else
    assert "| 1.000 1.000 1.000 | 1 0 0 | 1.000 (4)" in row
    assert "toolkit failures (not scored): 1" in stdout
    assert "toolkit crashed: m (1 configs: rk3588/int8): toolkit process died (signal 6)" in stdout


def test_held_out_disagreements_are_scored_but_listed_only_when_asked(tmp_path):
    corpus = _corpus(tmp_path, [("Conv", "CPU", "Conv:conv2#2", "")], family="torchvision/segmentation")
    default = _run(corpus)
    assert "held-out models: m" in default
    row = next(line for line in default.splitlines() if line.strip().startswith("rk3588   fp16"))
    assert "| 0 1 1 |" in row  # scored in the held-out table
    assert "edgeplan NPU, toolkit CPU" not in default and "Conv NPU->CPU" not in default
    assert "conv2 (Conv): edgeplan NPU, toolkit CPU" in _run(corpus, "--split", "held-out")


def test_a_cpu_layer_of_a_node_edgeplan_puts_on_the_npu_is_a_miss(tmp_path):
    stdout = _run(_corpus(tmp_path, [("Conv", "CPU", "Conv:conv2#2", "")]))  # found through its '#2' suffix
    row = next(line for line in stdout.splitlines() if line.strip().startswith("rk3588   fp16"))
    assert "| 0 1 1 |" in row  # Min: edgeplan CPU, toolkit NPU (absent); conv2: edgeplan NPU, toolkit CPU
    assert "conv2 (Conv): edgeplan NPU, toolkit CPU" in stdout


def test_missing_tables_are_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "rknn_placement.py"), "--corpus",
                          str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "no corpus tables" in out.stderr


def test_models_missing_from_the_seen_tables_form_the_unseen_split(tmp_path):
    corpus = _corpus(tmp_path, [("Conv", "CPU", "Conv:conv2#2", "")])
    seen = tmp_path / "seen_runs.csv"
    seen.write_text("model,family,soc,precision,status,error\nother,torchvision/classification,rk3588,fp16,ok,\n")
    stdout = _run(corpus, "--seen", str(seen))
    assert f"unseen models (not in {seen}): m" in stdout
    unseen = stdout.split("\nunseen: ")[1].splitlines()
    assert "| 0 1 1 |" in next(line for line in unseen if line.strip().startswith("rk3588   fp16"))
    seen.write_text(seen.read_text() + "m,torchvision/classification,rk3588,fp16,ok,\n")
    stdout = _run(corpus, "--seen", str(seen))
    assert f"unseen models (not in {seen}): none" in stdout and "\nunseen: " in stdout
    assert "rk3588   fp16" not in stdout.split("\nunseen: ")[1]


def _refused_corpus(tmp_path: Path, training: bool) -> Path:
    """One weight-standardised Conv whose conversion the toolkit refused on rk3588 (status failed)."""
    import numpy as np

    from tests.conftest import const

    corpus = tmp_path / "corpus"
    (corpus / "models").mkdir(parents=True)
    (corpus / "rknn").mkdir()
    bn = helper.make_node("BatchNormalization", ["w", "ones", "zeros", "zeros", "ones"],
                          ["wn", "rm", "rv"] if training else ["wn"], name="ws",
                          **({"training_mode": 1} if training else {}))
    nodes = [bn, helper.make_node("Conv", ["x", "wn"], ["y"], name="conv", kernel_shape=[1, 1])]
    save_model(corpus / "models" / "ws.onnx", nodes, [value("x", [1, 8, 4, 4])], [value("y", None)],
               [weight("w", [8, 8, 1, 1]), const("ones", np.ones(8, np.float32)),
                const("zeros", np.zeros(8, np.float32))])
    (corpus / "MANIFEST.csv").write_text("name,family\nws,timm/cnn\n")
    (corpus / "rknn" / "runs.csv").write_text(
        "model,family,soc,precision,status,error\n"
        "ws,timm/cnn,rk3588,fp16,failed,ValueError: The 'ws' of type BatchNormalization is in Training mode\n")
    with gzip.open(corpus / "rknn" / "layers.csv.gz", "wt", newline="") as handle:
        csv.DictWriter(handle, LAYERS).writeheader()
    return corpus


def test_a_refused_model_lists_the_refusal_rule_edgeplan_names(tmp_path):
    stdout = _run(_refused_corpus(tmp_path, training=True))
    line = next(x for x in stdout.splitlines() if x.startswith("toolkit failed: ws"))
    assert line.endswith("[edgeplan: RKNN-BN-TRAINING]")
    assert "edgeplan names a refusal rule: 1 of 1 models" in stdout


def test_a_refusal_edgeplan_did_not_foresee_says_so(tmp_path):
    stdout = _run(_refused_corpus(tmp_path / "eval", training=False))
    assert "[edgeplan: no refusal rule]" in stdout
    assert "edgeplan names a refusal rule: 0 of 1 models" in stdout


def test_a_crash_edgeplan_foresees_is_named_and_a_timeout_is_not_a_refusal(tmp_path):
    """corpus yolo26n_sem_320: the converter aborts on a Cast to uint8 (status crashed), RKNN-CAST-UINT8."""
    corpus = tmp_path / "corpus"
    (corpus / "models").mkdir(parents=True)
    (corpus / "rknn").mkdir()
    nodes = [helper.make_node("ArgMax", ["x"], ["a"], name="argmax", axis=1, keepdims=1),
             helper.make_node("Cast", ["a"], ["y"], name="cast", to=TensorProto.UINT8)]
    save_model(corpus / "models" / "sem.onnx", nodes, [value("x", [1, 8, 4, 4])],
               [value("y", None, TensorProto.UINT8)])
    save_model(corpus / "models" / "slow.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
               [value("x", [1, 8, 4, 4])], [value("y", None)])
    (corpus / "MANIFEST.csv").write_text("name,family\nsem,ultralytics/seg-pose-obb-cls\nslow,timm/cnn\n")
    (corpus / "rknn" / "runs.csv").write_text(
        "model,family,soc,precision,status,error\n"
        "sem,ultralytics/seg-pose-obb-cls,rk3588,fp16,crashed,E RKNN: Not Support Dtype: 2. please check precision!\n"
        "slow,timm/cnn,rk3588,fp16,timeout,no result after 240 s\n")
    with gzip.open(corpus / "rknn" / "layers.csv.gz", "wt", newline="") as handle:
        csv.DictWriter(handle, LAYERS).writeheader()
    stdout = _run(corpus)
    assert next(x for x in stdout.splitlines() if x.startswith("toolkit crashed: sem")).endswith(
        "[edgeplan: RKNN-CAST-UINT8]")
    assert not next(x for x in stdout.splitlines() if x.startswith("toolkit timeout: slow")).endswith("]")
    assert "edgeplan names a refusal rule: 1 of 1 models" in stdout
