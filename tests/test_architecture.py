"""The house rules of src/llmbench that imports show: no import cycle (lazy imports inside
functions included), no import runs back up the layers (LAYERS) and no kind imports another,
the pipeline (launch/) finds kinds only through the kinds registry, and every PointKind lives
under kinds/ and is registered; backends import no kind, and an engine is named only in its own
module (backends/), not in kinds/, launch/, loadgen/ or roofline/ (issue 38).

`python tests/test_architecture.py [SRC]` lists the imports that break the layering (the
source tree at SRC, default this checkout's src/)."""

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src"


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = SRC / "llmbench") -> dict[str, set[str]]:
    """module -> the llmbench modules it imports anywhere in its file (a `from pkg import name`
    counts as pkg.name when that is a module)."""
    files = {_module(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        out = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in files)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if not node.module.startswith("llmbench"):
                    continue
                subs = {f"{node.module}.{a.name}" for a in node.names} & files.keys()
                out.update(subs or ({node.module} & files.keys()))
        out.discard(mod)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# The layers of llmbench, top first: the one place that states their order. A module may import
# its own layer or any layer below, never one above. Entries are paths under llmbench/ (a
# module's longest matching entry wins; "" is the package's own __init__: its version).
LAYERS = (
    # conformance: runs llmbench's own command (cli) beside the peers, as a user would
    ("__main__", "cli", "conformance"),
    ("dashboard", "report"),
    ("kinds", "analysis"),
    ("loadgen", "importers", "reannotate"),
    # kinds.registry: names only ("module:Class"), read by launch to rebuild a kind in a worker.
    # backends: run by kinds and launch (servers), read by loadgen and roofline; import no kind.
    ("roofline", "metrics", "columns", "launch", "kinds.registry", "exporters", "backends"),
    ("store",),
    ("models", "hardware", "definitions"),
    ("measure", "cache", "errors", "numfmt", "data", "registry", ""),
)
# Side by side: each kind's folder imports no other kind's (kinds/base.py is their shared base).
SIDE_BY_SIDE = "kinds"
# At most one import may run up the layers, and only with its reason; an entry that no import
# needs any more fails the test, so that it is deleted.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def entry(module: str) -> str:
    """The LAYERS entry a module belongs to (its longest matching path)."""
    rel = module.removeprefix("llmbench").removeprefix(".")
    found = [e for layer in LAYERS for e in layer if rel == e or (e and rel.startswith(e + "."))]
    if not found:
        raise KeyError(f"{module} is in no layer: add its room to LAYERS in {Path(__file__).name}")
    return max(found, key=len)


def rank(module: str) -> int:
    """0 for the bottom layer, higher above."""
    e = entry(module)
    return next(len(LAYERS) - 1 - i for i, layer in enumerate(LAYERS) if e in layer)


def kind_of(module: str) -> str | None:
    """The kind's folder a module of kinds/ lies in (None for kinds/base.py and the registry)."""
    parts = module.split(".")
    if parts[1:2] != [SIDE_BY_SIDE] or len(parts) < 3:
        return None
    return parts[2] if (SRC / "llmbench" / SIDE_BY_SIDE / parts[2]).is_dir() else None


def crossings(graph: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """(module, imported, 'up' | 'between kinds') for every import that breaks the layering."""
    found = []
    for mod, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if rank(dep) > rank(mod):
                found.append((mod, dep, "up"))
            elif kind_of(mod) and kind_of(dep) and kind_of(mod) != kind_of(dep):
                found.append((mod, dep, "between kinds"))
    return found


def test_the_cycle_finder_finds_a_known_cycle_and_nothing_else():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_imports(tmp_path):
    pkg = tmp_path / "llmbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one.py").write_text("def f():\n    from llmbench import two\n")
    (pkg / "two.py").write_text("import llmbench.one\n")
    global SRC
    old, SRC = SRC, tmp_path
    try:
        g = import_graph(pkg)
    finally:
        SRC = old
    assert g["llmbench.one"] == {"llmbench.two"} and g["llmbench.two"] == {"llmbench.one"}
    assert cycles(g) == [["llmbench.one", "llmbench.two"]]


def test_no_import_cycle_in_llmbench():
    assert cycles(import_graph()) == []


def test_every_point_kind_lives_under_kinds():
    homes = {}
    for path in (SRC / "llmbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(b, "id", getattr(b, "attr", None)) == "PointKind" for b in node.bases):
                homes[node.name] = path.relative_to(SRC / "llmbench").parts
    assert set(homes) == {"EstimateKind", "InferenceKind", "ServingKind", "TrainingKind"}
    assert all(parts[0] == "kinds" for parts in homes.values()), homes


def test_the_crossing_finder_finds_known_crossings():
    g = {"llmbench.store.columns": {"llmbench.metrics", "llmbench.errors"},
         "llmbench.metrics": {"llmbench.store.store"},
         "llmbench.kinds.serving.prompts": {"llmbench.kinds.inference.prompts", "llmbench.kinds.base",
                                            "llmbench.data"},
         "llmbench.launch.worker": {"llmbench.kinds.registry", "llmbench"},
         "llmbench.launch.pipeline": {"llmbench.kinds.inference.kind"},
         "llmbench.measure.stats": {"llmbench.store.record", "llmbench.measure.metric_stats"}}
    assert crossings(g) == [
        ("llmbench.kinds.serving.prompts", "llmbench.kinds.inference.prompts", "between kinds"),
        ("llmbench.launch.pipeline", "llmbench.kinds.inference.kind", "up"),
        ("llmbench.measure.stats", "llmbench.store.record", "up"),
        ("llmbench.store.columns", "llmbench.metrics", "up")]


def test_every_module_lies_in_a_layer():
    assert [m for m in import_graph() if not _in_a_layer(m)] == []


def _in_a_layer(module: str) -> bool:
    try:
        entry(module)
    except KeyError:
        return False
    return True


def test_no_import_runs_back_up_the_layers():
    found = crossings(import_graph())
    excused = {(entry(m), entry(d)) for m, d, _ in found} & EXCEPTIONS.keys()
    assert [c for c in found if (entry(c[0]), entry(c[1])) not in EXCEPTIONS] == []
    assert len(EXCEPTIONS) <= 1 and all(len(why) > 40 for why in EXCEPTIONS.values())
    assert excused == EXCEPTIONS.keys(), f"no import needs {EXCEPTIONS.keys() - excused}: delete it"


def test_measure_imports_no_store_nor_anything_above_it():
    measure = {m: deps for m, deps in import_graph().items() if m.startswith("llmbench.measure")}
    assert len(measure) > 5
    bottom = rank("llmbench.measure")
    assert {m: sorted(d for d in deps if d.startswith("llmbench.store") or rank(d) > bottom)
            for m, deps in measure.items()
            if any(d.startswith("llmbench.store") or rank(d) > bottom for d in deps)} == {}


def test_the_pipeline_finds_kinds_only_through_the_registry():
    """launch/ imports nothing of kinds/ but the registry, and names no kind's module."""
    launch = {m: deps for m, deps in import_graph().items() if m.startswith("llmbench.launch")}
    assert len(launch) > 5
    assert {m: sorted(d for d in deps if d.startswith("llmbench.kinds") and d != "llmbench.kinds.registry")
            for m, deps in launch.items()
            if any(d.startswith("llmbench.kinds") and d != "llmbench.kinds.registry" for d in deps)} == {}
    named = [(path.name, node.value) for path in (SRC / "llmbench" / "launch").rglob("*.py")
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and "llmbench.kinds." in node.value]
    assert named == []


def test_the_registry_names_every_kind_by_its_name():
    from llmbench.kinds.registry import REGISTRY, kind_class

    classes = {}
    for path in (SRC / "llmbench" / "kinds").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(b, "id", getattr(b, "attr", None)) == "PointKind" for b in node.bases):
                classes[node.name] = _module(path)
    assert sorted(f"{mod}:{cls}" for cls, mod in classes.items()) == sorted(REGISTRY.values())
    assert {name: kind_class(name).name for name in REGISTRY} == {name: name for name in REGISTRY}


def test_an_unknown_kind_is_named_with_a_near_miss():
    from llmbench.errors import SpecError
    from llmbench.kinds.registry import get_kind

    with pytest.raises(SpecError, match=r"unknown kind 'inferense' \(did you mean 'inference'\?\)"):
        get_kind("inferense")


def test_a_ray_task_rebuilds_its_kind_from_the_registry(tmp_path, monkeypatch):
    """A kind that only the registry names (one line, no file in launch/) runs as a Ray task."""
    from llmbench.kinds import registry
    from llmbench.launch.ray_executor import _run_group_task

    (tmp_path / "fake_kind_mod.py").write_text(
        "from llmbench.launch.kind import PointKind\n"
        "class FakeKind(PointKind):\n"
        "    name = 'fake'\n"
        "    prepare = load_key = base_record = run_group = None\n"
        "    def parse_point(self, doc):\n"
        "        return ('point', doc['k'])\n"
        "    def context(self, points):\n"
        "        return ('ctx', len(points))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.REGISTRY, "fake", "fake_kind_mod:FakeKind")
    seen = {}

    def isolated(kind, points, ctx, run_id, store, say, argv):
        seen.update(kind=type(kind).__name__, points=points, ctx=ctx, run_id=run_id)
        return []

    monkeypatch.setattr("llmbench.launch.isolated.run_group_isolated", isolated)
    assert _run_group_task("fake", [{"k": 1}, {"k": 2}], "r7", str(tmp_path), []) == []
    assert seen == {"kind": "FakeKind", "points": [("point", 1), ("point", 2)], "ctx": ("ctx", 2),
                    "run_id": "r7"}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        SRC = Path(sys.argv[1]).resolve()
    found = crossings(import_graph(SRC / "llmbench"))
    for mod, dep, how in found:
        print(f"{how:>13}  {mod} -> {dep}")
    rooms = sorted({(entry(m), entry(d)) if how == "up" else (f"kinds.{kind_of(m)}", f"kinds.{kind_of(d)}")
                    for m, d, how in found})
    print(f"{len(found)} imports ({len(rooms)} pairs of rooms) break the layering: "
          + ", ".join(f"{a} -> {b}" for a, b in rooms))


def test_backends_import_no_kind():
    backends = {m: deps for m, deps in import_graph().items() if m.startswith("llmbench.backends")}
    assert backends, "no backend modules found"
    assert {m: sorted(d for d in deps if d.startswith("llmbench.kinds"))
            for m, deps in backends.items() if any(d.startswith("llmbench.kinds") for d in deps)} == {}


# An engine's names: its registry names and packages, and the GGUF format llama.cpp reads.
# "transformers" names the engine only as a string (its registry name): `import transformers`
# in a tokenizer or a training model is the library.
ENGINE_WORD = re.compile(r"(?<![a-z0-9])(llamacpp|llama_cpp|llama-cpp|llama\.cpp|vllm|sglang|tgi|gguf)"
                         r"(?![a-z0-9])", re.I)
ENGINE_FREE = ("kinds", "launch", "loadgen", "roofline")


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            lines.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    return lines


def engine_lines(source: str) -> dict[int, str]:
    """line number -> line, for every line whose code (names and strings; comments and
    docstrings excluded) names an engine."""
    doc = _docstring_lines(ast.parse(source))
    text = source.splitlines()
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.NAME, tokenize.STRING) or tok.start[0] in doc:
            continue
        as_string = tok.type == tokenize.STRING and tok.string.strip("'\"") == "transformers"
        if ENGINE_WORD.search(tok.string) or as_string:
            found.setdefault(tok.start[0], text[tok.start[0] - 1].strip())
    return found


COUNTER_CASE = '''"""vllm and llama.cpp in a docstring."""
import transformers  # the library, and a vllm comment
x = "transformers"
GGUF_TYPES = ()
def f():
    """sglang here is a docstring"""
    return {"vllm:x": 1, "settings": 2}  # tgi
'''


def test_the_engine_counter_reads_code_not_comments_or_docstrings():
    assert sorted(engine_lines(COUNTER_CASE)) == [3, 4, 7]


def test_no_engine_is_named_outside_its_module():
    lines = {f"{path.relative_to(SRC / 'llmbench')}:{n}": line
             for folder in ENGINE_FREE for path in sorted((SRC / "llmbench" / folder).rglob("*.py"))
             for n, line in engine_lines(path.read_text()).items()}
    assert len(lines) <= 2, "\n".join(f"{k}: {v}" for k, v in lines.items())


# The roofline is asked once per record (issue 38): workload.py gathers every fact of the
# record, model and hardware in one step, so the arithmetic imports nothing it could call back.
ARITHMETIC = ("llmbench.roofline.model", "llmbench.roofline.flops")


def test_the_roofline_arithmetic_imports_nothing_outside_the_roofline():
    graph = import_graph()
    assert {m: sorted(d for d in graph[m] if not d.startswith("llmbench.roofline"))
            for m in ARITHMETIC} == {m: [] for m in ARITHMETIC}
