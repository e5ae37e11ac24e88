"""``info``: what a store holds — sizes, densities per object / relation / action, vocab hash."""

from __future__ import annotations

import torch

from tensorqa.scenes.store import SceneStore
from tensorqa.scenes.vocab import vocab


def store_info(store: SceneStore, block: int = 1024) -> dict:
    """Summary figures of a store, computed block by block (bounded memory)."""
    v = vocab()
    obj_frames = torch.zeros(v.num_objects, dtype=torch.int64)
    rel_pairs = torch.zeros(v.num_relations, dtype=torch.int64)
    act_inst = torch.zeros(v.num_actions, dtype=torch.int64)
    for b in store.blocks(block):
        obj_frames += b.obj.sum((0, 1))
        rel_pairs += b.rel.sum((0, 1, 2))
        act_inst += torch.bincount(b.inst_cls[b.inst_mask], minlength=v.num_actions)
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
