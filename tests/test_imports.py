"""How the package's modules use each other: no module reaches into another's private names
(a leading underscore is a module's own business; what others need is public)."""

from __future__ import annotations

import ast
from helpers import REPO


def _private_uses(source: str, name: str) -> list[str]:
    """`from tensorqa.x import _y` and `x._y` where x names an imported tensorqa module."""
    tree = ast.parse(source, name)
    modules: set[str] = set()  # local names bound to tensorqa modules
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tensorqa"):
                    modules.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorqa"):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{name}:{node.lineno}: from {node.module} import {a.name}")
                else:
                    modules.add(a.asname or a.name)  # may be a module (from tensorqa import outputs)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    found = [use for path in sorted((REPO / "tensorqa").rglob("*.py"))
             for use in _private_uses(path.read_text(), str(path.relative_to(REPO)))]
    assert found == []


def test_the_check_sees_both_forms():
    source = ("from tensorqa.outputs import _INPUTS\nfrom tensorqa import outputs\nimport tensorqa.limits as lim\n"
              "print(outputs._INPUTS, lim._X, outputs.__name__, outputs.publish)\n")
    assert _private_uses(source, "probe.py") == ["probe.py:1: from tensorqa.outputs import _INPUTS",
                                                 "probe.py:4: outputs._INPUTS", "probe.py:4: lim._X"]
