"""Ctrl-C during a sweep: one line that says what is stored and the exact command that
continues; that command continues the same run and its summary covers the whole sweep
(issue 15, item 9). A real llama.cpp sweep, interrupted while its worker holds point 2."""

import json
import shlex
import signal
import subprocess
import time
from collections import Counter

import pytest

from launch_helpers import LLMBENCH, fault_env, keys, run_cli, sigint_default, stored, tiny_spec
from tests.conftest import needs_llamacpp


@pytest.mark.engine
@pytest.mark.slow
@needs_llamacpp
def test_ctrl_c_names_the_command_that_continues_the_same_run(tmp_path):
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2, 3))
    k = keys(spec)
    res = tmp_path / "results"
    # the worker hangs just before point 2, so exactly one point is stored when Ctrl-C comes
    import os

    env = {**os.environ, **fault_env({k[1]: "hang"}), "COLUMNS": "200"}
    p = subprocess.Popen([*LLMBENCH, "run", str(spec), "--results", str(res)], env=env,
                         preexec_fn=sigint_default,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not stored(res) if res.exists() else True:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.2)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in out + err
    [first] = stored(res)
    rid = first["run_id"]
    assert first["env"]["argv"][1:] == ["run", str(spec), "--results", str(res)]  # the user's
    line = " ".join(err.split())
    expected = (f"interrupted: 1 of 3 points stored in {res}; continue with "
                f"`llmbench run {spec} --results {res} --resume --run-id {rid}`")
    assert expected in line, err

    cmd = shlex.split(line.split("continue with `", 1)[1].split("`", 1)[0])
    assert cmd[0] == "llmbench"
    r = run_cli(*cmd[1:])
    assert r.returncode == 0, r.stderr
    docs = stored(res)
    assert {d["run_id"] for d in docs} == {rid}  # continued under the same run id
    assert Counter(d["point_key"] for d in docs if d["status"] == "ok") == Counter(k)
    assert r.stdout.count("llamacpp") == 3 and r.stdout.count("ok (earlier)") == 1
    assert "3/3" in r.stderr  # the progress counted the whole sweep, earlier point included
    assert json.dumps(docs)  # every file parsed
