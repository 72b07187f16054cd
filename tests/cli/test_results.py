"""`llmbench results`: readable tables in a normal terminal, sort/limit/columns, clear errors."""

import csv
import io
import json
import subprocess
import sys

import pytest
from rich.console import Console

from llmbench.cli import main
from llmbench.cli import results as results_cmd
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.measure.stats import summarize
from llmbench.store.store import Store


def _record(bs: int, thr: float, compile_: bool, kv_cache: str, loop: str) -> Record:
    return Record(
        run_id="h200", kind="inference", point_key=f"p-{bs}-{compile_}-{kv_cache}-{loop}",
        backend=BackendInfo(name="transformers", version="5.17.0",
                            options={"compile": compile_, "kv_cache": kv_cache, "loop": loop,
                                     "torch": "2.11.0+cu130", "device": "cuda"}),
        model=ModelInfo(name="meta-llama/Llama-3.1-8B-Instruct"),
        hardware=HardwareInfo(name="NVIDIA H200", count=1),
        workload={"batch_size": bs, "input_len": 128, "output_len": 128, "compile": compile_,
                  "kv_cache": kv_cache, "repeats": 3},
        metrics={"batch_latency_s": summarize([3.14159265, 3.2], "s"),
                 "ttft_s": summarize([0.0123456], "s"), "tpot_s": summarize([0.0234567], "s"),
                 "output_throughput_tok_s": summarize([thr], "tok/s"),
                 "total_throughput_tok_s": summarize([2 * thr], "tok/s")})


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "res")
    s.write(_record(1, 123456.789, True, "static", "step"))
    s.write(_record(1, 2345.6789, True, "static", "generate"))  # differs only by an engine option
    s.write(_record(8, 34567.891, False, "dynamic", "generate"))
    return tmp_path / "res"


def _table(monkeypatch, capsys, *args, width=100) -> str:
    buf = io.StringIO()
    monkeypatch.setattr(results_cmd, "out", Console(file=buf, width=width, color_system=None))
    main(["results", *args])
    return buf.getvalue()


def test_numbers_are_never_cut_in_a_100_column_terminal(store, monkeypatch, capsys):
    text = _table(monkeypatch, capsys, "--results", str(store))
    assert "…" not in "".join(ln for ln in text.splitlines() if "H200" not in ln)
    for number in ("123,457", "2,346", "34,568", "3.17", "0.0123", "0.0235"):
        assert number in text, number
    assert max(len(ln) for ln in text.splitlines()) <= 100


def test_default_shows_what_distinguishes_rows(store, monkeypatch, capsys):
    text = _table(monkeypatch, capsys, "--results", str(store))
    header = text.splitlines()[2]
    # loop (an engine option only) tells the first two rows apart; compile and kv_cache vary.
    assert "loop" in text and "generate" in text and "step" in text
    assert "compile" in text and "kv cache" in text
    # Equal everywhere: one caption line, not a column per row.
    shared = text.split("every row:")[1]
    assert "NVIDIA H200" in shared and "input_len 128" in shared  # the shape, said once
    assert "torch" not in header and "input" not in header


def test_sort_limit_and_columns(store, monkeypatch, capsys):
    text = _table(monkeypatch, capsys, "--results", str(store), "--sort=-output_throughput_tok_s_mean",
                  "--limit", "2", "--columns", "batch_size,opt_loop,output_throughput_tok_s_mean")
    body = [ln for ln in text.splitlines() if "123,457" in ln or "34,568" in ln or "2,346" in ln]
    assert len(body) == 2 and "123,457" in body[0] and "34,568" in body[1]
    assert "2 of 3 record(s)" in text
    main(["results", "--results", str(store), "--format", "csv", "--sort", "batch_size",
          "--columns", "batch_size,opt_loop"])
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["batch_size", "opt_loop"] and [r[0] for r in rows[1:]] == ["1", "1", "8"]
    main(["results", "--results", str(store), "--format", "json", "--sort=-batch_size", "--limit", "1"])
    docs = json.loads(capsys.readouterr().out)
    assert len(docs) == 1 and docs[0]["workload"]["batch_size"] == 8


@pytest.mark.parametrize("args, message", [
    (["--sort", "throughput"], "no column 'throughput'"),
    (["--columns", "batch_size,bach_size"], "did you mean batch_size"),
])
def test_unknown_column_is_one_message(store, args, message):
    r = subprocess.run([sys.executable, "-m", "llmbench", "results", "--results", str(store), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_missing_results_directory_is_bad_input(tmp_path):
    r = subprocess.run([sys.executable, "-m", "llmbench", "results", "--results", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_empty_store_csv_is_a_header_and_table_says_so(tmp_path, monkeypatch, capsys):
    main(["results", "--results", str(tmp_path), "--format", "csv"])
    header = capsys.readouterr().out.splitlines()
    assert len(header) == 1 and header[0].startswith("run_id,created_at,kind,status")
    assert "no records in" in _table(monkeypatch, capsys, "--results", str(tmp_path))
    main(["results", "--results", str(tmp_path), "--format", "json"])
    assert json.loads(capsys.readouterr().out) == []
