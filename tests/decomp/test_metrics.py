"""AGQA-Decomp metrics on a hand-worked folder of hierarchies.

Every expected number below is worked out by hand in the comments from the official definitions
(madeleinegrunde/AGQA_baselines_code ``agqa_decomp_evaluation``; docs/reference/agqa.md §2.6-2.7),
never read back from the code under test.

The folder (3 videos, 8 main questions, isolated.json). Columns: id | type | answer | key | prediction
(ok = prediction equals answer, x = wrong, "-" = no prediction given).

v1.json
  A   And              no    a1  no   ok   (the predictions file says "yes" first, then "no": last wins)
  B   Interaction      yes   a2  yes  ok
  C   Interaction      no    a3  yes  x
  E   Object Exists    yes   a4  yes  ok
  F   Relation Exists  yes   a5  yes  ok
  G   Object Exists    yes   a6  no   x
  K   Relation Exists  yes   a9  no   x
  O   Object (banned)  cup   a7  -
  X   Xor              yes   a8  yes  ok
  m1: A{And:[B,C]}  B{Interaction:[E,F,O]}  C{Interaction:[G,K]}      subquestions A B C E F G K O
  m2: X{Xor:[B,C]}  B{Interaction:[E,F,O]}  C{Interaction:[G,K]}      subquestions X B C E F G K O
      (B, C, E, F, G, K, O repeat m1's texts: counted once per video where the official code dedups)
v2.json
  Q   Choose           cup   b1  cup  ok
  Q1  Object Equals    yes   b2  yes  ok
  Q2  Object Equals    no    b3  no   ok
  E2  Object Exists    yes   b4  yes  ok   program ObjExists(cup)    ("Does the cup exist?", as in v1)
  G2  Object Exists    yes   b5  -    x    program ObjExists(phone)  (the one scored key without prediction)
  W   First Object     cup   b6  cup  ok
  O2  Object (banned)  cup   b7  -
  T1  Interaction After    no   b8  yes x
  T2  Interaction Before   no   b9  no  ok
  T2b Interaction Before   yes  b10 yes ok
  T3  Interaction While    no   b11 no  ok
  T3b Interaction While    no   b12 yes x
  T4  Interaction Between  no   b13 no  ok
  T4b Interaction Between  yes  b14 yes ok
  H   Interaction      yes   b15 yes  ok
  S   Relation Exists  yes   b16 yes  ok
  U   Relation Exists  yes   b17 no   x
  m3: Q{Choose:[Q1,Q2]}  Q1{Equals:[E2,W]}  Q2{Equals:[G2,W]}  W{First:[O2]}
  m4: T1{After:[H,U], Interaction:[U,H]}  T2{Before:[H,U]}  T2b{Before:[H,S]}  T3{While:[H,U]}
      T3b{While:[H,U]}  T4{Between:[H,U]}  T4b{Between:[H,S]}
v3.json
  A3  And              yes   c1  yes  ok
  B3  Interaction      yes   c2  yes  ok
  C3  Interaction      yes   c3  yes  ok   (same text as v1's B, another video: not deduplicated)
  X3  Xor              no    c4  no   ok
  X4  Xor              yes   c5  yes  ok
  N3  Interaction      None  c6  no        (no answer: out of accuracy and CA, still in IC)
  Z   Object Exists    no    c7  no   ok
  F3  Relation Exists  yes   c8  no   x
  EQ  Object Equals    no    c9  yes  x
  F1  First Object     cup   c10 cup  ok
  L1  Last Object      book  c11 book ok
  O3  Object (banned)  cup   c12 -
  CT  Choose           before c13 after x
  P1  Interaction Before yes c14 yes  ok
  P2  Interaction After  no  c15 no   ok
  LC  Longer Choose    cup   c16 cup  ok
  m5: A3{And:[B3,C3]}
  m6: X3{Xor:[B3,C3]}  X4{Xor:[C3,N3]}  N3{Interaction:[Z,F3]}      subquestions X3 X4 B3 C3 N3 Z F3
  m7: EQ{Equals:[F1,L1]}  F1{First:[O3]}  L1{Last:[O3]}
  m8: CT{Choose:[P1,P2]}  LC{Longer Choose:[C3,B3]}                  subquestions CT P1 P2 LC B3 C3
isolated.json
  I1 Object Exists yes i1 yes ok (listed twice: both count)   I2 Object Exists no i2 yes x
  I3 Relation Exists None i3 no x (None is an answer class here)  I4 Object (banned) cup i4
predictions also hold the unknown key "zz9".
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tensorqa.cli import main as cli_main
from tensorqa.decomp import (baseline_predictions, evaluate_predictions, load_hierarchies, load_predictions,
                             pool_baseline_predictions, write_report)
from tensorqa.decomp.baseline import write_predictions
from tensorqa.decomp.constants import COMPOSITION_RULES, CONSISTENCY_RULES, QUESTION_TYPES
from tensorqa.errors import TensorQAError

# id: (text, type, answer, key[, program])
NODES = {
    "A": ("Did they hold a cup and a phone?", "And", "no", "a1"),
    "B": ("Did they hold a cup?", "Interaction", "yes", "a2"),
    "C": ("Did they hold a phone?", "Interaction", "no", "a3"),
    "E": ("Does the cup exist?", "Object Exists", "yes", "a4"),
    "F": ("Did they hold something?", "Relation Exists", "yes", "a5"),
    "G": ("Does the phone exist?", "Object Exists", "yes", "a6"),
    "O": ("What did they hold?", "Object", "cup", "a7"),
    "X": ("Did they hold a cup but not a phone?", "Xor", "yes", "a8"),
    "K": ("Did they touch something?", "Relation Exists", "yes", "a9"),
    "Q": ("Which were they holding, the cup or the phone?", "Choose", "cup", "b1"),
    "Q1": ("Is the object they were holding the cup?", "Object Equals", "yes", "b2"),
    "Q2": ("Is the object they were holding the phone?", "Object Equals", "no", "b3"),
    "E2": ("Does the cup exist?", "Object Exists", "yes", "b4", "ObjExists(cup)"),
    "G2": ("Does the phone exist?", "Object Exists", "yes", "b5", "ObjExists(phone)"),
    "W": ("Which object were they holding first?", "First Object", "cup", "b6"),
    "O2": ("What were they holding?", "Object", "cup", "b7"),
    "T1": ("Were they holding the phone after sitting down?", "Interaction After", "no", "b8"),
    "T2": ("Were they holding the phone before sitting down?", "Interaction Before", "no", "b9"),
    "T2b": ("Were they holding the phone before standing up?", "Interaction Before", "yes", "b10"),
    "T3": ("Were they holding the phone while sitting down?", "Interaction While", "no", "b11"),
    "T3b": ("Were they holding the phone while standing up?", "Interaction While", "no", "b12"),
    "T4": ("Were they holding the phone between sitting down and standing up?", "Interaction Between", "no", "b13"),
    "T4b": ("Were they holding the phone between standing up and sitting down?", "Interaction Between", "yes", "b14"),
    "H": ("Were they holding the phone?", "Interaction", "yes", "b15"),
    "S": ("Did they sit down?", "Relation Exists", "yes", "b16"),
    "U": ("Did they stand up?", "Relation Exists", "yes", "b17"),
    "A3": ("Did they hold a book and a cup?", "And", "yes", "c1"),
    "B3": ("Did they hold a book?", "Interaction", "yes", "c2"),
    "C3": ("Did they hold a cup?", "Interaction", "yes", "c3"),
    "X3": ("Did they hold a book but not a cup?", "Xor", "no", "c4"),
    "X4": ("Did they hold a cup but not a dish?", "Xor", "yes", "c5"),
    "N3": ("Did they hold a dish?", "Interaction", None, "c6"),
    "Z": ("Does the dish exist?", "Object Exists", "no", "c7"),
    "F3": ("Did they hold anything?", "Relation Exists", "yes", "c8"),
    "EQ": ("Is the first object they held the last object they held?", "Object Equals", "no", "c9"),
    "F1": ("Which object did they hold first?", "First Object", "cup", "c10"),
    "L1": ("Which object did they hold last?", "Last Object", "book", "c11"),
    "O3": ("Which object did they hold?", "Object", "cup", "c12"),
    "CT": ("Did they hold the cup before or after holding the book?", "Choose", "before", "c13"),
    "P1": ("Did they hold the cup before holding the book?", "Interaction Before", "yes", "c14"),
    "P2": ("Did they hold the cup after holding the book?", "Interaction After", "no", "c15"),
    "LC": ("Did they hold the cup or the book for longer?", "Longer Choose", "cup", "c16"),
}

# video -> main key -> (subquestion ids, {parent id: {rule: [child ids]}})
VIDEOS = {
    "v1": {
        "m1": ("A B C E F G K O", {"A": {"And": ["B", "C"]}, "B": {"Interaction": ["E", "F", "O"]},
                                   "C": {"Interaction": ["G", "K"]}}),
        "m2": ("X B C E F G K O", {"X": {"Xor": ["B", "C"]}, "B": {"Interaction": ["E", "F", "O"]},
                                   "C": {"Interaction": ["G", "K"]}}),
    },
    "v2": {
        "m3": ("Q Q1 Q2 E2 G2 W O2", {"Q": {"Choose": ["Q1", "Q2"]}, "Q1": {"Equals": ["E2", "W"]},
                                      "Q2": {"Equals": ["G2", "W"]}, "W": {"First": ["O2"]}}),
        "m4": ("T1 T2 T2b T3 T3b T4 T4b H S U", {
            "T1": {"After": ["H", "U"], "Interaction": ["U", "H"]}, "T2": {"Before": ["H", "U"]},
            "T2b": {"Before": ["H", "S"]}, "T3": {"While": ["H", "U"]}, "T3b": {"While": ["H", "U"]},
            "T4": {"Between": ["H", "U"]}, "T4b": {"Between": ["H", "S"]}}),
    },
    "v3": {
        "m5": ("A3 B3 C3", {"A3": {"And": ["B3", "C3"]}}),
        "m6": ("X3 X4 B3 C3 N3 Z F3", {"X3": {"Xor": ["B3", "C3"]}, "X4": {"Xor": ["C3", "N3"]},
                                       "N3": {"Interaction": ["Z", "F3"]}}),
        "m7": ("EQ F1 L1 O3", {"EQ": {"Equals": ["F1", "L1"]}, "F1": {"First": ["O3"]}, "L1": {"Last": ["O3"]}}),
        "m8": ("CT P1 P2 LC B3 C3", {"CT": {"Choose": ["P1", "P2"]}, "LC": {"Longer Choose": ["C3", "B3"]}}),
    },
}

ISOLATED = [
    {"type": "Object Exists", "answer": "yes", "key": "i1"},
    {"type": "Object Exists", "answer": "yes", "key": "i1"},
    {"type": "Object Exists", "answer": "no", "key": "i2"},
    {"type": "Relation Exists", "answer": None, "key": "i3"},
    {"type": "Object", "answer": "cup", "key": "i4"},
]

# key -> prediction; b5 (G2) is deliberately absent, banned keys a7 b7 c12 i4 too
PRED = {
    "a1": "no", "a2": "yes", "a3": "yes", "a4": "yes", "a5": "yes", "a6": "no", "a8": "yes", "a9": "no",
    "b1": "cup", "b2": "yes", "b3": "no", "b4": "yes", "b6": "cup", "b8": "yes", "b9": "no", "b10": "yes",
    "b11": "no", "b12": "yes", "b13": "no", "b14": "yes", "b15": "yes", "b16": "yes", "b17": "no",
    "c1": "yes", "c2": "yes", "c3": "yes", "c4": "no", "c5": "yes", "c6": "no", "c7": "no", "c8": "no",
    "c9": "yes", "c10": "cup", "c11": "book", "c13": "after", "c14": "yes", "c15": "no", "c16": "cup",
    "i1": "yes", "i2": "yes", "i3": "no",
}


def question(node: str) -> dict:
    text, qtype, answer, key, *program = NODES[node]
    return {"type": qtype, "answer": answer, "program": program[0] if program else f"Prog({node})", "key": key}


def video_json(spec: dict) -> dict:
    out = {}
    for main_key, (ids, hier) in spec.items():
        out[main_key] = {
            "subquestion": {NODES[i][0]: question(i) for i in ids.split()},
            "hierarchy": {NODES[p][0]: {rule: [NODES[c][0] for c in kids] for rule, kids in rules.items()}
                          for p, rules in hier.items()},
        }
    return out


def write_folder(root, videos=VIDEOS, isolated=ISOLATED):
    root.mkdir(parents=True, exist_ok=True)
    for vid, spec in videos.items():
        (root / f"{vid}.json").write_text(json.dumps(video_json(spec)))
    if isolated is not None:
        (root / "isolated.json").write_text(json.dumps(isolated))
    return root


def official_predictions() -> list:
    # the official list format; a1 appears twice (first "yes", then "no": the dict keeps the last)
    rows = [{"csv_q_id": "a1", "prediction": "yes", "answer": "no"}]
    rows += [{"csv_q_id": k, "prediction": v} for k, v in PRED.items()]
    rows += [{"csv_q_id": "zz9", "prediction": "yes"}]
    return rows


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("decomp") / "balanced_test_hierarchies")


@pytest.fixture(scope="module")
def summary(folder):
    return evaluate_predictions(folder, official_predictions())


# --------------------------------------------------------------------------------------------
# reading the layout


def test_tables(folder):
    h = load_hierarchies(folder)
    # nodes: 8 + 8 (m1, m2) + 7 + 10 (m3, m4) + 3 + 7 + 4 + 6 (m5..m8) = 53 rows, one per (main key, text)
    assert h.nodes.num_rows == 53 and h.num_hierarchies == 8
    assert h.videos == ["v1", "v2", "v3"]
    row = h.nodes.slice(0, 1).to_pylist()[0]
    assert row["video"] == "v1" and row["main_key"] == "m1" and row["text"] == NODES["A"][0]
    assert row["type"] == "And" and row["collapsed"] == "Conjunction" and row["key"] == "a1" and row["is_parent"]
    n3 = [r for r in h.nodes.to_pylist() if r["key"] == "c6"][0]
    assert n3["answer"] is None and n3["is_parent"] and n3["collapsed"] == "Interaction"
    # edges: m1 2+3+2, m2 2+3+2, m3 2+2+2+1, m4 (2+2)+2*6, m5 2, m6 2+2+2, m7 2+1+1, m8 2+2
    #        = 7 + 7 + 7 + 16 + 2 + 6 + 4 + 4 = 53
    assert h.edges.num_rows == 53
    t1 = [r for r in h.edges.to_pylist() if r["parent"] == NODES["T1"][0]]
    assert [(r["rule"], r["child"], r["position"], r["arity"]) for r in t1] == [
        ("After", NODES["H"][0], 0, 2), ("After", NODES["U"][0], 1, 2),
        ("Interaction", NODES["U"][0], 0, 2), ("Interaction", NODES["H"][0], 1, 2)]
    # parent_row / child_row point at the node rows of the same hierarchy
    texts = h.nodes["text"].to_pylist()
    hier = h.nodes["hierarchy"].to_pylist()
    for r in h.edges.to_pylist():
        assert texts[r["parent_row"]] == r["parent"] and texts[r["child_row"]] == r["child"]
        assert hier[r["parent_row"]] == hier[r["child_row"]] == r["hierarchy"]
    assert h.isolated.num_rows == 5 and h.isolated["collapsed"].to_pylist()[0] == "Object Exists"


def test_worker_processes_read_the_same_tables(folder):
    one, two = load_hierarchies(folder, workers=1), load_hierarchies(folder, workers=2)
    assert one.nodes.equals(two.nodes) and one.edges.equals(two.edges)
    assert np.array_equal(one.node_key_row, two.node_key_row) and one.key_values.equals(two.key_values)


# --------------------------------------------------------------------------------------------
# accuracy


def test_accuracy(summary):
    acc = summary["accuracy"]
    # population: non-banned, answered hierarchy questions, first per (video, text), plus isolated as listed
    # Object Exists: yes -> E ok, G x, E2 ok, G2 x (no prediction), I1 ok, I1 ok = 4/6; no -> Z ok, I2 x = 1/2
    #   mean(4/6, 1/2) = 58.33
    assert acc["Object Exists"] == 58.33
    # Relation Exists: yes -> F ok, K x, S ok, U x, F3 x = 2/5; None (isolated I3, predicted "no") = 0/1 -> 20.00
    assert acc["Relation Exists"] == 20.0
    # Interaction: yes -> B, H, B3, C3 all ok = 4/4; no -> C x = 0/1 -> 50.00 (N3 has no answer)
    assert acc["Interaction"] == 50.0
    # ITL: no -> T1 x, T2, T3 ok, T3b x, T4, P2 ok = 4/6; yes -> T2b, T4b, P1 = 3/3 -> mean(2/3, 1) = 83.33
    assert acc["Interaction Temporal Localization"] == 83.33
    # First/Last: cup -> W, F1 = 2/2; book -> L1 = 1/1 -> 100
    assert acc["First/Last"] == 100.0
    # Conjunction: A, X, A3, X3, X4 all right -> 100
    assert acc["Conjunction"] == 100.0
    # Choose: cup -> Q, LC = 2/2; before -> CT x = 0/1 -> 50
    assert acc["Choose"] == 50.0
    # Equals: yes -> Q1 = 1/1; no -> Q2 ok, EQ x = 1/2 -> 75
    assert acc["Equals"] == 75.0
    assert acc["Exists Temporal Localization"] is None and acc["Longest/Shortest Action"] is None
    # Overall pools answers across types:
    #   yes: 4/6 + 2/5 + 4/4 + 3/3 (ITL) + 3/3 (X, A3, X4) + 1/1 (Q1) = 17/22
    #   no:  1/2 (ObjEx) + 0/1 (C) + 4/6 (ITL) + 2/2 (A, X3) + 1/2 (Equals) = 8/13
    #   None 0/1, cup 4/4, book 1/1, before 0/1
    #   mean(17/22, 8/13, 0, 1, 1, 0) = (0.772727 + 0.615385 + 2) / 6 = 56.47
    assert acc["Overall"] == 56.47
    assert list(acc) == list(QUESTION_TYPES)
    counts = summary["counts"]["accuracy"]
    # questions: ObjEx 8, RelEx 6, Interaction 5, ITL 9, First/Last 3, Conj 5, Choose 3, Equals 3 = 42
    assert counts["Object Exists"] == 8 and counts["Relation Exists"] == 6 and counts["Overall"] == 42
    rows = {(r["type"], r["answer"]): (r["total"], r["correct"]) for r in summary["counts"]["accuracy_per_answer"]}
    assert rows[("Object Exists", "yes")] == (6, 4) and rows[("Relation Exists", None)] == (1, 0)
    assert rows[("Overall", "yes")] == (22, 17) and rows[("Overall", "no")] == (13, 8)


# --------------------------------------------------------------------------------------------
# CA / RWR / RWR-n / Delta


def test_ca_rwr_by_composition(summary):
    # (parent right?, children valid / right) per composition; deduplicated parents, N3 (no answer) left out,
    # First/Last compositions have only a banned child (total 0: skipped)
    #   And:         A ok  [B ok, C x] -> rwr-1;   A3 ok [ok, ok] -> ca
    #   Interaction: B ok  [E ok, F ok] (O banned) -> ca;   C x [G x, K x] -> rwr-2;   T1 x [U x, H ok] -> rwr-1
    #   Xor:         X ok -> rwr-1;   X3 ok -> ca;   X4 ok [C3 ok, N3 no answer] -> ca (one valid child)
    #   Choose:      Q ok -> ca;   CT x [P1 ok, P2 ok] -> ca;    Longer Choose: LC ok -> ca
    #   Equals:      Q1 ok -> ca;   Q2 ok [G2 x (missing), W ok] -> rwr-1;   EQ x [F1 ok, L1 ok] -> ca
    #   After: T1 x -> rwr-1.  Before: T2 ok -> rwr-1, T2b ok -> ca.  While: T3 ok, T3b x -> rwr-1.
    #   Between: T4 ok -> rwr-1, T4b ok -> ca
    ca, rwr, delta, rn = (summary[k]["by_composition"] for k in ("ca", "rwr", "delta", "rwr_n"))
    assert list(ca) == list(COMPOSITION_RULES)
    assert (ca["Interaction"], rwr["Interaction"], delta["Interaction"]) == (100.0, 0.0, -100.0)
    assert rn["Interaction"] == {"1": 0.0, "2": 0.0}
    assert (ca["Equals"], rwr["Equals"], delta["Equals"]) == (50.0, 100.0, 50.0)
    assert (ca["And"], rwr["And"], delta["And"]) == (100.0, 100.0, 0.0)
    assert (ca["Xor"], rwr["Xor"], delta["Xor"]) == (100.0, 100.0, 0.0)
    assert (ca["Choose"], rwr["Choose"], delta["Choose"]) == (50.0, None, None)
    assert (ca["Longer Choose"], rwr["Longer Choose"]) == (100.0, None)
    assert ca["First"] is ca["Last"] is ca["Shorter Choose"] is None
    assert (ca["After"], rwr["After"], delta["After"]) == (None, 0.0, None)
    assert (ca["Before"], rwr["Before"], delta["Before"]) == (100.0, 100.0, 0.0)
    assert (ca["While"], rwr["While"]) == (None, 50.0) and rn["While"] == {"1": 50.0, "2": None}
    assert (ca["Between"], rwr["Between"]) == (100.0, 100.0)
    # Overall: ca = B A3 X3 X4 Q CT Q1 EQ T2b T4b LC = 9 right of 11 -> 81.82
    #          rwr = A X C Q2 T1(After) T1(Interaction) T2 T3 T3b T4 = 6 of 10 -> 60.00
    #          delta = 60.00 - 81.818 = -21.82; rwr-1: 6 of 9 = 66.67; rwr-2: C = 0/1
    assert (ca["Overall"], rwr["Overall"], delta["Overall"]) == (81.82, 60.0, -21.82)
    assert rn["Overall"] == {"1": 66.67, "2": 0.0}
    counts = summary["counts"]
    assert counts["ca"]["by_composition"]["Overall"] == 11 and counts["rwr"]["by_composition"]["Overall"] == 10


def test_ca_rwr_by_parent(summary):
    # per parent, children unioned over its rules: T1's After [H, U] and Interaction [U, H] are one set
    # {H ok, U x} -> T1 counts once, in rwr-1 (by composition it counted twice)
    #   Conjunction: A ok rwr, X ok rwr, A3 X3 X4 ok ca -> ca 3/3, rwr 2/2
    #   Interaction: B ok ca, C x rwr-2 -> 100 / 0 / -100
    #   ITL: T2b T4b ok ca; T1 x, T2 ok, T3 ok, T3b x, T4 ok rwr-1 -> ca 100, rwr 3/5 = 60, delta -40
    #   Choose (Q, CT, LC all ca): 2/3 = 66.67;  Equals: ca Q1 ok, EQ x = 50; rwr Q2 ok = 100
    ca, rwr, delta = (summary[k]["by_parent"] for k in ("ca", "rwr", "delta"))
    assert list(ca) == list(QUESTION_TYPES)
    assert (ca["Conjunction"], rwr["Conjunction"], delta["Conjunction"]) == (100.0, 100.0, 0.0)
    assert (ca["Interaction"], rwr["Interaction"], delta["Interaction"]) == (100.0, 0.0, -100.0)
    assert (ca["Interaction Temporal Localization"], rwr["Interaction Temporal Localization"],
            delta["Interaction Temporal Localization"]) == (100.0, 60.0, -40.0)
    assert (ca["Choose"], rwr["Choose"]) == (66.67, None)
    assert (ca["Equals"], rwr["Equals"], delta["Equals"]) == (50.0, 100.0, 50.0)
    assert ca["First/Last"] is None and ca["Object Exists"] is None
    # Overall: ca 9/11 = 81.82; rwr = A X C Q2 T1 T2 T3 T3b T4 = 6/9 = 66.67; delta -15.15
    assert (ca["Overall"], rwr["Overall"], delta["Overall"]) == (81.82, 66.67, -15.15)
    assert summary["rwr_n"]["by_parent"]["Overall"] == {"1": 75.0, "2": 0.0}  # rwr-1: 6 of 8


# --------------------------------------------------------------------------------------------
# internal consistency


def test_ic_by_rule(summary):
    # checks fired under deduplicated non-banned parents (predictions only), both directions:
    #   Interaction  B q=yes [E yes, F yes]: Yes ok.  C q=yes [G no, K no]: Yes wrong AND No wrong (a child
    #                said no but q != no).  N3 q=no [Z no, F3 no]: No ok (N3 has no answer: still checked).
    #                T1's Interaction rule q=yes [U no, H yes]: Yes wrong, No wrong.
    #                -> Yes 3 fired 2 wrong = 33.33, No 3 fired 2 wrong = 33.33
    #   And          A q=no [B yes, C yes]: Yes fires (all children yes) wrong, No fires (q=no) wrong (no child no).
    #                A3 q=yes [yes, yes]: Yes ok.  -> Yes 2/1 wrong = 50, No 1/1 = 0
    #   Xor          X q=yes [B yes, C yes]: Yes wrong; No fires (children are not yes/no) wrong.
    #                X3 q=no [yes, yes]: No ok.  X4 q=yes [C3 yes, N3 no]: Yes ok.  -> 50, 50
    #   Equals       Q1 leaf (obj "cup") q=yes, E2 yes, W cup: Yes ok.  Q2 leaf (obj "phone") q=no, G2 missing,
    #                W cup: No ok.  EQ non-leaf q=yes, F1 cup != L1 book: Yes wrong, No wrong. -> 50, 50
    #   Choose       Q q=cup: Q1's Equals child "Does the cup exist?" contains "cup exist" -> Q1 yes, Q2 no: ok.
    #                CT q=after, P1 yes: wrong.  -> Object 100, Temporal 0
    #   After        T1 q=yes [H yes, U no]: Yes wrong, No wrong -> 0, 0
    #   Before       T2 q=no [H, U no]: No ok.  T2b q=yes [yes, yes]: Yes ok -> 100, 100
    #   While        T3 q=no [H, U no]: No ok.  T3b q=yes [H, U no]: Yes wrong, No wrong -> Yes 0, No 1 of 2 = 50
    #   Between      T4 q=no [yes, no]: only No fires, ok.  T4b q=yes [yes, yes]: only Yes, ok -> 100, 100
    #   First / Last / Longer Choose: never checked.
    ic = summary["ic"]["by_rule"]
    assert list(ic) == list(CONSISTENCY_RULES)
    assert ic == {
        "Interaction Yes": 33.33, "Interaction No": 33.33, "Equals Yes": 50.0, "Equals No": 50.0,
        "And Yes": 50.0, "And No": 0.0, "Xor Yes": 50.0, "Xor No": 50.0,
        "Choose Temporal": 0.0, "Choose Object": 100.0, "After Yes": 0.0, "After No": 0.0,
        "Before Yes": 100.0, "Before No": 100.0, "While Yes": 0.0, "While No": 50.0,
        "Between Yes": 100.0, "Between No": 100.0,
    }
    fired = summary["counts"]["ic"]["fired"]
    assert fired["Interaction Yes"] == 3 and fired["And No"] == 1 and fired["While No"] == 2
    assert sum(fired.values()) == 3 + 3 + 2 + 2 + 2 + 1 + 2 + 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 1 + 1


def test_ic_by_composition_and_parent(summary):
    by_comp = summary["ic"]["by_composition"]
    # mean of the rule scores whose name contains the composition name
    assert by_comp["Interaction"] == 33.33 and by_comp["And"] == 25.0 and by_comp["Choose"] == 50.0
    assert by_comp["Equals"] == 50.0 and by_comp["While"] == 25.0 and by_comp["Between"] == 100.0
    # no rule name contains First / Last / Longer Choose / Shorter Choose -> N/A
    assert by_comp["First"] is by_comp["Last"] is by_comp["Longer Choose"] is by_comp["Shorter Choose"] is None
    # Overall: all 18 fired; mean = (1/3 + 1/3 + 6 * 1/2 + 5 * 1 + 5 * 0) / 18 = 8.6667 / 18 = 48.15
    assert by_comp["Overall"] == 48.15
    by_parent = summary["ic"]["by_parent"]
    # Interaction parents B, C, N3: Yes 1 of 2 ok, No 1 of 2 ok -> 50
    assert by_parent["Interaction"] == 50.0
    # Conjunction parents A X A3 X3 X4: And Yes 1/2, And No 0/1, Xor Yes 1/2, Xor No 1/2 -> 1.5 / 4 = 37.5
    assert by_parent["Conjunction"] == 37.5
    # ITL parents T1..T4b: After Y 0, After N 0, Before Y 1, Before N 1, While Y 0, While N 1/2, Between Y 1,
    # Between N 1, Interaction Y 0, Interaction N 0 (T1's Interaction rule) -> 4.5 / 10 = 45
    assert by_parent["Interaction Temporal Localization"] == 45.0
    assert by_parent["Equals"] == 50.0 and by_parent["Choose"] == 50.0
    # First/Last and Object Exists are not in parent_to_rules; Overall never is
    assert by_parent["First/Last"] is None and by_parent["Overall"] is None
    assert by_parent["Relation Exists"] is None  # no Relation Exists parent


def test_ic_accuracy_correlation(summary):
    # per main question: accuracy over its non-banned answered sub-questions (no dedup) and IC with the
    # one-check-per-composition variants of ic_acc_correlation.py (no dedup):
    #   m1 acc A B E F ok, C G K x = 4/7; IC A (q=no: only the No check, wrong), B ok, C (q=yes: only Yes,
    #      wrong) = 1/3
    #   m2 acc 4/7; IC X (q=yes: Yes wrong), B ok, C wrong = 1/3
    #   m3 acc Q Q1 Q2 E2 W ok, G2 x = 5/6; IC Q ok, Q1 ok, Q2 ok = 1
    #   m4 acc 7/10; IC T1 After wrong, T1 Interaction wrong, T2 ok, T2b ok, T3 ok, T3b wrong, T4 ok, T4b ok = 5/8
    #   m5 acc 3/3; IC 1.   m6 acc 5/6 (F3 x, N3 skipped); IC X3 ok, X4 ok, N3 ok = 1
    #   m7 acc 2/3 (EQ x); IC EQ wrong = 0.   m8 acc 5/6 (CT x); IC CT wrong = 0
    acc = np.array([4 / 7, 4 / 7, 5 / 6, 7 / 10, 1, 5 / 6, 2 / 3, 5 / 6])
    ic = np.array([1 / 3, 1 / 3, 1, 5 / 8, 1, 1, 0, 0])
    # Pearson by its definition: sum(da * di) / sqrt(sum(da^2) sum(di^2))
    da, di = acc - acc.mean(), ic - ic.mean()
    r = (da * di).sum() / math.sqrt((da * da).sum() * (di * di).sum())
    assert abs(r - 0.5768) < 1e-4  # worked out: 0.5768
    assert summary["ic_acc_pearson_r"] == round(r, 4)
    assert summary["counts"]["ic_acc_hierarchies"] == 8


def test_coverage(summary):
    cov = summary["coverage"]
    # 43 entries: 41 predicted keys + a1 again + "zz9"
    assert cov["predictions"] == 43 and cov["distinct_prediction_keys"] == 42 and cov["duplicate_prediction_keys"] == 1
    assert cov["unknown_keys"] == 1 and cov["unknown_examples"] == ["zz9"]
    # 42 scored keys (every non-banned question; banned a7 b7 c12 i4 are never looked up); b5 has no prediction
    assert cov["scored_questions"] == 42
    assert cov["missing"] == 1 and cov["missing_examples"] == ["b5"]


def test_plain_map_predictions_give_the_same_summary(folder, summary, tmp_path):
    plain = dict(PRED, zz9="yes")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(plain))
    other = evaluate_predictions(folder, path)
    for k in ("accuracy", "ca", "rwr", "rwr_n", "delta", "ic", "ic_acc_pearson_r"):
        assert other[k] == summary[k]
    assert other["coverage"]["duplicate_prediction_keys"] == 0


def test_integer_ids(tmp_path):
    # keys may be JSON numbers in hierarchies and csv_q_id alike; they meet as strings
    spec = {"m": ("B E F", {"B": {"Interaction": ["E", "F"]}})}
    nodes = video_json(spec)
    for info in nodes["m"]["subquestion"].values():
        info["key"] = {"a2": 2, "a4": 4, "a5": 5}[info["key"]]
    (tmp_path / "v.json").write_text(json.dumps(nodes))
    s = evaluate_predictions(tmp_path, [{"csv_q_id": 2, "prediction": "yes"}, {"csv_q_id": 4, "prediction": "no"},
                                        {"csv_q_id": 5, "prediction": "yes"}])
    # B yes ok; E (Object Exists yes) predicted no; F ok; B q=yes with E no -> Interaction Yes wrong, No wrong
    assert s["coverage"]["missing"] == 0 and s["coverage"]["unknown_keys"] == 0
    assert s["accuracy"]["Object Exists"] == 0.0 and s["accuracy"]["Interaction"] == 100.0
    assert s["ic"]["by_rule"]["Interaction Yes"] == 0.0 and s["ic"]["by_rule"]["Interaction No"] == 0.0
    assert s["ca"]["by_composition"]["Interaction"] is None and s["rwr_n"]["by_composition"]["Interaction"] == {"1": 100.0}


# --------------------------------------------------------------------------------------------
# quirks, each on a tiny folder


def one_video(tmp_path, spec, nodes):
    """Write one video from an ad-hoc node table {id: (text, type, answer, key[, program])}."""
    saved = dict(NODES)
    NODES.update(nodes)
    try:
        (tmp_path / "v.json").write_text(json.dumps(video_json(spec)))
    finally:
        NODES.clear()
        NODES.update(saved)
    return tmp_path


def test_first_last_and_longer_shorter_choose_never_fire(tmp_path):
    # First / Last parents with a NON-banned child, and Longer / Shorter Choose with yes/no children whose
    # predictions contradict the parent: the official dispatcher has no branch for these rules
    nodes = {
        "P": ("Which object did they hold first?", "First Object", "cup", "k1"),
        "Y": ("Does the cup exist?", "Object Exists", "yes", "k2"),
        "L": ("Which object did they hold last?", "Last Object", "cup", "k3"),
        "LC": ("Longer?", "Longer Choose", "before", "k4"),
        "SC": ("Shorter?", "Shorter Choose", "after", "k5"),
    }
    spec = {"m": ("P Y L LC SC", {"P": {"First": ["Y"]}, "L": {"Last": ["Y"]}, "LC": {"Longer Choose": ["Y", "Y"]},
                                  "SC": {"Shorter Choose": ["Y", "Y"]}})}
    s = evaluate_predictions(one_video(tmp_path, spec, nodes), {"k1": "book", "k2": "no", "k3": "dish", "k4": "before",
                                                                "k5": "after"})
    assert sum(s["counts"]["ic"]["fired"].values()) == 0
    for comp in ("First", "Last", "Longer Choose", "Shorter Choose", "Overall"):
        assert s["ic"]["by_composition"][comp] is None
    # CA still sees them: First [Y x] -> rwr-1 with P x; Longer Choose [Y x, Y x] -> rwr-2 (listed twice)
    assert s["rwr"]["by_composition"]["First"] == 0.0 and s["rwr_n"]["by_composition"]["Longer Choose"]["2"] == 100.0


def test_equals_leaf_directions_differ(tmp_path):
    # Object Equals parents over a leaf first child (object "cup" from ObjExists(cup)) and an open second child
    nodes = {
        "Y": ("Does the cup exist?", "Object Exists", "yes", "y", "ObjExists(cup)"),
        "W": ("Which object did they hold first?", "First Object", "cup", "w"),
        "E1": ("Is the first object the cup (1)?", "Object Equals", "yes", "e1"),
        "E2": ("Is the first object the cup (2)?", "Object Equals", "yes", "e2"),
        "E3": ("Is the first object the cup (3)?", "Object Equals", "yes", "e3"),
    }
    spec = {"m": ("E1 E2 E3 Y W", {"E1": {"Equals": ["Y", "W"]}, "E2": {"Equals": ["Y", "W"]},
                                    "E3": {"Equals": ["Y", "W"]}})}
    folder = one_video(tmp_path, spec, nodes)
    # every parent sees c1 = Y, c2 = W; predictions vary q and the children
    #  q=no,  c1=no,  c2=cup: Yes fires backwards (c2 == obj; c1 ignored) wrong; No fires (q=no) wrong because
    #                         c2 == obj, though c1 = no makes "no" consistent -> Yes 1/1 wrong, No 1/1 wrong
    s = evaluate_predictions(folder, {"e1": "no", "e2": "no", "e3": "no", "y": "no", "w": "cup"})
    assert s["counts"]["ic"]["fired"]["Equals Yes"] == 3 and s["counts"]["ic"]["wrong"]["Equals Yes"] == 3
    assert s["counts"]["ic"]["fired"]["Equals No"] == 3 and s["counts"]["ic"]["wrong"]["Equals No"] == 3
    #  q=yes, c1=no, c2=cup: Yes wrong (c1 must be yes); No fires backwards (c1 != yes) wrong (q != no)
    s = evaluate_predictions(folder, {"e1": "yes", "e2": "yes", "e3": "yes", "y": "no", "w": "cup"})
    assert (s["counts"]["ic"]["fired"]["Equals Yes"], s["counts"]["ic"]["wrong"]["Equals Yes"]) == (3, 3)
    assert (s["counts"]["ic"]["fired"]["Equals No"], s["counts"]["ic"]["wrong"]["Equals No"]) == (3, 3)
    #  q=no, c1=yes, c2=dish: only No fires, ok.  q=yes, c1=yes, c2=cup: only Yes, ok.
    #  q=maybe, c1=no, c2=dish: No fires backwards, wrong
    s = evaluate_predictions(folder, {"e1": "no", "e2": "yes", "e3": "maybe", "y": "yes", "w": "dish"})
    # E1 q=no c2=dish: No ok. E2 q=yes, c2=dish: Yes wrong, No (c2 != obj) wrong. E3 q=maybe: No wrong.
    assert (s["counts"]["ic"]["fired"]["Equals Yes"], s["counts"]["ic"]["wrong"]["Equals Yes"]) == (1, 1)
    assert (s["counts"]["ic"]["fired"]["Equals No"], s["counts"]["ic"]["wrong"]["Equals No"]) == (3, 2)
    # the non-leaf case is symmetric: c1 = F (a parent of its own), q=no with F == W -> Yes (backwards) and No
    nodes2 = dict(nodes, F=("Which object did they hold last?", "Last Object", "cup", "f"),
                  O=("What did they hold?", "Object", "cup", "o"))
    spec2 = {"m": ("E1 F W O", {"E1": {"Equals": ["F", "W"]}, "F": {"Last": ["O"]}})}
    sub = tmp_path / "nonleaf"
    sub.mkdir()
    s = evaluate_predictions(one_video(sub, spec2, nodes2), {"e1": "no", "f": "cup", "w": "cup"})
    assert (s["counts"]["ic"]["fired"]["Equals Yes"], s["counts"]["ic"]["wrong"]["Equals Yes"]) == (1, 1)
    assert (s["counts"]["ic"]["fired"]["Equals No"], s["counts"]["ic"]["wrong"]["Equals No"]) == (1, 1)
    s = evaluate_predictions(sub, {"e1": "no", "f": "cup", "w": "book"})   # consistent: only No fires, ok
    assert s["counts"]["ic"]["fired"]["Equals Yes"] == 0 and s["ic"]["by_rule"]["Equals No"] == 100.0


def test_equals_only_under_object_equals(tmp_path):
    # an Action Equals parent is never checked (the official check returns unless the type is Object Equals)
    nodes = {"AE": ("Is the first action the longest?", "Action Equals", "yes", "ae"),
             "W": ("Which object did they hold first?", "First Object", "cup", "w"),
             "L": ("Which object did they hold last?", "Last Object", "cup", "l")}
    s = evaluate_predictions(one_video(tmp_path, {"m": ("AE W L", {"AE": {"Equals": ["W", "L"]}})}, nodes),
                             {"ae": "yes", "w": "cup", "l": "book"})
    assert sum(s["counts"]["ic"]["fired"].values()) == 0


def test_choose_object_needs_equals_grandchildren(tmp_path):
    # Choose with an open answer and children without an "Equals" rule: the official try/except returns
    nodes = {"Q": ("Cup or phone?", "Choose", "cup", "q"), "Y": ("Does the cup exist?", "Object Exists", "yes", "y"),
             "N": ("Does the phone exist?", "Object Exists", "no", "n")}
    s = evaluate_predictions(one_video(tmp_path, {"m": ("Q Y N", {"Q": {"Choose": ["Y", "N"]}})}, nodes),
                             {"q": "cup", "y": "no", "n": "yes"})
    assert s["counts"]["ic"]["fired"]["Choose Object"] == 0
    # the second child's Equals text is tried when the first does not contain "<answer> exist"
    nodes.update({"Q1": ("Is it the cup?", "Object Equals", "yes", "q1"),
                  "Q2": ("Is it the phone?", "Object Equals", "no", "q2"),
                  "W": ("Which object?", "First Object", "cup", "w")})
    spec = {"m": ("Q Q1 Q2 Y N W", {"Q": {"Choose": ["Q1", "Q2"]}, "Q1": {"Equals": ["Y", "W"]},
                                    "Q2": {"Equals": ["N", "W"]}})}
    sub = tmp_path / "two"
    sub.mkdir()
    folder = one_video(sub, spec, {**nodes, "Y": (*nodes["Y"], "ObjExists(cup)"), "N": (*nodes["N"], "ObjExists(phone)")})
    # q=phone: "phone exist" is in N's text (Q2's Equals child) -> Q1 must be no, Q2 yes
    s = evaluate_predictions(folder, {"q": "phone", "q1": "no", "q2": "yes", "y": "yes", "n": "yes", "w": "phone"})
    assert (s["counts"]["ic"]["fired"]["Choose Object"], s["counts"]["ic"]["wrong"]["Choose Object"]) == (1, 0)
    s = evaluate_predictions(folder, {"q": "cup", "q1": "no", "q2": "yes", "y": "yes", "n": "yes", "w": "phone"})
    assert (s["counts"]["ic"]["fired"]["Choose Object"], s["counts"]["ic"]["wrong"]["Choose Object"]) == (1, 1)


def test_pairwise_rules_need_two_children(tmp_path):
    nodes = {"X": ("Xor?", "Xor", "yes", "x"), "Y": ("Y?", "Object Exists", "yes", "y")}
    folder = one_video(tmp_path, {"m": ("X Y", {"X": {"Xor": ["Y", "Y", "Y"]}})}, nodes)
    with pytest.raises(TensorQAError, match="needs exactly 2"):
        evaluate_predictions(folder, {"x": "yes", "y": "yes"})


def test_unknown_types_pass_through(tmp_path):
    # isolated questions of a type outside the official table count under their own name (and in Overall)
    (tmp_path / "isolated.json").write_text(json.dumps([{"type": "Made Up", "answer": "a", "key": "1"},
                                                        {"type": "Made Up", "answer": "b", "key": "2"}]))
    s = evaluate_predictions(tmp_path, {"1": "a", "2": "a"})
    assert s["accuracy"]["Made Up"] == 50.0 and s["accuracy"]["Overall"] == 50.0
    assert list(s["accuracy"])[-2:] == ["Made Up", "Overall"]
    assert s["ic_acc_pearson_r"] is None


# --------------------------------------------------------------------------------------------
# reports and the command line


def test_summary_json_shape(summary, tmp_path):
    written = write_report(summary, tmp_path / "out")
    names = {p.name for p in written}
    assert {"summary.json", "accuracy.csv", "per_gt_acc.csv", "ca.csv", "rwr.csv", "rwr_n.csv", "delta.csv",
            "ic.csv"} <= names
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert set(s) >= {"accuracy", "ca", "rwr", "delta", "rwr_n", "ic", "ic_acc_pearson_r"}
    for metric in ("ca", "rwr", "delta", "rwr_n"):
        assert set(s[metric]) == {"by_composition", "by_parent"}
        assert list(s[metric]["by_composition"]) == list(COMPOSITION_RULES)
        assert list(s[metric]["by_parent"]) == list(QUESTION_TYPES)
    assert set(s["ic"]) == {"by_rule", "by_composition", "by_parent"}
    assert s["rwr_n"]["by_composition"]["First"] == {"1": None, "2": None}
    assert s["ca"]["by_composition"]["First"] is None and isinstance(s["ic_acc_pearson_r"], float)
    lines = (tmp_path / "out" / "accuracy.csv").read_text().splitlines()
    assert lines[0] == "Question Type,Accuracy,Answers,Questions" and "Object Exists,58.33,2,8" in lines
    assert "First/Last,100.00,2,3" in lines and "Exists Temporal Localization,N/A,0,0" in lines
    assert "Object Exists,yes,6,4,66.67" in (tmp_path / "out" / "per_gt_acc.csv").read_text()


def test_cli_evaluate(folder, tmp_path, capsys):
    preds = tmp_path / "hcrn_preds.json"
    preds.write_text(json.dumps(official_predictions()))
    assert cli_main(["evaluate", "--hierarchies", str(folder), "--predictions", str(preds), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "Object Exists" in out and "58.33" in out and "Interaction Yes" in out
    assert "1 prediction keys are not questions" in out and "'zz9'" in out
    assert "1 scored questions have no prediction" in out and "'b5'" in out
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["accuracy"]["Overall"] == 56.47


def _user_error(capsys, argv, *needles):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tensorqa: error: "), err
    for n in needles:
        assert n in err[0]


def test_cli_bad_inputs(folder, tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps(PRED))
    ev = ["evaluate", "--hierarchies"]
    _user_error(capsys, [*ev, str(tmp_path / "nope"), "--predictions", str(preds)], "nope", "no such directory")
    _user_error(capsys, [*ev, str(folder), "--predictions", str(tmp_path / "none.json")], "none.json", "no such file")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a1": "yes",')
    _user_error(capsys, [*ev, str(folder), "--predictions", str(bad)], "bad.json", "not valid JSON")
    bad.write_text("3")
    _user_error(capsys, [*ev, str(folder), "--predictions", str(bad)], "bad.json", "expected a list")
    bad.write_text('[{"csv_q_id": 1}]')
    _user_error(capsys, [*ev, str(folder), "--predictions", str(bad)], "bad.json", "entry 0")
    empty = tmp_path / "empty"
    empty.mkdir()
    _user_error(capsys, [*ev, str(empty), "--predictions", str(preds)], "no <video_id>.json")
    for content, needle in [("[1, 2]", "expected an object"), ('{"m": {"subquestion": {}}}', "'hierarchy'"),
                            ('{"m": {"subquestion": {"Q?": {"type": "Xor", "key": "1"}}, "hierarchy": {}}}', "'answer'"),
                            ('{"m": {"subquestion": {"Q?": {"type": "Xor", "answer": "no", "key": "1"}}, '
                             '"hierarchy": {"Q?": {"Xor": ["R?"]}}}}', "'R?' is not among"),
                            ('{"m": {"subquestion": {}, "hierarchy": {"P?": {}}}}', "'P?' is not among"),
                            ('{"m": {"subquestion": {"Q?": {"type": "Xor", "answer": "no", "key": "1"}}, '
                             '"hierarchy": {"Q?": {"Xor": [["Q?"]]}}}}', "must be a question text"),
                            ('{"m": {"subquestion": {"Q?": {"type": "Xor", "answer": "no", "key": "1"}, '
                             '"R?": {"type": "Xor", "answer": "no", "key": "2"}}, "hierarchy": {}}, '
                             '"n": {"subquestion": {"Q?": {"type": "Xor", "answer": "no", "key": "1"}}, '
                             '"hierarchy": {"Q?": {"Xor": ["R?"]}}}}', "main question 'n': child question 'R?'"),
                            ("{", "not valid JSON")]:
        d = tmp_path / f"case{abs(hash(content))}"
        d.mkdir()
        (d / "vid7.json").write_text(content)
        _user_error(capsys, [*ev, str(d), "--predictions", str(preds)], "vid7.json", needle)
    d = tmp_path / "iso"
    d.mkdir()
    (d / "isolated.json").write_text('{"type": "x"}')
    _user_error(capsys, [*ev, str(d), "--predictions", str(preds)], "isolated.json", "expected a list")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    _user_error(capsys, [*ev, str(folder), "--predictions", str(preds), "--out", str(blocker)], "a_file")
    _user_error(capsys, ["baseline", "--pool", str(tmp_path / "nopool"), "--kind", "random", "--out", str(tmp_path / "o.json")],
                "nopool")
    _user_error(capsys, ["baseline", "--hierarchies", str(folder), "--kind", "random", "--fit-split", "train",
                         "--out", str(tmp_path / "o.json")], "--fit-split")


def test_cli_subprocess_one_line_error(tmp_path):
    # the real entry point: exit status 2, one line on stderr, no traceback
    r = subprocess.run([sys.executable, "-m", "tensorqa.cli", "evaluate", "--hierarchies", str(tmp_path / "gone"),
                        "--predictions", str(tmp_path / "p.json")], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"tensorqa: error: {tmp_path / 'gone'}: no such directory"]


# --------------------------------------------------------------------------------------------
# baselines


def test_most_likely_baseline(folder, tmp_path, capsys):
    out = tmp_path / "ml.json"
    assert cli_main(["baseline", "--hierarchies", str(folder), "--kind", "most-likely", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert set(rows[0]) == {"csv_q_id", "prediction"}
    pred = {r["csv_q_id"]: r["prediction"] for r in rows}
    # every key of the folder (banned ones included): 9 + 17 + 16 + 4 isolated = 46
    assert len(pred) == 46
    # most frequent answer per collapsed type over distinct keys: ObjEx yes 5 / no 2; ITL no 6 / yes 3;
    # Equals no 2 / yes 1; Choose cup 2 / before 1; First/Last cup 2 / book 1; Object cup
    assert pred["a4"] == "yes" and pred["b8"] == "no" and pred["b2"] == "no" and pred["c13"] == "cup"
    assert pred["c11"] == "cup" and pred["a7"] == "cup" and pred["i3"] == "yes"
    s = evaluate_predictions(folder, out)
    # a constant answer per type scores 100 / (number of answer classes of the type): every type here has 2
    for t in ("Object Exists", "Relation Exists", "Interaction", "Interaction Temporal Localization",
              "First/Last", "Conjunction", "Choose", "Equals"):
        assert s["accuracy"][t] == 50.0
    # Overall: yes 18/22 (all but ITL's 3 and Equals' 1, predicted "no"), no 8/13 (ITL 6 + Equals 2),
    # None 0/1, cup 4/4, book 0/1, before 0/1 -> (0.818182 + 0.615385 + 1) / 6 = 40.56
    assert s["accuracy"]["Overall"] == 40.56
    assert s["coverage"]["missing"] == 0 and s["coverage"]["unknown_keys"] == 0


def test_random_baseline(folder):
    h = load_hierarchies(folder)
    a = baseline_predictions(h, "random", seed=1)
    b = baseline_predictions(h, "random", seed=1)
    c = baseline_predictions(h, "random", seed=2)
    assert a.values.to_pylist() == b.values.to_pylist() and a.values.to_pylist() != c.values.to_pylist()
    seen = {"Conjunction": {"yes", "no"}, "Choose": {"cup", "before"}, "First/Last": {"cup", "book"},
            "Object": {"cup"}}
    key_type = {**{k: t for k, t in zip(h.nodes["key"].to_pylist(), h.nodes["collapsed"].to_pylist())},
                **{k: t for k, t in zip(h.isolated["key"].to_pylist(), h.isolated["collapsed"].to_pylist())}}
    for k, v in zip(a.keys.to_pylist(), a.values.to_pylist()):
        assert v in seen.get(key_type[k], {"yes", "no"})


def test_fit_on_other_hierarchies(folder, tmp_path):
    # statistics from a "train" folder where Choose answers are mostly "after"
    train = {"t": {"m": ("CT P1 P2", {"CT": {"Choose": ["P1", "P2"]}})}}
    root = write_folder(tmp_path / "train", videos=train, isolated=[{"type": "Choose", "answer": "after", "key": "z"}])
    p = baseline_predictions(folder, "most-likely", fit=root)
    pred = dict(zip(p.keys.to_pylist(), p.values.to_pylist()))
    # train Choose: before 1 (CT), after 1 (isolated) -> tie -> alphabetically first "after"
    assert pred["b1"] == "after"
    # a type train never saw (Equals) falls back to train's most frequent answer overall:
    # yes (P1) 1, no (P2) 1, before 1, after 1 -> "after"
    assert pred["b2"] == "after"


def test_pool_baseline(tmp_path):
    data = tmp_path / "pool" / "data"
    data.mkdir(parents=True)
    cols = {"question_id": ["v-1", "v-2", "v-3", "w-1", "w-2", "w-3"],
            "template": ["objExists", "objExists", "objExists", "objExists", "actTime", "actTime"],
            "answer": ["no", "no", "yes", "yes", "after", "before"],
            "split": ["train", "train", "train", "test", "train", "test"]}
    pq.write_table(pa.table(cols), data / "train-00000-of-00001.parquet")
    p = pool_baseline_predictions(tmp_path / "pool", "most-likely", fit_split="train")
    # train: objExists no 2 / yes 1 -> "no"; actTime after 1 -> "after"
    assert dict(zip(p.keys.to_pylist(), p.values.to_pylist())) == {
        "v-1": "no", "v-2": "no", "v-3": "no", "w-1": "no", "w-2": "after", "w-3": "after"}
    out = write_predictions(p, tmp_path / "pool_preds.json")
    assert load_predictions(out).keys.to_pylist() == cols["question_id"]
    p = pool_baseline_predictions(tmp_path / "pool", "most-likely")  # all rows: objExists no 2 / yes 2 -> "no"
    assert p.values.to_pylist()[3] == "no"


# --------------------------------------------------------------------------------------------
# differential test: a scalar twin that walks the JSON like the official scripts, branch by branch

from collections import Counter  # noqa: E402

from tensorqa.decomp.constants import BANNED_TYPES, COLLAPSED_TYPES, PARENT_TO_RULES, YES_NO_TYPES  # noqa: E402


class _Absent:
    """A missing prediction: equal to nothing, not even another missing prediction."""

    def __str__(self):
        return "\0absent"


def _p(preds, info):
    k = str(info["key"])
    return preds[k] if k in preds else _Absent()


def _ref_checks(sub, hier, q, rule, kids, preds, variant):
    """[(consistency rule name, wrong)] of one composition, following the official if / elif structure."""
    out = []
    qa = _p(preds, sub[q])
    if rule in ("Interaction", "After", "Before", "While", "And", "Between"):
        vals = [_p(preds, sub[c]) for c in kids
                if sub[c]["type"] not in BANNED_TYPES and sub[c]["type"] in YES_NO_TYPES]
        if not vals and (rule in ("And", "Between") or qa == "yes"):
            return out
        only_yes, one_no = all(v == "yes" for v in vals), any(v == "no" for v in vals)
        if rule in ("Interaction", "After", "Before", "While"):
            if qa == "yes":
                out.append((f"{rule} Yes", not only_yes))
                if variant == "both" and one_no:
                    out.append((f"{rule} No", True))
            elif one_no:
                out.append((f"{rule} No", qa != "no"))
        elif variant == "both":
            if qa == "yes":
                out.append((f"{rule} Yes", not only_yes))
            elif only_yes:
                out.append((f"{rule} Yes", True))
            if qa == "no":
                out.append((f"{rule} No", not one_no))
            elif one_no:
                out.append((f"{rule} No", True))
        else:
            if qa == "yes":
                out.append((f"{rule} Yes", not only_yes))
            elif qa == "no":
                out.append((f"{rule} No", not one_no))
            else:
                if only_yes:
                    out.append((f"{rule} Yes", True))
                if one_no:
                    out.append((f"{rule} No", True))
        return out
    if rule not in ("Xor", "Equals", "Choose"):
        return out
    if rule == "Equals" and sub[q]["type"] != "Object Equals":
        return out
    c1, c2 = kids
    if sub[c1]["type"] in BANNED_TYPES or sub[c2]["type"] in BANNED_TYPES:
        return out
    p1, p2 = _p(preds, sub[c1]), _p(preds, sub[c2])
    if rule == "Choose":
        if qa == "before":
            out.append(("Choose Temporal", p1 != "yes" or p2 != "no"))
        elif qa == "after":
            out.append(("Choose Temporal", p1 != "no" or p2 != "yes"))
        elif not isinstance(qa, _Absent):
            try:
                s11, _ = hier[c1]["Equals"]
                s21, _ = hier[c2]["Equals"]
            except (KeyError, ValueError):
                return out
            if f"{qa} exist" in s11:
                out.append(("Choose Object", p1 != "yes" or p2 != "no"))
            elif f"{qa} exist" in s21:
                out.append(("Choose Object", p1 != "no" or p2 != "yes"))
        return out
    if rule == "Xor":
        yes_case = p1 == "yes" and p2 == "no"
    elif c1 in hier:
        yes_case = p1 == p2
    else:
        obj = sub[c1]["program"][10:-1]
        yes_case = None
        if variant == "both":
            if qa == "yes":
                out.append(("Equals Yes", p2 != obj or p1 != "yes"))
            elif p2 == obj:
                out.append(("Equals Yes", True))
            if qa == "no":
                out.append(("Equals No", p2 == obj))
            elif p2 != obj or p1 != "yes":
                out.append(("Equals No", True))
        else:
            if qa == "yes":
                out.append(("Equals Yes", p2 != obj or p1 != "yes"))
            elif qa == "no":
                out.append(("Equals No", p2 == obj))
            elif p2 != obj or p1 != "yes":
                out.append(("Equals No", True))
            elif p2 == obj:
                out.append(("Equals Yes", True))
        return out
    if variant == "both":
        if qa == "yes":
            out.append((f"{rule} Yes", not yes_case))
        elif yes_case:
            out.append((f"{rule} Yes", True))
        if qa == "no":
            out.append((f"{rule} No", yes_case))
        elif not yes_case:
            out.append((f"{rule} No", True))
    else:
        if qa == "yes":
            out.append((f"{rule} Yes", not yes_case))
        elif qa == "no":
            out.append((f"{rule} No", yes_case))
        elif not yes_case:
            out.append((f"{rule} No", True))
        else:
            out.append((f"{rule} Yes", True))
    return out


def reference_metrics(videos: dict, isolated: list, preds: dict) -> dict:
    """Scalar twin: accuracy counts, CA/RWR counts, IC counts and per-hierarchy (acc, ic) points."""
    def ctype(t):
        return COLLAPSED_TYPES.get(t, t)

    acc: dict = {}
    buckets = {"by_composition": {}, "by_parent": {}}
    ic_tot, ic_wrong, pt_tot, pt_wrong, ptypes = Counter(), Counter(), Counter(), Counter(), set()
    points = []

    def add_acc(t, a, ok):
        for g in (t, "Overall"):
            c = acc.setdefault(g, {}).setdefault(a, [0, 0])
            c[0] += 1
            c[1] += ok

    def add_bucket(group, name, total, right, parent_ok):
        if total == 0:
            return
        keys = ["ca"] if right == total else ["rwr", f"rwr-{total - right}"]
        for k in keys:
            for n in (name, "Overall"):
                c = buckets[group].setdefault(k, {}).setdefault(n, [0, 0])
                c[0] += 1
                c[1] += parent_ok

    def valid(info):
        return info["type"] not in BANNED_TYPES and info["answer"] is not None

    def right(info):
        return info["answer"] == _p(preds, info)

    for q in isolated:
        if q["type"] not in BANNED_TYPES:
            add_acc(ctype(q["type"]), q["answer"], q["answer"] == _p(preds, q))
    for vid in sorted(videos):
        seen_acc, seen_ca, seen_ic = set(), set(), set()
        for mk, value in videos[vid].items():
            sub, hier = value["subquestion"], value["hierarchy"]
            for text, info in sub.items():
                if valid(info) and text not in seen_acc:
                    seen_acc.add(text)
                    add_acc(ctype(info["type"]), info["answer"], right(info))
            for q, rules in hier.items():
                if not valid(sub[q]) or q in seen_ca:
                    continue
                seen_ca.add(q)
                kids = {c for cs in rules.values() for c in cs}
                vk = [c for c in kids if valid(sub[c])]
                add_bucket("by_parent", ctype(sub[q]["type"]), len(vk), sum(right(sub[c]) for c in vk), right(sub[q]))
                for rule, cs in rules.items():
                    vk = [c for c in cs if valid(sub[c])]
                    add_bucket("by_composition", rule, len(vk), sum(right(sub[c]) for c in vk), right(sub[q]))
            for q, rules in hier.items():
                if sub[q]["type"] in BANNED_TYPES or q in seen_ic:
                    continue
                seen_ic.add(q)
                ptypes.add(ctype(sub[q]["type"]))
                for rule, cs in rules.items():
                    for name, wrong in _ref_checks(sub, hier, q, rule, cs, preds, "both"):
                        ic_tot[name] += 1
                        ic_wrong[name] += wrong
                        pt_tot[ctype(sub[q]["type"]), name] += 1
                        pt_wrong[ctype(sub[q]["type"]), name] += wrong
            # correlation point of this main question
            vq = [i for i in sub.values() if valid(i)]
            checks = [w for q, rules in hier.items() if sub[q]["type"] not in BANNED_TYPES
                      for rule, cs in rules.items() for _, w in _ref_checks(sub, hier, q, rule, cs, preds, "single")]
            if vq and checks:
                points.append((sum(map(right, vq)) / len(vq), 1 - sum(checks) / len(checks)))
    return dict(acc=acc, buckets=buckets, ic_tot=ic_tot, ic_wrong=ic_wrong, pt_tot=pt_tot, pt_wrong=pt_wrong,
                ptypes=ptypes, points=points)


def _pct(x):
    return None if x is None else float("%.2f" % (x * 100)) + 0.0


def random_folder(rng, n_videos=3):
    """Random hierarchies over a small vocabulary: repeated texts, all rule kinds, banned and None answers.

    Types, answers and rules are drawn with weights that make every consistency rule fire now and then
    (yes/no types and answers dominate; Object Equals, Choose and Equals rules are frequent).
    """
    yes_no = sorted(YES_NO_TYPES)
    types = sorted(COLLAPSED_TYPES) + ["Made Up"]
    words = ["yes", "no", "before", "after", "cup", "book", "phone", None]
    word_p = np.array([30, 30, 8, 8, 8, 6, 6, 4], float)
    rules = ["Interaction", "After", "Before", "While", "Between", "And", "Xor", "Equals", "Choose", "First",
             "Last", "Longer Choose", "Shorter Choose"]
    rule_p = np.array([3, 2, 2, 2, 2, 3, 3, 6, 5, 1, 1, 1, 1], float)
    objects = ["cup", "book", "phone"]

    def word():
        return words[rng.choice(len(words), p=word_p / word_p.sum())]

    def qtype():
        u = rng.random()
        return str(rng.choice(yes_no)) if u < 0.5 else "Object Equals" if u < 0.65 else \
            "Choose" if u < 0.75 else str(rng.choice(types))

    videos = {}
    for v in range(n_videos):
        texts = [f"Does the {objects[i % 3]} exist? v{v}q{i}" for i in range(int(rng.integers(4, 14)))]
        fixed = {t: dict(type=qtype(), answer=word(), key=f"v{v}k{i}",
                         program=f"ObjExists({objects[int(rng.integers(3))]})") for i, t in enumerate(texts)}
        video = {}
        for m in range(int(rng.integers(1, 5))):
            chosen = [t for t in texts if rng.random() < 0.75] or texts[:1]
            sub = {}
            for t in chosen:
                info = dict(fixed[t])
                if rng.random() < 0.15:  # the same text with other facts in another main question
                    info["answer"] = word()
                if rng.random() < 0.1:
                    info["type"] = qtype()
                sub[t] = info
            hier = {}
            for t in chosen:
                if rng.random() < 0.6:
                    rs = {}
                    for r in rng.choice(rules, size=int(rng.integers(1, 4)), replace=False, p=rule_p / rule_p.sum()):
                        n = 2 if r in ("Xor", "Equals", "Choose") else int(rng.integers(1, 4))
                        rs[str(r)] = [str(c) for c in rng.choice(chosen, size=n)]
                    hier[t] = rs
            for t, rs in list(hier.items()):  # Choose children with Equals rules: the "Choose Object" check
                if "Choose" in rs and rng.random() < 0.7:
                    for c in rs["Choose"]:
                        hier.setdefault(c, {})["Equals"] = [str(x) for x in rng.choice(chosen, size=2)]
            video[f"v{v}m{m}"] = {"subquestion": sub, "hierarchy": hier}
        videos[f"vid{v}"] = video
    isolated = [dict(type=qtype(), answer=word(), key=f"iso{i}") for i in range(int(rng.integers(0, 6)))]
    keys = sorted({i["key"] for vid in videos.values() for m in vid.values() for i in m["subquestion"].values()}
                  | {i["key"] for i in isolated})
    preds = {k: word() for k in keys if rng.random() < 0.9}
    for k in preds:  # parents of a Choose composition often answer with an object
        if rng.random() < 0.4:
            preds[k] = objects[int(rng.integers(3))]
    return videos, isolated, preds


@pytest.mark.parametrize("seed", range(40))
def test_matches_scalar_twin(tmp_path, seed):
    rng = np.random.default_rng(seed)
    videos, isolated, preds = random_folder(rng)
    for vid, data in videos.items():
        (tmp_path / f"{vid}.json").write_text(json.dumps(data))
    (tmp_path / "isolated.json").write_text(json.dumps(isolated))
    s = evaluate_predictions(tmp_path, preds)
    ref = reference_metrics(videos, isolated, preds)

    for t, per_answer in ref["acc"].items():
        assert s["accuracy"][t] == _pct(np.mean([c / n for n, c in per_answer.values()])), t
    assert {t for t, v in s["accuracy"].items() if v is not None} == set(ref["acc"])
    for group in ("by_composition", "by_parent"):
        b = ref["buckets"][group]
        for metric in ("ca", "rwr"):
            got = {n: v for n, v in s[metric][group].items() if v is not None}
            assert got == {n: _pct(c / t) for n, (t, c) in b.get(metric, {}).items()}, (group, metric)
        for key, cells in b.items():
            if key.startswith("rwr-"):
                for n, (t, c) in cells.items():
                    assert s["rwr_n"][group][n][key[4:]] == _pct(c / t)
    for r in CONSISTENCY_RULES:
        assert s["counts"]["ic"]["fired"][r] == ref["ic_tot"][r] and s["counts"]["ic"]["wrong"][r] == ref["ic_wrong"][r]
    for ptype, comps in PARENT_TO_RULES.items():
        if ptype not in ref["ptypes"]:
            assert s["ic"]["by_parent"][ptype] is None
            continue
        scores = [None if not ref["pt_tot"][ptype, r] else 1 - ref["pt_wrong"][ptype, r] / ref["pt_tot"][ptype, r]
                  for c in comps for r in CONSISTENCY_RULES if c in r]
        want = None if None in scores else _pct(np.mean(scores))
        assert s["ic"]["by_parent"][ptype] == want, ptype
    pts = np.array(ref["points"]).reshape(-1, 2)
    if len(pts) >= 2 and pts[:, 0].std() > 0 and pts[:, 1].std() > 0:
        assert s["ic_acc_pearson_r"] == round(float(np.corrcoef(pts[:, 0], pts[:, 1])[0, 1]), 4)
    else:
        assert s["ic_acc_pearson_r"] is None
