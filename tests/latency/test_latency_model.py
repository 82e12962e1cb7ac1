"""The latency model's pieces: roofline, op classes, formats, transfers, profiles."""

from __future__ import annotations

import pytest
from onnx import helper

from optimizer.backends._jetson import padded_bytes as _padded_bytes
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Option, load_profile, op_class, parse_profile
from tests.conftest import save_model, value, weight

CATALOG = load_catalog()


def _lm(path, target):
    report = check_graph(load_model(path), CATALOG, target)
    tgt = CATALOG.target(target)
    return LatencyModel(build_groups(report), CATALOG, tgt, load_profile(tgt.family), io=report.io)


def _conv(tmp_path, group=1, c=64, hw=56, name="m.onnx"):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
    return save_model(tmp_path / name, [node], [value("x", [1, c, hw, hw])], [value("y", None)],
                      [weight("w", [c, c // group, 3, 3])])


def test_op_classes(tmp_path):
    for group, expected in ((1, "conv"), (64, "dwconv"), (4, "gconv")):
        graph = load_model(_conv(tmp_path, group=group, name=f"g{group}.onnx"))
        assert op_class(graph, graph.node("c")) == expected


def test_int8_faster_than_fp16_faster_than_fp32_on_gpu(tmp_path):
    lm = _lm(_conv(tmp_path), "orin-agx")
    g = lm.groups.groups[0]
    costs = [lm.option_ns(g, Option("gpu", p)) for p in ("int8", "fp16", "fp32")]
    assert costs[0] < costs[1] < costs[2]


def test_depthwise_runs_poorly_on_dla(tmp_path):
    """Seed 004: depthwise conv is poor on DLA; the op-class efficiency makes a compute-bound one slower."""
    path = _conv(tmp_path, group=512, c=512, hw=64, name="dw.onnx")
    report = check_graph(load_model(path), CATALOG, "orin-agx")
    groups = build_groups(report)
    target = CATALOG.target("orin-agx")
    default = load_profile(target.family, prior=True)
    flat = parse_profile(default.text.replace("dwconv = 0.05", "dwconv = 0.55"), "flat.toml")
    option = Option("dla", "fp16")
    slow = LatencyModel(groups, CATALOG, target, default, io=report.io).option_ns(groups.groups[0], option)
    fast = LatencyModel(groups, CATALOG, target, flat, io=report.io).option_ns(groups.groups[0], option)
    assert slow > fast


def test_multicore_split_is_faster_for_large_convs(tmp_path):
    lm = _lm(_conv(tmp_path, c=256, hw=80), "rk3588")
    g = lm.groups.groups[0]
    assert lm.option_ns(g, Option("npu", "int8", cores=3)) < lm.option_ns(g, Option("npu", "int8", cores=1))


def test_sparsity_cuts_weight_traffic_only(tmp_path):
    node = helper.make_node("Gemm", ["x", "w"], ["y"], name="c", transB=1)
    path = save_model(tmp_path / "fc.onnx", [node], [value("x", [1, 4096])], [value("y", None)],
                      [weight("w", [4096, 4096])])
    lm = _lm(path, "rk3576")
    g = lm.groups.groups[0]
    dense = lm.option_ns(g, Option("npu", "int8"))
    assert lm.option_ns(g, Option("npu", "int8", sparsity="16:4_in_out")) <= dense


@pytest.mark.parametrize(("fmt", "precision", "shape", "expected"), [
    ("chw16", "fp16", (1, 3, 4, 4), 16 * 16 * 2),      # DLA-IO-CPAD: C 3 -> 16
    ("chw32", "int8", (1, 33, 1, 1), 64),               # C 33 -> 64
    ("dla_linear", "fp16", (1, 1, 1, 33), 64 * 2),      # DLA-IO-LINEAR-W: W 33 -> 64 elements (128 B)
    ("dla_linear", "int8", (1, 1, 1, 65), 128),         # W 65 -> 128 elements
    ("dla_hwc4", "int8", (1, 3, 2, 10), 2 * 64),        # C 3 -> 4, row 40 B -> 64 B (Orin stride)
])
def test_padded_bytes(fmt, precision, shape, expected):
    elements = 1
    for d in shape:
        elements *= d
    assert _padded_bytes(shape, elements, fmt, precision, 64) == expected


def test_hwc4_input_is_chosen_for_an_image_into_a_conv(tmp_path):
    lm = _lm(_image(tmp_path), "orin-agx")
    fmt, _ = lm.input_format("x", Option("dla", "int8"))
    assert fmt == "dla_hwc4"


def _image(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    return save_model(tmp_path / "img.onnx", [node], [value("x", [1, 3, 224, 224])], [value("y", None)],
                      [weight("w", [16, 3, 3, 3])])


def test_transfers_cost_more_for_bigger_tensors(tmp_path):
    lm = _lm(_conv(tmp_path, c=64, hw=112), "orin-agx")
    small = _lm(_conv(tmp_path, c=64, hw=14, name="s.onnx"), "orin-agx")
    assert lm.transfer("y", "dla", "gpu", "int8")[1] > small.transfer("y", "dla", "gpu", "int8")[1]


def test_shipped_profiles_are_fitted_and_their_priors_are_not():
    for family in ("nvidia-dla", "rockchip-rknn"):
        fitted, prior = load_profile(family), load_profile(family, prior=True)
        assert fitted.name == "calibrated" and "published-measurement CSV" in fitted.fitted_on
        assert fitted.targets and not prior.targets and prior.name == "prior"
    assert set(load_profile("rockchip-rknn").targets) >= {"rk3588", "rk3576", "rk3566", "rk3562", "rv1106"}
    assert set(load_profile("nvidia-dla").targets) == {"orin", "orin-nx", "xavier", "xavier-nx"}


def test_profile_validation():
    text = load_profile("nvidia-dla", prior=True).text
    with pytest.raises(BadInputError, match="efficiency"):
        parse_profile(text.replace("conv = 0.75", "conv = 1.5"), "bad.toml")
    with pytest.raises(BadInputError):
        parse_profile("not toml [", "bad.toml")


def test_batch_scales_compute_and_activations_but_reads_weights_once(tmp_path):
    path = _conv(tmp_path, c=256, hw=28)
    report = check_graph(load_model(path), CATALOG, "orin-agx")
    groups = build_groups(report)
    target = CATALOG.target("orin-agx")
    profile = load_profile(target.family)
    one, four = (LatencyModel(groups, CATALOG, target, profile, io=report.io, batch=b) for b in (1, 4))
    option = Option("gpu", "int8")
    w1, w4 = one.work(groups.groups[0], option), four.work(groups.groups[0], option)
    node = one.graph.node(groups.groups[0].anchor)
    waves = one._gpu_waves(node) / four._gpu_waves(node)  # the last wave fills differently (test_physics)
    assert w4.unit_compute_s == pytest.approx(tuple(4 * c * waves for c in w1.unit_compute_s))
    assert w4.act_bytes == 4 * w1.act_bytes
    assert w4.weight_bytes == w1.weight_bytes > 0
    assert w4.kernels == w1.kernels
    t1, t4 = one.option_ns(groups.groups[0], option), four.option_ns(groups.groups[0], option)
    assert t1 < t4 < 4 * t1  # the per-kernel overhead is paid once per batch
    assert four.transfer("y", "dla", "gpu", "int8")[1] > one.transfer("y", "dla", "gpu", "int8")[1]


def test_profile_target_sections_refit_one_target_and_its_variants(tmp_path):
    default = load_profile("rockchip-rknn", prior=True)
    text = default.text + '\n[targets.rk3566.devices.npu]\nefficiency = { conv = 0.9 }\nlayer_overhead_us = 3.0\n'
    profile = parse_profile(text, "fitted.toml")
    fitted = profile.constants("rk3566", "npu")
    assert (fitted.efficiency["conv"], fitted.layer_overhead_us) == (0.9, 3.0)
    assert fitted.efficiency["dwconv"] == default.devices["npu"].efficiency["dwconv"]  # not refitted: inherited
    assert profile.constants("rk3588", "npu") == default.devices["npu"]
    path = _conv(tmp_path, c=256, hw=28)
    for tid, changed in (("rk3566", True), ("rk3568", True), ("rk3588", False)):  # rk3568 shares rk3566's key
        report = check_graph(load_model(path), CATALOG, tid)
        groups = build_groups(report)
        target = CATALOG.target(tid)
        ns = [LatencyModel(groups, CATALOG, target, p, io=report.io).option_ns(groups.groups[0], Option("npu", "int8"))
              for p in (default, profile)]
        assert (ns[0] != ns[1]) is changed, tid
    with pytest.raises(BadInputError, match=r"\[targets.rk3566\] names devices \['gpu'\]"):
        parse_profile(default.text + '\n[targets.rk3566.devices.gpu]\nlayer_overhead_us = 3.0\n', "bad.toml")
    with pytest.raises(BadInputError, match=r"efficiency conv = 1\.5"):
        parse_profile(default.text + '\n[targets.rk3566.devices.npu]\nefficiency = { conv = 1.5 }\n', "bad.toml")
