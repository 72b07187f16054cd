"""The report counts and names points measured while other work shared the machine."""

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")


def test_report_names_contended_points(tmp_path):
    from llmbench.report.html import write_report
    from llmbench.store import Store
    from tests.store.test_store import rec

    s = Store(tmp_path / "res")
    for bs, flag in ((1, True), (2, False), (4, None)):
        r = rec(bs=bs)
        if flag is not None:
            r.env["contention"] = {"contended": flag}
        s.write(r)
    rep = write_report(tmp_path / "res", tmp_path / "rep", png=False)
    html = rep.html.read_text()
    assert "<b>1</b><span>contended</span>" in html
    # counted by kind, with the command that lists them: never a list of raw point keys
    assert ("1 point(s) were measured while other work shared the machine (each record's "
            "env.contention says what) (inference 1; <code>llmbench results --where contended"
            "</code> lists them)</p>") in html
