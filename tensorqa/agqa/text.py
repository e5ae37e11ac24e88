"""Text columns as rows of lexicon ids: one ``take`` per column, no per-row Python.

Every text is a concatenation of atoms (frame or program literals, vocabulary strings) held in one
string array, the :class:`Lexicon`; a column of M texts of at most P atoms is an int matrix [M, P]
(0: the empty string). :func:`gather_text` takes the flattened ids once, which lays the rows' texts
end to end; :func:`compose` builds the matrix from per-group patterns and per-row slot atoms."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa

from tensorqa.writers import string_offsets

_PLACEHOLDER = re.compile(r"\{(\w+)\}|<(\w+)>")
# rows per output chunk: keeps each chunk's string data far below int32 offsets' 2 GiB
CHUNK_ROWS = 1 << 18


def split_pattern(text: str) -> list[str]:
    """Alternating literal fragments and slot names: ``[lit, slot, lit, ..., slot, lit]`` from a
    text with ``{slot}`` or ``<slot>`` placeholders (always odd length)."""
    parts, last = [], 0
    for m in _PLACEHOLDER.finditer(text):
        parts += [text[last:m.start()], m.group(1) or m.group(2)]
        last = m.end()
    return parts + [text[last:]]


def join_patterns(*patterns: list[str]) -> list[str]:
    """The pattern of the patterns' texts written one after the other."""
    out = list(patterns[0])
    for p in patterns[1:]:
        out[-1] += p[0]
        out += p[1:]
    return out


class Lexicon:
    """Strings addressed by integer ids: named sections (id = section base + index) and literals
    (deduplicated). Id 0 is the empty string. Append-only, so ids stay valid as it grows."""

    def __init__(self) -> None:
        self._strings: list[str] = [""]
        self._literals: dict[str, int] = {"": 0}
        self.bases: dict[str, int] = {}
        self._tables: dict[str, np.ndarray] = {}
        self._array: pa.Array | None = None

    def __len__(self) -> int:
        return len(self._strings)

    def section(self, name: str, strings: Iterable[str]) -> int:
        """Add a section; returns its base id."""
        base = self.bases[name] = len(self._strings)
        self._strings.extend(strings)
        # the section's ids, then 0 (the empty string) where index -1 lands
        self._tables[name] = np.append(np.arange(base, len(self._strings), dtype=np.int32), np.int32(0))
        self._array = None
        return base

    def ids(self, name: str, index: np.ndarray) -> np.ndarray:
        """int32 ids of entries ``index`` of section ``name``; index -1 (an unused slot) is the
        empty string. One gather from the section's id table."""
        return self._tables[name].take(index)  # np.take: ~1.7x faster than indexing for a small table

    def literal(self, text: str) -> int:
        if text not in self._literals:
            self._literals[text] = len(self._strings)
            self._strings.append(text)
            self._array = None
        return self._literals[text]

    def literals(self, pattern: list[str]) -> None:
        """Register the literal fragments of a pattern."""
        for p in pattern[::2]:
            self.literal(p)

    def extended(self, strings: list[str]) -> tuple[pa.Array, int]:
        """(this lexicon followed by ``strings``, the id of ``strings[0]``): per-block strings."""
        return self.extend([pa.array(strings, pa.string())]), len(self)

    def extend(self, parts: list[pa.Array]) -> pa.Array:
        """This lexicon followed by the strings of ``parts``, for one block. The lexicon's strings sit at
        the start of a scratch buffer kept between calls (not copied per block), so the result aliases it:
        valid until the next ``extend`` (``gather_text`` copies what it takes)."""
        base = self.array()
        n0 = len(base)
        base_offsets = string_offsets(base)
        start, stop = int(base_offsets[0]), int(base_offsets[-1])
        pieces = [p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p for p in parts]
        pieces = [(p, string_offsets(p)) for p in pieces if len(p)]
        n = n0 + sum(len(p) for p, _ in pieces)
        size = (stop - start) + sum(int(po[-1] - po[0]) for _, po in pieces)
        scratch = getattr(self, "_scratch", None)
        if scratch is None or scratch[0] is not base or len(scratch[1]) < n + 1 or len(scratch[2]) < size:
            offsets = np.empty(max(n + 1, 2 * (n0 + 1)), np.int32)
            data = np.empty(max(size, 2 * (stop - start) + 1), np.uint8)
            offsets[:n0 + 1] = base_offsets - start
            data[:stop - start] = np.frombuffer(base.buffers()[2], np.uint8, stop - start, start)
            self._scratch = scratch = (base, offsets, data)
        _, offsets, data = scratch
        at, end = n0, stop - start
        for p, po in pieces:
            k = len(p)
            nbytes = int(po[-1] - po[0])
            offsets[at + 1:at + k + 1] = po[1:] - po[0] + end
            if nbytes:
                data[end:end + nbytes] = np.frombuffer(p.buffers()[2], np.uint8, nbytes, int(po[0]))
            at, end = at + k, end + nbytes
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets[:n + 1]), pa.py_buffer(data[:end])])

    def array(self) -> pa.Array:
        if self._array is None:
            self._array = pa.array(self._strings, pa.string())
        return self._array


def gather_text(lexicon: pa.Array, ids: np.ndarray, lengths: np.ndarray | None = None) -> pa.Array | pa.ChunkedArray:
    """string[M]: row i is the concatenation of its atoms ``lexicon[id]``.

    ``ids``: int[M, P] (every row P atoms), or, with ``lengths`` (int[M]), the rows' atoms one
    after the other (ragged: row i has ``lengths[i]`` of them)."""
    if lengths is None:
        M, P = ids.shape
        lengths, ids = np.full(M, P, np.int64), ids.reshape(-1)
    M = len(lengths)
    if M == 0:
        return pa.array([], pa.string())
    ends = np.cumsum(lengths)
    chunks = []
    for a in range(0, M, CHUNK_ROWS):
        b = min(a + CHUNK_ROWS, M)
        first = ends[a - 1] if a else 0
        atoms = lexicon.take(pa.array(ids[first:ends[b - 1]]))
        offsets = string_offsets(atoms)
        bounds = np.concatenate([[0], ends[a:b] - first])
        chunks.append(pa.Array.from_buffers(pa.string(), b - a, [None, pa.py_buffer(np.ascontiguousarray(offsets[bounds])),
                                                                 atoms.buffers()[2]]))
    return chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, pa.string())


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for non-negative keys below ``bound``: keys that fit
    16 bits are sorted as such, which numpy does by radix sort (~5x faster than sorting them
    as int32 / int64)."""
    if bound <= np.iinfo(np.int16).max + 1:
        keys = keys.astype(np.int16)
    return np.argsort(keys, kind="stable")


def _dense(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, index of each row's value among them) for small non-negative ints
    (a lookup table instead of ``np.unique``'s sort)."""
    if len(group) == 0:
        return group, group
    present = np.bincount(group) > 0
    uniq = np.flatnonzero(present)
    lookup = np.cumsum(present) - 1
    return uniq, lookup[group]


def compose(lexicon: Lexicon, group: np.ndarray, pattern: Callable[[int], list[str]],
            slots: dict[str, np.ndarray], lexicon_array: pa.Array | None = None) -> pa.Array | pa.ChunkedArray:
    """string[M]: row i is ``pattern(group[i])`` with slot ``s`` written as the atoms ``slots[s][i]``
    (int [M] or [M, k]). ``lexicon_array``: a lexicon extended per block; the patterns' literals must
    then be in the shared lexicon already (:meth:`Lexicon.literals`)."""
    M = len(group)
    if M == 0:
        return pa.array([], pa.string())
    size = len(lexicon)
    uniq, ginv = _dense(np.asarray(group, np.int64))
    names = sorted(slots)
    columns, first = [np.zeros(M, np.int32)], {}  # source column 0: unused
    for n in names:
        first[n] = len(columns)
        columns.extend(np.asarray(slots[n], np.int32).reshape(M, -1).T)
    width = {n: len(columns) - first[n] if i == len(names) - 1 else first[names[i + 1]] - first[n]
             for i, n in enumerate(names)}
    plans = []
    for g in uniq:
        atoms = []  # (source column, literal id)
        for i, p in enumerate(pattern(int(g))):
            if i % 2 == 0:
                if p:
                    atoms.append((0, lexicon.literal(p)))
            else:
                atoms += [(first[p] + j, 0) for j in range(width[p])]
        plans.append(atoms)
    if lexicon_array is not None and len(lexicon) != size:
        raise RuntimeError("compose: a pattern literal was not registered before the lexicon was extended")
    # Each row's atoms are a contiguous run of one ragged id list in row order; a group's rows are
    # filled an atom position at a time (a literal, or a slot column read at the group's rows), so
    # the texts come out in row order from one take, with no reordering of strings afterwards.
    lengths = np.array([len(a) for a in plans], np.int64)
    row_lengths = lengths.take(ginv)
    ends = np.cumsum(row_lengths)
    ids = np.empty(int(ends[-1]), np.int32)
    runs = np.flatnonzero(ginv[1:] != ginv[:-1]) + 1  # where the group changes
    if len(runs) * MIN_RUN_ROWS <= M:
        _fill_runs(ids, ends - row_lengths, ginv, np.concatenate([[0], runs, [M]]), plans, lengths, columns)
    else:
        _fill_groups(ids, ends - row_lengths, ginv, plans, columns)
    return gather_text(lexicon.array() if lexicon_array is None else lexicon_array, ids, row_lengths)


# compose fills runs of rows of one group in place when the runs average at least this many rows
MIN_RUN_ROWS = 32


def _fill_runs(ids, starts, ginv, bounds, plans, lengths, columns) -> None:
    """Rows ``bounds[i]:bounds[i+1]`` (one group, P atoms each) occupy a contiguous [rows, P]
    block of ``ids``: each atom position is one strided copy of a slot column's slice, or a fill."""
    group_of, at, count, width = ginv[bounds[:-1]], starts[bounds[:-1]], np.diff(bounds), lengths[ginv[bounds[:-1]]]
    for a, k, s, n, w in zip(bounds[:-1].tolist(), group_of.tolist(), at.tolist(), count.tolist(), width.tolist()):
        if not w:
            continue
        block = ids[s:s + n * w].reshape(n, w)
        for j, (col, lit_id) in enumerate(plans[k]):
            block[:, j] = columns[col][a:a + n] if col else lit_id


def _fill_groups(ids, starts, ginv, plans, columns) -> None:
    """Each group's rows at once, wherever they are: an atom position is a gather of the rows'
    slot values (or a literal) scattered to the rows' atom offsets."""
    order = stable_order(ginv, len(plans))
    row_start = np.concatenate([[0], np.cumsum(np.bincount(ginv, minlength=len(plans)))])
    for k, atoms in enumerate(plans):
        if not atoms:
            continue
        rows = order[row_start[k]:row_start[k + 1]]
        at = starts[rows]
        for j, (col, lit_id) in enumerate(atoms):
            ids[at + j] = columns[col][rows] if col else lit_id
