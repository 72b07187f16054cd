import pytest

from llmbench.errors import SpecError
from llmbench.spec import EngineOptions, Point, load_spec, parse_assignments


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


def test_parse_assignments():
    assert parse_assignments(["compile=true,false", "kv_cache=static", "kv_block_size=16"], "-o") == {
        "compile": [True, False], "kv_cache": "static", "kv_block_size": 16}
    with pytest.raises(SpecError):
        parse_assignments(["novalue"], "-o")


def test_workload_fields_use_contract_names():
    w = Point(backend="llamacpp", model="m", batch_size=4, input_len=8, output_len=2).workload_fields()
    for k in ("batch_size", "input_len", "output_len", "concurrency", "tensor_parallel",
              "pipeline_parallel", "kv_block_size", "kv_cache_dtype", "weight_dtype"):
        assert k in w
