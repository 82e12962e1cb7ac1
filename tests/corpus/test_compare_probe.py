"""tools/compare_probe.py --patterns: the toolkit's layer names read back onto probe nodes, and the comparison
counted per SoC and precision (the probe lines are as tools/probe_rknn_patterns.py prints them)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import compare_probe

from optimizer.catalog import load_catalog


def test_a_layer_is_read_back_onto_its_node_or_output_tensor_only():
    layers = {"op#2": ["Tile:FLOAT16:CPU"], "gr_rs": ["Reshape:FLOAT16:CPU"], "grid_sample0": ["GridSample:FLOAT16:CPU"],
              "g_tp": ["Transpose:FLOAT16:NPU"]}
    assert compare_probe.pattern_truth(layers, "op", ("rc",)) == "CPU"  # the node's own layer, suffix dropped
    assert compare_probe.pattern_truth(layers, "cut", ("gr",)) == "CPU"  # a layer derived from its output
    assert compare_probe.pattern_truth(layers, "gate", ("g",)) == "NPU"  # 'grid_sample0' is not derived from 'g'
    assert compare_probe.pattern_truth(layers, "other", ("x",)) == "NPU"  # no layer: folded or fused


def test_a_probe_line_is_compared_node_by_node(tmp_path, capsys):
    # probe tile_wide_r3_tokens on rk3588 FP16: the rank-3 Tile of a wider axis is the only CPU layer
    layers = {"r_rs": ["Reshape:FLOAT16:NPU"], "tokens_t": ["Transpose:FLOAT16:NPU"], "half": ["Slice:FLOAT16:NPU"],
              "op": ["Tile:FLOAT16:CPU"], "add": ["Add:FLOAT16:NPU"], "back_map": ["Reshape:FLOAT16:NPU"]}
    run = {"rk3588/fp16": {"built": True, "layers": layers, "errors": []},
           "rk3576/fp16": {"built": False, "layers": {}, "errors": []}}
    results = tmp_path / "probe.txt"
    results.write_text(f"tile_wide_r3_tokens {json.dumps(run)}\nnot_a_case {{}}\n")
    counts: Counter[tuple[str, str, str]] = Counter()
    compare_probe.compare_patterns(results, load_catalog(), counts)
    assert set(counts) == {("rk3588", "fp16", "agree")} and counts[("rk3588", "fp16", "agree")] >= 6
    assert "rk3576/fp16: the toolkit did not build it" in capsys.readouterr().out
    layers["op"] = ["Tile:FLOAT16:NPU"]  # a toolkit that kept the Tile on the NPU would disagree
    results.write_text(f"tile_wide_r3_tokens {json.dumps({'rk3588/fp16': run['rk3588/fp16']})}\n")
    counts.clear()
    compare_probe.compare_patterns(results, load_catalog(), counts)
    assert counts[("rk3588", "fp16", "edgeplan CPU")] == 1
