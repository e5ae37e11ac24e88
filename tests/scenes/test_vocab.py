import numpy as np
import pytest

from tensorqa import TensorQAError
from tensorqa import vocab


def test_sizes_and_agqa_ids_follow_the_public_class_lists(shared_data):
    v = vocab()
    ag_objects = [line.strip() for line in open(shared_data / "action_genome/object_classes.txt")]
    ag_relations = [line.strip() for line in open(shared_data / "action_genome/relationship_classes.txt")]
    assert list(v.objects) == ag_objects and v.num_objects == 36
    assert list(v.relations[:26]) == ag_relations
    # AGQA ids: oN = line N of object_classes.txt, rN = line N of relationship_classes.txt (reference §3.1-3.2)
    assert v.object_ids[v.object_index("blanket")] == "o4"
    assert v.object_ids[v.object_index("paper")] == "o23"
    assert v.object_ids[v.object_index("window")] == "o36"
    assert v.relation_ids[v.relation_index("touching")] == "r22"
    assert v.relation_ids[v.relation_index("behind")] == "r7"
    charades = [line.split(" ", 1)[0] for line in open(shared_data / "charades/Charades_v1_classes.txt")]
    assert list(v.actions) == charades and v.num_actions == 157


def test_relation_kinds_match_the_action_genome_split():
    v = vocab()
    kinds = v.relation_kinds
    assert kinds[:3] == ("attention",) * 3 and kinds[3:9] == ("spatial",) * 6 and kinds[9:26] == ("contact",) * 17
    assert set(kinds[26:]) == {"verb"} and v.num_relations <= 64  # packs into one int64 word
    # the verbs carried by AG relations have no column of their own
    assert "hold" not in v.relations and v.relation_index("holding") == v.relations.index("holding")
    assert v.relation_ids[v.relation_index("walking")] == "v029"


def test_agqa_english_names():
    v = vocab()
    assert v.object_english[v.object_index("cupglassbottle")] == "cup"
    assert v.object_english[v.object_index("papernotebook")] == "paper"
    assert v.action_phrases[v.action_index("c076")] == "holding a pillow"
    assert v.action_phrases[v.action_index("c132")] == "watching television"
    assert v.action_object[v.action_index("c076")] == v.object_index("pillow")
    assert v.verbs[v.action_verb[v.action_index("c076")]] == "hold"


def test_every_action_answer_of_agqa2_resolves_to_one_action(shared_data):
    import json

    words = json.load(open(shared_data / "agqa/agqa2_answer_vocab.json"))["word2id"]
    v = vocab()
    objects = {v.object_english[i] for i in range(v.num_objects)}
    actions = [w for w in words if w not in objects and w not in ("yes", "no", "before", "after", "<UNK>")]
    assert len(actions) > 130
    for w in actions:
        assert v.action_phrases[v.action_index(w)] == w


def test_entailment_closure_is_transitive():
    v = vocab()
    m = v.entailment_closure()
    carrying, holding, touching = (v.relation_index(r) for r in ("carrying", "holding", "touching"))
    assert m[carrying, holding] and m[holding, touching] and m[carrying, touching]
    assert not m[touching, holding]
    assert np.all(np.diag(m))


def test_synonym_merges():
    v = vocab()
    assert v.object_merged_into[v.object_index("towel")] == v.object_index("blanket")
    assert v.object_merged_into[v.object_index("sandwich")] == v.object_index("food")
    assert v.action_merged_into[v.action_index("c033")] == v.action_index("c070")  # towel -> blanket


def test_unknown_words_are_user_errors():
    with pytest.raises(TensorQAError, match="unknown object 'unicorn'"):
        vocab().object_index("unicorn")
    with pytest.raises(TensorQAError, match="unknown action"):
        vocab().action_index("juggling")


def test_vocab_is_loaded_once_and_immutable():
    assert vocab() is vocab()
    with pytest.raises(Exception):
        vocab().objects = ()
    assert len(vocab().hash) == 16
