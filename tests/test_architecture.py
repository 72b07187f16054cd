"""The house rules of src/llmbench that imports and names show: no import cycle (lazy imports
inside functions included), the pipeline (launch/) imports no kind, backends import no kind,
every PointKind lives under kinds/, and an engine is named only in its own module (backends/),
not in kinds/, launch/, loadgen/ or roofline/ (issue 38)."""

import ast
import io
import re
import tokenize
from pathlib import Path

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


def test_the_pipeline_imports_no_kind():
    launch = {m: deps for m, deps in import_graph().items() if m.startswith("llmbench.launch")}
    assert launch, "no launch modules found"
    assert {m: sorted(d for d in deps if d.startswith("llmbench.kinds"))
            for m, deps in launch.items() if any(d.startswith("llmbench.kinds") for d in deps)} == {}


def test_every_point_kind_lives_under_kinds():
    homes = {}
    for path in (SRC / "llmbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(b, "id", getattr(b, "attr", None)) == "PointKind" for b in node.bases):
                homes[node.name] = path.relative_to(SRC / "llmbench").parts
    assert set(homes) == {"InferenceKind", "ServingKind", "TrainingKind"}
    assert all(parts[0] == "kinds" for parts in homes.values()), homes


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
