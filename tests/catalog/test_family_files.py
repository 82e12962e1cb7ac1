"""The family list comes from the catalog files themselves (constraints/*.toml with the catalog schema):
load_catalog, the latency profiles, calibrate and the CLI all read it from there."""

from __future__ import annotations

from importlib import resources

import pytest

from optimizer.catalog import family_files, load_catalog
from optimizer.errors import BadInputError
from optimizer.latency._profile import profile_file

SHIPPED = {"nvidia-dla": "nvidia_dla.toml", "rockchip-rknn": "rockchip_rknn.toml"}


def _copy_shipped(folder):
    base = resources.files("optimizer.constraints")
    for entry in base.iterdir():
        if entry.name.endswith(".toml"):
            (folder / entry.name).write_text(entry.read_text(encoding="utf-8"), encoding="utf-8")


def test_the_shipped_families_are_the_catalog_files():
    assert dict(family_files()) == SHIPPED
    assert sorted(load_catalog().families) == sorted(SHIPPED)
    assert profile_file("nvidia-dla") == "latency_nvidia_dla.toml"
    assert profile_file("rockchip-rknn", prior=True) == "latency_rockchip_rknn.prior.toml"


def test_a_new_catalog_file_is_a_new_family_and_other_toml_files_are_not(tmp_path):
    _copy_shipped(tmp_path)  # latency profiles and trtexec_flags.toml beside the family files
    text = (tmp_path / "rockchip_rknn.toml").read_text(encoding="utf-8")
    (tmp_path / "rockchip_rknn3.toml").write_text(text.replace('family = "rockchip-rknn"', 'family = "rockchip-rknn3"'),
                                                  encoding="utf-8")
    assert dict(family_files(tmp_path)) == {**SHIPPED, "rockchip-rknn3": "rockchip_rknn3.toml"}
    (tmp_path / "rockchip_rknn3.toml").unlink()
    assert load_catalog(tmp_path).sha256 == load_catalog().sha256  # the same files, in the same order


def test_a_family_defined_twice_or_unnamed_is_refused(tmp_path):
    _copy_shipped(tmp_path)
    (tmp_path / "copy.toml").write_text((tmp_path / "nvidia_dla.toml").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(BadInputError, match="family 'nvidia-dla' is also defined in"):
        family_files(tmp_path)
    (tmp_path / "copy.toml").write_text('schema = "edgeplan.catalog/v1"\n', encoding="utf-8")
    with pytest.raises(BadInputError, match=r"copy\.toml: catalog invalid: a catalog file must name its family"):
        family_files(tmp_path)


def test_an_unknown_family_has_no_profile():
    with pytest.raises(BadInputError, match="unknown family tpu-edge"):
        profile_file("tpu-edge")


def test_the_catalog_is_parsed_once_per_content_and_again_after_an_edit(tmp_path):
    """Every command loads the catalog first; in one process (a batch, the API) the same files are not parsed
    twice, and an edited file is never served from the earlier parse."""
    _copy_shipped(tmp_path)
    first = load_catalog(tmp_path)
    assert load_catalog(tmp_path) is first
    rknn = tmp_path / "rockchip_rknn.toml"
    rknn.write_text(rknn.read_text(encoding="utf-8").replace('id = "RKNN-RECT-WINDOW"', 'id = "RKNN-RECT-WINDOWS"'),
                    encoding="utf-8")
    edited = load_catalog(tmp_path)
    assert edited is not first and edited.sha256 != first.sha256
    assert "RKNN-RECT-WINDOWS" in {rule.id for rule in edited.families["rockchip-rknn"].rules}
    assert "RKNN-RECT-WINDOWS" not in {rule.id for rule in first.families["rockchip-rknn"].rules}
