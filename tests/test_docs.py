"""The documentation site: the CLI page generated from the argparse parser lists every subcommand
and every option, checked against the parser's own actions (docs/hooks/cli_reference.py renders it
at build time); and, in the slow tier, ``mkdocs build --strict`` of the whole site."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from helpers import REPO

from tensorqa.cli import build_parser


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parser_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _sections(page: str) -> dict[str, str]:
    """{subcommand: its section of the page}, split at the level-2 headings."""
    parts = re.split(r"^## (\S+)\n", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_page_lists_every_subcommand_and_option():
    parser = build_parser()
    page = _hook().render(parser)
    commands = _parser_commands(parser)
    sections = _sections(page)
    assert list(sections) == list(commands)  # every subcommand, in the parser's order, and no other
    for name, sub in commands.items():
        # the first backticked word of each bullet: an option string or a positional's name
        listed = set()
        for bullet in re.findall(r"^- `([^`]+)`", sections[name], flags=re.M):
            listed |= {word for word in bullet.replace(",", " ").split() if word.startswith("-")}
        expected = {opt for a in sub._actions if not isinstance(a, argparse._HelpAction) for opt in a.option_strings}
        assert listed == expected, name
        for a in sub._actions:
            if not a.option_strings:  # positionals: named, with the usage line that shows them
                assert f"- `{a.metavar or a.dest}`" in sections[name], (name, a.dest)
        assert sub.format_usage().strip() in sections[name]


def test_cli_page_is_generated_by_the_hook():
    # docs/cli.md holds only the marker: the page's content cannot drift from the parser
    hook = _hook()
    source = (REPO / "docs" / "cli.md").read_text()
    assert hook.MARKER in source
    rendered = hook.on_page_markdown(source, None, None, None)
    assert hook.MARKER not in rendered and "## generate" in rendered


@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")
    # from the repository root: the snippets (RESULTS.md, ARCHITECTURE.md, CHANGELOG.md) are read from there
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                       cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-4000:]
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert all(f'id="{name}"' in cli for name in _parser_commands(build_parser()))
    assert (tmp_path / "site" / "img" / "show.png").is_file() and (tmp_path / "site" / "img" / "report.png").is_file()
