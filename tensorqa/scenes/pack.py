"""``pack``: scene graphs from any source (the embedded default, Charades CSVs, Action Genome pickles
with Charades actions, AGQA's already augmented stsgs) -> augmentation -> one HDF5 store.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
from tqdm import tqdm

from tensorqa.scenes.augment import AugmentConfig, augment_scene, relation_object_counts, single_object_relations
from tensorqa.errors import TensorQAError
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.store import StoreWriter
from tensorqa.scenes.vocab import vocab

BLOCK = 512


def pack_scenes(scenes: Iterable[VideoScene], out: str | os.PathLike, *, source: str, total: int | None = None,
                config: AugmentConfig = AugmentConfig(), meta: dict | None = None, progress: bool = True,
                augment: bool = True) -> Path:
    """Augment ``scenes`` (unless ``augment`` is False) and stream them to the store ``out``; the
    dataset-level pruning runs on the written file before it is renamed into place."""
    v = vocab()
    counts = np.zeros((v.num_objects, v.num_relations), np.int64)
    meta = dict(meta or {})
    meta["augment"] = config.to_dict() if augment else None
    with StoreWriter(out, source=source, meta=meta) as writer:
        buf: list[VideoScene] = []
        bar = tqdm(total=total, desc=f"pack {source}", unit="video", disable=not progress, dynamic_ncols=True)
        for scene in scenes:
            s = augment_scene(scene, config) if augment else scene.sorted()
            counts += relation_object_counts(s)
            buf.append(s)
            if len(buf) == BLOCK:
                writer.append(buf)
                bar.update(len(buf))
                buf = []
        writer.append(buf)
        bar.update(len(buf))
        bar.close()
        if writer.count == 0:
            raise TensorQAError(f"{out}: no videos to pack")
        pruned = single_object_relations(counts) if (augment and config.prune_single_object) else np.zeros(v.num_relations, bool)
        writer.clear_relations(pruned)
        counts[:, pruned] = 0
        writer.set_meta(
            pruned_relations=[v.relations[i] for i in np.nonzero(pruned)[0]],
            rel_obj_keyframes=counts.tolist(),
            exclude_attention=bool(config.exclude_attention),
        )
    return Path(out)


def pack_default(out: str | os.PathLike, videos: int = 9601, seed: int = 0, **kw) -> Path:
    """The embedded default dataset: ``videos`` synthetic Charades-grounded videos from ``seed``."""
    from tensorqa.scenes.synthetic import synthesize

    from tensorqa.scenes.synthetic import MAX_SYNTHETIC_VIDEOS

    if videos < 1:
        raise TensorQAError(f"--videos must be at least 1, got {videos}")
    if videos > MAX_SYNTHETIC_VIDEOS:  # refused before the scripts of every video are drawn
        raise TensorQAError(f"--videos must be at most {MAX_SYNTHETIC_VIDEOS:,} (the synthetic video ids), got {videos:,}")
    return pack_scenes(synthesize(videos, seed), out, source="default", total=videos,
                       meta={"seed": seed, "videos": videos}, **kw)


def pack_charades(csvs: list[str], out: str | os.PathLike, seed: int = 0, **kw) -> Path:
    """Real Charades videos and action intervals; keyframes and relations synthesized from ``seed``."""
    from tensorqa.scenes.loaders.charades import read_charades_csv
    from tensorqa.scenes.synthetic import synthesize_from_charades

    videos = read_charades_csv(csvs)
    return pack_scenes(synthesize_from_charades(videos, seed), out, source="charades", total=len(videos),
                       meta={"seed": seed, "charades": [Path(c).name for c in csvs]}, **kw)


def pack_action_genome(ag_dir: str, csvs: list[str], out: str | os.PathLike, fps: float | None = None, **kw) -> Path:
    """Action Genome annotations merged with the Charades actions of the same videos."""
    from tensorqa.scenes.loaders.action_genome import load_action_genome

    scenes = load_action_genome(ag_dir, csvs, fps=fps)
    return pack_scenes(scenes, out, source="action-genome", total=len(scenes),
                       meta={"action_genome": str(ag_dir), "charades": [Path(c).name for c in csvs]}, **kw)


def pack_agqa_stsgs(pkls: list[str], out: str | os.PathLike, **kw) -> Path:
    """AGQA's augmented graphs (already augmented by AGQA: no rule is applied again)."""
    from tensorqa.scenes.loaders.agqa_stsgs import load_agqa_stsgs

    scenes = [s for p in pkls for s in load_agqa_stsgs(p)]
    return pack_scenes(scenes, out, source="agqa-stsgs", total=len(scenes), augment=False,
                       meta={"agqa_stsgs": [Path(p).name for p in pkls]}, **kw)
