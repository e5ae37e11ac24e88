"""Fixtures of the AGQA tests."""

import json

import pytest


@pytest.fixture(scope="module")
def real_records(shared_data) -> dict:
    """AGQA's released balanced-test example records, keyed by question id (skipped without the data)."""
    text = (shared_data / "agqa" / "test_balanced_example.json").read_text()
    records, _ = json.JSONDecoder().raw_decode(text)  # the file has one stray trailing "}"
    return records
