"""Tiny graphs and a profile in which DLA is cheap, so that the loadable rules bind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from tests.conftest import const, save_model, value, weight

FAVOUR_DLA = """
schema = "edgeplan.profile/v1"
family = "nvidia-dla"
name = "favour-dla"
[devices.gpu]
efficiency = { conv = 0.01, dwconv = 0.01, gconv = 0.01, deconv = 0.01, matmul = 0.01, vector = 0.01 }
layer_overhead_us = 400.0
bandwidth_efficiency = 0.5
sram_speedup = 1.0
[devices.dla]
efficiency = { conv = 1.0, dwconv = 1.0, gconv = 1.0, deconv = 1.0, matmul = 1.0, vector = 1.0 }
layer_overhead_us = 1.0
bandwidth_efficiency = 1.0
sram_speedup = 1.0
[loadable]
launch_us = 5.0
[transfer]
sync_us = { "dla->gpu" = 2.0, "gpu->dla" = 2.0, "dla->dla" = 2.0 }
reformat_us = 1.0
precision_change_us = 1.0
[memory_pools]
dla_sram_bytes = { orin = 1048576, xavier = 524288 }
dla_local_dram_bytes = 1073741824
dla_global_dram_bytes = 536870912
"""


@pytest.fixture
def favour_dla(tmp_path: Path) -> str:
    path = tmp_path / "favour_dla.toml"
    path.write_text(FAVOUR_DLA)
    return str(path)


def conv(name: str, src: str, dst: str, channels: int = 16) -> tuple:
    return (helper.make_node("Conv", [src, f"{name}_w"], [dst], name=name, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            weight(f"{name}_w", [16, channels, 3, 3]))


def gpu_only(name: str, src: str, dst: str) -> tuple:
    """Exp is not a DLA layer kind (DLA-UNARY-ABS); on RKNN it has no NPU kernel (RKNN-OP-NPU)."""
    return helper.make_node("Exp", [src], [dst], name=name), None


def build_model(path: Path, parts: list[tuple], inputs=("x",), outputs=("y",), channels: int = 16) -> Path:
    nodes = [p[0] for p in parts]
    inits = [p[1] for p in parts if p[1] is not None]
    return save_model(path, nodes, [value(i, [1, channels, 32, 32]) for i in inputs],
                      [value(o, None) for o in outputs], inits)


def chain(path: Path, pattern: str) -> Path:
    """'CXC' -> Conv -> Exp -> Conv, each named by letter and position."""
    parts, src = [], "x"
    for i, kind in enumerate(pattern):
        dst = "y" if i == len(pattern) - 1 else f"t{i}"
        parts.append(conv(f"C{i}", src, dst) if kind == "C" else gpu_only(f"X{i}", src, dst))
        src = dst
    return build_model(path, parts)


def add(name: str, a: str, b: str, dst: str) -> tuple:
    return helper.make_node("Add", [a, b], [dst], name=name), None


def concat(name: str, a: str, b: str, dst: str) -> tuple:
    return helper.make_node("Concat", [a, b], [dst], name=name, axis=1), None


__all__ = ["FAVOUR_DLA", "add", "build_model", "chain", "concat", "const", "conv", "gpu_only", "np"]
