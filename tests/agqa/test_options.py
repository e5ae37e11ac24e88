"""Run options: which videos ``--max-videos`` selects (hand-worked shares of each split)."""

from collections import Counter

import numpy as np

from tensorqa.agqa.options import selected_videos


class _Store:
    """What ``selected_videos`` reads of a store: its length and each video's split."""

    def __init__(self, splits):
        self.splits = tuple(splits)

    def __len__(self):
        return len(self.splits)


def _shares(store, n, seed=0):
    picked = selected_videos(store, n, seed)
    assert (np.diff(picked) > 0).all() and picked.dtype == np.int64
    return Counter(store.splits[i] for i in picked)


def test_max_videos_keeps_the_split_proportions():
    # AGQA's default store lists its test videos last: the first N would all be train
    store = _Store(["train"] * 243 + ["test"] * 57)
    # 30 * 57 / 300 = 5.7 test and 24.3 train: floors 5 and 24, the one left goes to the larger remainder (test)
    assert _shares(store, 30) == {"train": 24, "test": 6}
    # 100 * 57 / 300 = 19 exactly
    assert _shares(store, 100) == {"train": 81, "test": 19}
    three = _Store(["train"] * 70 + ["val"] * 15 + ["test"] * 15)
    # 7 train exactly, 1.5 val and 1.5 test: the one left goes to the tie's alphabetically first split
    assert _shares(three, 10) == {"train": 7, "val": 1, "test": 2}


def test_every_split_gets_a_video_while_the_count_allows():
    store = _Store(["train"] * 97 + ["test"] * 3)
    assert _shares(store, 5) == {"train": 4, "test": 1}  # 5 * 3 / 100 = 0.15 would round to none
    assert _shares(store, 1) == {"train": 1}


def test_the_selection_is_seeded_and_all_videos_need_no_draw():
    store = _Store(["train"] * 50 + ["test"] * 50)
    assert (selected_videos(store, 10, seed=3) == selected_videos(store, 10, seed=3)).all()
    assert not (selected_videos(store, 10, seed=3) == selected_videos(store, 10, seed=4)).all()
    assert (selected_videos(store, None) == np.arange(100)).all()
    assert (selected_videos(store, 500) == np.arange(100)).all()
