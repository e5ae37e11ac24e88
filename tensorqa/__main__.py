"""``python -m tensorqa ...``: the same command line as the ``tensorqa`` script.

This is also the entry point under torchrun (``torchrun --nproc-per-node=G -m tensorqa generate
STORE --out DIR``): each rank runs the CLI once, and ``generate`` takes its shard from torchrun's
``RANK`` / ``WORLD_SIZE``.
"""

import sys

from tensorqa.cli import main

if __name__ == "__main__":
    sys.exit(main())
