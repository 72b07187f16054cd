"""The conformance log (runner.run's JSON) as a Markdown page: per scenario and metric the
truth, what the server really did, each tool's value and error; the tools' versions, their
flag translation (with the flags whose meaning differs across tools) and what each tool says
it measures."""

from __future__ import annotations

import re

UNITS = {"ttft_s": ("ms", 1e3), "itl_s": ("ms", 1e3), "tpot_s": ("ms", 1e3), "e2e_s": ("ms", 1e3),
         "output_tokens": ("tok", 1.0), "input_tokens": ("tok", 1.0),
         "request_throughput_req_s": ("req/s", 1.0), "output_throughput_tok_s": ("tok/s", 1.0)}


def fmt(metric: str, v: float | None, signed: bool = False) -> str:
    if v is None:
        return "—"
    unit, scale = UNITS.get(metric, ("", 1.0))
    x = v * scale
    digits = 2 if unit in ("ms", "req/s") else 1 if unit == "tok/s" else 2
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def cell_text(metric: str, truth: float, c: dict) -> str:
    if c["status"] == "absent":
        return "absent"
    if c["status"] == "cannot":
        return "cannot express"
    if c["status"] == "failed":
        return "failed"
    v = c["values"].get(metric)
    if v is None:
        return "not reported"
    return f"{fmt(metric, v)} ({fmt(metric, v - truth, signed=True)})"


def errors(log: dict, tool: str) -> dict[tuple[str, str], float]:
    """(scenario, metric) -> the tool's error against the truth, where it reported a value."""
    out = {}
    for s in log["scenarios"]:
        for c in s["cells"]:
            if c["tool"] == tool and c["status"] == "ok":
                for m, t in s["truth"].items():
                    if (v := c["values"].get(m)) is not None:
                        out[(s["scenario"], m)] = v - t
    return out


TIMING_TOL_S = 0.001     # a client's own error at low load: its read lag and loopback
RATE_TOL = 0.02          # throughputs: 2% (their windows' edges differ by a request's set-up)


TIMES = ("ttft_s", "itl_s", "tpot_s", "e2e_s")
SLACK_S = 0.002          # the server's own lateness on a busy machine, where the truth is the reference


def verdict(scenario: str, metric: str, truth: float, did: float | None, v: float) -> bool:
    """Whether a tool's value is right: counts exactly the truth; timings within 1 ms of what
    the server really did (its own lateness is not the tool's error). Where requests queue
    (capacity) or meet a warmed cache (prefix-cache) the script's truth is the reference,
    within 3 ms: the server's log runs from its receipt, which a queued client's send
    precedes, and it really did answer a cached prompt fast: that is the trap."""
    from llmbench.conformance.scenarios import SCENARIOS

    if metric in ("output_tokens", "input_tokens"):
        return abs(v - truth) < 1e-9
    sc = SCENARIOS.get(scenario)
    against_truth = did is None or (sc is not None and (sc.runs > 1 or sc.slots is not None))
    ref = truth if against_truth else did
    if metric in TIMES:
        return abs(v - ref) <= TIMING_TOL_S + (SLACK_S if against_truth else 0.0)
    return abs(v - ref) <= RATE_TOL * abs(ref)


def summary(log: dict) -> list[str]:
    """Per tool: how many of its figures are right, and which are not."""
    tools = list(log["versions"])
    lines = ["## Summary", "",
             "A figure is right when a count equals the truth, a time is within 1 ms of what the "
             "server really did (capacity and prefix-cache: within 3 ms of the truth, as "
             "`conformance/page.py` says why), a throughput within 2%. Off: scenario/metric "
             "(error against the truth).", "",
             "| tool | right | off |", "|---|---|---|"]
    for tl in tools:
        right, off = 0, []
        for s in log["scenarios"]:
            c = next((c for c in s["cells"] if c["tool"] == tl), None)
            if c is None or c["status"] != "ok":
                continue
            did = s["server_did"].get(tl, {})
            for m, t in s["truth"].items():
                v = c["values"].get(m)
                if v is None:
                    off.append(f"{s['scenario']}/{m} (not reported)")
                elif verdict(s["scenario"], m, t, did.get(m), v):
                    right += 1
                else:
                    off.append(f"{s['scenario']}/{m} ({fmt(m, v - t, signed=True)})")
        failed = [s["scenario"] for s in log["scenarios"] for c in s["cells"]
                  if c["tool"] == tl and c["status"] in ("failed", "cannot")]
        total = right + len(off)
        extra = f"; failed or not expressible: {', '.join(failed)}" if failed else ""
        lines.append(f"| {tl} | {right} of {total}{extra} | {', '.join(off) or '—'} |")
    return lines + [""]


def portable(text: str, command: str) -> str:
    """Paths as a reader's own clone has them: the run's work folder relative (as the command
    gave it) and the home folder as ~, never the machine the page was made on."""
    words = command.split()
    if "--work" in words and words.index("--work") + 1 < len(words):
        work = words[words.index("--work") + 1].rstrip("/")
        text = re.sub(r"(?<![\w.-])/[^\s`'\"|]*?/" + re.escape(work.lstrip("/")) + r"(?=/|\b)", work, text)
    return re.sub(r"(?<![\w.-])(?:/root|/home/[\w.-]+)(?=/)", "~", text)


def render(log: dict, command: str) -> str:
    return portable(_render(log, command), command)


def _render(log: dict, command: str) -> str:
    tools = list(log["versions"])
    head = [f"{t} {log['versions'][t]}" if log["versions"][t] else f"{t} (absent)" for t in tools]
    lines = [
        "# Conformance: load testers against known answers",
        "",
        f"Made {log['date']} on `{log['host']}` ({log['cpus']} CPUs, load average "
        f"{log['load_average']:.1f} at the end) by `make conformance-docs`, which installs the "
        "peers (`make conformance-peers`: each in its own environment from the registry) and runs:",
        "",
        f"    {command}",
        "",
        "Tools: " + ", ".join(head) + f". Tokenizer: SmolLM2-135M's (`{log['tokenizer']}`).",
        "",
        "Every scenario runs on a fresh known-answer server (`python -m llmbench.conformance.server"
        " --scenario NAME`, src/llmbench/conformance/): it sends each token on a scripted schedule "
        "and logs when each write really left. **truth** is computed from the script alone "
        "(conformance/scenarios.py, the definitions of docs/metrics.md written out afresh); "
        "**server did** is the same statistic from the server's own log over the judged requests "
        "(from each request's receipt: its lateness on a busy machine shows there, not as a "
        "tool's error). Each cell is the tool's value (its error against the truth). A tool's "
        "value is its own headline figure where it prints one (as llmbench's importer keeps it), "
        "else the importer's reading of its raw rows. Times in ms, counts in tokens per request.",
        "",
        "Status words: *absent* (not installed here), *cannot express* (the tool has no way to "
        "ask for the scenario), *failed* (the tool ran and exited with an error or wrote nothing "
        "readable; the reason is below the table), *not reported* (the tool's output has no such "
        "figure).",
        "",
    ]
    lines += summary(log)
    for s in log["scenarios"]:
        lines += [f"## {s['scenario']}", "", s["what"], ""]
        lines.append("| metric | truth | " + " | ".join(["server did"] + tools) + " |")
        lines.append("|---" * (3 + len(tools)) + "|")
        for m, t in s["truth"].items():
            did = [s["server_did"].get(tl, {}).get(m) for tl in tools]
            did = next((d for d in did if d is not None), None)   # the first tool's server run
            cells = [cell_text(m, t, next(c for c in s["cells"] if c["tool"] == tl)) for tl in tools]
            unit = UNITS.get(m, ("", 1))[0]
            lines.append(f"| {m} {s['stats'].get(m, 'p50') if m in UNITS and unit == 'ms' else ''} "
                         f"| {fmt(m, t)} | {fmt(m, did)} | " + " | ".join(cells) + " |")
        hits = {tl: d.get("prefix_hits") for tl, d in s["server_did"].items() if d.get("prefix_hits")}
        if hits:
            lines += ["", "Prefix-cache hits among the judged requests (server log): "
                      + ", ".join(f"{tl} {int(h)}" for tl, h in hits.items()) + "."]
        for c in s["cells"]:
            if c["status"] in ("failed", "cannot"):
                lines += ["", f"- {c['tool']} {c['status']}: {c['why'].strip()[:500]}".replace("\n", " ")]
            warn = [n for n in c.get("notes", []) if "prefix cache" in n or "prefix-cache" in n]
            for n in warn:
                lines += ["", f"- {c['tool']} warned: {n}"]
        lines.append("")
    lines += ["## Flag translation", "",
              "The same workload in each tool's words (for the steady scenario; the others change "
              "only the API and the lengths). *meaning* says what a flag means where it could be "
              "read otherwise, or where the same word means something else in another tool.", ""]
    for tl in tools:
        lines += [f"### {tl}", "", "| llmbench's word | flag | meaning |", "|---|---|---|"]
        for f in log["translation"].get(tl, []):
            lines.append(f"| {f['ours']} | `{f['theirs']}` | {f['meaning']} |")
        lines.append("")
    lines += ["## What each tool says it measures", "",
              "From llmbench's importers (each checked against the tool's source and a real "
              "output file), per metric as shown above.", ""]
    for tl in tools:
        labels = {}
        for s in log["scenarios"]:
            for c in s["cells"]:
                if c["tool"] == tl:
                    labels.update({m: lab for m, lab in c.get("labels", {}).items() if lab})
        if labels:
            lines += [f"**{tl}**", ""] + [f"- {m}: {lab}" for m, lab in sorted(labels.items())] + [""]
    return "\n".join(lines) + "\n"
