"""The catalog itself: every digest rule present, every op real, every limit sourced."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest

from optimizer.catalog import CHECKS, load_catalog
from optimizer.catalog._load import load_family
from optimizer.errors import BadInputError
from tests.conftest import SHARED

TARGET_IDS = {"orin-agx", "orin-nx", "xavier-agx", "xavier-nx", "rk3588", "rk3576", "rk3566", "rk3568",
              "rk3562", "rv1126b", "rv1106", "rv1103"}
MODULE_IDS = {"orin-nano-8gb", "orin-nano-4gb", "orin-nx-8gb"}  # issue 12: GPU-only and one-DLA modules
DIGEST = SHARED / "spec" / "hardware-rules.md"


def digest_ids() -> set[str]:
    return set(re.findall(r"^- ((?:DLA|RKNN)-[A-Z0-9-]+):", DIGEST.read_text(), flags=re.M))


@pytest.mark.skipif(not DIGEST.exists(), reason="../shared/spec is not present")
def test_every_digest_rule_is_in_the_catalog(catalog):
    ids = {r.id for r in catalog.all_rules()}
    assert len(digest_ids()) >= 70
    assert digest_ids() - ids == set()


@pytest.mark.skipif(not DIGEST.exists(), reason="../shared/spec is not present")
def test_rules_beyond_the_digest_are_marked_new(catalog):
    for rule in catalog.all_rules():
        assert rule.new is (rule.id not in digest_ids()), rule.id


def test_targets_are_the_spec_ids(catalog):
    assert {t.id for t in catalog.targets.values() if not t.base} == TARGET_IDS | MODULE_IDS


def test_variants_share_their_base_rules_and_differ_only_in_figures(catalog):
    variants = [t for t in catalog.targets.values() if t.base]
    assert {"orin-agx-50w", "orin-agx-30w", "orin-agx-15w", "orin-agx-32gb", "orin-nano-super"} <= \
        {t.id for t in variants}
    for variant in variants:
        base = catalog.targets[variant.base]
        assert (variant.generation, variant.devices, variant.calibration, variant.cores) == \
            (base.generation, base.devices, base.calibration, base.cores)
        assert variant.features["power_mode"]
        assert variant.figures != base.figures
    modes = [catalog.targets[t].figure("dla_int8_tops") for t in ("orin-agx", "orin-agx-50w", "orin-agx-30w",
                                                                   "orin-agx-15w")]
    assert modes == sorted(modes, reverse=True)
    assert catalog.targets["orin-agx-15w"].figure("dram_gbps") == catalog.targets["orin-agx"].figure("dram_gbps")


def test_a_variant_of_an_unknown_base_is_refused(tmp_path):
    text = (Path(__file__).parents[2] / "constraints" / "nvidia_dla.toml").read_text()
    text = text.replace('base = "orin-agx"\nname = "Jetson AGX Orin 64GB (15W', 'base = "orin-nano"\nname = "Jetson AGX Orin 64GB (15W')
    with pytest.raises(BadInputError, match="orin-agx-15w names base 'orin-nano'"):
        load_family(text, "nvidia_dla.toml")


def test_every_op_name_exists_in_onnx_defs(catalog):
    for family in catalog.families.values():
        for op in [*family.layer_kinds, *family.op_support]:
            assert onnx.defs.has(op), f"{family.name}: {op} is not an ONNX op"
        for rule in family.rules:
            for op in rule.params.get("ops", ()):
                assert onnx.defs.has(op), f"{rule.id}: {op}"


def test_every_rule_and_figure_cites_a_source(catalog):
    for rule in catalog.all_rules():
        assert len(rule.source) > 15, rule.id
        assert rule.summary, rule.id
    for target in catalog.targets.values():
        for name, figure in target.figures.items():
            assert figure.source, f"{target.id}.{name}"
        for op in catalog.family_of(target).op_support.values():
            assert op.source, op.op


def test_node_rules_name_registered_checks(catalog):
    for rule in catalog.all_rules():
        if rule.scope == "node":
            assert rule.check in CHECKS, rule.id


def test_every_target_has_the_figures_the_planner_needs(catalog):
    for target in catalog.targets.values():
        acc = target.accelerator if target.has_accelerator else target.fallback  # GPU-only Jetsons
        assert f"{acc}_int8_tops" in target.figures and "dram_gbps" in target.figures
        for precision in target.precisions[acc]:
            assert f"{acc}_{precision}_tops" in target.figures, (target.id, precision)


def test_dla_sram_differs_orin_xavier(catalog):
    assert catalog.target("orin-agx").figure("dla_sram_bytes") == 1 << 20
    assert catalog.target("xavier-agx").figure("dla_sram_bytes") == 4 << 20


def test_catalog_hash_names_the_catalog_bytes(tmp_path):
    """Same files, same hash in any process; one changed byte in any catalog file, another hash (studies and
    batch keys rely on it to notice a changed catalog)."""
    import subprocess
    import sys
    from importlib import resources
    installed = load_catalog().sha256
    base = resources.files("optimizer.constraints")
    from optimizer.catalog import family_files
    names = sorted(family_files().values())
    for name in names:
        (tmp_path / name).write_text((base / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert load_catalog(tmp_path).sha256 == installed
    for seed in ("1", "2"):
        other = subprocess.run([sys.executable, "-c", "from optimizer.catalog import load_catalog;"
                                "print(load_catalog().sha256)"], capture_output=True, text=True, check=True,
                               env={**__import__("os").environ, "PYTHONHASHSEED": seed})
        assert other.stdout.strip() == installed
    changed = set()
    for name in names:
        original = (tmp_path / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(original + "\n# one more line\n", encoding="utf-8")
        try:
            changed.add(load_catalog(tmp_path).sha256)
        finally:
            (tmp_path / name).write_text(original, encoding="utf-8")
    assert installed not in changed and len(changed) == len(names)


def test_a_broken_catalog_fails_at_load(tmp_path):
    from importlib import resources
    base = resources.files("optimizer.constraints")
    for name in ("nvidia_dla.toml", "rockchip_rknn.toml"):
        (tmp_path / name).write_text((base / name).read_text())
    text = (tmp_path / "nvidia_dla.toml").read_text().replace('check = "cbuf"', 'check = "no_such_check"')
    (tmp_path / "nvidia_dla.toml").write_text(text)
    with pytest.raises(BadInputError, match="no_such_check"):
        load_catalog(tmp_path)


def test_the_rules_that_refuse_a_whole_model_say_so(catalog):
    """benchmarks/rknn_placement.py counts a toolkit refusal as foreseen only through these rules."""
    refusing = {r.id for family in catalog.families.values() for r in family.rules if r.refuses}
    assert refusing == {"RKNN-BN-TRAINING", "RKNN-RNN-LAYOUT", "RKNN-STATIC", "RKNN-DATA-DEP", "RKNN-CAST-UINT8",
                        "RKNN-CAST-INT8", "RKNN-EMPTY-TENSOR", "RKNN-MAXPOOL-3D"}
