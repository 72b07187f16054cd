"""Committed H200 records keep their point keys and read back unchanged: one record of each
kind (and of each in-process engine) from results/h200, its key re-derived from the point it
stores, and the record parsed and written again equal to the file. Pinned before backends/
took the engine contract over (issue 38), so that moving code is shown not to move a key."""

import json
from pathlib import Path

import pytest

from llmbench.kinds.inference.spec import Point
from llmbench.kinds.training.config import TrainPoint
from llmbench.store import Record

H200 = Path(__file__).parents[2] / "results" / "h200"
# (file, the key the file names; the file name carries it too)
INFERENCE = {
    "vllm": "20261202T044239Z-5d8870/inference-fa74e8a028607306-319efd4f11f20851.json",
    "transformers": "20261130T082152Z-f3b434/inference-31a987e992b39c41-f72eba021611afc8.json",
    "llamacpp": "20261201T211303Z-a4557a/inference-efb085a434d8f007-d7de42684ed58c5c.json",
}
TRAINING = "20261202T181716Z-85218d/training-63b790f74f220d15-bcd604a582cb67db.json"
SERVING = "20261201T211857Z-5ad89e/serving-01fdd4ff5462b445-3a5e535e90c1a623.json"


def _doc(rel: str) -> dict:
    return json.loads((H200 / rel).read_text())


def _key_in_name(rel: str) -> str:
    return Path(rel).stem.split("-")[1]


@pytest.mark.parametrize("engine", sorted(INFERENCE))
def test_an_inference_record_s_point_gives_its_key_again(engine):
    doc = _doc(INFERENCE[engine])
    assert doc["backend"]["name"] == engine
    point = Point.model_validate(doc["spec"])
    assert point.key == doc["point_key"] == _key_in_name(INFERENCE[engine])


def test_a_training_record_s_point_gives_its_key_again():
    doc = _doc(TRAINING)
    # the record's spec is the point and the compute peak its MFU used (kinds/training/record.py)
    assert "peak" in doc["spec"]
    point = TrainPoint.model_validate({k: v for k, v in doc["spec"].items() if k != "peak"})
    assert point.key == doc["point_key"] == _key_in_name(TRAINING)


ALL = [*INFERENCE.values(), TRAINING, SERVING]


@pytest.mark.parametrize("rel", ALL)
def test_a_committed_record_reads_back_byte_for_byte(rel):
    text = (H200 / rel).read_text()
    rec = Record.model_validate_json(text)
    assert rec.model_dump_json(indent=1) == text  # as the store writes it
    assert rec.point_key == _key_in_name(rel)


@pytest.mark.parametrize("rel", ALL)
def test_a_committed_record_s_roofline_comes_out_the_same_again(rel):
    """The roofline of today's code on the stored record is the one stored (each record was
    last annotated by this roofline version)."""
    from llmbench.roofline import annotate
    from llmbench.store.record import Roofline

    rec = Record.model_validate_json((H200 / rel).read_text())
    stored = rec.roofline.model_dump(mode="json")
    rec.roofline = Roofline()
    assert annotate(rec) is True
    assert rec.roofline.model_dump(mode="json") == stored
