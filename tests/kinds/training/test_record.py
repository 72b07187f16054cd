"""A training measurement into its record (kinds/training/record.py): what ran beside the
steps (observers) and the machine's contention reach the record. No torch needed: the
measurement is written here as loop.run returns it."""

from llmbench.kinds.training.config import TrainPoint
from llmbench.kinds.training.record import base_record, fill

POINT = TrainPoint(workload="gpt2", size="small", layers=2, hidden=64, heads=2, seq_len=32,
                   micro_batch=2, steps=2, warmup=1)
OBSERVERS = {"contention": "CPU times (psutil) read before and after the window, nothing inside it"}


def measurement(**extra):
    r = {"rank": 0, "world": 1, "device": "cpu", "device_name": "a CPU", "model_name": "gpt2-test",
         "flop_params": 1000, "total_params": 1200, "layers": 2, "hidden": 64, "heads": 2,
         "info": {}, "parallel": "none", "flops_per_token": 7000, "flops_per_token_causal": 6000,
         "tokens_per_step": 64, "samples_per_step": 2, "step_times_s": [0.5, 0.25],
         "first_step_s": 1.0, "warmup_steps": 1, "losses": [], "mem_peak_gib": 0.5,
         "mem_what": "host peak RSS", "measured_peak": None, "notes": [], "wall_s": 0.75}
    return {**r, **extra}


def contention(contended: bool) -> dict:
    return {"contended": contended, "reasons": ["other processes used 40% of the CPU"] if contended else [],
            "windows": 1, "window_s": 0.75}


def record(r: dict, env: dict):
    return fill(base_record(POINT, "run", {"name": "a CPU", "count": 1}, env), POINT, r, "2.13")


def test_observers_and_contention_of_rank_0_reach_the_record():
    shared_env = {"python": "3.11"}
    rec = record(measurement(observers=OBSERVERS, contention=contention(False)), shared_env)
    assert rec.observers == OBSERVERS
    assert rec.env["contention"] == contention(False) and rec.env["python"] == "3.11"
    assert "contention" not in shared_env  # the kind's one env stays every record's
    assert not any(n.startswith("contended") for n in rec.notes)


def test_a_contended_training_point_says_so_in_its_notes():
    rec = record(measurement(observers=OBSERVERS, contention=contention(True)), {})
    assert rec.env["contention"]["contended"]
    assert "contended: other processes used 40% of the CPU" in rec.notes


def test_without_rank_0_observers_the_record_claims_none():
    rec = record(measurement(), {})
    assert rec.observers == {} and "contention" not in rec.env
