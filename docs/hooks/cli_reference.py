"""MkDocs hook: the CLI reference page is rendered from ``tensorqa.cli.build_parser()`` at build time,
so it lists exactly the subcommands and flags ``tensorqa --help`` shows (never a hand-kept copy).

``docs/cli.md`` holds the marker ``<!-- cli-reference -->``; :func:`render` replaces it with one
section per subcommand: its help, its usage line and every argument with its help and default.
``tests/test_docs.py`` checks the output against the parser's own actions."""

from __future__ import annotations

import argparse

MARKER = "<!-- cli-reference -->"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """{name: (subparser, its one-line help)} in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _escape(text: str) -> str:
    # help strings are plain text: keep Markdown from reading <...>, *, _ or | in them
    for ch in ("\\", "`", "*", "_", "<", ">", "|", "["):
        text = text.replace(ch, "\\" + ch)
    return text


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or (action.dest.upper() if not action.choices else "{" + ",".join(map(str, action.choices)) + "}")
            metavar = " ".join(metavar) if isinstance(metavar, tuple) else metavar
            names += f" {metavar}"
    else:
        names = action.metavar or action.dest
    line = f"- `{names}`"
    help_text = (action.help or "").replace("%(default)s", str(action.default)).replace("%(prog)s", "tensorqa")
    if help_text and help_text != argparse.SUPPRESS:
        line += ": " + _escape(" ".join(help_text.split()))
    if action.choices and action.option_strings:
        line += f" (one of {', '.join(f'`{c}`' for c in action.choices)})"
    default = action.default
    if (action.option_strings and action.nargs != 0 and default not in (None, argparse.SUPPRESS, False)
            and "default" not in (action.help or "")):
        line += f" (default `{default}`)"
    return line


def render(parser: argparse.ArgumentParser) -> str:
    """Markdown for every subcommand of ``parser``."""
    out = ["Every command, generated from the argparse parser when the site is built.", "",
           "```text", parser.format_usage().strip(), "```", ""]
    subs = _subcommands(parser)
    out += ["| command | what it does |", "|---|---|"]
    out += [f"| [`{name}`](#{name}) | {_escape(help_)} |" for name, (_, help_) in subs.items()]
    out.append("")
    for name, (sub, help_) in subs.items():
        out += [f"## {name}", "", _escape(help_), "", "```text", sub.format_usage().strip(), "```", ""]
        args = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        positional = [a for a in args if not a.option_strings]
        options = [a for a in args if a.option_strings]
        if positional:
            out += ["**Arguments**", ""] + [_argument(a) for a in positional] + [""]
        if options:
            out += ["**Options**", ""] + [_argument(a) for a in options] + [""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from tensorqa.cli import build_parser

    return markdown.replace(MARKER, render(build_parser()))
