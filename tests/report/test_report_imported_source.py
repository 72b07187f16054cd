"""Records imported from another tool (llmbench import TOOL PATH) are told apart from the
project's own and from the published study: `source` is 'imported: TOOL', so the dashboard's and
the report's source filter shows them beside the project's own."""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

from llmbench.report import data as data_mod  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


def test_imported_tool_records_have_their_own_source(tmp_path):
    from llmbench.cli import main

    store = tmp_path / "store"
    assert main(["import", "vllm-bench", str(FIXTURES / "vllm-bench-serve.json"), "--results", str(store)]) in (0, None)
    shutil.copytree(Path(__file__).resolve().parents[2] / "results" / "h200", store / "h200")
    df = data_mod.load(store).df
    assert "own" in set(df["source"])
    imported = df[df["source"].str.startswith("imported: ")]
    assert len(imported) and imported["engine"].str.contains(r"\(vllm").all()
    assert "source" in data_mod.load(store).filter_fields()
