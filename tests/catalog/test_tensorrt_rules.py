"""DLA rules per TensorRT major: the seed's set (10, the default) and NVIDIA's current pages (11), each changed
rule at its boundary under both, selected by --trt in check and optimize, and recorded in the JSON."""

from __future__ import annotations

import json

import pytest

from optimizer.catalog import load_catalog
from optimizer.catalog._load import CATALOG_ENV, load_family
from optimizer.cli import main
from optimizer.errors import BadInputError
from optimizer.plan import optimize
from optimizer.plan._validate import validate_plan
from optimizer.solver import PlanRequest
from tests.catalog.test_targets import write_extra
from tests.conftest import violations
from tests.solver.conftest import chain

CATALOGS = {version: load_catalog(tensorrt=version) for version in ("10", "11")}


def test_the_seed_set_is_the_default():
    default = load_catalog()
    assert default.tensorrt == "10"
    assert [r.id for r in default.all_rules()] == [r.id for r in CATALOGS["10"].all_rules()]
    assert default.rule("DLA-LOADABLES").params["max"] == 4
    assert CATALOGS["11"].rule("DLA-LOADABLES").params["max"] == 16
    assert CATALOGS["11"].loadables_per_core() == 16 and CATALOGS["10"].loadables_per_core() is None
    for rule_id in ("DLA-DIM-MAX", "DLA-TRT11-PLATFORM"):
        assert rule_id not in {r.id for r in CATALOGS["10"].all_rules()}
        assert CATALOGS["11"].rule(rule_id).source


@pytest.mark.parametrize("version", ["10", "11"])
@pytest.mark.parametrize(("width", "over"), [(8192, False), (8193, True)])
def test_non_batch_dims(build, version, width, over):
    path = build.op("Relu", [1, 8, 2, width])
    found = "DLA-DIM-MAX" in violations(CATALOGS[version], path, "orin-agx", "fp16")
    assert found is (over and version == "11")


@pytest.mark.parametrize("version", ["10", "11"])
@pytest.mark.parametrize("channels", [8192, 8193])
def test_non_batch_dims_count_the_channels_too(build, version, channels):
    path = build.op("Relu", [2, channels, 1, 1])
    assert ("DLA-DIM-MAX" in violations(CATALOGS[version], path, "orin-agx")) is (channels > 8192 and version == "11")


@pytest.mark.parametrize("version", ["10", "11"])
@pytest.mark.parametrize(("target", "has_dla_under_11"), [
    ("orin-agx", True), ("orin-agx-30w", True), ("orin-agx-32gb", True),
    ("orin-nx", False), ("orin-nx-8gb-10w", False), ("xavier-agx", False), ("xavier-nx-15w", False),
])
def test_tensorrt_11_builds_dla_on_agx_orin_only(build, version, target, has_dla_under_11):
    path = build.conv()
    refused = "DLA-TRT11-PLATFORM" in violations(CATALOGS[version], path, target)
    assert refused is (version == "11" and not has_dla_under_11)


def _favour(tmp_path):
    from tests.solver.conftest import FAVOUR_DLA

    path = tmp_path / "favour.toml"
    path.write_text(FAVOUR_DLA)
    return str(path)


def _dla_subgraphs(plan):
    return [s for s in plan["subgraphs"] if s["device"].startswith("dla")]


@pytest.mark.parametrize(("version", "regions", "on_dla"), [
    ("10", 4, 4), ("10", 5, 4), ("11", 16, 16), ("11", 17, 16),
])
def test_loadables_per_core_on_a_one_dla_module(tmp_path, monkeypatch, version, regions, on_dla):
    """DLA-friendly regions between GPU-only ops on a 1-DLA module: the seed allows 4 loadables at once, the
    TensorRT 11 pages 16 per core; one region past the limit goes to the GPU."""
    monkeypatch.setenv(CATALOG_ENV, str(write_extra(tmp_path / "extra")))
    path = chain(tmp_path / "m.onnx", "X".join("C" * regions))
    planned = optimize(str(path), "my-one-dla", PlanRequest(tensorrt=version, deterministic_limit_s=4),
                       profile_path=_favour(tmp_path))
    assert len(_dla_subgraphs(planned.plan.to_json())) == on_dla
    assert planned.plan.tensorrt_rules == version
    assert validate_plan(planned.plan, load_catalog(tensorrt=version), str(path)) == []


def test_a_plan_past_the_per_core_limit_is_refused_under_11(tmp_path, monkeypatch):
    monkeypatch.setenv(CATALOG_ENV, str(write_extra(tmp_path / "extra")))
    path = chain(tmp_path / "m.onnx", "X".join("C" * 17))
    planned = optimize(str(path), "my-one-dla", PlanRequest(max_loadables=17, deterministic_limit_s=4),
                       profile_path=_favour(tmp_path))
    assert len(_dla_subgraphs(planned.plan.to_json())) == 17
    assert validate_plan(planned.plan, load_catalog(), str(path)) == []
    problems = validate_plan(planned.plan, load_catalog(tensorrt="11"), str(path))
    assert "DLA-LOADABLES: 17 DLA subgraphs on dla0, limit 16 per core" in problems


def test_check_and_optimize_select_the_set_and_say_so(tmp_path, capsys, build):
    path = build.op("Relu", [1, 8, 2, 8193])
    for version in ("10", "11"):
        out = tmp_path / f"check{version}.json"
        assert main(["check", str(path), "--target", "orin-agx", "--trt", version, "--json", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["tensorrt_rules"] == version
        rules = {v["rule"] for node in report["nodes"] for v in node["violations"]}
        assert ("DLA-DIM-MAX" in rules) is (version == "11")
        plan_dir = tmp_path / f"plan{version}"
        assert main(["optimize", str(path), "--target", "orin-agx", "--trt", version, "--out", str(plan_dir),
                     "--time-limit", "10"]) == 0
        plan = json.loads((plan_dir / "plan.json").read_text())
        assert plan["tensorrt_rules"] == version
        assert list(plan).index("tensorrt_rules") == list(plan).index("request") + 1
        capsys.readouterr()
        pinned = main(["optimize", str(path), "--target", "orin-agx", "--trt", version, "--pin", "n=dla0",
                       "--out", str(tmp_path / f"pinned{version}"), "--time-limit", "10"])
        assert pinned == (1 if version == "11" else 0)  # 8193 wide: no DLA under 11
        assert ("DLA-DIM-MAX" in capsys.readouterr().err) is (version == "11")
    out = tmp_path / "rk.json"
    assert main(["check", str(path), "--target", "rk3588", "--json", str(out)]) == 0
    assert "tensorrt_rules" not in json.loads(out.read_text())
    capsys.readouterr()
    assert main(["check", str(path), "--target", "orin-agx", "--trt", "12"]) == 2
    assert "--trt" in capsys.readouterr().err


def _family(second: str) -> str:
    rule = '[[rules]]\nid = "R"\nscope = "context"\nsource = "s"\nsummary = "s"\n'
    return ('family = "x"\naccelerator = "dla"\nfallback = "gpu"\n[targets]\n' + rule + 'tensorrt = ["10"]\n'
            + rule + second)


def test_one_rule_id_per_major():
    with pytest.raises(BadInputError, match="rule R appears twice"):
        load_family(_family(""), "x.toml")  # no list: every major, so 10 twice
    with pytest.raises(BadInputError, match="rule R appears twice"):
        load_family(_family('tensorrt = ["10", "11"]\n'), "x.toml")
    for version in ("10", "11"):
        family, _ = load_family(_family('tensorrt = ["11"]\n'), "x.toml", tensorrt=version)
        assert [r.tensorrt for r in family.rules] == [(version,)]
    with pytest.raises(BadInputError, match="tensorrt"):
        load_family(_family('tensorrt = ["9"]\n'), "x.toml")
    with pytest.raises(BadInputError, match="--trt"):
        load_catalog(tensorrt="9")
