"""Point keys name points across runs (resume, --redo-failed): a key stored by an earlier
llmbench must come out the same today. The literals below were printed by the llmbench of
before kinds/ (three separate recipes); each is also recomputed here from its recipe."""

import hashlib
import json

import pytest
from pydantic import ValidationError

from llmbench.kinds.base import Frozen, Strict, point_key
from llmbench.backends.options import EngineOptions
from llmbench.kinds.inference.spec import Point
from llmbench.kinds.serving.config import LengthDist, ServeConfig
from llmbench.kinds.serving.kind import ServePoint, ServeTarget
from llmbench.kinds.training.config import TrainPoint


def _sha16(doc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def test_an_inference_point_keeps_its_key():
    p = Point(backend="llamacpp", model="smollm2-135m", batch_size=4,
              options=EngineOptions(kv_block_size=16), timeout_s=5)
    assert p.key == "9348ed9a1653d54e"
    # (fidelity off is left out of the key: points from before it keep theirs)
    assert p.key == _sha16(p.model_dump(mode="json", exclude={"timeout_s", "energy_min_window_s",
                                                              "power_sampling", "fidelity"}))


def test_a_training_point_keeps_its_key():
    p = TrainPoint(workload="block", hidden=32, heads=2, seq_len=8)
    # changed once, on purpose, when the levers became fields (compile_mode, optimizer, loss,
    # head_pad: issue 22): they decide what ran, so they are part of the identity
    assert p.key == "b5fc1c9759dfed33"
    # the default compile scope (per layer) is left out: keys from before the lever stay
    assert p.key == _sha16(p.model_dump(mode="json", exclude={"timeout_s", "compile_scope"}))


def test_serving_points_keep_their_keys():
    cfg = ServeConfig(concurrency=[1, 4], num_prompts=8, input_len=LengthDist.parse("uniform:16:64"))
    given = ServePoint(index=1, label="c=4", target=ServeTarget(url="http://127.0.0.1:8000/v1"), cfg=cfg)
    launched = ServePoint(index=0, label="x", cfg=cfg, target=ServeTarget(
        launch="llamacpp", device="cpu", server_args=("--ctx-size", "512")))
    assert given.key == "fde9fff75ab55edf"
    assert launched.key == "857fd8c3725ef98d"
    # a point's key leaves out how it is sent and metered: the loop, the scrape interval, the
    # warm-up requests, a local client, the power sampling, a load pattern the flags imply and
    # the plain text request shape and the text prompts, nor the error rate a level may have
    # and still be ok (kinds/serving/kind.py)
    dumped = cfg.model_dump(mode="json", exclude={"use_uvloop", "metrics_interval_s",
                                                  "warmup_requests", "executor", "power_sampling",
                                                  "pattern", "pattern_options", "shape",
                                                  "shape_options", "prompts", "max_error_rate"})
    assert given.key == _sha16([{"url": "http://127.0.0.1:8000/v1"}, dumped, 1, False])


def test_point_key_sorts_keys_and_is_16_hex_digits():
    assert point_key({"b": 1, "a": 2}) == point_key({"a": 2, "b": 1})
    assert len(point_key([1])) == 16 and int(point_key([1]), 16) >= 0


def test_strict_refuses_unknown_fields_and_frozen_refuses_changes():
    class S(Strict):
        x: int = 0

    class F(Frozen):
        x: int = 0

    with pytest.raises(ValidationError):
        S(y=1)
    with pytest.raises(ValidationError):
        F(y=1)
    f = F()
    with pytest.raises(ValidationError):
        f.x = 2
    assert hash(F(x=1)) == hash(F(x=1))
