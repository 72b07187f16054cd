"""The report says which roofline version each efficiency comes from, and names the points
whose energy was read over a window under 2 s."""

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")


def test_report_shows_roofline_versions_and_short_energy_windows(tmp_path):
    from llmbench.reannotate import reannotate
    from llmbench.report import data, tables
    from llmbench.report.html import write_report
    from llmbench.store import Store
    from tests.roofline.test_reannotate import old_decode_record

    s = Store(tmp_path / "res")
    old = old_decode_record()
    old.point_key = "k-old"
    s.write(old)                                  # stored before versioning: version 1
    new = reannotate(old_decode_record(), path=None).record
    new.point_key = "k-new"
    s.write(new)
    html = write_report(tmp_path / "res", tmp_path / "rep", png=False).html.read_text()
    assert ("Roofline bounds and efficiencies by version (version 1: 1 record(s), version 3: "
            "1 record(s); today's is 3). 1 record(s) carry an older version") in html
    assert "llmbench annotate --results DIR" in html
    # both records' batches lasted 0.83-0.85 s, each its own energy window
    assert "2 point(s) read their energy over a window under 2 s" in html
    assert "(inference 2; <code>llmbench results --where energy_short_window</code>" in html
    rows, _ = tables.kind_table(data.load(tmp_path / "res").df, "inference")
    # one configuration, two versions: never merged into one mean
    assert sorted((r["roofline v"], r["efficiency (total)"]) for r in rows) == [
        ("1", f"{304.0 / 596.81:.1%}"),
        ("3", f"{304.0 / new.roofline.bound['total_throughput_tok_s']:.1%}")]
