"""Issue 34, the input side: every name, number and size read from data is checked where its format
is read (``tensorqa/limits.py``, ``docs/reference/limits.md``). One row per hostile input: the
files it builds, the command, and the one-line error expected (status 2, no traceback); then the
cases that must succeed (long ids kept whole, videos without keyframes or actions in batches of
their own, old stores); then hypothesis fuzz tests over each input format."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorqa.cli import main
from tensorqa.limits import MAX_FRAME

from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR

TEMPLATES = DEFAULT_TEMPLATES_DIR


def run_cli(*args) -> tuple[int, str]:
    """``main(args)`` in process: (status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main([str(a) for a in args])
    return rc, err.getvalue()


def assert_one_line(rc: int, err: str, needle: str = "") -> str:
    lines = err.strip().splitlines()
    assert rc == 2, (rc, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("tensorqa: error: "), err[-2000:]
    assert needle in lines[0], (needle, lines[0])
    return lines[0]


# -- input builders ------------------------------------------------------------------------------------
def clevr_object(**over):
    return {"size": "large", "color": "red", "material": "rubber", "shape": "cube", "3d_coords": [0.5, -1.0, 0.7]} | over


def clevr_scene(n=2, **over):
    rel = {"left": [[j for j in range(n) if j < i] for i in range(n)], "right": [[j for j in range(n) if j > i] for i in range(n)],
           "behind": [[] for _ in range(n)], "front": [[] for _ in range(n)]}
    return {"split": "val", "image_index": 0, "image_filename": "CLEVR_val_000000.png",
            "objects": [clevr_object() for _ in range(n)], "relationships": rel} | over


def clevr_file(tmp, scenes, name="CLEVR_val_scenes.json", text=None):
    p = tmp / name
    p.write_text(text if text is not None else json.dumps({"info": {"split": "val"}, "scenes": scenes}))
    return p


def pack_clevr(scenes=None, text=None):
    def build(tmp):
        return ["pack", "--clevr-scenes", clevr_file(tmp, scenes, text=text), "--out", tmp / "c.h5"]
    return build


def frame(fid, secs):
    return {"id": fid, "type": "frame", "secs": secs}


def obj(cls, fid):
    return {"id": f"{cls}/{fid}", "type": "object", "class": cls, "visible": True}


def action(cid, n, start, end):
    return {"id": f"{cid}/{n}", "type": "action", "charades": cid, "start": start, "end": end}


def graph(*vertices):
    return {v["id"]: v for v in vertices}


def small_video():
    return graph(frame("000031", 1.3), obj("o26", "000031"), action("c092", 1, 0.5, 3.0))


def pack_stsgs(data):
    def build(tmp):
        p = tmp / "AGQA_train_stsgs.pkl"
        p.write_bytes(pickle.dumps(data))
        return ["pack", "--agqa-stsgs", p, "--out", tmp / "s.h5", "--quiet"]
    return build


CSV_HEADER = "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"


def charades_csv(tmp, rows, name="Charades_v1_train.csv"):
    p = tmp / name
    p.write_text(CSV_HEADER + "".join(f"{vid},S,Kitchen,6,7,Yes,script,cup,desc,{actions},{length}\n"
                                      for vid, actions, length in rows))
    return p


def pack_charades(rows):
    def build(tmp):
        return ["pack", "--charades", charades_csv(tmp, rows), "--out", tmp / "s.h5", "--quiet"]
    return build


def pack_ag(keys, objects=()):
    def build(tmp):
        ag = tmp / "ag"
        ag.mkdir()
        (ag / "object_bbox_and_relationship.pkl").write_bytes(pickle.dumps({k: objects for k in keys}))
        (ag / "person_bbox.pkl").write_bytes(pickle.dumps({}))
        csv = charades_csv(tmp, [("46GP8", "c092 0.5 3.0", 10.0)])
        return ["pack", "--action-genome", ag, "--charades", csv, "--out", tmp / "s.h5", "--quiet"]
    return build


def small_store(tmp) -> Path:
    p = tmp / "s.h5"
    assert run_cli("pack", "--videos", "2", "--seed", "1", "--out", p, "--quiet")[0] == 0
    return p


def tampered_store(edit):
    def build(tmp):
        p = small_store(tmp)
        with h5py.File(p, "r+") as f:
            edit(f)
        return ["info", p]
    return build


def replace_dataset(name, data):
    def edit(f):
        del f[name]
        f[name] = data
    return edit


def static_store(edit=None, scenes=3):
    def build(tmp):
        p = tmp / "c.h5"
        assert run_cli("pack", "--clevr", scenes, "--out", p)[0] == 0
        if edit:
            with h5py.File(p, "r+") as f:
                edit(f)
        return p
    return build


def clevr_generate(*flags, edit=None):
    def build(tmp):
        return ["generate", static_store(edit)(tmp), "--out", tmp / "q", *flags]
    return build


def wide_scene(f):  # 63 object slots, as a store written by an older tensorqa or by hand holds
    S = f["attrs"].shape[0]
    for name, shape in (("attrs", (S, 63, 4)), ("rel_bits", (S, 63, 63)), ("coords", (S, 63, 3))):
        data = np.zeros(shape, f[name].dtype)
        del f[name]
        f[name] = data


def pool_with(edit, *command):
    """``command`` (default ``stats``) on a small pool changed by ``edit``."""
    def build(tmp):
        store = small_store(tmp)
        pool = tmp / "pool"
        assert run_cli("generate", store, "--out", pool, "--templates", "objWhat", "--quiet")[0] == 0
        edit(pool)
        return [command[0] if command else "stats", pool, *[a(tmp) if callable(a) else a for a in command[1:]]]
    return build


def null_answers(pool):
    for f in (pool / "data").glob("*.parquet"):
        t = pq.read_table(f)
        i = t.schema.get_field_index("answer")
        t = t.set_column(i, pa.field("answer", pa.string(), nullable=True), pa.nulls(len(t), pa.string()))
        pq.write_table(t, f)


def nul_video_ids(pool):
    for f in (pool / "data").glob("*.parquet"):
        t = pq.read_table(f)
        i = t.schema.get_field_index("video_id")
        t = t.set_column(i, t.schema.field(i), pa.array(["A\0B"] * len(t), t.schema.field(i).type))
        pq.write_table(t, f)


def validation_shard(pool):
    f = sorted((pool / "data").glob("*.parquet"))[-1]  # (a small pool may have no test rows, hence no test file)
    f.rename(f.with_name("validation-" + f.name.split("-", 1)[1]))


def nested(depth):
    return "[" * depth + "]" * depth


def json_file(name, text):
    def make(tmp):
        p = tmp / name
        p.write_text(text)
        return p
    return make


def templates_dir(files):
    def build(tmp):
        d = tmp / "templates"
        d.mkdir()
        for name, text in files.items():
            (d / name).write_text(text)
        return ["generate", static_store()(tmp), "--out", tmp / "q", "--templates-dir", d,
                "--synonyms", DEFAULT_SYNONYMS]
    return build


def train_videos(text):
    def build(tmp):
        store = small_store(tmp)
        pool = tmp / "pool"
        assert run_cli("generate", store, "--out", pool, "--templates", "objWhat", "--quiet")[0] == 0
        lst = tmp / "train.json"
        lst.write_text(text)
        return ["split", pool, "--out", tmp / "sp", "--train-videos", lst]
    return build


def scores(text):
    def build(tmp):
        return ["score-foils", json_file("s.json", text)(tmp), "--out", tmp / "m.json"]
    return build


def argv(*args):
    def build(tmp):
        return [a(tmp) if callable(a) else a for a in args]
    return build


def shared_stsgs():
    """20,000 relation vertices, one dict, whose 'objects' list holds 20,000 references to one name:
    a few hundred KB that a loader without a bound walks 4e8 times."""
    vertex = {"type": "contact", "class": "r7", "objects": ["o26"] * 20_000}
    return {"46GP8": {f"r7/{i:06d}": vertex for i in range(20_000)}}


def shared_ag():
    item = {"class": "cup/glass/bottle", "visible": True, "contacting_relationship": ["holding"]}
    objects = [item] * 20_000
    return [f"46GP8.mp4/{i:06d}.png" for i in range(20_000)], objects
BIG = "1" + "0" * 39

CASES = [
    # item 1: names from data
    ("clevr split absolute path", pack_clevr([clevr_scene(split="/abs/dir/ABS")]), "split '/abs/dir/ABS' is not a valid name"),
    ("clevr split parent", pack_clevr([clevr_scene(split="../x")]), "split '../x' is not a valid name"),
    ("clevr split with dash", pack_clevr([clevr_scene(split="a-b")]), "split 'a-b' is not a valid name"),
    ("clevr image_filename path", pack_clevr([clevr_scene(image_filename="../CLEVR_1.png")]), "image_filename '../CLEVR_1.png'"),
    ("clevr image_filename int", pack_clevr([clevr_scene(image_filename=5)]), "image_filename 5 is not a valid name"),
    ("stsgs id with slash", pack_stsgs({"../46GP8": small_video()}), "video id '../46GP8' is not a valid name"),
    ("stsgs id with NUL", pack_stsgs({"46G\0P8": small_video()}), "video id '46G\\x00P8' is not a valid name"),
    ("stsgs id not a string", pack_stsgs({7: small_video()}), "video id 7 is not a valid name"),
    ("stsgs id too long", pack_stsgs({"V" * 129: small_video()}), "is not a valid name"),
    ("action genome id with space", pack_ag(["46 GP8.mp4/000031.png"]), "video id '46 GP8'"),
    ("charades id with slash", pack_charades([("a/b", "", 10.0)]), "id 'a/b' is not a valid name"),
    ("clevr template file name", templates_dir({"bad name.json": "[]"}), "template file name 'bad name.json'"),
    ("train-videos invalid id", train_videos('["ok", "../x"]'), "video id '../x'"),
    # item 5: frame numbers past int32
    ("stsgs frame 2^31", pack_stsgs({"A": graph(frame(str(2**31), 1.0))}), f"past {MAX_FRAME:,}"),
    ("stsgs frame 3e9", pack_stsgs({"A": graph(frame("3000000000", 1.0))}), "frame number 3000000000 is past"),
    ("stsgs frame 30 digits", pack_stsgs({"A": graph(frame("9" * 30, 1.0))}), "is past"),
    ("action genome frame 3e9", pack_ag(["46GP8.mp4/3000000000.png"]), "frame number 3000000000 is past"),
    # item 7
    ("pack --clevr 0", argv("pack", "--clevr", "0", "--out", lambda t: t / "c.h5"), "--clevr: needs 1 to"),
    ("pack --clevr 10^12", argv("pack", "--clevr", str(10**12), "--out", lambda t: t / "c.h5"), "--clevr: needs 1 to"),
    ("train-videos JSON object", train_videos('{"46GP8": 1}'), "not a JSON list of video id strings"),
    ("train-videos JSON string", train_videos('"46GP8"'), "not a JSON list of video id strings"),
    # item 10: stores
    ("store format_version string", tampered_store(lambda f: f.attrs.__setitem__("format_version", "1")), "format_version"),
    ("store meta_json not JSON", tampered_store(lambda f: f.attrs.__setitem__("meta_json", "{bad")), "meta_json"),
    ("store meta_json a list", tampered_store(lambda f: f.attrs.__setitem__("meta_json", "[1]")), "'meta_json' is not a JSON object"),
    ("store source bytes", tampered_store(lambda f: f.attrs.__setitem__("source", np.bytes_(b"\xff\xfe"))), "attribute 'source'"),
    ("store non-UTF-8 id", tampered_store(replace_dataset("video_id", np.array([b"\xff\xfe", b"ok"], "S8"))), "dataset 'video_id'"),
    ("store id with slash", tampered_store(replace_dataset("video_id", np.array([b"a/b", b"ok"], "S8"))), "dataset 'video_id'"),
    ("static store split path", argv("foils", static_store(replace_dataset("split", np.array([b"../x"] * 3))),
                                     "--out", lambda t: t / "f"), "dataset 'split'"),
    ("static store file name NUL", argv("foils", static_store(replace_dataset("image_filename", np.array([b"a\0b", b"c", b"d"]))),
                                        "--out", lambda t: t / "f"), "dataset 'image_filename'"),
    ("static store info_json", argv("foils", static_store(lambda f: f.attrs.__setitem__("info_json", "[[")), "--out",
                                    lambda t: t / "f"), "info_json"),
    # item 10: CLEVR scene JSON types
    ("clevr objects int", pack_clevr([clevr_scene(objects=3)]), "'objects' is a list"),
    ("clevr object a string", pack_clevr([clevr_scene(objects=["cube", "cube"])]), "object 0 is a JSON object"),
    ("clevr relationships list", pack_clevr([clevr_scene(relationships=[])]), "'relationships' is an object"),
    ("clevr 3d_coords string", pack_clevr([clevr_scene(objects=[clevr_object(**{"3d_coords": "abc"})] * 2)]), "'3d_coords'"),
    ("clevr 3d_coords short", pack_clevr([clevr_scene(objects=[clevr_object(**{"3d_coords": [1.0]})] * 2)]), "'3d_coords'"),
    ("clevr color a list", pack_clevr([clevr_scene(objects=[clevr_object(color=["red"])] * 2)]), "'color' is a word"),
    ("clevr scene a list", pack_clevr([[1, 2]]), "a scene is a JSON object"),
    ("clevr deep nesting", pack_clevr(text='{"scenes": ' + nested(100_000) + "}"), "nests too deeply"),
    ("clevr info deep nesting", pack_clevr(text='{"info": {"a": ' + nested(100) + '}, "scenes": []}'), "nests deeper than 64"),
    ("clevr 40-digit image index", pack_clevr([clevr_scene(image_filename=f"CLEVR_val_{BIG}.png")]), "image index"),
    ("clevr 5000-digit integer", pack_clevr(text='{"scenes": [' + "9" * 5000 + "]}"), "cannot be read"),
    ("clevr 63 objects", pack_clevr([clevr_scene(63)]), "a scene holds at most 62"),
    # item 10: templates, synonyms, scores nested
    ("templates deep nesting", templates_dir({"a.json": nested(100_000)}), "nests too deeply"),
    ("synonyms deep nesting", argv("generate", static_store(), "--out", lambda t: t / "q", "--templates-dir", TEMPLATES,
                                   "--synonyms", json_file("syn.json", nested(100_000))), "nests too deeply"),
    ("scores deep nesting", scores(nested(100_000)), "nests too deeply"),
    ("scores huge integer", scores("[" + "9" * 5000 + "]"), "cannot be read"),
    # item 10: Charades rows
    ("charades 100,000 actions", pack_charades([("46GP8", ";".join(["c092 0.5 3.0"] * 100_000), 10.0)]),
     "not a readable CSV row"),
    ("charades 2,000 actions", pack_charades([("46GP8", ";".join(["c092 0.5 3.0"] * 2_000), 10.0)]),
     "a video holds at most 1,000"),
    ("charades length 1e30", pack_charades([("46GP8", "", "1e30")]), "not a number of seconds in 0..1,000,000"),
    ("charades time 1e30", pack_charades([("46GP8", "c092 0.5 1e30", 10.0)]), "has a time past"),
    # item 10: pools
    ("pool null answers", pool_with(null_answers), "column 'answer' holds"),
    ("pool validation shard", pool_with(validation_shard), "unknown split 'validation'"),
    ("decompose pool video id with NUL", pool_with(nul_video_ids, "decompose", "--out", lambda t: t / "d", "--quiet"),
     "no video 'A\\x00B'"),
    ("balance pool null answers", pool_with(null_answers, "balance", "--out", lambda t: t / "b", "--quiet"), "column 'answer' holds"),
    ("balance pool validation shard", pool_with(validation_shard, "balance", "--out", lambda t: t / "b", "--quiet"),
     "unknown split 'validation'"),
    ("split pool null answers", pool_with(null_answers, "split", "--out", lambda t: t / "sp", "--quiet"), "column 'answer' holds"),
    # item 10: CLEVR generate sizes
    ("generate on 63-object store", clevr_generate("--engine", "compiled", edit=wide_scene), "at most"),
    ("instances-per-template 1e9", clevr_generate("--instances-per-template", "1000000000",
                                                  "--templates-dir", TEMPLATES, "--synonyms", DEFAULT_SYNONYMS),
     "--instances-per-template: must be in 1..1,000"),
    # item 11: pickles that expand far past their size
    ("stsgs shared many times over", pack_stsgs(shared_stsgs()), "expands to more entries than its size allows"),
    ("action genome shared many times over", pack_ag(*shared_ag()), "expands to more entries than its size allows"),
    # item 14: times, indices, duplicates, seeds, ignored flags
    ("stsgs NaN secs", pack_stsgs({"A": graph(frame("000001", float("nan")))}), "'secs' nan is not a number of seconds"),
    ("stsgs inf secs", pack_stsgs({"A": graph(frame("000001", float("inf")))}), "'secs' inf is not a number"),
    ("stsgs negative secs", pack_stsgs({"A": graph(frame("000001", -1.0))}), "'secs' -1.0 is not a number"),
    ("stsgs NaN start", pack_stsgs({"A": graph(frame("000001", 1.0), action("c092", 1, float("nan"), 2.0))}), "'start' nan"),
    ("stsgs negative end", pack_stsgs({"A": graph(frame("000001", 1.0), action("c092", 1, 0.0, -2.0))}), "'end' -2.0"),
    ("stsgs bool secs", pack_stsgs({"A": graph(frame("000001", True))}), "'secs' must be a number"),
    ("clevr true as object index", pack_clevr([clevr_scene(relationships={"left": [[True], []], "right": [[], []],
                                                                          "behind": [[], []], "front": [[], []]})]),
     "holds True, not another object's index"),
    ("clevr duplicate file names", pack_clevr([clevr_scene(), clevr_scene()]), "appears more than once"),
    ("pack seed 2^63", argv("pack", "--videos", "2", "--seed", str(2**63), "--out", lambda t: t / "s.h5"), "--seed must be"),
    ("foils seed -1", argv("foils", small_store, "--seed", "-1", "--out", lambda t: t / "f"), "--seed must be"),
    ("balance seed -1", argv("balance", lambda t: t / "nopool", "--seed", "-1", "--out", lambda t: t / "b"), "--seed must be"),
    ("pack --charades with --clevr", argv("pack", "--clevr", "3", "--charades", "x.csv", "--out", lambda t: t / "c.h5"),
     "--charades does not apply"),
    ("pack --charades with --agqa-stsgs", argv("pack", "--agqa-stsgs", "x.pkl", "--charades", "x.csv", "--out",
                                               lambda t: t / "s.h5"), "--charades does not apply with --agqa-stsgs"),
    ("generate --templates on CLEVR", clevr_generate("--templates", "bogus"), "--templates applies to AGQA stores only"),
    ("generate --grounding on CLEVR", clevr_generate("--grounding"), "--grounding applies to AGQA stores only"),
    ("generate --templates-dir on AGQA", argv("generate", small_store, "--out", lambda t: t / "q", "--templates-dir", "x"),
     "--templates-dir applies to CLEVR stores only"),
]


@pytest.mark.parametrize("build, needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input(tmp_path, build, needle):
    args = build(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    rc, err = run_cli(*args)
    assert_one_line(rc, err, needle)
    for p, data in before.items():  # no input modified
        assert p.read_bytes() == data, p
    assert not [p for p in tmp_path.rglob("*.partial")]


# -- item 11: pickles that cost far more than their size, each bounded in time -----------------------------
# Built opcode by opcode: t0 = (); t(k+1) = (tk, tk) through memo gets is a few bytes a level, and
# hashing t40 (as a dict key, a set member, or by a loader's lookup) visits 2^40 tuples inside C.
def _text(t: str) -> bytes:  # SHORT_BINUNICODE
    return b"\x8c" + bytes([len(t)]) + t.encode()


def shared_tuple(depth: int) -> bytes:
    """Opcodes leaving t_depth on the stack (memo slots 0..depth)."""
    ops = b")q\x000"  # EMPTY_TUPLE, BINPUT 0, POP
    for k in range(depth):  # BINGET k, BINGET k, TUPLE2, BINPUT k + 1, POP
        ops += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86q" + bytes([k + 1]) + b"0"
    return ops + b"h" + bytes([depth])


def shared_list(depth: int) -> bytes:
    """Opcodes leaving l_depth on the stack: l0 = ['o26'], l(k+1) = [lk, lk]."""
    ops = b"]q\x00" + _text("o26") + b"a0"
    for k in range(depth):
        ops += b"]q" + bytes([k + 1]) + (b"h" + bytes([k]) + b"a") * 2 + b"0"
    return ops + b"h" + bytes([depth])


def as_pickle(ops: bytes) -> bytes:
    return b"\x80\x04" + ops + b"."


def one_entry_dict(key: bytes, value: bytes) -> bytes:
    return b"}" + key + value + b"s"  # EMPTY_DICT, key, value, SETITEM


def test_the_pickle_builders_make_what_they_say():
    """Checked against the same objects built in Python (shallow, so that hashing them is cheap)."""
    t = ()
    lst = ["o26"]
    for _ in range(3):
        t, lst = (t, t), [lst, lst]
    assert pickle.loads(as_pickle(shared_tuple(3))) == t
    assert pickle.loads(as_pickle(shared_list(3))) == lst
    back = pickle.loads(as_pickle(one_entry_dict(shared_tuple(3), b"}")))
    assert back == {t: {}}
    key = next(iter(back))
    assert key[0] is key[1]  # shared, not copied: the file stays a few bytes a level


DEPTH = 40
WORK = "pickle takes more work to load than its size allows"
ENTRIES = "pickle expands to more entries than its size allows"
FRAME_VERTEX = one_entry_dict(_text("type"), _text("frame"))
BOMBS = {
    "stsgs video id a shared tuple": ("stsgs", one_entry_dict(shared_tuple(DEPTH), b"}"), WORK),
    "stsgs vertex id a shared tuple": ("stsgs", one_entry_dict(_text("46GP8"), one_entry_dict(shared_tuple(DEPTH), FRAME_VERTEX)), WORK),
    "stsgs frozenset of a shared tuple": ("stsgs", one_entry_dict(_text("46GP8"), one_entry_dict(
        _text("f/000031"), b"(" + shared_tuple(DEPTH) + b"\x91")), WORK),
    "stsgs objects nested shared lists": ("stsgs", one_entry_dict(_text("46GP8"), one_entry_dict(_text("r7/000031"), b"}(" + _text(
        "type") + _text("contact") + _text("class") + _text("r7") + _text("objects") + shared_list(DEPTH) + b"u")), "unknown object class <list of 2>"),
    "stsgs one vertex dict shared 20,000 times": ("stsgs", pickle.dumps(shared_stsgs()), ENTRIES),
    "action genome key a shared tuple": ("ag", one_entry_dict(shared_tuple(DEPTH), b"]"), WORK),
    "action genome class a shared tuple": ("ag", one_entry_dict(_text("46GP8.mp4/000031.png"), b"]}" + _text("class") + shared_tuple(
        DEPTH) + b"sa"), WORK),
    "action genome one object shared 20,000 times": ("ag", pickle.dumps(dict.fromkeys(*shared_ag())), ENTRIES),
}
FAST_BOMBS = ("stsgs video id a shared tuple",)  # the rest in the slow tier: a process each


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST_BOMBS else pytest.mark.slow) for n in BOMBS])
def test_pickle_that_expands_past_its_size_fails_in_bounded_time(tmp_path, name):
    """A real process (the hang, if any, is in C where nothing in-process can stop it), under a
    timeout: the one-line refusal comes within the CPU floor of the limits (a few seconds)."""
    import subprocess
    import sys

    fmt, ops, needle = BOMBS[name]
    data = ops if ops.startswith(b"\x80") else as_pickle(ops)
    if fmt == "stsgs":
        (tmp_path / "AGQA_train_stsgs.pkl").write_bytes(data)
        args = ["--agqa-stsgs", tmp_path / "AGQA_train_stsgs.pkl"]
    else:
        (tmp_path / "ag").mkdir()
        (tmp_path / "ag" / "object_bbox_and_relationship.pkl").write_bytes(data)
        (tmp_path / "ag" / "person_bbox.pkl").write_bytes(pickle.dumps({}))
        args = ["--action-genome", tmp_path / "ag", "--charades", charades_csv(tmp_path, [("46GP8", "c092 0.5 3.0", 10.0)])]
    assert len(data) < 1_000_000
    proc = subprocess.run([sys.executable, "-m", "tensorqa", "pack", *map(str, args), "--out", str(tmp_path / "s.h5"), "--quiet"],
                          capture_output=True, text=True, timeout=90, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert_one_line(proc.returncode, proc.stderr, needle)
    assert not (tmp_path / "s.h5").exists() and not list(tmp_path.rglob("*.partial"))


# -- item 3: every pack source x every option that depends on the source -------------------------------
AUGMENT_FLAGS = {"--no-merge-synonyms": "merge_synonyms", "--no-adjust-boundaries": "adjust_boundaries",
                 "--no-verb-relations": "verb_relations", "--no-entailments": "entailments",
                 "--no-prune-single-object": "prune_single_object"}
# written out by hand from what each source is: which options change what it packs
APPLIES = {
    "default": {"--videos", "--seed", *AUGMENT_FLAGS, "--overlap-margin"},
    "charades": {"--seed", *AUGMENT_FLAGS, "--overlap-margin"},
    "action-genome": {"--fps", *AUGMENT_FLAGS, "--overlap-margin"},
    "agqa-stsgs": set(),
    "clevr": {"--seed", "--clevr-split"},
    "clevr-scenes": set(),
}
SOURCE_FLAGS = ("--charades", "--action-genome", "--agqa-stsgs")
PACK_FLAGS = ["--videos", "--seed", "--fps", "--charades", "--action-genome", "--agqa-stsgs", "--clevr-split",
              *AUGMENT_FLAGS, "--overlap-margin"]


def pack_sources(tmp):
    csv = charades_csv(tmp, [("46GP8", "c092 0.5 3.0", 10.0), ("YSKX3", "c001 1.0 4.0;c092 2.0 6.0", 12.0)])
    ag = tmp / "ag"
    ag.mkdir()
    (ag / "object_bbox_and_relationship.pkl").write_bytes(pickle.dumps(ag_base()))
    (ag / "person_bbox.pkl").write_bytes(pickle.dumps({}))
    stsgs = tmp / "AGQA_train_stsgs.pkl"
    stsgs.write_bytes(pickle.dumps({"46GP8": small_video()}))
    scenes = clevr_file(tmp, [clevr_scene()])
    sources = {"default": ["--videos", "2"], "charades": ["--charades", csv], "action-genome": ["--action-genome", ag, "--charades", csv],
               "agqa-stsgs": ["--agqa-stsgs", stsgs], "clevr": ["--clevr", "2"], "clevr-scenes": ["--clevr-scenes", scenes]}
    values = {"--videos": ["3"], "--seed": ["1"], "--fps": ["12"], "--charades": [csv], "--action-genome": [ag],
              "--agqa-stsgs": [stsgs], "--clevr-split": ["val"], "--overlap-margin": ["2.5"]}
    return sources, values


def check_applied(out, source, flag):
    """The option changed what was packed."""
    from tensorqa.scenes.static_store import StaticStore
    from tensorqa.scenes.store import open_store

    if source == "clevr":
        with StaticStore(out) as s:
            assert ("seed=1" in s.source) if flag == "--seed" else all(n.startswith("CLEVR_val_") for n in s.image_filenames)
        return
    with open_store(out) as s:
        if flag == "--videos":
            assert len(s) == 3
        elif flag == "--seed":
            assert s.meta["seed"] == 1
        elif flag == "--fps":
            assert s.scene("46GP8").frame_secs.tolist() == pytest.approx([31 / 12, 91 / 12])
        elif flag == "--overlap-margin":
            assert s.meta["augment"]["overlap_margin"] == 2.5
        else:
            assert s.meta["augment"][AUGMENT_FLAGS[flag]] is False


def test_pack_options_apply_to_their_source_or_are_refused(tmp_path):
    sources, values = pack_sources(tmp_path)
    for source, base in sources.items():
        for flag in PACK_FLAGS:
            if flag in base or (source == "default" and flag in SOURCE_FLAGS) or (source, flag) == ("charades", "--action-genome"):
                continue  # the source's own option; a source flag that makes another source (Action Genome's)
            out = tmp_path / f"{source}{flag}.h5"
            rc, err = run_cli("pack", *base, flag, *values.get(flag, []), "--out", out, "--quiet")
            if flag in APPLIES[source]:
                assert rc == 0, (source, flag, err)
                check_applied(out, source, flag)
            else:
                line = assert_one_line(rc, err, "does not apply")  # "--x does not apply with --source", either way round
                assert flag in line and not out.exists(), (source, flag, line)


# -- what must succeed -----------------------------------------------------------------------------------
def test_long_video_ids_are_stored_whole(tmp_path):
    ids = ["VERYLONGVIDEOID_1", "VERYLONGVIDEOID_2", "X" * 128]
    rc, err = run_cli(*pack_stsgs({i: small_video() for i in ids})(tmp_path))
    assert rc == 0, err
    from tensorqa.scenes.store import open_store

    with open_store(tmp_path / "s.h5") as s:
        assert sorted(s.video_ids) == sorted(ids)
        assert s.scene("VERYLONGVIDEOID_2").video_id == "VERYLONGVIDEOID_2"
    out = tmp_path / "pool"
    assert run_cli("generate", tmp_path / "s.h5", "--out", out, "--quiet")[0] == 0
    got = {v for f in (out / "data").glob("*.parquet") for v in pq.read_table(f, columns=["video_id"]).column(0).to_pylist()}
    assert got == set(ids)  # every video asks questions (the same graph), under its whole id


def test_long_video_ids_from_charades_and_action_genome_are_stored_whole(tmp_path):
    """Item 4's other two paths: the Charades id column and Action Genome's VIDEO.mp4 keys."""
    from tensorqa.scenes.store import open_store

    ids = ["VERYLONGVIDEOID_1", "VERYLONGVIDEOID_2"]
    csv = charades_csv(tmp_path, [(i, "c092 0.5 3.0", 10.0) for i in ids])
    assert run_cli("pack", "--charades", csv, "--out", tmp_path / "c.h5", "--quiet")[0] == 0
    ag = tmp_path / "ag"
    ag.mkdir()
    (ag / "object_bbox_and_relationship.pkl").write_bytes(pickle.dumps({f"{ids[0]}.mp4/000031.png": ag_base()["46GP8.mp4/000031.png"]}))
    (ag / "person_bbox.pkl").write_bytes(pickle.dumps({f"{ids[1]}.mp4/000005.png": {}}))
    assert run_cli("pack", "--action-genome", ag, "--charades", csv, "--out", tmp_path / "a.h5", "--quiet")[0] == 0
    for store in ("c.h5", "a.h5"):
        with open_store(tmp_path / store) as s:
            assert s.video_ids == tuple(ids)


def test_old_store_with_8_byte_ids_opens(tmp_path):
    """Stores written before ids were checked hold S8 ids (and no other change)."""
    p = small_store(tmp_path)
    from tensorqa.scenes.store import open_store

    with open_store(p) as s:
        ids = s.video_ids
    with h5py.File(p, "r+") as f:
        del f["video_id"]
        f.create_dataset("video_id", data=np.array([i.encode() for i in ids], "S8"), maxshape=(None,), chunks=(128,))
    with open_store(p) as s:
        assert s.video_ids == ids


def test_frame_numbers_up_to_int32_are_kept(tmp_path):
    data = {"A": graph(frame(str(MAX_FRAME), 1.0), obj("o26", str(MAX_FRAME)))}
    assert run_cli(*pack_stsgs(data)(tmp_path))[0] == 0
    from tensorqa.scenes.store import open_store

    with open_store(tmp_path / "s.h5") as s:
        assert s.scene("A").frame_ids.tolist() == [MAX_FRAME]


def parquet_digest(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((folder / "data").glob("*.parquet"))}


def test_videos_without_keyframes_or_actions_in_batches_of_their_own(tmp_path):
    """Item 8/9: a video without keyframes (or without actions) alone in a batch; the records are
    those of the default batch, where the same video shares a batch with others."""
    data = {"46GP8": small_video(), "NOKEY1": graph(action("c001", 1, 0.5, 3.0)), "NOKEY2": {},
            "NOACT": graph(frame("000031", 1.3), obj("o26", "000031"))}
    assert run_cli(*pack_stsgs(data)(tmp_path))[0] == 0
    store = tmp_path / "s.h5"
    digests = []
    for batch in ("16", "1"):
        out = tmp_path / f"g{batch}"
        rc, err = run_cli("generate", store, "--out", out, "--batch-videos", batch, "--quiet")
        assert rc == 0, err
        digests.append(parquet_digest(out))
    assert digests[0] == digests[1] and digests[0]
    pairs = []
    for batch in ("16", "1"):
        out = tmp_path / f"f{batch}"
        rc, err = run_cli("foils", store, "--out", out, "--batch-videos", batch)
        assert rc == 0, err
        pairs.append(sorted(p.read_bytes() for p in out.rglob("*.jsonl")) + sorted(p.read_bytes() for p in out.rglob("*.parquet")))
    assert pairs[0] == pairs[1]
    rc, err = run_cli("ablate", store, "--ablate", "before=while", "--batch-videos", "1")
    assert rc == 0, err


# -- fuzz: each input format ---------------------------------------------------------------------------
FAST, SLOW = 50, 2000
FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def check_run(files: dict, args_of) -> None:
    """Write ``files`` into a fresh folder, run the command: success or one error line, never a
    traceback, nothing written outside the folder."""
    with tempfile.TemporaryDirectory(prefix="fuzz") as d:
        tmp = Path(d) / "w"
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        try:
            rc, err = run_cli(*args_of(tmp))
        except SystemExit as e:  # argparse
            rc, err = e.code, ""
        assert rc in (0, 2), (rc, err[-2000:])
        if rc == 2 and err:
            assert_one_line(rc, err)
        assert os.listdir(d) == ["w"], "wrote outside the folder"


scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=12), st.sampled_from(["train", "val", "000031", "o26", "c092", "r7", "../x", "a\0b"]))
json_values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=4)),
                           max_leaves=20)


def mutate(base, draw_value):
    """A strategy: ``base`` (nested dicts / lists) with up to 3 leaves or members replaced by fuzz."""
    def paths(x, prefix=()):
        yield prefix
        if isinstance(x, dict):
            for k, v in x.items():
                yield from paths(v, prefix + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                yield from paths(v, prefix + (i,))

    all_paths = list(paths(base))

    @st.composite
    def build(draw):
        data = pickle.loads(pickle.dumps(base))
        for _ in range(draw(st.integers(0, 3))):
            path = draw(st.sampled_from(all_paths))
            if not path:
                continue
            parent = data
            try:
                for k in path[:-1]:
                    parent = parent[k]
                parent[path[-1]] = draw(draw_value)
            except (KeyError, IndexError, TypeError):
                pass
        return data
    return build()


def stsgs_base():
    return {"46GP8": graph(frame("000031", 1.3), frame("000091", 3.8), obj("o26", "000031"),
                           {"id": "r7/000031", "type": "contact", "class": "r7", "objects": ["o26"]},
                           action("c092", 1, 0.5, 3.0)),
            "YSKX3": graph(frame("000005", 0.2))}


def fuzz_stsgs(data):
    check_run({"AGQA_train_stsgs.pkl": pickle.dumps(data)},
              lambda t: ["pack", "--agqa-stsgs", t / "AGQA_train_stsgs.pkl", "--out", t / "s.h5", "--quiet"])


def ag_base():
    return {"46GP8.mp4/000031.png": [{"class": "cup/glass/bottle", "visible": True, "attention_relationship": ["looking_at"],
                                      "spatial_relationship": ["in_front_of"], "contacting_relationship": ["holding"],
                                      "metadata": {"set": "train"}}],
            "46GP8.mp4/000091.png": []}


def fuzz_ag(data):
    csv = CSV_HEADER + "46GP8,S,Kitchen,6,7,Yes,s,cup,d,c092 0.5 3.0,10.0\n"
    check_run({"ag/object_bbox_and_relationship.pkl": pickle.dumps(data), "ag/person_bbox.pkl": pickle.dumps({}),
               "Charades_v1_train.csv": csv},
              lambda t: ["pack", "--action-genome", t / "ag", "--charades", t / "Charades_v1_train.csv", "--out", t / "s.h5",
                         "--quiet"])


def fuzz_charades(text):
    check_run({"Charades_v1_train.csv": text},
              lambda t: ["pack", "--charades", t / "Charades_v1_train.csv", "--out", t / "s.h5", "--quiet"])


csv_rows = st.lists(st.tuples(st.one_of(st.sampled_from(["46GP8", "YSKX3", "a/b", ""]), st.text(max_size=6)),
                              st.one_of(st.sampled_from(["c092 0.5 3.0", "c092 3.0 0.5;c001 1 2", "", "c999 1 2", "c092 nan 1",
                                                         "c092 1e30 1e31", "c092 -1 2"]), st.text(max_size=20)),
                              st.one_of(st.sampled_from(["10.0", "1e30", "nan", "-1", "", "inf"]), st.text(max_size=6))),
                    min_size=0, max_size=4)


def csv_text(rows):
    return CSV_HEADER + "".join(f'{v},S,K,6,7,Yes,s,cup,d,"{a}",{n}\n' for v, a, n in rows)


def fuzz_clevr(data):
    check_run({"CLEVR_val_scenes.json": json.dumps(data, allow_nan=True)},
              lambda t: ["pack", "--clevr-scenes", t / "CLEVR_val_scenes.json", "--out", t / "c.h5"])


def predictions_setup(tmp_path_factory):
    """A hierarchy folder of a small pool (AGQA-Decomp) for ``evaluate``."""
    d = tmp_path_factory.mktemp("hier")
    store = d / "s.h5"
    assert run_cli("pack", "--videos", "2", "--seed", "1", "--out", store, "--quiet")[0] == 0
    assert run_cli("generate", store, "--out", d / "pool", "--templates", "objWhat", "--quiet")[0] == 0
    assert run_cli("decompose", d / "pool", "--out", d / "dec", "--limit", "2", "--quiet")[0] == 0
    return d / "dec"


@pytest.fixture(scope="module")
def hierarchies(tmp_path_factory):
    return predictions_setup(tmp_path_factory)


def fuzz_predictions(hier, data):
    check_run({"p.json": json.dumps(data, allow_nan=True)},
              lambda t: ["evaluate", "--hierarchies", hier, "--predictions", t / "p.json", "--out", t / "ev"])


def fuzz_scores(data):
    check_run({"s.json": json.dumps(data, allow_nan=True)}, lambda t: ["score-foils", t / "s.json", "--out", t / "m.json"])


SCORES_BASE = [{"id": "a", "caption_score": 0.9, "foil_score": 0.2}, {"id": "b", "caption_score": 0.6, "foil_score": 0.7}]
PRED_BASE = [{"csv_q_id": "Q0000-0", "prediction": "book"}, {"csv_q_id": "Q0001-0", "prediction": "yes"}]
raw_bytes = st.binary(max_size=200)


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_stsgs_pickle(n):
    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(mutate(stsgs_base(), json_values), json_values))
    def run(data):
        fuzz_stsgs(data)
    run()


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_action_genome_pickle(n):
    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(mutate(ag_base(), json_values), json_values))
    def run(data):
        fuzz_ag(data)
    run()


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_charades_csv(n):
    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(csv_rows.map(csv_text), st.text(max_size=300).map(lambda t: CSV_HEADER + t)))
    def run(text):
        fuzz_charades(text)
    run()


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_clevr_scene_json(n):
    base = {"info": {"split": "val"}, "scenes": [clevr_scene(2), clevr_scene(1, image_filename="CLEVR_val_000001.png")]}

    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(mutate(base, json_values), json_values))
    def run(data):
        fuzz_clevr(data)
    run()


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_predictions_json(n, hierarchies):
    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(mutate(PRED_BASE, json_values), json_values))
    def run(data):
        fuzz_predictions(hierarchies, data)
    run()


@pytest.mark.parametrize("n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="slow", marks=pytest.mark.slow)])
def test_fuzz_foil_scores_json(n):
    @settings(max_examples=n, **FUZZ)
    @given(st.one_of(mutate(SCORES_BASE, json_values), json_values))
    def run(data):
        fuzz_scores(data)
    run()
