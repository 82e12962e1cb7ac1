"""Each physics term of the latency model moves a figure in the direction and by the amount its formula says."""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import pytest
from onnx import helper

from optimizer.calibrate import Situation, predict
from optimizer.calibrate._situation import contention, prepare, score, stage_dram_bytes, stage_times
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError
from optimizer.fusion import build_groups
from optimizer.ir import BYTES_PER_ELEMENT, load_model
from optimizer.latency import OP_CLASSES, LatencyModel, Option, Placement, evaluate, load_profile, parse_profile
from optimizer.latency._contention import slowdown
from optimizer.latency._gpu import split_k, split_k_extra_bytes
from optimizer.latency._model import DLA_CBUF_BYTES, GPU_TILE_OUTPUTS, Work, wave_utilization, work_seconds
from tests.conftest import save_model, value, weight

CATALOG = load_catalog()


def _conv(tmp_path, c=64, hw=56, group=1, name="m.onnx"):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
    return save_model(tmp_path / name, [node], [value("x", [1, c, hw, hw])], [value("y", None)],
                      [weight("w", [c, c // group, 3, 3])])


def _lm(path, target, profile=None, **kwargs):
    report = check_graph(load_model(path), CATALOG, target)
    tgt = CATALOG.target(target)
    return LatencyModel(build_groups(report), CATALOG, tgt, profile or load_profile(tgt.family), io=report.io,
                        **kwargs)


def _compute_only(seconds: float, cls: str = "conv", cores: int = 1) -> Work:
    unit = tuple(seconds if k == cls else 0.0 for k in OP_CLASSES)
    return Work(unit_compute_s=unit, weight_bytes=0.0, act_bytes=0.0, kernels=0, cores=cores, boundary_s=0.0)


def test_tf32_runs_fp32_convolutions_at_the_tensor_core_rate_on_ampere(tmp_path):
    """TensorRT's FP32 conv on Orin is TF32: peak gpu_fp16_tops * 0.5 instead of the CUDA-core gpu_fp32_tops."""
    path = _conv(tmp_path, c=128, hw=56)
    fig = CATALOG.target("orin-agx").figures
    tf32 = _lm(path, "orin-agx")
    cuda = _lm(path, "orin-agx", tf32=False)
    node = tf32.graph.node("c")
    _, with_tf32, _ = tf32._unit_compute_s(node, "gpu", "fp32")
    _, without, _ = cuda._unit_compute_s(node, "gpu", "fp32")
    expected = fig["gpu_fp16_tops"].value * fig["gpu_tf32_per_fp16"].value / fig["gpu_fp32_tops"].value
    # each at its own split-K choice (a slower CUDA-core layer may split differently; 1 here)
    waves = cuda._gpu_waves(node, "fp32") / tf32._gpu_waves(node, "fp32")
    assert without / with_tf32 * waves == pytest.approx(expected, rel=1e-9)  # 21.4 / 5.3 = 4.03x
    group = tf32.groups.groups[0]
    assert tf32.option_ns(group, Option("gpu", "fp32")) < cuda.option_ns(group, Option("gpu", "fp32"))
    # FP16 and INT8 do not change, nor does a GPU without TF32 (Volta)
    assert tf32.option_ns(group, Option("gpu", "fp16")) == cuda.option_ns(group, Option("gpu", "fp16"))
    volta, volta_off = _lm(path, "xavier-agx"), _lm(path, "xavier-agx", tf32=False)
    assert volta.option_ns(volta.groups.groups[0], Option("gpu", "fp32")) == \
        volta_off.option_ns(volta_off.groups.groups[0], Option("gpu", "fp32"))


def test_tf32_leaves_depthwise_convolution_on_cuda_cores(tmp_path):
    lm = _lm(_conv(tmp_path, c=64, group=64, name="dw.onnx"), "orin-agx")
    off = _lm(_conv(tmp_path, c=64, group=64, name="dw.onnx"), "orin-agx", tf32=False)
    node = lm.graph.node("c")
    assert lm._unit_compute_s(node, "gpu", "fp32") == off._unit_compute_s(node, "gpu", "fp32")


def test_predict_no_tf32_is_slower_for_fp32_on_orin(tmp_path):
    path = _conv(tmp_path, c=256, hw=56)
    fast = predict(path, "orin-agx", Situation("gpu", "fp32"))
    slow = predict(path, "orin-agx", Situation("gpu", "fp32", tf32=False))
    assert slow.figure.latency_s > 1.5 * fast.figure.latency_s
    assert fast.to_json(path)["tf32"] is True and slow.to_json(path)["tf32"] is False


def test_bandwidth_follows_the_memory_clock_of_the_power_mode(tmp_path):
    """BW = emc_mhz * 1e6 * 2 * bus_bits / 8: 3200 MHz x 256 bit = 204.8 GB/s; the 15W mode's 2133 MHz gives 2/3."""
    path = _conv(tmp_path)
    maxn, low = _lm(path, "orin-agx"), _lm(path, "orin-agx-15w")
    assert maxn.bandwidth == pytest.approx(204.8e9)
    assert low.bandwidth == pytest.approx(2133e6 * 2 * 256 / 8)
    memory_only = Work(unit_compute_s=(0.0,) * len(OP_CLASSES), weight_bytes=8e6, act_bytes=4e6, kernels=0, cores=1,
                       boundary_s=0.0)
    const = maxn.constants("gpu")
    ratio = work_seconds(memory_only, const, low.bandwidth, 0) / work_seconds(memory_only, const, maxn.bandwidth, 0)
    assert ratio == pytest.approx(3200 / 2133, rel=1e-9)


def test_per_inference_overhead_is_added_once_whatever_the_placement(tmp_path):
    path = _conv(tmp_path)
    base = load_profile("nvidia-dla", prior=True)
    zero = parse_profile(base.text.replace("inference_overhead_us = 60.0", "inference_overhead_us = 0.0"), "z.toml")
    for device in ("gpu", "dla"):
        with_it, without = _lm(path, "orin-agx", base), _lm(path, "orin-agx", zero)
        placements = tuple(Placement(Option(device, "fp16"), loadable=0 if device == "dla" else -1)
                           for _ in with_it.groups.groups)
        a, b = evaluate(with_it, placements), evaluate(without, placements)
        assert a.total_ns - b.total_ns == 60_000 == a.inference_ns
        assert a.busy_ns == b.busy_ns  # host work: no engine is busier


def test_cpu_fallback_runs_at_the_neon_peak_of_the_soc_cores(tmp_path):
    """CPU peak = cpu_cores * cpu_ghz * cpu_neon_flops_per_cycle (RK3588: 4 x 2.4 GHz x 16 = 153.6 GFLOPS)."""
    lm = _lm(_conv(tmp_path), "rk3588")
    assert lm.cpu_peak_ops == pytest.approx(4 * 2.4e9 * 16)
    node = lm.graph.node("c")
    _, macs_s, _ = lm._unit_compute_s(node, "cpu", "fp32")
    assert macs_s == pytest.approx(2 * node.macs / (4 * 2.4e9 * 16))
    slow = _lm(_conv(tmp_path), "rv1106")  # 1 x Cortex-A7 at 1.2 GHz x 4
    assert slow._unit_compute_s(node, "cpu", "fp32")[1] / macs_s == pytest.approx(153.6 / 4.8)


def test_npu_cpu_hand_over_costs_sync_handover_and_a_conversion_at_the_npu_precision(tmp_path):
    """The toolkit's CPU layers hold INT8 tensors in an INT8 build (corpus layer tables): 1 byte an element on both
    sides of an INT8 hand-over, 2 in FP16, and a CPU layer's FP32-labelled output goes back at FP16."""
    lm = _lm(_conv(tmp_path, c=64, hw=56), "rk3588")
    p = lm.profile
    elements = 64 * 56 * 56
    cpu_bytes = npu_bytes = elements * BYTES_PER_ELEMENT["int8"]
    for precision, size in (("fp16", 2), ("fp32", 2)):
        half = size * elements
        assert lm.transfer("y", "npu" if precision == "fp16" else "cpu", "cpu" if precision == "fp16" else "npu",
                           precision)[1] == round(((p.memsync_us + p.handover_us) * 1e-6 + 2 * half / lm.bandwidth
                                                   + half / (p.layout_convert_gbps * 1e9)) * 1e9)
    expected = ((p.memsync_us + p.handover_us) * 1e-6 + (npu_bytes + cpu_bytes) / lm.bandwidth
                + cpu_bytes / (p.layout_convert_gbps * 1e9))
    fmt, ns = lm.transfer("y", "npu", "cpu", "int8")
    assert fmt == "nchw"
    assert ns == round(expected * 1e9)
    no_handover = _lm(_conv(tmp_path, c=64, hw=56), "rk3588",
                      replace(p, handover_us=0.0))
    assert ns - no_handover.transfer("y", "npu", "cpu", "int8")[1] == round(p.handover_us * 1e3)


def test_nc1hwc2_input_is_converted_on_the_cpu_unless_pass_through(tmp_path):
    """Seed 003 §3.1.6: an input of 16 channels is NC1HWC2 natively; with pass_through=0 the runtime converts it."""
    path = _conv(tmp_path, c=16, hw=64, name="c16.onnx")
    converted, passed = _lm(path, "rk3588"), _lm(path, "rk3588", pass_through=True)
    fmt, seconds = converted.input_format("x", Option("npu", "int8"))
    assert fmt == "nhwc->nc1hwc2"
    assert seconds == pytest.approx(16 * 64 * 64 / (converted.profile.layout_convert_gbps * 1e9))
    assert passed.input_format("x", Option("npu", "int8"))[1] == 0.0
    # a 3-channel NHWC input with aligned rows is zero-copy: the NPU normalises it, no CPU conversion; the general
    # API still copies it into the model's input buffer (2 x bytes over the DRAM + one cache sync), handed over free
    rgb = _lm(_conv(tmp_path, c=3, hw=64, name="c3.onnx"), "rk3588")
    assert rgb.input_format("x", Option("npu", "int8")) == (
        "NHWC", pytest.approx(2 * 3 * 64 * 64 / rgb.bandwidth + rgb.profile.memsync_us * 1e-6))
    rgb = _lm(_conv(tmp_path, c=3, hw=64, name="c3.onnx"), "rk3588", pass_through=True)
    assert rgb.input_format("x", Option("npu", "int8"))[1] == 0.0


def test_outputs_are_written_as_fp32_nchw_by_the_cpu(tmp_path):
    """rknn_outputs_get with want_float: 4 bytes an element through the CPU conversion, at any NPU precision."""
    lm = _lm(_conv(tmp_path, c=64, hw=56), "rk3588")
    for precision in ("int8", "fp16"):
        fmt, seconds = lm.output_format("y", Option("npu", precision))
        assert fmt == "nc1hwc2->nchw"
        assert seconds == pytest.approx(4 * 64 * 56 * 56 / (lm.profile.layout_convert_gbps * 1e9))


def test_npu_core_split_scales_each_op_class_by_its_own_efficiency():
    """A split layer's class-c compute is divided by cores * multicore_split[c]: dense conv nearly ideal,
    elementwise work (bound by the shared DDR) far less."""
    const = load_profile("rockchip-rknn", prior=True).constants("rk3588", "npu")
    for cls in ("conv", "vector"):
        one = work_seconds(_compute_only(1e-3, cls), const, 25e9, 0)
        three = work_seconds(_compute_only(1e-3, cls, cores=3), const, 25e9, 0)
        split_cost = const.multicore_overhead_us * 1e-6
        assert one / (three - split_cost) == pytest.approx(3 * const.multicore_split[cls], rel=1e-9)
    assert const.multicore_split["conv"] > const.multicore_split["vector"]


def test_a_profile_without_a_split_table_uses_the_single_multicore_efficiency():
    const = load_profile("rockchip-rknn", prior=True).constants("rk3588", "npu")
    flat = replace(const, multicore_split=MappingProxyType({}))
    assert flat.split_efficiency("dwconv") == const.multicore_efficiency


def test_predict_accelerator_cpu_puts_the_whole_model_on_the_cpu(tmp_path):
    path = _conv(tmp_path, c=64, hw=56)
    cpu = predict(path, "rk3588", Situation("cpu", "fp32"))
    npu = predict(path, "rk3588", Situation("npu", "int8"))
    assert cpu.scenario.accelerator_share == 0.0
    assert {device for device, _ in cpu.scenario.stage.works} == {"cpu", "npu"}  # npu: rknn_run's fixed cost only
    assert cpu.figure.latency_s > npu.figure.latency_s
    lm = _lm(path, "rk3588")
    group = lm.groups.groups[0]
    expected = lm.option_ns(group, Option("cpu", "fp32")) + lm.inference_ns()
    assert cpu.figure.latency_s * 1e9 == pytest.approx(expected, abs=2)


def test_gpu_waves_divide_tensor_core_work_by_the_filled_share_of_the_sms(tmp_path):
    """A 28x28x256 output is 13 thread blocks of 128x128: one wave on 16 SMs, 13/16 busy; at batch 4, 49
    blocks in 4 waves, 49/64 busy; on a target without an SM count nothing changes."""
    assert wave_utilization(28 * 28 * 256, 16) == pytest.approx(13 / 16)
    assert wave_utilization(4 * 28 * 28 * 256, 16) == pytest.approx(49 / 64)
    assert wave_utilization(16 * GPU_TILE_OUTPUTS, 16) == 1.0
    assert wave_utilization(GPU_TILE_OUTPUTS + 1, 16) == pytest.approx(2 / 16)
    path = _conv(tmp_path, c=256, hw=28)
    lm = _lm(path, "orin-agx")
    node = lm.graph.node("c")
    _, waved, _ = lm._unit_compute_s(node, "gpu", "int8")
    ideal = 2 * node.macs / (CATALOG.target("orin-agx").figures["gpu_int8_tops"].value * 1e12)
    assert waved == pytest.approx(ideal * 16 / 13, rel=1e-9)
    _, dla, _ = lm._unit_compute_s(node, "dla", "int8")  # the DLA has no SM waves
    assert dla == pytest.approx(2 * node.macs / (CATALOG.target("orin-agx").figures["dla_int8_tops"].value * 1e12))
    six = _lm(path, "orin-agx-15w")  # 3 TPCs: 13 blocks in 3 waves of 6 SMs = 13/18, unless split-K pays
    node = six.graph.node("c")
    mac_s = 2 * node.macs / (CATALOG.target("orin-agx-15w").figures["gpu_int8_tops"].value * 1e12)
    slices, utilization = split_k(28 * 28 * 256, 256 * 9, 6, mac_s, 1 / six.bandwidth)
    assert slices == 2 and utilization == pytest.approx(26 / 30)  # 26 blocks in 5 waves beat 13/18
    assert six._gpu_waves(node) == pytest.approx(26 / 30)


def test_split_k_fills_the_sms_with_slices_of_a_deep_reduction_when_the_partial_sums_are_cheap(tmp_path):
    """ResNet's last stage at batch 1: 6 tiles of 128x128 on 16 SMs fill 6/16. Split 8 ways (4,608 MACs per
    output, slices of >= 256), 48 blocks fill 3 whole waves: the compute divides by 1 instead of 0.375. A
    shallow reduction (K < 2 x 256) or costly partial sums keep s = 1; the partial sums add
    2 x 4 bytes x outputs per extra slice."""
    outputs = 6 * GPU_TILE_OUTPUTS
    assert split_k(outputs, 4608, 16, 1e-4, 1e-15) == (8, 1.0)
    assert split_k(outputs, 300, 16, 1e-4, 1e-15) == (1, pytest.approx(6 / 16))
    assert split_k(outputs, 4608, 16, 1e-4, 1e-6) == (1, pytest.approx(6 / 16))  # 1 us a byte: never pays
    assert split_k_extra_bytes(outputs, 8) == 2 * 4 * outputs * 7
    # on a model: a 7x7, 2048 -> 2048 3x3 conv on AGX Orin (100,352 outputs = 7 tiles, K = 18,432)
    path = _conv(tmp_path, c=2048, hw=7)
    lm = _lm(path, "orin-agx")
    node = lm.graph.node("c")
    ideal = 2 * node.macs / (CATALOG.target("orin-agx").figures["gpu_int8_tops"].value * 1e12)
    slices, utilization = split_k(7 * 7 * 2048, 2048 * 9, 16, ideal, 1 / lm.bandwidth)
    assert slices > 1 and utilization > 7 / 16
    _, split, _ = lm._unit_compute_s(node, "gpu", "int8")
    assert split == pytest.approx(ideal / utilization, rel=1e-9)
    work = lm.work(lm.groups.groups[0], Option("gpu", "int8"))
    dense = lm._group_elements(lm.groups.groups[0])  # int8: one byte an element
    assert work.act_bytes == dense + split_k_extra_bytes(7 * 7 * 2048, slices)


def test_each_engine_slows_by_pccs_at_the_dram_throughput_of_its_co_runners():
    """Two DLA streams at 20 GB/s each and a GPU engine at 40 GB/s on a 200 GB/s DRAM: a stream sees
    (20 + 40) / 200 = 30% from its co-runners, the GPU engine (20 + 20) / 200 = 20%."""
    two = Situation("dla", "int8", cores=2, metric="throughput", gpu_batch=8)
    stream, gpu = contention(two, 20e9, 40e9, 200e9)
    assert stream == pytest.approx(slowdown("dla", 30.0)) and gpu == pytest.approx(slowdown("gpu", 20.0))
    assert stream > 1.0 and gpu > 1.0
    alone = contention(Situation("dla", "int8", cores=2, metric="throughput"), 20e9, 0.0, 200e9)
    assert alone == (pytest.approx(slowdown("dla", 10.0)), 1.0)


def test_two_dla_streams_slow_each_other_by_the_dram_each_occupies(tmp_path):
    """Throughput of two streams = 2 / (T * slowdown(dla, 100 * bytes / (T * B)))."""
    path = _conv(tmp_path, c=64, hw=160)  # activation-heavy: DRAM matters
    profile = load_profile("nvidia-dla")
    two = prepare(path, "orin-agx", Situation("dla", "int8", cores=2, metric="throughput"), CATALOG, profile)
    alone, _ = stage_times(two.stage, profile.constants)
    x = 100 * stage_dram_bytes(two.stage, profile.constants) / alone / two.stage.bandwidth
    assert 1 < x < 60
    figure = score(two, profile.constants)
    assert figure.throughput == pytest.approx(2 / (alone * slowdown("dla", x)), rel=1e-9)
    assert figure.latency_s == alone  # one inference on its own is still the latency


def test_a_gpu_engine_beside_two_dla_streams_shares_the_same_dram(tmp_path):
    path = _conv(tmp_path, c=64, hw=160)
    profile = load_profile("nvidia-dla")
    both = prepare(path, "orin-agx", Situation("dla", "int8", batch=1, cores=2, metric="throughput", gpu_batch=4),
                   CATALOG, profile)
    dla = prepare(path, "orin-agx", Situation("dla", "int8", cores=2, metric="throughput"), CATALOG, profile)
    gpu = prepare(path, "orin-agx", Situation("gpu", "int8", batch=4, metric="throughput"), CATALOG, profile)
    together = score(both, profile.constants).throughput
    apart = score(dla, profile.constants).throughput + score(gpu, profile.constants).throughput
    assert together < apart
    # a DRAM four times faster takes most of the contention away
    fast = replace(both, stage=replace(both.stage, bandwidth=4 * both.stage.bandwidth),
                   gpu_stage=replace(both.gpu_stage, bandwidth=4 * both.gpu_stage.bandwidth))
    fast_dla = replace(dla, stage=replace(dla.stage, bandwidth=4 * dla.stage.bandwidth))
    fast_gpu = replace(gpu, stage=replace(gpu.stage, bandwidth=4 * gpu.stage.bandwidth))
    fast_apart = score(fast_dla, profile.constants).throughput + score(fast_gpu, profile.constants).throughput
    assert together / apart < score(fast, profile.constants).throughput / fast_apart


def _two_convs(tmp_path, c=64, hw=56):
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["h", "w2"], ["y"], name="c2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return save_model(tmp_path / "two.onnx", nodes, [value("x", [1, c, hw, hw])], [value("y", None)],
                      [weight("w1", [c, c, 3, 3]), weight("w2", [c, c, 3, 3])])


def test_gpu_reads_a_small_activation_the_previous_kernel_wrote_from_the_l2(tmp_path):
    """AGX Orin's 4 MB L2: the 64x56x56 INT8 tensor between two convs (200,704 B <= half the L2) is read from
    the L2, so the second conv moves 200,704 fewer DRAM bytes; its write and the model input still count.
    At batch 32 (6.4 MB) it no longer fits; Xavier NX's 256 KB L2 (128 KB share) never holds it; a target
    without an L2 figure (Orin NX) is unchanged."""
    path = _two_convs(tmp_path)
    h = 64 * 56 * 56
    assert h * BYTES_PER_ELEMENT["int8"] <= 0.5 * CATALOG.target("orin-agx").figures["gpu_l2_bytes"].value
    gpu, dla = Option("gpu", "int8"), Option("dla", "int8")

    def second(lm):
        group = next(g for g in lm.groups.groups if "c2" in g.members)
        return group, lm.work(group, gpu), lm._group_elements(group)

    group, work, elements = second(_lm(path, "orin-agx"))
    assert work.act_bytes == elements - h  # int8: a byte an element (no split-K: 25 tiles fill 16 SMs twice)
    first = next(g for g in _lm(path, "orin-agx").groups.groups if "c1" in g.members)
    lm = _lm(path, "orin-agx")
    assert lm.work(first, gpu).act_bytes == lm._group_elements(first) + lm._split_k_bytes(first, "int8")
    assert lm.work(group, dla).act_bytes == elements  # the DLA has its own SRAM term, not the GPU L2
    _, batched, batch_elements = second(_lm(path, "orin-agx", batch=32))
    assert batched.act_bytes == batch_elements + _lm(path, "orin-agx", batch=32)._split_k_bytes(group, "int8")
    for target in ("xavier-nx", "orin-nx"):
        lm = _lm(path, target)
        g, w, e = second(lm)
        assert w.act_bytes == e + lm._split_k_bytes(g, "int8")
    # and the time follows: fewer DRAM bytes, never slower
    lm = _lm(path, "orin-agx")
    const = lm.constants("gpu")
    unresident = replace(work, act_bytes=float(elements))
    assert work_seconds(work, const, lm.bandwidth, lm.sram_bytes) < \
        work_seconds(unresident, const, lm.bandwidth, lm.sram_bytes)


def test_a_pipelined_engine_exposes_the_overlap_of_one_chunk(tmp_path):
    """An engine that loads the next piece of a layer while it computes this one exposes only one piece's
    worth: (1 - overlap) * min(compute, memory) / chunks. GPU: chunks = waves of thread blocks,
    ceil(tiles * splits / gpu_sms), of the largest tensor-core layer (a 64x56x56 conv on AGX Orin: 13 tiles,
    one wave, at batch 1; 392 tiles, 25 waves, at batch 32). DLA: CBUF refills, ceil((activation + weight
    bytes) / 512 KiB). The RKNN NPU keeps 1."""
    work = Work(unit_compute_s=(1e-3,) + (0.0,) * (len(OP_CLASSES) - 1), weight_bytes=4e6, act_bytes=0.0,
                kernels=0, cores=1, boundary_s=0.0)
    const = load_profile("nvidia-dla", prior=True).constants("orin", "gpu")
    bandwidth = 8e9  # 4 MB in 0.5 ms at bandwidth_efficiency 1
    const = replace(const, bandwidth_efficiency=1.0, efficiency=dict(const.efficiency, conv=1.0))
    one = work_seconds(work, const, bandwidth, 0)
    four = work_seconds(replace(work, chunks=4), const, bandwidth, 0)
    assert one == pytest.approx(1e-3 + (1 - const.overlap) * 0.5e-3)
    assert four == pytest.approx(1e-3 + (1 - const.overlap) * 0.5e-3 / 4)
    path = _conv(tmp_path, c=64, hw=56)
    for batch in (1, 32):
        lm = _lm(path, "orin-agx", batch=batch)
        node, group = lm.graph.node("c"), lm.groups.groups[0]
        blocks = math.ceil(64 * 56 * 56 * batch / GPU_TILE_OUTPUTS) * lm._gpu_split(node, "int8")[0]
        assert lm.work(group, Option("gpu", "int8")).chunks == math.ceil(blocks / 16)
        dla = lm.work(group, Option("dla", "int8"))
        # int8: input + output 2 x 200,704 B an image, weights 36,864 B
        assert dla.chunks == math.ceil((2 * 64 * 56 * 56 * batch + 64 * 64 * 9) / DLA_CBUF_BYTES)
    assert _lm(path, "orin-agx").work(group, Option("gpu", "int8")).chunks == 1
    assert _lm(path, "orin-agx", batch=32).work(group, Option("gpu", "int8")).chunks == 25
    assert _lm(path, "orin-agx").work(group, Option("dla", "int8")).chunks == 1  # 438 KB fit one fill
    npu = _lm(path, "rk3588")
    assert npu.work(npu.groups.groups[0], Option("npu", "int8")).chunks == 1


def test_dla_cores_timed_apart_add_their_rates_without_sharing_the_dram(tmp_path):
    """DLA-SW's '2x DLA' figures are twice one core timed alone: throughput = 2 / T, no PCCS slowdown; the
    same two cores run together are slower by slowdown(dla, x) (test above)."""
    path = _conv(tmp_path, c=64, hw=160)
    profile = load_profile("nvidia-dla")
    apart = Situation("dla", "int8", cores=2, metric="throughput", separate_runs=True)
    scenario = prepare(path, "orin-agx", apart, CATALOG, profile)
    alone, _ = stage_times(scenario.stage, profile.constants)
    assert score(scenario, profile.constants).throughput == pytest.approx(2 / alone, rel=1e-12)
    together = prepare(path, "orin-agx", replace(apart, separate_runs=False), CATALOG, profile)
    assert score(together, profile.constants).throughput < 2 / alone
    assert "--separate-runs" in apart.command("m.onnx", "orin-agx")


def test_separate_runs_is_refused_beside_a_gpu_engine_or_for_a_latency(tmp_path):
    path = _conv(tmp_path)
    profile = load_profile("nvidia-dla")
    for bad in (Situation("dla", "int8", cores=2, metric="throughput", gpu_batch=4, separate_runs=True),
                Situation("dla", "int8", cores=2, separate_runs=True),
                Situation("gpu", "int8", metric="throughput", separate_runs=True)):
        with pytest.raises(BadInputError, match="separate-runs"):
            prepare(path, "orin-agx", bad, CATALOG, profile)


def test_engine_time_leaves_out_exactly_the_per_inference_host_overhead(tmp_path):
    """trtexec's GPU latency is timed with CUDA events around the engine: the figure is the host-timed one minus
    the host device's inference_overhead_us (60 us in the prior), on the GPU and on a DLA engine, at any batch;
    a throughput over a GPU engine beside the DLAs loses it on both engines."""
    path = _conv(tmp_path, c=64, hw=56)
    profile = load_profile("nvidia-dla", prior=True)
    overhead = profile.constants("xavier-nx", "gpu").inference_overhead_us * 1e-6
    assert overhead == pytest.approx(60e-6)
    for situation in (Situation("gpu", "int8"), Situation("gpu", "int8", batch=8),
                      Situation("dla", "fp16")):
        host = score(prepare(path, "xavier-nx-15w", situation, CATALOG, profile), profile.constants)
        engine = score(prepare(path, "xavier-nx-15w", replace(situation, host_timed=False), CATALOG, profile),
                       profile.constants)
        assert host.latency_s - engine.latency_s == pytest.approx(overhead, rel=1e-9)
    both = Situation("dla", "int8", batch=2, cores=2, metric="throughput", gpu_batch=4)
    host = score(prepare(path, "xavier-nx-15w", both, CATALOG, profile), profile.constants)
    engine = score(prepare(path, "xavier-nx-15w", replace(both, host_timed=False), CATALOG, profile),
                   profile.constants)
    assert engine.throughput > host.throughput
    with pytest.raises(BadInputError, match="engine-time"):
        prepare(path, "rk3588", Situation("npu", "int8", host_timed=False), CATALOG, load_profile("rockchip-rknn"))


def test_default_formats_add_the_gpu_reformats_and_the_thin_planar_input_of_trtexec_without_io_flags(tmp_path):
    """trtexec without --inputIOFormats/--outputIOFormats feeds the DLA FP32 linear tensors: each model input and
    output pays a GPU reformat (reformat_us + padded bytes + 4 B an element over the DRAM), and a 3-channel input
    in kDLA_LINEAR fills 3 of the 32 INT8 channels of an atom, so the first convolution costs 32/3 - 1 more than
    in kDLA_HWC4. The figure grows by exactly the difference of the backend's format costs."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = save_model(tmp_path / "thin.onnx", [node], [value("x", [1, 3, 64, 64])], [value("y", None)],
                      [weight("w", [16, 3, 3, 3])])
    profile = load_profile("nvidia-dla", prior=True)
    native = Situation("dla", "int8")
    default = replace(native, default_formats=True)
    lm = _lm(path, "orin-agx", profile)
    option = Option("dla", "int8")
    extra = (lm.input_format("x", option, True)[1] + lm.output_format("y", option, True)[1]
             - lm.input_format("x", option)[1] - lm.output_format("y", option)[1])
    thin = (32 / 3 - 1) * lm._node_compute_s(lm.graph.node("c"), "dla", "int8")
    assert lm.input_format("x", option, True)[1] > thin > 0
    fast = score(prepare(path, "orin-agx", native, CATALOG, profile), profile.constants).latency_s
    slow = score(prepare(path, "orin-agx", default, CATALOG, profile), profile.constants).latency_s
    assert slow - fast == pytest.approx(extra, abs=2e-9)
    assert "--default-formats" in default.command("m.onnx", "orin-agx")
    with pytest.raises(BadInputError, match="default-formats"):
        prepare(path, "rk3588", replace(default, accelerator="npu"), CATALOG, load_profile("rockchip-rknn"))


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_a_gpu_engine_in_default_formats_reformats_its_fp32_model_io_to_its_precision(tmp_path, precision):
    """trtexec without --inputIOFormats/--outputIOFormats hands a GPU engine FP32 linear model I/O: below FP32 each
    model input and output adds one reformat kernel, reformat_us + (4 + bytes of the precision) B an element over
    the DRAM, at batch 4 four times the elements; an FP32 engine adds nothing."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[1, 1])
    path = save_model(tmp_path / "io.onnx", [node], [value("x", [1, 8, 32, 32])], [value("y", None)],
                      [weight("w", [16, 8, 1, 1])])
    profile = load_profile("nvidia-dla", prior=True)
    native = Situation("gpu", precision, batch=4)
    fast = score(prepare(path, "xavier-nx-15w", native, CATALOG, profile), profile.constants).latency_s
    slow = score(prepare(path, "xavier-nx-15w", replace(native, default_formats=True), CATALOG, profile),
                 profile.constants).latency_s
    bandwidth = 1600e6 * 2 * 128 / 8  # the 15 W mode's EMC clock x 2 transfers x 128 bit
    elements = 4 * (8 * 32 * 32 + 16 * 32 * 32)
    expected = 2 * profile.reformat_us * 1e-6 + (4 + BYTES_PER_ELEMENT[precision]) * elements / bandwidth
    assert slow - fast == pytest.approx(expected, rel=1e-6, abs=2e-9)
    fp32 = replace(native, precision="fp32")
    assert (score(prepare(path, "xavier-nx-15w", replace(fp32, default_formats=True), CATALOG, profile),
                  profile.constants).latency_s
            == score(prepare(path, "xavier-nx-15w", fp32, CATALOG, profile), profile.constants).latency_s)
