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

CPU fallback of an output relayout (RKNN-OUTPUT-RELAYOUT): when the toolkit appends a Reshape to turn its 4-D
NPU layout into a rank-2/3 graph output whose last dim is not a whole channel group, only that Reshape is a CPU
layer; the node making the output (a classifier Gemm, a head Concat) still runs on the NPU (corpus/rknn layer
tables: tv_mobilenet_v2 INT8 on RK3588, /classifier Gemm an NPU Conv, its `-rs` Reshape Target CPU). The check
gives the node a CPU verdict, since the placement is the node's; its cost on the "cpu" option is therefore

    t = t_npu(node) + t_cpu(one element copy per output element)

the node's own NPU layer time (MACs, weights and activations at the NPU precision, one layer overhead) plus the
CPU relayout, instead of the node's MACs and FP32 weights on the Cortex-A cores. The check names such nodes
in its `io` block (`cpu_relayout`: NPU precision -> nodes whose only NPU violation is this rule).

Activations in the convolution's output stage: a ReLU, ReLU6 (Clip), LeakyReLU or PReLU fed by a Conv/Gemm of
the same fused NPU group is applied to the accumulator on its way out, so it adds no work of its own (its one op
per element is not priced): rknn-toolkit2 compiles them into one layer (ConvRelu, ConvClip, ConvLeakyRelu) whose
NPU cycles are exactly the MAC-array formula's (corpus RK3588 INT8: median ratio 1.000 over 1,908 ConvRelu and
134 ConvClip layers; `python benchmarks/compiler_cycles.py`). SiLU (Sigmoid x input, the toolkit's ConvExSwish)
is compiled the same way and costs the same compiler cycles, but the published rows disagree: rknn_model_zoo's
YOLOv5s runs at 0.73x the rate of its ReLU twin on RK3588 (48.4 vs 66.1 fps), so the measurement wins and SiLU's
Sigmoid and Mul keep their elementwise price (pricing them free as well made every RKNN key's held-out error worse).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from optimizer.catalog import Figure
from optimizer.ir import Graph, Node

__all__ = ["CONV_OUTPUT_ACTIVATIONS", "array_figures", "conv_array_factor", "relayout_precisions"]

# activations the NPU applies in a convolution's output stage at no cost of their own (see the module docstring)
CONV_OUTPUT_ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "PRelu"})


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


def relayout_precisions(io: Mapping[str, object]) -> dict[str, str]:
    """Node -> the NPU precision it runs at when its CPU verdict is only the output relayout (INT8 before FP16:
    the relayout falls at the INT8 channel group more often, and an INT8 plan is what meets it)."""
    table = io.get("cpu_relayout")
    out: dict[str, str] = {}
    if not isinstance(table, Mapping):
        return out
    for precision in ("int8", "fp16"):
        for name in table.get(precision, ()):
            out.setdefault(str(name), precision)
    return out
