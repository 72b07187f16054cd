"""Prometheus text exposition format -> samples `(name, labels, value)`.

`parse_small` reads what engine servers write: `name{label="v",...} value [timestamp]` lines,
`#` comments, escaped quotes in label values, `+Inf`/`NaN`. It is what the scraper uses: on a
vLLM-sized page (25 KiB) it costs ~1 ms of CPU where prometheus_client's parser costs ~7 ms
(measured on the 2-core CI machine), and scraping must not take CPU from the client. The
tests check that both give the same samples; `parse` uses prometheus_client when installed (and
falls back to the small parser where its stricter reading refuses a page).
"""

from __future__ import annotations

import math
import re

Sample = tuple[str, dict[str, str], float]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def parse(text: str) -> list[Sample]:
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return parse_small(text)
    try:
        return [(s.name, dict(s.labels), float(s.value))
                for fam in text_string_to_metric_families(text) for s in fam.samples]
    except ValueError:   # its parser is strict about details engines get wrong: read what we can
        return parse_small(text)


def parse_small(text: str, keep: tuple[str, ...] | None = None) -> list[Sample]:
    """`keep`: only samples whose name starts with one of these (the rest of the page is
    skipped before any regular expression runs: most of an engine's page is not needed)."""
    out: list[Sample] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or (keep is not None and not line.startswith(keep)):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, labels_text, value = m.groups()
        try:
            v = float(value)
        except ValueError:
            continue
        labels = {}
        if labels_text:
            for k, raw in _LABEL.findall(labels_text[1:-1]):
                labels[k] = raw.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        out.append((name, labels, v if not math.isnan(v) else math.nan))
    return out
