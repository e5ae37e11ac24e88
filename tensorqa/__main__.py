"""``python -m tensorqa ...``: the ``tensorqa`` command line; also the entry point under torchrun, where
``generate`` takes its shard from ``RANK`` / ``WORLD_SIZE``.
"""

import sys

from tensorqa.cli import main

if __name__ == "__main__":
    sys.exit(main())
