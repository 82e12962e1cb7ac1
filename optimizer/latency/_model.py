"""The latency model: a per-group roofline plus transfer, reformat and launch costs.

All costs are integer nanoseconds so the CP-SAT objective uses them as they are. The same functions
score solver options, baselines and any fixed assignment, so every number in a plan is comparable.

Physics terms beyond the roofline, each with its formula (README "The latency model"):
- TF32: on a GPU with a `gpu_tf32_per_fp16` figure (Ampere), TensorRT runs FP32 convolutions and
  matmuls on tensor cores as TF32 unless built with --noTF32, so their peak is
  `gpu_fp16_tops * gpu_tf32_per_fp16` instead of the CUDA-core `gpu_fp32_tops` (NVIDIA Ampere
  architecture whitepaper: dense TF32 tensor throughput is half the dense FP16 one).
- Memory clock: with `emc_mhz` and `dram_bus_bits` figures, DRAM bandwidth is
  `emc_mhz * 1e6 * 2 * dram_bus_bits / 8` (LPDDR: two transfers per EMC clock; 3200 MHz x 256 bit =
  204.8 GB/s on AGX Orin), so a power mode that lowers the EMC clock lowers every memory term.
- Per inference: `inference_overhead_us` of the family's host device (TensorRT enqueue + stream sync on
  Jetson, rknn_run submit + completion interrupt on RKNN), once per inference, whatever the placement.
- CPU fallback (RKNN): the CPU peak is `cpu_cores * cpu_ghz * cpu_neon_flops_per_cycle` when the target
  gives them (else `cpu_gflops`), times the CPU's per-op-class efficiency.
- RKNN output relayout (RKNN-OUTPUT-RELAYOUT): the node's "cpu" option costs its own NPU layer plus a CPU copy of
  its output elements (only the toolkit's appended Reshape is a CPU layer; optimizer/latency/_rknn.py).
- RKNN conv output stage: a ReLU/Clip/LeakyReLU/PReLU after a Conv/Gemm of the same fused NPU group is free.
- RKNN general API: a zero-copy-ready input is still copied by the CPU, `2 * bytes / BW + memsync_us`.
- NPU/CPU hand-over: `memsync_us + handover_us + 2*bytes/BW + bytes/convert_rate`, bytes at the NPU precision
  (seed 001 rknn_mem_sync per direction; the CPU side works in NCHW at the build's precision, as rknn-toolkit2's CPU
  layers do, the NPU side in NC1HWC2).
- Multi-core NPU: a split layer's class-k compute is divided by `cores * split_efficiency[k]`; on RKNN only groups
  of the layers librknnrt splits (Conv, Add, Concat, ReLU-class activations; optimizer/latency/_rknn.py) split.
- GPU waves: a tensor-core layer's output is tiled into thread blocks of GPU_TILE_OUTPUTS outputs
  (CUTLASS's default 128 x 128 threadblock tile) that run in waves over the `gpu_sms` SMs; the last wave
  leaves SMs idle, so the layer's MACs are divided by `blocks / (ceil(blocks / sms) * sms)` (NVIDIA's
  "wave quantization"). Small layers at batch 1 fill few SMs; a large batch fills every wave.
- Shared DRAM (concurrent engines: two DLA streams, a GPU engine beside them): each engine's DRAM bytes
  (`dram_bytes`) over its own time give the throughput its co-runners see; the slowdown is PCCS's
  (optimizer/latency/_contention.py, the one contention model; optimizer/calibrate/_situation.py applies it).
- GPU L2 residency: a GPU kernel reads an activation the previous kernel wrote from the L2, not DRAM, when
  its bytes (whole batch) are at most GPU_L2_SHARE of `gpu_l2_bytes` (AGX Orin 4 MB: Orin Technical Brief);
  writes still go to DRAM. Small models at batch 1 keep most activations on chip, a batch of 256 does not.
- Pipelined chunks: an engine that streams a layer in pieces loads the next piece while it computes this
  one, so only one piece's worth of the shorter of compute and memory stays exposed:
  `(1 - overlap) * min(compute, memory) / chunks`. GPU: chunks = waves of thread blocks,
  ceil(tiles * splits / gpu_sms), of the group's largest tensor-core layer; DLA: CBUF refills,
  ceil((activation + weight bytes) / DLA_CBUF_BYTES) (NVDLA's CDMA fills the convolution buffer while the
  MAC array works); the RKNN NPU and a GPU without an SM count keep 1.
- NPU channel atoms: a convolution's MACs are scaled by `ceil(Cin_g/a_in)*a_in/Cin_g *
  ceil(Cout/a_out)*a_out/Cout` (depthwise: the output factor only), with the atoms `npu_channel_atom_in`/
  `_out` fitted to rknn-toolkit2's per-layer cycle estimates (optimizer/calibrate/_compiler.py); a dense
  RKNN convolution instead pays the compiler's MAC-array formula (optimizer/latency/_rknn.py: whole 32-channel
  atoms and a floor of cycles per output pixel on RK3588/RK3576).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from optimizer.backends import backend_of
from optimizer.catalog import Catalog, Figure, Target
from optimizer.fusion import GroupGraph, LayerGroup
from optimizer.ir import BYTES_PER_ELEMENT, Graph, Node
from optimizer.latency._gpu import GPU_TILE_OUTPUTS, split_k, split_k_extra_bytes, wave_utilization
from optimizer.latency._profile import OP_CLASSES, DeviceConstants, Profile
from optimizer.latency._rknn import (
    CONV_OUTPUT_ACTIVATIONS,
    CORE_SPLIT_OPS,
    array_figures,
    conv_array_factor,
    relayout_precisions,
)

__all__ = ["GPU_TILE_OUTPUTS", "wave_utilization"]  # re-exported: the wave term lives in _gpu.py

NS = 1e9


@dataclass(frozen=True)
class Option:
    """One way to run a group: a device kind, a precision, NPU cores and a sparsity mode."""

    device: str  # gpu, dla, npu, cpu
    precision: str
    cores: int = 1
    sparsity: str = "dense"
    edit: str | None = None  # a model edit this option applies (optimize --with-edits)

    def label(self) -> str:
        extra = f"/{self.cores}c" if self.device == "npu" else ""
        extra += f"/{self.sparsity}" if self.sparsity != "dense" else ""
        extra += f"/{self.edit}" if self.edit else ""
        return f"{self.device}/{self.precision}{extra}"


# share of the GPU L2 a produced activation may take and still be read back from it by the next kernel: the
# producer's own input and weights stream through the same L2 (assumed)
GPU_L2_SHARE = 0.5
# the DLA convolution buffer (CBUF) a layer is streamed through: NVDLA's large configuration (nvdla.org hw
# architecture: 2-32 banks of 4-32 KiB; nv_full 512 KiB), assumed for the Jetson DLAs
DLA_CBUF_BYTES = 512 * 1024
TF32_CLASSES = frozenset({"conv", "gconv", "deconv", "matmul"})  # tensor-core layers; depthwise runs on CUDA cores
SPARSE_KEEP = {"dense": 1.0, "4:2_in": 0.5, "4:2_out": 0.5, "16:4_in_out": 0.25, "16:4_out_in": 0.25}


@dataclass(frozen=True)
class Work:
    """A group's demands on one option. Calibration refits the constants against these, so the fitted
    profile and the planner score groups with one formula (work_seconds)."""

    unit_compute_s: tuple[float, ...]  # per OP_CLASSES: seconds at efficiency 1
    weight_bytes: float
    act_bytes: float
    kernels: int
    cores: int
    boundary_s: float  # model inputs/outputs in the accelerator's formats
    launches: int = 0  # inferences whose fixed per-inference overhead this entry carries
    chunks: int = 1  # pieces a pipelined engine streams the group in: GPU thread-block waves, DLA CBUF refills


def inference_work(launches: int = 1) -> Work:
    """The per-inference overhead as a Work of its own, so calibration fits it like any other constant."""
    return Work(unit_compute_s=(0.0,) * len(OP_CLASSES), weight_bytes=0.0, act_bytes=0.0, kernels=0, cores=1,
                boundary_s=0.0, launches=launches)


def work_seconds(work: Work, const: DeviceConstants, bandwidth: float, sram_bytes: int) -> float:
    if work.launches:
        return const.inference_overhead_us * 1e-6 * work.launches
    split = work.cores > 1
    compute = sum(c / const.efficiency[k] / (work.cores * const.split_efficiency(k) if split else 1.0)
                  for k, c in zip(OP_CLASSES, work.unit_compute_s) if c)
    weight_bw = bandwidth * const.bandwidth_efficiency
    act_bw = weight_bw * (const.sram_speedup if 0 < work.act_bytes <= sram_bytes else 1.0)
    memory = work.weight_bytes / weight_bw + work.act_bytes / act_bw
    overhead = const.layer_overhead_us * 1e-6 * work.kernels
    if split:
        overhead += const.multicore_overhead_us * 1e-6
    exposed = (1.0 - const.overlap) * min(compute, memory) / work.chunks
    return max(compute, memory) + exposed + overhead + work.boundary_s


def dram_bytes(work: Work, const: DeviceConstants, sram_bytes: int) -> float:
    """Bytes one Work moves through DRAM: weights and activations, except activations an on-chip SRAM
    holds (the DLA's managed SRAM, where `sram_speedup` > 1)."""
    if work.launches:
        return 0.0
    on_chip = const.sram_speedup > 1.0 and 0 < work.act_bytes <= sram_bytes
    return work.weight_bytes + (0.0 if on_chip else work.act_bytes)


def op_class(graph: Graph, node: Node) -> str:
    if node.op_type == "Conv":
        group = int(node.attrs.get("group", 1) or 1)
        shape = graph.shape(node.inputs[0])
        c_in = shape[1] if shape is not None and len(shape) > 1 and isinstance(shape[1], int) else 0
        if group == 1:
            return "conv"
        return "dwconv" if group == c_in else "gconv"
    if node.op_type == "ConvTranspose":
        return "deconv"
    if node.op_type in ("Gemm", "MatMul", "LSTM", "GRU", "RNN"):
        constant_b = len(node.inputs) > 1 and graph.is_constant(node.inputs[1])
        return "conv" if constant_b or node.op_type != "MatMul" else "matmul"
    return "vector"


def channel_padding(graph: Graph, node: Node, atom_in: int, atom_out: int) -> float:
    """MACs an NPU convolution really spends per useful MAC: input channels (per group) are computed in
    atoms of `atom_in`, output channels in atoms of `atom_out`; a depthwise conv pads its channels only.
    RKNN atoms are fitted to rknn-toolkit2's own cycle estimates (benchmarks/compiler_cycles.py)."""
    if node.op_type != "Conv" or len(node.inputs) < 2:
        return 1.0
    x, w = graph.shape(node.inputs[0]), graph.shape(node.inputs[1])
    if x is None or w is None or len(x) < 2 or not all(isinstance(d, int) and d > 0 for d in (x[1], w[0])):
        return 1.0
    c_in, c_out = int(x[1]), int(w[0])
    group = int(node.attrs.get("group", 1) or 1)
    out = math.ceil(c_out / atom_out) * atom_out / c_out
    if group > 1 and group == c_in:
        return out
    per_group = max(c_in // group, 1)
    return math.ceil(per_group / atom_in) * atom_in / per_group * out


def npu_padding(graph: Graph, node: Node, figures: Mapping[str, Figure], precision: str,
                atoms: tuple[int, int] | None = None) -> float:
    """MACs an NPU layer spends per useful MAC: a dense RKNN convolution's MAC-array term where the target gives
    its figures (optimizer/latency/_rknn.py), else the padding to the target's channel atoms. Given `atoms`,
    the padding to those alone (what fitting the atoms to the compiler's cycles compares)."""
    if atoms is None:
        array = array_figures(figures, precision)
        factor = conv_array_factor(graph, node, *array) if array else None
        if factor is not None:
            return factor
        if "npu_channel_atom_in" not in figures or "npu_channel_atom_out" not in figures:
            return 1.0
        atoms = (int(figures["npu_channel_atom_in"].value), int(figures["npu_channel_atom_out"].value))
    return channel_padding(graph, node, *atoms)


class LatencyModel:
    """Costs of options, transfers and launches for one model on one target."""

    def __init__(self, groups: GroupGraph, catalog: Catalog, target: Target, profile: Profile,
                 sram_bytes: int | None = None, io: Mapping[str, Any] | None = None, standalone: bool = False,
                 batch: int = 1, io_costs: bool = True, loadable_sram: tuple[int, ...] = (),
                 tf32: bool = True, pass_through: bool = False, fp32_model_io: bool = False) -> None:
        self.groups = groups
        self.graph = groups.graph
        self.catalog = catalog
        self.target = target
        self.profile = profile
        family = catalog.family_of(target)
        self.formats = family.formats
        pools = profile.memory_pools
        default_sram = pools.get("dla_sram_bytes", {}).get(target.generation) if pools else None
        features_sram = int(target.features.get("sram_bytes", 0))
        self.sram_bytes = int(sram_bytes if sram_bytes is not None else (default_sram or features_sram))
        self.loadable_sram = tuple(int(b) for b in loadable_sram)  # DLA-SRAM-PER-LOADABLE: slot k's pool
        self.io = io or {}
        self.batch = batch  # images per inference: compute and activations scale, weights are read once
        self.io_costs = io_costs  # False: model I/O layout conversion is outside the timed region
        self.tf32 = tf32  # False: the engine was built with --noTF32 (FP32 on CUDA cores)
        self.pass_through = pass_through  # RKNN: the caller hands NC1HWC2 inputs over already converted
        # a GPU engine built without I/O formats (trtexec's defaults) takes FP32 linear model I/O and reformats it
        self.fp32_model_io = fp32_model_io
        self.edited: dict[tuple[int, Option], int] = {}  # costs of edit options, from the edited subgraph
        self._elements: dict[int, int] = {}  # memo: a group's DRAM activation elements
        self._works: dict[tuple[int, Option, bool], Work] = {}  # memo: the model is fixed once built
        self.capability = "standalone" if standalone else "standard"  # DLA-STANDALONE-IO or DLA-IO-IN/OUT
        self.backend = backend_of(target)
        self.hwc4_stride = self.backend.hwc4_stride(catalog, target)

    # ---- figures -------------------------------------------------------------------------------
    def _peak_ops(self, device: str, precision: str, cls: str = "vector") -> float:
        fig = self.target.figures
        if device == "cpu":
            return self.cpu_peak_ops
        if device == "gpu" and precision == "fp32" and cls in TF32_CLASSES and self.tf32_peak_ops:
            return self.tf32_peak_ops
        key = f"{device}_{precision}_tops"
        if key not in fig:
            key = f"{device}_fp16_tops" if f"{device}_fp16_tops" in fig else f"{device}_int8_tops"
        return fig[key].value * 1e12

    def _vector_ops(self, device: str) -> float:
        fig = self.target.figures
        if device == "gpu":
            return fig["gpu_fp32_tops"].value * 1e12
        if device == "cpu":
            return self.cpu_peak_ops
        return self._peak_ops(device, "fp16" if f"{device}_fp16_tops" in fig else "int8")

    def _gpu_split(self, node: Node, precision: str = "int8") -> tuple[int, float]:
        """(split-K slices, SM utilization) of a tensor-core layer (optimizer/latency/_gpu.py; (1, 1) when
        the target gives no SM count)."""
        fig = self.target.figures
        if "gpu_sms" not in fig or not node.outputs or node.outputs[0] not in self.graph.tensors:
            return 1, 1.0
        elements = self.graph.tensors[node.outputs[0]].num_elements or 0
        depth = node.macs // elements if elements else 0
        mac_seconds = 2 * node.macs * self.batch / self._peak_ops("gpu", precision, op_class(self.graph, node))
        return split_k(elements * self.batch, depth, int(fig["gpu_sms"].value), mac_seconds, 1 / self.bandwidth)

    def _gpu_waves(self, node: Node, precision: str = "int8") -> float:
        """SM utilization of a tensor-core layer: waves of thread blocks, the reduction split to fill them."""
        return self._gpu_split(node, precision)[1]

    def _split_k_bytes(self, group: LayerGroup, precision: str) -> float:
        """DRAM bytes of the split-K partial sums of a group's tensor-core layers on the GPU."""
        total = 0
        for m in group.members:
            node = self.graph.node(m)
            if node.macs and op_class(self.graph, node) in TF32_CLASSES:
                slices = self._gpu_split(node, precision)[0]
                if slices > 1:
                    elements = self.graph.tensors[node.outputs[0]].num_elements or 0
                    total += split_k_extra_bytes(elements * self.batch, slices)
        return float(total)

    @cached_property
    def tf32_peak_ops(self) -> float:
        """TF32 tensor-core peak (0 when the GPU has none or the engine is built with --noTF32)."""
        fig = self.target.figures
        if not self.tf32 or "gpu_tf32_per_fp16" not in fig or "gpu_fp16_tops" not in fig:
            return 0.0
        return fig["gpu_fp16_tops"].value * fig["gpu_tf32_per_fp16"].value * 1e12

    @cached_property
    def cpu_peak_ops(self) -> float:
        """NEON FP32 peak of the cores running CPU layers: cores x clock x FLOP per cycle."""
        fig = self.target.figures
        if all(k in fig for k in ("cpu_cores", "cpu_ghz", "cpu_neon_flops_per_cycle")):
            return fig["cpu_cores"].value * fig["cpu_ghz"].value * 1e9 * fig["cpu_neon_flops_per_cycle"].value
        return fig["cpu_gflops"].value * 1e9

    @cached_property
    def bandwidth(self) -> float:
        """DRAM bytes/s: from the memory clock and bus width where the target gives them (LPDDR, two
        transfers per EMC clock), else the published `dram_gbps`."""
        fig = self.target.figures
        if "emc_mhz" in fig and "dram_bus_bits" in fig:
            return fig["emc_mhz"].value * 1e6 * 2 * fig["dram_bus_bits"].value / 8
        return self.target.figure("dram_gbps") * 1e9

    @cached_property
    def host_device(self) -> str:
        """The device kind that carries the per-inference overhead: every TensorRT engine (DLA ones too) is
        enqueued on a CUDA stream; every RKNN inference is one rknn_run."""
        return self.backend.host_device

    def inference_ns(self) -> int:
        return round(self.constants(self.host_device).inference_overhead_us * 1e3)

    def constants(self, device: str) -> DeviceConstants:
        return self.profile.constants(self.target.calibration, device)

    # ---- groups --------------------------------------------------------------------------------
    def _unit_compute_s(self, node: Node, device: str, precision: str) -> tuple[str, float, float]:
        """(op class, seconds of MACs, seconds of other arithmetic) at efficiency 1, for the whole batch."""
        if device == "dla" and precision == "int8" and node.op_type in self._int8_upgrade_ops:
            precision = "fp16"  # DLA-ACT-INT8-UPGRADE
        scale: float = self.batch * (self._xavier_sub_layers if device == "dla" and node.op_type in self._xavier_sub_ops
                                     else 1)  # DLA-ELTWISE-XAVIER-SUB: a Scale plus a Sum
        cls = op_class(self.graph, node)
        if device == "npu" and node.macs:
            scale *= npu_padding(self.graph, node, self.target.figures, precision)
        if device == "gpu" and node.macs and cls in TF32_CLASSES:
            scale /= self._gpu_waves(node, precision)
        macs = 2 * node.macs / self._peak_ops(device, precision, cls) * scale if node.macs else 0.0
        other = node.elementwise_ops / self._vector_ops(device) * scale if node.elementwise_ops else 0.0
        return cls, macs, other

    def _node_compute_s(self, node: Node, device: str, precision: str) -> float:
        eff = self.constants(device).efficiency
        cls, macs, other = self._unit_compute_s(node, device, precision)
        return (macs / eff[cls] if macs else 0.0) + (other / eff["vector"] if other else 0.0)

    @cached_property
    def _int8_upgrade_ops(self) -> frozenset[str]:
        return self.backend.int8_upgrade_ops(self.catalog)

    @cached_property
    def _xavier_sub_ops(self) -> frozenset[str]:
        return self.backend.sub_layer_ops(self.catalog, self.target)[0]

    @cached_property
    def _xavier_sub_layers(self) -> int:
        return self.backend.sub_layer_ops(self.catalog, self.target)[1]

    def _group_elements(self, group: LayerGroup) -> int:
        """Activation elements moved through DRAM: a fused group keeps its internal tensors on chip."""
        if group.index not in self._elements:
            self._elements[group.index] = self._count_group_elements(group)
        return self._elements[group.index]

    def _count_group_elements(self, group: LayerGroup) -> int:
        graph = self.graph
        if not group.fused:
            return self.batch * sum(graph.activation_elements(graph.node(m)) for m in group.members)
        members = set(group.members)
        external = set()
        for name in group.members:
            node = graph.node(name)
            for t in graph.runtime_inputs(node):
                producer = graph.producer(t)
                if producer is None or producer.name not in members:
                    external.add(t)
            for t in node.outputs:
                if t and (t in graph.outputs or any(c.name not in members for c in graph.consumers(t))):
                    external.add(t)
        return self.batch * sum(graph.tensors[t].num_elements or 0 for t in external if t in graph.tensors)

    def _gpu_wave_count(self, group: LayerGroup, precision: str) -> int:
        """Waves of thread blocks per SM of the group's largest tensor-core layer (1 without an SM count)."""
        fig = self.target.figures
        if "gpu_sms" not in fig:
            return 1
        sms = int(fig["gpu_sms"].value)
        most = 1
        for m in group.members:
            node = self.graph.node(m)
            if not node.macs or op_class(self.graph, node) not in TF32_CLASSES or not node.outputs:
                continue
            info = self.graph.tensors.get(node.outputs[0])
            elements = (info.num_elements or 0) * self.batch if info is not None else 0
            blocks = math.ceil(elements / GPU_TILE_OUTPUTS) * self._gpu_split(node, precision)[0]
            most = max(most, math.ceil(blocks / sms))
        return most

    def _dla_refills(self, group: LayerGroup, precision: str, weight_bytes: float) -> int:
        """Times the DLA's convolution buffer is filled for a group: its activations and weights over
        DLA_CBUF_BYTES (the DMA fills the next piece while the MACs work on this one)."""
        elements = self._group_elements(group)
        return max(1, math.ceil((elements * BYTES_PER_ELEMENT[precision] + weight_bytes) / DLA_CBUF_BYTES))

    def _l2_resident_reads(self, group: LayerGroup, precision: str) -> int:
        """Activation elements a GPU group reads from the L2 instead of DRAM: a tensor the previous kernel
        wrote, small enough (its bytes for the whole batch <= GPU_L2_SHARE * gpu_l2_bytes) that the L2
        still holds it. Writes still reach DRAM (write-back), and model inputs come from DRAM."""
        fig = self.target.figures
        if "gpu_l2_bytes" not in fig:
            return 0
        limit = GPU_L2_SHARE * fig["gpu_l2_bytes"].value
        graph = self.graph
        members = set(group.members)
        seen: set[str] = set()
        total = 0
        for name in group.members:
            for t in graph.runtime_inputs(graph.node(name)):
                producer = graph.producer(t)
                if t in seen or producer is None or (group.fused and producer.name in members):
                    continue
                seen.add(t)
                info = graph.tensors.get(t)
                elements = (info.num_elements or 0) * self.batch if info is not None else 0
                if 0 < elements * BYTES_PER_ELEMENT[precision] <= limit:
                    total += elements
        return total

    @cached_property
    def images(self) -> int:
        """Images per inference. DLA runs a batch image by image, so its per-layer overhead scales with it."""
        return self.graph.batch_size * self.batch

    def _kernels(self, group: LayerGroup) -> int:
        if group.fused:
            return 1
        return sum(1 for m in group.members if self.graph.node(m).op_type not in
                   ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"))

    def work(self, group: LayerGroup, option: Option, default_formats: bool = False) -> Work:
        """What a group asks of a device on one option, before the profile's constants turn it into time."""
        key = (group.index, option, default_formats)
        if key not in self._works:
            self._works[key] = self._work(group, option, default_formats)
        return self._works[key]

    @cached_property
    def _cpu_relayouts(self) -> dict[str, str]:
        """RKNN: nodes whose CPU verdict is only the output relayout -> the NPU precision they run at."""
        return relayout_precisions(self.io)

    def _npu_layer_s(self, node: Node, precision: str) -> float:
        """One node as its own NPU layer under the profile's NPU constants (optimizer/latency/_rknn.py)."""
        unit = dict.fromkeys(OP_CLASSES, 0.0)
        cls, macs, other = self._unit_compute_s(node, "npu", precision)
        unit[cls] += macs
        unit["vector"] += other
        work = Work(unit_compute_s=tuple(unit[k] for k in OP_CLASSES),
                    weight_bytes=float(self.graph.weight_bytes(node, precision)),
                    act_bytes=float(self.batch * self.graph.activation_bytes(node, precision)),
                    kernels=1, cores=1, boundary_s=0.0)
        return work_seconds(work, self.constants("npu"), self.bandwidth, self.sram_bytes)

    def _splits(self, group: LayerGroup) -> bool:
        """RKNN: the runtime splits a group over the NPU cores only when all of its layers split
        (optimizer/latency/_rknn.py CORE_SPLIT_OPS)."""
        return self.backend.name != "rknn" or all(self.graph.node(m).op_type in CORE_SPLIT_OPS for m in group.members)

    def _in_conv_output(self, group: LayerGroup, node: Node) -> bool:
        """RKNN: an activation the NPU applies in its convolution's output stage (optimizer/latency/_rknn.py)."""
        if node.op_type not in CONV_OUTPUT_ACTIVATIONS:
            return False
        producer = self.graph.producer(node.inputs[0]) if node.inputs else None
        return producer is not None and producer.name in group.members and producer.op_type in ("Conv", "Gemm")

    def _work(self, group: LayerGroup, option: Option, default_formats: bool) -> Work:
        device, precision = option.device, option.precision
        unit = dict.fromkeys(OP_CLASSES, 0.0)
        weight_bytes = 0.0
        npu_s = 0.0  # RKNN output relayouts: the node's own NPU layer, a fixed cost of the CPU option
        for m in group.members:
            node = self.graph.node(m)
            if device == "cpu" and m in self._cpu_relayouts:
                npu_s += self._npu_layer_s(node, self._cpu_relayouts[m])
                unit["vector"] += self.batch * sum(self.graph.tensors[t].num_elements or 0 for t in node.outputs
                                                   if t in self.graph.tensors) / self._vector_ops("cpu")
                continue
            cls, macs, other = self._unit_compute_s(node, device, precision)
            if device == "npu" and group.fused and self._in_conv_output(group, node):
                other = 0.0
            unit[cls] += macs
            unit["vector"] += other
            keep = SPARSE_KEEP[option.sparsity] if m == group.anchor else 1.0
            weight_bytes += self.graph.weight_bytes(node, precision) * keep
        elements = self._group_elements(group)
        if device == "gpu":
            elements -= self._l2_resident_reads(group, precision)
        return Work(unit_compute_s=tuple(unit[k] for k in OP_CLASSES), weight_bytes=weight_bytes,
                    act_bytes=float(elements * BYTES_PER_ELEMENT[precision])
                    + (self._split_k_bytes(group, precision) if device == "gpu" else 0.0),
                    kernels=self._kernels(group) * (self.images if device == "dla" else 1),
                    chunks=self._gpu_wave_count(group, precision) if device == "gpu" else
                    self._dla_refills(group, precision, weight_bytes) if device == "dla" else 1,
                    cores=option.cores if device == "npu" and self._splits(group) else 1,
                    boundary_s=self._boundary_io_s(group, option, default_formats) + npu_s)

    def sram_of(self, loadable: int) -> int:
        """The managed SRAM pool of a DLA loadable slot (the shared default where no slot size is set)."""
        return self.loadable_sram[loadable] if 0 <= loadable < len(self.loadable_sram) else self.sram_bytes

    def option_ns(self, group: LayerGroup, option: Option, default_formats: bool = False,
                  sram_bytes: int | None = None) -> int:
        """One group's time on one option: max(compute, memory) plus per-kernel overhead."""
        if option.edit is not None:
            return self.edited[(group.index, option)]
        work = self.work(group, option, default_formats)
        sram = self.sram_bytes if sram_bytes is None else sram_bytes
        return round(work_seconds(work, self.constants(option.device), self.bandwidth, sram) * NS)

    # ---- model inputs and outputs in accelerator formats ------------------------------------------
    def _boundary_io_s(self, group: LayerGroup, option: Option, default_formats: bool = False) -> float:
        """Extra cost of reading model inputs / writing model outputs in the accelerator's formats."""
        if self.fp32_model_io and option.device == "gpu" and option.precision != "fp32":
            return self._gpu_default_io_s(group, option.precision)
        if option.device != self.target.accelerator or not self.io_costs:
            return 0.0
        seconds = 0.0
        for t, is_input in self._model_io(group):
            fmt = self.input_format if is_input else self.output_format
            seconds += fmt(t, option, default_formats)[1]
        return seconds

    def _model_io(self, group: LayerGroup) -> Iterator[tuple[str, bool]]:
        """The model inputs each member reads and the model outputs it writes, (tensor, is_input), member by
        member."""
        graph = self.graph
        for name in group.members:
            node = graph.node(name)
            yield from ((t, True) for t in graph.runtime_inputs(node)
                        if t in graph.inputs and graph.producer(t) is None)
            yield from ((t, False) for t in node.outputs if t in graph.outputs)

    def _gpu_default_io_s(self, group: LayerGroup, precision: str) -> float:
        """GPU engine I/O in TensorRT's default formats (trtexec without --inputIOFormats/--outputIOFormats):
        model inputs arrive and outputs leave as FP32 linear tensors, so an engine whose kernels run at a
        lower precision adds one reformat kernel per model input and output, reading one side and writing the
        other: `reformat_us + (4 + bytes(precision)) * elements / BW` each. An FP32 engine has none."""
        graph = self.graph
        tensors = {t for t, _ in self._model_io(group)}
        per_element = 4 + BYTES_PER_ELEMENT[precision]
        return sum(self.profile.reformat_us * 1e-6
                   + per_element * (graph.tensors[t].num_elements or 0) * self.batch / self.bandwidth
                   for t in sorted(tensors) if t in graph.tensors)

    def input_format(self, tensor: str, option: Option, default_formats: bool = False) -> tuple[str, float]:
        """The accelerator-side format of a model input and its extra cost (the family's backend)."""
        return self.backend.input_format(self, tensor, option, default_formats)

    def output_format(self, tensor: str, option: Option, default_formats: bool = False) -> tuple[str, float]:
        return self.backend.output_format(self, tensor, option, default_formats)

    # ---- transfers -----------------------------------------------------------------------------
    def transfer(self, tensor: str, src: str, dst: str, precision: str, default_formats: bool = False
                 ) -> tuple[str, int]:
        """(format, ns) of moving a tensor produced on device kind src (at precision) to device kind dst.

        With default_formats, TensorRT's default kDLA_LINEAR is used instead of the cheapest format."""
        fmt, seconds = self.backend.transfer(self, tensor, src, dst, precision, default_formats)
        return fmt, round(seconds * NS)

    def precision_change_ns(self, tensor: str) -> int:
        """A reformat between two precisions: read and write the tensor at about 2 bytes an element."""
        elements = (self.graph.tensors[tensor].num_elements or 0) * self.batch
        return round((self.profile.precision_change_us * 1e-6 + 4 * elements / self.bandwidth) * NS)

    def launch_ns(self) -> int:
        return round(self.profile.loadable_launch_us * 1e-6 * NS)
