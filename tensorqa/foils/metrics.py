"""Caption/foil metrics in the two conventions that share names (docs/reference/valse.md §5).

A pair is one caption score and one foil score: P(match | scene, text), or with ``logits=True`` a raw
logit whose sigmoid the classification metrics read (threshold 0.5 = logit 0).
``valse``: VALSE's ``lxmert_valse_eval.py`` (a foil exactly on the threshold is skipped; acc, p_c,
p_f, acc_r; no min, no AUROC). ``vilma``: ViLMA's ``bin/eval.py`` (float32 scores; p_c / p_f the
precisions over all 2N texts; AUROC with ties at half credit; min of the two precisions). Values are
100 x at full precision, rounded only when printed (the min still rounds to ViLMA's).
``counting-adversarial`` is reported beside ``counting``, not pooled: its captions say 4+ and its
foils 0-3, so a text-only model separates it by construction.
"""

from __future__ import annotations

import numpy as np

from tensorqa.errors import TensorQAError


REPORTED_APART = frozenset({"counting-adversarial"})  # instruments reported as a group of their own


def report_group(phenomenon: str, instrument: str) -> str:
    """The group a pair is reported under: its phenomenon, or its instrument where that stands apart."""
    return instrument if instrument in REPORTED_APART else phenomenon


def _percent(x: float | None) -> float | None:
    return None if x is None else 100.0 * float(x)


def _probabilities(scores: np.ndarray, logits: bool) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-scores)) if logits else scores


def valse_metrics(caption: np.ndarray, foil: np.ndarray, logits: bool = False) -> dict:
    """VALSE's convention. caption, foil: float[N] (one score each per pair)."""
    caption, foil = np.asarray(caption, np.float64), np.asarray(foil, np.float64)
    threshold = 0.0 if logits else 0.5  # sigmoid(0) = 0.5: the same test on either scale
    counted = foil != threshold
    c, f = caption[counted], foil[counted]
    n = int(counted.sum())
    capt_fits = int((c > threshold).sum())
    foil_detected = int((f < threshold).sum())
    pairwise = int((c > f).sum())
    div = (lambda k, scale=1.0: _percent(scale * k / n)) if n else (lambda k, scale=1.0: None)
    return {
        "acc": div(capt_fits + foil_detected, 0.5), "p_c": div(capt_fits), "p_f": div(foil_detected),
        "acc_r": div(pairwise),
        "counts": {"pairs": int(caption.size), "counted": n, "skipped_foil_at_threshold": int(caption.size - n),
                   "capt_fits": capt_fits, "foil_detected": foil_detected, "pairwise": pairwise},
    }


def auroc(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """Area under the ROC curve with ties at half credit (= sklearn's roc_auc_score), via ranks."""
    if positive.size == 0 or negative.size == 0:
        return None  # one class only: undefined
    both = np.concatenate([positive, negative])
    order = np.sort(both)
    # average rank of each value (1-based), ties sharing the mean of their ranks
    lo = np.searchsorted(order, positive, side="left")
    hi = np.searchsorted(order, positive, side="right")
    rank_sum = float(((lo + 1 + hi) / 2.0).sum())
    n_p, n_n = positive.size, negative.size
    return (rank_sum - n_p * (n_p + 1) / 2.0) / (n_p * n_n)


def vilma_metrics(caption: np.ndarray, foil: np.ndarray, logits: bool = False) -> dict:
    """ViLMA's convention (one foil per item, so no padding). caption, foil: float[N]."""
    c = np.asarray(caption, np.float32).astype(np.float64)  # torch.tensor(...) rounds to float32 first
    f = np.asarray(foil, np.float32).astype(np.float64)
    n = int(c.size)
    ties = int((c == f).sum())
    ranked = int((c >= f).sum())  # argmax takes the first maximum: column 0, the caption
    pc, pf = _probabilities(c, logits), _probabilities(f, logits)
    cap_pos, foil_pos = int((pc > 0.5).sum()), int((pf > 0.5).sum())
    cap_neg, foil_neg = int((pc < 0.5).sum()), int((pf < 0.5).sum())
    foil_at = int((pf == 0.5).sum())
    p_c = _percent(cap_pos / (cap_pos + foil_pos)) if cap_pos + foil_pos else 0.0
    p_f = _percent(foil_neg / (cap_neg + foil_neg)) if cap_neg + foil_neg else 0.0
    area = auroc(c, f)  # on the raw scores: sigmoid is monotone (float32 aside) and AUROC is rank-only
    return {
        "acc_r": _percent(ranked / n) if n else None,
        "p_c": p_c, "p_f": p_f,
        "acc": _percent((cap_pos + foil_neg + foil_at) / (2 * n)) if n else None,
        "min": min(p_c, p_f),
        "auroc": _percent(area),
        "counts": {"pairs": n, "texts": 2 * n, "acc_r_ties_to_caption": ties, "predicted_match": cap_pos + foil_pos,
                   "predicted_no_match": cap_neg + foil_neg, "at_threshold": int((pc == 0.5).sum()) + foil_at,
                   "foils_at_threshold_correct_in_acc": foil_at},
    }


def both_conventions(caption, foil, logits: bool = False) -> dict:
    return {"valse": valse_metrics(caption, foil, logits), "vilma": vilma_metrics(caption, foil, logits)}


def read_scores(data, source: str, logits: bool = False) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Check a parsed SCORES.json: a list of {"id", "caption_score", "foil_score"} -> ids, caption[N], foil[N]."""
    if not isinstance(data, list):
        raise TensorQAError(f"{source}: expected a JSON list of {{\"id\", \"caption_score\", \"foil_score\"}}, "
                            f"got {type(data).__name__}")
    if not data:
        raise TensorQAError(f"{source}: no scores (an empty list)")
    ids, cap, foil, seen = [], [], [], set()
    for i, row in enumerate(data):
        if not isinstance(row, dict) or not {"id", "caption_score", "foil_score"} <= row.keys():
            raise TensorQAError(f"{source}: entry {i} is not an object with \"id\", \"caption_score\", \"foil_score\"")
        for key in ("caption_score", "foil_score"):
            v = row[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise TensorQAError(f"{source}: entry {i} ({row['id']!r}): {key} is not a finite number: {v!r}")
            if not logits and not 0.0 <= v <= 1.0:
                raise TensorQAError(f"{source}: entry {i} ({row['id']!r}): {key} = {v} is outside [0, 1] "
                                    "(pass --logits for raw scores)")
        rid = str(row["id"])
        if rid in seen:
            raise TensorQAError(f"{source}: id {rid!r} appears twice")
        seen.add(rid)
        ids.append(rid)
        cap.append(float(row["caption_score"]))
        foil.append(float(row["foil_score"]))
    return ids, np.array(cap), np.array(foil)


def score(ids: list[str], caption: np.ndarray, foil: np.ndarray, logits: bool = False,
          groups: dict[str, tuple[str, str]] | None = None) -> dict:
    """Both conventions overall and, given groups (id -> (phenomenon, instrument)), per phenomenon
    (VALSE's ``linguistic_phenomena``, with ``counting-adversarial`` apart: ``report_group``) and per
    instrument. Values are percent at full precision."""
    out = both_conventions(caption, foil, logits)
    out["mode"] = "logits" if logits else "probabilities"
    if groups is not None:
        for key, group in (("per_phenomenon", lambda g: report_group(*g)), ("per_instrument", lambda g: g[1])):
            names = np.array([group(groups[i]) for i in ids])
            out[key] = {g: both_conventions(caption[names == g], foil[names == g], logits)
                        for g in sorted(set(names.tolist()))}
    return out
