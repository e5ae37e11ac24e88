"""Small builders shared by tests: hand-worked scenes written in vocabulary words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorqa import vocab
from tensorqa.scenes.batch import VideoScene

REPO = Path(__file__).resolve().parents[1]  # the checkout


def make_scene(video_id: str, frames: list[tuple[int, float]], relations=(), objects=(), actions=(), split="train") -> VideoScene:
    """A scene from words.

    frames:    [(frame_number, secs), ...]
    relations: [(frame position, object word, relation word), ...]
    objects:   [(frame position, object word), ...] extra annotated objects without relations
    actions:   [(action id or phrase, start, end), ...]
    """
    v = vocab()
    F = len(frames)
    rel = np.zeros((F, v.num_objects, v.num_relations), bool)
    obj = np.zeros((F, v.num_objects), bool)
    for f, o, r in relations:
        rel[f, v.object_index(o), v.relation_index(r)] = True
        obj[f, v.object_index(o)] = True
    for f, o in objects:
        obj[f, v.object_index(o)] = True
    return VideoScene(
        video_id=video_id,
        frame_ids=[fr for fr, _ in frames], frame_secs=[s for _, s in frames], rel=rel, obj=obj,
        inst_cls=[v.action_index(a) for a, _, _ in actions], inst_start=[s for _, s, _ in actions],
        inst_end=[e for _, _, e in actions], split=split,
    ).sorted()


def random_scene(rng: np.random.Generator, video_id: str, max_frames: int = 20, max_inst: int = 6) -> VideoScene:
    """A random scene with arbitrary (not necessarily meaningful) content, for round trips."""
    v = vocab()
    F = int(rng.integers(0, max_frames + 1))
    N = int(rng.integers(0, max_inst + 1))
    ids = np.sort(rng.choice(5000, F, replace=False))
    start = rng.random(N) * 20
    return VideoScene(
        video_id=video_id, frame_ids=ids, frame_secs=ids / 24.0,
        rel=rng.random((F, v.num_objects, v.num_relations)) < 0.03, obj=rng.random((F, v.num_objects)) < 0.08,
        inst_cls=rng.integers(0, v.num_actions, N), inst_start=start, inst_end=start + rng.random(N) * 10,
        split=str(rng.choice(["train", "test"])),
    ).sorted()


def run_tensorqa(*args, cwd=None) -> "subprocess.CompletedProcess":
    """``tensorqa ARGS`` run in this process (``tensorqa.cli.main`` with stdout / stderr captured),
    as a CompletedProcess: the fast tier's way to run a command, without an interpreter and torch
    starting per call. An exception that escapes ``main`` is a traceback the user would see: it
    propagates and fails the test. Tests of what only a real process shows (signals, a closed pipe,
    imports) start one."""
    import contextlib
    import io
    import os
    import subprocess

    from tensorqa.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(argv)
        except SystemExit as e:  # argparse: usage errors and --help
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return subprocess.CompletedProcess(["tensorqa", *argv], code, out.getvalue(), err.getvalue())
