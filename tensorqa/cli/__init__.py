"""The ``tensorqa`` command line: one small function per subcommand (``tensorqa --help`` lists them);
user errors print one line. Building the parser imports no torch, pyarrow or h5py (``--help``
answers at once): each command imports its machinery inside the function that runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from tensorqa.cli import agqa, decomp, scenes, viz  # noqa: F401  (importing registers the commands)
from tensorqa.cli.commands import COMMANDS, command
from tensorqa.errors import TensorQAError
from tensorqa.startup import configure_process
from tensorqa.outputs import forget_inputs, protect_inputs
from tensorqa.foils.commands import foils_arguments, run_foils, run_score_foils, score_foils_arguments

command("foils", "caption/foil pairs (VALSE-style) proven true / false by execution on a store's scenes",
        foils_arguments)(run_foils)
command("score-foils", "caption/foil metrics from per-text scores in VALSE's and ViLMA's conventions",
        score_foils_arguments)(run_score_foils)


# what str.splitlines() breaks at: a message quoting data (an id, a prediction) stays one line
_LINE_BREAKS = {c: repr(chr(c))[1:-1] for c in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def one_line(message: str) -> str:
    return message.translate(_LINE_BREAKS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensorqa", description="Compile compositional QA benchmarks from scene graphs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_arguments, _, help) in COMMANDS.items():
        add_arguments(sub.add_parser(name, help=help, description=help))
    return parser


# Each command's input and output arguments (attribute names; a value may be a list of paths): no
# output may be an input, and no write of the run replaces an input (tensorqa.outputs.protect_inputs).
PATHS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pack": (("charades", "action_genome", "agqa_stsgs", "clevr_scenes"), ("out",)),
    "export-agqa": (("store",), ("out",)),
    "generate": (("store", "templates_dir", "synonyms"), ("out",)),
    "ablate": (("store", "scenes"), ("out", "questions")),
    "balance": (("pool",), ("out",)),
    "split": (("pool", "train_videos", "steps_table", "novel"), ("out",)),
    "decompose": (("pool", "store"), ("out",)),
    "evaluate": (("hierarchies", "predictions"), ("out",)),
    "baseline": (("hierarchies", "pool", "fit"), ("out",)),
    "show": (("store", "pool"), ("out",)),
    "report": (("pool", "compare"), ("out",)),
    "foils": (("store",), ("out",)),
    "score-foils": (("scores", "foils"), ("out",)),
}


def _paths(args: argparse.Namespace, names: tuple[str, ...]) -> list:
    found = []
    for name in names:
        value = getattr(args, name, None)
        for v in value if isinstance(value, list) else [value]:
            if v is not None:
                found.append(v)
    return found


class Terminated(BaseException):
    """SIGTERM: unwinds like an interrupt, so that every writer removes its partial files."""


def _on_sigterm(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def _sigterm_unwinds():
    """SIGTERM raises :class:`Terminated` for the run (Python's default action ends the process at
    once, leaving ``.partial`` files behind); ``generate --jobs`` installs its own for its processes."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (tests calling main from a thread): leave it be
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def main(argv: list[str] | None = None) -> int:
    """Run one command; user errors print one line and return 2.

    The process-wide set-up is made here, not at ``import tensorqa``:
    :func:`tensorqa.startup.configure_process` (Arrow's allocator keeps freed pages, which the
    processes ``--jobs`` spawns inherit through the environment) before any command loads pyarrow."""
    args = build_parser().parse_args(argv)
    configure_process()
    try:
        with _sigterm_unwinds():
            ins, outs = PATHS.get(args.command, ((), ()))
            protect_inputs(_paths(args, ins), [(f"--{n.replace('_', '-')}", v) for n in outs
                                               for v in _paths(args, (n,))])
            return COMMANDS[args.command][1](args)
    except TensorQAError as e:
        print(f"tensorqa: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tensorqa: interrupted (SIGINT)", file=sys.stderr)
        return 130
    except Terminated:
        print("tensorqa: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except BrokenPipeError:  # the reader went away (``tensorqa stats pool | head``): stop quietly
        # the interpreter flushes stdout again at exit, which would raise once more: point it at nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    except OSError as e:  # the file system said no: a path that is a file, not writable, a full disk
        name = str(e.filename).removesuffix(".partial") if e.filename is not None else None  # the file being written
        said = f"{name}: {e.strerror}" if name is not None and e.strerror else str(e)
        print(f"tensorqa: error: {said}", file=sys.stderr)
        return 2
    finally:
        forget_inputs()
