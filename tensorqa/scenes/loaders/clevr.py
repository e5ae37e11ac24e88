"""CLEVR scene JSON (``CLEVR_*_scenes.json``) -> :class:`StaticScene` list, checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, StaticScene, clevr_vocab, image_index_of


def scene_from_json(s: dict, where: str) -> StaticScene:
    v = clevr_vocab()
    try:
        objs, rels = s["objects"], s["relationships"]
        fname = s["image_filename"]
    except (KeyError, TypeError) as e:
        raise TensorQAError(f"{where}: missing field {e}") from None
    n = len(objs)
    attrs = np.zeros((n, 4), np.int64)
    coords = np.zeros((n, 3), np.float32)
    for i, o in enumerate(objs):
        for k, a in enumerate(ATTRS):
            if a not in o:
                raise TensorQAError(f"{where}: object {i} has no '{a}'")
            attrs[i, k] = v.index(a, o[a], f"{where} object {i}")
        if "3d_coords" in o:
            coords[i] = o["3d_coords"]
    rel = np.zeros((n, n, 4), bool)
    for k, r in enumerate(RELATIONS):
        if r not in rels or len(rels[r]) != n:
            raise TensorQAError(f"{where}: relationships['{r}'] missing or not one list per object")
        for i, js in enumerate(rels[r]):
            for j in js:
                if not isinstance(j, int) or not 0 <= j < n or j == i:
                    raise TensorQAError(f"{where}: relationships['{r}'][{i}] holds {j!r}, not another object's index")
                rel[i, j, k] = True
    return StaticScene(fname, str(s.get("split", "new")), attrs, rel, coords, image_index_of(fname))


def load_clevr_scenes(path: str | Path) -> tuple[list[StaticScene], dict]:
    """Read a CLEVR scenes file: (scenes, info)."""
    p = Path(path)
    if not p.is_file():
        raise TensorQAError(f"{p}: no such file")
    try:
        d = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TensorQAError(f"{p}: not JSON ({e.__class__.__name__} at {getattr(e, 'pos', '?')})") from None
    if not isinstance(d, dict) or not isinstance(d.get("scenes"), list):
        raise TensorQAError(f"{p}: not a CLEVR scenes file (expected {{'info': ..., 'scenes': [...]}})")
    info = d.get("info", {}) if isinstance(d.get("info"), dict) else {}
    return [scene_from_json(s, f"{p} scene {i}") for i, s in enumerate(d["scenes"])], info
