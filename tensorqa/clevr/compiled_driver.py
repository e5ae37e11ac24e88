"""A block of static scenes -> the compiled generator's inputs (object bits per key, relation and
attribute), and the bookkeeping it carries from block to block."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from tensorqa.clevr.plan import Plan, Rules, SceneBits
from tensorqa.clevr.constants import MAX_OBJECTS, ROUNDS as CONSTANT_ROUNDS
from tensorqa.outputs import partial_path, publish, write_error
from tensorqa.scenes.static_batch import ATTRS, StaticBatch, clevr_vocab

ROUNDS = np.array(CONSTANT_ROUNDS, np.int64)
# The streamed questions JSON generates a block in parts of this many scenes (~2.8 MB of records with
# CLEVR's defaults): each part's records go to the device while the next part is generated, so a run
# waits at its end only for the last part's write.
GEN_SCENES = 250


def nvals() -> np.ndarray:
    v = clevr_vocab()
    return np.array([len(v.values(a)) for a in ATTRS], np.int64)


@dataclass
class SceneBlock:
    """A block of static scenes as the compiled engine reads them: attrs int64[B, N, 4], nobj
    int64[B] (objects 0..n-1 are real), relcode uint8[B, N, N] (bit r: j is relation r of i), and
    each scene's split and image file name (str, or the store's fixed-width bytes:
    :func:`stored_bytes`) and image index."""

    attrs: np.ndarray
    nobj: np.ndarray
    relcode: np.ndarray
    splits: tuple
    image_filenames: tuple
    image_indices: np.ndarray

    @staticmethod
    def of_batch(batch: StaticBatch) -> SceneBlock:
        mask = batch.mask.cpu().numpy()
        if not (mask == (np.arange(mask.shape[1]) < mask.sum(1)[:, None])).all():
            raise ValueError("objects must fill the first slots of each scene")
        rel = batch.rel.cpu().numpy().astype(np.uint8)
        relcode = (rel << np.arange(4, dtype=np.uint8)).sum(-1).astype(np.uint8)
        return SceneBlock(np.ascontiguousarray(batch.attrs.cpu().numpy().astype(np.int64)), mask.sum(1).astype(np.int64),
                          np.ascontiguousarray(relcode), batch.splits, batch.image_filenames,
                          batch.image_indices.cpu().numpy())

    def scene_json(self) -> tuple[np.ndarray, np.ndarray]:
        """Each scene's '"split":..,"image_filename":..,"image_index":..,"image":..,' as (bytes,
        offsets): see :func:`scene_json`."""
        return scene_json(self.splits, self.image_filenames, self.image_indices)

    @staticmethod
    def of_store(store, start: int, stop: int) -> SceneBlock:
        """Scenes [start, stop) of a ``StaticStore``, read as arrays (no object per scene)."""
        a = store.arrays(start, stop)
        return SceneBlock(np.ascontiguousarray(a["attrs"], dtype=np.int64), a["num_objects"],
                          np.ascontiguousarray(a["rel_bits"], dtype=np.uint8), a["splits"], a["image_filenames"],
                          a["image_indices"])


def stored_bytes(x) -> np.ndarray:
    """Strings as the store holds them: a fixed-width bytes array (str encoded as UTF-8)."""
    if isinstance(x, np.ndarray) and x.dtype.kind == "S":
        return x
    return np.array([v.encode() for v in x], dtype="S") if len(x) else np.zeros(0, "S1")


def scene_json(splits, names, image_indices) -> tuple[np.ndarray, np.ndarray]:
    """Each scene's '"split":..,"image_filename":..,"image_index":..,"image":..,' as (bytes,
    offsets), from str or the store's bytes: straight from the bytes where they are plain ASCII,
    else through orjson."""
    import orjson

    from tensorqa.clevr.compiled_scenes import scene_pieces, stored_scene_pieces

    idx = np.ascontiguousarray(image_indices, dtype=np.int64)
    sp, nm = stored_bytes(splits), stored_bytes(names)
    W1, W2 = max(sp.dtype.itemsize, 1), max(nm.dtype.itemsize, 1)
    raw1 = np.frombuffer(np.ascontiguousarray(sp).astype(f"S{W1}").tobytes(), np.uint8)
    raw2 = np.frombuffer(np.ascontiguousarray(nm).astype(f"S{W2}").tobytes(), np.uint8)
    out, off, ok = stored_scene_pieces(raw1, W1, raw2, W2, idx)
    if ok:
        return out, off
    return scene_pieces(np.frombuffer(orjson.dumps([v.decode() for v in sp]), np.uint8),
                        np.frombuffer(orjson.dumps([v.decode() for v in nm]), np.uint8), idx)


def scene_bits(batch) -> SceneBits:
    """The :class:`plan.SceneBits` of a :class:`SceneBlock` or a ``StaticBatch``."""
    from tensorqa.clevr.compiled_bits import scene_bits as bits
    from tensorqa.clevr.keys import key_table

    blk = batch if isinstance(batch, SceneBlock) else SceneBlock.of_batch(batch)
    maskbits, relbits, attrbits, keybits = bits(blk.attrs, blk.nobj, blk.relcode, nvals(), key_table())
    return SceneBits(blk.attrs, maskbits, relbits, attrbits, keybits, blk.nobj)


@dataclass
class Book:
    """CLEVR's use counts and answer histograms per template, carried across blocks."""

    T: int
    use: np.ndarray = field(init=False)
    hist: np.ndarray = field(init=False)
    fresh: bool = True  # the run's first block resets them

    def __post_init__(self):
        self.use = np.zeros(self.T, np.int64)
        self.hist = np.zeros((self.T, 11), np.int64)
        self.stats = np.zeros(4, np.int64)  # templates evaluated, rows drawn, class tables (J = 1, J = 4)


def accept_block(plan: Plan, batch: StaticBatch, pos: np.ndarray, book: Book, opt) -> tuple:
    """The block's accepted questions (scene row, template, draw, answer code, params int64[Q, P]),
    exactly as ``torch_backend.choose_block`` accepts them."""
    bits = scene_bits(batch)
    return Generator(plan, opt, book)(bits, np.ascontiguousarray(pos, dtype=np.int64))


class Generator:
    """``compiled.generate_block`` with a run's fixed arguments (the plan, the options, the
    bookkeeping) and its class-table workspace, reused by every block of the run."""

    def __init__(self, plan: Plan, opt, book: Book):
        from tensorqa.clevr.compiled_bits import draw_root

        sem = opt.semantics
        self.plan, self.book, self.ws, self.ws_slots = plan, book, None, -1
        self.rules = Rules(draw_root(opt.seed), opt.instances_per_template, opt.templates_per_image,
                           opt.reset_counts_every, opt.draws, opt.valid_draws, ROUNDS, sem.out_neq_compares_counts,
                           sem.neq_inverted, sem.empty_keys_may_match)

    def __call__(self, bits: SceneBits, pos: np.ndarray) -> tuple:
        """The accepted questions of a block given as :func:`scene_bits`, its scenes at ``pos``."""
        from tensorqa.clevr.compiled import generate_block, workspace

        book, N = self.book, bits.relbits.shape[1]
        if self.ws_slots != N:  # a workspace per run (per store: the same object slots)
            self.ws, self.ws_slots = workspace(self.plan.ct_base.shape[0], N), N
        out = generate_block(self.plan, self.rules, bits, pos, book.use, book.hist, book.fresh, book.stats, self.ws)
        book.fresh = False
        return out


def text_root(seed: int) -> np.uint64:
    """The root of the question text's stream (engine.rng ``clevr.text``), what the writer takes."""
    from tensorqa.engine import rng

    return np.uint64(rng.derive_int(seed, "clevr.text"))


def _blocks(store, plan: Plan, opt, ranges: list, book: Book, step: int | None = None, accepted=None):
    """Per block of the scene ranges ``ranges`` [(start, stop), ...] of a static store: (the block,
    its :func:`scene_bits`, its scenes' positions, the accepted questions, 0). ``step``: generate a
    read block in parts of that many scenes, each yielded as it is done (its bits, positions and
    questions, and where the part starts in the block), so that a writer can send one part's output
    while the next is generated; the questions do not depend on it. ``accepted``: each block's
    questions, generated elsewhere (:func:`accept`), to write. Raises :class:`plan.NotCompilable`
    where the store's scenes have more object slots than a word holds."""
    from tensorqa.clevr.plan import NotCompilable

    given = None if accepted is None else iter(accepted)
    gen = Generator(plan, opt, book) if given is None else None
    for start, stop in ranges:
        for lo in range(start, stop, opt.batch_scenes):
            hi = min(lo + opt.batch_scenes, stop)
            batch = SceneBlock.of_store(store, lo, hi)
            if batch.attrs.shape[1] > MAX_OBJECTS:
                raise NotCompilable(f"a scene has more than {MAX_OBJECTS} objects")
            pos = np.arange(lo, hi, dtype=np.int64)
            bits = scene_bits(batch)
            if given is not None or step is None:
                yield batch, bits, pos, next(given) if given is not None else gen(bits, pos), 0
                continue
            for a in range(0, hi - lo, step):  # leading-axis slices: C-contiguous views
                part, ppos = bits.rows(a, a + step), pos[a:a + step]
                yield batch, part, ppos, gen(part, ppos), a


def accept(store, templates: list, synonyms: dict, opt, start: int, stop: int) -> list:
    """The accepted questions of scenes [start, stop) of a static store, per block: a ``--jobs``
    process's share, which the parent writes (:func:`stream_questions_json`, :func:`stream_parquet`
    with ``accepted``)."""
    from tensorqa.clevr.plan import plans

    plan, _ = plans(templates, synonyms)
    return [x[3] for x in _blocks(store, plan, opt, [(start, stop)], Book(plan.T))]


def stream_questions_json(path, store, templates: list, synonyms: dict, opt, ranges: list, with_output: bool,
                          info: dict, buffer_bytes: int = 4 << 20, direct: bool = True, accepted=None) -> int:
    """The scene ranges ``ranges`` of a static store -> CLEVR's questions JSON file (orjson's compact
    form, ``generate_store``'s key order), generated (or taken from ``accepted``, see :func:`_blocks`)
    and written block by block through one reused buffer (memory stays flat however many scenes;
    ``direct``: past the page cache where the file system allows, see :mod:`tensorqa.direct_file`),
    into a partial file renamed into place when complete. Returns the number of questions. Raises
    :class:`plan.NotCompilable` where a scene has more objects than a word holds, before anything
    is written."""
    from pathlib import Path

    import orjson

    from tensorqa.clevr.compiled_records import write_block_records
    from tensorqa.clevr.plan import NotCompilable, plans
    from tensorqa.direct_file import DirectFile
    from tensorqa.errors import TensorQAError

    plan, tp = plans(templates, synonyms)
    if store.arrays(0, 0)["attrs"].shape[1] > MAX_OBJECTS:
        raise NotCompilable(f"a scene has more than {MAX_OBJECTS} objects")
    p = Path(path)
    if not p.parent.is_dir():
        raise TensorQAError(f"{p}: output directory {p.parent} does not exist")
    tmp = partial_path(p)
    book = Book(plan.T)
    n = 0
    try:
        f = DirectFile(tmp, buffer_bytes, direct)  # a new file: a link planted at ``tmp`` is removed, not followed
    except OSError as e:
        raise write_error(p, e) from None
    try:
        f.put(b'{"info":' + orjson.dumps(info) + b',"questions":[')
        pieces, offsets, of = None, None, None
        for batch, bits, pos, acc, a in _blocks(store, plan, opt, ranges, book, GEN_SCENES, accepted):
            if of is not batch:
                (pieces, offsets), of = batch.scene_json(), batch
            q, Q = 0, len(acc[0])
            while q < Q:
                rec = (f.buf, pieces, offsets[a:], q, n, f.fill)
                q1, end = write_block_records(*acc, pos, text_root(opt.seed), with_output, plan, bits.relbits,
                                              bits.attrbits, tp, opt.semantics.other_thing_is_value, rec)
                if q1 == q and end == f.fill:  # the next record does not fit: a larger buffer
                    f.room(len(f.buf))
                    continue
                f.fill, q = end, q1
                f.flush()
            n += Q
        f.put(b"]}")
        f.close()
        publish(tmp, p)
    except BaseException as e:
        with contextlib.suppress(OSError):
            f.abort()
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):  # a full disk: one line naming the file
            raise write_error(p, e) from None
        raise
    return n


def stream_parquet(folder, store, templates: list, synonyms: dict, opt, ranges: list, shard: int = 0,
                   num_shards: int = 1, accepted=None) -> int:
    """The scene ranges ``ranges`` of a static store -> CLEVR's Parquet shard (:class:`parquet.ParquetShard`),
    generated (or taken from ``accepted``) and written block by block (memory holds a block and at
    most a row group per split, whatever the shard's size). Returns the number of questions; a failed run leaves no file
    of this shard. Raises :class:`plan.NotCompilable` as :func:`stream_questions_json` does."""
    from tensorqa.clevr.parquet import ParquetShard, SceneColumns
    from tensorqa.clevr.compiled_records import write_block
    from tensorqa.clevr.plan import NotCompilable, plans

    plan, tp = plans(templates, synonyms)
    if store.arrays(0, 0)["attrs"].shape[1] > MAX_OBJECTS:  # before any file is opened
        raise NotCompilable(f"a scene has more than {MAX_OBJECTS} objects")
    book = Book(plan.T)
    w = ParquetShard(folder, templates, shard, num_shards)
    try:
        for batch, bits, pos, acc, _ in _blocks(store, plan, opt, ranges, book, accepted=accepted):
            _, _, qb, qo, pb, po, abuf, ao = write_block(*acc, pos, text_root(opt.seed), False, False, plan,
                                                         bits.relbits, bits.attrbits, tp, opt.semantics.other_thing_is_value)
            scenes = SceneColumns(stored_bytes(batch.splits), stored_bytes(batch.image_filenames), batch.image_indices)
            w.write({"question": (qb, qo), "program": (pb, po), "answer": (abuf, ao), "template": acc[1]}, scenes,
                    acc[0])
        w.close()
    except BaseException as e:
        w.abort()
        if isinstance(e, OSError):  # a full disk: one line naming the file
            raise write_error(w.current, e) from None
        raise
    return w.rows
