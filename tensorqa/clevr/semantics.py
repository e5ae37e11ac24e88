"""CLEVR's upstream generator defects (reference §6) that change the output: one switch each,
faithful (CLEVR's behaviour, the default) in ``CLEVR``, corrected in ``STRICT`` — as
``agqa/semantics`` does for AGQA. Defects that change no output here (5 progress on stdout,
6 listdir order: we sort file names, 7 and 11 rendering only, 12 no NOT_NULL) need no switch."""

from __future__ import annotations

from dataclasses import dataclass

from tensorqa.errors import TensorQAError


@dataclass(frozen=True)
class ClevrSemantics:
    # 1. add_empty_filter_options draws its "empty" keys lazily from a generator: a drawn key can
    #    match real objects. Faithful: the extra keys of filter / filter_count / filter_exist are
    #    uniform over all keys; corrected: over the keys that match no object of the scene.
    empty_keys_may_match: bool = True
    # 2. NEQ is inverted (drops states where v1 != v2). No CLEVR 1.0 template uses NEQ.
    neq_inverted: bool = True
    # 3. program nodes keep their cached '_output' in the questions JSON.
    keep_output: bool = True
    # 4. OUT_NEQ on two counts compares the counts, so compare_integer#0 ("equal number ...?")
    #    always answers False. Corrected: two Integer outputs must come from different object sets.
    out_neq_compares_counts: bool = True
    # 9. other_heuristic treats 'thing' as a value (<S>=thing with <S2>=cube drops "other").
    #    Corrected: 'thing' counts as unspecified.
    other_thing_is_value: bool = True


CLEVR = ClevrSemantics()
STRICT = ClevrSemantics(False, False, False, False, False)


def semantics_named(name: str) -> ClevrSemantics:
    if name == "clevr":
        return CLEVR
    if name == "strict":
        return STRICT
    raise TensorQAError(f"--semantics: {name!r} is not 'clevr' or 'strict'")
