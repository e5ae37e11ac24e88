"""Switches for AGQA's semantic quirks (``docs/reference/agqa_semantics.md`` §a–§c, §f), read by
the primitives, their scalar twins and the template layer. ``AGQA`` (the default) reproduces the
original generator, bugs included; ``STRICT`` takes the clean option of every quirk that has one.
Each field's comment names its rule, its reader and both behaviours; the quirks §f keeps without
an alternative are fixed rules where they are implemented.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives.filter import ANY_PRESENT, CONTACT_EXCEPT_NOT_CONTACTING, CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER
from tensorqa.scenes.vocab import vocab

INTERACTION_CONTEXTS = ("objExists", "objTime", "objWhatGeneral")


@dataclass(frozen=True)
class Semantics:
    """One named switch per AGQA quirk."""

    name: str = "agqa"

    # -- windows (§a) -----------------------------------------------------------------------------
    # §a.1 / f1. Localize(before, X) = keyframes from the video's first up to X's first keyframe,
    # that keyframe INCLUDED (True, AGQA). False: strictly before X. Reader: executor, primitives.
    localize_before_includes_x: bool = True
    # §a.2 / f1. Compare-before (actTime / relTime / objTime) = keyframes strictly before X's first
    # keyframe (False, AGQA). The asymmetry with localize-before is documented and kept.
    compare_before_includes_x: bool = False
    # §a.1 / f12. Localize(between, X, Y) exists in the released data (True). False: never offered.
    between_enabled: bool = True
    # §a.1 / f2. Which instance of X the between window starts after: "last" (AGQA) or "first".
    # Y always uses its first instance; before / after / while always use X's first instance.
    between_x_instance: str = "last"
    # §a.1. Actions that never localize (a window over them is not offered): c044 "taking something
    # from a box".
    never_localize: tuple[str, ...] = ("c044",)

    # -- superlatives (§b.1) ---------------------------------------------------------------------------
    # f4. actLast over the whole video: candidates end before t, where t is the last keyframe's
    # time (True, AGQA's bug: the action still running at the end is excluded). False: t = +inf.
    # Reader: executor, primitives (actLast only; actWhatBefore always uses +inf at the video end).
    act_last_video_end_is_last_keyframe: bool = True
    # f5. objLast: the answer's stretch starts this many keyframes before the gap keyframe g found by
    # scanning backward (2, AGQA; clamped to the window's first keyframe). 0: start at g, the
    # mirror of objFirst. Reader: executor, primitives (objLast, objLastVerify, "last" references).
    obj_last_extra_keyframes: int = 2
    # actFirst / actLast: the keyframes of W within this many seconds of W's first (actFirst) or
    # last (actLast) keyframe, both ends inclusive, must show only one action class.
    act_window_s: float = 5.0
    # actFirst / actWhatAfterAll: t = time of W's first keyframe minus this many seconds (0 when
    # that keyframe is the video's first).
    act_first_slack_s: float = 1.0
    # actLast: the generator's backward scan over the last act_window_s seconds never reads W's
    # first keyframe (a loop bound). docs/reference/agqa_semantics.md does not list it; both presets follow the
    # document (False: every keyframe of W in the 5 s counts). True reproduces the loop bound.
    act_last_scan_skips_window_start: bool = False
    # objFirstChoose / objLastChoose / objWhatChoose: the stretch of the chosen object runs from its
    # first (last) keyframe to the keyframe where it stops, that stopping keyframe INCLUDED (True,
    # AGQA's solver), so the other object of the pair seen there makes the answer undefined.
    choose_stretch_includes_stop: bool = True

    # §b.1 objLastVerify: the generator's "last keyframe of the relation in W" helper finds nothing
    # when the relation occurs at exactly one keyframe of W (it needs two hits), so no objLastVerify
    # question is asked for such a (relation, window) (True, AGQA). False: one keyframe is enough.
    # Reader: validity rules (agqa/validity.py).
    obj_last_verify_needs_two_keyframes: bool = True

    # -- durations (§b.1, f9) ----------------------------------------------------------------------------
    # Longest / shortest / length compare: lengths (end - start, seconds) must differ by MORE than
    # this many seconds.
    duration_margin_s: float = 7.0

    # -- time compare (§b.1 actTime) ------------------------------------------------------------------
    # actTime persistence check: for "before", the first action's (object, verb) relation must not
    # occur in any keyframe after the second action ("after": before it). True (AGQA's solver).
    act_time_persistence_check: bool = True

    # -- logic (§b.1) ---------------------------------------------------------------------------------
    # XOR(A, B) of xorObjRelExists means "A and not B" (True, AGQA: "held a cup but not a phone";
    # asymmetric). False: exclusive or.
    xor_is_and_not: bool = True

    # -- interaction (§c.1, f7) --------------------------------------------------------------------------
    # "per_template" (AGQA): objExists = any contact relation except not contacting (other
    # relationship counts); objTime = contact except not contacting and other relationship;
    # objWhatGeneral = any object present in the keyframe. "unified": all three use the objTime rule.
    interaction: str = "per_template"

    # -- template layer (read by the template / balancing code, not by the executor) -----------------
    # f6. The three checks the original intends but never fires (relExists touching/no; objTime
    # object exclusion; Verify "> 1 candidate"): False (AGQA) = do not apply them.
    apply_nonfiring_checks: bool = False
    # §b.1 and/xor: P-validObjRel's clause "the reference is not defined through the question's
    # relation" never fires in andObjRelExists / xorObjRelExists (the generator's check receives
    # plain ids), so "held the first thing taken and the thing they held" is asked (False, AGQA).
    # True: the clause applies there as in every other template. The touching restriction applies
    # either way. Reader: reference enumeration (agqa/blocks.py).
    and_xor_reference_relation_check: bool = False
    # §b.3 indirect-object actions: the generator builds ToAction(verb, <reference>) without checking
    # that the program fits no other action of the video: c043 "taking a box from somewhere" and
    # c044 "taking something from a box" both read ToAction(taking, <box reference>); the English,
    # the answer and every window are those of the action it was built from (False, AGQA: asked;
    # the executor resolves such a ToAction to that action, see ``resolve_to_action``). True (the
    # clean reading): asked only where exactly one action class of the video fits the program.
    # Reader: indirect-object actions (agqa/indirect.py), the executor (agqa/executor.py).
    indirect_action_needs_unique_program: bool = False
    # f8. Pairs of a two-item slot are enumerated once (combinations, in a deterministic order).
    pairs_as_combinations: bool = True
    # f10. Open-answer smoothing applies only the last pass's removals (False, AGQA); True: all.
    # Reader: ``tensorqa balance``, from the semantics the pool's done markers record (``--all-passes``
    # forces True).
    smoothing_applies_all_passes: bool = False

    def __post_init__(self) -> None:
        if self.interaction not in ("per_template", "unified"):
            raise TensorQAError(f"semantics: interaction must be 'per_template' or 'unified', not {self.interaction!r}")
        if self.between_x_instance not in ("first", "last"):
            raise TensorQAError(f"semantics: between_x_instance must be 'first' or 'last', not {self.between_x_instance!r}")
        if self.obj_last_extra_keyframes < 0:
            raise TensorQAError("semantics: obj_last_extra_keyframes must be >= 0")

    def interaction_rule(self, context: str) -> str:
        """The §c.1 rule used in ``context`` (one of ``INTERACTION_CONTEXTS``)."""
        if context not in INTERACTION_CONTEXTS:
            raise TensorQAError(f"semantics: unknown interaction context {context!r}")
        if self.interaction == "unified" or context == "objTime":
            return CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER
        return CONTACT_EXCEPT_NOT_CONTACTING if context == "objExists" else ANY_PRESENT


# §b.3: actions that never take an indirect object (no ToAction(verb, <reference>) is built from
# them): c044 "taking something from a box". A fixed rule, not a switch.
NEVER_INDIRECT_OBJECT: tuple[str, ...] = ("c044",)


def resolve_to_action(present: list[int], semantics: Semantics, built_from=()) -> int | None:
    """The action class ``ToAction(verb, object)`` denotes on a video, or None when it denotes none.

    present: the classes that fit (verb, object) (``Vocab.actions_named``) and occur in the video.
    built_from: the classes the question's indirect-object actions were built from (a record's
    action slots whose reference is set), if known.

    One fitting class: that one. Several (§b.3, no uniqueness check in AGQA): the one the
    question was built from, which is one that takes an indirect object; so without ``built_from``,
    the only one of them that can (c043 beside c044). The clean reading
    (``indirect_action_needs_unique_program``): exactly one may fit."""
    if len(present) == 1:
        return present[0]
    if semantics.indirect_action_needs_unique_program or not present:
        return None
    v = vocab()
    named = {a if isinstance(a, (int, np.integer)) else v.action_index(a) for a in built_from if a not in ("", None)}
    built = [a for a in present if a in named]
    if built:
        return built[0] if len(built) == 1 else None
    capable = [a for a in present if v.actions[a] not in NEVER_INDIRECT_OBJECT]
    return capable[0] if len(capable) == 1 else None


AGQA = Semantics()
STRICT = replace(
    AGQA,
    name="strict",
    act_last_video_end_is_last_keyframe=False,
    obj_last_extra_keyframes=0,
    apply_nonfiring_checks=True,
    interaction="unified",
    smoothing_applies_all_passes=True,
    obj_last_verify_needs_two_keyframes=False,
    and_xor_reference_relation_check=True,
    indirect_action_needs_unique_program=True,
)
PRESETS = {"agqa": AGQA, "strict": STRICT}


def get_semantics(name: "str | Semantics") -> Semantics:
    """``"agqa"`` (faithful, default) or ``"strict"`` (cleaned up); a Semantics passes through."""
    if isinstance(name, Semantics):
        return name
    try:
        return PRESETS[str(name).lower()]
    except KeyError:
        raise TensorQAError(f"unknown semantics {name!r} (expected 'agqa' or 'strict')") from None
