"""`llmbench annotate`: stored records of older definitions re-annotated; known answers
recomputed by hand here, from published numbers and the record's own stored inputs."""

import json

import pytest
from typer.testing import CliRunner

from llmbench.definitions import DEFINITIONS_VERSION, ROOFLINE_VERSION, energy_window, stamp
from llmbench.measure.stats import summarize
from llmbench.reannotate import reannotate
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record, Roofline
from llmbench.store.store import Store, flatten

# Published numbers (not llmbench's): H200 SXM HBM3e 4.8 TB/s, dense BF16 989.5 TFLOP/s
# (nvidia.com/h200); Meta-Llama-3-8B config.json: vocab 128256, hidden 4096, untied
# embeddings, 8,030,261,248 parameters; GPT-2 XL: 48 layers, hidden 1600, 1024 positions,
# 1,557,611,200 parameters with the tied embedding counted once.
H200_BW = 4.8e12
H200_BF16 = 989.5e12
LLAMA3_8B_N, LLAMA3_VOCAB, LLAMA3_H = 8_030_261_248, 128_256, 4096


def old_decode_record():
    """A transformers batch-1 decode record as stored on 2026-11-30: no versions, the old
    bound (the whole stored weights read per step: 4.8e12 / (2 x 8.03e9) = 298.87 tok/s)."""
    old_bound = H200_BW / (2 * LLAMA3_8B_N)
    return Record(
        run_id="20261130T082101Z-cb8f04", kind="inference",
        backend=BackendInfo(name="transformers"), model=ModelInfo(name="llama-3-8b"),
        hardware=HardwareInfo(name="NVIDIA H200"),
        workload={"batch_size": 1, "input_len": 128, "output_len": 128, "weight_dtype": "auto"},
        metrics={"output_throughput_tok_s": summarize([150.0, 152.0, 154.0], "tok/s"),
                 "total_throughput_tok_s": summarize([300.0, 304.0, 308.0], "tok/s"),
                 "batch_latency_s": summarize([0.853, 0.842, 0.831], "s"),
                 "energy_j": summarize([449.6, 396.7, 445.0], "J")},
        roofline=Roofline(bound={"decode_tok_s": old_bound, "output_throughput_tok_s": 298.40,
                                 "total_throughput_tok_s": 596.81},
                          efficiency={"output_throughput_tok_s": 152.0 / 298.40,
                                      "total_throughput_tok_s": 304.0 / 596.81},
                          binding_resource="memory", hardware_id="H200", devices=1, notes=[]))


def test_old_decode_bound_becomes_bytes_per_step_over_bandwidth():
    rec = old_decode_record()
    assert rec.roofline.bound["decode_tok_s"] == pytest.approx(298.87, abs=0.01)
    ch = reannotate(rec, path=None, now="2026-12-02T00:00:00+00:00")
    new = ch.record
    # a batch-1 step reads every matrix whole and one row of the untied input embedding
    step_bytes = 2 * (LLAMA3_8B_N - LLAMA3_VOCAB * LLAMA3_H + LLAMA3_H)
    assert new.roofline.bound["decode_tok_s"] == pytest.approx(H200_BW / step_bytes, rel=1e-12)
    assert round(new.roofline.bound["decode_tok_s"], 1) == 319.8
    assert new.roofline.version == ROOFLINE_VERSION == "3"
    assert new.definitions_version == DEFINITIONS_VERSION
    # the history keeps what was replaced, and says from which version
    (entry,) = new.annotations
    assert entry["roofline_version"] == {"from": "1", "to": "3"}
    assert entry["previous"]["roofline"]["bound"]["decode_tok_s"] == pytest.approx(298.87, abs=0.01)
    assert any(c.startswith("roofline.bound.decode_tok_s: 298.869 -> 319.79") for c in entry["changed"])
    # the efficiency is the stored measurement over the new bound
    assert new.roofline.efficiency["output_throughput_tok_s"] == pytest.approx(
        152.0 / new.roofline.bound["output_throughput_tok_s"], rel=1e-12)
    # measured samples untouched; its 0.83 s energy windows (one batch each) flagged
    assert new.metrics == rec.metrics
    assert new.power["short_window"] is True and new.power["energy_window_s"] == 0.831
    assert ch.energy_flagged and any("0.83 s" in n for n in new.notes)


def old_training_record():
    """A GPT-2 XL training record as stored on 2026-11-30 (its stored inputs: shape, tokens,
    flops_per_token, step times): the old TFLOP/s bound was the datasheet peak."""
    n, layers, h, s, tokens = 1_555_972_800, 48, 1600, 1024, 16384
    fpt = 6 * n + 12 * layers * h * s          # the stored MFU convention (PaLM: full s x s)
    steps = [0.37560303, 0.36653877, 0.38566165, 0.37174291, 0.36975010]
    tps = [tokens / t for t in steps]
    tflops = [x * fpt / 1e12 for x in tps]
    old_step_bound = 0.16240206266922688
    return Record(
        run_id="20261130T085933Z-dd0838", kind="training", backend=BackendInfo(name="pytorch"),
        model=ModelInfo(name="gpt2-xl", params=1_557_686_400), hardware=HardwareInfo(name="NVIDIA H200"),
        workload={"workload": "gpt2", "size": "xl", "seq_len": s, "micro_batch": 16, "grad_accum": 1,
                  "nproc": 1, "precision": "bf16", "batch_size": 16, "input_len": s, "hidden": h,
                  "layers": layers, "flop_params": n, "flops_per_token": float(fpt),
                  "tokens_per_step": tokens},
        metrics={"step_time_s": summarize(steps, "s"), "tokens_per_s": summarize(tps, "tok/s"),
                 "tflops": summarize(tflops, "TFLOP/s"), "energy_j": summarize([1315.1], "J")},
        roofline=Roofline(bound={"step_time_s": old_step_bound, "tokens_per_s": tokens / old_step_bound,
                                 "tflops": 989.5},
                          efficiency={"tflops": (sum(tflops) / 5) / 989.5,
                                      "tokens_per_s": (sum(tps) / 5) / (tokens / old_step_bound)},
                          binding_resource="compute"))


def test_old_training_efficiency_recomputed_by_todays_flop_convention():
    rec = old_training_record()
    old = rec.roofline.efficiency
    assert old["tflops"] == pytest.approx(0.4554, abs=1e-4)          # MFU, not measured/bound
    assert old["tokens_per_s"] == pytest.approx(0.4345, abs=1e-4)    # two numbers for one run
    new = reannotate(rec, path=None).record
    w, m = rec.workload, rec.metrics
    # by hand: the step must do causal attention's work, 6N + 6 L h (s + 1) FLOPs per token,
    # at the BF16 peak (compute-bound: its memory term, 32 B x 1.56e9 / 4.8e12 = 0.010 s, is less)
    causal = 6 * w["flop_params"] + 6 * w["layers"] * w["hidden"] * (w["seq_len"] + 1)
    step_s = w["tokens_per_step"] * causal / H200_BF16
    assert step_s == pytest.approx(0.162402, abs=1e-6)
    assert 32 * 1_557_611_200 / H200_BW < step_s
    bound_tok_s = w["tokens_per_step"] / step_s
    bound_tflops = bound_tok_s * w["flops_per_token"] / 1e12           # the record's own convention
    assert new.roofline.bound["tflops"] == pytest.approx(bound_tflops, rel=1e-9)
    assert round(bound_tflops, 2) == 1037.06
    eff = m["tflops"].mean / bound_tflops
    assert new.roofline.efficiency["tflops"] == pytest.approx(eff, rel=1e-9)
    assert new.roofline.efficiency["tokens_per_s"] == pytest.approx(m["tokens_per_s"].mean / bound_tok_s,
                                                                    rel=1e-9)
    assert new.roofline.efficiency["tflops"] == pytest.approx(new.roofline.efficiency["tokens_per_s"],
                                                              rel=1e-9)
    assert round(eff, 4) == 0.4345
    assert new.roofline.bound["peak_tflops"] == 989.5
    assert new.metrics == rec.metrics
    prev = new.annotations[0]["previous"]["roofline"]["efficiency"]
    assert prev["tflops"] == pytest.approx(0.4554, abs=1e-4)
    # energy over the five timed steps, 1.87 s: under 2 s
    assert new.power["energy_window_s"] == pytest.approx(sum(rec.metrics["step_time_s"].samples))
    assert new.power["short_window"] is True


def test_energy_flag_on_a_tenth_of_a_second():
    r = Record(run_id="t", kind="training", backend=BackendInfo(name="pytorch"),
               model=ModelInfo(name="block-gpt-h4096"), hardware=HardwareInfo(name="NVIDIA H200"),
               metrics={"step_time_s": summarize([0.02, 0.02, 0.02, 0.02, 0.02], "s"),
                        "energy_j": summarize([71.0], "J")})
    stamp(r)
    assert r.power["energy_window_s"] == pytest.approx(0.10)
    assert r.power["short_window"] is True
    assert r.power["energy_window_source"].startswith("sum of the timed steps")
    assert sum("energy window 0.10 s" in n for n in r.notes) == 1
    stamp(r)  # idempotent: one note
    assert sum("energy window 0.10 s" in n for n in r.notes) == 1
    assert flatten(r.model_dump(mode="json"))["energy_short_window"] is True
    # a measured window wins over one inferred; 2.5 s is long enough
    ok = r.model_copy(deep=True, update={"notes": [], "power": {}})
    ok.metrics["energy_window_s"] = summarize([2.5, 2.6], "s")
    stamp(ok)
    assert ok.power["short_window"] is False and ok.power["energy_window_s"] == 2.5 and not ok.notes
    # no energy: nothing to flag
    none = r.model_copy(deep=True, update={"notes": [], "power": {}})
    del none.metrics["energy_j"]
    assert energy_window(none) is None
    stamp(none)
    assert "short_window" not in none.power


def test_a_record_the_catalogs_cannot_bound_keeps_its_stored_roofline():
    r = old_decode_record()
    r.model.name = "/gone/local-model"
    stored = r.roofline.model_dump()
    new = reannotate(r, path=None).record
    assert new.roofline.model_dump() == stored       # not erased
    assert new.definitions_version == DEFINITIONS_VERSION


def _doc_without(doc, keys=("roofline", "power", "notes", "definitions_version", "annotations")):
    return {k: v for k, v in doc.items() if k not in keys}


def test_cli_dry_run_writes_nothing_then_annotate_rewrites_in_place_once(tmp_path):
    from llmbench.cli import app

    store = Store(tmp_path)
    paths = [store.write(old_decode_record()), store.write(old_training_record())]
    # write() stamps today's definitions: put the stored-before-versioning form back by hand
    for p, rec in zip(paths, (old_decode_record(), old_training_record())):
        doc = json.loads(rec.model_dump_json())
        doc.pop("definitions_version"), doc.pop("annotations"), doc["roofline"].pop("version")
        p.write_text(json.dumps(doc, indent=1))
    before = {p: p.read_bytes() for p in paths}
    r = CliRunner().invoke(app, ["annotate", "--results", str(tmp_path), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "2 record(s) read" in r.output and "2 would be re-annotated" in r.output
    assert "decode_tok_s: 298.869 -> 319.79" in r.output and "nothing written" in r.output
    assert {p: p.read_bytes() for p in paths} == before
    r = CliRunner().invoke(app, ["annotate", "--results", str(tmp_path), "--details"])
    assert r.exit_code == 0, r.output
    assert "2 re-annotated" in r.output and "efficiency.tflops: 0.455" in r.output
    assert sorted(store.paths()) == sorted(paths)       # rewritten in place, no new file
    for p in paths:
        old, new = json.loads(before[p]), json.loads(p.read_text())
        assert new["metrics"] == old["metrics"]         # measured samples untouched
        assert _doc_without(new) == _doc_without(old)
        assert new["roofline"]["version"] == "3" and len(new["annotations"]) == 1
    again = CliRunner().invoke(app, ["annotate", "--results", str(tmp_path)])
    assert "0 re-annotated" in again.output and "2 already current" in again.output
    from llmbench.cli import main

    with pytest.raises(SystemExit) as e:  # a missing directory: one message, exit status 2
        main(["annotate", "--results", str(tmp_path / "nope")])
    assert e.value.code == 2


def test_results_shows_the_roofline_version_and_the_energy_flag(tmp_path):
    from llmbench.cli import app

    store = Store(tmp_path)
    old = old_decode_record()
    store.write(old)  # as stored: no version (flagged by the write path's definitions)
    store.write(reannotate(old_decode_record(), path=None).record)
    r = CliRunner().invoke(app, ["results", "--results", str(tmp_path), "--format", "csv",
                                 "--columns", "roofline_version,energy_short_window"])
    assert r.exit_code == 0, r.output
    assert sorted(r.output.splitlines()[1:]) == ["1,True", "3,True"]
    t = CliRunner().invoke(app, ["results", "--results", str(tmp_path)])
    assert "roofline v" in t.output and "energy <2 s" in t.output


def test_single_window_matmul_peak_noted_with_the_stores_range_between_runs(tmp_path):
    """Three runs whose one-window peaks read 730, 780 and 786 TFLOP/s: the spread between
    them, +-50/780 = +-6.4% about their median 780, is said beside mfu_measured_peak."""
    from llmbench.reannotate import reannotate_store

    store = Store(tmp_path)
    for i, peak in enumerate((730.0, 780.0, 786.0)):
        r = old_training_record()
        r.run_id, r.workload["precision"] = f"run{i}", "bf16"
        r.metrics["matmul_peak_tflops"] = summarize([peak], "TFLOP/s")
        r.metrics["mfu_measured_peak"] = summarize([450.6 / peak], "ratio")
        store.write(r)
    n, changes = reannotate_store(tmp_path, write=False)
    assert n == 3 and len(changes) == 3
    for ch in changes:
        (note,) = [x for x in ch.record.notes if x.startswith("mfu_measured_peak divides by one")]
        assert "its spread is unknown" in note
        assert f"3 NVIDIA H200 bf16 runs read 730-786 TFLOP/s (+-{50 / 780:.1%} about their median 780)" in note
        stored = json.loads(ch.path.read_text())          # --dry-run: the file is as it was
        assert ch.record.model_dump(mode="json")["metrics"] == stored["metrics"]
        assert not stored["annotations"]
