"""AGQA stsgs export: the layout of the real pickles read back literally, then the loader round trip."""

import pickle
import sys
import threading

import numpy as np
import pytest

import tensorqa
from tensorqa import SceneBatch, TensorQAError, open_store, write_store
from tensorqa import vocab
from tensorqa.scenes.export_agqa import video_graph
from tensorqa.scenes.loaders import load_agqa_stsgs
from tensorqa.scenes.batch import VideoScene

from helpers import make_scene, random_scene, run_tensorqa

# field lists of the real AGQA vertices (docs/reference/agqa.md §2.2; the action list is greeksharifa's dump)
FRAME_KEYS = ["id", "secs", "type", "metadata", "objects", "attention", "contact", "spatial", "verb", "actions",
              "next", "prev"]
ACTION_KEYS = ["id", "charades", "phrase", "type", "start", "end", "length", "objects", "attention", "contact",
               "spatial", "verb", "metadata", "all_f", "object_id", "verb_id", "next_discrete", "prev_discrete",
               "next_instance", "prev_instance", "while"]
OBJECT_KEYS = ["id", "type", "class", "attention", "contact", "spatial", "verb", "visible", "bbox", "metadata",
               "frame_num", "secs", "next", "prev"]
RELATION_KEYS = ["id", "type", "class", "objects", "metadata", "frame", "secs", "next", "prev"]


def kitchen():
    """46GP8-like: keyframes 31, 91, 151 at 1.3 / 3.8 / 6.3 s.

    food (o17) at all three frames, window (o36) at 31 and 151 only (a gap at 91), a cup (o11) at 91.
    Actions (given out of order; by start: A c066 0-4, B c092 3-7, C c066 5-6.5, D c092 8-9):
    A covers 1.3, 3.8; B covers 3.8, 6.3; C covers 6.3; D covers no keyframe.
    """
    return make_scene(
        "46GP8", [(31, 1.3), (91, 3.8), (151, 6.3)],
        relations=[(0, "window", "lookingat"), (0, "food", "behind"), (0, "window", "v031"),
                   (1, "food", "touching"), (1, "food", "holding"), (1, "cup", "holding"), (2, "food", "holding")],
        objects=[(2, "window")],
        actions=[("c092", 8.0, 9.0), ("c066", 5.0, 6.5), ("c092", 3.0, 7.0), ("c066", 0.0, 4.0)],
    )


def bedroom():
    """A keyframe at 0 s (frame 0), which AGQA's secs > 0 rule does not allow; test split."""
    return make_scene("YSKX3", [(0, 0.0), (5, 0.2)], relations=[(1, "pillow", "holding")],
                      actions=[("holding a pillow", 0.0, 17.5)], split="test")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_store(tmp_path_factory.mktemp("export") / "small.h5", [kitchen(), bedroom()], source="test")


@pytest.fixture(scope="module")
def exported(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "AGQA_train_stsgs.pkl"
    assert tensorqa.export_agqa(store, out) == out
    with open(out, "rb") as f:
        return pickle.load(f)


def test_top_level_and_vertex_order(exported):
    assert list(exported) == ["46GP8", "YSKX3"]  # store order
    assert all(isinstance(g, dict) for g in exported.values())
    # frames ascending, actions by start, objects by frame then class, then attention, contact,
    # spatial and verb relations, each by frame then class
    assert list(exported["46GP8"]) == [
        "000031", "000091", "000151",
        "c066/1", "c092/1", "c066/2", "c092/2",
        "o17/000031", "o36/000031", "o11/000091", "o17/000091", "o17/000151", "o36/000151",
        "r1/000031",
        "r15/000091", "r22/000091", "r15/000151",
        "r7/000031",
        "v031/000031",
    ]
    assert list(exported["YSKX3"]) == ["000000", "000005", "c076/1", "o26/000005", "r15/000005"]
    for graph in exported.values():
        for vertex_id, vertex in graph.items():
            assert vertex["id"] == vertex_id


def test_fields_per_vertex_type(exported):
    keys = {"frame": FRAME_KEYS, "action": ACTION_KEYS, "object": OBJECT_KEYS}
    types = {}
    for vertex_id, vertex in exported["46GP8"].items():
        types[vertex_id] = vertex["type"]
        assert list(vertex) == keys.get(vertex["type"], RELATION_KEYS), vertex_id
        assert vertex["metadata"] == "train"
    assert all(v["metadata"] == "test" for v in exported["YSKX3"].values())
    # relation vertex types follow the relation kind; verbs are 'verb' vertices with vNNN classes
    assert {k: t for k, t in types.items() if k[0] in "rv"} == {
        "r1/000031": "attention", "r15/000091": "contact", "r22/000091": "contact", "r15/000151": "contact",
        "r7/000031": "spatial", "v031/000031": "verb"}
    assert {types[k] for k in ("000031", "000091", "000151")} == {"frame"}
    assert {types[k] for k in ("c066/1", "c092/2")} == {"action"}


def test_frames(exported):
    g = exported["46GP8"]
    f31, f91, f151 = g["000031"], g["000091"], g["000151"]
    assert (f31["secs"], f91["secs"], f151["secs"]) == (1.3, 3.8, 6.3)  # the decimals, not float32 noise
    assert f31["prev"] is None and f31["next"] is f91 and f91["prev"] is f31 and f91["next"] is f151
    assert f151["next"] is None and f151["prev"] is f91
    assert f91["objects"]["names"] == ["o11", "o17"]
    assert f91["objects"]["vertices"][0] is g["o11/000091"] and f91["objects"]["vertices"][1] is g["o17/000091"]
    assert f91["contact"]["names"] == ["r15", "r22"]
    assert [x["id"] for x in f91["contact"]["vertices"]] == ["r15/000091", "r22/000091"]
    assert f91["attention"] == f91["spatial"] == f91["verb"] == {"names": [], "vertices": []}
    assert f31["attention"]["names"] == ["r1"] and f31["spatial"]["names"] == ["r7"]
    assert f31["verb"]["vertices"][0] is g["v031/000031"]
    # actions covering each frame (A 0-4, B 3-7, C 5-6.5)
    assert [a["id"] for a in f31["actions"]] == ["c066/1"]
    assert [a["id"] for a in f91["actions"]] == ["c066/1", "c092/1"]
    assert [a["id"] for a in f151["actions"]] == ["c092/1", "c066/2"]
    assert f91["actions"][1] is g["c092/1"]


def test_zero_second_keyframe_is_clamped(exported):
    g = exported["YSKX3"]
    # frame 0 at 0 s is written at 1 ms; the action 0-17.5 s still covers it
    assert g["000000"]["secs"] == 0.001 and g["000005"]["secs"] == 0.2
    assert g["c076/1"]["all_f"] == ["000000", "000005"]
    assert all(v["secs"] > 0 for v in g.values() if "secs" in v)


def test_objects_and_relations(exported):
    g = exported["46GP8"]
    food91, cup91 = g["o17/000091"], g["o11/000091"]
    assert food91["class"] == "o17" and food91["visible"] is True and food91["bbox"] is None
    assert food91["frame_num"] == "000091" and food91["secs"] == 3.8
    # relations an object takes part in, per kind, by relation class (r15 holding before r22 touching)
    assert food91["contact"] == [g["r15/000091"], g["r22/000091"]]
    assert food91["contact"][0] is g["r15/000091"] and food91["contact"][1] is g["r22/000091"]
    assert food91["attention"] == food91["spatial"] == food91["verb"] == []
    assert g["o36/000031"]["attention"][0] is g["r1/000031"] and g["o36/000031"]["verb"][0] is g["v031/000031"]
    # a relation's objects: a plain list of object vertices, by class (cup o11 before food o17)
    holding = g["r15/000091"]
    assert type(holding["objects"]) is list and len(holding["objects"]) == 2
    assert holding["objects"][0] is cup91 and holding["objects"][1] is food91
    assert holding["class"] == "r15" and holding["frame"] == "000091" and holding["secs"] == 3.8
    assert g["r7/000031"]["objects"][0] is g["o17/000031"] and g["v031/000031"]["class"] == "v031"
    # next / prev: same class at the adjacent keyframe, None across a gap
    assert g["o17/000031"]["next"] is food91 and food91["prev"] is g["o17/000031"]
    assert food91["next"] is g["o17/000151"] and g["o17/000151"]["next"] is None
    assert g["o36/000031"]["next"] is None and g["o36/000151"]["prev"] is None  # window absent at 91
    assert cup91["next"] is None and cup91["prev"] is None
    assert holding["next"] is g["r15/000151"] and g["r15/000151"]["prev"] is holding and holding["prev"] is None
    assert g["r22/000091"]["next"] is None and g["r22/000091"]["prev"] is None


def test_actions(exported):
    g = exported["46GP8"]
    a, b, c, d = g["c066/1"], g["c092/1"], g["c066/2"], g["c092/2"]
    v = vocab()
    # instances numbered per class by start: c066 at 0 s and 5 s, c092 at 3 s and 8 s
    assert (a["start"], a["end"], a["length"]) == (0.0, 4.0, 4.0)
    assert (c["start"], c["end"], c["length"]) == (5.0, 6.5, 1.5)
    assert (b["start"], b["end"], d["start"], d["end"]) == (3.0, 7.0, 8.0, 9.0)
    assert a["charades"] == "c066" and a["type"] == "action"
    assert a["phrase"] == v.action_phrases[66] == "making some food"
    assert b["phrase"] == v.action_phrases[92] == "watching outside of a window"
    assert (a["object_id"], a["verb_id"]) == ("o17", "v011")  # make food
    assert (b["object_id"], b["verb_id"]) == ("o36", "v031")  # watch window
    # keyframes inside each instance (start <= secs <= end)
    assert a["all_f"] == ["000031", "000091"] and b["all_f"] == ["000091", "000151"]
    assert c["all_f"] == ["000151"] and d["all_f"] == []
    # same class neighbours
    assert a["next_instance"] is c and c["prev_instance"] is a and a["prev_instance"] is None and c["next_instance"] is None
    assert b["next_instance"] is d and d["prev_instance"] is b and b["prev_instance"] is None and d["next_instance"] is None
    # co-occurring: A meets B (3 <= 4), B meets C (5 <= 7); D meets nobody
    assert a["while"] == [b] and a["while"][0] is b
    assert [x["id"] for x in b["while"]] == ["c066/1", "c066/2"] and c["while"][0] is b and d["while"] == []
    # nearest non-overlapping: after A's end (4) C starts first (5); after B (7) and C (6.5) only D;
    # before C's start (5) only A ended (4); before D (8) A, C and B ended, B last (7)
    assert a["next_discrete"] is c and b["next_discrete"] is d and c["next_discrete"] is d and d["next_discrete"] is None
    assert a["prev_discrete"] is None and b["prev_discrete"] is None
    assert c["prev_discrete"] is a and d["prev_discrete"] is b
    # an action gathers the vertices of its keyframes (91, 151 for B), names parallel to vertices
    assert b["objects"]["names"] == ["o11", "o17", "o17", "o36"]
    assert b["objects"]["vertices"][3] is g["o36/000151"]
    assert [x["id"] for x in b["contact"]["vertices"]] == ["r15/000091", "r22/000091", "r15/000151"]
    assert b["contact"]["names"] == ["r15", "r22", "r15"] and b["attention"] == {"names": [], "vertices": []}
    assert d["objects"] == {"names": [], "vertices": []}
    assert a["verb"]["names"] == ["v031"] and a["verb"]["vertices"][0] is g["v031/000031"]  # A covers frame 31


def test_round_trip_through_the_loader(store, exported, tmp_path):
    path = tmp_path / "AGQA_train_stsgs.pkl"
    tensorqa.export_agqa(str(store), path)
    back = {s.video_id: s for s in load_agqa_stsgs(path)}
    for orig in (kitchen(), bedroom()):
        got = back[orig.video_id]
        assert np.array_equal(got.frame_ids, orig.frame_ids)
        assert np.array_equal(got.rel, orig.rel) and np.array_equal(got.obj, orig.obj)
        assert np.array_equal(got.inst_cls, orig.inst_cls)
        assert np.array_equal(got.inst_start, orig.inst_start) and np.array_equal(got.inst_end, orig.inst_end)
    assert np.array_equal(back["46GP8"].frame_secs, kitchen().frame_secs)
    assert back["YSKX3"].frame_secs.tolist() == [np.float32(0.001), np.float32(0.2)]  # the clamped keyframe


def test_random_scenes_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    scenes = [random_scene(rng, f"R{i:04d}", max_frames=25, max_inst=8) for i in range(30)]
    scenes.append(make_scene("ZERO0", [(0, 0.0), (3, 0.125)], actions=[("c001", 0.0, 0.0)]))
    store = write_store(tmp_path / "random.h5", scenes)
    out = tmp_path / "AGQA_test_stsgs.pkl"
    with open_store(store) as s:
        tensorqa.export_agqa(s, out)
        assert len(s) == 31  # the store we passed in stays open
    with open(out, "rb") as f:
        data = pickle.load(f)
    back = {s.video_id: s for s in load_agqa_stsgs(out)}
    assert sorted(back) == sorted(s.video_id for s in scenes)
    for orig in scenes:
        got, graph = back[orig.video_id], data[orig.video_id]
        clamped = np.where(orig.frame_secs > 0, orig.frame_secs, np.float32(0.001))
        assert np.array_equal(got.frame_ids, orig.frame_ids) and np.array_equal(got.frame_secs, clamped)
        assert np.array_equal(got.rel, orig.rel)
        # random scenes may relate objects that are not annotated: those get object vertices too
        assert np.array_equal(got.obj, orig.obj | orig.rel.any(-1))
        assert np.array_equal(got.inst_cls, orig.inst_cls)
        assert np.array_equal(got.inst_start, orig.inst_start) and np.array_equal(got.inst_end, orig.inst_end)

        # all_f = the keyframes SceneBatch.inst_frames puts inside each instance (at the written secs)
        cover = SceneBatch.from_scenes([VideoScene(**{**orig.__dict__, "frame_secs": clamped})]).inst_frames[0].numpy()
        actions = [v for v in graph.values() if v["type"] == "action"]
        names = [f"{f:06d}" for f in orig.frame_ids.tolist()]
        cover = cover[:orig.num_instances]  # a batch keeps one padded instance slot (SceneBatch.MIN_SLOTS)
        assert [a["all_f"] for a in actions] == [[names[f] for f in np.flatnonzero(row)] for row in cover]

        # scalar reference for the action links (instances are in start order)
        start, end = orig.inst_start.tolist(), orig.inst_end.tolist()
        seen = {}
        for i, a in enumerate(actions):
            cls = vocab().actions[orig.inst_cls[i]]
            seen[cls] = seen.get(cls, 0) + 1
            assert a["id"] == f"{cls}/{seen[cls]}"
            meets = [j for j in range(len(actions)) if j != i and start[j] <= end[i] and end[j] >= start[i]]
            assert [x["id"] for x in a["while"]] == [actions[j]["id"] for j in meets]
            later = [j for j in range(len(actions)) if start[j] > end[i]]
            assert a["next_discrete"] is (actions[min(later, key=lambda j: (start[j], j))] if later else None)
            earlier = [j for j in range(len(actions)) if end[j] < start[i]]
            assert a["prev_discrete"] is (actions[max(earlier, key=lambda j: (end[j], j))] if earlier else None)
    # ZERO0: an instant action at 0 s no longer covers its keyframe, now at 1 ms
    assert data["ZERO0"]["c001/1"]["all_f"] == [] and data["ZERO0"]["000000"]["secs"] == 0.001


def test_long_video_pickles_past_the_recursion_limit(tmp_path):
    # 3000 keyframes, food held at every one: frames, objects and relations form chains 3000 long
    F = 3000
    frames = [(i + 1, (i + 1) / 24) for i in range(F)]
    scene = make_scene("LONG1", frames, relations=[(f, "food", "holding") for f in range(F)],
                       actions=[("c061", 0.0, 200.0)])
    graph = video_graph(scene)
    with pytest.raises(RecursionError):  # what a plain pickle.dump at the default limit does
        pickle.dumps({"LONG1": graph}, protocol=4)
    store = write_store(tmp_path / "long.h5", [scene])
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    out = tensorqa.export_agqa(store, tmp_path / "long.pkl")
    assert (sys.getrecursionlimit(), threading.stack_size()) == (limit, stack)  # restored
    with open(out, "rb") as f:
        g = pickle.load(f)["LONG1"]
    assert len(g) == 3 * F + 1
    assert g["000001"]["next"] is g["000002"] and g["o17/003000"]["prev"] is g["o17/002999"]
    assert len(g["c061/1"]["all_f"]) == F and g["r15/001500"]["objects"][0] is g["o17/001500"]
    (back,) = load_agqa_stsgs(out, split="train")
    assert np.array_equal(back.rel, scene.rel) and np.array_equal(back.obj, scene.obj)


def test_video_selection(store, tmp_path):
    out = tmp_path / "two.pkl"
    tensorqa.export_agqa(store, out, video_ids=["YSKX3", "46GP8", "YSKX3"])
    assert list(pickle.loads(out.read_bytes())) == ["YSKX3", "46GP8"]  # given order, duplicates once
    tensorqa.export_agqa(store, out, video_ids="46GP8")  # one id as a plain string
    assert list(pickle.loads(out.read_bytes())) == ["46GP8"]


def test_bad_requests(store, tmp_path):
    out = tmp_path / "bad.pkl"
    with pytest.raises(TensorQAError, match=r"small\.h5: no video 'NOPE1'"):
        tensorqa.export_agqa(store, out, video_ids=["46GP8", "NOPE1"])
    assert not out.exists() and not (tmp_path / "bad.pkl.partial").exists()
    with pytest.raises(TensorQAError, match=r"output directory .* does not exist"):
        tensorqa.export_agqa(store, tmp_path / "no" / "dir" / "x.pkl")
    with pytest.raises(TensorQAError, match=r"nope\.h5: no such file"):
        tensorqa.export_agqa(tmp_path / "nope.h5", out)


def test_frame_numbers_agqa_cannot_name():
    with pytest.raises(TensorQAError, match=r"video 'BIG01': frame number 1000000 does not fit"):
        video_graph(make_scene("BIG01", [(5, 0.2), (1_000_000, 9.0)]))
    with pytest.raises(TensorQAError, match=r"video 'DUP01': frame number 7 appears more than once"):
        video_graph(make_scene("DUP01", [(7, 0.3), (7, 0.3)]))


def cli(*args):
    return run_tensorqa(*args)  # in this process


def test_cli(store, tmp_path):
    out = tmp_path / "one.pkl"
    r = cli("export-agqa", store, "--out", out, "--videos", "YSKX3")
    assert r.returncode == 0, r.stderr
    assert "1 video," in r.stdout and str(out) in r.stdout
    assert list(pickle.loads(out.read_bytes())) == ["YSKX3"]
    assert not (tmp_path / "one.pkl.partial").exists()

    missing = tmp_path / "missing.pkl"
    r = cli("export-agqa", store, "--out", missing, "--videos", "46GP8", "NOPE1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorqa: error: ") and "no video 'NOPE1'" in lines[0]
    assert not missing.exists() and not (tmp_path / "missing.pkl.partial").exists()


def test_cli_progress_on_stderr_unless_quiet(store, tmp_path):
    r = cli("export-agqa", store, "--out", tmp_path / "a.pkl")
    assert r.returncode == 0, r.stderr
    with open_store(store) as s:
        n = len(s)
    assert "export-agqa: graphs" in r.stderr and f"{n}/{n}" in r.stderr and "export-agqa: pickle" in r.stderr
    q = cli("export-agqa", store, "--out", tmp_path / "b.pkl", "--quiet")
    assert q.returncode == 0 and q.stderr == ""
    assert (tmp_path / "a.pkl").read_bytes() == (tmp_path / "b.pkl").read_bytes()  # the bar does not change the bytes
