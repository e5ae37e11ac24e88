"""The engine knows no benchmark: no module under tensorqa/engine imports tensorqa.agqa, .clevr,
.foils or .decomp, at the top or inside a function (imports read with ast, not by running them)."""

from __future__ import annotations

import ast

from helpers import REPO

BENCHMARKS = ("tensorqa.agqa", "tensorqa.clevr", "tensorqa.foils", "tensorqa.decomp")


def _benchmark_imports(source: str, name: str) -> list[str]:
    """Every import of a benchmark package in ``source``, wherever it stands (module level, function
    body, ``if TYPE_CHECKING``), as ``name:line: module``; relative imports resolve against ``name``."""
    package = name.removesuffix(".py").replace("/", ".").rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # `from tensorqa import agqa` names the package in its aliases
            modules = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for module in modules:
            if any(module == b or module.startswith(b + ".") for b in BENCHMARKS):
                found.append(f"{name}:{node.lineno}: {module}")
                break
    return found


def test_engine_imports_no_benchmark():
    engine = REPO / "tensorqa" / "engine"
    paths = sorted(engine.rglob("*.py"))
    assert len(paths) > 10  # the walk found the engine
    found = [hit for path in paths
             for hit in _benchmark_imports(path.read_text(), str(path.relative_to(REPO)))]
    assert found == []


def test_the_check_sees_every_form():
    source = ("import tensorqa.clevr.keys\n"
              "from tensorqa import foils\n"
              "from tensorqa.scenes import batch\n"
              "def f():\n    from tensorqa.agqa.semantics import AGQA\n"
              "if False:\n    from ...decomp import video\n"
              "from tensorqa.agqa_like import x\n")
    assert _benchmark_imports(source, "tensorqa/engine/scalar/probe.py") == [
        "tensorqa/engine/scalar/probe.py:1: tensorqa.clevr.keys",
        "tensorqa/engine/scalar/probe.py:2: tensorqa.foils",
        "tensorqa/engine/scalar/probe.py:5: tensorqa.agqa.semantics",
        "tensorqa/engine/scalar/probe.py:7: tensorqa.decomp",
    ]
