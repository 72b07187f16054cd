"""The house rules of src/llmbench that imports show: no import cycle (lazy imports inside
functions included), the pipeline (launch/) and the backends import no kind, and every
PointKind lives under kinds/."""

import ast
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
