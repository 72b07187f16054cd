import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))



@pytest.fixture(scope="session")
def fixture_store(tmp_path_factory):
    from report_records import write_store

    root = tmp_path_factory.mktemp("store")
    write_store(root)
    return root
