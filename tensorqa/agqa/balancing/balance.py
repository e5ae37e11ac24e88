"""``balance``: AGQA's answer and structure balancing of an unbalanced pool, as streaming column passes.

Semantics §d steps 1-5, each split on its own: temporal-change labels (``labels``), binary keys cut
to 50/50 per (family, local), open answers smoothed per family then per (family, local)
(``smoothing``), structural rejection sampling (``structural``). Where a bucket loses questions the
labels decide the order, a seeded priority (hash of seed and question_id) within a label. The
``agqa2`` preset follows the AGQA 2.0 summary: at most 8 steps, uniform open answers per (family,
local) (uniform per family too would empty most families).

Pass 1 keeps about 19 bytes per question (key code, answer code, direct_group hash, three flags);
each step is one sort (``select``) plus arithmetic per cell; pass 2 writes the kept rows in input
order (``output``). Codes are numbered by hash and answers by string, so the kept set depends only on
the seed and the questions, not on batch sizes, shard counts or pool order."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.agqa.balancing.config import PRESETS, BalanceConfig, balance_config  # noqa: F401  (PRESETS: callers)
from tensorqa.agqa.balancing.hashindex import HashIndex
from tensorqa.agqa.balancing.hashing import hash_strings
from tensorqa.engine.rng import GOLDEN, mix64
from tensorqa.agqa.balancing.labels import LABELS, NO_TEMPORAL, temporal_labels
from tensorqa.agqa.balancing.output import PoolOutput, prepare_output
from tensorqa.agqa.balancing.report import category_histograms, distribution_stats, format_balance_report
from tensorqa.agqa.balancing.scan import (RECORD_BATCH_ROWS, Codebook, as_numpy, check_columns, check_split_rows,
                                          count_rows, iter_batches, pool_files, used_words)
from tensorqa.agqa.balancing.select import select_in_cells
from tensorqa.agqa.balancing.smoothing import binary_targets, smooth_counts, uniform_counts
from tensorqa.agqa.balancing.structural import structural_targets
from tensorqa.errors import TensorQAError
from tensorqa.agqa.templates.catalogue import FAMILIES, STRUCTURALS, TEMPLATES
from tensorqa.engine.windows import WINDOW_KINDS
from tensorqa.writers import RECORD_SCHEMA, SPLITS, pool_fact, pool_store, write_dataset_card

BALANCE_COLUMNS = ("template", "window", "local", "answer", "direct_group", "is_direct", "steps")


# -- pass 1: codes ------------------------------------------------------------------------------
TEMPLATE_NAMES: tuple[str, ...] = tuple(TEMPLATES)
_FAMILY_OF = np.array([FAMILIES.index(TEMPLATES[t].family) for t in TEMPLATE_NAMES], np.int8)
_STRUCTURE_OF = np.array([STRUCTURALS.index(TEMPLATES[t].structural) for t in TEMPLATE_NAMES], np.int8)
_BINARY_OF = np.array([TEMPLATES[t].ans_type == "binary" for t in TEMPLATE_NAMES])
_KEY_SALT = np.uint64(GOLDEN)


@dataclass
class _SplitCodes:
    """Per-question arrays of one split (n, input order) and per-key tables over its W distinct
    (template, window, local) keys, numbered by hash."""

    wkey: np.ndarray        # int32[n] key code
    answer: np.ndarray      # int32[n] answer code (sorted answer strings)
    answers: list[str]
    group_hash: np.ndarray  # uint64[n] hash of direct_group
    has_group: np.ndarray   # bool[n]
    is_direct: np.ndarray   # bool[n]
    alive: np.ndarray       # bool[n] passes the steps filter
    key_template: np.ndarray  # int8[W] index into TEMPLATE_NAMES
    key_window: np.ndarray    # int8[W] index into WINDOW_KINDS
    key_local: np.ndarray     # uint64[W] hash of the local string


class _NameCodes:
    """Codes of a small fixed vocabulary (template names, window kinds) from dictionary columns."""

    def __init__(self, names: tuple[str, ...], column: str, where):
        self.index = {n: i for i, n in enumerate(names)}
        self.names, self.column, self.where = names, column, where

    def encode(self, values: pa.Array) -> np.ndarray:
        if not pa.types.is_dictionary(values.type):
            values = pc.dictionary_encode(values)
        words, codes, used = used_words(values)
        bad = [words[i] for i in used if words[i] not in self.index]
        if bad:
            raise TensorQAError(f"{self.where}: unknown {self.column} {bad[0]!r} in column {self.column!r}; "
                                f"expected one of {list(self.names)}")
        lut = np.array([self.index.get(w, 0) for w in words] or [0], np.int64)  # unused words: never read
        return lut[codes]


def _read_codes(files, n: int, config: BalanceConfig, bar) -> _SplitCodes:
    where = files[0].parent
    wkey, answer = np.empty(n, np.int32), np.empty(n, np.int32)
    group_hash = np.empty(n, np.uint64)
    has_group, is_direct, alive = np.empty(n, bool), np.empty(n, bool), np.ones(n, bool)
    templates = _NameCodes(TEMPLATE_NAMES, "template", where)
    windows = _NameCodes(WINDOW_KINDS, "window", where)
    keys, answers = HashIndex(), Codebook()
    key_template, key_window, key_local = np.zeros(0, np.int8), np.zeros(0, np.int8), np.zeros(0, np.uint64)
    o = 0
    for batch in iter_batches(files, BALANCE_COLUMNS, config.batch_rows, dictionary=("template", "window", "answer")):
        k = batch.num_rows
        col = dict(zip(batch.schema.names, batch.columns))
        tmpl, win = templates.encode(col["template"]), windows.encode(col["window"])
        local = hash_strings(col["local"])
        code = keys.index(mix64(local ^ ((tmpl * 8 + win + 1).astype(np.uint64) * _KEY_SALT)))
        if len(keys) > len(key_template):  # per-key tables: every row writes its key's (same) values
            grow = max(len(keys), len(key_template) + len(key_template) // 4)
            key_template, key_window, key_local = (np.resize(key_template, grow), np.resize(key_window, grow),
                                                   np.resize(key_local, grow))
        key_template[code], key_window[code], key_local[code] = tmpl, win, local
        wkey[o:o + k] = code
        answer[o:o + k] = answers.encode(col["answer"])
        group = col["direct_group"]
        group_hash[o:o + k] = hash_strings(group)
        has_group[o:o + k] = as_numpy(pc.binary_length(pc.fill_null(group, ""))) > 0
        is_direct[o:o + k] = as_numpy(col["is_direct"]) == 1
        if config.max_steps is not None:
            alive[o:o + k] = as_numpy(col["steps"]) <= config.max_steps
        o += k
        bar.update(k)
    if o != n:
        raise TensorQAError(f"{where}: read {o:,} rows, metadata says {n:,}")
    W = len(keys)
    key_lut = keys.canonical()
    order = np.empty(W, np.int64)
    order[key_lut] = np.arange(W)
    answer_words, answer_lut = answers.finish()
    return _SplitCodes(key_lut[wkey], answer_lut[answer], answer_words, group_hash, has_group, is_direct, alive,
                       key_template[:W][order], key_window[:W][order], key_local[:W][order])


def _read_priority(files, n: int, config: BalanceConfig) -> np.ndarray:
    """uint64[n] seeded hash of each question_id (read in a pass of its own: the 8 bytes per question
    then never sit next to the direct_group hashes)."""
    priority = np.empty(n, np.uint64)
    o = 0
    for batch in iter_batches(files, ["question_id"], config.batch_rows):
        priority[o:o + batch.num_rows] = hash_strings(batch.column(0), seed=config.seed)
        o += batch.num_rows
    return priority


@dataclass
class _KeyTables:
    """Lookup tables over the W (template, window, local) keys of a split."""

    template: np.ndarray      # int8[W] index into TEMPLATE_NAMES
    window: np.ndarray        # int8[W] index into WINDOW_KINDS
    family: np.ndarray        # int8[W] index into FAMILIES
    structure: np.ndarray     # int8[W] index into STRUCTURALS
    binary: np.ndarray        # bool[W]
    family_local: np.ndarray  # int32[W] code of (family, local)
    n_family_local: int


def _key_tables(codes: _SplitCodes) -> _KeyTables:
    tmpl = codes.key_template
    family = _FAMILY_OF[tmpl]
    fl = HashIndex()
    fl_code = fl.index(mix64(codes.key_local ^ ((family.astype(np.uint64) + np.uint64(1)) * _KEY_SALT)))
    return _KeyTables(tmpl, codes.key_window, family, _STRUCTURE_OF[tmpl], _BINARY_OF[tmpl],
                      fl.canonical()[fl_code], len(fl))


# -- the steps ------------------------------------------------------------------------------------
def _open_targets(config: BalanceConfig, mode: str):
    rule = config.smoothing

    def targets(bucket_key, bucket_answer, counts):
        total = counts.sum(axis=1)
        kstart = np.flatnonzero(np.r_[True, bucket_key[1:] != bucket_key[:-1]])
        out = np.empty_like(total)
        for a, b in zip(kstart, np.r_[kstart[1:], len(total)]):
            out[a:b] = (smooth_counts(total[a:b], rule) if mode == "smooth"
                        else uniform_counts(total[a:b], rule.min_answer_count))
        return out

    return targets


def _binary_targets(bucket_key, bucket_answer, counts):
    kstart = np.flatnonzero(np.r_[True, bucket_key[1:] != bucket_key[:-1]])
    return binary_targets(kstart, counts.sum(axis=1))


_CHUNK = 1 << 22


def _gather(values: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """values[perm] with a uint32 permutation, slice by slice (no full int64 index array)."""
    out = np.empty(len(perm), values.dtype)
    for a in range(0, len(perm), _CHUNK):
        out[a:a + _CHUNK] = values[perm[a:a + _CHUNK].astype(np.int64)]
    return out


def _balance_split(codes: _SplitCodes, config: BalanceConfig, read_priority) -> tuple[np.ndarray, dict]:
    """Kept mask (input order) and the split's report."""
    n = len(codes.wkey)
    kt = _key_tables(codes)
    W = len(kt.template)
    A = max(len(codes.answers), 1)
    localized = kt.window[codes.wkey] != WINDOW_KINDS.index("video")
    if config.temporal_labels:
        label = temporal_labels(codes.group_hash, codes.is_direct, localized, codes.answer, codes.has_group)
    else:
        label = np.full(n, NO_TEMPORAL, np.int8)
    label_counts = np.bincount(label, minlength=4)
    del localized
    codes.group_hash = codes.is_direct = codes.has_group = None
    # priority order: position p holds the question with the p-th smallest seeded hash (one in-place
    # sort of "top hash bits | row"; the rows come back out of the low bits)
    bits = max(1, int(n - 1).bit_length())
    order = read_priority()
    order >>= np.uint64(bits)
    order <<= np.uint64(bits)
    order |= np.arange(n, dtype=np.uint64)
    order.sort()
    order &= np.uint64((1 << bits) - 1)
    perm = order.astype(np.uint32 if n < 2**32 else np.int64)
    del order
    wkey, answer = _gather(codes.wkey, perm), _gather(codes.answer, perm)
    codes.wkey = codes.answer = None
    label, alive = _gather(label, perm), _gather(codes.alive, perm)
    codes.alive = None

    before = {"family": category_histograms(kt.family, wkey, answer, len(FAMILIES), A),
              "structural": category_histograms(kt.structure, wkey, answer, len(STRUCTURALS), A)}
    rows = {"input": n}
    if config.max_steps is not None:
        rows[f"steps<={config.max_steps}"] = int(alive.sum())
    if config.binary:
        select_in_cells(alive, alive & kt.binary[wkey], wkey, kt.family_local, kt.n_family_local, answer, A, label,
                        _binary_targets, per_key=True)
        rows["binary"] = int(alive.sum())
    if config.open_family != "none":
        select_in_cells(alive, alive & ~kt.binary[wkey], wkey, kt.family, len(FAMILIES), answer, A, label,
                        _open_targets(config, config.open_family))
        rows["open_family"] = int(alive.sum())
    if config.open_local != "none":
        select_in_cells(alive, alive & ~kt.binary[wkey], wkey, kt.family_local, kt.n_family_local, answer, A, label,
                        _open_targets(config, config.open_local), per_key=True)
        rows["open_local"] = int(alive.sum())
    if config.structural:
        shares = dict(config.structure_shares)

        def structural(bucket_key, bucket_answer, counts):
            return structural_targets(bucket_key, counts.sum(axis=1), kt.template, kt.window, _STRUCTURE_OF.astype(np.int64),
                                      STRUCTURALS, shares, len(WINDOW_KINDS))

        select_in_cells(alive, alive.copy(), wkey, np.arange(W, dtype=np.int64), W, answer, A, label, structural)
        rows["structural"] = int(alive.sum())
    rows["output"] = int(alive.sum())
    after = {"family": category_histograms(kt.family, wkey, answer, len(FAMILIES), A, alive),
             "structural": category_histograms(kt.structure, wkey, answer, len(STRUCTURALS), A, alive)}
    categories = {}
    for kind, names in (("family", FAMILIES), ("structural", STRUCTURALS)):
        for i, name in enumerate(names):
            if before[kind][i].sum():
                categories[f"{kind}:{name}"] = {"before": distribution_stats(before[kind][i]),
                                                "after": distribution_stats(after[kind][i])}
    s_before, s_after = before["structural"].sum(axis=1), after["structural"].sum(axis=1)
    mix = {"before": {s: round(float(s_before[i] / max(s_before.sum(), 1)), 4) for i, s in enumerate(STRUCTURALS)},
           "after": {s: round(float(s_after[i] / max(s_after.sum(), 1)), 4) for i, s in enumerate(STRUCTURALS)}}
    kept = np.empty(n, bool)
    for a in range(0, n, _CHUNK):
        kept[perm[a:a + _CHUNK].astype(np.int64)] = alive[a:a + _CHUNK]
    report = {"rows": rows, "labels": {LABELS[i]: int(c) for i, c in enumerate(label_counts)},
              "categories": categories, "structural_mix": mix}
    return kept, report


# -- the pass -----------------------------------------------------------------------------------
def balance_pool(pool: str | os.PathLike, out: str | os.PathLike, config: BalanceConfig | None = None, *,
                 preset: str = "agqa", progress: bool = False) -> dict:
    """Balance a pool (Hugging Face layout) into ``out`` (same layout and schema); returns the report
    (also in ``out/README.md``): per split, the rows after each step, the label counts, per category the
    questions, answer entropy and majority baseline before / after, and the structural mix."""
    from tqdm import tqdm

    config = config or balance_config(preset)
    files = pool_files(pool)
    check_columns([f for fs in files.values() for f in fs], RECORD_SCHEMA.names)
    out = prepare_output(out, pool)
    kept: dict[str, np.ndarray] = {}
    report = {"pool": str(pool), "out": str(out), "preset": preset, "config": config.as_dict(), "splits": {}}
    for split in SPLITS:
        n = count_rows(files[split])
        if n == 0:
            kept[split] = np.zeros(0, bool)
            report["splits"][split] = {"rows": {"input": 0, "output": 0}}
            continue
        with tqdm(total=n, desc=f"balance {split}: read", unit="q", unit_scale=True, disable=not progress,
                  dynamic_ncols=True) as bar:
            codes = _read_codes(files[split], n, config, bar)
        pa.default_memory_pool().release_unused()  # hand the read batches' pages back before the sorts
        kept[split], report["splits"][split] = _balance_split(
            codes, config, lambda: _read_priority(files[split], n, config))
        del codes
    output = PoolOutput(out, {s: int(k.sum()) for s, k in kept.items()}, RECORD_SCHEMA, config.shard_rows)
    try:
        for split in SPLITS:
            o = 0
            with tqdm(total=len(kept[split]), desc=f"balance {split}: write", unit="q", unit_scale=True,
                      disable=not progress, dynamic_ncols=True) as bar:
                for batch in iter_batches(files[split], RECORD_SCHEMA.names, RECORD_BATCH_ROWS):
                    k = batch.num_rows
                    mask = kept[split][o:o + k]
                    o += k
                    bar.update(k)
                    if not mask.any():
                        continue
                    table = pa.Table.from_batches([batch]).filter(pa.array(mask))
                    check_split_rows(table["split"], split, files[split][0].parent)
                    output.add(split, table)
        output.close({"balance": config.as_dict(), "rows": {s: r["rows"] for s, r in report["splits"].items()},
                      "store": pool_store(pool),  # the scene store, for decompose
                      "semantics": pool_fact(pool, "semantics")})
    except BaseException:
        output.abort()
        raise
    write_dataset_card(out, "tensorqa balanced AGQA-style pool", _card_body(report))
    return report


def _card_body(report: dict) -> str:
    cfg = report["config"]
    return "\n".join([
        f"Balanced from `{Path(report['pool']).name}` by `tensorqa balance` (preset `{report['preset']}`, seed "
        f"{cfg['seed']}), following AGQA's procedure: temporal-change labels, binary keys 50/50, open answers "
        "smoothed per family and per local key, structural rejection sampling. Columns: "
        "`tensorqa.writers.RECORD_SCHEMA`.",
        "",
        "Configuration:",
        "",
        "```",
        *(f"{k}: {v}" for k, v in cfg.items()),
        "```",
        "",
        "Report:",
        "",
        "```",
        format_balance_report(report, paths=False),
        "```",
    ])


def format_report(report: dict) -> str:
    return format_balance_report(report)
