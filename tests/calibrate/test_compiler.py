"""rknn-toolkit2's per-layer cycle estimates as a shape signal: the join, the padding term, the held-out fit."""

from __future__ import annotations

import csv

import pytest
from onnx import helper

from optimizer.calibrate._compiler import (
    class_shape,
    compiled_layers,
    cpu_layer_types,
    fit_shape,
    fused_activation_ratios,
    hold_out_by_family,
    macs_per_cycle,
    read_layer_table,
    score_by_class,
)
from optimizer.catalog import load_catalog
from optimizer.ir import load_model
from optimizer.latency._model import channel_padding
from tests.conftest import REPO, save_model, value, weight

CORPUS = REPO / "corpus"
needs_corpus = pytest.mark.skipif(not (CORPUS / "rknn" / "layers.csv.gz").exists(), reason="corpus/ not present")


@pytest.mark.parametrize(("c_in", "c_out", "group", "expected"), [
    (16, 16, 1, 1.0), (3, 16, 1, 16 / 3), (24, 40, 1, (32 / 24) * (48 / 40)), (40, 40, 40, 48 / 40),
    (64, 64, 4, 1.0)])
def test_channel_padding_counts_whole_atoms(tmp_path, c_in, c_out, group, expected):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                            group=group)
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, c_in, 8, 8])], [value("y", None)],
                      [weight("w", [c_out, c_in // group, 3, 3])])
    graph = load_model(path)
    assert channel_padding(graph, graph.node("c"), 16, 16) == pytest.approx(expected)


@needs_corpus
def test_the_per_class_shape_predicts_held_out_families_compiler_cycles():
    with (CORPUS / "MANIFEST.csv").open(encoding="utf-8", newline="") as handle:
        families = {r["name"]: r["family"] for r in csv.DictReader(handle)}
    keep = {"tv_resnet18", "tv_mobilenet_v2", "tv_squeezenet1_1", "timm_mobilenetv3_small_100"}
    rows = [r for r in read_layer_table(CORPUS / "rknn" / "layers.csv.gz")
            if r["model"] in keep and r["soc"] in ("rk3588", "rk3566")]
    layers, skipped = compiled_layers(rows, CORPUS / "models", families, load_catalog())
    assert not skipped and {x.model for x in layers} == keep
    assert all(x.total_cycles >= max(x.npu_cycles, x.ddr_cycles) * 0.99 for x in layers)
    scores = score_by_class(hold_out_by_family(layers))
    assert scores["all"]["spearman"] > 0.9
    # per-class costs beat one pooled rate on rank order
    assert scores["all"]["spearman"] > scores["all"]["spearman_pooled"]
    arrays = macs_per_cycle(layers)  # the compiler's MAC array: 1024 INT8 MACs/cycle per RK3588 core, 512 on RK3566
    assert arrays[("rk3588", "int8")] == pytest.approx(1024, rel=0.1)
    assert arrays[("rk3566", "int8")] == pytest.approx(512, rel=0.1)
    shape = class_shape(fit_shape(layers), "rk3588", "int8")
    assert shape["conv"] == 1.0 and 0 < shape["dwconv"] < 0.5  # depthwise costs far more cycles per MAC


def _layer(op_type, cycles, c_in=64, c_out=64, k=1, hw=20, soc="rk3588", target="NPU", dtype="INT8"):
    return {"model": "m", "soc": soc, "precision": "int8", "op_type": op_type, "data_type": dtype, "target": target,
            "input_shapes": f"({1},{c_in},{hw},{hw}),({c_out},{c_in},{k},{k}),({c_out})",
            "output_shapes": f"({1},{c_out},{hw},{hw})", "cycles_npu": str(cycles)}


def test_fused_activation_ratio_is_npu_cycles_over_the_array_formula():
    """RK3588 INT8 (32/32/4): a 1x1 64->64 conv over 20x20 is 400 x 2 x max(4, 2) = 3200 cycles; a ConvRelu at
    3200 adds nothing (1.0), one at 6400 doubles; grouped convs and SoCs without array figures are left out."""
    rows = [_layer("ConvRelu", 3200)] * 2 + [_layer("ConvExSwish", 6400)] * 2
    rows += [_layer("ConvRelu", 3200, soc="rk3576"), {**_layer("Conv", 1), "input_shapes": "(1,64,20,20),(64,1,3,3)"}]
    assert fused_activation_ratios(rows, load_catalog(), least=2) == {
        ("rk3588", "int8", "ConvExSwish"): (2, 2.0), ("rk3588", "int8", "ConvRelu"): (2, 1.0)}


def test_cpu_layer_types_count_the_cpu_layers_by_build_precision_and_type(tmp_path):
    path = tmp_path / "layers.csv"
    rows = [_layer("Reshape", 0, target="CPU"), _layer("exSoftmax13", 0, target="CPU"),
            _layer("InputOperator", 0, target="CPU"), _layer("Conv", 3200)]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cpu_layer_types(path) == {("int8", "INT8"): 2}
