"""The RKNN MAC-array term: a dense convolution pays whole channel atoms and a cycle floor per output pixel."""

from __future__ import annotations

import pytest
from onnx import helper

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Option, load_profile
from optimizer.latency._model import channel_padding
from optimizer.latency._rknn import array_figures, conv_array_factor
from tests.conftest import save_model, value, weight

CATALOG = load_catalog()


def _conv(tmp_path, c_in, c_out, k, group=1, hw=32):
    pad = k // 2
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[k, k], pads=[pad] * 4, group=group)
    return save_model(tmp_path / "m.onnx", [node], [value("x", [1, c_in, hw, hw])], [value("y", None)],
                      [weight("w", [c_out, c_in // group, k, k])])


def _model(path, target):
    report = check_graph(load_model(path), CATALOG, target)
    tgt = CATALOG.target(target)
    return LatencyModel(build_groups(report), CATALOG, tgt, load_profile(tgt.family), io=report.io)


@pytest.mark.parametrize(("c_in", "c_out", "k", "expected"), [
    (16, 16, 1, 4 * 1024 / 256),  # one output atom, the 4-cycle floor: 256 useful MACs of 4 x 1024
    (64, 64, 1, 2 * 4 * 1024 / 4096),  # 2 output atoms x the floor: half the array idle
    (256, 128, 1, 4 * 8 * 1024 / 32768),  # input depth 8 cycles > floor: the array full
    (16, 16, 3, 9 * 1024 / 2304),  # 9 taps x one 32-channel input atom with 16 channels in it
    (64, 64, 3, 2 * 18 * 1024 / 36864),  # whole atoms: no waste
])
def test_rk3588_int8_conv_pays_whole_32_channel_atoms_and_a_4_cycle_floor(tmp_path, c_in, c_out, k, expected):
    graph = load_model(_conv(tmp_path, c_in, c_out, k))
    assert array_figures(CATALOG.target("rk3588").figures, "int8") == (32, 32, 4)
    assert conv_array_factor(graph, graph.node("c"), 32, 32, 4) == pytest.approx(expected)


def test_the_array_factor_scales_the_npu_compute_of_a_narrow_layer(tmp_path):
    """On the model: a 1x1 16->16 conv costs 16x its MACs on RK3588 INT8 (the plain 16-channel padding: 1x);
    FP16 has no array figures yet and keeps the padding."""
    path = _conv(tmp_path, 16, 16, 1)
    model = _model(path, "rk3588")
    node = model.graph.node("c")
    fig = CATALOG.target("rk3588").figures
    _, seconds, _ = model._unit_compute_s(node, "npu", "int8")
    assert seconds == pytest.approx(2 * node.macs / (fig["npu_int8_tops"].value * 1e12) * 16)
    assert channel_padding(model.graph, node, 16, 16) == 1.0
    assert array_figures(fig, "fp16") is None
    _, half, _ = model._unit_compute_s(node, "npu", "fp16")
    assert half == pytest.approx(2 * node.macs / (fig["npu_fp16_tops"].value * 1e12))
    wide = _model(_conv(tmp_path, 64, 64, 3), "rk3588")  # whole atoms: the term costs nothing
    node = wide.graph.node("c")
    assert wide._unit_compute_s(node, "npu", "int8")[1] == pytest.approx(
        2 * node.macs / (fig["npu_int8_tops"].value * 1e12))


def test_grouped_and_depthwise_convolutions_and_other_targets_keep_the_channel_padding(tmp_path):
    graph = load_model(_conv(tmp_path, 32, 32, 3, group=32))
    assert conv_array_factor(graph, graph.node("c"), 32, 32, 4) is None
    model = _model(_conv(tmp_path, 16, 16, 1), "rk3576")  # the compiler's RK3576 table is RK3588's: not used
    assert array_figures(model.target.figures, "int8") is None
    node = model.graph.node("c")
    peak = model.target.figures["npu_int8_tops"].value * 1e12
    assert model._unit_compute_s(node, "npu", "int8")[1] == pytest.approx(2 * node.macs / peak)


def _classifier(tmp_path, classes):
    node = helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)
    return save_model(tmp_path / f"fc{classes}.onnx", [node], [value("x", [1, 1280])], [value("y", [1, classes])],
                      [weight("w", [classes, 1280])])


def test_an_output_relayout_costs_the_npu_layer_plus_a_cpu_copy_not_the_gemm_on_the_cpu(tmp_path):
    """RKNN-OUTPUT-RELAYOUT (RK3588 INT8, [1,1000] output): the toolkit runs the Gemm on the NPU and only the
    appended Reshape on the CPU, so the CPU option costs t_npu(Gemm) + 1000 element copies on the CPU, a
    fraction of the Gemm's MACs and FP32 weights on the Cortex-A76s."""
    model = _model(_classifier(tmp_path, 1000), "rk3588")
    assert model.io["cpu_relayout"] == {"int8": ["fc"]}
    node, group = model.graph.node("fc"), model.groups.groups[0]
    npu = model.constants("npu")
    fig = model.target.figures
    compute = 2 * node.macs / (fig["npu_int8_tops"].value * 1e12) / npu.efficiency["conv"]
    bw = model.bandwidth * npu.bandwidth_efficiency
    memory = 1280 * 1000 / bw + 2280 / (bw * npu.sram_speedup)  # INT8 weights; activations in the NPU's SRAM
    assert model.sram_bytes >= 2280
    layer = (max(compute, memory) + (1 - npu.overlap) * min(compute, memory) + npu.layer_overhead_us * 1e-6)
    work = model.work(group, Option("cpu", "fp32"))
    assert work.boundary_s == pytest.approx(layer)
    assert work.weight_bytes == 0.0
    assert sum(work.unit_compute_s) == pytest.approx(1000 / model.cpu_peak_ops)
    tgt = model.target
    gemm_on_cpu = LatencyModel(model.groups, CATALOG, tgt, model.profile, io={**model.io, "cpu_relayout": {}})
    old = gemm_on_cpu.work(group, Option("cpu", "fp32"))
    assert old.weight_bytes == 1280 * 1000 * 4 and old.boundary_s == 0.0  # MACs and FP32 weights on the A76s
    assert old.unit_compute_s[0] == pytest.approx(2 * node.macs / model.cpu_peak_ops)
    assert model.option_ns(group, Option("cpu", "fp32")) < gemm_on_cpu.option_ns(group, Option("cpu", "fp32")) / 3
    aligned = _model(_classifier(tmp_path, 1008), "rk3588")  # 1008 = 63 x 16: no relayout, nothing changes
    assert aligned.io["cpu_relayout"] == {}
    assert _model(_classifier(tmp_path, 1000), "rk3576").io["cpu_relayout"] == {}  # the rule is RK3588's


def test_the_general_api_copies_a_zero_copy_ready_input_on_the_cpu(tmp_path):
    """Seed 003 §3.1.6: through rknn_inputs_set (pass_through=0) the CPU copies even an NHWC 3-channel input into
    the model's buffer: 2 x bytes over the DRAM, plus one cache sync (seed 001); handed over (pass_through) free."""
    path = _conv(tmp_path, 3, 16, 3, hw=64)
    model = _model(path, "rk3588")
    option = Option("npu", "int8")
    fmt, seconds = model.input_format("x", option)
    assert fmt == "NHWC"
    assert seconds == pytest.approx(2 * 3 * 64 * 64 / model.bandwidth + model.profile.memsync_us * 1e-6)
    report = check_graph(load_model(path), CATALOG, "rk3588")
    tgt = CATALOG.target("rk3588")
    handed = LatencyModel(build_groups(report), CATALOG, tgt, load_profile(tgt.family), io=report.io,
                          pass_through=True)
    assert handed.input_format("x", option) == ("NHWC", 0.0)


def _conv_act(tmp_path, act):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4)]
    if act == "SiLU":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"], name="sig"), helper.make_node("Mul", ["c", "s"], ["y"])]
    else:
        nodes.append(helper.make_node(act, ["c"], ["y"], name="act"))
    return save_model(tmp_path / f"{act}.onnx", nodes, [value("x", [1, 64, 40, 40])], [value("y", None)],
                      [weight("w", [64, 64, 3, 3])])


def test_a_relu_in_the_convolutions_output_stage_costs_nothing_a_silu_keeps_its_two_elementwise_ops(tmp_path):
    """ReLU/Clip/LeakyReLU after a Conv of the same NPU group: the group's NPU work is the conv's alone (vector
    work 0); a SiLU adds 2 ops per output element at the NPU's vector peak; on the CPU a ReLU still costs its op."""
    works = {}
    for act in ("Relu", "LeakyRelu", "SiLU"):
        model = _model(_conv_act(tmp_path, act), "rk3588")
        (group,) = model.groups.groups
        assert group.fused
        works[act] = (model, model.work(group, Option("npu", "int8")), model.work(group, Option("cpu", "fp32")))
    model, relu, relu_cpu = works["Relu"]
    vector = 5  # OP_CLASSES index of "vector"
    assert relu.unit_compute_s[vector] == 0.0 and works["LeakyRelu"][1].unit_compute_s[vector] == 0.0
    assert relu.unit_compute_s[0] == works["SiLU"][1].unit_compute_s[0] > 0  # the same conv
    elements = 64 * 40 * 40
    assert works["SiLU"][1].unit_compute_s[vector] == pytest.approx(2 * elements / model._vector_ops("npu"))
    assert relu_cpu.unit_compute_s[vector] == pytest.approx(elements / model.cpu_peak_ops)
