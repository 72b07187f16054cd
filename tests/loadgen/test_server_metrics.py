"""Server metrics: the Prometheus text parser, the engines' names mapped onto one vocabulary,
histogram deltas and quantiles, and the scraping thread against a server that counts what it
really sent (tests/loadgen/fault_server.py with metrics=True)."""

import time

import pytest
from fault_server import FaultServer

from llmbench.loadgen import prometheus
from llmbench.loadgen.server_metrics import Scraper, detect_server, extract, histogram_delta

VLLM = """# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 120.0
vllm:generation_tokens_total{engine="1",model_name="m"} 30.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 512.0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 512.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 128.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="length",model_name="m"} 7.0
vllm:request_success_total{finished_reason="stop",model_name="m"} 1.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m \\"quoted\\""} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.25
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 6.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 8.0
vllm:time_to_first_token_seconds_count{model_name="m"} 8.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.4
"""

LLAMACPP = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 64
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 32
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
"""

SGLANG = """sglang:prompt_tokens_total{model_name="m"} 100.0
sglang:generation_tokens_total{model_name="m"} 40.0
sglang:cached_tokens_total{model_name="m"} 25.0
sglang:num_running_reqs{model_name="m"} 4.0
sglang:num_queue_reqs{model_name="m"} 2.0
"""

TGI = """# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="10"} 1
tgi_request_generated_tokens_bucket{le="+Inf"} 3
tgi_request_generated_tokens_sum 48
tgi_request_generated_tokens_count 3
# TYPE tgi_request_success counter
tgi_request_success 3
# TYPE tgi_queue_size gauge
tgi_queue_size 5
"""


def test_small_parser_reads_labels_escapes_and_inf():
    samples = prometheus.parse_small(VLLM)
    assert ("vllm:generation_tokens_total", {"engine": "1", "model_name": "m"}, 30.0) in samples
    running = [s for s in samples if s[0] == "vllm:num_requests_running"]
    assert running == [("vllm:num_requests_running", {"model_name": 'm "quoted"'}, 3.0)]
    assert ("vllm:time_to_first_token_seconds_bucket", {"le": "+Inf", "model_name": "m"}, 8.0) in samples
    assert prometheus.parse_small("x_total 3 1700000000000\nbad line\n") == [("x_total", {}, 3.0)]


def test_both_parsers_agree_where_prometheus_client_is_installed():
    pytest.importorskip("prometheus_client", reason="prometheus_client (comes with vLLM) not installed")
    ours = {(n, tuple(sorted(labels.items())), v) for n, labels, v in prometheus.parse_small(VLLM)}
    theirs = {(n, tuple(sorted(labels.items())), v) for n, labels, v in prometheus.parse(VLLM)
              if not n.endswith("_created")}
    assert ours == theirs


@pytest.mark.parametrize("text, server, want", [
    (VLLM, "vllm", {"generation_tokens": 150.0, "prompt_tokens": 512.0, "prefix_cache_hits": 128.0,
                    "prefix_cache_queries": 512.0, "requests_finished": 8.0,
                    "requests_running": 3.0, "kv_cache_usage": 0.25}),
    (LLAMACPP, "llamacpp", {"prompt_tokens": 64.0, "generation_tokens": 32.0,
                            "requests_running": 2.0, "requests_waiting": 1.0}),
    (SGLANG, "sglang", {"prompt_tokens": 100.0, "generation_tokens": 40.0, "prefix_cache_hits": 25.0,
                        "prefix_cache_queries": 100.0, "requests_running": 4.0,
                        "requests_waiting": 2.0}),
    (TGI, "tgi", {"generation_tokens": 48.0, "requests_finished": 3.0, "requests_waiting": 5.0}),
])
def test_each_engine_maps_onto_one_vocabulary(text, server, want):
    samples = prometheus.parse_small(text)
    assert detect_server(samples) == server
    assert extract(samples, server).values == want


def test_histogram_delta_and_bucket_quantiles():
    h1 = extract(prometheus.parse_small(VLLM), "vllm").hist["ttft_s"]
    assert h1["count"] == 8 and h1["0.1"] == 6
    empty = {"0.01": 0.0, "0.1": 0.0, "+Inf": 0.0, "sum": 0.0, "count": 0.0}
    d = histogram_delta(empty, h1)
    assert d["count"] == 8 and d["mean_s"] == pytest.approx(0.05)
    # rank 4 of 8 lies in (0.01, 0.1], 2 of its 4 observations in: halfway
    assert d["p50_s"] == pytest.approx(0.055)
    assert d["p99_s"] == pytest.approx(0.1)          # the +Inf bucket: its lower edge
    assert histogram_delta(h1, h1)["count"] == 0 and histogram_delta(h1, h1)["p50_s"] is None


def test_scraper_counts_the_tokens_sent_between_start_and_stop():
    with FaultServer(["ok"], metrics=True) as s:
        s.gen_tokens = 1000                      # earlier traffic: must not count
        sc = Scraper(s.url, interval_s=0.05)
        sc.start()
        t0 = time.perf_counter()
        s.gen_tokens += 37
        time.sleep(0.3)
        sc.stop()
        scrapes = s.metrics_scrapes
    summ = sc.summary(t0)
    assert summ["available"] and summ["server"] == "vllm"
    assert summ["counters"]["generation_tokens"] == 37
    assert scrapes >= 4 and summ["scrapes"] >= 4               # the thread scraped meanwhile
    run = summ["gauges"]["requests_running"]
    assert len(run["t_s"]) == summ["scrapes"] and run["max"] == 0
    assert summ["scrape_cpu_s"] > 0


def test_a_server_without_metrics_is_said_so():
    with FaultServer(["ok"]) as s:
        sc = Scraper(s.url, interval_s=0.05)
        sc.start()
        sc.stop()
    summ = sc.summary(0.0)
    assert summ == {"available": False, "endpoint": "/metrics",
                    "reason": "GET /metrics answered HTTP 404 (this server exposes no Prometheus metrics)"}


def test_server_histograms_stand_beside_the_clients_metrics():
    from llmbench.kinds.serving.summary import server_view

    h1 = extract(prometheus.parse_small(VLLM), "vllm").hist["ttft_s"]
    empty = {"0.01": 0.0, "0.1": 0.0, "+Inf": 0.0, "sum": 0.0, "count": 0.0}
    sm = {"available": True, "counters": {"generation_tokens": 5.0}, "prefix_cache_hit_rate": 0.25,
          "histograms": {"ttft_s": histogram_delta(empty, h1), "itl_s": histogram_delta(h1, h1)}}
    metrics, serving, notes = {}, {"output_tokens": 5}, []
    server_view(sm, metrics, serving, notes)
    assert metrics["server_ttft_s"].n == 8 and metrics["server_ttft_s"].mean == pytest.approx(0.05)
    assert metrics["server_ttft_s"].p50 == pytest.approx(0.055)
    assert "server_itl_s" not in metrics                     # nothing observed: no numbers
    assert metrics["prefix_cache_hit_rate"].mean == 0.25 and not notes
    server_view({**sm, "counters": {"generation_tokens": 7.0}}, {}, serving, notes)
    assert notes and "counted 7 generated tokens" in notes[0]
