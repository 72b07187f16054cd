"""Speculative decoding without an engine: the --speculative option and what each engine makes
of it, the server's acceptance counters from captured vLLM /metrics text, the client's tokens
per chunk, the greedy comparison, the copy and random-id prompts, and the usage errors."""

from pathlib import Path

import pytest
from tests.conftest import cli

from llmbench.backends.options import EngineOptions
from llmbench.backends.speculation import Speculation, parse_speculation
from llmbench.errors import SpecError
from llmbench.kinds.serving.speculation import acceptance, chunk_view, compare_greedy, speculation_view

FIXTURE = Path(__file__).parents[2] / "fixtures" / "vllm" / "spec_decode_metrics.txt"


# -- the option --------------------------------------------------------------------------------
def test_the_flag_text_parses_to_its_fields():
    assert parse_speculation("ngram") == Speculation(method="ngram", k=4)
    assert parse_speculation("ngram:k=3,min=2,max=5") == Speculation(method="ngram", k=3, ngram_min=2,
                                                                     ngram_max=5)
    d = parse_speculation("draft:/models/tiny,k=2")
    assert (d.method, d.draft_model, d.k) == ("draft", "/models/tiny", 2)
    assert parse_speculation("none") is None and parse_speculation(None) is None
    assert parse_speculation("ngram:k=3,max=5").label == "ngram:k=3,max=5"


@pytest.mark.parametrize("text,phrase", [
    ("ngrma:k=4", "did you mean 'ngram'"),
    ("ngram:kk=4", "unknown setting 'kk'"),
    ("ngram:k=four", "whole number"),
    ("ngram:k=0", "greater than or equal to 1"),
    ("draft", "names its draft model"),
    ("ngram:min=5,max=2", "min=5 > max=2"),
])
def test_bad_flag_text_names_the_flag(text, phrase):
    with pytest.raises(SpecError) as e:
        parse_speculation(text)
    assert e.value.problems[0][0] == "--speculative" and phrase in e.value.problems[0][1]


def test_no_speculation_leaves_the_options_dump_and_so_every_point_key_as_it_was():
    assert "speculative" not in EngineOptions().model_dump()
    assert EngineOptions(speculative="ngram:k=2").model_dump()["speculative"]["k"] == 2


def test_each_engine_turns_it_on_its_own_way_or_refuses():
    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.backends.sglang import SglangBackend
    from llmbench.backends.vllm import VllmBackend, speculative_config

    ng = parse_speculation("ngram:k=3,min=2,max=4")
    assert speculative_config(ng) == {"method": "ngram", "num_speculative_tokens": 3,
                                      "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    assert VllmBackend.speculation_args(ng)[0] == "--speculative-config"
    assert LlamaCppBackend.speculation_args(parse_speculation("ngram:k=6")) == \
        ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", "6"]
    for engine, spec, phrase in ((LlamaCppBackend, "draft:x", "cannot load a draft model"),
                                 (LlamaCppBackend, "ngram:max=4", "2 then 1 token"),
                                 (SglangBackend, "ngram", "does not know how")):
        with pytest.raises(SpecError, match=phrase):
            engine.speculation_args(parse_speculation(spec))


def test_in_process_only_vllm_takes_it():
    from llmbench.backends.call import EngineCall
    from llmbench.backends.llamacpp import LlamaCppBackend
    from llmbench.backends.vllm import VllmBackend
    from llmbench.models.sources import resolve

    call = EngineCall(model="smollm2-135m", options=EngineOptions(speculative="ngram:k=4"))
    ref = resolve("smollm2-135m")
    assert not [p for p in VllmBackend.check(call, ref) if "speculative" in p[0]]
    assert ("options.speculative", "backend 'llamacpp' does not support it (supported: kv_cache_dtype)") \
        in LlamaCppBackend.check(call, ref)


# -- the server's counters -----------------------------------------------------------------------
def test_captured_vllm_text_gives_acceptance_by_hand():
    """The captured page (one request of 24 tokens): 1 draft of 4 tokens, 3 accepted, so
    acceptance 3/4 and 1 + 3/1 = 4 tokens from that step."""
    from llmbench.loadgen.prometheus import parse_small
    from llmbench.loadgen.server_metrics import detect_server, extract, wanted

    samples = parse_small(FIXTURE.read_text(), wanted("vllm"))
    assert detect_server(samples) == "vllm"
    values = extract(samples, "vllm").values
    assert (values["spec_drafts"], values["spec_draft_tokens"], values["spec_accepted_tokens"]) == (1, 4, 3)
    assert acceptance(values) == {"acceptance_rate": 0.75, "accepted_len": 4.0}


def test_no_draft_means_no_acceptance_not_zero():
    assert acceptance({"spec_drafts": 0, "spec_draft_tokens": 0, "spec_accepted_tokens": 0}) == \
        {"acceptance_rate": None, "accepted_len": None}
    assert acceptance({}) == {"acceptance_rate": None, "accepted_len": None}


# -- the client's chunks ---------------------------------------------------------------------------
def test_tokens_per_chunk_leave_the_first_chunk_out():
    # request A: prefill chunk 1, then 3, 1, 5 tokens; request B: 1 then 2
    a = [(0.0, 1), (0.1, 3), (0.2, 1), (0.3, 5)]
    b = [(0.0, 1), (0.1, 2)]
    v = chunk_view([a, b])
    assert v == {"decode_chunks": 4, "decode_tokens": 11, "tokens_per_chunk": 11 / 4,
                 "chunk_surplus_tokens": 7}


class _O:
    ok = True

    def __init__(self, events):
        from llmbench.measure.timeline import RequestTimeline

        self.timeline = RequestTimeline(t_ref=0.0, events=events)


def test_the_point_record_carries_both_views_and_a_note_only_when_they_disagree():
    outcomes = [_O([(0.0, 1), (0.1, 5), (0.2, 3)])]     # surplus 4 + 2 = 6
    sm = {"counters": {"spec_drafts": 2, "spec_draft_tokens": 8, "spec_accepted_tokens": 6}}
    metrics, serving, notes = {}, {}, []
    speculation_view(outcomes, sm, metrics, serving, notes)
    assert metrics["spec_acceptance_rate"].mean == 0.75 and metrics["spec_accepted_len"].mean == 4.0
    assert metrics["tokens_per_chunk"].mean == 4.0 and notes == []
    assert serving["speculation"]["chunk_surplus_tokens"] == 6
    notes = []   # more tokens per chunk than the server accepted: merged chunks
    speculation_view(outcomes, {"counters": {**sm["counters"], "spec_accepted_tokens": 2}}, {}, {}, notes)
    assert notes and "merged" in notes[0]


def test_a_server_without_spec_counters_gets_tokens_per_chunk_only():
    metrics, serving, notes = {}, {}, []
    speculation_view([_O([(0.0, 1), (0.1, 1), (0.2, 1)])], {"counters": {"generation_tokens": 3}},
                     metrics, serving, notes)
    assert metrics["tokens_per_chunk"].mean == 1.0
    assert "spec_acceptance_rate" not in metrics and "speculation" not in serving


# -- the greedy comparison -----------------------------------------------------------------------
def test_compare_greedy_first_divergence_and_fraction():
    ref = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 9]]
    got = [[1, 2, 3, 4], [5, 6, 0, 8], [9, 9]]
    c = compare_greedy(ref, got)
    assert c == {"prompts": 3, "identical": 2, "match_fraction": 8 / 10, "first_divergence": [None, 2, None]}
    assert compare_greedy([[1, 2]], [[1]])["first_divergence"] == [1]   # a shorter answer differs


# -- prompts ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tok():
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m")


def test_copy_prompts_hold_their_passage_and_the_asked_length(tok):
    from llmbench.kinds.serving.config import LengthDist
    from llmbench.kinds.serving.prompts import COPY_HEAD, COPY_TAIL, copy_prompts

    specs = copy_prompts(tok, 6, LengthDist.parse("96"), LengthDist.parse("32"), seed=0)
    assert len({s.prompt for s in specs}) == 6
    for s in specs:
        assert s.prompt.startswith(COPY_HEAD) and s.prompt.endswith(COPY_TAIL)
        assert s.prompt_len == tok.count_prompt(s.prompt) == 96 and s.output_len == 32
        passage = s.prompt[len(COPY_HEAD):-len(COPY_TAIL)]
        assert len(tok.encode(passage)) >= 96 - tok.count_prompt(COPY_HEAD + COPY_TAIL) - 2


def test_random_id_prompts_have_the_asked_length(tok):
    from llmbench.kinds.serving.config import LengthDist
    from llmbench.kinds.serving.prompts import random_id_prompts

    specs = random_id_prompts(tok, 4, LengthDist.parse("64"), LengthDist.parse("16"), seed=0)
    assert all(s.prompt_len == tok.count_prompt(s.prompt) == 64 for s in specs)
    assert len({s.prompt for s in specs}) == 4


# -- usage errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,phrase", [
    (["serve", "localhost:9", "--speculative", "ngram"], "server llmbench launches"),
    (["serve", "--launch", "llamacpp", "--speculative", "draft:x", "--list-points"], "cannot load a draft model"),
    (["serve", "--launch", "vllm", "--check-speculation", "2", "--list-points"], "give --speculative"),
    (["serve", "--launch", "vllm", "--speculative", "ngrm", "--list-points"], "did you mean 'ngram'"),
    (["serve", "--launch", "vllm", "--prompts", "copy", "--shared-prefix", "0.5", "--list-points"],
     "drop --shared-prefix"),
    (["run", "-b", "llamacpp", "--speculative", "ngram:k=4", "--list-points"], "does not support it"),
])
def test_usage_mistakes_exit_2(argv, phrase, capsys):
    code, text = cli(argv, capsys)
    assert code == 2 and phrase in text and "Traceback" not in text, text


def test_speculation_is_part_of_a_launched_point_and_absent_from_an_ordinary_one():
    from llmbench.kinds.serving.config import ServeConfig
    from llmbench.kinds.serving.kind import ServeTarget, serve_points

    cfg = ServeConfig(concurrency=[1])
    plain = ServeTarget(launch="vllm", device="cpu")
    spec = ServeTarget(launch="vllm", device="cpu", speculative=parse_speculation("ngram:k=4"))
    assert "speculative" not in plain.identity()
    assert serve_points(cfg, plain)[0].key != serve_points(cfg, spec)[0].key
    assert spec.launch_args()[0] == "--speculative-config"
    assert serve_points(cfg, plain)[0].key == serve_points(cfg.model_copy(update={"prompts": "text"}), plain)[0].key
