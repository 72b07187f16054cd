"""The SGLang backend on the CPU (issue 39): its server command line, its option validation, its
/metrics mapping (against a fixture CONSTRUCTED from SGLang 0.5.17's source, see its header),
and its generate path against a fake `sglang` module whose Engine streams chunks at known times.
SGLang itself runs only on the H200 (not yet)."""

import asyncio
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from pydantic import ValidationError

from llmbench.backends import backend_class
from llmbench.backends.call import EngineCall
from llmbench.backends.options import EngineOptions
from llmbench.backends.sglang import SglangBackend, SglangOptions
from llmbench.errors import EngineError, SpecError
from llmbench.models.sources import resolve

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sglang" / "metrics_0.5.17_constructed.txt"


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text('{"vocab_size": 128256, "max_position_embeddings": 8192}')
    monkeypatch.setattr("llmbench.models.sources.model_path", lambda name, fmt="gguf", **kw: d)
    return d


# -- the server's command line --------------------------------------------------------------------
def test_server_command_for_a_synthetic_model_loads_dummy_weights_and_its_tokenizer(model_dir):
    cmd = SglangBackend.server_command("llama-3-8b", 8123, "cuda:2")
    assert cmd.argv == [sys.executable, "-m", "sglang.launch_server", "--model-path", str(model_dir),
                        "--host", "127.0.0.1", "--port", "8123", "--enable-metrics",
                        "--served-model-name", "llama-3-8b",
                        "--load-format", "dummy", "--tokenizer-path", str(model_dir),
                        "--base-gpu-id", "2"]
    assert cmd.env == {} and cmd.health_path == "/health"


def test_server_command_for_the_bundled_model_loads_its_weights(model_dir):
    cmd = SglangBackend.server_command("smollm2-135m", 8123, "cuda")
    assert cmd.argv[3:] == ["--model-path", str(model_dir), "--host", "127.0.0.1", "--port", "8123",
                            "--enable-metrics", "--served-model-name", "smollm2-135m"]


def test_server_command_refuses_the_cpu(model_dir):
    with pytest.raises(SpecError) as e:
        SglangBackend.server_command("llama-3-8b", 8123, "cpu")
    assert e.value.problems[0][0] == "device"


def test_it_is_registered_as_an_in_process_and_launchable_engine():
    assert backend_class("sglang") is SglangBackend and SglangBackend.launches


# -- options ---------------------------------------------------------------------------------------
def _call(**kw):
    base = dict(model="llama-3-8b", device="cuda", dtype="bf16", batch_size=2, input_len=4, output_len=5)
    return EngineCall(**{**base, **kw})


def test_good_options_pass_and_reach_the_engine_arguments(model_dir):
    call = _call(device="cuda:1", options=EngineOptions(tensor_parallel=2, kv_cache_dtype="fp8",
                                                        weight_quant="fp8"),
                 backend_options={"attention_backend": "fa3", "chunked_prefill_size": -1,
                                  "cuda_graph": False, "mem_fraction_static": 0.8,
                                  "cuda_graph_max_bs_decode": 64})
    assert SglangBackend.check(call, resolve("llama-3-8b")) == []
    kw = SglangBackend(call, resolve("llama-3-8b")).engine_kwargs()
    assert kw == dict(model_path=str(model_dir), dtype="bfloat16", tp_size=2, pp_size=1, random_seed=0,
                      log_level="error", disable_radix_cache=True, sampling_backend="pytorch",
                      disable_cuda_graph=True, skip_tokenizer_init=True, load_format="dummy",
                      base_gpu_id=1, kv_cache_dtype="fp8_e4m3", quantization="fp8",
                      attention_backend="fa3", mem_fraction_static=0.8, chunked_prefill_size=-1,
                      cuda_graph_max_bs_decode=64)


@pytest.mark.parametrize("options, field", [
    (EngineOptions(kv_cache_dtype="q8_0"), "options.kv_cache_dtype"),
    (EngineOptions(weight_quant="int4"), "options.weight_quant"),
    (EngineOptions(kv_block_size=16), "options.kv_block_size"),
    (EngineOptions(compile=True), "options.compile"),
    (EngineOptions(attn_impl="sdpa"), "options.attn_impl"),
])
def test_options_sglang_cannot_honour_are_refused_with_the_field_named(options, field):
    problems = SglangBackend.check(_call(options=options), resolve("llama-3-8b"))
    assert [f for f, _ in problems] == [field]


def test_the_cpu_and_perplexity_are_refused():
    fields = [f for f, _ in SglangBackend.check(_call(device="cpu", workload="perplexity"),
                                                resolve("llama-3-8b"))]
    assert fields == ["workload", "workload", "device"]


@pytest.mark.parametrize("bad", [{"attention_backend": "flash"}, {"chunked_prefill_size": 0},
                                 {"mem_fraction_static": 1.5}, {"cuda_graph_max_bs": 8},
                                 {"sampling_backend": "numpy"}])
def test_bad_or_unknown_backend_options_are_refused(bad):
    with pytest.raises(ValidationError) as e:
        SglangOptions(**bad)
    assert next(iter(bad)) in str(e.value)


# -- /metrics ----------------------------------------------------------------------------------------
def test_metric_mapping_against_the_constructed_0_5_17_exposition():
    from llmbench.loadgen.prometheus import parse_small
    from llmbench.loadgen.server_metrics import detect_server, extract, histogram_delta

    samples = parse_small(FIXTURE.read_text())
    assert detect_server(samples) == "sglang"
    s = extract(samples, "sglang")
    # by hand from the fixture: label sets summed
    assert s.values == {"prompt_tokens": 4096.0, "generation_tokens": 512.0, "preemptions": 2.0,
                        "prefix_cache_queries": 4096.0, "prefix_cache_hits": 640.0,
                        "requests_finished": 4.0, "requests_running": 16.0, "requests_waiting": 5.0,
                        "kv_cache_usage": 0.37}
    assert sorted(s.hist) == ["e2e_s", "itl_s", "queue_s", "ttft_s"]
    q = histogram_delta({}, s.hist["queue_s"])
    assert q["count"] == 4.0 and q["mean_s"] == pytest.approx(0.05)
    assert q["p50_s"] == pytest.approx(0.05)      # rank 2 = the top of the 0.05 bucket
    itl = histogram_delta({}, s.hist["itl_s"])
    assert itl["mean_s"] == pytest.approx(0.01)
    assert "sglang:time_per_output_token_seconds" not in str(SglangBackend.prometheus)


# -- generate through a fake sglang ------------------------------------------------------------------
class _Clock:
    now = 9.0


SCHEDULE = {  # first prompt token -> [(arrival time, cumulative completion_tokens)]
    100: [(10.0, 1), (10.5, 4), (11.0, 5)],   # the second chunk brings 3 tokens at once
    200: [(10.2, 1), (10.7, 3), (10.7, 3), (11.2, 5)],   # a repeated chunk adds nothing
}


class _FakeEngine:
    made: list = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.server_args = types.SimpleNamespace(attention_backend="fa3", chunked_prefill_size=8192,
                                                 tp_size=kwargs["tp_size"])
        self.loop = asyncio.new_event_loop()
        self.shutdowns = 0
        self.requests = []
        _FakeEngine.made.append(self)

    async def async_generate(self, input_ids, sampling_params, stream):
        assert stream is True
        self.requests.append((input_ids, sampling_params))

        async def chunks():
            for t, done in SCHEDULE[input_ids[0]]:
                await asyncio.sleep(0)
                _Clock.now = t
                yield {"output_ids": [7] * done,
                       "meta_info": {"completion_tokens": done, "prompt_tokens": len(input_ids)}}
        return chunks()

    def shutdown(self):
        self.shutdowns += 1
        self.loop.close()


@pytest.fixture
def fake_sglang(monkeypatch, model_dir):
    monkeypatch.setitem(sys.modules, "sglang", types.SimpleNamespace(Engine=_FakeEngine))
    monkeypatch.setattr("llmbench.backends.sglang.time",
                        types.SimpleNamespace(perf_counter=lambda: _Clock.now))
    _FakeEngine.made.clear()
    _Clock.now = 9.0
    return _FakeEngine


def _loaded():
    b = SglangBackend(_call(), resolve("llama-3-8b"))
    b.load()
    return b


def test_token_times_and_counts_are_the_engine_s_chunk_schedule(fake_sglang):
    b = _loaded()
    tls = b.generate([[100, 1, 2], [200, 3, 4, 5]], 5, t_ref=9.0)
    assert tls[0].events == [(10.0, 1), (10.5, 3), (11.0, 1)]
    assert tls[1].events == [(10.2, 1), (10.7, 2), (11.2, 2)]
    assert [t.output_tokens for t in tls] == [5, 5] and [t.prompt_tokens for t in tls] == [3, 4]
    assert tls[0].t_send == 9.0
    engine = fake_sglang.made[0]
    assert engine.requests[0] == ([100, 1, 2], {"max_new_tokens": 5, "ignore_eos": True,
                                                "temperature": 0})


def test_a_prompt_length_the_engine_did_not_see_is_an_error(fake_sglang, monkeypatch):
    b = _loaded()
    real = _FakeEngine.async_generate

    async def shorter(self, input_ids, sampling_params, stream):
        return await real(self, input_ids[:2], sampling_params, stream)  # it drops a token

    monkeypatch.setattr(_FakeEngine, "async_generate", shorter)
    with pytest.raises(EngineError, match="prompt"):
        b.generate([[100, 1, 2]], 5, t_ref=9.0)


def test_version_from_package_metadata_and_options_in_force(fake_sglang, monkeypatch):
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "version",
                        lambda d: "0.5.17" if d == "sglang" else pytest.fail(d))
    b = _loaded()
    assert b.version() == "0.5.17"
    eff = b.effective_options()
    assert eff["resolved_attention_backend"] == "fa3" and eff["resolved_chunked_prefill_size"] == 8192
    assert eff["requested"]["load_format"] == "dummy" and eff["cuda_graph"] is True
    assert b.vocab_size == 128256 and b.context_len == 8192


def test_close_calls_shutdown_once(fake_sglang, monkeypatch):
    # as in llmbench's worker, no other child process lives beside the engine (pytest's own
    # process may hold some from earlier tests, e.g. multiprocessing's resource tracker)
    monkeypatch.setattr(SglangBackend, "_children", lambda self: [])
    b = _loaded()
    b.close()
    b.close()
    assert fake_sglang.made[0].shutdowns == 1


def test_close_spares_a_child_that_predates_the_engine(fake_sglang):
    older = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        b = _loaded()
        with pytest.raises(EngineError, match=str(older.pid)):
            b.close()
        assert fake_sglang.made[0].shutdowns == 0 and older.poll() is None
    finally:
        older.kill()
        older.wait()


def test_module_imports_no_engine():
    code = ("import sys, llmbench.backends.sglang; "
            "heavy = [m for m in ('torch', 'sglang', 'transformers') if m in sys.modules]; "
            "sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_engine_that_fails_to_start_raises_and_leaves_no_engine(fake_sglang, monkeypatch):
    def refuse(self, **kwargs):  # what 0.5.17's ServerArgs does with an unknown field
        raise TypeError("__init__() got an unexpected keyword argument 'cuda_graph_max_bs'")

    monkeypatch.setattr(_FakeEngine, "__init__", refuse)
    b = SglangBackend(_call(), resolve("llama-3-8b"))
    with pytest.raises(TypeError, match="cuda_graph_max_bs"):
        b.load()
    assert getattr(b, "engine", None) is None
    b.close()  # nothing to shut down
