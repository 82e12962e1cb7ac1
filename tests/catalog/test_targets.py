"""Targets as data: accelerator cores per target (0, 1 or 2 DLA), power modes, extra target files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from optimizer.catalog import load_catalog
from optimizer.catalog._load import CATALOG_ENV, load_family
from optimizer.errors import BadInputError

GPU_ONLY = """
family = "nvidia-dla"
[sources]
mine = "a test module"
[targets.my-gpu-only]
name = "Test GPU-only Jetson"
generation = "orin"
calibration = "orin"
devices = ["gpu"]
precisions = { gpu = ["int8", "fp16", "fp32"] }
[targets.my-gpu-only.figures]
gpu_int8_tops = { value = 20.0, unit = "TOPS", source = "mine", assumed = true }
gpu_fp16_tops = { value = 10.0, unit = "TFLOPS", source = "mine", assumed = true }
gpu_fp32_tops = { value = 1.0, unit = "TFLOPS", source = "mine", assumed = true }
dram_gbps = { value = 68.0, unit = "GB/s", source = "mine", assumed = true }
"""

ONE_DLA = """
family = "nvidia-dla"
[targets.my-one-dla]
name = "Test 1-DLA Jetson"
generation = "orin"
calibration = "orin"
devices = ["gpu", "dla0"]
precisions = { gpu = ["int8", "fp16", "fp32"], dla = ["int8", "fp16"] }
[targets.my-one-dla.figures]
gpu_int8_tops = { value = 20.0, unit = "TOPS", source = "mine", assumed = true }
gpu_fp16_tops = { value = 10.0, unit = "TFLOPS", source = "mine", assumed = true }
gpu_fp32_tops = { value = 1.0, unit = "TFLOPS", source = "mine", assumed = true }
dla_int8_tops = { value = 10.0, unit = "TOPS", source = "mine", assumed = true }
dla_fp16_tops = { value = 2.5, unit = "TFLOPS", source = "mine", assumed = true }
dram_gbps = { value = 102.4, unit = "GB/s", source = "mine", assumed = true }
dla_sram_bytes = { value = 1048576, unit = "B", source = "mine" }
dla_cores = { value = 1, unit = "cores", source = "mine" }
"""


def write_extra(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gpu_only.toml").write_text(GPU_ONLY)
    (folder / "one_dla.toml").write_text(ONE_DLA)
    return folder


@pytest.mark.parametrize(("target", "cores", "devices"), [
    ("orin-agx", 2, ("gpu", "dla0", "dla1")), ("orin-nx", 2, ("gpu", "dla0", "dla1")),
    ("orin-nx-8gb", 1, ("gpu", "dla0")), ("orin-nx-8gb-10w", 1, ("gpu", "dla0")),
    ("orin-nano-8gb", 0, ("gpu",)), ("orin-nano-4gb", 0, ("gpu",)), ("orin-nano-super", 0, ("gpu",)),
    ("xavier-nx", 2, ("gpu", "dla0", "dla1")), ("rk3588", 3, ("npu", "cpu")), ("rk3566", 1, ("npu", "cpu")),
])
def test_accelerator_cores_come_from_the_target(catalog, target, cores, devices):
    t = catalog.target(target)
    assert (t.cores, t.devices, t.has_accelerator) == (cores, devices, cores > 0)
    assert ("dla" in t.precisions or "npu" in t.precisions) is (cores > 0)
    if t.accelerator == "dla":
        assert t.accelerator_devices == tuple(f"dla{k}" for k in range(cores))
        assert ("dla_cores" not in t.figures) or t.figure("dla_cores") == cores


def test_every_jetson_module_a_user_can_buy_is_a_target(catalog):
    ids = set(catalog.targets)
    assert {"orin-nano-4gb", "orin-nano-8gb", "orin-nano-super", "orin-nx-8gb", "orin-nx", "orin-agx",
            "orin-agx-32gb", "orin-agx-industrial", "xavier-nx", "xavier-agx"} <= ids
    for tid in ids:
        t = catalog.targets[tid]
        if t.family == "nvidia-dla":
            for name, figure in t.figures.items():
                assert figure.source, (tid, name)
            assert {"gpu_int8_tops", "gpu_fp16_tops", "gpu_fp32_tops", "dram_gbps"} <= set(t.figures), tid
            if t.has_accelerator:
                assert {"dla_int8_tops", "dla_fp16_tops", "dla_sram_bytes"} <= set(t.figures), tid


@pytest.mark.parametrize("modes", [
    ("orin-nano-super", "orin-nano-super-25w", "orin-nano-super-15w", "orin-nano-8gb", "orin-nano-8gb-7w"),
    ("orin-nx", "orin-nx-25w", "orin-nx-15w", "orin-nx-10w"),
    ("orin-nx-8gb", "orin-nx-8gb-20w", "orin-nx-8gb-15w", "orin-nx-8gb-10w"),
    ("orin-agx-32gb", "orin-agx-32gb-40w", "orin-agx-32gb-30w", "orin-agx-32gb-15w"),
    ("xavier-agx", "xavier-agx-30w", "xavier-agx-15w", "xavier-agx-10w"),
    ("xavier-nx", "xavier-nx-15w", "xavier-nx-10w"),
])
def test_power_modes_only_lower_the_gpu_peak_and_keep_the_module(catalog, modes):
    targets = [catalog.target(t) for t in modes]
    peaks = [t.figure("gpu_int8_tops") for t in targets]
    assert peaks == sorted(peaks, reverse=True)
    assert len({(t.devices, t.calibration, t.generation) for t in targets}) == 1


def test_emc_caps_set_the_bandwidth_of_new_modes(catalog):
    """LPDDR5 bytes/s = EMC clock x 2 transfers x bus bytes (128-bit modules: 16 B)."""
    for tid, bus_bytes in (("orin-nx-10w", 16), ("orin-nx-8gb-10w", 16), ("orin-nano-super-15w", 16),
                           ("orin-nano-super", 16), ("orin-nano-4gb-super", 8), ("orin-agx-32gb-15w", 32),
                           ("xavier-agx", 32), ("xavier-agx-15w", 32), ("xavier-agx-10w", 32), ("xavier-nx", 16),
                           ("xavier-nx-10w", 16)):
        t = catalog.target(tid)
        assert t.figure("dram_gbps") == pytest.approx(t.figure("emc_mhz") * 2 * bus_bytes / 1000, rel=0.01), tid


def test_extra_target_files_add_targets_from_toml_alone(tmp_path, monkeypatch):
    base = load_catalog()
    extra = load_catalog(extra_dir=write_extra(tmp_path / "extra"))
    assert set(extra.targets) - set(base.targets) == {"my-gpu-only", "my-one-dla"}
    assert extra.target("my-gpu-only").cores == 0 and extra.target("my-one-dla").cores == 1
    assert extra.sha256 != base.sha256
    assert extra.families["nvidia-dla"].sources["mine"] == "a test module"
    monkeypatch.setenv(CATALOG_ENV, str(tmp_path / "extra"))
    assert load_catalog().sha256 == extra.sha256


@pytest.mark.parametrize(("text", "message"), [
    (ONE_DLA.replace('"dla0"]', '"dla1"]'), "dla engines must be dla0..dla0"),
    (ONE_DLA.replace("value = 1, unit", "value = 2, unit"), "dla_cores = 2 but it lists 1"),
    (ONE_DLA.replace('devices = ["gpu", "dla0"]', 'devices = ["gpu"]'), "dla precisions must be given exactly"),
    (GPU_ONLY.replace('devices = ["gpu"]', 'devices = ["gpu", "npu"]'), "only gpu, dla or dla0.. are known"),
    (ONE_DLA.replace("my-one-dla", "orin-agx"), "target orin-agx is already defined in nvidia_dla.toml"),
    (GPU_ONLY.replace('family = "nvidia-dla"', 'family = "tpu"'), "family 'tpu' is not one of"),
    (GPU_ONLY + '\n[[rules]]\nid = "X"\n', "adds [targets.*] only (found ['rules'])"),
])
def test_bad_extra_target_files_are_refused_with_the_file_named(tmp_path, text, message):
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(BadInputError, match=re.escape(message)) as info:
        load_catalog(extra_dir=tmp_path)
    assert "bad.toml" in info.value.one_line()


def test_npu_cores_in_features_and_figures_must_agree():
    text = (Path(__file__).parents[2] / "constraints" / "rockchip_rknn.toml").read_text()
    text = text.replace('npu_cores = { value = 3, unit = "cores"', 'npu_cores = { value = 2, unit = "cores"')
    with pytest.raises(BadInputError, match="target rk3588 figure npu_cores = 2 but its features say 3"):
        load_family(text, "rockchip_rknn.toml")


def test_a_missing_extra_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(BadInputError, match="not a folder"):
        load_catalog(extra_dir=tmp_path / "nope")
