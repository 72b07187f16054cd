"""`llmbench serve --workers N` end to end: the record of a two-process point is the record
of a one-process point (same metrics, every request counted), and says how it was driven."""

import pytest

from tests.cli.test_serve import FaultServer, records, serve


def test_two_workers_give_the_same_record(tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=0.01, itl_s=0.002) as s:
        code, text = serve([s.url, "-c", "4", "-n", "12", "--output-len", "8", "--workers", "2",
                            "--warmup-requests", "0", "--no-server-metrics", "--results", str(tmp_path)], capsys)
        prompts = [b["prompt"] for b in s.bodies]
    assert code == 0, text
    assert len(prompts) == 12 and len(set(prompts)) == 12    # each prompt once, none lost
    (r,) = records(tmp_path)
    assert r.status == "ok" and r.workload["client_workers"] == 2
    assert r.serving["client"]["processes"] == 2 and r.serving["client"]["connections_opened"] == 4
    m = r.metrics
    assert m["ttft_s"].n == 12 and m["itl_s"].n == 12 * 7 and m["ttft_s"].min >= 0.01
    assert m["inflight_mean"].mean <= 4 and r.serving["output_tokens"] == 12 * 8


@pytest.mark.parametrize("extra", [["--turns", "2"], ["--workers", "0"]])
def test_workers_refused_where_they_cannot_work(tmp_path, capsys, extra):
    code, text = serve(["http://127.0.0.1:9", "-c", "2", "-n", "4", "--workers", "2", *extra,
                        "--results", str(tmp_path)], capsys)
    assert code == 2 and "--workers" in text
