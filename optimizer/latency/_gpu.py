"""GPU kernel-shape terms of the latency model: how a tensor-core layer fills the SMs.

A tensor-core convolution or GEMM is tiled into thread blocks of `tile` outputs that run in waves over the
SMs; the last wave leaves SMs idle (NVIDIA's "wave quantization"). A layer with few output tiles and a deep
reduction (ResNet's 7x7x2048 stage at batch 1: 6 tiles of 128 x 128 for 16 SMs, 4,608 MACs per output)
would fill a third of the GPU, so TensorRT's tactics and cuBLAS/CUTLASS split the reduction (split-K, "useful
when M and N are small and K is large": CUTLASS's GEMM documentation): `s` blocks each reduce K/s of the depth
for the same tile and a second pass adds the `s` partial sums. Blocks then number `tiles * s`, and the layer
keeps `tiles * s / (ceil(tiles * s / sms) * sms)` of the SMs busy. A slice must still hold `SPLIT_K_MIN_DEPTH`
MACs per output, so shallow layers do not split, and the partial sums cost `(s - 1)` extra FP32 writes and
reads of the layer's outputs (`split_k_extra_bytes`), so a layer with many outputs does not split either:
`split_k` keeps the split whose roofline time (MACs at peak / utilization + partial-sum bytes / bandwidth) is
least, as TensorRT keeps its fastest tactic.
"""

from __future__ import annotations

import math

GPU_TILE_OUTPUTS = 128 * 128  # outputs per thread block of a tensor-core convolution/GEMM kernel
# MACs per output a split-K slice keeps: CUTLASS's tensor-core tiles step K by 32 (FP16) / 64 (INT8) and
# pipeline 3-4 such steps (its default kStages), so a slice shallower than 4 x 64 leaves the pipeline
# unfilled (assumed from CUTLASS's default tile shapes; not a measured figure)
SPLIT_K_MIN_DEPTH = 256


def wave_utilization(outputs: int, sms: int, tile: int = GPU_TILE_OUTPUTS) -> float:
    """Share of the SMs' time a layer of `outputs` output elements keeps busy: its thread blocks run in
    waves of `sms`, and the last wave is partly empty."""
    if outputs <= 0 or sms <= 0:
        return 1.0
    blocks = math.ceil(outputs / tile)
    return blocks / (math.ceil(blocks / sms) * sms)


def split_k(outputs: int, depth: int, sms: int, mac_seconds: float, byte_seconds: float,
            tile: int = GPU_TILE_OUTPUTS, min_depth: int = SPLIT_K_MIN_DEPTH) -> tuple[int, float]:
    """(slices s, SM utilization) of the fastest split of a tensor-core layer, as TensorRT times its
    tactics and keeps the fastest: s runs from 1 to min(sms, depth // min_depth), and each is scored by the
    roofline `mac_seconds / utilization(s) + split_k_extra_bytes(s) * byte_seconds` (`mac_seconds`: the
    layer's MACs at the full peak; `byte_seconds`: 1 / DRAM bandwidth). Ties keep the fewer slices."""
    if outputs <= 0 or sms <= 0:
        return 1, 1.0
    tiles = math.ceil(outputs / tile)
    best_s, best = 1, wave_utilization(outputs, sms, tile)
    best_time = mac_seconds / best
    for s in range(2, max(1, min(sms, depth // max(min_depth, 1))) + 1):
        blocks = tiles * s
        utilization = blocks / (math.ceil(blocks / sms) * sms)
        seconds = mac_seconds / utilization + split_k_extra_bytes(outputs, s) * byte_seconds
        if seconds < best_time * (1 - 1e-9):
            best_s, best, best_time = s, utilization, seconds
    return best_s, best


def split_k_extra_bytes(outputs: int, slices: int) -> int:
    """DRAM bytes the partial sums of a split-K layer add: each extra slice writes and the reduction reads
    an FP32 copy of the outputs."""
    return 2 * 4 * outputs * (slices - 1)
