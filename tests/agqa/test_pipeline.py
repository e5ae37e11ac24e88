"""Bulk generation: answers re-derived by the scalar reference executor, determinism across batch
sizes and shard counts, restart behaviour, record well-formedness, CLI errors."""

import os
import random
import re
from collections import Counter
from pathlib import Path
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest
import torch

from tensorqa import TensorQAError
from tensorqa.agqa import generate
from tensorqa.scenes.pack import pack_default
from tensorqa.agqa.program import parse_program
from tensorqa.agqa.executor import run_program
from tensorqa.scenes.store import open_store
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import RECORD_SCHEMA, read_pool, shard_complete


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return pack_default(tmp_path_factory.mktemp("gen") / "s.h5", videos=24, seed=5, progress=False)


@pytest.fixture(scope="module")
def pool(tmp_path_factory, store):
    out = tmp_path_factory.mktemp("pool")
    generate(store, out, batch_videos=8, progress=False)
    return out, read_pool(out)


def test_answers_agree_with_the_scalar_reference_executor(store, pool):
    # Every record's program string, run by the plain-Python executor on the same video, must give
    # the record's answer (a sample stratified by template, so that rare templates are checked too:
    # the executor is slow by design).
    _, table = pool
    rows = table.select(["video_id", "template", "program", "answer"]).to_pylist()
    by_template = {}
    for r in rows:
        by_template.setdefault(r["template"], []).append(r)
    rng = random.Random(0)
    sample = [r for t in sorted(by_template) for r in rng.sample(by_template[t], min(120, len(by_template[t])))]
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in sample}}
    wrong = [(r["template"], r["program"], r["answer"], run_program(r["program"], scenes[r["video_id"]]))
             for r in sample if run_program(r["program"], scenes[r["video_id"]]) != r["answer"]]
    assert not wrong, wrong[:5]
    assert len({r["template"] for r in sample}) >= 20


def test_max_videos_keeps_the_split_proportions_and_each_video_its_records(store, pool, tmp_path):
    # the store (24 videos) lists 19 train videos, then 5 test; 8 videos: 8 * 5 / 24 = 1.67 test,
    # 6.33 train: floors 1 and 6, the one left to the larger remainder (test)
    with open_store(store) as s:
        assert Counter(s.splits) == {"train": 19, "test": 5} and s.splits[-5:] == ("test",) * 5
    out = tmp_path / "some"
    stats = generate(store, out, max_videos=8, batch_videos=3, seed=0, progress=False)
    some = read_pool(out)
    videos = Counter(dict(zip(some["video_id"].to_pylist(), some["split"].to_pylist())).values())
    assert stats["videos"] == 8 and videos == {"train": 6, "test": 2}
    # a video's records do not depend on which others are generated with it: the whole pool's rows of these videos
    _, whole = pool
    mine = whole.filter(pa.compute.is_in(whole["video_id"], value_set=pa.array(sorted(set(some["video_id"].to_pylist())))))
    key = [("question_id", "ascending")]
    assert some.sort_by(key).equals(mine.sort_by(key))


def test_records_are_well_formed(pool):
    _, table = pool
    ids = table["question_id"].to_pylist()
    assert len(ids) == len(set(ids)), "duplicate question ids"
    for q, p in zip(table["question"].to_pylist()[:20000], table["program"].to_pylist()[:20000]):
        assert "{" not in q and "<" not in q and q.endswith("?") and "  " not in q
        assert "<" not in p
    for p in random.Random(1).sample(table["program"].to_pylist(), 300):
        assert str(parse_program(p)) == p  # AGQA syntax, round-trips through the engine's parser
    assert set(table["ans_type"].to_pylist()) <= {"open", "binary"}
    assert max(table["steps"].to_pylist()) <= 8
    # question ids number each video's questions 0..n-1
    by_video = {}
    for qid in ids:
        v, n = qid.rsplit("-", 1)
        by_video.setdefault(v, []).append(int(n))
    assert all(sorted(ns) == list(range(len(ns))) for ns in by_video.values())


def test_files_read_back_as_the_record_schema_with_catalogue_metadata(pool):
    # Vocabulary columns are written from dictionary arrays; on disk and when read back they are
    # plain strings, and every reader sees RECORD_SCHEMA's types (no Arrow-only schema stored).
    out, table = pool
    for f in sorted((out / "data").glob("*.parquet")):
        assert pq.read_schema(f).equals(RECORD_SCHEMA), f
        assert b"ARROW:schema" not in (pq.read_metadata(f).metadata or {})
    assert table.schema.equals(RECORD_SCHEMA)
    meta = table.select(["template", "global", "ans_type", "semantic", "structural"]).to_pylist()
    for r in random.Random(2).sample(meta, 3000):
        spec = TEMPLATES[r["template"]]
        assert (r["global"], r["ans_type"], r["semantic"], r["structural"]) == \
            (list(spec.global_), spec.ans_type, spec.semantic, spec.structural)
    v = vocab()
    assert set(table["object"].to_pylist()) <= set(v.object_ids) | {""}
    assert set(table["relation"].to_pylist()) <= set(v.relation_ids) | {""}
    assert set(table["action"].to_pylist()) <= set(v.actions) | {""}
    assert set(table["object_ref"].to_pylist()) <= {"", "first", "last", "whole"}


def test_same_pool_whatever_the_batch_size(tmp_path, store, pool):
    out, table = pool
    other = tmp_path / "b3"
    generate(store, other, batch_videos=3, progress=False)
    for split in ("train", "test"):
        name = f"data/{split}-00000-of-00001.parquet"
        assert (out / name).read_bytes() == (other / name).read_bytes()


def test_row_groups_reach_the_parquet_writer_in_chunks_fixed_by_row_position(tmp_path, pool):
    # the Parquet writer cuts pages within each chunk it is given: the chunks must not depend on
    # where the caller's blocks ended, or neither would the file's bytes
    from tensorqa.writers import WRITE_BATCH_ROWS, fixed_chunks, parquet_writer

    assert WRITE_BATCH_ROWS == 8192
    table = pool[1].slice(0, 50_000)
    files = []
    for cuts in ([], [7, 1000, 20_001], [33_333]):
        edges = [0, *cuts, table.num_rows]
        cut = pa.concat_tables([table.slice(a, b - a) for a, b in zip(edges, edges[1:])])
        fixed = fixed_chunks(cut, rows=WRITE_BATCH_ROWS)  # chunks of the writer's batch, the smallest that works
        assert fixed.equals(table)
        assert {tuple(len(c) for c in col.chunks) for col in fixed.columns} == {(8192,) * 6 + (848,)}
        path = tmp_path / f"{len(cuts)}.parquet"
        with parquet_writer(path, fixed.schema) as w:
            w.write_table(fixed, row_group_size=table.num_rows)
        files.append(path.read_bytes())
    with parquet_writer(tmp_path / "whole.parquet", table.schema) as w:  # one chunk: the same pages
        w.write_table(table.combine_chunks(), row_group_size=table.num_rows)
    assert files[0] == files[1] == files[2] == (tmp_path / "whole.parquet").read_bytes()
    assert fixed_chunks(table.slice(0, 0)).num_rows == 0


def test_content_digest_compares_records_not_file_bytes(tmp_path, pool):
    # two machines with different pyarrow versions write different bytes (created_by) for the same
    # records; the digest must see only the records
    from tensorqa.writers import content_digest

    table = pool[1].slice(0, 30_000)
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    pq.write_table(table, a, compression="zstd", row_group_size=10_000)
    pq.write_table(table.combine_chunks(), b, compression="snappy", row_group_size=7_000, use_dictionary=False)
    assert a.read_bytes() != b.read_bytes()
    assert content_digest(a) == content_digest(b)
    answers = table["answer"].to_pylist()
    answers[0] = "no" if answers[0] == "yes" else "yes"
    changed = table.set_column(table.schema.get_field_index("answer"), "answer", pa.array(answers))
    pq.write_table(changed, c, compression="zstd", row_group_size=10_000)
    assert content_digest(c) != content_digest(a)
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(TensorQAError, match="bad.parquet"):
        content_digest(tmp_path / "bad.parquet")


def test_same_pool_whatever_the_shard_count(tmp_path, store, pool):
    _, table = pool
    out = tmp_path / "sharded"
    for i in range(3):
        generate(store, out, batch_videos=5, num_shards=3, shard_index=i, progress=False)
    assert read_pool(out).equals(table)


@pytest.mark.slow  # starts processes
def test_jobs_run_the_shards_as_processes_with_the_same_records(tmp_path, store, pool):
    _, table = pool
    out = tmp_path / "jobs"
    stats = generate(store, out, jobs=2, batch_videos=5, progress=False)
    assert read_pool(out).equals(table)
    assert all(shard_complete(out, i, 2) for i in range(2))
    assert stats["questions"] == table.num_rows and stats["num_shards"] == 2
    assert stats["per_template"] == dict(Counter(table["template"].to_pylist()))
    assert generate(store, out, jobs=2, progress=False)["skipped"]  # restart: both shards complete
    with pytest.raises(TensorQAError, match="--jobs"):
        generate(store, tmp_path / "x", jobs=2, num_shards=2, shard_index=0, progress=False)
    with pytest.raises(TensorQAError, match="--jobs must be at least 1"):
        generate(store, tmp_path / "x", jobs=0, progress=False)
    with pytest.raises(TensorQAError, match="missing.h5"):
        generate(tmp_path / "missing.h5", tmp_path / "x", jobs=2, progress=False)


def test_jobs_rerun_of_a_complete_pool_starts_no_process(tmp_path, store, pool, monkeypatch, capsys):
    from tensorqa.agqa import jobs
    from tensorqa.cli import main

    out = tmp_path / "jobs"
    for i in range(2):  # the two shards a --jobs 2 run writes, here in this process
        generate(store, out, batch_videos=8, num_shards=2, shard_index=i, progress=False)

    def no_process(*args, **kwargs):
        raise AssertionError("a complete pool started shard processes")

    monkeypatch.setattr(jobs, "_run_jobs", no_process)
    assert main(["generate", str(store), "--out", str(out), "--jobs", "2"]) == 0
    said = capsys.readouterr()
    assert said.out.strip() == f"all 2 shards of {out} already complete: skipped"
    assert "generate (2 processes)" not in said.err  # no progress bar first
    generate(store, tmp_path / "half", batch_videos=8, num_shards=2, shard_index=0, progress=False)
    with pytest.raises(AssertionError, match="started shard processes"):  # one shard left: it runs
        generate(store, tmp_path / "half", jobs=2, progress=False)


@pytest.mark.slow  # starts processes
def test_jobs_auto_is_one_process_per_core_that_memory_holds(tmp_path, store, pool, monkeypatch):
    from tensorqa.agqa import jobs

    cores = len(os.sched_getaffinity(0))
    assert 1 <= jobs.auto_jobs("cpu") <= cores and 1 <= jobs.auto_jobs("cuda") <= cores
    monkeypatch.setitem(jobs.PROCESS_GIB, "cpu", 1e6)  # a machine whose memory holds one process
    assert jobs.auto_jobs("cpu") == 1
    monkeypatch.undo()
    monkeypatch.setattr(jobs, "memory_gib", lambda: 6.5)  # e.g. a container limited to 6.5 GiB
    assert jobs.auto_jobs("cpu") == min(cores, 2) and jobs.auto_jobs("cuda") == 1
    monkeypatch.setattr(jobs, "memory_gib", lambda: None)  # memory unknown: the cores decide
    assert jobs.auto_jobs("cpu") == cores
    monkeypatch.undo()
    r = subprocess.run([sys.executable, "-m", "tensorqa.cli", "generate", str(store), "--out", str(tmp_path / "auto"),
                        "--jobs", "auto", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert read_pool(tmp_path / "auto").equals(pool[1])
    assert len(list((tmp_path / "auto" / "data").glob("train-*.parquet"))) == jobs.auto_jobs("cpu")
    r = subprocess.run([sys.executable, "-m", "tensorqa.cli", "generate", str(store), "--out", str(tmp_path / "x"),
                        "--jobs", "many"], capture_output=True, text=True)
    assert r.returncode == 2 and "--jobs" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(TensorQAError, match="--jobs must be a number"):
        generate(store, tmp_path / "x", jobs="3", progress=False)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _shard_processes(pid: int) -> list[int]:
    """The spawned children of ``pid`` (not multiprocessing's resource tracker) that are past
    their start-up: torch is loaded, so they have read everything from the parent and run a shard."""
    out = []
    for c in _children(pid):
        try:
            with open(f"/proc/{c}/cmdline") as f, open(f"/proc/{c}/maps") as m:
                if "spawn_main" in f.read() and "libtorch" in m.read():
                    out.append(c)
        except OSError:
            pass
    return out


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and line.split()[1] in "ZX" for line in f)
    except OSError:
        return False


@pytest.mark.slow  # fault injection on real processes
@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads children from Linux's /proc")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_jobs_stop_when_the_parent_is_stopped(tmp_path, store, sig):
    """``kill`` of a ``--jobs`` run stops its shard processes: SIGTERM through the parent's cleanup
    (a one-line error, non-zero exit), SIGKILL through each child's watch of its parent."""
    import signal
    import time

    cmd = [sys.executable, "-m", "tensorqa.cli", "generate", str(store), "--out", str(tmp_path / "p"), "--jobs", "2",
           "--batch-videos", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while len(kids) < 2 and time.monotonic() < deadline and proc.poll() is None:
        kids = _shard_processes(proc.pid)
        time.sleep(0.02)
    assert len(kids) == 2, "the shard processes did not start"
    time.sleep(0.5)  # into their shards
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    deadline = time.monotonic() + 10  # well before the shards would have finished on their own
    while any(_running(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(k) for k in kids), "a shard process outlived its parent"
    if sig == "SIGTERM":
        assert proc.returncode != 0 and "terminated (SIGTERM)" in err and "Traceback" not in err, err
    assert not any(shard_complete(tmp_path / "p", i, 2) for i in range(2))  # stopped, not finished


def test_complete_shards_are_skipped_and_partial_ones_redone(tmp_path, store):
    out = tmp_path / "restart"
    generate(store, out, num_shards=2, shard_index=0, progress=False, templates=["objExists"])
    assert shard_complete(out, 0, 2) and not shard_complete(out, 1, 2)
    assert generate(store, out, num_shards=2, shard_index=0, progress=False, templates=["objExists"])["skipped"]
    # a half-written shard: partial files and no marker -> generated again from scratch
    (out / "data" / "train-00001-of-00002.parquet.partial").write_bytes(b"garbage")
    stats = generate(store, out, num_shards=2, shard_index=1, progress=False, templates=["objExists"])
    assert stats["questions"] > 0 and shard_complete(out, 1, 2)
    assert not list((out / "data").glob("*.partial"))
    pq.read_table(out / "data" / "train-00001-of-00002.parquet")


def test_a_restart_refuses_a_folder_of_another_run(tmp_path, store):
    # Shards are skipped only when their done markers record this run's parameters: another seed,
    # template set, store, video count, format or shard count would mix two pools in one folder
    # (or keep the old one in place of the new).
    out = tmp_path / "p"
    first = dict(num_shards=2, shard_index=0, progress=False, templates=["objExists", "relExists"], max_videos=6)
    generate(store, out, **first)
    files = {p.name: p.read_bytes() for p in (out / "data").iterdir()}
    other = pack_default(tmp_path / "other.h5", videos=6, seed=6, progress=False)
    for change, needle in [({"seed": 1}, "seed 0 (this run: 1)"), ({"templates": ["objExists"]}, "templates"),
                           ({"max_videos": 5}, "for 6 videos (this run: 5)"), ({"semantics": "strict"}, "semantics"),
                           ({"fmt": "agqa-json"}, "format"), ({"num_shards": 3}, "of a 2-shard run"),
                           ({"store": other}, "another scene store")]:
        args = {**first, **change}
        source = args.pop("store", store)
        with pytest.raises(TensorQAError, match=re.escape(needle)):
            generate(source, out, **args)
        with pytest.raises(TensorQAError, match=re.escape(needle)):  # the other shard of a run, too
            generate(source, out, **{**args, "shard_index": 1})
    with pytest.raises(TensorQAError, match="of a 2-shard run"):
        generate(store, out, jobs=3, progress=False, templates=first["templates"], max_videos=6)
    assert {p.name: p.read_bytes() for p in (out / "data").iterdir()} == files  # nothing written, nothing lost
    # the same run from a copy of the store elsewhere, or with other blocks: still a restart
    copy = tmp_path / "elsewhere.h5"
    copy.write_bytes(Path(store).read_bytes())
    assert generate(copy, out, **first, batch_videos=2)["skipped"]


def test_torchrun_environment_picks_the_shard(tmp_path, store, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    stats = generate(store, tmp_path / "env", progress=False, templates=["relExists"])
    assert (stats["shard"], stats["num_shards"]) == (1, 2)


def test_agqa_json_output(tmp_path, store):
    import json

    generate(store, tmp_path / "j", fmt="agqa-json", progress=False, templates=["objRelExists"])
    data = json.load(open(tmp_path / "j" / "agqa" / "train-00000-of-00001.json"))
    qid, rec = next(iter(data.items()))
    assert qid.startswith(rec["video_id"] + "-")
    assert {"question", "answer", "global", "local", "ans_type", "steps", "semantic", "structural", "program",
            "sg_grounding", "novel_comp", "more_steps"} <= set(rec)


def test_bad_parameters(tmp_path, store):
    with pytest.raises(TensorQAError, match="unknown template|template"):
        generate(store, tmp_path / "x", templates=["objExsts"], progress=False)
    with pytest.raises(TensorQAError, match="--batch-videos"):
        generate(store, tmp_path / "x", batch_videos=0, progress=False)
    with pytest.raises(TensorQAError, match="shard index"):
        generate(store, tmp_path / "x", num_shards=2, shard_index=2, progress=False)
    r = subprocess.run([sys.executable, "-m", "tensorqa.cli", "generate", str(tmp_path / "missing.h5"), "--out",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "missing.h5" in r.stderr


def test_indirect_object_actions(store, pool):
    # §b.3 "Actions": actTime (both actions), relTime and objTime (their action) also ask about an
    # action whose object is described by a reference, printed as ToAction(<verb>, <object reference>).
    # objTime's object may be a reference at the same time (each adds a step). The
    # scalar executor resolves ToAction to the class with that verb and object occurring in the
    # video, and must give each record's answer.
    import re

    from tensorqa.scenes.vocab import vocab

    _, table = pool
    rows = [r for r in table.select(["video_id", "template", "program", "answer", "question", "action_ref",
                                     "action2_ref", "action", "action2", "steps", "i_obj", "is_direct",
                                     "object_ref"]).to_pylist()
            if r["action_ref"] or r["action2_ref"]]
    assert {r["template"] for r in rows} == {"actTime", "relTime", "objTime"}
    assert {r["action_ref"] for r in rows} | {r["action2_ref"] for r in rows} <= {"", "first", "last", "whole"}
    assert all(r["template"] == "actTime" for r in rows if r["action2_ref"])  # relTime, objTime: one action
    assert any(r["object_ref"] for r in rows if r["template"] == "objTime")  # object and action indirect
    v = vocab()
    with open_store(store) as s:
        scenes = {vid: s.scene(vid) for vid in {r["video_id"] for r in rows}}
    wrong = []
    for r in random.Random(2).sample(rows, min(600, len(rows))):
        n_refs = r["program"].count("ToAction(")
        # base 5, one step per reference (objTime's object reference included)
        assert n_refs in (1, 2) and r["steps"] == 5 + n_refs + bool(r["object_ref"])
        assert r["i_obj"] == 1 and r["is_direct"] == 0
        assert "{" not in r["question"] and "ToAction" not in r["question"] and r["question"].endswith("?")
        # the reference is never defined through the action's own verb (e.g. "holding the object
        # they were holding first"), and never stands for a picture or in c044
        for verb, rel in re.findall(r"ToAction\((\w+), Query\(class, OnlyItem\(.*?\[relations, ([\w ]+), objects\]",
                                    r["program"]):
            verb_rel = v.verb_relation[v.verb_english.index(verb)]
            assert v.relation_index(rel) != verb_rel, r["program"]
        indirect = []  # the slots written as ToAction
        if "Localize(temporal tag, ToAction(" in r["program"]:
            indirect.append(r["action2"] if r["template"] == "actTime" else r["action"])
        if r["template"] == "actTime" and "Exists(ToAction(" in r["program"]:
            indirect.append(r["action"])
        assert len(indirect) == n_refs
        for a in indirect:
            assert a != "c044" and v.action_object[v.action_index(a)] != v.object_index("picture")
        got = run_program(r["program"], scenes[r["video_id"]])
        if got != r["answer"]:
            wrong.append((r["program"], r["answer"], got))
    assert not wrong, wrong[:5]
    # both slots of actTime can be indirect
    assert any(r["program"].count("ToAction(") == 2 for r in rows if r["template"] == "actTime")


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _files(out):
    return {f.relative_to(out).as_posix(): f.read_bytes() for f in sorted((out / "data").glob("*.parquet"))}


@needs_cuda
@pytest.mark.parametrize("kernels", ["auto", "on", "off"])
def test_cuda_pool_is_byte_identical_to_the_cpu_pool(tmp_path, store, pool, kernels):
    # the device must not change a byte: the same Parquet files from the GPU (the kernels auto
    # picks, every kernel, or torch primitives only) as from the CPU, with a block size of its own
    out = tmp_path / "gpu"
    stats = generate(store, out, device="cuda", batch_videos=7, kernels=kernels, progress=False)
    assert stats["questions"] == pool[1].num_rows
    assert _files(out) == _files(pool[0])


@needs_cuda
def test_cuda_jobs_share_the_gpu_with_the_same_records(tmp_path, store, pool):
    out = tmp_path / "gpu-jobs"
    generate(store, out, device="cuda", jobs=2, batch_videos=5, progress=False)
    assert read_pool(out).equals(pool[1])


@needs_cuda
def test_cuda_agqa_json_with_grounding_matches_the_cpu(tmp_path, store):
    # AGQA's JSON dict with sg_grounding (vertex ids from the scene graph) is device-independent too
    outs = {}
    for device in ("cpu", "cuda"):
        generate(store, tmp_path / device, device=device, fmt="agqa-json", progress=False,
                 templates=["objRelExists", "objFirst", "actTime"])
        outs[device] = {f.name: f.read_bytes() for f in sorted((tmp_path / device / "agqa").glob("*.json"))}
    assert outs["cuda"] == outs["cpu"] and outs["cpu"]
