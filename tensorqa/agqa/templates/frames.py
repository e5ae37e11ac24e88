"""Question frames: reading ``frames.tsv`` (one row per wording of a template) and checking a
frame's placeholders against the template's slots."""

from __future__ import annotations

import re
import string
from importlib import resources

from tensorqa.errors import TensorQAError

# the placeholders a frame may use, each at most once (catalogue docstring)
FRAME_SLOTS: tuple[str, ...] = ("object", "object2", "relation", "action", "action2", "window")


# -- frame parsing -------------------------------------------------------------------------------
def frame_placeholders(text: str) -> list[str]:
    """Placeholder names of a format string, in order (repeats kept); unbalanced braces, positional
    fields, format specs and conversions raise (frames are filled by plain substitution)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise TensorQAError(f"frame {text!r}: {err}") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name or spec or conversion:
            raise TensorQAError(f"frame {text!r}: placeholders must be plain named fields like {{object}}")
        names.append(name)
    return names


def check_frame(text: str) -> list[str]:
    """Placeholders of a question frame in order; raise if it is malformed: only ``FRAME_SLOTS``, each at
    most once; a capital first letter, ``?`` last; ``{window}`` right after a word and right before
    ``?``, ``,``, ``:`` or a space (the window phrase brings its own leading space)."""
    names = frame_placeholders(text)
    unknown = [n for n in names if n not in FRAME_SLOTS]
    if unknown:
        raise TensorQAError(f"frame {text!r}: unknown placeholder(s) {unknown}; allowed: {list(FRAME_SLOTS)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TensorQAError(f"frame {text!r}: placeholder(s) {repeated} used more than once")
    if not text[:1].isupper():
        raise TensorQAError(f"frame {text!r}: must start with a capital letter")
    if not text.endswith("?"):
        raise TensorQAError(f"frame {text!r}: must end with '?'")
    if "{window}" in text and not re.search(r"[A-Za-z}]\{window\}[?,: ]", text):
        raise TensorQAError(f"frame {text!r}: {{window}} must follow a word and precede '?', ',', ':' or a space")
    return names


def read_frames(resource: str = "frames.tsv") -> dict[str, list[str]]:
    """{template: [frame, ...]} in file order, from the package's TSV."""
    text = resources.files(__package__).joinpath(resource).read_text(encoding="utf-8")
    frames: dict[str, list[str]] = {}
    header_seen = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise TensorQAError(f"{resource} line {lineno}: expected 2 tab-separated fields, got {len(fields)}")
        if not header_seen:
            if fields != ["template", "frame"]:
                raise TensorQAError(f"{resource} line {lineno}: header must be 'template<TAB>frame'")
            header_seen = True
            continue
        name, frame = fields
        try:
            check_frame(frame)
        except TensorQAError as err:
            raise TensorQAError(f"{resource} line {lineno}: {err}") from None
        frames.setdefault(name, []).append(frame)
    return frames
