"""The table of subcommands: each command module registers its commands here with :func:`command`."""

from __future__ import annotations

import argparse
from typing import Callable

# name -> (add_arguments, run, help)
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {}


def command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]):
    """Register a subcommand: a decorator on its run function, with its argument builder."""

    def wrap(run):
        COMMANDS[name] = (arguments, run, help)
        return run

    return wrap
