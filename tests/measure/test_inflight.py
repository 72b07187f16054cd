"""inflight_mean: the time-weighted mean of requests in flight over a serving window."""

import pytest

from llmbench.measure.timeline import RequestTimeline
from llmbench.metrics import inflight_mean, serving_metrics


def req(sched, sent, token_times, error=None):
    r = RequestTimeline(t_ref=sched, t_send=sent, prompt_tokens=4, error=error)
    for t in token_times:
        r.add(t)
    return r


def test_time_weighted_mean_over_the_window():
    tls = [req(0.0, 0.0, [1.0, 4.0]),          # in flight 0-4
           req(1.0, 2.0, [3.0, 6.0]),          # scheduled at 1, sent at 2: in flight 2-6
           req(5.0, None, [7.0, 12.0]),        # no send time: from its schedule, 5-12
           req(3.0, 3.0, [], error="timeout")]  # no token, no known end: left out
    # over [0, 10]: 4 + 4 + 5 = 13 request-seconds
    assert inflight_mean(tls, (0.0, 10.0)) == pytest.approx(1.3)
    # a window cuts the intervals: [2, 6] holds 2 + 4 + 1 = 7 request-seconds over 4 s
    assert inflight_mean(tls, (2.0, 6.0)) == pytest.approx(7 / 4)
    assert inflight_mean(tls, (5.0, 5.0)) == 0.0


def test_serving_metrics_record_it_with_its_unit():
    tls = [req(0.0, 0.0, [0.5, 1.0]), req(0.0, 0.0, [0.5, 2.0])]
    m = serving_metrics(tls, (0.0, 2.0))
    assert m["inflight_mean"].unit == "requests"
    assert m["inflight_mean"].mean == pytest.approx((1.0 + 2.0) / 2.0)
