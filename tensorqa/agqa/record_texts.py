"""The lexicon a record's text columns are gathered from (``texts()``): every frame fragment,
vocabulary phrase, reference phrase and localization, and per template the patterns of its
question, program, local keys and group; built once per process, shared by every block."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tensorqa.agqa.grid import action_word
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.templates import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, TEMPLATES, WINDOW_FRAMES
from tensorqa.scenes.vocab import indefinite, vocab
from tensorqa.agqa.text import Lexicon, join_patterns, split_pattern
from tensorqa.engine.windows import WINDOW_KINDS

TEMPLATE_NAMES = tuple(TEMPLATES)
# steps a localization adds (docs/reference/agqa_semantics.md §b.3): whole video 0, before/after/while 2, between 3
WINDOW_STEPS = np.array([0, 2, 2, 2, 3], dtype=np.int64)
MAX_STEPS = 8
SLOT_NAMES = ("object", "object2", "relation", "action", "action2")
REF_AXES = ("object", "object2", "action", "action2", "window_x", "window_y")  # slots that may hold an object reference
REF_VARIANTS = 3
TIME_NAMES = ("all",) + tuple(WINDOW_KINDS[1:])  # released local's time field: whole video -> "all"


@dataclass(frozen=True)
class Texts:
    """Every string a record's text columns are made of (:class:`.text.Lexicon`)."""

    lexicon: Lexicon
    dash: int  # literal "-"
    window_question: np.ndarray  # int64[5, 3]: literal ids (before X, between X and Y, after Y) per time kind
    window_program: np.ndarray


def frame_pattern(group: int) -> list[str]:
    """Question frame ``group`` = template index * 64 + frame variant."""
    return split_pattern(TEMPLATES[TEMPLATE_NAMES[group // 64]].frames[group % 64])


def program_pattern(template: int) -> list[str]:
    return split_pattern(PROGRAM_SHAPES[TEMPLATES[TEMPLATE_NAMES[template]].program])


def tlocal_pattern(template: int) -> list[str]:
    """The template's local (§b.1)."""
    return split_pattern(TEMPLATES[TEMPLATE_NAMES[template]].local_format)


def local_pattern(template: int) -> list[str]:
    """The released local (§b.4): binary = answer-space tag - template local - time - time action(s);
    2-way length choose: template local - longer / shorter - time - time action(s); object choose:
    template local - template local - time - time action(s); open = the template local."""
    spec = TEMPLATES[TEMPLATE_NAMES[template]]
    tlocal = tlocal_pattern(template)
    if spec.ans_type == "open":
        return tlocal
    tail = ["", "window_local", ""]  # "-<time>-<window action(s)>": one string per localization
    if spec.answer_space in ("yes-no", "before-after"):
        return join_patterns([spec.answer_space + "-"], tlocal, tail)
    if spec.family == "length":
        return join_patterns(tlocal, ["-longer" if "Longer" in spec.name else "-shorter"], tail)
    return join_patterns(tlocal, ["-"], tlocal, tail)


def group_pattern(template: int) -> list[str]:
    """direct_group: video | template | template local (``video_template``: one per-block string)."""
    return join_patterns(["", "video_template", ""], tlocal_pattern(template))


ID_PATTERN = ["", "video_dash", "", "rank", ""]  # "<video>-" + question number


@functools.cache
def texts() -> Texts:
    v = vocab()
    lex = Lexicon()
    lex.section("object_phrase", (indefinite(e) for e in v.object_english))
    lex.section("object_word", v.object_english)
    lex.section("object_id", v.object_ids)
    lex.section("relation_word", v.relation_english)
    lex.section("relation_id", v.relation_ids)
    lex.section("action_phrase", v.action_phrases)
    lex.section("action_word", (action_word(a) for a in range(v.num_actions)))
    lex.section("action_id", v.actions)
    kinds = ("first", "last", "whole")
    refs = OBJECT_REFERENCE_FRAMES
    lex.section("ref_phrase", (refs[k][i % len(refs[k])].format(relation=r)
                               for k in kinds for i in range(REF_VARIANTS) for r in v.relation_english))
    lex.section("ref_program", (reference_program(k, r) for k in kinds for r in v.relation_english))
    lex.section("action_ref_phrase", (
        ACTION_REFERENCE_FRAMES[a].format(object=refs[k][i % len(refs[k])].format(relation=r))
        if a in ACTION_REFERENCE_FRAMES else ""
        for a in v.actions for k in kinds for i in range(REF_VARIANTS) for r in v.relation_english))
    lex.section("action_ref_program", (f"ToAction({verb}, {reference_program(k, r)})" for verb in v.verb_english
                                       for k in kinds for r in v.relation_english))
    for t, name in enumerate(TEMPLATE_NAMES):
        for g in range(len(TEMPLATES[name].frames)):
            lex.literals(frame_pattern(t * 64 + g))
        for pattern in (program_pattern, tlocal_pattern, local_pattern, group_pattern):
            lex.literals(pattern(t))
    lex.literals(ID_PATTERN)
    lex.section("window_question", window_strings(
        lambda k, x, y: WINDOW_FRAMES[k].format(action=v.action_phrases[x], action2=v.action_phrases[y])))
    lex.section("window_local", window_strings(
        lambda k, x, y: f"-{TIME_NAMES[WINDOW_KINDS.index(k)]}-" + ("" if k == "video" else v.actions[x])
        + (f"-{v.actions[y]}" if k == "between" else "")))
    words = [action_word(a) for a in range(v.num_actions)]
    lex.section("window_program", window_strings(
        lambda k, x, y: "video" if k == "video" else f"Localize(between, [{words[x]}, {words[y]}])" if k == "between"
        else f"Localize({k}, {words[x]})"))
    question = []
    for k in WINDOW_KINDS:  # " before {action}", " between {action} and {action2}", ...
        before, _, rest = WINDOW_FRAMES[k].partition("{action}")
        between, _, after = rest.partition("{action2}")
        question.append([lex.literal(before), lex.literal(between), lex.literal(after)])
    program = [[lex.literal("video"), 0, 0]] + [[lex.literal(f"Localize({k}, "), 0, lex.literal(")")]
                                                 for k in WINDOW_KINDS[1:4]]
    program.append([lex.literal("Localize(between, ["), lex.literal(", "), lex.literal("])")])
    return Texts(lexicon=lex, dash=lex.literal("-"), window_question=np.array(question, np.int64),
                 window_program=np.array(program, np.int64))


def window_strings(text) -> list[str]:
    """Localization texts ``text(kind, x, y)`` laid out as :func:`_window_index` numbers them: the
    whole video, then before / after / while each action, then between each ordered pair."""
    A = vocab().num_actions
    return ([text("video", 0, 0)] + [text(k, x, 0) for k in WINDOW_KINDS[1:4] for x in range(A)]
            + [text("between", x, y) for x in range(A) for y in range(A)])


def reference_program(kind: str, relation: str) -> str:
    """The AGQA sub-program of an object reference (docs/reference/agqa.md §2.4; AGQA 2.0 prints backward for last)."""
    rel = f"Filter(frame, [relations, {relation}, objects])"
    if kind == "whole":
        return f"Query(class, OnlyItem(Iterate(video, {rel})))"
    direction = "forward" if kind == "first" else "backward"
    return (f"Query(class, OnlyItem(IterateUntil({direction}, video, Exists({relation}, Filter(frame, [relations])), "
            f"{rel})))")
