import sys
from pathlib import Path

import pytest

# The record fixtures and browser helpers live beside the report tests.
sys.path.insert(0, str(Path(__file__).parents[1] / "report"))

pytest.importorskip("dash", reason="the dashboard extra is not installed")


@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory):
    from report_records import write_store

    root = tmp_path_factory.mktemp("store")
    write_store(root)
    return root
