"""What `llmbench run` prints and writes, beyond the numbers (issue 15, items 7, 9, 13)."""

import os
import stat

import pytest
from rich.console import Console

from llmbench.cli import run as runcli
from llmbench.measure.stats import summarize
from llmbench.launch.pipeline import SweepResult
from llmbench.kinds.inference.spec import load_spec
from llmbench.store import Store
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record


def _text(renderable) -> str:
    c = Console(width=250, record=True, file=open(os.devnull, "w"))
    c.print(renderable)
    return c.export_text()


def test_list_points_is_a_readable_table_with_the_device(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("backends: [llamacpp]\ndevice: cpu\nbatch_size: [1, 4]\n"
                    "options: {kv_cache_dtype: q8_0}\nbackend_options: {llamacpp: {n_threads: 2}}\n")
    pts = load_spec(spec).points()
    text = _text(runcli.points_table(pts))
    assert "{" not in text  # no Python dicts
    lines = [line for line in text.splitlines() if pts[1].key in line]
    assert len(lines) == 1
    for cell in ("llamacpp", "smollm2-135m", "cpu", "bs=4 in=32 out=32", "kv_cache_dtype=q8_0",
                 "n_threads=2"):
        assert cell in lines[0], cell


def _record(kind, status="ok", **metrics):
    w = ({"context_len": 256, "stride": 128, "text": "bundled"} if kind == "perplexity" else
         {"batch_size": 4, "input_len": 32, "output_len": 16})
    return Record(run_id="r1", kind=kind, status=status, backend=BackendInfo(name="llamacpp"),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name="Some CPU"),
                  workload=w, spec={"device": "cpu"},
                  metrics={k: summarize([v], "x") for k, v in metrics.items()})


def test_summary_shows_perplexity_points_as_perplexity(tmp_path, capsys):
    res = SweepResult("r1", tmp_path, records=[
        _record("inference", output_throughput_tok_s=123.0),
        _record("perplexity", perplexity=13.02, scored_tokens=345)])
    runcli.summary(res)
    out = capsys.readouterr().out
    inference, ppl = out.split("perplexity", 1)
    assert "bs=1" not in out and "cpu (Some CPU)" in inference and "123" in inference
    assert "13.02" in ppl and "256" in ppl and "128" in ppl and "345" in ppl
    assert "13.02" not in inference  # never in the throughput column again


def test_summary_of_a_resumed_sweep_covers_the_earlier_points(tmp_path, capsys):
    res = SweepResult("r1", tmp_path, records=[_record("inference", output_throughput_tok_s=2.0)],
                      skipped=1, earlier=[_record("inference", output_throughput_tok_s=1.0)])
    runcli.summary(res)
    cap = capsys.readouterr()
    assert cap.out.count("llamacpp") == 2 and "ok (earlier)" in cap.out
    assert "skipped 1 point(s) already stored (--resume)" in cap.err


def test_records_honour_the_umask(tmp_path):
    old = os.umask(0o002)  # a team's shared results directory
    try:
        path = Store(tmp_path).write(_record("inference"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o664  # mkstemp alone gave 0600


def test_env_argv_is_the_users_command_line(monkeypatch):
    from llmbench.measure import env

    monkeypatch.setattr("sys.argv", ["/x/llmbench/launch/worker.py", "/tmp/job.json", "5"])
    env.set_user_argv(["/usr/bin/llmbench", "run", "sweep.yaml"])
    try:
        assert env.capture()["argv"] == ["/usr/bin/llmbench", "run", "sweep.yaml"]
    finally:
        env.set_user_argv(None)
    assert env.capture()["argv"][0].endswith("worker.py")


@pytest.mark.parametrize("argv,expected", [
    (["llmbench", "run", "s.yaml"], "llmbench run s.yaml --resume --run-id R"),
    (["llmbench", "run", "--resume", "--run-id", "X"], "llmbench run --resume --run-id X"),
    (["llmbench", "run", "-m", "my model"], "llmbench run -m 'my model' --resume --run-id R"),
])
def test_resume_command_is_the_users_own_plus_resume(argv, expected):
    from llmbench.cli.tail import resume_command

    assert resume_command("run", "R", argv) == expected
