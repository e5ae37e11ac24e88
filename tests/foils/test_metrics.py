"""Both metric conventions against numbers worked by hand (docs/reference/valse.md §5)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorqa.cli import main
from tensorqa.errors import TensorQAError
from tensorqa.foils.metrics import auroc, read_scores, valse_metrics, vilma_metrics


def test_mixed_pairs_with_ties_and_a_foil_on_the_threshold():
    # pair  caption  foil
    #  1     0.9     0.2   caption fits, foil detected, ranked right
    #  2     0.6     0.7   caption fits, foil not detected, ranked wrong
    #  3     0.4     0.4   caption does not fit, foil detected, a tie
    #  4     0.3     0.5   foil exactly 0.5: VALSE skips the pair
    c, f = [0.9, 0.6, 0.4, 0.3], [0.2, 0.7, 0.4, 0.5]
    v = valse_metrics(c, f)
    # N = 3 (pair 4 skipped); capt_fits = 2 (1, 2); foil_detected = 2 (1, 3); pairwise strict = 1 (pair 1; 3 ties)
    assert v["counts"] == {"pairs": 4, "counted": 3, "skipped_foil_at_threshold": 1, "capt_fits": 2,
                           "foil_detected": 2, "pairwise": 1}
    assert v["acc"] == pytest.approx(200 / 3)  # (2 + 2) / 3 * 50, at full precision (rounded only when printed)
    assert v["p_c"] == pytest.approx(200 / 3)  # 2 / 3
    assert v["p_f"] == pytest.approx(200 / 3)  # 2 / 3
    assert v["acc_r"] == pytest.approx(100 / 3)  # 1 / 3
    assert "auroc" not in v and "min" not in v
    m = vilma_metrics(c, f)
    # acc_r: argmax is the caption in pairs 1 and 3 (the tie goes to the caption): 2 / 4
    assert m["acc_r"] == 50.0
    # p > 0.5: captions 0.9, 0.6 and foil 0.7 -> PPV 2 / 3
    assert m["p_c"] == pytest.approx(200 / 3)
    # p < 0.5: captions 0.4, 0.3 and foils 0.2, 0.4 -> NPV 2 / 4
    assert m["p_f"] == 50.0
    # captions > 0.5 (2) + foils <= 0.5 (0.2, 0.4, 0.5: 3) over 8 texts
    assert m["acc"] == 62.5
    assert m["min"] == 50.0
    # caption beats foil over the 16 cross pairs: 0.9 -> 4, 0.6 -> 3, 0.4 -> 1 + half a tie, 0.3 -> 1: 9.5 / 16
    assert m["auroc"] == 59.375
    assert m["counts"]["acc_r_ties_to_caption"] == 1
    assert m["counts"]["foils_at_threshold_correct_in_acc"] == 1


def test_float32_resolution_ties_differ_between_conventions():
    # the foil is above the caption by 1e-9, below float32 resolution at 0.1
    c, f = [0.1], [0.1 + 1e-9]
    assert valse_metrics(c, f)["acc_r"] == 0.0  # float64, strict: the foil wins
    assert vilma_metrics(c, f)["acc_r"] == 100.0  # float32 tie, argmax takes the caption


def test_one_class_predictions_all_match():
    # every text above 0.5: the model says "match" to everything
    c, f = [0.9, 0.8], [0.7, 0.6]
    v = valse_metrics(c, f)
    # N = 2, capt_fits = 2, foil_detected = 0, pairwise = 2
    assert (v["acc"], v["p_c"], v["p_f"], v["acc_r"]) == (50.0, 100.0, 0.0, 100.0)
    m = vilma_metrics(c, f)
    # PPV 2 / 4; nothing predicted "no match" -> NPV 0 by definition; acc (2 + 0) / 4; every caption above every foil
    assert (m["acc_r"], m["p_c"], m["p_f"], m["acc"], m["min"], m["auroc"]) == (100.0, 50.0, 0.0, 50.0, 0.0, 100.0)


def test_one_class_predictions_all_no_match():
    c, f = [0.2], [0.4]
    v = valse_metrics(c, f)
    # N = 1: the caption does not fit, the foil is detected, the foil ranks higher
    assert (v["acc"], v["p_c"], v["p_f"], v["acc_r"]) == (50.0, 0.0, 100.0, 0.0)
    m = vilma_metrics(c, f)
    # no predicted match -> PPV 0; NPV 1 / 2 (the foil among the two "no"); acc 1 / 2; AUROC 0 (caption below)
    assert (m["acc_r"], m["p_c"], m["p_f"], m["acc"], m["min"], m["auroc"]) == (0.0, 0.0, 50.0, 50.0, 0.0, 0.0)


def test_every_pair_skipped_by_valse():
    v = valse_metrics([0.8, 0.1], [0.5, 0.5])
    assert v["counts"]["counted"] == 0 and v["acc"] is None and v["acc_r"] is None
    m = vilma_metrics([0.8, 0.1], [0.5, 0.5])
    # ranking 1 / 2; PPV 1 / 1; NPV 0 / 1 (only the 0.1 caption below); acc (1 + 2 foils at 0.5) / 4
    assert (m["acc_r"], m["p_c"], m["p_f"], m["acc"]) == (50.0, 100.0, 0.0, 75.0)


def test_logits():
    # pair 1: caption 2.0, foil 0.0 (on the threshold: VALSE skips it); pair 2: caption -1.0, foil -3.0
    v = valse_metrics([2.0, -1.0], [0.0, -3.0], logits=True)
    # N = 1 (pair 2): caption does not fit (-1 < 0), foil detected, caption above foil
    assert (v["acc"], v["p_c"], v["p_f"], v["acc_r"]) == (50.0, 0.0, 100.0, 100.0)
    m = vilma_metrics([2.0, -1.0], [0.0, -3.0], logits=True)
    # sigmoid: captions 0.88, 0.27; foils 0.5, 0.05. PPV 1 / 1; NPV 1 / 2; acc (1 + 2) / 4; AUROC 3 / 4
    assert (m["acc_r"], m["p_c"], m["p_f"], m["acc"], m["min"], m["auroc"]) == (100.0, 100.0, 50.0, 75.0, 50.0, 75.0)


def test_auroc_against_the_pair_count():
    rng = np.random.default_rng(0)
    p, n = rng.integers(0, 5, 30).astype(float), rng.integers(0, 5, 20).astype(float)
    by_pairs = ((p[:, None] > n[None, :]).sum() + 0.5 * (p[:, None] == n[None, :]).sum()) / (30 * 20)
    assert auroc(p, n) == pytest.approx(by_pairs)


@pytest.mark.parametrize("data, problem", [
    ({"id": "a"}, "expected a JSON list"),
    ([], "no scores"),
    ([{"id": "a", "caption_score": 0.5}], "is not an object with"),
    ([{"id": "a", "caption_score": 1.5, "foil_score": 0.1}], "outside [0, 1]"),
    ([{"id": "a", "caption_score": "x", "foil_score": 0.1}], "not a finite number"),
    ([{"id": "a", "caption_score": 0.4, "foil_score": 0.1}] * 2, "appears twice"),
])
def test_bad_scores(data, problem):
    with pytest.raises(TensorQAError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        read_scores(data, "S.json")


def test_score_foils_cli(tmp_path, capsys):
    scores = tmp_path / "s.json"
    scores.write_text(json.dumps([{"id": "a", "caption_score": 0.9, "foil_score": 0.2},
                                  {"id": "b", "caption_score": 0.6, "foil_score": 0.7}]))
    out = tmp_path / "m.json"
    assert main(["score-foils", str(scores), "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    # VALSE: N 2, fits 2, detected 1, pairwise 1 -> acc 75, p_c 100, p_f 50, acc_r 50
    assert {k: got["valse"][k] for k in ("acc", "p_c", "p_f", "acc_r")} == {"acc": 75.0, "p_c": 100.0, "p_f": 50.0, "acc_r": 50.0}
    # ViLMA: PPV 2 / 3, NPV 1 / 1, acc (2 + 1) / 4, AUROC (0.9 > both, 0.6 > 0.2) 3 / 4
    assert {k: got["vilma"][k] for k in ("acc_r", "p_c", "p_f", "acc", "min", "auroc")} == {
        "acc_r": 50.0, "p_c": pytest.approx(200 / 3), "p_f": 100.0, "acc": 75.0, "min": pytest.approx(200 / 3), "auroc": 75.0}
    # the JSON keeps full precision (66.666...), the printed line rounds to 2 decimals
    assert got["vilma"]["p_c"] != round(got["vilma"]["p_c"], 2)
    assert "valse acc_r 50.00 (N 2); vilma acc_r 50.00, AUROC 75.00" in capsys.readouterr().out
    # bad input: one line, status 2, the earlier output untouched
    scores.write_text(json.dumps([{"id": "a", "caption_score": 3.0, "foil_score": 0.2}]))
    assert main(["score-foils", str(scores), "--out", str(out)]) == 2
    assert "outside [0, 1]" in capsys.readouterr().err
    assert json.loads(out.read_text()) == got
    assert main(["score-foils", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    assert main(["score-foils", str(scores), "--logits", "--out", str(out)]) == 0
