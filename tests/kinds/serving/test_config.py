"""ServeConfig's and ServeTarget's validators hold every rule `llmbench serve` checks: each
refusal names the flag to change."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.kinds.serving.kind import ServeTarget, read_api_key

TRACE = Path(__file__).parents[2] / "loadgen" / "traces" / "azure_small.csv"


@pytest.mark.parametrize("kw, flag, words", [
    (dict(num_prompts=3, duration_s=2), "--num-prompts / --duration", "not both"),
    (dict(dataset=Path("/no/such/file.json")), "--dataset", "is not a file"),
    (dict(rate=[2.0], concurrency=[4], max_concurrency=4), "--max-concurrency", "not both"),
    (dict(turns=2, rate=[3.0]), "--turns", "closed-loop"),
    (dict(turns=2, duration_s=5), "--turns", "closed-loop"),
    (dict(workers=2, turns=2), "--workers", "independent requests"),
    (dict(workers=2, find_max_rate=True, slo={"ttft_s": 1}), "--workers", "independent requests"),
    (dict(trace=TRACE, trace_format="csv"), "--trace-format", "mooncake"),
    (dict(trace=Path("/no/such/trace.csv")), "--trace", "is not a file"),
    (dict(trace=TRACE, rate=[2.0], duration_s=3), "--trace", "drop --rate, --duration"),
    (dict(find_max_rate=True), "--find-max-rate", "needs --slo"),
    (dict(find_max_rate=True, slo={"ttft_s": 1}, concurrency=[4]), "--find-max-rate", "drop --concurrency"),
    (dict(find_max_rate=True, slo={"ttft_s": 1}, rate=[1.0, 2.0]), "--find-max-rate", "at most one --rate"),
])
def test_a_rule_across_fields_names_its_flag(kw, flag, words):
    with pytest.raises(SpecError) as e:
        ServeConfig(**kw)
    [(field, message)] = e.value.problems
    assert field == flag and words in message


@pytest.mark.parametrize("kw, field", [
    (dict(concurrency=[4, 0]), "concurrency"), (dict(rate=[-1.0]), "rate"),
    (dict(metrics_interval_s=0), "metrics_interval_s"), (dict(workers=0), "workers"),
    (dict(shared_prefix=1.0), "shared_prefix"), (dict(api="grpc"), "api"),
    (dict(trace_speedup=0), "trace_speedup"), (dict(max_input_len=0), "max_input_len"),
])
def test_a_range_is_a_field_error(kw, field):
    with pytest.raises(ValidationError) as e:
        ServeConfig(**kw)
    assert e.value.errors()[0]["loc"][0] == field


def test_what_the_rules_allow():
    assert ServeConfig(trace=TRACE, max_concurrency=4).trace == TRACE
    assert ServeConfig(find_max_rate=True, slo={"ttft_s": 1}, rate=[2.0]).find_max_rate
    assert ServeConfig(turns=3, concurrency=[2], num_prompts=4).schedules()[0].num_prompts == 12


def test_a_target_is_a_url_or_a_launched_server_never_both():
    for kw in ({}, {"url": "http://127.0.0.1:9", "launch": "llamacpp"}):
        with pytest.raises(SpecError) as e:
            ServeTarget(**kw)
        assert e.value.problems[0][0] == "URL / --launch"
    assert ServeTarget(launch="vllm").launch == "vllm"


def test_the_api_key_comes_from_the_file_else_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "from-env")
    key = tmp_path / "key"
    key.write_text("  from-file\n")
    assert read_api_key("MY_KEY", key) == "from-file"
    assert read_api_key("MY_KEY", None) == "from-env"
    monkeypatch.delenv("MY_KEY")
    assert read_api_key("MY_KEY", None) is None
    with pytest.raises(SpecError) as e:
        read_api_key("MY_KEY", tmp_path / "absent")
    assert e.value.problems[0][0] == "--api-key-file"


def test_power_sampling_is_checked_and_not_part_of_the_point():
    from llmbench.kinds.serving.kind import serve_points

    with pytest.raises(ValidationError):
        ServeConfig(power_sampling="sparse")
    target = ServeTarget(url="http://127.0.0.1:8000")
    auto, off = (serve_points(ServeConfig(concurrency=[1], power_sampling=s), target)[0]
                 for s in ("auto", "off"))
    assert off.cfg.power_sampling == "off" and auto.key == off.key
