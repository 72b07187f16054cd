"""The static report: one self-contained HTML file (plotly.js inlined once, no CDN, no network)
plus a PNG of every figure, all from the same figure code as the dashboard."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from llmbench import __version__
from llmbench.report import best as best_mod
from llmbench.report import data as data_mod
from llmbench.report import figures, shapes, tables, views

SECTIONS = (("own", "Your results"), ("reference", "Published reference data (LLM-Inference-Bench)"))
TOOL_FIGURES_NOTE = (
    "Medians (whole-run figures: the value). A tool that times TTFT and E2E from its actual send "
    "reports less than llmbench's scheduled-send definition: the difference is that tool's own "
    "dispatch delay, its client falling behind the schedule. A tool's 'ITL' is often a per-request "
    "average (llmbench's TPOT); llmbench's ITL pools every gap, and is marked client-limited when "
    "the tool's client read several tokens at once (gaps of zero).")
REPORT_VIEWS = ("batch", "latency", "serving", "length", "kv_block", "dtype", "parallelism",
                "power", "energy", "perplexity", "distributions", "training")


@dataclass
class Report:
    html: Path
    pngs: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, figures.Fig] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class _Block:
    anchor: str
    title: str
    subtitle: str = ""
    fig: figures.Fig | None = None
    table: str = ""


def _pins_text(pins: dict) -> str:
    parts = []
    for k, v in pins.items():
        vals = ", ".join(str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)
                         for x in v)
        parts.append(f"{k} = {vals}")
    return " · ".join(parts)


def _view_blocks(d: data_mod.Data, source: str) -> list[_Block]:
    blocks: list[_Block] = []
    drawn: set[tuple[str, str]] = set()  # (record kind, request shape) some figure shows
    for key in REPORT_VIEWS:
        view = views.VIEWS[key]
        rows = views.view_rows(d, view)
        rows = rows[rows["source"] == source]
        if rows.empty:
            continue
        if view.kinds != ("serving",):
            blocks += _view_figures(d, source, key, rows, {}, drawn)
            continue
        # serving: each request shape under its own headline (report/shapes.py)
        for shape in shapes.shapes_in(rows):
            ys = shapes.headline_metrics("serving", shape) if shapes.own_headline(shape) else None
            blocks += _view_figures(d, source, key, shapes.of_shape(rows, shape),
                                    views.shape_filter(shape), drawn, shape, ys)
    return blocks + _kind_blocks(d, source, drawn)


def _view_figures(d: data_mod.Data, source: str, key: str, rows: pd.DataFrame, only: dict,
                  drawn: set[tuple[str, str]], shape: str = shapes.DEFAULT,
                  ys: list[str] | None = None) -> list[_Block]:
    """A view's default figure over `rows` (and those of its `also` metrics with data); `only`:
    the filter that keeps them (one request shape's), `ys`: the y metrics in place of the
    view's (a shape's own headline: the first with data drawn, the others beside it)."""
    view = views.VIEWS[key]
    if ys is not None:
        ys = [m for m in ys if views.value_column(rows, m, "mean") in rows.columns
              and rows[views.value_column(rows, m, "mean")].notna().any()]
        if not ys:
            return []
    x = views.default_x(d, view, rows)
    y = ys[0] if ys else views.default_y(d, view, rows)
    also = ys[1:] if ys else view.also
    ch = views.Choice(view=key, x=x, y=y)
    ycol = views.value_column(rows, y, "mean")
    if ycol not in rows.columns or x not in rows.columns:
        return []
    if rows[ycol].notna().sum() == 0 or rows[x].notna().sum() == 0:
        return []
    if view.plot == "xy" and rows.loc[rows[ycol].notna(), x].nunique() < 2:
        return []  # one x value is a table, not a trend
    color, pins = views.default_choice(d, view, x, y, df=rows)
    ch.color = color
    ch.filters = {**pins, **only, "source": [source]}
    said = "" if shape == shapes.DEFAULT else f" — {shape} requests"
    title = f"Distribution of {figures.label(y).split(' (')[0].lower()}" \
        if view.plot == "ecdf" else (view.title + said if ys else None)
    fig, pts = views.build(d, ch, height=500, title=title)
    if view.plot == "ecdf" and len(pts) == 0:
        return []
    anchor = f"{source}-{key}" + ("" if shape == shapes.DEFAULT else f"-{shape}")
    blocks = [_Block(anchor, title or view.title, _pins_text(pins) or view.help, fig)]
    pinned = views.apply_filters(rows, pins)
    drawn |= {(k, shape) for k in pinned.loc[pinned[ycol].notna(), "kind"]}
    for m in also:  # e.g. ITL and E2E beside TTFT; MFU and scaling beside TFLOP/s
        col = views.value_column(rows, m, "mean")
        # Drawn only when the pinned slice has it: else the figure would be an empty frame.
        if m == y or col not in rows.columns or not (pinned[col].notna() & pinned[x].notna()).any():
            continue
        t2 = f"Distribution of {figures.label(m).split(' (')[0].lower()}" \
            if view.plot == "ecdf" else \
            f"{figures.label(m).split(' (')[0]} vs {figures.label(x).split(' (')[0].lower()}{said}"
        f2, _ = views.build(d, views.Choice(view=key, x=x, y=m, color=color, filters=ch.filters),
                            height=460 if view.plot == "ecdf" else 500, title=t2)
        blocks.append(_Block(f"{anchor}-{m}", f2.title, _pins_text(pins), f2))
    return blocks


def _kind_blocks(d: data_mod.Data, source: str, drawn: set[tuple[str, str]]) -> list[_Block]:
    """A table for every record kind (and request shape) in the section: perplexity and
    training always (their numbers are the point), serving and offline inference when no
    figure shows them (a single point has no trend to draw)."""
    if d.df.empty:
        return []
    df = d.df[d.df["source"] == source]
    out = []
    for kind in ("serving", "inference", "perplexity", "training"):
        for shape, title, rows, note in tables.kind_tables(df, kind):
            if (kind, shape) in drawn and kind in ("serving", "inference"):
                continue
            anchor = f"{source}-table-{kind}" + ("" if shape == shapes.DEFAULT else f"-{shape}")
            out.append(_Block(anchor, title, note, table=_table_html(_filled(rows))))
    return out


# Columns of words, allowed to wrap: a table must fit its card (every other cell keeps one line).
WRAP_COLUMNS = {tables.SETTINGS, "configuration", "hardware · engine", "model", "flags", "check",
                "point", "what differs", "measured"}


def _table_html(rows: list[dict[str, str]], cls: str = "") -> str:
    if not rows:
        return ""
    wrap = [c in WRAP_COLUMNS for c in rows[0]]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr class='{}'>".format("pareto" if r.get("Pareto") else "") +
                   "".join(f"<td class='wrap{' settings' if c == tables.SETTINGS else ''}'>"
                           f"{html.escape(v)}</td>" if w else f"<td>{html.escape(v)}</td>"
                           for (c, v), w in zip(r.items(), wrap)) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _filled(rows: list[dict[str, str]], drop=()) -> list[dict[str, str]]:
    """The rows less the columns no row fills (and those `drop` names, said by the title): a
    column of dashes costs the card its width."""
    keep = [c for c in (rows[0] if rows else {}) if c not in drop and
            any(r[c] not in ("", "–", "≤ –") for r in rows)]
    return [{c: r[c] for c in keep} for r in rows]


def _points_text(rows: pd.DataFrame, what: str, where: str) -> str:
    """'80 point(s) were measured while ...: training 72, inference 8 (`llmbench results --where
    throttled` lists them)': counted by kind, never a list of point keys."""
    by_kind = ", ".join(f"{k} {n}" for k, n in rows["kind"].fillna("?").value_counts().items())
    return (f"<p class='contended'>{len(rows)} point(s) {what} ({by_kind}; <code>llmbench results "
            f"--where {where}</code> lists them)</p>")


def _best_blocks(d: data_mod.Data) -> list[_Block]:
    """One ranked table + Pareto figure per source, for its most measured workload."""
    blocks = []
    df = d.df
    if df.empty:
        return blocks
    for source, name in (("own", "your results"), ("reference", "the published data")):
        for mode, kinds in best_mod.MODES.items():
            rows = df[(df["source"] == source) & (df["status"] == "ok") & df["kind"].isin(kinds)]
            if rows.empty or "input_len" not in rows:
                continue
            thr = [c for c in ("total_throughput_tok_s_mean", "output_throughput_tok_s_mean")
                   if c in rows.columns]
            if not thr:
                continue
            rows = rows[rows[thr].notna().any(axis=1) & rows["input_len"].notna()]
            if rows.empty:
                continue
            model, il, ol = rows.groupby(["model", "input_len", "output_len"],
                                         dropna=False).size().idxmax()
            q = best_mod.BestQuery(model=model, input_len=int(il), mode=mode,
                                   output_len=None if pd.isna(ol) else int(ol), sources=[source],
                                   top=15)
            ranked, notes = best_mod.find_best(d, q)
            if ranked.empty:
                continue
            what = "serving" if mode == "serving" else "offline batches"
            title = f"Best configurations in {name} ({what}): {model}, input {int(il)}" + \
                    ("" if pd.isna(ol) else f", output {int(ol)}")
            latency = "median request E2E" if mode == "serving" else "batch latency"
            sub = f"Ranked by throughput against {latency}; ★ = on the Pareto frontier. " + \
                  ("TTFT/TPOT marked ≤ are bounds from the batch latency, not measurements. "
                   if mode == "offline" else "") + " ".join(notes)
            anchor = f"best-{source}" + ("-serving" if mode == "serving" else "")
            fig = figures.pareto_figure(ranked, title=f"Throughput against latency — {model}")
            blocks.append(_Block(anchor, title, sub, fig,
                                 _table_html(_filled(best_mod.table_rows(ranked, top=15),
                                                     drop=("source",)), "ranked")))
    return blocks


def _empty_text(d: data_mod.Data, sec: str) -> str:
    """Why a section is empty, in the store's own terms."""
    if _EMPTY.get(sec):
        return _EMPTY[sec]
    df = d.df
    rows = df if df.empty or sec in ("best", "side") else df[df["source"] == sec]
    if rows.empty:
        return "No records of this kind in the store." + (
            " `llmbench import llm-inference-bench DIR` adds the published data beside yours."
            if sec == "reference" else "")
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        return f"None of the {len(rows)} record(s) succeeded; `llmbench results` shows their errors."
    return "No figure or table applies to these records."


CSS = """
table.findings td,table.counters td{white-space:normal;vertical-align:top;max-width:380px}
table.findings td:nth-child(5){font-weight:650}
*{box-sizing:border-box} body{margin:0;font-family:Inter,"Segoe UI",Helvetica,Arial,sans-serif;
color:#1d2433;background:#f4f6fa} header{background:linear-gradient(120deg,#1b2a4a,#2f4f8f);color:#fff;
padding:28px 40px 22px} header h1{margin:0 0 4px;font-size:26px;font-weight:650}
header p{margin:0;opacity:.8;font-size:14px} .cards{display:flex;gap:14px;flex-wrap:wrap;margin-top:18px}
.card{background:rgba(255,255,255,.12);border-radius:10px;padding:10px 16px;min-width:120px}
.card b{display:block;font-size:22px} .card span{font-size:12px;opacity:.85}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #e3e7ef;padding:8px 40px;z-index:5;
font-size:13px;white-space:nowrap;overflow-x:auto} nav a{color:#2f4f8f;margin-right:16px;text-decoration:none}
main{max-width:1240px;margin:0 auto;padding:18px 28px 60px} h2{margin:34px 0 10px;font-size:21px}
section.block{background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(20,30,60,.08);
padding:16px 18px 10px;margin:14px 0} section.block h3{margin:2px 0 2px;font-size:16px}
.sub{color:#667;font-size:12.5px;margin:0 0 6px} .tablewrap{overflow-x:auto;margin-top:8px}
table{border-collapse:collapse;font-size:12.5px;width:100%} th{background:#eef1f7;text-align:left;
padding:6px 6px;position:sticky;top:0} td{padding:5px 6px;border-top:1px solid #eef0f4}
tr.pareto td{background:#fff8e1} td{white-space:nowrap} td.wrap{white-space:normal;min-width:90px}
table.ranked td.wrap:nth-child(4){min-width:200px} td.wrap.settings{min-width:150px} .defs{font-size:13px;color:#333;line-height:1.5}
.empty{color:#667;font-style:italic}
"""

DEFINITIONS = """
<ul class='defs'>
<li><b>TTFT</b>: scheduled send (serving) or batch start (offline) to the first generated token.
<b>TPOT</b>: (last token − first token) / (output tokens − 1), per request.
<b>ITL</b>: every gap between consecutive tokens, pooled; a chunk of k tokens counts as k tokens.
<b>E2E</b>: send to last token. <b>Batch latency</b>: the whole offline batch (the paper's "Latency").</li>
<li><b>Output throughput</b> = generated tokens / wall time; <b>total throughput</b> = (prompt + generated)
tokens / wall time (the paper's definition, used to rank and to compare with the published data).</li>
<li>Records of one configuration (repeated runs, duplicate published rows) are one point: the mean,
with an error bar of the pooled spread √(mean within-record variance + variance between records).</li>
<li>Dotted lines are the roofline bound of the same configuration (llmbench.roofline); efficiency =
measured / bound. Open markers and dashed lines are published reference data.</li>
</ul>
"""


def _findings_sections(results, reference=None) -> list[tuple[str, str, list[_Block]]]:
    """The study's findings re-tested on the own hardware, and the GPU's counters beside the
    roofline (report/findings.py); a section says why it is empty."""
    from llmbench.report import findings as fv

    fs, why = fv.compute(results, reference)
    f_blocks = [_Block("findings-table", "Finding by finding",
                       "The published figure, the same quantity from the study's data and from your "
                       "records, each against its own hardware's roofline, and the verdict "
                       "(`llmbench findings` prints the same).",
                       table=_table_html(fv.findings_rows(fs), "findings"))] if fs else []
    rows = fv.own_counter_rows(results)
    c_rows = fv.counter_rows(rows)
    c_blocks = [_Block("counters-fig", "Counters vs roofline", "", fig=fv.counters_figure(rows)),
                _Block("counters-table", "Per record",
                       "NVML GPM over each point's timed window; a DISAGREE says which way the model "
                       "and the hardware part.", table=_table_html(c_rows, "counters"))] if c_rows else []
    _EMPTY["findings"] = why or ""
    _EMPTY["counters"] = ("No own GPU record carries hardware counters yet (records from before them, "
                          "or CPU runs: their counters are absent with the reason).")
    return [("findings", "The study's findings, re-tested here", f_blocks),
            ("counters", "Hardware counters beside the roofline", c_blocks)]


_EMPTY: dict[str, str] = {}


def _fidelity_blocks(d: data_mod.Data) -> list[_Block]:
    """Speed-up against fidelity to the fp32 reference (report/fidelity.py); none without
    fidelity records."""
    from llmbench.report import fidelity as fid

    rows = fid.fidelity_rows(d.df)
    if rows.empty:
        return []
    return [_Block("fidelity-fig", "Speed-up vs fidelity", "", fig=fid.speedup_fidelity_figure(rows)),
            _Block("fidelity-table", "Per configuration",
                   "Greedy tokens and next-token distributions against transformers fp32 on the CPU "
                   "(docs/fidelity.md); throughput from the same record's timed repeats.",
                   table=_table_html(fid.table_rows(rows)))]


MAX_PREDICTED_CONFIGS = 6


def _prediction_blocks(d: data_mod.Data) -> list[_Block]:
    """Each configuration that stored estimates predict (llmbench predict --save), its curve
    and interval beside the measured points, per predicted metric (report/predictions.py);
    those with measurements first. None without estimates."""
    from llmbench.report import predictions as pred

    blocks = []
    for i, cfg in enumerate(pred.configurations(d.df)[:MAX_PREDICTED_CONFIGS]):
        for metric in pred.METRICS:
            cmp = pred.comparison(d.df, cfg, metric)
            if cmp["predicted"].notna().any():
                blocks.append(_Block(f"predictions-{i}-{metric}", cfg["label"], PREDICTION_NOTE,
                                     pred.figure(cmp, cfg, metric, height=480),
                                     _table_html(_filled(pred.table_rows(cmp, metric)))))
    return blocks


PREDICTION_NOTE = ("ESTIMATE: stored predictions of llmbench predict (the roofline bound times an "
                   "efficiency learned from the study; docs/predict.md), dashed, their 90% interval "
                   "shaded; measured: the records of the same model, engine, hardware, dtype and "
                   "lengths. predicted / measured against the own measurement, else the study's.")


def _definitions_notes(df) -> str:
    """Which roofline versions the efficiencies come from (one older than today's: how to
    re-annotate), and the points whose energy was read over a window too short for it."""
    from llmbench.definitions import ROOFLINE_VERSION

    out = ""
    if "roofline_version" in df and df["roofline_version"].notna().any():
        counts = df["roofline_version"].dropna().astype(str).value_counts().sort_index()
        said = ", ".join(f"version {v}: {n} record(s)" for v, n in counts.items())
        old = int(counts[counts.index != ROOFLINE_VERSION].sum())
        out += (f"<p class='versions'>Roofline bounds and efficiencies by version ({said}; "
                f"today's is {ROOFLINE_VERSION})"
                + (f". {old} record(s) carry an older version: <code>llmbench annotate --results "
                   f"DIR</code> brings them to today's, keeping the old values in each record's "
                   f"annotations" if old else "") + ".</p>")
    if "energy_short_window" in df:
        short = df[df["energy_short_window"].fillna(False).astype(bool)]
        if len(short):
            out += _points_text(short, "read their energy over a window under 2 s, too short for "
                                "the meter's counter: their energy, power and energy-per-token "
                                "figures are unreliable (power.short_window)", "energy_short_window")
    return out


def write_report(results: Path | str, out: Path | str, png: bool = True,
                 reference: Path | str | None = None) -> Report:
    """The report of the store `results`; `reference`: where the findings section reads the
    study (an imported store or the published data directory; default: `results`)."""
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    d = data_mod.load(results)
    c = d.counts()
    blocks_by_section: list[tuple[str, str, list[_Block]]] = []
    blocks_by_section.append(("best", "Best configuration", _best_blocks(d)))
    for src, title in SECTIONS:
        blocks_by_section.append((src, title, _view_blocks(d, src)))
    if rows := tables.tool_figures_table(d.df):
        blocks_by_section.append(("imported", "Imported tools: their figures beside llmbench's",
                                  [_Block("imported-figures", "Each tool's headline figures as it "
                                          "reported them", TOOL_FIGURES_NOTE, table=_table_html(rows))]))
    if not d.df.empty and any(col.startswith("roofline_efficiency_") for col in d.df.columns):
        v = views.VIEWS["efficiency"]
        fig, _ = views.build(d, views.Choice(view="efficiency"), height=520)
        blocks_by_section.append(("side", "Side by side: efficiency against the roofline",
                                  [_Block("efficiency", v.title, v.help, fig)]))
    if blocks := _fidelity_blocks(d):
        blocks_by_section.append(("fidelity", "Fidelity beside speed", blocks))
    if blocks := _prediction_blocks(d):
        blocks_by_section.append(("predictions", "Predictions beside measurements (ESTIMATE)", blocks))
    blocks_by_section.extend(_findings_sections(results, reference))
    report = Report(html=out / "index.html")
    figs: dict[str, figures.Fig] = {}
    body = []
    nav = []
    for sec, title, blocks in blocks_by_section:
        nav.append(f"<a href='#{sec}'>{html.escape(title.split(' (')[0])}</a>")
        body.append(f"<h2 id='{sec}'>{html.escape(title)}</h2>")
        if not blocks:
            body.append(f"<p class='empty'>{_empty_text(d, sec)}</p>")
        for b in blocks:
            # A figure carries its own title; a heading above it would say it twice.
            h3 = f"<h3>{html.escape(b.title)}</h3>" if b.table or b.fig is None else ""
            body.append(f"<section class='block' id='{b.anchor}'>{h3}"
                        f"<p class='sub'>{html.escape(b.subtitle)}</p>")
            if b.fig is not None:
                figs[b.anchor] = b.fig
                body.append(f"<div class='fig' id='fig-{b.anchor}'></div>")
            body.append(b.table + "</section>")
    body.append("<h2 id='defs'>Definitions</h2>" + DEFINITIONS)
    nav.append("<a href='#defs'>Definitions</a>")
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    scripts = "".join(
        f"(function(f){{Plotly.newPlot('fig-{k}',f.data,f.layout,"
        f"{{displaylogo:false,responsive:true}});}})({pio.to_json(f.to_dict(), validate=False)});"
        for k, f in figs.items())
    n_hw = d.df["hardware"].nunique() if not d.df.empty else 0
    n_eng = d.df["backend"].nunique() if not d.df.empty else 0
    failed = int((d.df["status"] != "ok").sum()) if not d.df.empty else 0
    # points measured while other work shared the machine (env.contention): their numbers are
    # suspect, so the report counts and names them rather than letting them pass as clean
    contended = d.df[d.df["contended"].fillna(False).astype(bool)] if "contended" in d.df else d.df.iloc[:0]
    # points whose GPU clocks were held down (power, thermal; measure/gpm.py): as suspect
    throttled = d.df[d.df["throttled"].fillna(False).astype(bool)] if "throttled" in d.df else d.df.iloc[:0]
    cards = "".join(f"<div class='card'><b>{v}</b><span>{k}</span></div>" for k, v in (
        ("records", c["records"]), ("own", c["own"]), ("reference", c["reference"]),
        ("hardware", n_hw), ("engines", n_eng), ("failed / skipped", failed), ("contended", len(contended)),
        ("throttled", len(throttled))))
    if len(contended):
        cards += _points_text(contended, "were measured while other work shared the machine "
                              "(each record's env.contention says what)", "contended")
    if len(throttled):
        cards += _points_text(throttled, "were measured while the GPU throttled its clocks (each "
                              "record's hardware_counters says why)", "throttled")
    cards += _definitions_notes(d.df)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>llmbench report</title><meta name="viewport" content="width=device-width,initial-scale=1">
<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>
<header><h1>llmbench report</h1><p>{html.escape(str(Path(results)))} · generated {stamp} ·
llmbench {__version__}</p><div class='cards'>{cards}</div></header>
<nav>{''.join(nav)}</nav><main>{''.join(body)}</main>
<script>{scripts}</script></body></html>"""
    report.html.write_text(page, encoding="utf-8")
    report.figures = figs
    if png and figs:
        from llmbench.report.png import write_pngs

        report.pngs, why = write_pngs(figs, out / "figures")
        if why:
            report.notes.append(why)
    report.seconds = time.perf_counter() - t0
    return report
