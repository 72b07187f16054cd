"""`llmbench export mlflow` against a real MLflow tracking server started on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

mlflow = pytest.importorskip("mlflow")

from llmbench.exporters.mlflow import ID_TAG  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{d / 'mlflow.db'}", "--artifacts-destination",
         str(d / "artifacts"), "--workers", "1"],
        stdout=open(d / "server.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # its database migrations take ~30 s on 2 busy cores
    try:
        while True:
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("mlflow server did not start:\n" + (d / "server.log").read_text()[-2000:])
                time.sleep(0.5)
        yield uri
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def export(store: Path, uri: str, experiment: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmbench", "export", "mlflow", str(store),
                           "--tracking-uri", uri, "--experiment", experiment],
                          capture_output=True, text=True)


def _runs(uri: str, experiment: str):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(experiment)
    return c, c.search_runs([exp.experiment_id], max_results=1000)


def test_one_run_per_record_then_updates_not_duplicates(small_store, tracking_uri):
    h200_store = small_store
    docs = [json.loads(p.read_text()) for p in sorted(h200_store.rglob("*.json"))]
    r = export(h200_store, tracking_uri, "h200")
    assert r.returncode == 0, r.stderr
    assert f"created {len(docs)} MLflow runs, updated 0" in r.stdout
    client, runs = _runs(tracking_uri, "h200")
    assert len(runs) == len(docs)

    # each record's figures, read from its file, are the run's metrics under llmbench's names
    by_key = {(r.data.tags["llmbench.run_id"], r.data.tags.get("llmbench.point_key"),
               r.data.tags["kind"]): r for r in runs}
    checked = 0
    for d in docs:
        run = by_key[(d["run_id"], d.get("point_key"), d["kind"])]
        assert run.data.tags["status"] == d["status"]
        assert run.data.tags["engine"] == d["backend"]["name"]
        assert run.data.tags["hardware"] == d["hardware"]["name"]
        assert run.data.params["model"] == d["model"]["name"]
        for name, st in d["metrics"].items():
            for stat in ("median", "p99"):
                if st.get(stat) is not None:
                    assert run.data.metrics[f"{name}_{stat}"] == pytest.approx(st[stat])
                    checked += 1
        for k, v in (d["workload"] or {}).items():
            if isinstance(v, (int, float, str, bool)):
                assert run.data.params[k] == str(v)
    assert checked > 100
    art = client.list_artifacts(runs[0].info.run_id)
    assert [a.path for a in art] == ["record.json"]

    # a re-annotated record (its efficiency changed) exported again: same runs, new value
    p = next(p for p in sorted(h200_store.rglob("inference-*.json"))
             if json.loads(p.read_text())["roofline"].get("efficiency"))
    d = json.loads(p.read_text())
    metric = next(iter(d["roofline"]["efficiency"]))
    d["roofline"]["efficiency"][metric] = 0.123
    p.write_text(json.dumps(d))
    r = export(h200_store, tracking_uri, "h200")
    assert r.returncode == 0, r.stderr
    assert f"created 0 MLflow runs, updated {len(docs)}" in r.stdout
    client, runs = _runs(tracking_uri, "h200")
    assert len(runs) == len(docs)
    assert len({r.data.tags[ID_TAG] for r in runs}) == len(docs)
    run = next(r for r in runs if r.data.tags["llmbench.run_id"] == d["run_id"]
               and r.data.tags.get("llmbench.point_key") == d["point_key"])
    assert run.data.metrics[f"roofline_efficiency_{metric}"] == pytest.approx(0.123)


def test_no_client_or_no_store_is_one_message(tmp_path, tracking_uri):
    r = export(tmp_path / "missing", tracking_uri, "x")
    assert r.returncode == 2 and "not a results directory" in r.stderr
