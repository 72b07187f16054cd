"""Provenance (measure/env.py): the facts cached for the process are the ones an uncached
reading gives, and every record still gets its own copy and the current command line."""

from llmbench.measure import env as envmod


def test_cached_capture_holds_the_same_facts_as_an_uncached_one():
    fresh = envmod.process_facts()
    env = envmod.capture()
    assert {k: env[k] for k in fresh} == fresh
    assert fresh["packages"]["llmbench"] and fresh["cpu"] == envmod.cpu_name()
    assert (env["git_sha"], env["git_sha_source"]) == envmod.source_version()
    assert set(env) == set(fresh) | {"git_sha", "git_sha_source", "argv"}


def test_each_capture_is_its_own_copy():
    a = envmod.capture()
    a["packages"]["torch"] = "edited by one record"
    a["host"] = "elsewhere"
    b = envmod.capture()
    assert b["packages"].get("torch") != "edited by one record" and b["host"] != "elsewhere"


def test_command_line_and_source_version_are_read_per_record(monkeypatch):
    envmod.capture()  # facts cached first
    monkeypatch.setattr(envmod, "_user_argv", ["llmbench", "run", "sweep.yaml"])
    monkeypatch.setattr(envmod, "git_sha", lambda: None)
    monkeypatch.setenv("LLMBENCH_GIT_SHA", "abc123")
    env = envmod.capture()
    assert env["argv"] == ["llmbench", "run", "sweep.yaml"]
    assert (env["git_sha"], env["git_sha_source"]) == ("abc123", "LLMBENCH_GIT_SHA")


def test_a_gpus_name_and_driver_are_asked_of_nvml_once_and_a_failure_again(monkeypatch):
    import sys
    import types

    calls = []

    def init():
        calls.append("init")
        if len(calls) == 1:
            raise RuntimeError("driver not loaded yet")

    fake = types.SimpleNamespace(
        nvmlInit=init, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200", nvmlSystemGetDriverVersion=lambda: "580.1",
        nvmlDeviceGetCount=lambda: 1)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(envmod, "_GPU_INFO", {})
    assert envmod.gpu_info("cuda:0")["error"] == "driver not loaded yet"  # not kept
    first = envmod.gpu_info("cuda:0")
    assert first == {"name": "NVIDIA H200", "driver": "580.1", "visible": 1} and calls == ["init"] * 2
    first["name"] = "edited by one record"
    assert envmod.gpu_info("cuda:0")["name"] == "NVIDIA H200" and calls == ["init"] * 2
    assert envmod.hardware("cuda:0", 2) == {"name": "NVIDIA H200", "count": 2, "driver": "580.1"}


def test_cores_is_the_machines_core_count():
    import os

    assert envmod.cores() == os.cpu_count() and envmod.hardware("cpu")["cores"] == os.cpu_count()
