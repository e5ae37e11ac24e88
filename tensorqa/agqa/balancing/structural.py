"""Structural rejection sampling (semantics §d step 5) as kept counts per (key, answer) bucket.

The query count fixes the total; other structures keep at most their share (nothing up-sampled).
Cuts are water-filled (``waterfill``) over templates, time kinds, then local keys. Keys of two
equal answers are cut in pairs wherever a whole (template, window) group consists of them (every
binary group after binary balancing), so they stay exactly 50/50. AGQA's "drop the remaining keys
once a group kept enough" never fires here (no key keeps more than its share), so it is not coded.
"""

from __future__ import annotations

import math

import numpy as np

from tensorqa.agqa.balancing.waterfill import waterfill

STRUCTURE_SHARES: dict[str, float] = {"query": 0.50, "verify": 0.15, "compare": 0.15, "choose": 0.15, "logic": 0.05}


def structure_caps(counts: np.ndarray, names: tuple[str, ...], shares: dict[str, float]) -> np.ndarray:
    """int64[S] most questions each structure may keep (query: all of its own); counts: int64[S] per
    structure (``names`` order)."""
    counts = np.asarray(counts, np.int64)
    q = names.index("query")
    total = counts[q] / shares["query"]
    caps = np.array([math.floor(shares.get(s, 0.0) * total + 1e-9) for s in names], np.int64)
    caps[q] = counts[q]
    return caps


def structural_targets(bucket_key: np.ndarray, counts: np.ndarray, key_template: np.ndarray, key_window: np.ndarray,
                       template_structure: np.ndarray, names: tuple[str, ...], shares: dict[str, float],
                       n_windows: int) -> np.ndarray:
    """Kept questions per (key, answer) bucket. bucket_key, counts: int64[B] (a key's buckets
    adjacent); key_template, key_window: int64[K]; template_structure: int64[T] (index into ``names``)."""
    counts = np.asarray(counts, np.int64)
    B = len(counts)
    if B == 0:
        return counts.copy()
    kstart = np.flatnonzero(np.r_[True, bucket_key[1:] != bucket_key[:-1]])
    key_ids = bucket_key[kstart]
    n_ans = np.diff(np.r_[kstart, B])
    key_of_bucket = np.repeat(np.arange(len(kstart)), n_ans)
    tmpl = key_template[key_ids].astype(np.int64)
    struct = template_structure[tmpl]
    S = len(names)
    n_struct = np.bincount(struct, weights=np.add.reduceat(counts, kstart), minlength=S).astype(np.int64)
    caps = structure_caps(n_struct, names, shares)
    shrinking = n_struct > caps
    if not shrinking.any():
        return counts.copy()
    kept = counts.copy()
    # within-key rules for keys of shrinking structures
    in_cut = shrinking[struct]
    smallest = np.minimum.reduceat(counts, kstart)
    kept = np.where(in_cut[key_of_bucket] & (n_ans[key_of_bucket] < 2), 0, kept)
    two = in_cut & (n_ans == 2)
    kept = np.where(two[key_of_bucket], smallest[key_of_bucket], kept)
    n_key = np.add.reduceat(kept, kstart)
    n_struct = np.bincount(struct, weights=n_key, minlength=S).astype(np.int64)
    cut_struct = np.where(shrinking, np.maximum(n_struct - caps, 0), 0)
    # templates within a structure
    T = len(template_structure)
    n_tmpl = np.bincount(tmpl, weights=n_key, minlength=T).astype(np.int64)
    cut_tmpl = waterfill(n_tmpl, template_structure, cut_struct)
    # windows within a template
    group = tmpl * n_windows + key_window[key_ids].astype(np.int64)
    n_group = np.bincount(group, weights=n_key, minlength=T * n_windows).astype(np.int64)
    cut_group = waterfill(n_group, np.arange(T * n_windows) // n_windows, cut_tmpl)
    # keys within a (template, window): in pairs where the whole group is balanced two-answer keys
    balanced_pair = (n_ans == 2) & (n_key % 2 == 0) & (np.maximum.reduceat(kept, kstart) * 2 == n_key)
    all_pairs = np.bincount(group, weights=~balanced_pair, minlength=T * n_windows) == 0
    unit = np.where(all_pairs, 2, 1)
    cut_units = -(-cut_group // unit)
    key_unit = unit[group]
    cut_key = waterfill(n_key // key_unit, group, cut_units) * key_unit
    # within a key
    left = n_key - cut_key
    two_answers = in_cut & (n_ans == 2)
    per_answer = np.where(two_answers, left // 2, 0)
    kept = np.where(two_answers[key_of_bucket], np.minimum(kept, per_answer[key_of_bucket]), kept)
    many = (n_ans > 2) & (cut_key > 0)
    if many.any():
        sel = many[key_of_bucket]
        cut_many = np.zeros(len(kstart), np.int64)
        cut_many[many] = cut_key[many]
        kept[sel] -= waterfill(kept[sel], key_of_bucket[sel], cut_many)
    return kept
