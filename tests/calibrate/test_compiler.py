"""rknn-toolkit2's per-layer cycle estimates as a shape signal: the join, the padding term, the held-out fit."""

from __future__ import annotations

import csv

import pytest
from onnx import helper

from optimizer.calibrate._compiler import (
    class_shape,
    compiled_layers,
    fit_shape,
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
