"""A worker killed inside the engine's generate() or half-way through writing a record costs
only that point: one record per point, the torn temporary file never read as a record."""

import csv
import io

import pytest

from launch_helpers import fault_env, keys, run_cli, stored, tiny_spec
from tests.conftest import needs_llamacpp


@pytest.mark.engine
@pytest.mark.slow
@needs_llamacpp
def test_kill_mid_generate_and_mid_record_write(tmp_path):
    spec = tiny_spec(tmp_path, batch_sizes=(1, 2, 3))
    k = keys(spec)
    res = tmp_path / "results"
    r = run_cli("run", spec, "--results", res, env_extra=fault_env({k[0]: "killgen", k[1]: "killwrite"}))
    assert r.returncode == 3, r.stderr  # partial success
    got = {d["point_key"]: d for d in stored(res)}
    assert len(stored(res)) == 3 and set(got) == set(k)
    for key in k[:2]:
        assert got[key]["status"] == "failed"
        assert got[key]["error"].startswith("worker killed by signal 9 (SIGKILL)"), got[key]["error"]
    assert got[k[2]]["status"] == "ok"
    # the kill did land mid-write: the half-written temporary file is there, and ignored
    assert len(list(res.rglob(".tmp-*.part"))) == 1
    listed = run_cli("results", "--results", res, "--format", "csv")
    assert listed.returncode == 0 and len(list(csv.reader(io.StringIO(listed.stdout)))) == 4, listed.stderr
    assert "warning" not in listed.stderr
