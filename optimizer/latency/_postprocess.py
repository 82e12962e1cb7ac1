"""Detection post-processing a measurement harness times beside the network: NMS on the GPU.

MLPerf's detection harnesses (NVIDIA's SSD and RetinaNet, `use_nmsopt` in their configs) run box decoding
and non-maximum suppression on the GPU inside the timed region, after the network's raw head convolutions;
an exported graph without those layers misses that time (the calibration CSV's match notes: "measured
pipeline also runs box decoding/NMS"). A GPU NMS (TensorRT's EfficientNMS and NMS plugins) first filters
every class score and box delta against a score threshold, then sorts and suppresses the few survivors: the
filter, which reads every head output once as FP32, is the part that grows with the model, so

    nms_seconds = 4 * output_elements / (dram_bandwidth * gpu_bandwidth_efficiency) + kernels * layer_overhead

with `kernels` = NMS_KERNELS (threshold filter, sort, suppression, gather). RetinaNet's 264 classes x
120,087 anchors are 32 M scores, 0.97 ms on AGX Orin's 204.8 GB/s at efficiency 0.65; SSD-MobileNet's
0.18 M are 6 us. Every DLA engine's images need the same GPU pass (a DLA has no NMS).
"""

from __future__ import annotations

NMS_KERNELS = 4  # threshold filter, sort, suppression, gather (TensorRT's EfficientNMS plugin stages)


def nms_seconds(output_elements: int, bandwidth: float, bandwidth_efficiency: float, layer_overhead_us: float,
                kernels: int = NMS_KERNELS) -> float:
    """GPU time of decoding + NMS over a detection head's outputs (one FP32 read of each, plus launches)."""
    if output_elements <= 0:
        return 0.0
    return 4 * output_elements / (bandwidth * bandwidth_efficiency) + kernels * layer_overhead_us * 1e-6
