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
