"""An evaluated grid (``AnswerGrid``): the answer and definedness of every cell of a skeleton's slot
grid for a batch, with the axis values that name each cell, and the words and program text of a
cell (``action_word``, ``answer_text``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from tensorqa.engine.primitives.localize import Windows
from tensorqa.agqa.program import Node, Word, localize as localize_node
from tensorqa.agqa.semantics import AGQA, Semantics
from tensorqa.errors import TensorQAError
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.windows import WINDOW_KINDS

YES, NO = 1, 0
ANSWER_KINDS = ("yes/no", "before/after", "object", "action")


@dataclass
class AnswerGrid:
    """Answers of one skeleton for every cell of its slot grid, for every video of a batch.

    Dimension 0 is "video" without a window slot, else "window": the offered windows of all videos,
    video by video (flat: padding per video would make the two-object grids ~5x larger; ``padded()``
    gives that layout). The other dimensions are compact per-video slot axes padded to the batch maximum.

    answer:  int64[n0, *n]  0/1 = no/yes, 0/1 = before/after, or an object or action class
    defined: bool[n0, *n]   the program has an answer there; ``answer`` is meaningless elsewhere
    real:    bool[n0, *n]   the cell's slot values exist (not padding of a compact axis)
    axes:    "video" or "window", then the pattern's slot names; video: int64[n0] batch position
    values:  "window" -> int64[n0] window position on ``windows``; other axes -> int64[B, n] ids (-1 padding)

    Grids evaluated with one :class:`GridContext` may share tensors (``real``, ``video``, and
    ``defined`` where it is ``real``): treat them as read-only."""

    answer: torch.Tensor
    defined: torch.Tensor
    real: torch.Tensor
    axes: tuple[str, ...]
    video: torch.Tensor
    values: dict[str, torch.Tensor]
    windows: Windows | None
    answer_kind: str
    shape: str
    skeleton: str
    pattern: Node
    video_ids: tuple[str, ...]
    semantics: Semantics = field(repr=False, default=AGQA)

    def to(self, device: str | torch.device) -> "AnswerGrid":
        """The same grid with its tensors on ``device``."""
        return replace(self, answer=self.answer.to(device), defined=self.defined.to(device),
                       real=self.real.to(device), video=self.video.to(device),
                       values={k: t.to(device) for k, t in self.values.items()},
                       windows=None if self.windows is None else self.windows.to(device))

    def padded(self) -> "AnswerGrid":
        """The grid with dimension 0 split into (video, window) [B, W, ...] as ``Windows`` lays them
        out (padding cells not real); a grid without a window axis as is."""
        if self.axes[0] != "window":
            return self
        B, W = self.windows.valid.shape
        rows = (self.video, self.values["window"])

        def scatter(t: torch.Tensor, fill) -> torch.Tensor:
            out = torch.full((B, W, *t.shape[1:]), fill, dtype=t.dtype, device=t.device)
            out[rows] = t
            return out

        pos = torch.arange(W, device=self.video.device).expand(B, W)
        values = dict(self.values, window=torch.where(self.windows.valid, pos, -1))
        return replace(self, answer=scatter(self.answer, 0), defined=scatter(self.defined, False),
                       real=scatter(self.real, False), axes=("video",) + self.axes,
                       video=torch.arange(B, device=self.video.device), values=values)

    def cells(self) -> torch.Tensor:
        """int64[M, len(axes)]: indices of the defined cells."""
        return self.defined.nonzero()

    def axis_ids(self, name: str) -> torch.Tensor:
        """int64, broadcastable to the grid: each cell's id on axis ``name``."""
        d = self.axes.index(name)
        shape = [1] * self.answer.dim()
        if d == 0:
            ids = self.values[name] if name == "window" else self.video
            shape[0] = ids.shape[0]
            return ids.reshape(shape)
        ids = self.values[name][self.video]  # [n0, n]
        shape[0], shape[d] = ids.shape
        return ids.reshape(shape)

    def slot_values(self, cell: tuple[int, ...]) -> dict[str, Node]:
        """The pattern's slot fillers (program nodes) of one cell (indices along ``axes``)."""
        v = vocab()
        b = int(self.video[int(cell[0])])
        out: dict[str, Node] = {}
        for d, (name, i) in enumerate(zip(self.axes, cell)):
            if name == "video":
                continue
            value = int(self.values[name][int(i)]) if d == 0 else int(self.values[name][b, int(i)])
            if value < 0:
                raise TensorQAError(f"grid: cell {tuple(int(c) for c in cell)} is padding on axis {name!r}")
            if name == "window":
                out[name] = _window_node(self.windows, b, value)
            elif name.startswith("object"):
                out[name] = Word(v.object_english[value])
            elif name.startswith("relation"):
                out[name] = Word(v.relation_english[value])
            else:
                out[name] = Word(action_word(value))
        return out

    def program(self, cell: tuple[int, ...]) -> str:
        """The AGQA program text of one cell."""
        return str(self.pattern.substitute(self.slot_values(cell)))

    def english(self, cell: tuple[int, ...]) -> str:
        """The released answer string of one cell (meaningful where defined)."""
        return answer_text(self.answer_kind, int(self.answer[tuple(int(c) for c in cell)]))

    def decode(self, cell: tuple[int, ...]) -> tuple[str, str | None]:
        """(program text, English answer or None where undefined) of one cell."""
        c = tuple(int(x) for x in cell)
        return self.program(c), (self.english(c) if bool(self.defined[c]) else None)

    def video_id(self, cell: tuple[int, ...]) -> str:
        """The id of the video a cell belongs to."""
        return self.video_ids[int(self.video[int(cell[0])])]


def action_word(a: int) -> str:
    """A program's word for action class ``a``: its phrase, or its Charades id where the phrase
    names the class it is merged into."""
    v = vocab()
    phrase = v.action_phrases[a]
    return phrase if v.action_index(phrase) == a else v.actions[a]


def answer_text(kind: str, value: int) -> str:
    v = vocab()
    if kind == "yes/no":
        return "yes" if value == YES else "no"
    if kind == "before/after":
        return "before" if value == 0 else "after"
    if kind == "object":
        return v.object_english[value]
    return v.action_phrases[value]


def _window_node(windows: Windows, b: int, w: int) -> Node:
    word = WINDOW_KINDS[int(windows.word[b, w])]
    x, y = (int(a) for a in windows.action[b, w])
    if word == "video":
        return localize_node("video", "")
    if word == "between":
        return localize_node("between", Word(action_word(x)), Word(action_word(y)))
    return localize_node(word, Word(action_word(x)))
