"""The CLEVR paper's analyses over a question pool (CLEVR's questions JSON or our Parquet pool): its
statistics, and two ablations that run the scalar executor with one handler replaced
(docs/reference/clevr.md states our reading of each)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from tensorqa.clevr.records import answer_text
from tensorqa.clevr.scalar import INVALID, replace_and_prune, run_program
from tensorqa.errors import TensorQAError
from tensorqa.scenes.clevr_sampler import DIRECTIONS
from tensorqa.scenes.static_store import StaticStore

CHAIN_FILES = ("zero_hop.json", "one_hop.json", "two_hop.json", "three_hop.json")


def load_pool(path: str | Path) -> list[dict]:
    """Questions of a CLEVR questions JSON file or a Parquet pool folder (answers as written)."""
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        try:
            d = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TensorQAError(f"{p}: not JSON") from None
        if not isinstance(d, dict) or not isinstance(d.get("questions"), list):
            raise TensorQAError(f"{p}: not a CLEVR questions file (expected {{'info': ..., 'questions': [...]}})")
        return d["questions"]
    if not (p.is_dir() and any((p / "data").glob("*.parquet"))):
        raise TensorQAError(f"{p}: neither a CLEVR questions JSON file nor a pool folder with data/*.parquet")
    from tensorqa.writers import pool_shards

    files = [f for fs in pool_shards(p).values() for f in fs]  # a complete pool only
    import pyarrow.parquet as pq

    out = []
    for f in files:
        for q in pq.read_table(f).to_pylist():
            q["program"] = json.loads(q["program"])
            out.append(q)
    return out


def is_clevr_pool(path: str | Path) -> bool:
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        return True
    files = sorted((p / "data").glob("*.parquet")) if p.is_dir() else []
    if files:
        import pyarrow.parquet as pq

        return "template_filename" in pq.read_schema(files[0]).names
    return False


def _fn(node: dict) -> str:
    return node.get("type", node.get("function"))


def pool_stats(path: str | Path) -> dict:
    """Questions per family and per question type (final function), answers per type, words per
    question, and the Q-type-mode baseline (the majority answer of each type)."""
    qs = load_pool(path)
    fam = Counter(f"{q['template_filename']}#{q['question_family_index']}" for q in qs)
    qtype = Counter(_fn(q["program"][-1]) for q in qs)
    answers: dict = defaultdict(Counter)
    for q in qs:
        answers[_fn(q["program"][-1])][answer_text(q["answer"])] += 1
    mode_right = sum(c.most_common(1)[0][1] for c in answers.values())
    words = [len(q["question"].split()) for q in qs]
    return {"questions": len(qs), "images": len({q["image_filename"] for q in qs}), "families": dict(sorted(fam.items())),
            "question_types": {k: {"questions": n, "share": round(n / len(qs), 4)} for k, n in sorted(qtype.items())},
            "answers": {k: dict(c.most_common()) for k, c in sorted(answers.items())},
            "qtype_mode_accuracy": round(mode_right / max(len(qs), 1), 4),
            "qtype_mode_by_type": {k: round(c.most_common(1)[0][1] / sum(c.values()), 4) for k, c in sorted(answers.items())},
            "words_per_question": {"mean": round(float(np.mean(words)), 2) if words else 0, "max": max(words, default=0)}}


def format_stats(s: dict) -> str:
    lines = [f"{s['questions']:,} questions on {s['images']:,} images, {len(s['families'])} families; "
             f"{s['words_per_question']['mean']} words per question",
             f"Q-type mode baseline: {100 * s['qtype_mode_accuracy']:.1f} % right", "", "type               questions  share   mode"]
    for k, v in s["question_types"].items():
        lines.append(f"{k:<18} {v['questions']:>9,}  {100 * v['share']:5.1f} %  {100 * s['qtype_mode_by_type'][k]:5.1f} %")
    return "\n".join(lines)


def _scenes_of(store: str | Path) -> dict[str, dict]:
    with StaticStore(store) as st:
        return {s.image_filename: s.to_json() for s in st.scenes()}


def _bypass(program: list, i: int) -> list:
    """Drop filter node i: its consumers read its input."""
    src = program[i]["inputs"][0]
    prog = [dict(n, inputs=[src if j == i else j for j in n["inputs"]]) for n in program]
    return replace_and_prune(prog, len(prog) - 1, prog[-1])


def _droppable(program: list) -> list[int]:
    return [i for i, n in enumerate(program) if _fn(n).startswith("filter_") or _fn(n) == "relate"]


def _program(q: dict) -> list[dict]:
    """A pool question's program with ``side_inputs`` (the scalar executor's spelling)."""
    return [{"type": _fn(n), "inputs": n["inputs"], "side_inputs": n.get("value_inputs", n.get("side_inputs", []))}
            for n in q["program"]]


def _effective(prog: list, sc: dict) -> list:
    """``prog`` with steps dropped, greedily from its end, while the answer stays."""
    ans = run_program(prog, sc)
    dropped = True
    while dropped:
        dropped = False
        for i in reversed(_droppable(prog)):
            trial = (replace_and_prune(prog, i, {"type": "scene", "inputs": [], "side_inputs": []})
                     if _fn(prog[i]) == "relate" else _bypass(prog, i))
            if run_program(trial, sc) == ans:
                prog, dropped = trial, True
                break
    return prog


def effective_size(pool: str | Path, store: str | Path) -> dict:
    """Per question (same-attribute ones excluded, as in the paper), how many program steps
    (``filter_*``, ``relate``) can be dropped without changing the answer: a dropped filter passes its
    input through, a dropped relate becomes ``scene``."""
    scenes = _scenes_of(store)
    out: dict = defaultdict(Counter)
    for q in load_pool(pool):
        prog = _program(q)
        if any(_fn(n).startswith("same_") for n in prog):
            continue
        sc = scenes.get(q["image_filename"])
        if sc is None:
            raise TensorQAError(f"{store}: has no scene {q['image_filename']!r} of the pool")
        out[len(prog)][len(_effective(prog, sc))] += 1
    return {"by_program_size": {str(k): dict(sorted(v.items())) for k, v in sorted(out.items())},
            "questions": sum(sum(v.values()) for v in out.values()),
            "mean_program_size": _mean({k: sum(v.values()) for k, v in out.items()}),
            "mean_effective_size": _mean(sum((v for v in out.values()), Counter()))}


def _mean(c: dict) -> float:
    n = sum(c.values())
    return round(sum(k * v for k, v in c.items()) / n, 3) if n else 0.0


def _absolute_relate(scene, inputs, side):
    d = DIRECTIONS[side[0]]
    return [j for j, o in enumerate(scene["objects"]) if o["3d_coords"][0] * d[0] + o["3d_coords"][1] * d[1] > 0]


def absolute_spatial(pool: str | Path, store: str | Path) -> dict:
    """``relate`` as "the objects in the image half the relation names" (3-D coordinates projected on
    its direction), ignoring its input: how many answers stay right, by number of relations, on the
    chain families."""
    scenes = _scenes_of(store)
    by: dict = defaultdict(lambda: [0, 0])
    for q in load_pool(pool):
        if q["template_filename"] not in CHAIN_FILES:
            continue
        prog = _program(q)
        sc = scenes[q["image_filename"]]
        got = run_program(prog, sc, handlers={"relate": _absolute_relate})
        want = run_program(prog, sc)
        r = sum(_fn(n) == "relate" for n in prog)
        by[r][0] += 1
        by[r][1] += got == want and got != INVALID
    return {str(r): {"questions": n, "still_right": k, "share": round(k / n, 4)} for r, (n, k) in sorted(by.items())}
