"""The embedded default: a seeded sampler of CLEVR-like scenes (``render_images.py``'s placement).

randint(3, 10) objects, each a size, then x, y ~ U[-3, 3] until it clears every earlier object by
0.25 and by the 0.4 margin along each direction (after 50 failures all are re-placed); then shape,
colour, material. j is r of i when (c_j - c_i) . dir_r > 0.2, with the v1.0 scenes' directions.
"""

from __future__ import annotations

import numpy as np

from tensorqa.scenes.static_batch import RELATIONS, StaticScene, clevr_vocab

# released v1.0 directions (ground plane): right, behind; left = -right, front = -behind
RIGHT = np.array([0.6563, 0.7545, 0.0])
BEHIND = np.array([-0.7545, 0.6563, 0.0])
DIRECTIONS = {"left": -RIGHT, "right": RIGHT, "behind": BEHIND, "front": -BEHIND}
MIN_DIST, MARGIN, REL_EPS, MAX_TRIES = 0.25, 0.4, 0.2, 50


def relations_from_coords(coords: np.ndarray) -> np.ndarray:
    """float[n, 3] -> bool[n, n, 4]: rel[i, j, r] = (c_j - c_i) . dir_r > 0.2 (j != i)."""
    delta = coords[None, :, :] - coords[:, None, :]  # [i, j] = c_j - c_i
    dirs = np.stack([DIRECTIONS[r] for r in RELATIONS], -1)  # [3, 4]
    rel = (delta @ dirs) > REL_EPS
    rel[np.arange(len(coords)), np.arange(len(coords))] = False
    return rel


def _place(rng: np.random.Generator, n: int, radii: np.ndarray) -> np.ndarray | None:
    pos: list[np.ndarray] = []
    for i in range(n):
        for _ in range(MAX_TRIES):
            x, y = rng.uniform(-3, 3, 2)
            ok = True
            for j, (px, py) in enumerate(pos):
                dx, dy = x - px, y - py
                if np.hypot(dx, dy) - radii[i] - radii[j] < MIN_DIST:
                    ok = False
                    break
                for d in DIRECTIONS.values():
                    m = dx * d[0] + dy * d[1]
                    if 0 < m < MARGIN:
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                pos.append(np.array([x, y]))
                break
        else:
            return None
    return np.array(pos)


def sample_scene(rng: np.random.Generator, index: int, split: str = "new") -> StaticScene:
    v = clevr_vocab()
    while True:
        n = int(rng.integers(3, 11))
        size = rng.integers(0, len(v.size), n)
        radii = np.array([v.size_radius[v.size[s]] for s in size])
        pos = _place(rng, n, radii)
        if pos is not None:
            break
    shape = rng.integers(0, len(v.shape), n)
    color = rng.integers(0, len(v.color), n)
    material = rng.integers(0, len(v.material), n)
    attrs = np.stack([size, color, material, shape], -1).astype(np.int64)
    coords = np.concatenate([pos, radii[:, None]], -1).astype(np.float32)
    return StaticScene(f"CLEVR_{split}_{index:06d}.png", split, attrs, relations_from_coords(coords.astype(np.float64)),
                       coords, index)


def sample_scenes(count: int, seed: int = 0, split: str = "new") -> list[StaticScene]:
    """``count`` scenes; scene i depends only on (seed, i), so any prefix is the same."""
    return [sample_scene(np.random.default_rng([seed, i]), i, split) for i in range(count)]
