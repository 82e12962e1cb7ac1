"""tools/rknn_layer_pairs.py: the counts a catalog source cites, re-measured from the layer tables."""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import rknn_layer_pairs  # noqa: E402

FIELDS = ["model", "soc", "precision", "layer", "op_type", "target", "full_name"]


def _table(path: Path, rows: list[tuple[str, str, str, int, str, str, str]]) -> Path:
    with gzip.open(path, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(FIELDS)
        writer.writerows(rows)
    return path


def test_counts_the_layer_after_each_match_per_precision(tmp_path):
    table = _table(tmp_path / "layers.csv.gz", [
        ("m", "rk3566", "fp16", 0, "Reshape", "CPU", "Reshape:a_mm#2_rs"),
        ("m", "rk3566", "fp16", 1, "Transpose", "CPU", "Transpose:a_tp"),
        ("m", "rk3566", "int8", 0, "Reshape", "NPU", "Reshape:a_mm#2_rs"),
        ("m", "rk3566", "int8", 1, "exMatMul", "NPU", "exMatMul:b"),
        ("m", "rk3566", "int8", 2, "Reshape", "CPU", "Reshape:c_mm#2_rs"),  # the last layer: nothing after it
        ("m", "rk3588", "fp16", 0, "Reshape", "CPU", "Reshape:a_mm#2_rs"),  # another SoC
        ("m", "rk3566", "fp16", 2, "Reshape", "CPU", "Reshape:a_mm#2_rs_x"),  # not the suffix
    ])
    counts = rknn_layer_pairs.pairs(table, "_mm#2_rs", "rk3566")
    assert counts == {("fp16", "CPU", "Transpose", "CPU"): 1, ("int8", "NPU", "exMatMul", "NPU"): 1,
                      ("int8", "CPU", "-", "-"): 1}


def test_the_committed_tables_hold_the_qkv_split_sources_claim():
    # constraints/rockchip_rknn.toml RKNN-QKV-SPLIT-V: every CPU V reshape is followed by a CPU transpose (71 FP16 and
    # 104 INT8 when the rule was written; later corpus waves only add to them)
    counts = rknn_layer_pairs.pairs(ROOT / "corpus" / "rknn" / "layers.csv.gz", "_mm#2_rs", "rk3566")
    for precision, cited in (("fp16", 71), ("int8", 104)):
        cpu = {k: v for k, v in counts.items() if k[0] == precision and k[1] == "CPU"}
        assert set(cpu) == {(precision, "CPU", "Transpose", "CPU")}
        assert cpu[(precision, "CPU", "Transpose", "CPU")] >= cited
