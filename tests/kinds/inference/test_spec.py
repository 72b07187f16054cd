import pytest

from llmbench.errors import SpecError
from llmbench.backends.options import EngineOptions
from llmbench.kinds.inference.spec import Point, load_spec


def write(tmp_path, text):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_expansion_is_cartesian(tmp_path):
    spec = load_spec(write(tmp_path, """
backends: [llamacpp]
models: smollm2-135m
batch_size: [1, 4]
input_len: [16, 32]
output_len: 8
options: {kv_cache_dtype: [f16, q8_0]}
"""))
    pts = spec.points()
    assert len(pts) == 2 * 2 * 2
    assert {(p.batch_size, p.input_len, p.options.kv_cache_dtype) for p in pts} == {
        (b, i, k) for b in (1, 4) for i in (16, 32) for k in ("f16", "q8_0")}
    assert len({p.key for p in pts}) == len(pts)


def test_cli_overrides_yaml(tmp_path):
    spec = load_spec(write(tmp_path, "backends: [llamacpp]\nbatch_size: [1]\n"),
                     {"batch_size": [2, 8], "options": {"compile": [False, True]}})
    assert spec.batch_size == [2, 8]
    assert spec.options == {"compile": [False, True]}


def test_unknown_key_and_bad_value_both_named(tmp_path):
    with pytest.raises(SpecError) as e:
        load_spec(write(tmp_path, "batch_size: [1, -4]\ncolour: red\n"))
    fields = [f for f, _ in e.value.problems]
    assert any("batch_size" in f for f in fields)
    assert any("colour" in f for f in fields)
    assert e.value.exit_code == 2


@pytest.mark.parametrize("text,field", [
    ("backends: [nosuchengine]", "backend"),
    ("options: {tensor_parallel: 0}", "options.tensor_parallel"),
    ("options: {nosuch: 1}", "options.nosuch"),
    ("device: tpu", "device"),
    ("dtype: [fp8x]", "dtype"),
    ("repeats: 0", "repeats"),
    ("backends: [llamacpp]\nbackend_options: {llamacpp: {n_threads: 0}}", "backend_options.llamacpp.n_threads"),
    ("backends: [llamacpp]\nbackend_options: {llamacpp: {bogus: 1}}", "backend_options.llamacpp.bogus"),
    ("backends: [llamacpp]\nbackend_options: {vllm: {}}", "backend_options.vllm"),
])
def test_bad_values_name_the_field(tmp_path, text, field):
    with pytest.raises(SpecError) as e:
        load_spec(write(tmp_path, text)).points()
    assert any(f.startswith(field) for f, _ in e.value.problems), e.value.problems


def test_invalid_yaml_and_non_mapping(tmp_path):
    with pytest.raises(SpecError, match="invalid YAML"):
        load_spec(write(tmp_path, "batch_size: [1, 2\n"))
    with pytest.raises(SpecError, match="mapping"):
        load_spec(write(tmp_path, "- 1\n- 2\n"))
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")


def test_yaml_is_safe_loaded(tmp_path):
    with pytest.raises(SpecError):
        load_spec(write(tmp_path, "backends: !!python/object/apply:os.system ['true']\n"))


def test_point_key_stable_and_sensitive():
    a = Point(backend="llamacpp", model="smollm2-135m", batch_size=1)
    b = Point(backend="llamacpp", model="smollm2-135m", batch_size=1)
    c = Point(backend="llamacpp", model="smollm2-135m", batch_size=2)
    d = Point(backend="llamacpp", model="smollm2-135m", batch_size=1, options=EngineOptions(compile=True))
    assert a.key == b.key and len({a.key, c.key, d.key}) == 3
    assert a.load_key == c.load_key != d.load_key


def test_workload_fields_use_contract_names():
    w = Point(backend="llamacpp", model="m", batch_size=4, input_len=8, output_len=2).workload_fields()
    for k in ("batch_size", "input_len", "output_len", "concurrency", "tensor_parallel",
              "pipeline_parallel", "kv_block_size", "kv_cache_dtype", "weight_dtype"):
        assert k in w


THREE_MISTAKES = """
backends: [llamacp, llamacpp]
models: [llama-3-8bb, smollm2-135m]
batch_size: [1, many]
options: {tensor_parallel: 2}
backend_options:
  llamacpp: {n_thread: 2}
"""


def _whole_report(tmp_path, text):
    """What `llmbench run FILE` reports: the spec's problems and its points' (one pass)."""
    from llmbench.cli.run import _load

    with pytest.raises(SpecError) as e:
        _load(write(tmp_path, text), {})
    return dict(e.value.problems), str(e.value)


def test_every_mistake_in_one_pass_with_suggestions(tmp_path):
    # issue 15 item 4: this once took three runs to fix, one mistake at a time
    problems, text = _whole_report(tmp_path, THREE_MISTAKES)
    assert "'many' is not a whole number" in problems["batch_size[1]"]
    assert "did you mean 'llamacpp'" in problems["backend"]
    opt = problems["backend_options.llamacpp.n_thread"]
    assert "did you mean 'n_threads'" in opt and "allowed: n_threads, n_batch" in opt
    assert "did you mean 'llama-3-8b'" in problems["model"]
    for voice in ("Value error", "Input should be", "Field required"):
        assert voice not in text


def test_unsupported_engine_option_reported_with_the_rest(tmp_path):
    pytest.importorskip("llama_cpp")  # the engine check runs for installed engines only
    problems, _ = _whole_report(tmp_path, THREE_MISTAKES)
    assert "does not support it" in problems["options.tensor_parallel"]


@pytest.mark.parametrize("text,field,words", [
    ("dtype: [bf61]", "dtype[0]", "'bf61' is not one of: auto, fp32, fp16, bf16 (did you mean 'bf16'?)"),
    ("repeats: 0", "repeats", "0 is too small: must be >= 1"),
    ("batch_size: [0]", "batch_size", "every value must be >= 1, got [0]"),
    ("workload: offlin", "workload", "did you mean 'offline'"),
    ("device: gpu", "device", "'gpu' is not a device: use auto, cpu, cuda or cuda:N"),
    ("colour: red", "colour", "unknown field; allowed: name, workload"),
    ("options: {kv_cach: static}", "options.kv_cach", "unknown option (did you mean 'kv_cache'?)"),
])
def test_messages_are_worded_for_people(tmp_path, text, field, words):
    with pytest.raises(SpecError) as e:
        load_spec(write(tmp_path, text)).points()
    assert words in dict(e.value.problems)[field]


def test_device_defaults_to_auto_resolved_once_into_the_points(tmp_path, monkeypatch):
    import llmbench.hardware.device as device

    assert load_spec(write(tmp_path, "backends: [llamacpp]\n")).device == "auto"
    calls = []
    monkeypatch.setattr(device, "cuda_device_count", lambda: calls.append(1) or 2)
    pts = load_spec(write(tmp_path, "backends: [llamacpp]\nbatch_size: [1, 2, 4]\n")).points()
    assert {p.device for p in pts} == {"cuda"} and len(calls) == 1
    monkeypatch.setattr(device, "cuda_device_count", lambda: 0)
    assert {p.device for p in load_spec(write(tmp_path, "backends: [llamacpp]\n")).points()} == {"cpu"}
    pinned = load_spec(write(tmp_path, "backends: [llamacpp]\ndevice: cpu\n"))
    monkeypatch.setattr(device, "cuda_device_count", lambda: 1)
    assert {p.device for p in pinned.points()} == {"cpu"}


def test_power_sampling_from_the_spec_reaches_every_point(tmp_path):
    pts = load_spec(write(tmp_path, "backends: [llamacpp]\nbatch_size: [1, 4]\n"),
                    {"power_sampling": "dense"}).points()
    assert [p.power_sampling for p in pts] == ["dense", "dense"]
    assert load_spec(write(tmp_path, "backends: [llamacpp]\n")).points()[0].power_sampling == "auto"
