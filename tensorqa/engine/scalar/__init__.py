"""The scalar executor: one AGQA program on one video, the way AGQA's generator answers it; the
oracle the vectorized primitives are tested against, written to be read, not to be fast.

``walker`` walks a program and calls each primitive's scalar twin, registered in the primitive
registry under the vectorized primitive's name (backend ``scalar``); the twins live in modules
named like the vectorized families (``localize``, ``filter``, ``first_last``, ``duration``,
``order``, ``query``); ``video`` holds one video's tables.

    run_program(program, source, video_id, semantics=AGQA) -> str | Undefined
"""

from tensorqa.engine.scalar import duration, filter, first_last, localize, order, query, static  # noqa: F401  (register the twins)
from tensorqa.engine.scalar.video import Undefined
from tensorqa.engine.scalar.walker import VideoExecutor, localize_frames, render, run_program, twin

__all__ = ["Undefined", "VideoExecutor", "localize_frames", "render", "run_program", "twin"]
