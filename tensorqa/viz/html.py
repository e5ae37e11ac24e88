"""Self-contained HTML pages: inline CSS, images as data URIs, no script, no external resource (the
page opens the same with no network). Written to ``<file>.partial`` and renamed."""

from __future__ import annotations

import html
import os
from pathlib import Path

from tensorqa.viz.plotting import data_uri

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; } td, th { padding: 2px 8px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; } code { background: #f4f4f4; padding: 1px 3px; }
mark { background: #fca5a5; } .note { color: #666; font-size: 0.85em; }
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def image(png: bytes, alt: str) -> str:
    return f'<img src="{data_uri(png)}" alt="{esc(alt)}">'


def table(header: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    """An HTML table; columns in ``numeric`` are right-aligned and printed with thousands separators."""
    def cell(i, x):
        if i in numeric and isinstance(x, (int, float)):
            return f'<td class="n">{x:,}</td>' if isinstance(x, int) else f'<td class="n">{x:,.3f}</td>'
        return f"<td>{esc(x)}</td>"

    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(cell(i, x) for i, x in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>\n{body}</table>"


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n")


def write_atomic(path: str | os.PathLike, content: str | bytes) -> Path:
    """Write ``content`` to ``path`` through a new ``path.partial`` (the old file survives a failure;
    a link at either name is replaced, not written through): ``outputs.write_atomic``."""
    from tensorqa.outputs import write_atomic as write

    return write(path, content)
