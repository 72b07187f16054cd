"""The span llmbench's vLLM path times, against an engine whose costs are known: a fake engine
(the parts of LLMEngine that generate() calls) advancing a fake clock by fixed amounts for
rendering, add_request and every step. The offline workload's batch_latency_s must be exactly
render + add_requests + every step up to the one that delivered the last token, the same
span `LLM.generate` covers (vLLM's latency benchmark times that call whole; issue 37 item 5a),
and nothing after it."""

import sys
import types
from types import SimpleNamespace

import pytest

from llmbench.backends.vllm import VllmBackend
from llmbench.kinds.inference import offline
from llmbench.kinds.inference.spec import Point
from llmbench.measure.power import EnergyMeter
from llmbench.models.sources import resolve
import llmbench.backends.vllm as vllm_backend

RENDER_S, ADD_S, EMPTY_STEP_S, PREFILL_S, DECODE_S, TAIL_S = 0.003, 0.0005, 0.01, 0.3, 0.1, 0.7
BATCH, IN, OUT = 4, 8, 5


class Clock:
    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def monotonic(self):
        return self.now


class FakeEngine:
    """Renders in RENDER_S, adds a request in ADD_S; its first step schedules nothing
    (EMPTY_STEP_S), the next one prefills (PREFILL_S, one token each), then one token a step
    (DECODE_S each). The loop's check after the last token's step costs TAIL_S (standing for
    whatever follows the last token's stamp), which must stay outside the batch's latency."""

    def __init__(self, clock):
        self.clock, self.live, self.steps, self.tail_due = clock, {}, 0, False
        self.vllm_config = SimpleNamespace(
            scheduler_config=SimpleNamespace(max_num_seqs=8),
            cache_config=SimpleNamespace(block_size=16, num_gpu_blocks=100),
            model_config=SimpleNamespace(get_vocab_size=lambda: 1000, max_model_len=64))
        self.renderer = SimpleNamespace(render_cmpl=self._render)

    def _render(self, prompts):
        self.clock.now += RENDER_S
        return list(prompts)

    def add_request(self, rid, inp, params):
        assert params.output_kind == "DELTA" and params.temperature == 0.0
        self.clock.now += ADD_S
        if not self.live:  # a new batch: its first step schedules nothing again
            self.steps = 0
        self.live[rid] = {"prompt": inp["prompt_token_ids"], "made": 0, "want": params.max_tokens}
        return rid

    def has_unfinished_requests(self):
        if self.tail_due:  # the loop's last check, after the last token's stamp
            self.clock.now += TAIL_S
            self.tail_due = False
        return bool(self.live)

    def step(self):
        self.steps += 1
        if self.steps == 1:
            self.clock.now += EMPTY_STEP_S
            return []
        self.clock.now += PREFILL_S if self.steps == 2 else DECODE_S
        outs = []
        for rid, r in list(self.live.items()):
            r["made"] += 1
            done = r["made"] == r["want"]
            outs.append(SimpleNamespace(request_id=rid, outputs=[SimpleNamespace(token_ids=[7])],
                                        finished=done, metrics=None, prompt_token_ids=r["prompt"]))
            if done:
                del self.live[rid]
                self.tail_due = not self.live
        return outs

    def abort_request(self, ids, internal=False):
        raise AssertionError("nothing to abort")


@pytest.fixture
def fake_vllm(monkeypatch):
    clock = Clock()
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = lambda **kw: SimpleNamespace(**kw)
    sp = types.ModuleType("vllm.sampling_params")
    sp.RequestOutputKind = SimpleNamespace(DELTA="DELTA", FINAL_ONLY="FINAL_ONLY")
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sp)
    fake_time = SimpleNamespace(perf_counter=clock.perf_counter, monotonic=clock.monotonic)
    monkeypatch.setattr(vllm_backend, "time", fake_time)
    monkeypatch.setattr(offline, "time", fake_time)
    return clock


def test_batch_latency_is_render_add_and_steps_to_the_last_token(fake_vllm):
    point = Point(backend="vllm", model="llama-3-8b", device="cpu", batch_size=BATCH, input_len=IN,
                  output_len=OUT, repeats=2, warmups=0)
    be = VllmBackend(point.engine_call(), resolve("llama-3-8b"))
    be._n_req = 0
    be.engine = FakeEngine(fake_vllm)
    run = offline.measure_offline(be, point, EnergyMeter())
    span = RENDER_S + BATCH * ADD_S + EMPTY_STEP_S + PREFILL_S + (OUT - 1) * DECODE_S
    assert run.metrics["batch_latency_s"].samples == pytest.approx([span, span], abs=1e-9)
    # generate() returned TAIL_S after the last token: kept apart as generate_return_s
    assert run.metrics["generate_return_s"].samples == pytest.approx([span + TAIL_S] * 2, abs=1e-9)
    # every request was added inside the span, the last one RENDER_S + BATCH * ADD_S after its start
    for b in run.batches:
        assert max(r.t_send for r in b.requests) - b.t_start == pytest.approx(RENDER_S + BATCH * ADD_S)
        assert min(r.t_first for r in b.requests) - b.t_start == pytest.approx(
            RENDER_S + BATCH * ADD_S + EMPTY_STEP_S + PREFILL_S)
