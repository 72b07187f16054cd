"""Run every installed tool on every scenario against a fresh known-answer server, read what
each wrote through llmbench's importers, and lay truth, values and errors side by side.

Each (scenario, tool) gets its own server process (a warm-up, a prefix cache or a queue left by
one tool never touches the next) and its own output folder. The server's log says what it
really did (`server_did`: the same statistic over the judged requests), so a tool's error can
be told from the server's own lateness on a busy machine.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llmbench.conformance.scenarios import SCENARIOS, Scenario, truth
from llmbench.conformance.tools import SHOWN_FLAGS, TOOLS, Reading, Tool
from llmbench.metrics import metric

TIMING = ("ttft_s", "itl_s", "tpot_s", "e2e_s")


@dataclass
class Cell:
    tool: str
    status: str                       # ok | absent | cannot | failed
    values: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    why: str = ""                     # absent / cannot / failed: the reason
    wall_s: float = 0.0


@dataclass
class ScenarioResult:
    scenario: str
    what: str
    truth: dict[str, float]
    stats: dict[str, str]
    server_did: dict[str, dict[str, float]] = field(default_factory=dict)   # tool -> metric -> value
    cells: list[Cell] = field(default_factory=list)


# -- the server ----------------------------------------------------------------------------------
class ServerProcess:
    """`python -m llmbench.conformance.server` in its own process group, killed as a group."""

    def __init__(self, sc: Scenario, tokenizer: str | None):
        cmd = [sys.executable, "-m", "llmbench.conformance.server", "--scenario", sc.name]
        if tokenizer:
            cmd += ["--tokenizer", tokenizer]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening "):
            self.stop()
            raise RuntimeError(f"known-answer server did not start: {line}{self.p.stderr.read()[-2000:]}")
        self.url = line.split()[1]

    def log(self) -> list[dict]:
        with urllib.request.urlopen(self.url + "/conformance/log", timeout=30) as r:
            return json.loads(r.read())["requests"]

    def stop(self) -> None:
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait(10)


def server_did(sc: Scenario, log: list[dict]) -> dict[str, float]:
    """The scenario's metrics as the server's own log has them, over the last `requests`
    requests it received (a tool's warm-up requests come first), measured from each
    request's receipt: the reference for a tool's error once the server's lateness is out."""
    n = sc.workload.requests
    reqs = sorted((r for r in log if r["writes"]), key=lambda r: r["t_recv"])[-n:]
    if not reqs:
        return {}
    step = sc.step
    ttft = [r["writes"][0] - r["t_recv"] for r in reqs]
    e2e = [r["writes"][-1] - r["t_recv"] for r in reqs]
    itl = [(b - a) / step for r in reqs for a, b in zip(r["writes"], r["writes"][1:]) for _ in range(step)]
    tpot = [(r["writes"][-1] - r["writes"][0]) / (r["max_tokens"] - 1) for r in reqs]
    st = lambda m, v: statistics.median(v) if sc.stats.get(m, "p50") == "p50" else statistics.fmean(v)  # noqa: E731
    out = {"ttft_s": st("ttft_s", ttft), "e2e_s": st("e2e_s", e2e), "tpot_s": st("tpot_s", tpot),
           "output_tokens": statistics.fmean(r["max_tokens"] for r in reqs),
           "input_tokens": statistics.fmean(r["prompt_tokens"] for r in reqs),
           "prefix_hits": float(sum(r["hit"] for r in reqs))}
    if itl:
        out["itl_s"] = st("itl_s", itl)
    if sc.slots:
        dur = max(r["t_done"] for r in reqs) - min(r["t_recv"] for r in reqs)
        out["request_throughput_req_s"] = len(reqs) / dur
        out["output_throughput_tok_s"] = sum(r["max_tokens"] for r in reqs) / dur
    return out


# -- reading a tool's output ---------------------------------------------------------------------
def _stat(ms, stat: str) -> float | None:
    if ms is None:
        return None
    v = ms.median if stat == "p50" else ms.mean
    if v is None and stat == "p50":
        v = getattr(ms, "p50", None)
    return v


def read_record(rec, sc: Scenario, own: bool) -> Reading:
    """A record's values for the scenario's metrics: the tool's own headline figure where the
    importer kept one, else the importer's (or llmbench's) metric."""
    r = Reading(notes=list(rec.notes))
    for m in truth(sc):
        stat = sc.stats.get(m, "p50")
        if m in ("output_tokens", "input_tokens"):
            continue
        fig = rec.tool_figures.get(m)
        v = _stat(fig, stat) if fig is not None else None
        if v is not None:
            r.labels[m] = getattr(fig, "label", "") or ""
        else:
            v = _stat(rec.metrics.get(m), stat)
            if v is not None and own and (cat := metric(m)) is not None:
                r.labels[m] = cat.description
            elif v is not None:
                r.labels[m] = "(no own figure: llmbench's importer, from the tool's raw rows)"
        if v is not None:
            r.values[m] = v
    if own:   # llmbench's record: counts over the answered requests
        s = rec.serving or {}
        ok = (s.get("requests") or 0) - (s.get("errors_total") or 0)
        if ok:
            r.values["output_tokens"] = s["output_tokens"] / ok
            r.values["input_tokens"] = s["prompt_tokens"] / ok
            r.labels["output_tokens"] = f"the client's count per answered request ({s.get('token_count_source')})"
            r.labels["input_tokens"] = "the server's usage.prompt_tokens per answered request, else the tokenizer's"
    else:
        for m, key in (("output_tokens", "output_len"), ("input_tokens", "input_len")):
            if rec.workload.get(key) is not None:
                r.values[m] = float(rec.workload[key])
                r.labels[m] = f"the mean of the tool's per-request {key} (rounded by the importer)"
    return r


def read_output(tool: Tool, sc: Scenario, out: Path) -> Reading:
    if tool.importer is None:
        from llmbench.store.store import Store

        recs = [r for r in Store(out).records() if r.kind == "serving"]
        if not recs:
            raise RuntimeError(f"no serving record in {out}")
        return read_record(recs[-1], sc, own=True)
    from llmbench.importers.registry import parse

    res = parse(tool.importer, tool.files(out))
    if not res.records:
        raise RuntimeError(f"{tool.importer} importer read no record from {out}: {res.problems}")
    rd = read_record(res.records[-1], sc, own=False)
    rd.notes += [f"importer: {p}" for p in res.problems]
    return rd


# -- the run -------------------------------------------------------------------------------------
def _in_process(argv: list[str]) -> tuple[int, str, str]:
    """llmbench's own command in this process (tests: no interpreter start per scenario)."""
    import contextlib
    import io

    from llmbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def run_tool(tool: Tool, sc: Scenario, srv: ServerProcess, tokenizer: str, out: Path,
             timeout_s: float, in_process: bool = False) -> tuple[Cell, list[dict]]:
    t0 = time.perf_counter()
    cell = Cell(tool.name, "ok")
    for i in range(sc.runs):
        d = out / f"run{i}"
        d.mkdir(parents=True, exist_ok=True)
        argv = tool.argv(sc, srv.url, tokenizer, d)
        env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
        if in_process and tool.name == "llmbench":   # argv: python -m llmbench ARGS
            p = subprocess.CompletedProcess(argv, *_in_process(argv[3:]))
        else:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=d, env=env)
        (d / "stdout.txt").write_text(p.stdout)
        (d / "stderr.txt").write_text(p.stderr)
        if p.returncode != 0:
            cell.status = "failed"
            cell.why = f"exit {p.returncode}: " + (p.stderr.strip() or p.stdout.strip())[-600:]
            cell.wall_s = time.perf_counter() - t0
            return cell, srv.log()
    try:
        rd = read_output(tool, sc, d)
    except Exception as e:   # noqa: BLE001 - an unreadable output is the tool's finding, not ours
        cell.status, cell.why = "failed", f"output not read: {e}"
    else:
        cell.values, cell.labels, cell.notes = rd.values, rd.labels, rd.notes
    cell.wall_s = time.perf_counter() - t0
    return cell, srv.log()


def default_tokenizer() -> str:
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m").source


def run(scenarios: list[str], tools: list[str], work: Path, tokenizer: str | None = None,
        timeout_s: float = 300.0, progress=print, in_process: bool = False) -> dict:
    """The whole comparison; in_process=True runs llmbench's own command in this process."""
    tokenizer = tokenizer or default_tokenizer()
    versions, results = {}, []
    for name in tools:
        t = TOOLS[name]
        versions[name] = t.version() if t.exe() is not None else None
    for sname in scenarios:
        sc = SCENARIOS[sname]
        sr = ScenarioResult(sname, sc.what, truth(sc), {m: sc.stats.get(m, "p50") for m in truth(sc)})
        for name in tools:
            t = TOOLS[name]
            if versions[name] is None:
                sr.cells.append(Cell(name, "absent", why="not installed (make conformance-peers)"))
                continue
            if (why := t.cannot(sc)):
                sr.cells.append(Cell(name, "cannot", why=why))
                continue
            srv = ServerProcess(sc, tokenizer)
            try:
                cell, log = run_tool(t, sc, srv, tokenizer, work / sname / name, timeout_s, in_process)
            except subprocess.TimeoutExpired:
                cell, log = Cell(name, "failed", why=f"timed out after {timeout_s:g} s"), srv.log()
            finally:
                srv.stop()
            sr.server_did[name] = server_did(sc, log)
            sr.cells.append(cell)
            progress(f"{sname:<13} {name:<15} {cell.status:<7} {cell.wall_s:5.1f} s  {cell.why[:160]}")
        results.append(sr)
    return {"date": time.strftime("%Y-%m-%d"), "versions": versions, "tokenizer": tokenizer,
            "host": os.uname().nodename, "cpus": os.cpu_count(),
            "load_average": os.getloadavg()[0],
            "translation": translation(tools, work),
            "scenarios": [asdict(s) for s in results]}


def translation(tools: list[str], work: Path) -> dict[str, list[dict]]:
    """Each tool's flags for the default workload (the steady scenario), with the warnings."""
    sc = SCENARIOS["steady"]
    out = {}
    for name in tools:
        fl = SHOWN_FLAGS.get(name, TOOLS[name].flags)(sc, "URL", "TOKENIZER", work / "_flags" / name)
        out[name] = [asdict(f) for f in fl]
    return out
