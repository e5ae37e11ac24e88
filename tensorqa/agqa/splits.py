"""``split``: AGQA's split fields on a pool (docs/reference/agqa.md "Splits"; semantics §b.4, §d step 7).

Writes ``SPLIT_SCHEMA``: ``split`` (the pool's, or train for ``train_videos`` and test for the
others); ``nc_seq``, ``nc_sup``, ``nc_dur``, ``nc_objrel`` and their or ``novel_comp``
(:class:`NovelCompositions`); ``more_steps`` (``steps > M``); ``direct_equiv``, the ``question_id`` of
the first direct question of the same ``direct_group`` in the output, or null. Train drops
``novel_comp == 1`` rows; ``more_steps`` is only a flag, as AGQA releases it; the flags are written in
both splits so both files share one schema. Two streaming passes (count and collect the direct
questions, then write); no randomness."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.agqa.balancing.hashindex import HashIndex
from tensorqa.agqa.balancing.hashing import hash_strings
from tensorqa.agqa.balancing.output import PoolOutput, prepare_output
from tensorqa.agqa.balancing.scan import (BATCH_ROWS, RECORD_BATCH_ROWS, as_numpy, check_columns, check_split_rows,
                                          count_rows, iter_batches, pool_files)
from tensorqa.engine.windows import LOCALIZE_WORDS
from tensorqa.errors import TensorQAError
from tensorqa.agqa.templates.catalogue import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import RECORD_SCHEMA, SPLITS, pool_fact, pool_store, write_dataset_card

SPLIT_FIELDS = pa.schema([(name, pa.int8()) for name in ("novel_comp", "nc_seq", "nc_sup", "nc_dur", "nc_objrel",
                                                           "more_steps")] + [("direct_equiv", pa.string())])
SPLIT_SCHEMA = pa.schema(list(RECORD_SCHEMA) + list(SPLIT_FIELDS))

# semantics §b.4's fixed lists, in AGQA's English (converted to ids through the vocabulary)
SEQUENCING_ACTIONS = ("standing up", "playing with a phone", "throwing a broom somewhere", "walking through a doorway",
                      "opening a laptop", "grasping onto a doorknob")
SUPERLATIVE_RELATIONS = ("behind", "holding", "in", "leaning on", "carrying", "on the side of")
OBJECT_RELATION_PAIRS = (("table", "wiping"), ("dish", "wiping"), ("table", "beneath"), ("dish", "beneath"),
                         ("food", "in front of"), ("book", "carrying"), ("chair", "leaning on"))
# read from the catalogue: the "longer" length comparisons, the templates that compare in time
DURATION_TEMPLATES = tuple(t for t, s in TEMPLATES.items() if s.family == "length" and s.structural == "compare"
                           and s.shape.longer)
SEQUENCING_TEMPLATES = tuple(t for t, s in TEMPLATES.items() if s.family == "time")
SUPERLATIVE_TEMPLATES = tuple(t for t, s in TEMPLATES.items() if s.family in ("first", "last") and "relation" in s.slots)


@dataclass(frozen=True)
class NovelCompositions:
    """Held-out compositions (AGQA ids). A question uses one when: ``nc_seq``, a localizing action or
    an action compared in time (actTime, relTime, objTime) is a sequencing action; ``nc_sup``, the
    relation of a first / last template or of a first / last object reference is a superlative
    relation; ``nc_dur``, an action of a "longer" comparison or an indirect-object action is a
    duration action; ``nc_objrel``, its (object, relation), (object2, relation) or an object
    reference's (referent, relation) is one of the pairs."""

    sequencing_actions: tuple[str, ...]
    superlative_relations: tuple[str, ...]
    duration_actions: tuple[str, ...]
    object_relation_pairs: tuple[tuple[str, str], ...]
    duration_templates: tuple[str, ...] = DURATION_TEMPLATES

    @classmethod
    def agqa(cls) -> "NovelCompositions":
        """AGQA's lists (semantics §b.4)."""
        return cls.from_words(SEQUENCING_ACTIONS, SUPERLATIVE_RELATIONS, SEQUENCING_ACTIONS, OBJECT_RELATION_PAIRS)

    @classmethod
    def from_words(cls, sequencing_actions: Sequence[str], superlative_relations: Sequence[str],
                   duration_actions: Sequence[str], object_relation_pairs: Sequence[Sequence[str]],
                   duration_templates: Sequence[str] = DURATION_TEMPLATES) -> "NovelCompositions":
        """From vocabulary words (English, AG names or ids); unknown words raise TensorQAError."""
        v = vocab()
        act = lambda w: v.actions[v.action_index(w)]
        rel = lambda w: v.relation_ids[v.relation_index(w)]
        obj = lambda w: v.object_ids[v.object_index(w)]
        for t in duration_templates:
            if t not in TEMPLATES:
                raise TensorQAError(f"novel compositions: unknown template {t!r}")
        pairs = []
        for pair in object_relation_pairs:
            if len(pair) != 2:
                raise TensorQAError(f"novel compositions: object-relation pair {pair!r} must have two words")
            pairs.append((obj(pair[0]), rel(pair[1])))
        return cls(tuple(act(w) for w in sequencing_actions), tuple(rel(w) for w in superlative_relations),
                   tuple(act(w) for w in duration_actions), tuple(pairs), tuple(duration_templates))

    def describe(self) -> list[str]:
        """Lines for the dataset card: each list with ids and English."""
        v = vocab()
        a = lambda i: f"{i} ({v.action_phrases[v.action_index(i)]})"
        r = lambda i: f"{i} ({v.relation_english[v.relation_index(i)]})"
        o = lambda i: f"{i} ({v.object_english[v.object_index(i)]})"
        return [
            "- sequencing actions (nc_seq): " + ", ".join(map(a, self.sequencing_actions)),
            "- superlative relations (nc_sup): " + ", ".join(map(r, self.superlative_relations)),
            "- duration actions (nc_dur): " + ", ".join(map(a, self.duration_actions))
            + "; comparison templates: " + ", ".join(self.duration_templates),
            "- object-relation pairs (nc_objrel): " + ", ".join(f"({o(x)}, {r(y)})" for x, y in self.object_relation_pairs),
        ]


DEFAULT_MAX_STEPS = 5


@dataclass(frozen=True)
class SplitConfig:
    """Options of the split pass. steps_threshold: M of ``more_steps = steps > M``, one int or
    {template: M} (others ``DEFAULT_MAX_STEPS``); AGQA's table is not public (§d step 7), and 5 agrees
    with the released records and keeps every direct form in train. train_videos: the train videos
    (others test); None keeps the pool's split."""

    novel: NovelCompositions = field(default_factory=NovelCompositions.agqa)
    steps_threshold: int | Mapping[str, int] = DEFAULT_MAX_STEPS
    train_videos: frozenset[str] | None = None
    keep_novel_in_train: bool = False
    shard_rows: int = 2_000_000
    batch_rows: int = BATCH_ROWS

    def __post_init__(self):
        for name in ("shard_rows", "batch_rows"):
            if getattr(self, name) < 1:
                raise TensorQAError(f"{name} must be at least 1, got {getattr(self, name)}")
        if isinstance(self.steps_threshold, Mapping):
            unknown = sorted(set(self.steps_threshold) - set(TEMPLATES))
            if unknown:
                raise TensorQAError(f"steps threshold: unknown template(s) {unknown}")
        thresholds = self.steps_threshold.items() if isinstance(self.steps_threshold, Mapping) \
            else [("max_steps", self.steps_threshold)]
        for name, m in thresholds:  # as balance's max_steps: a positive number of steps
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
                raise TensorQAError(f"steps threshold {name}: must be an integer of at least 1, got {m!r}")

    def threshold_of(self, template: str) -> int:
        if isinstance(self.steps_threshold, Mapping):
            return int(self.steps_threshold.get(template, DEFAULT_MAX_STEPS))
        return int(self.steps_threshold)


FLAG_COLUMNS = ("template", "window", "window_action", "window_action2", "relation", "object", "object_ref",
                "object_ref_relation", "object2", "object2_ref", "object2_ref_relation", "action", "action_ref", "action2_ref",
                "action2", "steps")


def composition_flags(table: pa.Table | pa.RecordBatch, config: SplitConfig) -> dict[str, np.ndarray]:
    """int8[n] ``nc_seq``, ``nc_sup``, ``nc_dur``, ``nc_objrel``, ``novel_comp``, ``more_steps`` of
    each row (vectorized pyarrow set lookups; the rules are :class:`NovelCompositions`')."""
    nc = config.novel
    col = {c: pc.fill_null(_array(table.column(c)), "") for c in FLAG_COLUMNS if c != "steps"}

    def isin_values(array, values) -> np.ndarray:
        return as_numpy(pc.is_in(array, value_set=pa.array(list(values), pa.string()))).astype(bool)

    def isin(name: str, values) -> np.ndarray:
        return isin_values(col[name], values)

    def pair_in(obj: str, rel: str) -> np.ndarray:
        joined = pc.binary_join_element_wise(col[obj], col[rel], "|")
        return isin_values(joined, [f"{o}|{r}" for o, r in nc.object_relation_pairs])

    def given(name: str) -> np.ndarray:
        return as_numpy(pc.binary_length(col[name])) > 0

    localized = isin("window", LOCALIZE_WORDS)
    seq_act = nc.sequencing_actions
    seq = localized & (isin("window_action", seq_act) | isin("window_action2", seq_act))
    seq |= isin("template", SEQUENCING_TEMPLATES) & (isin("action", seq_act) | isin("action2", seq_act))
    sup_rel = nc.superlative_relations
    sup = isin("template", SUPERLATIVE_TEMPLATES) & isin("relation", sup_rel)
    for ref, ref_rel in (("object_ref", "object_ref_relation"), ("object2_ref", "object2_ref_relation")):
        sup |= isin(ref, ("first", "last")) & isin(ref_rel, sup_rel)
    dur_act = nc.duration_actions
    dur = isin("template", nc.duration_templates) & (isin("action", dur_act) | isin("action2", dur_act))
    dur |= (given("action_ref") & isin("action", dur_act)) | (given("action2_ref") & isin("action2", dur_act))
    objrel = pair_in("object", "relation") | pair_in("object2", "relation")
    objrel |= given("object_ref") & pair_in("object", "object_ref_relation")
    objrel |= given("object2_ref") & pair_in("object2", "object2_ref_relation")
    # more steps: per-template threshold through the template column's dictionary
    tmpl = pc.dictionary_encode(col["template"])
    limits = np.array([config.threshold_of(t) if t in TEMPLATES else DEFAULT_MAX_STEPS
                       for t in tmpl.dictionary.to_pylist()] or [0], np.int64)
    more = as_numpy(table.column("steps")).astype(np.int64) > limits[as_numpy(tmpl.indices)]
    flags = {"nc_seq": seq, "nc_sup": sup, "nc_dur": dur, "nc_objrel": objrel, "novel_comp": seq | sup | dur | objrel,
             "more_steps": more}
    return {k: v.astype(np.int8) for k, v in flags.items()}


def _array(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def read_video_list(path: str | os.PathLike) -> frozenset[str]:
    """Video ids from a text file (one per line, ``#`` comments) or a JSON list."""
    from tensorqa.limits import check_name, parse_json

    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TensorQAError(f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start}); "
                            "expected video ids, one per line, or a JSON list") from None
    except OSError as e:
        raise TensorQAError(f"{path}: cannot read ({e.strerror or e})") from None
    if "\0" in text:
        raise TensorQAError(f"{path}: holds NUL bytes (a binary file?); expected video ids, one per line, or a JSON list")
    if text.lstrip()[:1] in ("[", "{", '"'):  # JSON: only a list of strings (an object is not one id)
        ids = parse_json(text, path, "video id list")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise TensorQAError(f"{path}: not a JSON list of video id strings (found {type(ids).__name__})")
    else:
        ids = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    ids = frozenset(check_name(i, str(path), "video id") for i in ids if i)
    if not ids:
        raise TensorQAError(f"{path}: no video ids")
    return ids


_PASS1 = ("question_id", "video_id", "split", "direct_group", "is_direct") + FLAG_COLUMNS


def _new_split(table, split: str, config: SplitConfig) -> pa.Array:
    if config.train_videos is None:
        return pc.fill_null(table.column("split"), split)
    train = pc.is_in(table.column("video_id"), value_set=pa.array(sorted(config.train_videos), pa.string()))
    return pc.if_else(pc.fill_null(train, False), "train", "test")


def _keep(new_split: pa.Array, flags: dict, config: SplitConfig) -> np.ndarray:
    if config.keep_novel_in_train:
        return np.ones(len(new_split), bool)
    return ~((as_numpy(pc.equal(new_split, "train")).astype(bool)) & (flags["novel_comp"] == 1))


def split_pool(pool: str | os.PathLike, out: str | os.PathLike, config: SplitConfig | None = None, *,
               progress: bool = False) -> dict:
    """Write ``pool`` with AGQA's split fields into ``out`` (module docstring); returns a report:
    rows in / out per split, train questions dropped as novel compositions, and per output split
    the number of questions with each flag and with a direct equivalent."""
    from tqdm import tqdm

    config = config or SplitConfig()
    files = pool_files(pool)
    all_files = [f for s in SPLITS for f in files[s]]
    check_columns(all_files, RECORD_SCHEMA.names)
    out = prepare_output(out, pool)
    n_in = count_rows(all_files)
    with tqdm(total=n_in, desc="split: scan", unit="q", unit_scale=True, disable=not progress, dynamic_ncols=True) as bar:
        directs, direct_ids, rows_out = _scan_directs(files, config, bar)
    stats = {s: {k: 0 for k in list(SPLIT_FIELDS.names) + ["indirect", "i_obj", "i_rel", "i_act", "i_temp"]} for s in SPLITS}
    dropped = 0
    output = PoolOutput(out, rows_out, SPLIT_SCHEMA, config.shard_rows)
    try:
        with tqdm(total=n_in, desc="split: write", unit="q", unit_scale=True, disable=not progress,
                  dynamic_ncols=True) as bar:
            for split in SPLITS:
                for batch in iter_batches(files[split], RECORD_SCHEMA.names, RECORD_BATCH_ROWS):
                    table, n_dropped = _with_split_fields(pa.Table.from_batches([batch]), split, config, directs,
                                                          direct_ids, files[split][0].parent)
                    dropped += n_dropped
                    uniform = config.train_videos is None  # rows of a split's file stay in that split
                    for s in ([split] if uniform else SPLITS):
                        part = table if uniform else table.filter(pc.equal(table.column("split"), s))
                        if part.num_rows:
                            _count(stats[s], part)
                            output.add(s, part)
                    bar.update(batch.num_rows)
        report = {"pool": str(pool), "out": str(out), "rows_in": n_in, "rows_out": rows_out,
                  "train_novel_dropped": dropped, "direct_questions": len(direct_ids), "flags": stats,
                  "config": _config_dict(config)}
        output.close({"split": report["config"], "rows_out": rows_out, "store": pool_store(pool),  # for decompose
                      "semantics": pool_fact(pool, "semantics")})
    except BaseException:
        output.abort()
        raise
    write_dataset_card(out, "tensorqa AGQA-style pool with split fields", _card_body(report, config))
    return report


def _scan_directs(files: dict, config: SplitConfig, bar) -> tuple[HashIndex, pa.Array, dict[str, int]]:
    """Pass 1: (direct_group hash -> code, the question id of each code's first direct question,
    rows per output split)."""
    directs = HashIndex()
    direct_ids: list[pa.Array] = []
    rows_out = {s: 0 for s in SPLITS}
    for split in SPLITS:
        for batch in iter_batches(files[split], _PASS1, config.batch_rows):
            table = pa.Table.from_batches([batch])
            new_split = _new_split(table, split, config)
            keep = _keep(new_split, composition_flags(table, config), config)
            for s in SPLITS:
                rows_out[s] += int((as_numpy(pc.equal(new_split, s)).astype(bool) & keep).sum())
            direct = (as_numpy(table.column("is_direct")) == 1) & keep  # only directs the output keeps
            direct &= as_numpy(pc.binary_length(pc.fill_null(table.column("direct_group"), ""))) > 0
            if direct.any():
                h = hash_strings(table.column("direct_group").filter(pa.array(direct)))
                before = len(directs)
                code = directs.index(h)
                # codes before..len(directs)-1 are new groups; their id is the group's first row
                new_codes, first_row = np.unique(code, return_index=True)
                first_row = first_row[new_codes >= before]
                ids = table.column("question_id").filter(pa.array(direct)).combine_chunks()
                direct_ids.append(ids.take(pa.array(first_row)))
            bar.update(batch.num_rows)
    return directs, (pa.concat_arrays(direct_ids) if direct_ids else pa.array([], pa.string())), rows_out


def _with_split_fields(table: pa.Table, split: str, config: SplitConfig, directs: HashIndex,
                       direct_ids: pa.Array, where) -> tuple[pa.Table, int]:
    """Pass 2 on one batch: (its kept rows with the new split and the split fields, rows dropped)."""
    new_split = _new_split(table, split, config)
    if config.train_videos is None:
        check_split_rows(new_split, split, where)
    flags = composition_flags(table, config)
    keep = _keep(new_split, flags, config)
    code = directs.lookup(hash_strings(table.column("direct_group")))
    code[as_numpy(pc.binary_length(pc.fill_null(table.column("direct_group"), ""))) == 0] = -1
    if len(direct_ids):
        equiv = direct_ids.take(pa.array(np.maximum(code, 0)))
        equiv = pc.if_else(pa.array(code >= 0), equiv, pa.scalar(None, pa.string()))
    else:
        equiv = pa.nulls(len(code), pa.string())
    table = table.set_column(table.schema.get_field_index("split"), "split", new_split)
    for name in SPLIT_FIELDS.names:
        table = table.append_column(name, equiv if name == "direct_equiv" else pa.array(flags[name]))
    return (table if keep.all() else table.filter(pa.array(keep))), int((~keep).sum())


def _count(stats: dict, part: pa.Table) -> None:
    for name in stats:
        if name == "direct_equiv":
            stats[name] += part.num_rows - part.column(name).null_count
        else:
            stats[name] += int(pc.sum(pc.fill_null(part.column(name), 0).cast(pa.int64())).as_py() or 0)


def _config_dict(config: SplitConfig) -> dict:
    d = asdict(config)
    d.pop("batch_rows")
    d["train_videos"] = None if config.train_videos is None else f"{len(config.train_videos)} videos"
    d["steps_threshold"] = (dict(config.steps_threshold) if isinstance(config.steps_threshold, Mapping)
                            else config.steps_threshold)
    return d


def format_split_report(report: dict) -> str:
    lines = [f"split {report['pool']} -> {report['out']}: {report['rows_in']:,} questions in, "
             + ", ".join(f"{s} {n:,}" for s, n in report["rows_out"].items()) + " out "
             f"({report['train_novel_dropped']:,} train novel compositions dropped; "
             f"{report['direct_questions']:,} direct questions)"]
    for s, st in report["flags"].items():
        lines.append(f"  [{s}] " + "  ".join(f"{k} {v:,}" for k, v in st.items()))
    return "\n".join(lines)


def _card_body(report: dict, config: SplitConfig) -> str:
    threshold = report["config"]["steps_threshold"]
    return "\n".join([
        f"AGQA-style split fields added by `tensorqa split` to `{Path(report['pool']).name}`. Columns: "
        "`tensorqa.writers.RECORD_SCHEMA` plus novel_comp, nc_seq, nc_sup, nc_dur, nc_objrel, more_steps, "
        "direct_equiv (`tensorqa.agqa.splits.SPLIT_SCHEMA`).",
        "",
        "- train / test: " + ("the pool's video split" if config.train_videos is None
                              else f"{len(config.train_videos):,} listed train videos, all others test") + ".",
        "- Novel compositions: train holds no question with novel_comp = 1" + (" (kept: keep_novel_in_train)" if
                                                                              config.keep_novel_in_train else "")
        + "; test holds all. Held-out compositions:",
        *("  " + line for line in config.novel.describe()),
        f"- More steps: more_steps = steps > {threshold} (per template where a table is given). Train on "
        "more_steps = 0, test on more_steps = 1; rows are not removed for this split.",
        "- Indirect references: indirect and i_* as generated; direct_equiv is the question_id of the direct "
        "question of the same direct_group (null when there is none).",
        "",
        "```",
        format_split_report({**report, "pool": Path(report["pool"]).name, "out": "."}),
        "```",
    ])
