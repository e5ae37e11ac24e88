"""Time ``tensorqa evaluate`` on a synthetic AGQA-Decomp folder of a chosen size.

    python benchmarks/bench_evaluate.py                          # ~5M sub-questions (about 1.3 GB of JSON)
    python benchmarks/bench_evaluate.py --subquestions 1000000   # a scaled run; prints the extrapolation

The folder mimics the real layout: one ``<video>.json`` per video, ~10 sub-questions per main question,
texts repeated across the main questions of a video (so per-video deduplication has work to do),
banned open questions under every interaction, Choose / Equals / First hierarchies next to And / Xor
over temporal localizations, an ``isolated.json``, and predictions in the official list format with a
few unknown and missing keys. The folder is generated once and reused (``--dir``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import time
from pathlib import Path

import numpy as np

OBJECTS = ["cup", "phone", "book", "dish", "pillow", "blanket", "laptop", "shoe", "bag", "box", "door", "towel"]
ACTIONS = ["sitting down", "standing up", "opening a door", "drinking from a cup", "eating some food",
           "watching television", "walking through a doorway", "holding a pillow"]
WORDS = [("after", "After"), ("before", "Before"), ("while", "While")]


def _q(sub, text, qtype, answer, key, program):
    if text not in sub:
        sub[text] = {"type": qtype, "answer": answer, "program": program, "key": key}
    return text


class _Video:
    """Builds one video file; question keys are unique per (video, text) like AGQA's CSV ids."""

    def __init__(self, vid: str, rng: np.random.Generator):
        self.vid, self.rng, self.keys = vid, rng, {}
        self.tag = ""  # appended to most texts: "" shares them across main questions, " [m]" does not

    def key(self, text):
        return self.keys.setdefault(text, f"{self.vid}-{len(self.keys)}")

    def yn(self):
        return "yes" if self.rng.random() < 0.5 else "no"

    def interaction(self, sub, hier, o):
        text = f"Did they hold the {o}{self.tag}?"
        t = _q(sub, text, "Interaction", self.yn(), self.key(text), f"Exists(hold, {o})")
        text = f"Does the {o} exist{self.tag}?"
        kids = [_q(sub, text, "Object Exists", self.yn(), self.key(text), f"ObjExists({o})"),
                _q(sub, "Did they hold something?", "Relation Exists", self.yn(), self.key("Did they hold something?"),
                   "Exists(hold)"),
                _q(sub, "What did they hold?", "Object", o, self.key("What did they hold?"), "Query(hold)")]
        hier[t] = {"Interaction": kids}
        return t

    def temporal(self, sub, hier, o, a):
        w, W = WORDS[int(self.rng.integers(len(WORDS)))]
        text = f"Were they holding the {o} {w} {a}{self.tag}?"
        t = _q(sub, text, f"Interaction {W}", self.yn(), self.key(text), f"Iterate({w}, {a})")
        kid = self.interaction(sub, hier, o)
        text = f"Did they {a}{self.tag}?"
        act = _q(sub, text, "Exists " + W, self.yn(), self.key(text), f"Exists({a})")
        hier[t] = {W: [kid, act]}
        return t

    def conjunction(self):
        sub, hier = {}, {}
        o1, o2 = self.rng.choice(OBJECTS, 2, replace=False)
        a1, a2 = self.rng.choice(ACTIONS, 2, replace=False)
        kind = "And" if self.rng.random() < 0.5 else "Xor"
        c1, c2 = self.temporal(sub, hier, o1, a1), self.temporal(sub, hier, o2, a2)
        text = f"{c1[:-1]} {'and' if kind == 'And' else 'but not'} {c2[0].lower()}{c2[1:]}"
        root = _q(sub, text, kind, self.yn(), self.key(text), f"{kind}(...)")
        hier = {root: {kind: [c1, c2]}, **hier}
        return root, {"subquestion": sub, "hierarchy": hier}

    def choose(self):
        sub, hier = {}, {}
        o1, o2 = (str(o) for o in self.rng.choice(OBJECTS, 2, replace=False))
        first = _q(sub, "Which object did they hold first?", "First Object", o1,
                   self.key("Which object did they hold first?"), "First(hold)")
        hier[first] = {"First": [_q(sub, "What did they hold?", "Object", o1, self.key("What did they hold?"), "Q")]}
        eqs = []
        for o in (o1, o2):
            text = f"Is the first object they held the {o}{self.tag}?"
            eq = _q(sub, text, "Object Equals", "yes" if o == o1 else "no", self.key(text), f"Equals({o})")
            ex_text = f"Does the {o} exist{self.tag}?"
            ex = _q(sub, ex_text, "Object Exists", "yes", self.key(ex_text), f"ObjExists({o})")
            hier[eq] = {"Equals": [ex, first]}
            eqs.append(eq)
        text = f"Which did they hold first, the {o1} or the {o2}{self.tag}?"
        root = _q(sub, text, "Choose", o1, self.key(text), "Choose(...)")
        hier = {root: {"Choose": eqs}, **hier}
        return root, {"subquestion": sub, "hierarchy": hier}


def build_folder(root: Path, subquestions: int, videos: int, distinct: bool = False, seed: int = 0) -> tuple[int, list]:
    """Write the folder; returns (sub-questions written, [(key, answer, type)] for predictions)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    per_video = max(1, round(subquestions / videos / 9.9))  # ~9.9 sub-questions per main question
    total, answers = 0, []
    for v in range(videos):
        gen = _Video(f"v{v:05d}", rng)
        data = {}
        for m in range(per_video):
            gen.tag = f" [{m}]" if distinct else ""
            main, value = gen.conjunction() if rng.random() < 0.7 else gen.choose()
            data[f"{gen.vid}-m{m}"] = value
            total += len(value["subquestion"])
            answers.extend((i["key"], i["answer"]) for i in value["subquestion"].values() if i["type"] != "Object")
        (root / f"{gen.vid}.json").write_text(json.dumps(data))
    iso = [{"type": "Object Exists", "answer": "yes" if i % 2 else "no", "key": f"iso-{i}"} for i in range(1000)]
    (root / "isolated.json").write_text(json.dumps(iso))
    answers.extend((q["key"], q["answer"]) for q in iso)
    return total, answers


def write_predictions(path: Path, answers: list, seed: int = 1) -> int:
    """Official list format; 70% right, 0.1% keys left out, 100 unknown keys."""
    rng = np.random.default_rng(seed)
    keys = dict(answers)  # one row per distinct key
    flip = {"yes": "no", "no": "yes"}
    rows = []
    u = rng.random(len(keys))
    for (k, a), x in zip(keys.items(), u):
        if x < 0.001:
            continue
        rows.append({"csv_q_id": k, "prediction": a if x < 0.7 else flip.get(a, "cup"), "answer": a})
    rows.extend({"csv_q_id": f"unknown-{i}", "prediction": "yes"} for i in range(100))
    path.write_text(json.dumps(rows))
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subquestions", type=int, default=5_000_000, help="target number of sub-questions")
    ap.add_argument("--videos", type=int, default=2000, help="number of video files")
    ap.add_argument("--dir", type=Path, default=None, help="folder cache (default /tmp/tensorqa_bench_decomp_<N>)")
    ap.add_argument("--fresh", action="store_true", help="regenerate the folder even if cached")
    ap.add_argument("--distinct", action="store_true",
                    help="texts unique per main question (few shared sub-questions: about one prediction per sub-question)")
    a = ap.parse_args()

    from tensorqa.decomp import evaluate_predictions, load_hierarchies, load_predictions

    d = a.dir or Path(f"/tmp/tensorqa_bench_decomp_{a.subquestions}{'_distinct' if a.distinct else ''}")
    folder, preds = d / "hierarchies", d / "preds.json"
    if a.fresh and d.exists():
        shutil.rmtree(d)
    if not preds.exists():
        if folder.exists():
            shutil.rmtree(folder)
        t = time.perf_counter()
        n, answers = build_folder(folder, a.subquestions, a.videos, a.distinct)
        m = write_predictions(preds, answers)
        print(f"generated {n:,} sub-questions, {m:,} predictions in {time.perf_counter() - t:.0f} s")
    size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20

    def cpu():  # CPU seconds of this process and its (reaped) worker processes
        r = resource.getrusage(resource.RUSAGE_SELF)
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime, c.ru_utime + c.ru_stime

    c0 = cpu()
    t0 = time.perf_counter()
    h = load_hierarchies(folder)
    t1 = time.perf_counter()
    c1 = cpu()
    p = load_predictions(preds)
    t2 = time.perf_counter()
    c2 = cpu()
    s = evaluate_predictions(h, p)
    t3 = time.perf_counter()
    c3 = cpu()
    n = h.nodes.num_rows
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"folder: {len(h.videos):,} videos, {h.num_hierarchies:,} hierarchies, {n:,} sub-questions, "
          f"{h.edges.num_rows:,} edges, {size:,.0f} MiB JSON; {p.entries:,} predictions")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times suffer when it exceeds the CPUs)")
    print(f"read hierarchies {t1 - t0:6.1f} s wall, {c1[0] - c0[0]:6.1f} s CPU main + {c1[1] - c0[1]:6.1f} s CPU workers")
    print(f"read predictions {t2 - t1:6.1f} s wall, {c2[0] - c1[0]:6.1f} s CPU")
    print(f"metrics          {t3 - t2:6.1f} s wall, {c3[0] - c2[0]:6.1f} s CPU "
          f"({n / (c3[0] - c2[0]) / 1e6:.2f} M sub-questions per CPU second)")
    print(f"total            {t3 - t0:6.1f} s wall, {c3[0] + c3[1] - c0[0] - c0[1]:6.1f} s CPU, peak RSS {rss:.1f} GiB")
    if n < 4_500_000:
        f = 5_000_000 / n
        print(f"extrapolated to 5M sub-questions (linear): {(t3 - t0) * f:.0f} s wall, "
              f"{(c3[0] + c3[1] - c0[0] - c0[1]) * f:.0f} s CPU")
    print(f"check: Overall accuracy {s['accuracy']['Overall']}, IC Overall {s['ic']['by_composition']['Overall']}, "
          f"missing {s['coverage']['missing']:,}, unknown {s['coverage']['unknown_keys']:,}")


if __name__ == "__main__":
    main()
