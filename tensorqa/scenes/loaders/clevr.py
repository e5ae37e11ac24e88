"""CLEVR scene JSON (``CLEVR_*_scenes.json``) -> :class:`StaticScene` list, checked.

Every field the generator reads is type-checked here (``docs/reference/limits.md``): the image file
name and split are valid names (the split names output files), an object's attributes are
vocabulary words, ``3d_coords`` three finite numbers, relations lists of other objects' indices
(integers, not ``true``), at most :data:`~tensorqa.limits.MAX_SCENE_OBJECTS` objects per scene.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_CLEVR_SCENES, MAX_SCENE_OBJECTS, check_depth, check_name, check_split, read_json
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, StaticScene, clevr_vocab, image_index_of


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def scene_from_json(s: dict, where: str) -> StaticScene:
    v = clevr_vocab()
    if not isinstance(s, dict):
        raise TensorQAError(f"{where}: a scene is a JSON object, found {type(s).__name__}")
    try:
        objs, rels = s["objects"], s["relationships"]
        fname = s["image_filename"]
    except KeyError as e:
        raise TensorQAError(f"{where}: missing field {e}") from None
    check_name(fname, where, "image_filename")
    split = check_split(s.get("split", "new"), where)
    if not isinstance(objs, list):
        raise TensorQAError(f"{where}: 'objects' is a list of objects, found {type(objs).__name__}")
    if not isinstance(rels, dict):
        raise TensorQAError(f"{where}: 'relationships' is an object of lists, found {type(rels).__name__}")
    n = len(objs)
    if n > MAX_SCENE_OBJECTS:
        raise TensorQAError(f"{where}: {n:,} objects; a scene holds at most {MAX_SCENE_OBJECTS}")
    attrs = np.zeros((n, 4), np.int64)
    coords = np.zeros((n, 3), np.float32)
    for i, o in enumerate(objs):
        if not isinstance(o, dict):
            raise TensorQAError(f"{where}: object {i} is a JSON object, found {type(o).__name__}")
        for k, a in enumerate(ATTRS):
            if a not in o:
                raise TensorQAError(f"{where}: object {i} has no '{a}'")
            if not isinstance(o[a], str):
                raise TensorQAError(f"{where}: object {i}: '{a}' is a word, found {type(o[a]).__name__}")
            attrs[i, k] = v.index(a, o[a], f"{where} object {i}")
        if "3d_coords" in o:
            c = o["3d_coords"]
            if not (isinstance(c, list) and len(c) == 3 and all(_is_number(x) and math.isfinite(x) and abs(x) < 1e30 for x in c)):
                raise TensorQAError(f"{where}: object {i}: '3d_coords' is a list of 3 finite numbers, found {c!r:.60}")
            coords[i] = c
    rel = np.zeros((n, n, 4), bool)
    for k, r in enumerate(RELATIONS):
        if r not in rels or not isinstance(rels[r], list) or len(rels[r]) != n:
            raise TensorQAError(f"{where}: relationships['{r}'] missing or not one list per object")
        for i, js in enumerate(rels[r]):
            if not isinstance(js, list):
                raise TensorQAError(f"{where}: relationships['{r}'][{i}] is a list of object indices, found {type(js).__name__}")
            for j in js:
                if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < n or j == i:
                    raise TensorQAError(f"{where}: relationships['{r}'][{i}] holds {j!r:.40}, not another object's index")
                rel[i, j, k] = True
    return StaticScene(fname, split, attrs, rel, coords, image_index_of(fname, where))


def load_clevr_scenes(path: str | Path) -> tuple[list[StaticScene], dict]:
    """Read a CLEVR scenes file: (scenes, info)."""
    p = Path(path)
    if not p.is_file():
        raise TensorQAError(f"{p}: no such file")
    d = read_json(p, "CLEVR scenes file")
    if not isinstance(d, dict) or not isinstance(d.get("scenes"), list):
        raise TensorQAError(f"{p}: not a CLEVR scenes file (expected {{'info': ..., 'scenes': [...]}})")
    if len(d["scenes"]) > MAX_CLEVR_SCENES:
        raise TensorQAError(f"{p}: {len(d['scenes']):,} scenes; a store holds at most {MAX_CLEVR_SCENES:,}")
    info = d.get("info", {}) if isinstance(d.get("info"), dict) else {}
    check_depth(info, p, "'info'")
    scenes = [scene_from_json(s, f"{p} scene {i}") for i, s in enumerate(d["scenes"])]
    check_unique_filenames(scenes, p)
    return scenes, info


def check_unique_filenames(scenes: list[StaticScene], where) -> None:
    """CLEVR's questions name their scene by image file name: two scenes may not share one."""
    seen: set = set()
    for s in scenes:
        if s.image_filename in seen:
            raise TensorQAError(f"{where}: image_filename {s.image_filename!r} appears more than once")
        seen.add(s.image_filename)
