"""``python -m tensorqa.cli``: the command line."""

import sys

from tensorqa.cli import main

sys.exit(main())
