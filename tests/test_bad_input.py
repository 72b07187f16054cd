"""Bad input through the real command line: one clear message naming each bad field or cause,
exit status 2, no traceback, and nothing run or written."""

import os
import subprocess
import sys

import pytest

from llmbench.cli import main

TINY = ["-b", "llamacpp", "--input-len", "8", "--output-len", "4", "--repeats", "1", "--warmups", "0"]


def cli(capsys, tmp_path, *args):
    """Run `llmbench run ...` in-process; an escaping exception (a traceback) fails the test."""
    res = tmp_path / "results"
    with pytest.raises(SystemExit) as e:
        main(["run", *map(str, args), "--results", str(res)])
    err = capsys.readouterr().err
    assert not res.exists(), "a refused sweep must write nothing"
    return e.value.code, err


def spec(tmp_path, text):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_issue_check_negative_batch_and_unknown_key(tmp_path):
    """The issue's own check, through a real process: both fields named, status 2, no record."""
    res = tmp_path / "results"
    r = subprocess.run([sys.executable, "-m", "llmbench", "run",
                        str(spec(tmp_path, "batch_size: [1, -4]\ncolour: red\n")), "--results", str(res)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "batch_size" in r.stderr and "-4" in r.stderr
    assert "colour" in r.stderr and "unknown field" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert not res.exists()

    r = subprocess.run([sys.executable, "-m", "llmbench", "run", "--backend", "nosuchengine",
                        "--results", str(res)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "nosuchengine" in r.stderr and "Traceback" not in r.stderr
    assert not res.exists()


@pytest.mark.parametrize("text, named", [
    ("batch_size: [1, 2\n", "invalid YAML"),
    ("- just\n- a list\n", "must be a YAML mapping"),
    ("batch_size: many\n", "batch_size"),
    ("repeats: often\n", "repeats"),
    ("device: tpu\n", "device"),
    ("dtype: [fp64]\n", "dtype"),
    ("options: {tensor_parallel: two}\n", "options.tensor_parallel"),
    ("options: {colour: blue}\n", "options.colour"),
    ("backends: [llamacpp]\nbackend_options: {llamacpp: {colour: 1}}\n", "backend_options.llamacpp.colour"),
    ("backends: [llamacpp]\nbackend_options: {vllm: {x: 1}}\n", "backend_options.vllm"),
    ("timeout_s: -5\n", "timeout_s"),
    ("input_len: [0]\n", "input_len"),
    ("1: 2\n", ""),
    ("batch_size: {a: 1}\n", "batch_size"),
    ("options: [1, 2]\n", "options"),
])
def test_bad_spec_files(capsys, tmp_path, text, named):
    code, err = cli(capsys, tmp_path, spec(tmp_path, text))
    assert code == 2, err
    assert err.startswith("llmbench: invalid input:")
    assert named in err


@pytest.mark.parametrize("args, named", [
    (["--backend", "nosuchengine"], "unknown backend 'nosuchengine'"),
    (["-b", "llamacpp", "--model", "nosuchmodel"], "nosuchmodel"),
    (["-b", "llamacpp", "--batch-size", "1,x"], "--batch-size"),
    ([*TINY, "--input-len", "9000"], "exceeds the model's context of 8192 tokens"),
    ([*TINY, "--device", "cuda", "-o", "tensor_parallel=2"], "CUDA device"),
    ([*TINY, "-o", "tensor_parallel=2"], "options.tensor_parallel"),
    ([*TINY, "--dtype", "bf16"], "dtype"),
    ([*TINY, "--executor", "slurm"], "--executor"),
    ([*TINY, "--point", "7"], "--point"),
    ([*TINY, "--run-id", "../escape"], "--run-id"),
    ([*TINY, "-B", "n_threads=2"], "BACKEND.KEY"),
    (["/nonexistent/sweep.yaml"], "cannot read spec file"),
])
def test_bad_flags(capsys, tmp_path, args, named):
    code, err = cli(capsys, tmp_path, *args)
    assert code == 2, err
    assert named in err


def test_several_problems_are_reported_at_once(capsys, tmp_path):
    code, err = cli(capsys, tmp_path, spec(tmp_path, "batch_size: [0]\ninput_len: [-1]\nrepeats: 0\nshape: x\n"))
    assert code == 2
    for field in ("batch_size", "input_len", "repeats", "shape"):
        assert field in err


def test_tensor_parallel_larger_than_the_gpus_present(capsys, tmp_path, monkeypatch):
    import llmbench.kinds.inference.kind as runner

    monkeypatch.setattr(runner, "cuda_device_count", lambda: 1)
    code, err = cli(capsys, tmp_path, *TINY, "--device", "cuda", "-o", "tensor_parallel=2")
    assert code == 2
    assert "options.tensor_parallel" in err and "2 device(s) but only 1 CUDA device(s)" in err
    code, err = cli(capsys, tmp_path, *TINY, "--device", "cuda:1")
    assert code == 2 and "from cuda:1" in err


def test_engine_not_installed_names_the_extra(capsys, tmp_path, monkeypatch):
    from llmbench.backends.llamacpp import LlamaCppBackend

    monkeypatch.setattr(LlamaCppBackend, "package", "llama_cpp_is_not_here")
    code, err = cli(capsys, tmp_path, *TINY)
    assert code == 2
    # the distribution pip installs, as `llmbench serve --launch` names it too
    assert "'llama-cpp-python'" in err and "llmbench[llamacpp]" in err


def test_no_gpu_here_means_cuda_is_refused(capsys, tmp_path, monkeypatch):
    import llmbench.kinds.inference.kind as runner

    monkeypatch.setattr(runner, "cuda_device_count", lambda: 0)
    code, err = cli(capsys, tmp_path, *TINY, "--device", "cuda")
    assert code == 2 and "no CUDA device is present" in err
