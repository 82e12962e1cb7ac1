"""RKNN NPU terms: how a dense convolution fills the NPU's MAC array.

rknn-toolkit2's own per-layer NPU cycle estimates (corpus/rknn/layers.csv.gz, benchmarks/compiler_cycles.py)
follow one formula on every dense convolution of the corpus, per SoC and precision:

    cycles = output_pixels * ceil(c_out / atom_out) * max(min_cycles, kh * kw * ceil(c_in / atom_in))

The array takes `atom_in` input channels x `atom_out` output channels a cycle (atom_in * atom_out MACs, the
peak), so a layer pays for whole channel atoms, and it spends at least `min_cycles` per output pixel and
output atom however little input depth a pixel has: a 1x1 convolution of 16 channels on an RK3588 core gets
16 x 16 useful MACs out of 4 cycles x 1024. The MACs a layer really spends per useful MAC are

    factor = cycles * atom_in * atom_out / MACs      (>= 1)

which multiplies the layer's ideal compute time. Atoms and floors are figures of each target, fitted to the
compiler's cycles (`npu_conv_atom_in_<precision>`, `npu_conv_atom_out_<precision>`,
`npu_conv_min_cycles_<precision>` in constraints/rockchip_rknn.toml); a target without them keeps the plain
channel padding of optimizer.latency._model.channel_padding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from optimizer.catalog import Figure
from optimizer.ir import Graph, Node

__all__ = ["array_figures", "conv_array_factor"]


def array_figures(figures: Mapping[str, Figure], precision: str) -> tuple[int, int, int] | None:
    """(atom_in, atom_out, min_cycles) of the NPU's MAC array at a precision, or None when not given."""
    names = [f"npu_conv_{part}_{precision}" for part in ("atom_in", "atom_out", "min_cycles")]
    if not all(name in figures for name in names):
        return None
    atom_in, atom_out, floor = (int(figures[name].value) for name in names)
    return atom_in, atom_out, floor


def conv_array_factor(graph: Graph, node: Node, atom_in: int, atom_out: int, min_cycles: int) -> float | None:
    """MACs a dense convolution spends on the array per useful MAC; None for anything but a dense 2-D Conv
    with known shapes (grouped and depthwise convolutions keep their own padding)."""
    if node.op_type != "Conv" or len(node.inputs) < 2 or int(node.attrs.get("group", 1) or 1) != 1:
        return None
    x, w = graph.shape(node.inputs[0]), graph.shape(node.inputs[1])
    if x is None or w is None or len(x) != 4 or len(w) != 4:
        return None
    if not all(isinstance(d, int) and d > 0 for d in (x[1], *w)):
        return None
    c_in, c_out, kh, kw = int(x[1]), int(w[0]), int(w[2]), int(w[3])
    per_pixel = math.ceil(c_out / atom_out) * max(min_cycles, kh * kw * math.ceil(c_in / atom_in))
    return per_pixel * atom_in * atom_out / (c_in * c_out * kh * kw)
