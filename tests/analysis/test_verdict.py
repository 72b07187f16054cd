"""A part's outcome from its two numbers, and a finding's verdict from its parts
(analysis/verdict.py). Each case's numbers make its outcome true by construction."""

import pytest

from llmbench.analysis import verdict as V


@pytest.mark.parametrize("own, study, outcome", [
    (1.24, 1.0, "holds"), (1.0, 1.24, "holds"),          # inside [1/1.25, 1.25]
    (1.26, 1.0, "contradicted"), (1.0, 1.26, "contradicted"),
    (24.9, 15.3, "contradicted"), (7.71, 7.63, "holds"),
])
def test_magnitude(own, study, outcome):
    p = V.magnitude("a claim", own, study, "never used")
    assert p.outcome == outcome == V.outcome_of(p)
    assert f"{own:.2f}x here vs {study:.2f}x in the study" in p.why


@pytest.mark.parametrize("own, outcome, word", [
    (1.43, "holds", "faster"), (1.021, "holds", "faster"),
    (1.019, "contradicted", "no faster"), (1.0, "contradicted", "no faster"), (0.98, "contradicted", "no faster"),
    (0.78, "contradicted", "slower"),
])
def test_faster_needs_more_than_the_margin(own, outcome, word):
    p = V.faster("FP8 faster", own, 1.32, "never used", differs_why="the reason")
    assert p.outcome == outcome == V.outcome_of(p)
    assert f"({word}" in p.why
    assert ("the reason" in p.why) == (outcome == "contradicted")


def test_alike_and_missing_numbers():
    assert V.within("alike", 1.005, 1.02, "-").outcome == "holds"
    assert V.within("alike", 1.2, 1.02, "-").outcome == "contradicted"
    for p in (V.magnitude("m", None, 2.0, "no records of batch 1"), V.faster("f", None, 1.3, "no records of batch 1"),
              V.within("w", None, 1.0, "no records of batch 1")):
        assert p.outcome == "untested" == V.outcome_of(p) and p.why == "no records of batch 1"
    # an own figure with no study point to hold it against is untested, never a verdict
    p = V.magnitude("m", 3.0, None, "-")
    assert p.outcome == "untested" and "no such point" in p.why


H, C, U = (V.Part("h", "holds", ""), V.Part("c", "contradicted", ""), V.Part("u", "untested", "why"))


@pytest.mark.parametrize("parts, verdict", [
    ([H], "holds"), ([H, H], "holds"),
    ([H, C], "partly holds"), ([H, U], "partly holds"), ([H, C, U], "partly holds"),
    ([C], "contradicted"), ([C, U], "contradicted"),
    ([U], "untested"), ([U, U], "untested"), ([], "untested"),
])
def test_overall_rule(parts, verdict):
    assert V.overall(parts) == verdict
    assert verdict in V.VERDICTS


def test_summary_names_each_part_with_its_outcome():
    s = V.summary([V.Part("FP8 at b1", "holds", "1.43x"), V.Part("INT8 at b64", "contradicted", "0.78x"),
                   V.Part("block 8", "untested", "refused")])
    assert s == "holds: FP8 at b1 (1.43x). contradicted: INT8 at b64 (0.78x). untested: block 8 (refused)"
