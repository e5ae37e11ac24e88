"""Re-execute every pair of a foil set from its ``pairs.parquet`` programs on its store's scenes: the
caption must come out true and the foil false (videos: the engine's scalar executor or the foils' twin;
CLEVR scenes: ``tensorqa.clevr.run_program``).

    python benchmarks/foils_proof.py STORE FOILS_DIR
"""

from __future__ import annotations

import argparse
import collections
import time

import pyarrow.parquet as pq

from tensorqa.foils import programs, static_programs
from tensorqa.foils.commands import open_scene_store
from tensorqa.foils.programs import Text
from tensorqa.scenes.static_store import StaticStore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("foils")
    a = ap.parse_args()
    rows = pq.read_table(f"{a.foils}/pairs.parquet").to_pylist()
    t0 = time.perf_counter()
    failures = collections.Counter()
    with open_scene_store(a.store) as store:
        if isinstance(store, StaticStore):
            scenes = {s.image_filename: s.to_json() for s in store.scenes()}
            scene_of, holds = (lambda r: scenes[r["media_file"]]), static_programs.holds
        else:
            scene_of, holds = (lambda r: store.scene(r["video_id"])), programs.holds
        for r in rows:
            scene = scene_of(r)
            if holds(Text(r["caption_program"], r["caption_answer"]), scene) is not True \
                    or holds(Text(r["foil_program"], r["foil_answer"]), scene) is not False:
                failures[r["instrument"]] += 1
    seconds = time.perf_counter() - t0
    print(f"{len(rows):,} pairs re-executed in {seconds:.1f} s: {sum(failures.values())} failures {dict(failures)}")


if __name__ == "__main__":
    main()
