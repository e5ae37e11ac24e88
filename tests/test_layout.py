"""The repository's layout (DESIGN.md §6): kernels/ and data/ at the top level, installed inside the
package as ``tensorqa.kernels`` and ``tensorqa.data``; a wheel built from the checkout carries them
and runs from outside it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

REPO = REPO


def test_top_level_is_the_projects_layout():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    top = {line.split("/")[0] for line in tracked.stdout.splitlines() if not line.startswith(".")}
    assert top == {"pyproject.toml", "README.md", "ARCHITECTURE.md", "tensorqa", "kernels", "benchmarks", "tests", "data"}


def test_pyproject_lists_every_package_folder():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "tensorqa").rglob("__init__.py")}
    mapped = config["package-dir"]
    assert mapped == {"tensorqa.kernels": "kernels", "tensorqa.data": "data"}
    assert set(config["packages"]) == folders | set(mapped)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(REPO),
                        "-w", str(out)], capture_output=True, text=True)
    if r.returncode != 0 and "No module named" in r.stderr:  # no setuptools in this environment
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    return next(out.glob("tensorqa-*.whl"))


def test_wheel_holds_the_kernels_and_the_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for kernel in (REPO / "kernels").glob("*.py"):
        assert f"tensorqa/kernels/{kernel.name}" in names
    for table in (REPO / "data").glob("*.tsv"):
        assert f"tensorqa/data/{table.name}" in names
    assert "tensorqa/data/charades_profile.json" in names
    assert "tensorqa/agqa/templates/frames.tsv" in names
    assert not any(n.startswith(("kernels/", "data/", "tests/", "benchmarks/")) for n in names)


def test_installed_wheel_runs_outside_the_checkout(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = ("import tensorqa, tensorqa.kernels, tensorqa.data; "
            "from tensorqa.agqa.templates import TEMPLATES; from tensorqa.engine.grid import evaluate; "
            "print(tensorqa.__file__, tensorqa.kernels.__file__, tensorqa.vocab().num_objects, len(TEMPLATES))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    pkg, kernels, objects, templates = r.stdout.split()
    assert pkg.startswith(str(target)) and kernels.startswith(str(target / "tensorqa" / "kernels"))
    assert (objects, templates) == ("36", "28")
