"""The bulk grounding's tables address the records' lexicon: each id it computes names the string
the scalar path builds from the templates on its own (grounding_text)."""

from tensorqa.agqa.grounding_rows import tables
from tensorqa.agqa.grounding_text import action_reference_text, object_phrases, object_reference_phrases, window_parts
from tensorqa.agqa.indirect import REF_KINDS
from tensorqa.engine.windows import WINDOW_KINDS
from tensorqa.scenes.vocab import vocab


def test_sections_name_the_scalar_paths_strings():
    t, v = tables(), vocab()
    lex = t["lexicon"].to_pylist()
    base = t["base"]
    assert [lex[base["object_phrase"] + o] for o in range(v.num_objects)] == list(object_phrases())
    assert [lex[base["relation_word"] + r] for r in range(v.num_relations)] == list(v.relation_english)
    assert [lex[base["action_phrase"] + a] for a in range(v.num_actions)] == list(v.action_phrases)
    V, R = t["V"], t["R"]
    for kind_code, kind in enumerate(REF_KINDS[1:], start=1):
        for r in (0, R // 2, R - 1):
            for variant in range(V):
                k = ((kind_code - 1) * V + variant) * R + r
                phrase = object_reference_phrases(kind, r)[variant]
                assert lex[base["ref_phrase"] + k] == phrase
                a = next(i for i, on in enumerate(t["action_ref_inner"][:-1]) if on)  # an indirect-object action
                assert lex[base["action_ref"] + a * t["n_ref"] + k] == action_reference_text(a, phrase)


def test_window_phrases_and_literals():
    t = tables()
    lex = t["lexicon"].to_pylist()
    for code, kind in enumerate(WINDOW_KINDS):
        parts = window_parts(kind)
        assert lex[t["window_pre"][code]] == (parts[0][1] if parts else "")  # " before ", ..., "" for video
    assert lex[t["literal"][t["between_mid"]]] == " and "
    assert all(lex[i] == text for text, i in t["literal"].items())
    assert all(t["length"][i] == len(s) for i, s in enumerate(lex))
