"""A growing map from 64-bit hashes to dense int32 codes, vectorized over whole batches.

``HashIndex.index(h)`` gives the code of every element of ``h`` (uint64[m], repeats allowed), new
hashes the next free codes: open addressing (linear probing, at most 70 % full) probed for all
elements at once, one element claiming each empty slot per round (the earliest in the batch).
Codes follow first appearance; :meth:`HashIndex.canonical` renumbers them by hash value, so results
do not depend on the order the data was read in."""

from __future__ import annotations

import numpy as np

_EMPTY = -1
_MAX_LOAD = 0.7  # linear probing stays short (about 2 probes per hit) up to this load


class HashIndex:
    def __init__(self, capacity: int = 1 << 16):
        self._alloc(max(16, capacity))
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def _alloc(self, size: int) -> None:
        self.size = size
        self.slot_hash = np.zeros(size, np.uint64)
        self.slot_code = np.full(size, _EMPTY, np.int32)

    def _slots(self, h: np.ndarray) -> np.ndarray:
        # the hashes are already mixed; their top 32 bits scaled to 0..size-1 ("fast range"), so the
        # table need not be a power of two
        return (((h >> np.uint64(32)) * np.uint64(self.size)) >> np.uint64(32)).astype(np.int64)

    def _next(self, slot: np.ndarray) -> np.ndarray:
        slot = slot + 1
        slot[slot == self.size] = 0
        return slot

    def _reserve(self, n: int) -> None:
        if n <= _MAX_LOAD * self.size:
            return
        occupied = np.flatnonzero(self.slot_code != _EMPTY)
        hashes, codes = self.slot_hash[occupied], self.slot_code[occupied]
        del occupied
        self._alloc(max(int(n / _MAX_LOAD) + 1, self.size + self.size // 4))
        if len(codes):
            self._place(hashes, codes)

    def _place(self, h: np.ndarray, codes: np.ndarray) -> None:
        """Insert distinct hashes known to be absent."""
        slot = self._slots(h)
        idx = np.arange(len(h))
        while len(idx):
            free = self.slot_code[slot] == _EMPTY
            s, i = slot[free], idx[free]
            uniq, first = np.unique(s, return_index=True)
            self.slot_hash[uniq] = h[i[first]]
            self.slot_code[uniq] = codes[i[first]]
            placed = np.zeros(len(idx), bool)
            placed[np.flatnonzero(free)[first]] = True
            keep = ~placed
            slot = np.where(free, slot, self._next(slot))[keep]
            idx = idx[keep]

    def index(self, h: np.ndarray) -> np.ndarray:
        """int32[m] codes of ``h`` (uint64[m])."""
        h = np.asarray(h, np.uint64)
        out = self.lookup(h)  # known hashes first: the table is then sized for the misses only
        miss = np.flatnonzero(out == _EMPTY)
        if len(miss):
            out[miss] = self._insert(h[miss])
        return out

    def _insert(self, h: np.ndarray) -> np.ndarray:
        m = len(h)
        self._reserve(self.n + m)
        out = np.empty(m, np.int32)
        idx = np.arange(m)
        slot = self._slots(h)
        while len(idx):
            code = self.slot_code[slot]
            mine = h[idx]
            hit = (code != _EMPTY) & (self.slot_hash[slot] == mine)
            out[idx[hit]] = code[hit]
            settled = hit
            free = code == _EMPTY
            if free.any():
                pos = np.flatnonzero(free)
                uniq, first = np.unique(slot[pos], return_index=True)
                winners = pos[first]
                new = np.arange(self.n, self.n + len(winners), dtype=np.int32)
                self.n += len(winners)
                self.slot_hash[uniq] = mine[winners]
                self.slot_code[uniq] = new
                out[idx[winners]] = new
                settled = settled.copy()
                settled[winners] = True
            # losers of a claim look at the same slot again (it may now hold their own hash);
            # elements facing another hash move on
            step = ~settled & ~free
            slot = np.where(step, self._next(slot), slot)
            keep = ~settled
            idx, slot = idx[keep], slot[keep]
        return out

    def lookup(self, h: np.ndarray) -> np.ndarray:
        """int32[m] codes of ``h`` (uint64[m]), -1 for hashes not in the index; inserts nothing."""
        h = np.asarray(h, np.uint64)
        out = np.full(len(h), _EMPTY, np.int32)
        idx = np.arange(len(h))
        slot = self._slots(h)
        while len(idx):
            code = self.slot_code[slot]
            hit = (code != _EMPTY) & (self.slot_hash[slot] == h[idx])
            out[idx[hit]] = code[hit]
            go_on = ~hit & (code != _EMPTY)  # an empty slot ends the probe: not present
            idx, slot = idx[go_on], self._next(slot[go_on])
        return out

    def canonical(self) -> np.ndarray:
        """int32[n] lookup table: code -> rank of its hash among all hashes (sorted order)."""
        occupied = np.flatnonzero(self.slot_code != _EMPTY)
        hashes = np.empty(self.n, np.uint64)  # code -> hash, from the table itself
        hashes[self.slot_code[occupied]] = self.slot_hash[occupied]
        del occupied
        order = np.argsort(hashes, kind="stable")
        lut = np.empty(self.n, np.int32)
        lut[order] = np.arange(self.n, dtype=np.int32)
        return lut
