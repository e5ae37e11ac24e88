"""AGQA programs as typed trees: parse AGQA's program syntax, print it back, fill skeleton slots.

Syntax (AGQA 2.0's ``program`` field), e.g.
``Exists(blanket, Iterate(Localize(while, holding a pillow), Filter(frame, [objects])))``:
``Name(args)`` is a :class:`Call` of one of ``FUNCTIONS``, ``[a, b]`` :class:`Items`, ``<name>``
a skeleton's :class:`Slot`, anything else a :class:`Word` (a ``KEYWORDS`` entry or a vocabulary
word, spaces allowed: only ``( ) [ ] ,`` delimit). ``str(parse_program(p)) == p`` for every
program AGQA prints; ``Localize(between, X, Y)`` is accepted beside AGQA's
``Localize(between, [X, Y])``. Errors name the 0-based position of the offending text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from tensorqa.errors import TensorQAError
from tensorqa.engine.windows import LOCALIZE_WORDS
from tensorqa.scenes.vocab import vocab

# name -> allowed argument counts (AGQA README function table, STAIR's arity table; ToAction and
# Subtract are used by the real programs; Localize takes 3 only in the form Localize(between, X, Y)).
FUNCTIONS: dict[str, tuple[int, ...]] = {
    "AND": (2,), "XOR": (2,), "Choose": (3,), "Compare": (2,), "Equals": (2,), "Exists": (2,),
    "Filter": (2,), "HasItem": (1,), "Iterate": (2,), "IterateUntil": (4,), "Localize": (2, 3),
    "OnlyItem": (1,), "Query": (2,), "Subtract": (2,), "Superlative": (3,), "ToAction": (2,),
}

KEYWORDS: frozenset[str] = frozenset({
    "frame", "video", "objects", "relations", "relation", "actions", "action", "class",
    "forward", "backward", "before", "after", "while", "between", "temporal tag",
    "max", "min", "start", "end",
})


_SLOT = re.compile(r"<([A-Za-z_]+[0-9]*)>")
_DELIMS = "()[],"


# -- nodes ------------------------------------------------------------------------------------------
class Node:
    """A program tree node: immutable, compared by structure."""

    def substitute(self, slot_values: Mapping[str, "Node | str"]) -> "Node":
        """Fill slots: ``slot_values`` maps a slot name (``"object"`` or ``"<object>"``) to a Node
        or to program text (parsed; a bare word becomes a :class:`Word`). Unfilled slots stay."""
        values = {}
        for key, value in slot_values.items():
            name = key[1:-1] if key.startswith("<") and key.endswith(">") else key
            values[name] = parse_program(value) if isinstance(value, str) else value
        return self._fill(values)

    def _fill(self, values: dict) -> "Node":
        return self

    def walk(self) -> Iterator["Node"]:
        """This node and every node below it, depth first, left to right."""
        yield self
        for child in self._children():
            yield from child.walk()

    def _children(self) -> tuple["Node", ...]:
        return ()


@dataclass(frozen=True)
class Word(Node):
    """A bare word: keyword or vocabulary word (``blanket``, ``temporal tag``)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Slot(Node):
    """A typed hole of a skeleton, printed ``<name>``; ``kind`` drops trailing digits."""

    name: str

    @property
    def kind(self) -> str:
        return self.name.rstrip("0123456789")

    def __str__(self) -> str:
        return f"<{self.name}>"

    def _fill(self, values: dict) -> Node:
        return values.get(self.name, self)


@dataclass(frozen=True)
class Items(Node):
    """A list ``[a, b, ...]``."""

    items: tuple[Node, ...]

    def __init__(self, items: Sequence[Node]):
        object.__setattr__(self, "items", tuple(items))

    def __str__(self) -> str:
        return "[" + ", ".join(str(i) for i in self.items) + "]"

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Node:
        return self.items[i]

    def _fill(self, values: dict) -> Node:
        return Items([i._fill(values) for i in self.items])

    def _children(self) -> tuple[Node, ...]:
        return self.items


@dataclass(frozen=True)
class Call(Node):
    """A function call ``func(args...)``."""

    func: str
    args: tuple[Node, ...]

    def __init__(self, func: str, args: Sequence[Node]):
        object.__setattr__(self, "func", func)
        object.__setattr__(self, "args", tuple(args))

    def __str__(self) -> str:
        return self.func + "(" + ", ".join(str(a) for a in self.args) + ")"

    def _fill(self, values: dict) -> Node:
        return Call(self.func, [a._fill(values) for a in self.args])

    def _children(self) -> tuple[Node, ...]:
        return self.args


def slots(node: Node) -> list[Slot]:
    """The slots of a skeleton, each name once, in order of first appearance."""
    seen: dict[str, Slot] = {}
    for n in node.walk():
        if isinstance(n, Slot) and n.name not in seen:
            seen[n.name] = n
    return list(seen.values())


def match(skeleton: Node, node: Node, bind: dict[str, Node], exact_words: bool = True) -> bool:
    """Structural match of a program against a skeleton: each slot binds the subtree it meets in
    ``bind`` (a slot used twice must meet equal subtrees); words must be equal, or with
    ``exact_words=False`` merely be words."""
    if isinstance(skeleton, Slot):
        if skeleton.name in bind:
            return bind[skeleton.name] == node
        bind[skeleton.name] = node
        return True
    if isinstance(skeleton, Word):
        return isinstance(node, Word) and (node.text == skeleton.text or not exact_words)
    if isinstance(skeleton, Items):
        return isinstance(node, Items) and len(node) == len(skeleton) and \
            all(match(a, b, bind, exact_words) for a, b in zip(skeleton.items, node.items))
    if isinstance(skeleton, Call):
        return isinstance(node, Call) and node.func == skeleton.func and len(node.args) == len(skeleton.args) and \
            all(match(a, b, bind, exact_words) for a, b in zip(skeleton.args, node.args))
    return False


WHOLE_VIDEO = Word("video")


def localize(kind: str, action: Node | str, action2: Node | str | None = None) -> Node:
    """The window node for a time kind: ``video``, or ``Localize(before|after|while, X)``, or
    AGQA's ``Localize(between, [X, Y])``. Actions may be Nodes or program text."""
    if kind in ("video", "all"):
        return WHOLE_VIDEO
    if kind not in LOCALIZE_WORDS:
        raise TensorQAError(f"unknown time kind {kind!r} (expected video, before, after, while or between)")
    a = parse_program(action) if isinstance(action, str) else action
    if kind != "between":
        return Call("Localize", [Word(kind), a])
    if action2 is None:
        raise TensorQAError("between needs two actions")
    b = parse_program(action2) if isinstance(action2, str) else action2
    return Call("Localize", [Word("between"), Items([a, b])])


# -- word resolution -------------------------------------------------------------------------------
@functools.cache
def _verb_table() -> dict[str, int]:
    v = vocab()
    table: dict[str, int] = {}
    for i in range(len(v.verbs)):
        for key in (v.verb_ids[i], v.verbs[i], v.verb_english[i]):
            table.setdefault(key, i)
    return table


def verb_index(word: str) -> int:
    """Index into ``vocab().verbs`` of a verb given as English (``taking``), base form or id."""
    try:
        return _verb_table()[word]
    except KeyError:
        raise TensorQAError(f"unknown verb {word!r}") from None


@functools.cache
def word_kinds(text: str) -> frozenset[str]:
    """What a word can be: any of "keyword", "object", "relation", "action", "verb" (empty: unknown)."""
    if text in KEYWORDS:
        return frozenset({"keyword"})
    v = vocab()
    kinds = set()
    for kind, lookup in (("object", v.object_index), ("relation", v.relation_index),
                         ("action", v.action_index), ("verb", verb_index)):
        try:
            lookup(text)
            kinds.add(kind)
        except TensorQAError:
            pass
    return frozenset(kinds)


# -- parser -----------------------------------------------------------------------------------------
def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position): kind one of ``( ) [ ] ,`` or "word" (stripped)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _DELIMS:
            out.append((c, c, i))
            i += 1
            continue
        j = i
        while j < n and text[j] not in _DELIMS:
            j += 1
        raw = text[i:j]
        word = raw.strip()
        if word:
            out.append(("word", word, i + len(raw) - len(raw.lstrip())))
        i = j
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.k = 0

    def fail(self, message: str) -> TensorQAError:
        return TensorQAError(f"program: {message}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def end_pos(self) -> int:
        return len(self.text)

    def parse(self) -> Node:
        if not self.toks:
            raise self.fail("empty program at position 0")
        node = self.expr()
        tok = self.peek()
        if tok is not None:
            if tok[0] in ")]":
                raise self.fail(f"unbalanced parentheses: unexpected {tok[1]!r} at position {tok[2]}")
            raise self.fail(f"unexpected {tok[1]!r} after the program at position {tok[2]}")
        return node

    def expr(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise self.fail(f"unbalanced parentheses: expected an argument at position {self.end_pos()}")
        kind, text, pos = tok
        if kind == "[":
            self.k += 1
            items = self.sequence("]", pos)
            return Items(items)
        if kind == "word":
            self.k += 1
            nxt = self.peek()
            if nxt is not None and nxt[0] == "(":
                if text not in FUNCTIONS:
                    raise self.fail(f"unknown function {text!r} at position {pos}")
                self.k += 1
                args = self.sequence(")", nxt[2])
                self.check_arity(text, args, pos)
                return Call(text, args)
            m = _SLOT.fullmatch(text)
            if m:
                return Slot(m.group(1))
            if not word_kinds(text):
                if text in FUNCTIONS:
                    raise self.fail(f"function {text!r} without arguments at position {pos}")
                raise self.fail(f"unknown word {text!r} at position {pos}")
            return Word(text)
        if kind in ")]":
            raise self.fail(f"expected an argument before {text!r} at position {pos}")
        if kind == ",":
            raise self.fail(f"expected an argument before ',' at position {pos}")
        raise self.fail(f"unexpected {text!r} at position {pos}")  # '(' without a function name

    def sequence(self, close: str, open_pos: int) -> list[Node]:
        """Arguments up to the matching ``close``; the opening bracket is already consumed."""
        opener = "(" if close == ")" else "["
        items: list[Node] = []
        tok = self.peek()
        if tok is not None and tok[0] == close:  # empty list / call
            self.k += 1
            return items
        while True:
            if self.peek() is not None:
                items.append(self.expr())
            tok = self.peek()
            if tok is None:
                raise self.fail(f"unbalanced parentheses: {opener!r} at position {open_pos} is never closed")
            if tok[0] == ",":
                self.k += 1
                continue
            if tok[0] == close:
                self.k += 1
                return items
            if tok[0] in ")]":
                raise self.fail(f"unbalanced parentheses: {tok[1]!r} at position {tok[2]} does not close "
                                f"{opener!r} at position {open_pos}")
            raise self.fail(f"expected ',' or {close!r} before {tok[1]!r} at position {tok[2]}")

    def check_arity(self, func: str, args: list[Node], pos: int) -> None:
        allowed = FUNCTIONS[func]
        ok = len(args) in allowed
        if func == "Localize" and len(args) == 3:  # only Localize(between, X, Y)
            ok = args[0] == Word("between") or isinstance(args[0], Slot)
        if not ok:
            want = " or ".join(str(a) for a in allowed)
            raise self.fail(f"{func} takes {want} arguments, got {len(args)} at position {pos}")


def parse_program(text: str) -> Node:
    """Parse AGQA program text (or a skeleton with ``<slots>``) into a tree."""
    if not isinstance(text, str):
        raise TensorQAError(f"program: expected text, got {type(text).__name__}")
    depth = deepest = 0
    for ch in text:  # refused before the recursive parser (and every tree walk after it) could overflow
        if ch in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]":
            depth -= 1
    if deepest > MAX_PROGRAM_DEPTH:
        raise TensorQAError(f"program: nests {deepest} levels deep, more than the {MAX_PROGRAM_DEPTH} "
                            f"any template builds: {text[:60]!r}...")
    return _Parser(text).parse()


# AGQA's programs nest at most a few dozen brackets (templates with references and localizations)
MAX_PROGRAM_DEPTH = 200
