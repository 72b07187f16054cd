"""An engine is one module (issue 38): the launcher, the scraper, the roofline and the worker ask
the registry for what is engine-specific, so a module and a registry line are a whole engine.
Fakes registered here show each seam reads the registry; the real engines' answers are checked
against the literal command lines and names they must give."""

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from llmbench import backends
from llmbench.backends.engine import Engine, PrometheusNames, ServerCommand
from llmbench.errors import SpecError

SRC = str(Path(__file__).parents[2] / "src")


def test_the_registry_lists_engines_by_what_llmbench_does_with_them():
    assert all(issubclass(backends.engine_class(n), Engine) and backends.engine_class(n).name == n
               for n in backends.REGISTRY)
    assert backends.in_process() == ["llamacpp", "sglang", "transformers", "vllm"]
    assert backends.launchable() == ["llamacpp", "sglang", "vllm"]
    assert sorted(backends.prometheus_names()) == ["llamacpp", "sglang", "tgi", "vllm"]
    with pytest.raises(SpecError) as e:
        backends.backend_class("tgi")
    assert "llmbench serve" in str(e.value.problems)


def test_listing_the_engines_imports_none_of_them():
    code = ("import sys, llmbench.backends as b\n"
            "[b.engine_class(n) for n in b.REGISTRY]\n"
            "print([m for m in ('numpy', 'torch', 'vllm', 'llama_cpp', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.strip() == "[]"


@pytest.fixture
def catalog_model(monkeypatch):
    """model_path / resolve answering without files: the command line is all that is checked."""
    import llmbench.models.sources as sources

    monkeypatch.setattr(sources, "model_path", lambda name, fmt="gguf", **kw: Path(f"/m/{name}.{fmt}"))
    synthetic = {"llama-3-8b": True}
    monkeypatch.setattr(sources, "resolve", lambda name: SimpleNamespace(
        name=name, synthetic_weights=synthetic.get(name, False)))


def test_llamacpp_serves_with_its_own_command_line(catalog_model):
    cls = backends.engine_class("llamacpp")
    cmd = cls.server_command("smollm2-135m", 8123, "cpu")
    assert cmd == ServerCommand(
        [sys.executable, "-m", "llama_cpp.server", "--model", "/m/smollm2-135m.gguf",
         "--host", "127.0.0.1", "--port", "8123", "--model_alias", "smollm2-135m",
         "--n_threads", str(os.cpu_count() or 1), "--interrupt_requests", "False"], {}, "/v1/models")
    assert cls.server_command("smollm2-135m", 8123, "cuda").argv[-2:] == ["--n_gpu_layers", "-1"]


def test_vllm_serves_with_its_own_command_line(catalog_model):
    cls = backends.engine_class("vllm")
    cpu = cls.server_command("smollm2-135m", 8123, "cpu")
    assert cpu.argv == [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                        "--model", "/m/smollm2-135m.hf", "--served-model-name", "smollm2-135m",
                        "--host", "127.0.0.1", "--port", "8123", "--max-model-len", "2048",
                        "--enforce-eager"]
    assert cpu.health_path == "/health"
    assert {k: cpu.env[k] for k in ("VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE",
                                    "VLLM_TARGET_DEVICE")} == {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
                                                               "VLLM_CPU_KVCACHE_SPACE": "1",
                                                               "VLLM_TARGET_DEVICE": "cpu"}
    assert ("LD_PRELOAD" in cpu.env) == (Path(sys.prefix) / "lib" / "libiomp5.so").exists()
    gpu = cls.server_command("llama-3-8b", 8123, "cuda")  # random weights: dummy load, GPU defaults
    assert gpu.argv[-2:] == ["--load-format", "dummy"] and gpu.env == {}


class _HttpServerEngine(Engine):
    """A fake engine whose 'server' is Python's own http.server (answers / with 200)."""
    name = "fakehttp"
    package = "http"
    distribution = "pip"   # any installed distribution: its version is the engine's
    extra = "none"
    launches = True

    @classmethod
    def server_command(cls, model, port, device, options=None):
        return ServerCommand([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                             {"FAKE_MODEL": model}, "/")


class _ScrapedEngine(Engine):
    name = "fakescraped"
    package = "json"
    distribution = "pip"
    extra = "none"
    prometheus = PrometheusNames(prefix="fake:", counters={"generation_tokens": ("fake:out_total",)},
                                 gauges={"requests_running": ("fake:running",)},
                                 histograms={"ttft_s": ("fake:ttft_seconds",)})


@pytest.fixture
def registered(monkeypatch):
    mod = sys.modules[__name__]
    monkeypatch.setitem(backends.REGISTRY, "fakehttp", f"{mod.__name__}:_HttpServerEngine")
    monkeypatch.setitem(backends.REGISTRY, "fakescraped", f"{mod.__name__}:_ScrapedEngine")


def test_the_launcher_starts_and_stops_whatever_server_the_engine_names(registered, tmp_path):
    from importlib.metadata import version

    from llmbench.launch.servers import launched

    with launched("fakehttp", "some-model", log_dir=tmp_path) as srv:
        with urllib.request.urlopen(srv.url + "/", timeout=5) as r:
            assert r.status == 200
        pid = srv.pid
        assert srv.version == version("pip") and srv.command[2] == "http.server"
    with pytest.raises(ProcessLookupError):   # the whole process group is gone
        os.killpg(pid, 0)
    with pytest.raises(SpecError) as e:
        with launched("tgi", "m"):
            pass
    assert "one of" in str(e.value.problems) and "fakehttp" in str(e.value.problems)


def test_the_scraper_reads_a_registered_engine_s_names(registered):
    from llmbench.loadgen.prometheus import parse_small
    from llmbench.loadgen.server_metrics import detect_server, extract

    samples = parse_small(textwrap.dedent("""\
        fake:out_total{model="m"} 7
        fake:out_total{model="n"} 5
        fake:running 2
        fake:ttft_seconds_bucket{le="0.1"} 1
        fake:ttft_seconds_bucket{le="+Inf"} 3
        fake:ttft_seconds_sum 0.9
        fake:ttft_seconds_count 3
        """))
    assert detect_server(samples) == "fakescraped"
    got = extract(samples, "fakescraped")
    assert got.values == {"generation_tokens": 12.0, "requests_running": 2.0}
    assert got.hist["ttft_s"] == {"0.1": 1.0, "+Inf": 3.0, "sum": 0.9, "count": 3.0}


def test_every_engine_s_metric_names_are_llmbench_s_vocabulary():
    from llmbench.loadgen.server_metrics import COUNTERS, GAUGES, HISTOGRAMS

    for name, n in backends.prometheus_names().items():
        assert set(n.counters) <= set(COUNTERS), name
        assert set(n.gauges) <= set(GAUGES), name
        assert set(n.histograms) <= set(HISTOGRAMS), name
        assert all(m.startswith(n.prefix) for t in (n.counters, n.gauges, n.histograms)
                   for names in t.values() for m in names), name


def test_a_worker_loads_what_its_engine_preloads_before_numpy(tmp_path):
    """The worker reads the engine's `preload` by registry name: a fake engine registered in the
    worker's process gets its module imported first, before anything imports numpy."""
    (tmp_path / "fake_first.py").write_text("import sys\nNUMPY_FIRST = 'numpy' in sys.modules\n")
    (tmp_path / "fake_engine.py").write_text(
        "from llmbench.backends.engine import Engine\n"
        "class Fake(Engine):\n    name = 'fake'\n    preload = ('fake_first',)\n")
    code = ("import llmbench.backends as b\n"
            "b.REGISTRY['fake'] = 'fake_engine:Fake'\n"
            "import llmbench.launch.worker, sys\n"
            "print(json.dumps(['fake_first' in sys.modules,\n"
            "                  getattr(sys.modules.get('fake_first'), 'NUMPY_FIRST', None)]))\n")
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{tmp_path}",
                              "LLMBENCH_WORKER_ENGINE": "fake"})
    assert json.loads(out.stdout) == [True, False]
