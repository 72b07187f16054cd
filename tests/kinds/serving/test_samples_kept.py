"""A serving record keeps every ITL sample (issue 44 item 5): its p99 is recomputable from the
record. The stream is built so that the first 10,000 gaps (the old cap) have a p99 far from the
whole run's: 25,400 gaps, the first 10,000 all 10 ms, then 2% of the rest 50 ms."""

import json

import numpy as np

from llmbench.measure.timeline import RequestTimeline
from llmbench.metrics import serving_metrics
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store


def stream():
    """254 requests of 101 tokens (100 gaps each), one after another; (timelines, every gap)."""
    tls, gaps = [], []
    t = 0.0
    for i in range(254):
        r = RequestTimeline(t_ref=t, t_send=t, prompt_tokens=8)
        t += 0.02
        r.add(t)                                   # the first token: 20 ms TTFT
        for j in range(100):
            g = 0.05 if i >= 100 and j % 50 == 0 else 0.01   # 2 in 100 gaps slow, after 10,000
            t += g
            r.add(t)
            gaps.append(g)
        tls.append(r)
        t += 0.001
    return tls, gaps


def test_every_itl_sample_kept_and_the_p99_recomputable_from_the_record(tmp_path):
    tls, gaps = stream()
    assert len(gaps) == 25_400
    # by construction: 308 slow gaps (1.2% of all) make the whole p99 50 ms; the first
    # 10,000 hold none, so theirs is 10 ms
    assert sum(g == 0.05 for g in gaps) == 308
    m = serving_metrics(tls, (0.0, tls[-1].t_last))
    itl = m["itl_s"]
    assert itl.n == 25_400 and len(itl.samples) == 25_400
    truth = [b - a for tl in tls for (a, _), (b, _) in zip(tl.events, tl.events[1:])]
    assert itl.p99 == float(np.percentile(truth, 99))
    assert abs(itl.p99 - 0.05) < 1e-9 and abs(float(np.percentile(truth[:10_000], 99)) - 0.01) < 1e-9
    rec = Record(run_id="r", kind="serving", backend=BackendInfo(name="vllm"),
                 model=ModelInfo(name="m"), hardware=HardwareInfo(name="cpu"), metrics=m)
    doc = json.loads(Store(tmp_path).write(rec).read_text())
    kept = doc["metrics"]["itl_s"]
    assert len(kept["samples"]) == 25_400
    assert float(np.percentile(kept["samples"], 99)) == kept["p99"] == itl.p99
    assert "recomputable" not in kept
