"""A non-editable install into a fresh venv works and carries the catalog."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv(tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(REPO)], check=True, timeout=900)
    exe = venv / "bin" / "edgeplan"
    out = subprocess.run([str(exe), "check", str(EXAMPLES / "resnet18.onnx"), "--target", "rk3588"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import optimizer, importlib.resources as r; print(optimizer.__file__);"
                            "print(r.files('optimizer.constraints').joinpath('nvidia_dla.toml').is_file())"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout.split()
    assert str(venv) in where[0] and where[1] == "True"


def test_every_package_of_the_tree_is_installed():
    """A package missing from pyproject's list works in the editable checkout and breaks a real install."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "optimizer").rglob("__init__.py")}
    found |= {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "edgeplan").rglob("__init__.py")}
    assert found - listed == set()
