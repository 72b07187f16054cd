"""The dashboard's compare view (no browser): run ids offered, the same per-point changes and
verdicts as `llmbench compare`, and the view wired into the app."""

import random

from llmbench.dashboard import compare as view
from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store


def _rec(run, mean, seed, threads):
    rnd = random.Random(seed)
    lat = [mean * (1 + rnd.gauss(0, 0.02)) for _ in range(5)]
    return Record(run_id=run, point_key="k", kind="inference",
                  backend=BackendInfo(name="llamacpp", options={"n_threads": threads}),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name="cpu"),
                  workload={"batch_size": 1, "input_len": 8, "output_len": 8},
                  metrics={"batch_latency_s": summarize(lat, "s")})


def test_compare_view_rows_and_app_tab(tmp_path):
    s = Store(tmp_path)
    s.write(_rec("A", 1.0, 1, 1))
    s.write(_rec("B", 0.5, 2, 2))
    assert view.run_ids(tmp_path) == ["A", "B"]
    (row,) = view.rows(tmp_path, "A", "B")
    assert row["metric"] == "batch_latency_s" and row["verdict"] == "faster"
    assert row["change"].startswith("-") and row["95% CI"].startswith("[-")
    assert view.rows(tmp_path, "A", None) == []
    from llmbench.dashboard.app import create_app

    app = create_app(tmp_path, poll_s=60)
    assert "cmp-base" in str(app.layout()) and any("cmp-out" in k for k in app.callback_map)


def test_run_ids_are_the_directories_holding_a_record(tmp_path):
    """Known answers: a run with records, one without, a hidden one, a directory whose only
    .json is itself a directory, a linked run, and files beside the runs (not runs)."""
    for d, files in {"A": ["r1.json", "r2.json"], "B": ["notes.txt"], ".hidden": ["r.json"],
                     "C": [], "D": [".r.json"], "E": ["r.JSON"]}.items():
        (tmp_path / d).mkdir()
        for f in files:
            (tmp_path / d / f).write_text("{}")
    (tmp_path / "C" / "sub.json").mkdir()   # glob('*.json') matches a directory too
    (tmp_path / "top.json").write_text("{}")
    (tmp_path / "L").symlink_to(tmp_path / "A", target_is_directory=True)
    assert view.run_ids(tmp_path) == [".hidden", "A", "C", "D", "L"]
    assert view.run_ids(tmp_path / "missing") == []
    assert view.run_ids(tmp_path / "top.json") == []
