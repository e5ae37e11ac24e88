"""Test-wide fixtures. The one place that knows where the real records live."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# Real records we may not redistribute (Charades annotations, Action Genome class lists, AGQA and VALSE
# records): the folder ``shared/data`` beside the checkout, where CI keeps it, or TENSORQA_REAL_DATA.
REAL_DATA = Path(os.environ.get("TENSORQA_REAL_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real records; the test skips, saying why, where it is absent (a user's clone)."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"needs the real Charades / Action Genome / AGQA / VALSE records, which tensorqa may not "
                    f"redistribute: {REAL_DATA} is absent (set TENSORQA_REAL_DATA to a folder holding them)")
    return REAL_DATA
