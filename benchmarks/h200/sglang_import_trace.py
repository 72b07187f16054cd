"""Static trace of the imports of an unpacked SGLang wheel (issue 50: how carry-sglang.txt began).

    python3 benchmarks/h200/sglang_import_trace.py SRC MODULE[,MODULE...]

SRC is the folder the sglang wheel was unzipped into. From the given modules it follows every
import that runs when a module is imported (module level, not inside a function, try or
TYPE_CHECKING), and those under a module-level `if` whose condition holds on an NVIDIA sm_90 GPU
(a name mentioning cuda/sm90 holds; hip, npu, xpu, cpu, musa, mps, aiter, sm100, blackwell... do
not; any other condition is taken as holding and listed). It prints each outside package that
closure imports and how: EAGER (runs at import on CUDA) or only guarded (try, inside a function,
other platforms' branches), with one place for each. Guarded imports matter only when the code
around them runs; the CPU import check (sglang_import_check.py) is the second opinion.
"""

from __future__ import annotations

import ast
import collections
import os
import re
import sys

FALSE = re.compile(r"hip|npu|xpu|musa|mps|aiter|hpu|cpu|amx|rocm|gfx|sm100|sm120|blackwell|is_sm10|"
                   r"_is_sm12|mlx|windows|darwin|__main__|ascend|zbal|fp4|mxfp", re.I)
TRUE = re.compile(r"cuda|sm90|hopper|is_sm9|nvidia", re.I)
UNKNOWN: collections.Counter = collections.Counter()


def holds(cond: str) -> bool:
    def ev(node) -> bool:
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        src = ast.unparse(node.operand if isinstance(node, ast.UnaryOp) else node)
        unknown = FALSE.search(src) is None and TRUE.search(src) is None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            if unknown:
                UNKNOWN["not " + src] += 1
                return True
            return not ev(node.operand)
        if FALSE.search(src):
            return False
        if TRUE.search(src):
            return True
        UNKNOWN[src] += 1
        return True
    try:
        return ev(ast.parse(cond, mode="eval").body)
    except SyntaxError:
        return True
ROOT = "."

def modfile(mod):
    p = os.path.join(ROOT, *mod.split("."))
    if os.path.isfile(p + ".py"): return p + ".py"
    if os.path.isfile(os.path.join(p, "__init__.py")): return os.path.join(p, "__init__.py")
    return None

def ispkg(mod):
    return os.path.isfile(os.path.join(ROOT, *mod.split("."), "__init__.py"))

class V(ast.NodeVisitor):
    def __init__(self, mod):
        self.mod = mod; self.ctx = []; self.out = []
    def _push(self, kind, node, fn):
        self.ctx.append(kind); fn(node); self.ctx.pop()
    def visit_FunctionDef(self, n): self._push(("func", n.name), n, self.generic_visit)
    visit_AsyncFunctionDef = visit_FunctionDef
    def visit_ClassDef(self, n): self.generic_visit(n)
    def visit_Try(self, n):
        self.ctx.append(("try", "")); [self.visit(s) for s in n.body]; self.ctx.pop()
        self.ctx.append(("except", "")); [self.visit(h) for h in n.handlers]; [self.visit(s) for s in n.orelse + n.finalbody]; self.ctx.pop()
    visit_TryStar = visit_Try
    def visit_If(self, n):
        t = ast.unparse(n.test)
        kind = "tc" if "TYPE_CHECKING" in t else "if"
        self.ctx.append((kind, t)); [self.visit(s) for s in n.body]; self.ctx.pop()
        self.ctx.append((kind, "not (" + t + ")")); [self.visit(s) for s in n.orelse]; self.ctx.pop()
    def _where(self):
        kinds = [k for k, _ in self.ctx]
        if "tc" in kinds: return "tc", ""
        if "func" in kinds: return "func", [c for k, c in self.ctx if k == "func"][0]
        if "try" in kinds or "except" in kinds: return "try", " / ".join(c for k, c in self.ctx if k == "if")
        if "if" in kinds: return "if", " and ".join(c for k, c in self.ctx if k == "if")
        return "top", ""
    def _abs(self, level, module):
        if not level: return module
        base = self.mod.split(".")
        if not ispkg(self.mod): base = base[:-1]
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))
    def visit_Import(self, n):
        w, c = self._where()
        for a in n.names: self.out.append((a.name, w, c, n.lineno))
    def visit_ImportFrom(self, n):
        w, c = self._where()
        m = self._abs(n.level, n.module)
        for a in n.names:
            sub = m + "." + a.name
            self.out.append((sub if modfile(sub) else m, w, c, n.lineno))
    def visit_Call(self, n):
        # importlib.import_module("x") with a constant
        f = ast.unparse(n.func)
        if f.endswith("import_module") and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
            w, c = self._where(); self.out.append((n.args[0].value, w + "-dyn", c, n.lineno))
        self.generic_visit(n)

_cache = {}
def imports(mod):
    if mod in _cache: return _cache[mod]
    f = modfile(mod); out = []
    if f:
        v = V(mod); v.visit(ast.parse(open(f).read(), f)); out = v.out
        # importing a.b.c runs a/__init__ and a/b/__init__
        parts = mod.split(".")
        for i in range(1, len(parts)):
            out.append((".".join(parts[:i]), "top", "(parent package)", 0))
    _cache[mod] = out
    return out

def closure(roots):
    seen, order, stack = set(), [], list(roots)
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        order.append(m)
        for tgt, where, cond, _ in imports(m):
            if tgt.startswith("sglang") and modfile(tgt) and tgt not in seen and (
                    where == "top" or (where == "if" and holds(cond))):
                stack.append(tgt)
    return order


def main(argv: list[str]) -> int:
    global ROOT
    ROOT = argv[0]
    order = closure(argv[1].split(","))
    print(f"{len(order)} sglang modules run at import")
    ext = collections.defaultdict(list)
    for m in order:
        for tgt, where, cond, line in imports(m):
            top = tgt.split(".")[0]
            if tgt.startswith("sglang") or top in sys.stdlib_module_names or top == "__future__":
                continue
            ext[top].append((where, cond, m, line))
    for top, uses in sorted(ext.items()):
        eager = [u for u in uses if u[0] == "top" or (u[0] == "if" and holds(u[1]))]
        u = (eager or uses)[0]
        kinds = dict(collections.Counter(w for w, *_ in uses))
        print(f"{'EAGER  ' if eager else 'guarded'} {top:22s} {kinds} e.g. {u[2]}:{u[3]} {u[1][:40]}")
    print("conditions taken as holding:", dict(UNKNOWN.most_common(10)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
