"""The pool's record schema (:data:`RECORD_SCHEMA`: one row per question) and how its columns are
encoded on disk (plain, dictionary, statistics), with the casts every writer applies.
"""

from __future__ import annotations

import os

import pyarrow as pa

from tensorqa.errors import TensorQAError

# One row per question. AGQA's released fields (reference §2.3) plus the ingredients that balancing
# and the splits need, so that those passes never re-parse programs or question text. Every column
# but sg_grounding is never null ("" marks an unused slot) and is declared so: Parquet then stores
# no definition levels for it (faster writing) and readers see non-nullable fields.
_FIELDS = [
    ("question_id", pa.string()),      # "<video>-<n>", n = rank of the question within its video
    ("video_id", pa.string()),
    ("split", pa.string()),            # train / test (the store's video split)
    ("template", pa.string()),         # AGQA template name (Table 14 spelling)
    ("frame", pa.int8()),              # question frame variant (index into the template's frames)
    ("question", pa.string()),
    ("answer", pa.string()),           # lowercase, as AGQA 2.0 releases it
    ("global", pa.list_(pa.field("element", pa.string()))),  # Parquet's name for list items
    ("local", pa.string()),            # released balancing key, e.g. "yes-no-o4-while-c076"
    ("ans_type", pa.string()),         # open / binary
    ("steps", pa.int8()),
    ("semantic", pa.string()),
    ("structural", pa.string()),
    ("program", pa.string()),          # AGQA syntax, parseable by tensorqa.parse_program
    # -- ingredients (AGQA ids: oN, rN / vNNN, cNNN; "" when the slot is unused) -----------------
    ("window", pa.string()),           # time kind: video / before / after / while / between
    ("window_action", pa.string()),    # X of the localization ("" for the whole video)
    ("window_action2", pa.string()),   # Y of between
    ("window_action_ref", pa.string()),  # "" direct, or first / last / whole: X as an indirect-object action
    ("window_action2_ref", pa.string()),  # the same for Y
    ("relation", pa.string()),
    ("object", pa.string()),           # the object the slot denotes (a reference's referent)
    ("object_ref", pa.string()),       # "" direct, or first / last / whole reference ...
    ("object_ref_relation", pa.string()),  # ... through this relation
    ("object2", pa.string()),
    ("object2_ref", pa.string()),
    ("object2_ref_relation", pa.string()),
    ("action", pa.string()),
    ("action_ref", pa.string()),       # "" direct, or the object reference kind of an indirect-object action
    ("action2", pa.string()),
    ("action2_ref", pa.string()),      # the same for action2
    ("direct_group", pa.string()),     # video|template|reference-free arguments: AGQA's direct-equivalent group
    ("is_direct", pa.int8()),          # no reference and no localization: the group's direct question
    ("indirect", pa.int8()),
    ("i_obj", pa.int8()),
    ("i_rel", pa.int8()),
    ("i_act", pa.int8()),
    ("i_temp", pa.int8()),
    ("sg_grounding", pa.string()),     # JSON {"start-end": [vertex ids]}, or null when not computed
]
NULLABLE_COLUMNS = frozenset({"sg_grounding"})
RECORD_SCHEMA = pa.schema([pa.field(name, kind, nullable=name in NULLABLE_COLUMNS) for name, kind in _FIELDS])

SPLITS = ("train", "test")


# Long, mostly distinct text columns are written plain (dictionary encoding them falls back
# anyway); the rest are small vocabularies that dictionary-encode well.
TEXT_COLUMNS = frozenset(("question_id", "question", "program", "local", "direct_group", "sg_grounding"))
# Columns whose values come from a fixed vocabulary (catalogue names, AGQA ids, answers). Writers take
# them as dictionary arrays over the whole vocabulary (``records.render`` builds them so), which
# Parquet writes as dictionary pages without hashing every value; on disk and when read back they
# are plain strings. Tables that hold them as strings (balancing's) are written as strings.
VOCABULARY_COLUMNS = frozenset(("template", "answer", "ans_type", "semantic", "structural", "window", "window_action",
                                "window_action2", "window_action_ref", "window_action2_ref", "relation", "object",
                                "object_ref", "object_ref_relation", "object2", "object2_ref", "object2_ref_relation",
                                "action", "action_ref", "action2", "action2_ref"))
# Small integer columns Parquet writes faster plain (zstd squeezes their runs) than dictionary-encoded;
# ``frame`` (up to 64 values) stays dictionary-encoded.
PLAIN_COLUMNS = frozenset(("steps", "is_direct", "indirect", "i_obj", "i_rel", "i_act", "i_temp"))
# Page statistics (min / max, for readers' row-group pruning) only where a reader filters: they
# cost as much as the encoding itself on the small columns.
STATISTICS_COLUMNS = ["video_id", "split", "template"]


def cast_records(table: pa.Table, schema: pa.Schema, where: str | os.PathLike) -> pa.Table:
    """``table.cast(schema)``, with a null in a non-nullable column reported as a
    :class:`TensorQAError` naming ``where`` (the shard being written) and the column."""
    try:
        return table.cast(schema)
    except (ValueError, pa.ArrowInvalid):
        bad = [f.name for f in schema if not f.nullable and f.name in table.column_names
               and table.column(f.name).null_count]
        if not bad:
            raise
        raise TensorQAError(f"{where}: column {bad[0]!r} holds {table.column(bad[0]).null_count} null value(s); "
                            "only sg_grounding may be null (\"\" marks an unused slot)") from None


def coded_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its :data:`VOCABULARY_COLUMNS` as dictionary<int32, string> (what writers take)."""
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), nullable=f.nullable)
                      if f.name in VOCABULARY_COLUMNS and f.type == pa.string() else f for f in schema])
