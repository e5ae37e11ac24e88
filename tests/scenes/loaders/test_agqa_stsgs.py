"""AGQA stsgs loader: a hand-built cyclic vertex graph in AGQA's layout, pickled and read back."""

import pickle
import sys

import numpy as np
import pytest

from tensorqa import TensorQAError
from tensorqa import vocab
from tensorqa.scenes.loaders import load_agqa_stsgs


def frame(fid, secs):
    # 'metadata' is 'test' on purpose: AGQA's train pickle has such frames; the loader must ignore it
    return {"id": fid, "type": "frame", "secs": secs, "metadata": "test", "objects": {"names": [], "vertices": []},
            "attention": [], "contact": [], "spatial": [], "verb": [], "actions": [], "next": None, "prev": None}


def obj(cls, fid, visible=True):
    return {"id": f"{cls}/{fid}", "type": "object", "class": cls, "visible": visible, "bbox": [1, 2, 3, 4],
            "frame_num": fid, "attention": [], "contact": [], "spatial": [], "verb": [], "next": None, "prev": None}


def rel(kind, cls, fid, objects):
    return {"id": f"{cls}/{fid}", "type": kind, "class": cls, "objects": objects, "frame": fid,
            "metadata": "train", "next": None, "prev": None}


def action(cid, n, start, end, kind="action"):
    return {"id": f"{cid}/{n}", "type": kind, "charades": cid, "phrase": "?", "start": start, "end": end,
            "length": None if end is None else end - start, "all_f": [], "while": [],
            "next_instance": None, "prev_instance": None}


def link(*chain):
    """Doubly link vertices through next/prev: a cycle of references."""
    for a, b in zip(chain, chain[1:]):
        a["next"], b["prev"] = b, a


def as_graph(*vertices):
    return {v["id"]: v for v in vertices}


def video_46gp8():
    f31, f91 = frame("000031", 1.3), frame("000091", 3.8)
    food31, window31 = obj("o17", "000031"), obj("o36", "000031")
    food91, cup91 = obj("o17", "000091"), obj("o11", "000091", visible=False)
    looking = rel("attention", "r1", "000031", [window31])  # list of vertex dicts
    behind = rel("spatial", "r7", "000031", {"names": ["o17"], "vertices": [food31]})
    watching = rel("verb", "v031", "000031", {"names": ["o36"]})  # names only
    # touching the food and the (invisible) cup: only the food counts
    touching = rel("contact", "r22", "000091", {"names": ["o17", "o11"], "vertices": [food91, cup91]})
    drinking = rel("verb", "v004", "000091", [food91])  # drink is carried by AG's drinkingfrom
    walking = rel("verb", "v029", "000091", [])  # a verb without object sets nothing
    making = action("c066", 1, 0.0, 12.6, kind="act")  # README spelling of the type
    window = action("c092", 1, 11.9, 21.2)
    window2 = action("c092", 2, 22.0, 23.0)
    # the cycles the real graphs have: frames, objects and relations point back and forth
    link(f31, f91)
    link(food31, food91)
    link(making, window, window2)
    window["next_instance"], window2["prev_instance"] = window2, window
    making["while"], window["while"] = [window], [making]
    window["all_f"] = ["000031", "000091"]
    f31["objects"] = {"names": ["o17", "o36"], "vertices": [food31, window31]}
    f31["attention"], f31["spatial"], f31["verb"] = [looking], [behind], [watching]
    f91["objects"] = {"names": ["o17", "o11"], "vertices": [food91, cup91]}
    f91["contact"], f91["verb"] = [touching], [drinking, walking]
    food31["spatial"], window31["attention"], food91["contact"] = [behind], [looking], [touching]
    f31["actions"] = f91["actions"] = [making, window]
    return as_graph(f31, f91, food31, window31, food91, cup91, looking, behind, watching, touching, drinking,
                    walking, making, window, window2)


def video_yskx3():
    f5 = frame("000005", 0.2)
    pillow = obj("o26", "000005")
    holding = rel("contact", "r15", "000005", [pillow])
    pillow["contact"], f5["contact"] = [holding], [holding]
    hold_pillow = action("c076", 1, 11.8, 17.5)
    put_pillow = action("c077", 1, 18.0, 12.1)  # ends before it starts
    return as_graph(f5, pillow, holding, hold_pillow, put_pillow)


def write(tmp_path, data, name="AGQA_train_stsgs.pkl"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(data))
    return path


def expected_rel(frames, triples):
    v = vocab()
    out = np.zeros((frames, v.num_objects, v.num_relations), dtype=bool)
    for f, o, r in triples:
        out[f, v.object_index(o), r] = True
    return out


def test_two_videos(tmp_path):
    v = vocab()
    path = write(tmp_path, {"YSKX3": video_yskx3(), "46GP8": video_46gp8()})
    a, b = load_agqa_stsgs(path)
    assert (a.video_id, b.video_id) == ("46GP8", "YSKX3")
    assert (a.split, b.split) == ("train", "train")  # from the file name; frame metadata says 'test'

    assert a.frame_ids.tolist() == [31, 91]
    np.testing.assert_allclose(a.frame_secs, [1.3, 3.8], rtol=1e-6)
    R = v.relation_index
    want = expected_rel(2, [
        (0, "window", R("lookingat")),  # r1
        (0, "food", R("behind")),  # r7
        (0, "window", R("v031")),  # watching: its own verb column
        (1, "food", R("touching")),  # r22; the invisible cup is dropped
        (1, "food", R("drinkingfrom")),  # v004 -> drinkingfrom (r12)
    ])
    assert np.array_equal(a.rel, want)
    assert R("lookingat") == 0 and R("behind") == 6 and R("touching") == 21 and R("drinkingfrom") == 11
    obj = np.zeros((2, 36), dtype=bool)
    obj[0, [v.object_index("food"), v.object_index("window")]] = True
    obj[1, v.object_index("food")] = True  # the cup vertex is not visible
    assert np.array_equal(a.obj, obj)
    # instances ordered by start: c066 0-12.6, c092 11.9-21.2, c092 22-23
    assert a.inst_cls.tolist() == [66, 92, 92]
    np.testing.assert_allclose(a.inst_start, [0.0, 11.9, 22.0], rtol=1e-6)
    np.testing.assert_allclose(a.inst_end, [12.6, 21.2, 23.0], rtol=1e-6)

    assert b.frame_ids.tolist() == [5] and b.frame_secs.tolist() == [np.float32(0.2)]
    assert np.array_equal(b.rel, expected_rel(1, [(0, "pillow", R("holding"))]))
    assert b.obj.sum() == 1 and b.obj[0, v.object_index("pillow")]
    # c077 18.0 -> 12.1 is swapped to 12.1 -> 18.0 and sorts after c076 (start 11.8)
    assert b.inst_cls.tolist() == [76, 77]
    np.testing.assert_allclose(b.inst_start, [11.8, 12.1], rtol=1e-6)
    np.testing.assert_allclose(b.inst_end, [17.5, 18.0], rtol=1e-6)


def test_verbs_carried_by_ag_relations():
    # eat, hold, lie, sit (v005, v008, v010, v018) have no verb column; they land on AG relations
    from tensorqa.scenes.loaders.agqa_stsgs import relation_class_index

    v = vocab()
    index = relation_class_index()
    assert [v.relations[index[c]] for c in ("v004", "v005", "v008", "v010", "v018")] == [
        "drinkingfrom", "eating", "holding", "lyingon", "sittingon"]
    assert index["r26"] == 25 and v.relation_kinds[index["v029"]] == "verb"
    assert len(index) == 26 + 33  # every AG relation id and every Charades verb id


def test_split_and_reversed_policies(tmp_path):
    path = write(tmp_path, {"YSKX3": video_yskx3()}, name="graphs.pkl")
    with pytest.raises(TensorQAError, match=r"graphs\.pkl: cannot tell the split"):
        load_agqa_stsgs(path)
    with pytest.raises(TensorQAError, match=r"split must be 'train' or 'test'"):
        load_agqa_stsgs(path, split="val")
    (scene,) = load_agqa_stsgs(path, split="test", reversed_intervals="drop")
    assert scene.split == "test" and scene.inst_cls.tolist() == [76]
    with pytest.raises(TensorQAError, match=r"video 'YSKX3' vertex 'c077/1': action ends \(12\.1\) before it starts"):
        load_agqa_stsgs(path, split="test", reversed_intervals="error")
    (scene,) = load_agqa_stsgs(write(tmp_path, {"YSKX3": video_yskx3()}, name="AGQA_test_stsgs.pkl"))
    assert scene.split == "test"


def test_long_linked_chain_is_not_followed(tmp_path):
    # 3000 frames chained by next/prev: following links recursively would exceed the recursion limit
    frames = [frame(f"{i:06d}", i / 24) for i in range(3000)]
    link(*frames)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(40000)  # only pickling the chain needs depth
    try:
        path = write(tmp_path, {"LONG1": as_graph(*frames)})
    finally:
        sys.setrecursionlimit(limit)
    (scene,) = load_agqa_stsgs(path)
    assert scene.frame_ids.tolist() == list(range(3000)) and not scene.rel.any()


def with_vertex(vertex, key=None):
    graph = video_yskx3()
    graph[key or vertex["id"]] = vertex
    return {"YSKX3": graph}


@pytest.mark.parametrize(
    "data, problem",
    [
        (["not", "a", "dict"], r"AGQA scene-graph must be a dict, found list"),
        ({"YSKX3": [1, 2]}, r"video 'YSKX3': expected a dict of vertices, found list"),
        ({"YSKX3": {"000001": "frame"}}, r"vertex '000001': expected a vertex dict, found str"),
        (with_vertex(obj("o99", "000005")), r"vertex 'o99/000005': unknown object class 'o99'"),
        (with_vertex(rel("contact", "r99", "000005", [])), r"vertex 'r99/000005': unknown contact class 'r99'"),
        (with_vertex(rel("verb", "v099", "000005", [])), r"unknown verb class 'v099'"),
        (with_vertex(rel("contact", "r14", "000005", ["o99"])), r"unknown object class 'o99'"),
        (with_vertex(rel("contact", "r14", "000005", "o26")), r"'objects' must be a list"),
        (with_vertex(action("c157", 1, 0, 1)), r"vertex 'c157/1': unknown action class 'c157'"),
        (with_vertex(action("c001", 1, 0, None)), r"'end' must be a number of seconds"),
        (with_vertex(dict(frame("000009", 0.4), type="scene")), r"vertex '000009': unknown vertex type 'scene'"),
        (with_vertex(dict(frame("000009", 0.4), secs=None)), r"'secs' must be a number of seconds"),
        (with_vertex(obj("o26", "frame9")), r"vertex 'o26/frame9': id does not end in a frame number"),
        (with_vertex(obj("o26", "000007")),
         r"video 'YSKX3': object/relation vertices at frame\(s\) \[7\] that have no frame vertex"),
    ],
)
def test_bad_graphs(tmp_path, data, problem):
    path = write(tmp_path, data)
    with pytest.raises(TensorQAError, match=problem) as info:
        load_agqa_stsgs(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_unreadable_files(tmp_path):
    path = tmp_path / "AGQA_test_stsgs.pkl"
    with pytest.raises(TensorQAError, match=r"AGQA_test_stsgs\.pkl: cannot open"):
        load_agqa_stsgs(path)
    path.write_text("video_id,vertex\n")
    with pytest.raises(TensorQAError, match=r"AGQA_test_stsgs\.pkl: not a readable AGQA scene-graph pickle"):
        load_agqa_stsgs(path)
    path.write_bytes(b"")
    with pytest.raises(TensorQAError, match=r"not a readable .*EOFError"):
        load_agqa_stsgs(path)
