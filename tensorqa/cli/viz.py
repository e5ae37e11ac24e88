"""Looking at what was built: ``show`` (a video's timeline) and ``report`` (a pool's figures)."""

from __future__ import annotations

import argparse
import time

from tensorqa.cli.commands import command


def _show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store written by tensorqa pack")
    p.add_argument("video", help="the video id")
    p.add_argument("--pool", metavar="DIR", help="the pool holding --question")
    p.add_argument("--question", metavar="ID", help="a question id of the video (<video>-<n>): its window and grounding")
    p.add_argument("--semantics", choices=("agqa", "strict"), default="agqa", help="the semantics the pool was generated with")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.png (the figure) or FILE.html (one self-contained page)")


@command("show", "draw a video's timeline (actions, keyframes, relations) with a question's window and grounding",
         _show_arguments)
def run_show(a: argparse.Namespace) -> int:
    from tensorqa.viz.plotting import pyplot

    pyplot("show")  # the extra, before any reading
    from tensorqa.viz.show import show
    from tensorqa.threads import set_torch_threads

    set_torch_threads()

    data = show(a.store, a.video, a.out, pool=a.pool, question=a.question, semantics=a.semantics)
    g = data["grounding"]
    print(f"wrote {a.out}: {len(data['bars'])} action instances, {len(data['ticks'])} keyframes, "
          f"{len(data['cells'])} relation cells" + (f"; {len(g['keyframes'])} grounded keyframes" if g else ""))
    return 0


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a pool (Parquet shards) from tensorqa generate, balance or split")
    p.add_argument("--compare", metavar="POOL2", help="a second pool shown beside it (e.g. the unbalanced input of a balanced pool)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: report.html (self-contained) and summary.json")


@command("report", "an HTML report with plots of a pool beside AGQA's Table 14 (and a second pool), plus summary.json",
         _report_arguments)
def run_report(a: argparse.Namespace) -> int:
    from tensorqa.viz.plotting import pyplot

    pyplot("report")
    from tensorqa.viz.report import report

    t0 = time.perf_counter()
    result = report(a.pool, a.out, compare=a.compare)
    print(f"wrote {a.out}/report.html and summary.json: {result['pool']['stats']['questions']:,} questions"
          + (f" beside {result['compare']['stats']['questions']:,}" if result["compare"] else "")
          + f" in {time.perf_counter() - t0:.1f} s")
    return 0
