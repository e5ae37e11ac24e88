"""Sub-question kinds of the decomposition, as data: program shape, AGQA-Decomp type, wordings, and
the children each kind is composed of.

A sub-question is a kind plus slot values (:class:`SubQuestion`). Kinds are AGQA's program shapes
plus four no template asks: ``objPresent`` (the object appears; printed ``objExists(<object>)``
because the Object Equals check reads ``program[10:-1]``) and the collections ``objsWith`` /
``objsAll`` / ``actsAll`` that first / last / what questions pick from (list answers, banned types).

``COMPOSITIONS``: per kind, its rules and children (then fallback children), written
``kind(slot, slot=source, ...)``: a bare slot copies the parent's; ``window=video`` is the whole
video, ``window=before action2`` etc. localize around the parent's action; ``object?`` asks about
the parent's object (``objPresent``, or a reference's own objFirst / objLast / objWhat);
``action-object?`` the same for the object inside ``ToAction(verb, <reference>)``. A localized kind
also gets a temporal composition (``LOCALIZED``): Before / After / While -> [``X'(video)``,
``actExists(A)``], Between -> [``X'(after A)``, ``X'(before B)``], ``X'`` being ``X`` or, for a
one-answer query, the collection it picks from."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Call, Items, Node, Slot, Word, localize, match, parse_program
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.templates.catalogue import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, WINDOW_FRAMES, template_spec
from tensorqa.scenes.vocab import indefinite, vocab

PRESENT = "objPresent"
COLLECTIONS: dict[str, str] = {
    "objsWith": "Iterate(<window>, Filter(frame, [relations, <relation>, objects]))",
    "objsAll": "Iterate(<window>, Filter(frame, [objects]))",
    "actsAll": "Iterate(<window>, Filter(frame, [actions]))",
}
PRESENT_PROGRAM = "objExists({object})"  # 10 characters before the object: see the module docstring

_TYPE_KINDS: dict[str, tuple[str, ...]] = {  # AGQA-Decomp type over the whole video -> its kinds
    "Object Exists": (PRESENT,), "Relation Exists": ("relExists",),
    # "interacting with" is contact with the object; an action is a person-object interaction in AGQA
    "Interaction": ("objRelExists", "objExists", "actExists"), "And": ("andObjRelExists",), "Xor": ("xorObjRelExists",),
    "Object": ("objWhatGeneral", "objWhat", "objsWith", "objsAll"), "Action": ("actWhatAfterAll", "actWhatBefore", "actsAll"),
    "First Object": ("objFirst",), "Last Object": ("objLast",), "First Action": ("actFirst",), "Last Action": ("actLast",),
    "Object Equals": ("objFirstVerify", "objLastVerify"), "Action Equals": ("actLengthLongerVerify", "actLengthShorterVerify"),
    "Choose": ("objWhatChoose", "objFirstChoose", "objLastChoose", "actTime", "relTime", "objTime"),
    "Longer Choose": ("actLengthLongerChoose",), "Shorter Choose": ("actLengthShorterChoose",),
    "Longest Action": ("actLongest",), "Shortest Action": ("actShortest",),
}

# The decomposition table: kind -> ((composition rule, children, [fallback children, ...]), ...).
# Notation: module docstring. A composition is kept with the first list of children that all have
# an answer on the video and pass the rule's consistency check (``decompose.consistency_violations``).


def _pair(kind: str) -> tuple[str, str]:
    """The two children of a two-object question: ``kind`` over object, then over object2."""
    return f"{kind}(relation, object, window)", f"{kind}(relation, object=object2, window)"


def _sides(kind: str, item: str, anchor: str) -> tuple[tuple[str, str], ...]:
    """Children of a before / after comparison: ``item`` before and after ``anchor``; when one side
    has no answer (the anchor starts or ends the video), that side and "while anchor"."""
    before, while_, after = (f"{kind}({item}, window={w} {anchor})" for w in ("before", "while", "after"))
    return (before, after), (before, while_), (while_, after)


_TWO_ACTIONS = ("actExists(action, window=video)", "actExists(action=action2, window=video)")

COMPOSITIONS: dict[str, tuple[tuple, ...]] = {
    "objRelExists": (("Interaction", ("object?", "relExists(relation, window)")),),
    "objExists": (("Interaction", ("object?",)),),
    "actExists": (("Interaction", ("action-object?",)),),  # only for an indirect-object action
    "andObjRelExists": (("And", _pair("objRelExists")),),
    "xorObjRelExists": (("Xor", _pair("objRelExists")),),
    "objWhat": (("Interaction", ("relExists(relation, window)",)),),
    "objWhatChoose": (("Choose", _pair("objRelExists")),),
    "objFirst": (("First", ("objsWith(relation, window)",)),),
    "objLast": (("Last", ("objsWith(relation, window)",)),),
    "actFirst": (("First", ("actsAll(window)",)),),
    "actLast": (("Last", ("actsAll(window)",)),),
    "objFirstVerify": (("Equals", ("object?", "objFirst(relation, window)")),),
    "objLastVerify": (("Equals", ("object?", "objLast(relation, window)")),),
    # fallback: when the first (last) object has no answer, or is neither of the pair
    "objFirstChoose": (("Choose", _pair("objFirstVerify"), _pair("objRelExists")),),
    "objLastChoose": (("Choose", _pair("objLastVerify"), _pair("objRelExists")),),
    "actLengthLongerChoose": (("Longer Choose", _TWO_ACTIONS),),
    "actLengthShorterChoose": (("Shorter Choose", _TWO_ACTIONS),),
    "actLengthLongerVerify": (("Equals", ("actExists(action, window=video)", "actLengthLongerChoose(action, action2)")),),
    "actLengthShorterVerify": (("Equals", ("actExists(action, window=video)", "actLengthShorterChoose(action, action2)")),),
    "actTime": (("Choose", *_sides("actExists", "action", "action2")),),
    "relTime": (("Choose", *_sides("relExists", "relation", "action")),),
    "objTime": (("Choose", *_sides("objExists", "object", "action")),),
    # objPresent, relExists, objWhatGeneral, actWhat*, actLongest / actShortest and the collections
    # have no composition of their own (localized ones still get the temporal one)
}

# Kinds with a temporal composition when localized -> the kind of its children.
LOCALIZED: dict[str, str] = {
    "relExists": "relExists", "objRelExists": "objRelExists", "objExists": "objExists", "actExists": "actExists",
    "objsWith": "objsWith", "objsAll": "objsAll", "actsAll": "actsAll",
    "objWhat": "objsWith", "objWhatGeneral": "objsAll", "actWhatAfterAll": "actsAll", "actWhatBefore": "actsAll",
}
# kind -> (type over the whole video, type when localized: "{}" = After / Before / While / Between)
TYPES: dict[str, tuple[str, str]] = {
    kind: (t, ("Exists {}" if kind == "relExists" else t + " {}") if kind in LOCALIZED else t)
    for t, kinds in _TYPE_KINDS.items() for kind in kinds}

# Wordings of the kinds no template asks (the others use their template's frames, frame 0 first).
# Every objPresent wording keeps "{object} exist": AGQA-Decomp's Choose Object check looks for
# "<answer> exist" in it.
EXTRA_FRAMES: dict[str, tuple[str, ...]] = {
    PRESENT: ("Does {object} exist in the video?", "Does {object} exist anywhere in the video?",
              "Does {object} exist at some point in the video?"),
    "objsWith": ("What were all the things they were {relation}{window}?",
                 "What were all the objects the person was {relation}{window}?",
                 "Which things, all of them, were they {relation}{window}?"),
    "objsAll": ("What were all the things they interacted with{window}?",
                "What were all the objects the person interacted with{window}?",
                "Which things, all of them, did they interact with{window}?"),
    "actsAll": ("What were all the things they did{window}?",
                "What were all the actions the person did{window}?",
                "Which actions, all of them, did they do{window}?"),
}

_REFERENCE_KIND = {"objFirst": "first", "objLast": "last", "objWhat": "whole"}
_TITLE = {"before": "Before", "after": "After", "while": "While", "between": "Between"}


# -- skeletons ------------------------------------------------------------------------------------
@functools.cache
def skeleton(kind: str) -> Node:
    """The parsed program shape of a kind (slots unfilled)."""
    if kind in COLLECTIONS:
        return parse_program(COLLECTIONS[kind])
    if kind in PROGRAM_SHAPES:
        return parse_program(PROGRAM_SHAPES[kind])
    raise TensorQAError(f"unknown sub-question kind {kind!r}")


@functools.cache
def _shape_text(kind: str) -> str:
    return str(skeleton(kind))


_SLOT_TEXT = re.compile(r"<(\w+)>")


# -- sub-questions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubQuestion:
    """A kind plus its slot values (program nodes), e.g. ``objRelExists`` with relation ``holding``,
    object ``cup``, window ``Localize(before, sitting on a sofa)``. Equal sub-questions have equal
    programs."""

    kind: str
    slots: tuple[tuple[str, Node], ...]

    @staticmethod
    def of(kind: str, **slots: Node) -> SubQuestion:
        if kind != PRESENT:
            skeleton(kind)  # validates the kind
        return SubQuestion(kind, tuple(sorted(slots.items())))

    def slot(self, name: str) -> Node | None:
        return dict(self.slots).get(name)

    @functools.cached_property
    def tree(self) -> Node | None:
        """The program tree (None for objPresent, which is not AGQA syntax)."""
        if self.kind == PRESENT:
            return None
        return skeleton(self.kind).substitute(dict(self.slots))

    @functools.cached_property
    def program(self) -> str:
        """The program text (``str(self.tree)``, written without building the tree)."""
        if self.kind == PRESENT:
            return PRESENT_PROGRAM.format(object=self.slot("object").text)
        values = dict(self.slots)
        return _SLOT_TEXT.sub(lambda m: str(values[m.group(1)]), _shape_text(self.kind))

    @property
    def window(self) -> Node | None:
        return self.slot("window")

    @property
    def window_kind(self) -> str:
        """"video", "before", "after", "while" or "between" (kinds without a window: "video")."""
        w = self.window
        if w is None or (isinstance(w, Word) and w.text == "video"):
            return "video"
        if isinstance(w, Call) and w.func == "Localize" and isinstance(w.args[0], Word) and w.args[0].text in _TITLE:
            return w.args[0].text
        raise TensorQAError(f"program: unsupported window {str(w)!r}")

    @property
    def type(self) -> str:
        whole, localized = TYPES[self.kind]
        kind = self.window_kind
        return whole if kind == "video" else localized.format(_TITLE[kind])


def from_program(kind: str, program: Node | str) -> SubQuestion:
    """The sub-question of a program of the given kind (a template's generator name, e.g.
    ``objRelExists``, or a collection kind); TensorQAError if the program has another shape."""
    node = parse_program(program) if isinstance(program, str) else program
    bind: dict[str, Node] = {}
    if not match(skeleton(kind), node, bind):
        raise TensorQAError(f"program {str(node)!r} does not have the shape of {kind}")
    return SubQuestion.of(kind, **bind)


def reference_question(node: Node) -> SubQuestion:
    """The question an object argument stands for: ``objPresent(o)`` for a plain object, the
    reference's own question (objFirst / objLast / objWhat over the video) for a reference."""
    if isinstance(node, Word):
        return SubQuestion.of(PRESENT, object=node)
    for kind in _REFERENCE_KIND:
        bind: dict[str, Node] = {}
        if match(skeleton(kind), node, bind) and bind.get("window") == Word("video"):
            return SubQuestion.of(kind, **bind)
    raise TensorQAError(f"program: {str(node)!r} is not an object or an object reference")


def window_actions(window: Node) -> list[Node]:
    """The actions a window localizes around: [] for the video, [X] or [X, Y] (between)."""
    if isinstance(window, Word):
        return []
    args = window.args[1:]
    if len(args) == 1 and isinstance(args[0], Items):
        return list(args[0].items)
    return list(args)


# -- the composition table --------------------------------------------------------------------------------
_CHILD = re.compile(r"^(\w+)\((.*)\)$")


@functools.cache
def _parse_child(spec: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``kind(a, b=c, ...)`` -> (kind, ((child slot, source), ...)); ``object?`` / ``action-object?``
    stay as they are."""
    if spec.endswith("?"):
        return spec, ()
    m = _CHILD.match(spec)
    if not m:
        raise TensorQAError(f"bad composition child {spec!r}")
    pairs = []
    for arg in (a.strip() for a in m.group(2).split(",")):
        name, _, source = arg.partition("=")
        pairs.append((name.strip(), (source or name).strip()))
    return m.group(1), tuple(pairs)


def _source(parent: SubQuestion, source: str) -> Node:
    if source == "video":
        return Word("video")
    kind, _, action = source.partition(" ")
    if action:  # "before action2", "after action"
        return localize(kind, parent.slot(action))
    node = parent.slot(source)
    if node is None:
        raise TensorQAError(f"{parent.kind} has no slot {source!r}")
    return node


def _child(parent: SubQuestion, spec: str) -> SubQuestion | None:
    kind, pairs = _parse_child(spec)
    if kind == "object?":
        return reference_question(parent.slot("object"))
    if kind == "action-object?":
        action = parent.slot("action")
        if isinstance(action, Call) and action.func == "ToAction":
            return reference_question(action.args[1])
        return None  # a plain action has no object question
    return SubQuestion.of(kind, **{name: _source(parent, src) for name, src in pairs})


def compositions(sq: SubQuestion) -> list[tuple[str, list[list[SubQuestion]]]]:
    """The compositions of a sub-question: [(rule, [children, fallback children, ...]), ...], the
    table's first, then the temporal one of a localized question."""
    out = []
    for rule, *alternatives in COMPOSITIONS.get(sq.kind, ()):
        options = [[_child(sq, s) for s in specs] for specs in alternatives]
        options = [kids for kids in options if all(k is not None for k in kids)]
        if options:
            out.append((rule, options))
    wk = sq.window_kind
    if sq.kind in LOCALIZED and wk != "video":
        kind = LOCALIZED[sq.kind]
        skel_slots = {s.name for s in skeleton(kind).walk() if isinstance(s, Slot)}
        keep = {k: v for k, v in sq.slots if k in ("relation", "object", "action") and k in skel_slots}
        acts = window_actions(sq.window)
        if wk == "between":
            kids = [SubQuestion.of(kind, window=localize("after", acts[0]), **keep),
                    SubQuestion.of(kind, window=localize("before", acts[1]), **keep)]
        else:
            kids = [SubQuestion.of(kind, window=Word("video"), **keep),
                    SubQuestion.of("actExists", action=acts[0], window=Word("video"))]
        out.append((_TITLE[wk], [kids]))
    return out


# -- natural language ---------------------------------------------------------------------------------------
def frames(kind: str) -> tuple[str, ...]:
    """The wordings of a kind, canonical first."""
    if kind in EXTRA_FRAMES:
        return EXTRA_FRAMES[kind]
    return template_spec(kind).frames


def object_phrase(node: Node) -> str:
    """``a cup`` / ``some food`` for an object word, ``the object they were holding first`` for a reference."""
    if isinstance(node, Word):
        return indefinite(node.text)
    ref = reference_question(node)
    return OBJECT_REFERENCE_FRAMES[_REFERENCE_KIND[ref.kind]][0].format(relation=ref.slot("relation").text)


def action_phrase(node: Node, action_class: Callable[[Node], int]) -> str:
    """An action's English: its phrase, or for ``ToAction(verb, <reference>)`` the phrase of the class
    it resolves to (``action_class``) with the object replaced by the reference's phrase."""
    v = vocab()
    if isinstance(node, Word):
        return v.action_phrases[v.action_index(node.text)]
    verb, obj = node.args
    frame = ACTION_REFERENCE_FRAMES.get(v.actions[action_class(node)])
    ref = object_phrase(obj)
    return frame.format(object=ref) if frame else f"{verb.text} {ref}"


def window_phrase(window: Node | None, action_class: Callable[[Node], int]) -> str:
    if window is None or (isinstance(window, Word) and window.text == "video"):
        return ""
    kind = window.args[0].text
    acts = [action_phrase(a, action_class) for a in window_actions(window)]
    return WINDOW_FRAMES[kind].format(action=acts[0], action2=acts[1] if len(acts) > 1 else "")


def texts(sq: SubQuestion, action_class: Callable[[Node], int]) -> list[str]:
    """The question texts of a sub-question, one per wording of its kind (canonical first).

    action_class: resolves an indirect-object action ``ToAction(...)`` to its class on the video."""
    phrase = {"object": object_phrase, "object2": object_phrase, "relation": lambda n: n.text,
              "action": lambda n: action_phrase(n, action_class), "action2": lambda n: action_phrase(n, action_class),
              "window": lambda n: window_phrase(n, action_class)}
    values = {name: phrase[name](node) for name, node in sq.slots if name in phrase}
    return [f.format(**values) for f in frames(sq.kind)]
