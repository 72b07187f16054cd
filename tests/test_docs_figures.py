"""Every figure a doc quotes names its record or committed log (issue 37 item 8): each
`docs/data/...`, `results/...` or `benchmarks/h200/outputs/...` path and each H200 run id a doc
names exists in the tree, and the training levers table is what the committed records say
(each mean recomputed here from the records' per-step samples)."""

import glob
import json
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a path starts the token (not inside gh-pages/docs/data or lib-results/...)
PATH = re.compile(r"(?<![\w/.-])(?:docs/data|results|benchmarks/h200/outputs)/[\w.\-*{},/]*")
RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")


def expand(p: str) -> list[str]:
    """Brace alternatives, as a shell expands them: a{1,2}b -> a1b, a2b."""
    m = re.search(r"\{([^}]*)\}", p)
    if not m:
        return [p]
    return [x for alt in m.group(1).split(",") for x in expand(p[:m.start()] + alt + p[m.end():])]


def named_paths(text: str) -> list[str]:
    """The paths a text names; one broken over a line after a '-' is joined again."""
    out = []
    for m in PATH.finditer(text):
        p = m.group(0)
        if p.endswith("-") and text[m.end():m.end() + 1] == "\n":
            p += re.match(r"\s*([\w.\-*{},/]*)", text[m.end():]).group(1)
        out.append(p.rstrip(".,/"))
    return out


def test_path_joining_and_braces():
    text = "logs `docs/data/a-\n   b.txt` and results/h200/x{1,2}, not gh-pages/docs/data/y"
    assert named_paths(text) == ["docs/data/a-b.txt", "results/h200/x{1,2}"]
    assert expand("a{1,2}b{x,y}") == ["a1bx", "a1by", "a2bx", "a2by"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_named_log_and_record_exists(doc):
    text = doc.read_text()
    missing = [q for p in named_paths(text) for q in expand(p) if not glob.glob(str(ROOT / q))]
    missing += [f"run {r}" for r in RUN_ID.findall(text)
                if not any(d.is_dir() for d in (ROOT / "results").glob(f"*/{r}"))]
    assert not missing, f"{doc.name} names what is not in the tree: {missing}"


def test_the_training_levers_table_is_the_records_mean():
    """Each row names its two records (RUN/POINT-KEY-PREFIX); its off and on figures are the
    means of those records' per-step samples, recomputed here, with the doc's rounding."""
    rows = [line for line in (ROOT / "docs" / "training.md").read_text().splitlines()
            if line.startswith("| ") and "` -> `" in line]
    assert len(rows) >= 19
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        metric, off, on = cells[2], cells[3], cells[4]
        refs = re.findall(r"`([^`]+)`", cells[-1])
        for ref, shown in zip(refs, (off, on)):
            run, key = ref.split("/")
            (path,) = glob.glob(str(ROOT / "results" / "h200" / run / f"*-{key}*.json"))
            samples = json.loads(Path(path).read_text())["metrics"][metric]["samples"]
            mean = statistics.fmean(samples)
            assert shown == (f"{mean:.3f}" if metric == "mfu" else f"{mean:.1f}"), (ref, metric, shown, mean)


def test_the_h100_training_tables_are_the_records_medians():
    """docs/training.md's H100 gate and sequence-length rows: each tok/s is the median of the
    named record's per-step samples, recomputed here."""
    text = (ROOT / "docs" / "training.md").read_text()
    section = text[text.index("## Measured on H100, 2026-12-07"):text.index("## Levers on and off, one H200")]
    checked = 0
    for line in section.splitlines():
        run = re.search(r"`results/h100/(\d{8}T\d{6}Z-[0-9a-f]{6})`", line)
        if not (line.startswith("| ") and run) or "out tok/s" in line:
            continue
        (path,) = glob.glob(str(ROOT / "results" / "h100" / run.group(1) / "training-*.json"))
        samples = json.loads(Path(path).read_text())["metrics"]["tokens_per_s"]["samples"]
        shown = line.split("|")[2].strip()
        assert shown == f"{statistics.median(samples):,.0f}", (run.group(1), shown)
        checked += 1
    seq_rows = [line for line in section.splitlines() if re.match(r"\| \d{3,4} \| [\d,]+ \|", line)]
    by_seq = {}
    for f in glob.glob(str(ROOT / "results" / "h100" / "20261207T221442Z-59ab16" / "*.json")):
        d = json.loads(Path(f).read_text())
        by_seq[d["workload"]["seq_len"]] = statistics.median(d["metrics"]["tokens_per_s"]["samples"])
    for line in seq_rows:
        seq, shown = (c.strip() for c in line.strip("|").split("|")[:2])
        assert shown == f"{by_seq[int(seq)]:,.0f}", (seq, shown)
    assert checked == 3 and len(seq_rows) == 5


def _numbers_in(text: str) -> list[float]:
    """Every number of a committed log, as written and, for a fraction, as a percentage."""
    vals = [float(m.replace(",", "")) for m in re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text)]
    return vals + [100 * v for v in vals if v <= 1.5]


def test_the_h200_study_page_quotes_its_committed_logs():
    """docs/h200-vs-study.md (issue 54 item 7): its table is the committed script output, and
    every throughput and efficiency its prose quotes is a number of one of the two logs it
    names, at the prose's rounding."""
    doc = (ROOT / "docs" / "h200-vs-study.md").read_text()
    table_log = (ROOT / "docs" / "data" / "h200-study-table-20261207.md").read_text()
    prose_log = (ROOT / "docs" / "data" / "h200-study-prose-20261207.txt").read_text()
    rows = [ln for ln in doc.splitlines() if ln.startswith("|")]
    assert rows and rows == [ln for ln in table_log.splitlines() if ln.startswith("|")]
    prose = doc.split("## What differs, in words", 1)[1].split("## The table", 1)[0]
    prose = re.sub(r"`[^`]*`", "", prose)        # run ids and paths are not figures
    quoted = re.findall(r"(\d[\d,]*(?:\.\d+)?)(?=%| (?:total |generated )?tok/s| ->| =)", prose)
    assert len(quoted) >= 20, quoted
    pool = _numbers_in(table_log) + _numbers_in(prose_log)
    for q in quoted:
        digits = len(q.split(".")[1]) if "." in q else 0
        x = float(q.replace(",", ""))
        assert any(round(v, digits) == x for v in pool), f"{q} is in neither log"


def test_the_h200_prediction_errors_are_the_committed_check():
    """docs/predict.md's H200 error table (issue 54 item 7) is the committed output of
    `llmbench predict --check results/h200`, row for row."""
    doc = (ROOT / "docs" / "predict.md").read_text()
    log = (ROOT / "docs" / "data" / "predict-check-h200-20261207.txt").read_text()
    table = doc.split("docs/data/predict-check-h200-20261207.txt", 1)[1]
    rows = [ln for ln in table.split("\n\n", 2)[1].splitlines() if ln.startswith("|")]
    assert len(rows) == 10
    assert rows == [ln for ln in log.splitlines() if ln.startswith("|")]
