"""Action Genome loader: small pickles written in the exact AG layout, checked entry by entry."""

import pickle

import numpy as np
import pytest

from tensorqa import TensorQAError
from tensorqa import vocab
from tensorqa.scenes.loaders import load_action_genome, read_charades_csv

HEADER = "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"


def ag_object(cls, attention=(), spatial=(), contacting=(), visible=True, split="train"):
    """One entry of object_bbox_and_relationship.pkl as AG writes it."""
    entry = {
        "class": cls,
        "bbox": np.array([10.0, 20.0, 30.0, 40.0]) if visible else None,
        "attention_relationship": list(attention) if visible else None,
        "spatial_relationship": list(spatial) if visible else None,
        "contacting_relationship": list(contacting) if visible else None,
        "visible": visible,
        "metadata": {"tag": "tag", "set": split},
    }
    if split is None:
        del entry["metadata"]["set"]
    return entry


def person():
    return {"bbox": np.zeros((1, 4), np.float32), "bbox_score": np.ones(1, np.float32), "bbox_size": (480, 270),
            "bbox_mode": "xyxy", "keypoints": np.zeros((1, 17, 3), np.float32)}


def objects_pkl():
    invisible_phone = ag_object("phone/camera", visible=False)
    # an invisible object whose relation lists are (unusually) filled: still ignored
    invisible_with_rels = dict(ag_object("phonecamera"), visible=False)
    return {
        "AAAAA.mp4/000031.png": [
            ag_object("cup/glass/bottle", ["lookingat"], ["in_front_of"], ["holding", "drinking_from"]),
            ag_object("table", ["not_looking_at"], ["beneath", "behind"], ["not_contacting"]),
            invisible_phone,
        ],
        "AAAAA.mp4/000091.png": [
            ag_object("cupglassbottle", ["unsure"], ["on_the_side_of"], ["touching"]),
            ag_object("sofa/couch", [], ["beneath"], ["sitting_on"]),
            invisible_with_rels,
        ],
        "BBBBB.mp4/000005.png": [ag_object("bed", ["lookingat"], ["in"], ["lying_on"], split=None)],
    }


def persons_pkl():
    # frame 120 of AAAAA and frame 2 of BBBBB exist only here: keyframes without any object
    keys = ["AAAAA.mp4/000031.png", "AAAAA.mp4/000091.png", "AAAAA.mp4/000120.png", "BBBBB.mp4/000002.png"]
    return {k: person() for k in keys}


def write_ag(tmp_path, objects=None, persons=None):
    ag = tmp_path / "ag"
    ag.mkdir(exist_ok=True)
    for name, data in (("object_bbox_and_relationship.pkl", objects), ("person_bbox.pkl", persons)):
        with open(ag / name, "wb") as f:
            pickle.dump(data, f)
    return ag


@pytest.fixture
def csvs(tmp_path):
    train = tmp_path / "Charades_v1_train.csv"
    # AAAAA is listed in the *test* CSV while AG metadata says train: AG metadata wins.
    test = tmp_path / "Charades_v1_test.csv"
    train.write_text(HEADER + 'BBBBB,S,Bedroom,,,,"lies down, rests",bed,,c134 0.00 1.00,3.00\n'
                     "CCCCC,S,Hall,,,,,,,c097 0.00 1.00,2.00\n")  # not in AG: ignored
    test.write_text(HEADER + "AAAAA,S,Kitchen,,,,,cup;table,,c107 0.50 4.00;c106 0.50 2.00,5.00\n")
    return [train, test]


def expected_rel(frames, triples):
    v = vocab()
    rel = np.zeros((frames, v.num_objects, v.num_relations), dtype=bool)
    for f, o, r in triples:
        rel[f, v.object_index(o), v.relation_index(r)] = True
    return rel


def test_two_videos_every_entry(tmp_path, csvs):
    ag = write_ag(tmp_path, objects_pkl(), persons_pkl())
    a, b = load_action_genome(ag, csvs)
    v = vocab()

    assert a.video_id == "AAAAA" and a.split == "train"  # from AG metadata, not the test CSV
    assert a.frame_ids.tolist() == [31, 91, 120] and a.frame_ids.dtype == np.int32
    np.testing.assert_allclose(a.frame_secs, [31 / 24, 91 / 24, 120 / 24], rtol=1e-6)
    assert a.rel.shape == (3, 36, 54) and a.obj.shape == (3, 36)
    # frame 31: the cup's four relations, the table's four; the invisible phone nothing
    # frame 91: the cup (other spelling) and the sofa; the second phone is invisible despite its lists
    # frame 120: person box only
    want = expected_rel(3, [
        (0, "cup", "lookingat"), (0, "cup", "infrontof"), (0, "cup", "holding"), (0, "cup", "drinkingfrom"),
        (0, "table", "notlookingat"), (0, "table", "beneath"), (0, "table", "behind"), (0, "table", "notcontacting"),
        (1, "cup", "unsure"), (1, "cup", "onthesideof"), (1, "cup", "touching"),
        (1, "sofa", "beneath"), (1, "sofa", "sittingon"),
    ])
    assert np.array_equal(a.rel, want)
    assert a.rel.sum() == 13
    obj = np.zeros((3, 36), dtype=bool)
    obj[0, [v.object_index("cup"), v.object_index("table")]] = True
    obj[1, [v.object_index("cup"), v.object_index("sofa")]] = True
    assert np.array_equal(a.obj, obj)
    # raw scenes: no verb columns are set by the loader
    assert not a.rel[:, :, v.relation_mask("verb")].any()
    # instances from the CSV, ordered by (start, end, class): c106 ends before c107
    assert a.inst_cls.tolist() == [106, 107]
    assert a.inst_start.tolist() == [0.5, 0.5] and a.inst_end.tolist() == [2.0, 4.0]

    assert b.video_id == "BBBBB" and b.split == "train"  # no AG set: the CSV's split
    assert b.frame_ids.tolist() == [2, 5]
    assert np.array_equal(b.rel, expected_rel(2, [(1, "bed", "lookingat"), (1, "bed", "in"), (1, "bed", "lyingon")]))
    assert b.obj.sum() == 1 and b.obj[1, v.object_index("bed")]
    assert b.inst_cls.tolist() == [134]
    assert b.inst_start.tolist() == [0.0] and b.inst_end.tolist() == [1.0]


def test_fps_and_preread_rows(tmp_path, csvs):
    ag = write_ag(tmp_path, objects_pkl(), persons_pkl())
    scenes = load_action_genome(ag, read_charades_csv(csvs), fps=30)
    np.testing.assert_allclose(scenes[0].frame_secs, [31 / 30, 91 / 30, 4.0], rtol=1e-6)
    for bad in (0, -1, float("nan")):
        with pytest.raises(TensorQAError, match="fps must be a positive number"):
            load_action_genome(ag, csvs, fps=bad)


def test_missing_and_unreadable_pickles(tmp_path, csvs):
    ag = tmp_path / "ag"
    ag.mkdir()
    with pytest.raises(TensorQAError, match=r"object_bbox_and_relationship\.pkl: cannot open"):
        load_action_genome(ag, csvs)
    (ag / "object_bbox_and_relationship.pkl").write_bytes(b"this is not a pickle")
    with pytest.raises(TensorQAError, match=r"object_bbox_and_relationship\.pkl: not a readable .* pickle"):
        load_action_genome(ag, csvs)
    (ag / "object_bbox_and_relationship.pkl").write_bytes(pickle.dumps(objects_pkl())[:50])  # truncated
    with pytest.raises(TensorQAError, match=r"object_bbox_and_relationship\.pkl: not a readable"):
        load_action_genome(ag, csvs)
    write_ag(tmp_path, objects_pkl(), ["not", "a", "dict"])
    with pytest.raises(TensorQAError, match=r"person_bbox\.pkl: .* must be a dict, found list"):
        load_action_genome(ag, csvs)


def bad_objects(**changes):
    data = objects_pkl()
    data["AAAAA.mp4/000031.png"][0].update(changes)
    return data


@pytest.mark.parametrize(
    "objects, problem",
    [
        (bad_objects(**{"class": "unicorn"}), r"AAAAA\.mp4/000031\.png: unknown object class 'unicorn'"),
        (bad_objects(contacting_relationship=["hugging"]),
         r"unknown contact relation 'hugging' in contacting_relationship"),
        # a real relation in the wrong list
        (bad_objects(spatial_relationship=["holding"]), r"unknown spatial relation 'holding' in spatial_relationship"),
        (bad_objects(metadata={"set": "val"}), r"metadata set 'val'"),
        (bad_objects(metadata={"set": "test"}), r"video 'AAAAA' is in both 'train' and 'test'"),
        ({"AAAAA.mp4": []}, r"key 'AAAAA\.mp4' is not 'VIDEO\.mp4/FRAME\.png'"),
        ({"AAAAA.mp4/x.png": []}, r"key 'AAAAA\.mp4/x\.png' is not"),
        ({"AAAAA.mp4/000001.png": "cup"}, r"expected a list of object dicts, found str"),
        ({"AAAAA.mp4/000001.png": ["cup"]}, r"object entry 'cup' is not a dict"),
        ({"ZZZZZ.mp4/000001.png": [], "YYYYY.mp4/000001.png": []},
         r"video\(s\) 'YYYYY', 'ZZZZZ' are in Action Genome but not in the Charades CSVs"),
    ],
)
def test_bad_annotations(tmp_path, csvs, objects, problem):
    ag = write_ag(tmp_path, objects, persons_pkl())
    with pytest.raises(TensorQAError, match=problem) as info:
        load_action_genome(ag, csvs)
    assert "\n" not in str(info.value)


def test_person_only_video_must_be_in_csv(tmp_path, csvs):
    ag = write_ag(tmp_path, objects_pkl(), dict(persons_pkl(), **{"QQQQQ.mp4/000007.png": person()}))
    with pytest.raises(TensorQAError, match=r"'QQQQQ' are in Action Genome but not in the Charades CSVs"):
        load_action_genome(ag, csvs)
