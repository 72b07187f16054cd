"""`llmbench compare` pairs serving points of the same request shape and shape options only
(issue 41 item 4): a text point never pairs with an embedding point, nor inputs=4 with
inputs=8, even when --allow-diff names the field."""

from llmbench.analysis.compare import compare
from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record


def rec(run_id, **shape):
    return Record(run_id=run_id, point_key="k", kind="serving",
                  backend=BackendInfo(name="llamacpp", version="0.3.36"),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name="cpu"),
                  workload={"concurrency": 1, "input_len": 16, "api": "completions", **shape},
                  metrics={"e2e_s": summarize([0.1, 0.11, 0.12], "s")})


EMB4 = {"request_shape": "embeddings", "request_shape_options": {"inputs": 4, "dimension": None}}
EMB8 = {"request_shape": "embeddings", "request_shape_options": {"inputs": 8, "dimension": None}}


def test_points_of_one_shape_and_options_pair():
    assert len(compare([rec("a", **EMB4)], [rec("b", **EMB4)]).points) == 1
    assert len(compare([rec("a")], [rec("b")]).points) == 1          # plain text both sides


def test_other_shape_options_do_not_pair():
    cmp = compare([rec("a", **EMB4)], [rec("b", **EMB8)])
    assert not cmp.points and len(cmp.only_base) == len(cmp.only_new) == 1


def test_another_shape_never_pairs_even_when_allowed():
    allow = {"workload.request_shape", "workload.request_shape_options"}
    assert not compare([rec("a")], [rec("b", **EMB4)], allow=allow).points
    assert not compare([rec("a", **EMB4)], [rec("b", **EMB8)], allow=allow).points
