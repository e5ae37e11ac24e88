"""``info``: what a store holds — sizes, densities per object / relation / action, vocab hash."""

from __future__ import annotations

import numpy as np
import torch

from tensorqa.scenes.store import SceneStore
from tensorqa.scenes.vocab import vocab


def bit_counts(words: np.ndarray) -> np.ndarray:
    """int64[64]: how many of ``words`` (int64[...], bit sets as :func:`.store.pack_bits` writes
    them) have each bit set, without unpacking them into booleans."""
    bits = np.unpackbits(words.astype("<i8", copy=False).view(np.uint8).reshape(-1, 8), axis=-1, bitorder="little")
    return bits.sum(0, dtype=np.int64)


def store_info(store: SceneStore, block: int = 128) -> dict:
    """Summary figures of a store, read ``block`` videos at a time as the file stores them (packed
    bits: memory holds a block's words and their bits as bytes, not the block's boolean tensors)."""
    v = vocab()
    obj_frames = np.zeros(v.num_objects, dtype=np.int64)
    rel_pairs = np.zeros(v.num_relations, dtype=np.int64)
    act_inst = np.zeros(v.num_actions, dtype=np.int64)
    for a in range(0, len(store), block):
        sl = slice(a, min(a + block, len(store)))
        F, N = int(store.num_frames[sl].max(initial=0)), int(store.num_instances[sl].max(initial=0))
        obj_frames += bit_counts(store.read("obj_bits", (sl, slice(0, F))))[:v.num_objects]
        rel_pairs += bit_counts(store.read("rel_bits", (sl, slice(0, F))))[:v.num_relations]
        cls = store.read("inst_cls", (sl, slice(0, N))).astype(np.int64)
        act_inst += np.bincount(cls[np.arange(N)[None, :] < store.num_instances[sl, None]], minlength=v.num_actions)
    obj_frames, rel_pairs, act_inst = map(torch.from_numpy, (obj_frames, rel_pairs, act_inst))
    frames = int(store.num_frames.sum())
    splits = {s: store.splits.count(s) for s in sorted(set(store.splits))}
    return {
        "file": str(store.path),
        "source": store.source,
        "vocab_hash": v.hash,
        "videos": len(store),
        "splits": splits,
        "keyframes": frames,
        "keyframes_per_video": {"mean": round(frames / max(len(store), 1), 2), "max": int(store.num_frames.max(initial=0))},
        "action_instances": int(store.num_instances.sum()),
        "objects_per_keyframe": round(int(obj_frames.sum()) / max(frames, 1), 3),
        "relation_instances": int(rel_pairs.sum()),
        "objects": _top(v.object_english, obj_frames, frames),
        "relations": _top([f"{e} ({k})" for e, k in zip(v.relation_english, v.relation_kinds)], rel_pairs, None),
        "actions": _top(v.action_phrases, act_inst, None),
        "meta": {k: val for k, val in store.meta.items() if k != "rel_obj_keyframes"},
    }


def _top(names, counts: torch.Tensor, per: int | None, k: int = 12) -> list[tuple[str, float]]:
    order = torch.argsort(counts, descending=True, stable=True)[:k].tolist()
    return [(names[i], round(int(counts[i]) / per, 4) if per else int(counts[i])) for i in order if counts[i] > 0]


def format_info(info: dict) -> str:
    lines = [
        f"{info['file']}  (source: {info['source'] or '?'}, vocab {info['vocab_hash']})",
        f"videos            {info['videos']:,}  " + "  ".join(f"{k} {n:,}" for k, n in info["splits"].items()),
        f"keyframes         {info['keyframes']:,}  (mean {info['keyframes_per_video']['mean']} per video, max {info['keyframes_per_video']['max']})",
        f"action instances  {info['action_instances']:,}",
        f"relation instances {info['relation_instances']:,}  (object-relation pairs over keyframes)",
        f"objects/keyframe  {info['objects_per_keyframe']}",
        "objects (share of keyframes): " + ", ".join(f"{n} {c:.3f}" for n, c in info["objects"]),
        "relations (keyframe pairs):   " + ", ".join(f"{n} {c:,}" for n, c in info["relations"]),
        "actions (instances):          " + ", ".join(f"{n} {c:,}" for n, c in info["actions"]),
    ]
    if info["meta"]:
        lines.append("meta: " + ", ".join(f"{k}={v}" for k, v in sorted(info["meta"].items())))
    return "\n".join(lines)
