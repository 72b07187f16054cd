"""The vLLM backend's version-dependent parts, without vLLM: what one release lacks is left out
of the record, never a crash (vLLM 0.26's RequestStateStats has no num_preemptions), and the
execution mode defaults to the engine's own for the device."""

from types import SimpleNamespace

import pytest

from llmbench.backends.vllm import VllmBackend, _render, engine_view
from llmbench.models.sources import resolve
from llmbench.backends.call import EngineCall
from llmbench.backends.options import EngineOptions


def stats_026(first, last):  # the fields vLLM 0.26.0's RequestStateStats has
    return SimpleNamespace(num_generation_tokens=4, arrival_time=0.0, queued_ts=0.0, scheduled_ts=0.0,
                           first_token_ts=first, last_token_ts=last, first_token_latency=0.0,
                           is_corrupted=False)


def test_statistic_missing_in_this_release_is_absent_not_a_crash():
    view = engine_view([stats_026(10.1, 10.5), stats_026(10.2, 10.7)], t_ref=9.0, offset=-1.0)
    assert "preemptions" not in view
    assert view["corrupted_requests"] == 0
    assert view["ttft_mean_s"] == pytest.approx(0.15)
    assert view["last_token_max_s"] == pytest.approx(0.7)


def test_statistic_present_in_this_release_is_summed():
    s = [SimpleNamespace(first_token_ts=2.0, last_token_ts=3.0, num_preemptions=n) for n in (1, 2)]
    assert engine_view(s, t_ref=1.0, offset=0.0)["preemptions"] == 3


def test_requests_without_a_first_token_give_no_view():
    assert engine_view([None, stats_026(0.0, 0.0)], 0.0, 0.0) == {}


def test_render_uses_the_renderer_only_where_the_release_has_one():
    prompts = [{"prompt_token_ids": [1, 2]}]
    with_renderer = SimpleNamespace(renderer=SimpleNamespace(render_cmpl=lambda p: [("rendered", p[0])]))
    assert _render(prompts, with_renderer) == [("rendered", prompts[0])]
    assert _render(prompts, SimpleNamespace()) is prompts


@pytest.mark.parametrize("device,opts,backend_opts,eager", [
    ("cuda", {}, {}, False),                      # vLLM's own default: compile + CUDA graphs
    ("cuda:1", {}, {"enforce_eager": True}, True),  # eager only when asked for
    ("cpu", {}, {}, True),                        # bf16 compile gave wrong tokens on the CPU
    ("cpu", {"compile": True}, {}, False),
])
def test_execution_mode_defaults_to_the_engines_own(device, opts, backend_opts, eager):
    p = EngineCall(model="llama-3-8b", device=device, options=EngineOptions(**opts),
              backend_options=backend_opts)
    assert VllmBackend(p, resolve("llama-3-8b"))._enforce_eager() is eager
