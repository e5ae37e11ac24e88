"""The repository's layout (docs/architecture.md, "Layout"): kernels/ and data/ at the top level, installed inside the
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
    # the design card's layout, plus the ecosystem's usual additions: the documentation site (docs/,
    # mkdocs.yml), the licence and the changelog
    assert top == {"pyproject.toml", "README.md", "ARCHITECTURE.md", "tensorqa", "kernels", "benchmarks", "tests", "data",
                   "docs", "mkdocs.yml", "LICENSE", "CHANGELOG.md"}


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


@pytest.mark.slow  # builds a wheel
def test_wheel_holds_the_kernels_and_the_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for kernel in (REPO / "kernels").glob("*.py"):
        assert f"tensorqa/kernels/{kernel.name}" in names
    for table in (REPO / "data").glob("*.tsv"):
        assert f"tensorqa/data/{table.name}" in names
    assert "tensorqa/data/charades_profile.json" in names
    assert "tensorqa/agqa/templates/frames.tsv" in names
    # CLEVR 1.0's definition, shipped with its licence: the 9 template files, synonyms, function catalogue
    clevr = {n for n in names if n.startswith("tensorqa/data/clevr/")}
    assert {f"tensorqa/data/clevr/{f}" for f in ("LICENSE", "README.md", "metadata.json", "synonyms.json")} <= clevr
    assert len({n for n in clevr if n.startswith("tensorqa/data/clevr/CLEVR_1.0_templates/")}) == 9
    assert not any(n.startswith(("kernels/", "data/", "tests/", "benchmarks/")) for n in names)


@pytest.mark.slow  # builds and installs a wheel
def test_installed_wheel_runs_outside_the_checkout(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = ("import tensorqa, tensorqa.kernels, tensorqa.data; "
            "from tensorqa.agqa.templates import TEMPLATES; from tensorqa.agqa.grid import evaluate; "
            "from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR, load_templates; "
            "print(tensorqa.__file__, tensorqa.kernels.__file__, tensorqa.vocab().num_objects, len(TEMPLATES), "
            "len(load_templates(DEFAULT_TEMPLATES_DIR)))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    pkg, kernels, objects, templates, clevr_families = r.stdout.split()
    assert pkg.startswith(str(target)) and kernels.startswith(str(target / "tensorqa" / "kernels"))
    assert (objects, templates, clevr_families) == ("36", "28", "90")


def test_no_import_cycle():
    # every import of the package and the kernels, at module level or inside functions: a graph
    # without cycles (a module's own ancestors, which Python imports first, are not edges)
    import ast

    mods = {}
    for p in [*(REPO / "tensorqa").rglob("*.py"), *(REPO / "kernels").rglob("*.py")]:
        parts = list(p.relative_to(REPO).with_suffix("").parts)
        parts = ["tensorqa", *parts] if parts[0] == "kernels" else parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph = {}
    for m, p in mods.items():
        deps = set()
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("tensorqa"):
                subs = {f"{n.module}.{a.name}" for a in n.names} & mods.keys()
                deps |= subs | ({n.module} if len(subs) < len(n.names) else set())
            elif isinstance(n, ast.Import):
                deps |= {a.name for a in n.names}
        graph[m] = {d for d in deps & mods.keys() if d != m and not m.startswith(d + ".")}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            assert state.get(d) != 1, " -> ".join(path[path.index(d):] + [m, d]) if d in path else f"{m} -> {d}"
            if d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
