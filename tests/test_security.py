"""Security: API keys reach no output (records, logs, reports, exports), the dashboard listens
on loopback unless told otherwise, YAML is safe-loaded, CSV exports neutralise formulas."""

import csv
import io
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmbench.store import Record, Store
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo
from llmbench.store.store import REDACTED, redact, register_secret
from tests.conftest import has, needs_llamacpp

LLMBENCH = [sys.executable, "-m", "llmbench"]


def _record(**kw) -> Record:
    return Record(run_id="r1", point_key="k1", kind="serving", backend=BackendInfo(name="vllm"),
                  model=ModelInfo(name="m"), hardware=HardwareInfo(name="cpu"), **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and needle.encode() in p.read_bytes():
            hits.append(str(p))
    return hits


# -- the redaction layer under every record --------------------------------------------------------
def test_store_redacts_secret_env_values_wherever_they_hide(tmp_path, monkeypatch):
    canary = "sk-canary-" + secrets.token_hex(8)
    quoted = 'tok"en\\' + secrets.token_hex(6)  # a value that JSON must escape
    monkeypatch.setenv("MY_SERVICE_API_KEY", canary)
    monkeypatch.setenv("HF_TOKEN", quoted)
    rec = _record(error=f"401 for key {canary}", notes=[f"header Bearer {quoted}"],
                  env={"argv": ["llmbench", "serve", "--api-key", "sk-on-the-command-line",
                                "--token=also-secret", "--api-key-env", "MY_SERVICE_API_KEY"]},
                  backend_options_seen={canary: 1})
    path = Store(tmp_path).write(rec)
    text = path.read_text()
    for secret in (canary, quoted, json.dumps(quoted)[1:-1], "sk-on-the-command-line", "also-secret"):
        assert secret not in text
    doc = json.loads(text)
    assert doc["error"] == f"401 for key {REDACTED}"
    assert doc["env"]["argv"] == ["llmbench", "serve", "--api-key", REDACTED, f"--token={REDACTED}",
                                  "--api-key-env", "MY_SERVICE_API_KEY"]  # the variable's name stays


def test_a_key_read_from_a_file_is_redacted_once_registered(tmp_path):
    key = "file-key-" + secrets.token_hex(8)
    register_secret(key)
    path = Store(tmp_path).write(_record(notes=[f"used {key}"]))
    assert key not in path.read_text() and REDACTED in path.read_text()


def test_records_without_secrets_are_written_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # not a secret: neither name nor value
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to redact safely
    rec = _record(notes=["tokenizers false abc"], env={"argv": ["--kv-cache-dtype", "f16"]})
    path = Store(tmp_path).write(rec)
    assert path.read_text() == rec.model_dump_json(indent=1, exclude_none=False)
    assert redact({"a": ["x"]}, []) == {"a": ["x"]}


@pytest.mark.engine
@pytest.mark.slow
@needs_llamacpp
@pytest.mark.skipif(not has("aiohttp") or not has("fastapi"), reason="llama-cpp-python[server] not installed")
def test_canary_api_key_never_reaches_any_output(tmp_path):
    """A real llama.cpp server that demands the key; llmbench serve authenticates with it from
    the environment and from a key file; then every output is searched for it."""
    from llmbench.models.sources import smollm2_gguf

    canary = "sk-canary-" + secrets.token_hex(12)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()),
                               "--host", "127.0.0.1", "--port", str(port), "--api_key", canary,
                               "--n_threads", "1", "--n_ctx", "256"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "llama.cpp server did not start"
                time.sleep(0.3)
        res, report = tmp_path / "results", tmp_path / "report"
        keyfile = tmp_path / "key.txt"
        keyfile.write_text(canary + "\n")
        env = {**os.environ, "LLMBENCH_CANARY_API_KEY": canary, "COLUMNS": "200"}
        base = ["serve", f"http://127.0.0.1:{port}", "--model", "smollm2-135m", "-n", "2", "-c", "1",
                "--input-len", "8", "--output-len", "4", "--results", str(res)]
        outputs = []
        for how in (["--api-key-env", "LLMBENCH_CANARY_API_KEY"], ["--api-key-file", str(keyfile)]):
            r = subprocess.run([*LLMBENCH, *base, *how], capture_output=True, text=True, env=env, timeout=180)
            assert r.returncode == 0, r.stderr[-2000:]  # the server refuses requests without the key
            outputs += [r.stdout, r.stderr]
        recs = Store(res).records()
        assert len(recs) >= 2 and all(x.status == "ok" for x in recs)
        for args in (["results", "--results", str(res), "--format", "json"],
                     ["results", "--results", str(res), "--format", "csv"],
                     ["results", "--results", str(res)],
                     ["report", "--results", str(res), "--out", str(report), "--no-png"]):
            r = subprocess.run([*LLMBENCH, *args], capture_output=True, text=True, env=env, timeout=180)
            if args[0] == "report" and "No such command" in r.stderr:
                continue  # the report command is another part's; searched when it exists
            assert r.returncode == 0, (args, r.stderr[-2000:])
            outputs += [r.stdout, r.stderr]
        assert canary in keyfile.read_text()  # the search below could find it
        assert not [o for o in outputs if canary in o]
        assert _files_containing(res, canary) == []
        if report.exists():
            assert _files_containing(report, canary) == []
    finally:
        server.terminate()
        server.wait(10)


# -- the dashboard listens on loopback by default ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not has("dash"), reason="dash not installed (pip install 'llmbench[dashboard]')")
def test_dashboard_binds_loopback_by_default(tmp_path):
    psutil = pytest.importorskip("psutil")
    port = _free_port()
    p = subprocess.Popen([*LLMBENCH, "dashboard", "--results", str(tmp_path), "--port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, addrs = time.time() + 90, []
        while not addrs and time.time() < deadline:
            assert p.poll() is None, p.stderr.read()[-2000:]
            procs = [psutil.Process(p.pid), *psutil.Process(p.pid).children(recursive=True)]
            addrs = [c.laddr for q in procs for c in q.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
            time.sleep(0.3)
        assert addrs, "the dashboard never listened"
        assert {a.ip for a in addrs} <= {"127.0.0.1", "::1"}
    finally:
        p.terminate()
        p.wait(10)


# -- YAML is safe-loaded ------------------------------------------------------------------------------
def test_yaml_tags_never_execute(tmp_path):
    marker = tmp_path / "pwned"
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f'batch_size: !!python/object/apply:os.system ["touch {marker}"]\n')
    r = subprocess.run([*LLMBENCH, "run", str(spec), "--results", str(tmp_path / "res")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "invalid YAML" in r.stderr
    assert not marker.exists() and not (tmp_path / "res").exists()


# -- CSV exports neutralise spreadsheet formulas --------------------------------------------------
def test_csv_export_neutralises_formulas(tmp_path):
    from llmbench.cli.results import _csv_safe

    for bad in ("=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=x", "\r=x"):
        assert _csv_safe(bad).startswith("'")
    assert _csv_safe("llamacpp") == "llamacpp" and _csv_safe(-2.5) == -2.5

    evil = '=HYPERLINK("http://x.invalid","click")'
    rec = Record(run_id="r1", point_key="k", kind="inference", backend=BackendInfo(name="@evil"),
                 model=ModelInfo(name=evil), hardware=HardwareInfo(name="cpu"), error="-danger")
    Store(tmp_path).write(rec)
    r = subprocess.run([*LLMBENCH, "results", "--results", str(tmp_path), "--format", "csv"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert rows and rows[0]["model"] == "'" + evil and rows[0]["backend"] == "'@evil"
    cells = [v for row in rows for v in row.values() if v]
    assert not any(v[0] in "=+@" for v in cells)
    assert all(not v.startswith("-") or _is_number(v) for v in cells)


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def test_a_flag_naming_a_key_is_found_wherever_it_stands_in_the_json():
    # _has_flag looks only where a JSON string starts with '-': the same answers as a search
    # of the whole text, on texts made by hand.
    import re

    from llmbench.store.store import _has_flag

    whole = re.compile(r'(?i)"--?[\w-]*(key|token|secret|password)(=[^"]*)?"')
    texts = ['{"argv": ["run", "--api-key", "x"]}', '{"argv": ["--API_TOKEN=abc"]}',
             '{"argv": ["-secret"]}', '{"point_key": "p", "argv": ["--model", "m"]}',
             '{"a": "-", "b": "--"}', '{"argv": ["--model", "--hf-token=t"]}', '"-',
             '{"note": "a \\"--password\\" inside"}', '{"x": "--passwordless"}']
    for t in texts:
        assert _has_flag(t) == bool(whole.search(t)), t
    assert _has_flag(texts[0]) and not _has_flag(texts[3])
