"""Machine sharing during the measured window (measure/contention.py): other processes on our
GPUs through a fake NVML, other processes' CPU time through a real busy process."""

import contextlib
import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import psutil
import pytest

from llmbench.measure import env as envmod
from llmbench.measure.contention import CPU_SHARE_LIMIT, ContentionWatch, WatchedMeter, own_pids
from llmbench.store.store import flatten

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 30: pass\n"


class FakeNvml:
    def __init__(self, pids_by_index):
        self.pids = pids_by_index

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in self.pids[h]]


@pytest.fixture
def detached_busy():
    """A busy process that is not our descendant (its parent exits at once), as another user's
    job would be."""
    launcher = ("import subprocess, sys\n"
                f"p = subprocess.Popen([sys.executable, '-c', {BUSY!r}], stdin=subprocess.DEVNULL, "
                "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n"
                "print(p.pid)\n")
    pid = int(subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True,
                             check=True).stdout)
    proc = psutil.Process(pid)
    yield proc
    try:
        proc.kill()
    except psutil.NoSuchProcess:
        pass


def test_other_processes_cpu_time_is_counted(detached_busy):
    assert detached_busy.pid not in own_pids()
    watch = ContentionWatch()
    c0 = sum(detached_busy.cpu_times()[:2])
    with watch.window():
        time.sleep(1.5)
    busy_cpu_s = sum(detached_busy.cpu_times()[:2]) - c0
    assert busy_cpu_s > 0.05  # it did run during the window (even on a loaded machine)
    # every CPU-second the other process burnt is in the count (scans bracket the window)
    assert watch.other_cpu_s >= 0.9 * busy_cpu_s
    r = watch.result()
    assert r["windows"] == 1 and r["window_s"] >= 1.5 and r["loadavg_1m_max"] is not None


def test_our_own_children_are_ours_not_others():
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        assert child.pid in own_pids() and os.getpid() in own_pids()
        proc = psutil.Process(child.pid)
        watch = ContentionWatch()
        c0 = sum(proc.cpu_times()[:2])
        with watch.window():
            time.sleep(1.0)
        child_cpu_s = sum(proc.cpu_times()[:2]) - c0
        assert child_cpu_s > 0.05
        assert watch.own_cpu_s >= 0.9 * child_cpu_s  # booked as ours, so not as others'
    finally:
        child.kill()
        child.wait()


def test_other_gpu_process_flags_the_point():
    other = psutil.Process().parent().pid  # exists in our pid namespace, and is not ours
    watch = ContentionWatch([0, 1], FakeNvml({0: [os.getpid()], 1: [os.getpid(), other]}))
    with watch.window():
        pass
    r = watch.result()
    assert r["gpu_other_pids"] == [str(other)]
    assert r["contended"] and any("other process(es) on GPU" in x for x in r["reasons"])


def test_only_our_process_on_the_gpu_is_no_gpu_contention():
    watch = ContentionWatch([0], FakeNvml({0: [os.getpid()]}))
    with watch.window():
        pass
    assert watch.result()["gpu_other_pids"] == []


def test_a_window_lists_our_process_tree_once_at_each_edge(monkeypatch):
    # Listing the tree reads every thread's children file (~2 ms with torch's threads): the GPU
    # scan and the CPU times share one listing per edge; and one read of /proc/stat gives an
    # edge both the kernel's task count and the machine's CPU time.
    from llmbench.measure import contention

    contention._tasks_made()  # its one-time probe of the count done
    calls, stat_reads = [], []
    real, real_read = contention.own_pids, contention._read_all
    monkeypatch.setattr(contention, "own_pids",
                        lambda root=None, stat=None, fields=None: calls.append(root) or real(root, stat, fields))
    monkeypatch.setattr(contention, "_read_all",
                        lambda path: (path == "/proc/stat" and stat_reads.append(path)) or real_read(path))
    watch = ContentionWatch([0], FakeNvml({0: [os.getpid()]}))
    with watch.window():
        assert len(calls) == 1 and len(stat_reads) == 1
    assert len(calls) == 2 and len(stat_reads) == 2 and watch.result()["gpu_other_pids"] == []


def test_the_gpu_scan_waits_in_nvml_on_a_thread_and_result_takes_it(monkeypatch):
    # NVML's process list took up to 2.75 ms a call on an H200: the window's closing scan
    # must not hold up the caller. The fake's closing list waits on a gate only the caller
    # opens after the window: were the scan on the caller's thread, the window could not close.
    import threading

    other = psutil.Process().parent().pid
    gate, calls = threading.Event(), []

    class GatedNvml(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h):
            calls.append(h)
            if len(calls) == 2:  # the closing scan
                calls.append("timed out" if not gate.wait(5) else "opened")
                return super().nvmlDeviceGetComputeRunningProcesses(h) + [SimpleNamespace(pid=other)]
            return super().nvmlDeviceGetComputeRunningProcesses(h)

    watch = ContentionWatch([0], GatedNvml({0: [os.getpid()]}))
    with watch.window():
        pass
    assert "opened" not in calls            # the window closed with its scan still out
    gate.set()
    r = watch.result()
    assert calls == [0, 0, "opened"] and r["gpu_other_pids"] == [str(other)] and r["contended"]


def test_behind_a_meter_the_gpu_list_is_taken_inside_the_window_after_the_opening_read():
    # Behind an energy meter the watch lists the GPUs as it starts and then inside each window,
    # on the aside thread right after the counter's opening read, so the closing edge waits in
    # NVML for the energy read alone. One log of both fakes' calls gives the order; the other
    # process shows up in the inside list only, and is flagged.
    from llmbench.measure.power import EnergyMeter

    log, other = [], psutil.Process().parent().pid

    class Nv(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h):
            log.append("gpu list")
            extra = [SimpleNamespace(pid=other)] if log.count("gpu list") == 2 else []
            return super().nvmlDeviceGetComputeRunningProcesses(h) + extra

    class Counter(EnergyMeter):
        source, available, reads_aside = "fake counter", True, True

        def _read_j(self):
            log.append("energy read")
            return float(len(log))

    watch = ContentionWatch([0], Nv({0: [os.getpid()]}))
    with WatchedMeter(Counter(""), watch).window() as w:
        deadline = time.monotonic() + 10
        while len(log) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)
        inside = list(log)
    r = watch.result()  # waits for the GPU lists only: the closing read may still be out
    w.settle()
    assert inside == ["gpu list", "energy read", "gpu list"]  # at the start; opening; inside
    assert log == inside + ["energy read"]                     # the closing edge: energy only
    assert r["gpu_other_pids"] == [str(other)] and r["contended"]
    assert "inside each window, after the energy counter's opening read" in watch.observer()


def test_cpu_times_from_proc_stat_equal_psutils_for_a_busy_child():
    # A child burns ~0.3 CPU-s and has exited into a waiting state: /proc/PID/stat read by hand
    # and psutil's cpu_times must give the same seconds (to one clock tick each field), and a
    # pid that does not exist is left out.
    from llmbench.measure import contention

    child = subprocess.Popen([sys.executable, "-c", "import time, sys\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\nsys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while sum(psutil.Process(child.pid).cpu_times()[:2]) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # the loop is over: the child now waits on stdin, its times are still
        mine = contention.pids_cpu_s({child.pid, 2**22 + 7})
        theirs = contention._psutil_cpu_s({child.pid})
        # the stat fields own_pids read on its way give the same, and no stat is read again
        fields = {}
        assert child.pid in contention.ppid_descendants(os.getpid(), [child.pid], fields=fields)
        reads = []
        real = contention._stat_cpu
        contention._stat_cpu = lambda pid: reads.append(pid) or real(pid)
        try:
            shared = contention.pids_cpu_s({child.pid}, fields)
        finally:
            contention._stat_cpu = real
        assert shared == {k: v for k, v in mine.items() if k[0] == child.pid} and reads == []
    finally:
        child.communicate(b"")
    assert list(mine) == [(child.pid, pytest.approx(list(mine)[0][1]))] and len(theirs) == 1
    assert list(mine.values())[0] == pytest.approx(list(theirs.values())[0], abs=4 * 0.01)
    assert list(mine.values())[0] >= 0.25


def _child_with_grandchild():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys\n"
                              "p = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'],"
                              " stdin=subprocess.PIPE)\nprint(p.pid, flush=True)\nsys.stdin.read()\n"
                              "p.communicate(b'')"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return child, int(child.stdout.readline())


def test_our_tree_reads_the_same_either_way_and_the_cheaper_way_is_chosen(monkeypatch):
    # A child with a grandchild: the per-thread children lists and the parents in every stat
    # file give the same tree (root, child, grandchild). With more threads listed last time
    # than the machine has processes, own_pids takes the parents' way; otherwise the lists'.
    from llmbench.measure import contention

    child, grandchild = _child_with_grandchild()
    try:
        me, procs = os.getpid(), [int(d) for d in os.listdir("/proc") if d.isdigit()]
        # (other tests may have left children of ours running: both ways must see them too)
        tree = contention.proc_descendants(me)
        assert {me, child.pid, grandchild} <= tree and contention.ppid_descendants(me, procs) == tree
        ways = []
        monkeypatch.setattr(contention, "_tasks_made", lambda stat=None: None)  # no kept listing
        monkeypatch.setattr(contention, "ppid_descendants",
                            lambda root, procs, fields=None: ways.append("parents") or tree)
        monkeypatch.setitem(contention._CHILDREN_FILES, me, len(procs) + 1000)
        assert contention.own_pids() == tree and ways == ["parents"]
        monkeypatch.setitem(contention._CHILDREN_FILES, me, 1)
        assert contention.own_pids() == tree and ways == ["parents"]  # the lists' way this time
    finally:
        child.communicate(b"")


def test_the_tree_is_listed_again_only_after_the_kernel_made_a_task(monkeypatch):
    # The kernel's task count (faked here, so other threads cannot move it) stays put: the
    # last listing is kept, and only narrowed: a child that ended drops out, and so does its
    # child, now another's. The count moves: only the processes /proc did not list last time
    # are asked their parent, and a new child with a grandchild is found without a full
    # listing. The count moves by more than the pids left unused: a full listing again.
    from llmbench.measure import contention

    made, listings = [100], []
    monkeypatch.setattr(contention, "_tasks_made", lambda stat=None: made[0])
    real = contention._list_tree
    monkeypatch.setattr(contention, "_list_tree",
                        lambda root, procs=None, fields=None: listings.append(root) or real(root, procs, fields))
    monkeypatch.setattr(contention, "_TREES", {})
    me = os.getpid()
    child, grandchild = _child_with_grandchild()
    newer = None
    try:
        first = own_pids()
        assert {me, child.pid, grandchild} <= first and listings == [me]
        assert own_pids() == first == contention.proc_descendants(me) and listings == [me]
        child.kill()
        child.wait()  # reaped: no longer anyone's child; the grandchild goes to init
        kept = own_pids()
        assert listings == [me] and child.pid not in kept and grandchild not in kept
        assert kept == first - {child.pid, grandchild} == contention.proc_descendants(me)
        newer, newer_grandchild = _child_with_grandchild()
        made[0] += 5
        found = own_pids()
        assert listings == [me] and {newer.pid, newer_grandchild} <= found
        assert found == contention.proc_descendants(me)
        made[0] += contention._pid_max()  # pids may have wrapped round: list it all
        assert own_pids() == found and listings == [me, me]
    finally:
        for c in (child, newer):
            if c is not None:
                c.kill()
                c.wait()
        with contextlib.suppress(psutil.Error):
            psutil.Process(grandchild).kill()
        with contextlib.suppress(psutil.Error, UnboundLocalError):
            psutil.Process(newer_grandchild).kill()


def test_the_kernels_task_count_moves_with_each_thread_and_process():
    from llmbench.measure import contention

    before = contention._read_tasks_made()
    if before is None:
        pytest.skip("no task count in /proc/stat on this machine (Linux only)")
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    after_thread = contention._read_tasks_made()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert before < after_thread < contention._read_tasks_made()
    assert contention._tasks_made() is not None


def test_where_the_task_count_does_not_move_the_tree_is_listed_every_time(monkeypatch):
    from llmbench.measure import contention

    listings = []
    monkeypatch.setattr(contention, "_COUNTS_TASKS", None)
    monkeypatch.setattr(contention, "_read_tasks_made", lambda stat=None: 7)  # a sandbox's constant
    monkeypatch.setattr(contention, "_list_tree", lambda root, procs=None, fields=None: listings.append(root) or {root})
    assert contention._tasks_made() is None and contention._COUNTS_TASKS is False
    assert own_pids() == own_pids() == {os.getpid()} and len(listings) == 2


def test_a_failing_gpu_scan_is_named_not_raised():
    class Broken(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h):
            raise RuntimeError("NVMLError_NotSupported")

    watch = ContentionWatch([0], Broken({0: []}))
    with watch.window():
        pass
    r = watch.result()
    assert r["gpu_other_pids"] == [] and "cannot list GPU processes" in r["gpu_note"]


def test_pids_from_another_namespace_count_all_but_one_per_device():
    # inside a container NVML reports host pids: none exists here, one per device is taken as ours
    watch = ContentionWatch([0], FakeNvml({0: [2**22 + 11, 2**22 + 12]}))
    with watch.window():
        pass
    r = watch.result()
    assert len(r["gpu_other_pids"]) == 1 and "namespace" in r["gpu_note"]


def test_cpu_share_threshold():
    watch = ContentionWatch()
    cores = os.cpu_count()
    watch.window_s, watch.other_cpu_s = 2.0, 2.0 * cores * (CPU_SHARE_LIMIT + 0.05)
    assert watch.result()["contended"]
    watch.other_cpu_s = 2.0 * cores * (CPU_SHARE_LIMIT - 0.05)
    assert not watch.result()["contended"]


def test_watched_meter_keeps_the_meter_and_watches_its_windows():
    from llmbench.measure.power import EnergyMeter

    meter = WatchedMeter(EnergyMeter("none here"), ContentionWatch())
    assert meter.describe() == EnergyMeter("none here").describe()
    with meter.window() as win:
        time.sleep(0.01)
    assert win.energy_j is None and meter.watch.windows == 1


def test_flat_row_carries_the_flag():
    assert flatten({"run_id": "r", "kind": "inference", "env": {"contention": {"contended": True}}})["contended"]
    assert flatten({"run_id": "r", "kind": "inference", "env": {}})["contended"] is None


def test_source_version_says_where_it_came_from(monkeypatch):
    monkeypatch.setattr(envmod, "git_sha", lambda: "abc123")
    assert envmod.source_version() == ("abc123", "git")
    monkeypatch.setattr(envmod, "git_sha", lambda: None)
    monkeypatch.setenv("LLMBENCH_GIT_SHA", "def456")
    assert envmod.source_version() == ("def456", "LLMBENCH_GIT_SHA")
    monkeypatch.delenv("LLMBENCH_GIT_SHA")
    version, source = envmod.source_version()
    assert version.startswith("llmbench==") and source == "package-version"
    env = envmod.capture()
    assert env["git_sha"] == version and env["git_sha_source"] == "package-version"


def test_git_sha_of_this_checkout():
    envmod.git_sha.cache_clear()
    sha = envmod.git_sha()  # the suite runs from a git checkout (editable install or src/ path)
    assert sha is not None and len(sha.split("-")[0]) == 40


def test_results_shows_which_points_were_contended(tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.cli.results import TABLE_COLUMNS
    from llmbench.store import Store
    from tests.store.test_store import rec

    s = Store(tmp_path)
    for bs, flag in ((1, True), (2, False)):
        r = rec(bs=bs)
        r.env["contention"] = {"contended": flag, "reasons": ["a pip install ran"] if flag else []}
        s.write(r)
    main(["results", "--results", str(tmp_path), "--format", "csv", "--where", "contended"])
    rows = capsys.readouterr().out.strip().splitlines()
    assert len(rows) == 2 and ",k1," in rows[1]  # header + the one contended point
    assert "contended" in TABLE_COLUMNS


class _SpinBackend:
    """Just enough of a Backend for run_point: 'generates' by sleeping while a busy process
    that is not ours runs, so the record must come out contended."""

    def __init__(self, model):
        self.model = model
        self.vocab_size = 1000

    def prepare(self, point):
        pass

    def device_count(self):
        return 1

    def generate(self, prompts, output_len, t_ref):
        from llmbench.measure.timeline import RequestTimeline

        tls = [RequestTimeline(t_ref=t_ref, t_send=t_ref, prompt_tokens=len(p)) for p in prompts]
        for _ in range(output_len):
            time.sleep(0.2)
            for tl in tls:
                tl.add(time.perf_counter())
        return tls

    def engine_timings(self):
        return {}

    def memory_peak_gib(self):
        return None


def test_a_point_run_next_to_a_busy_process_is_flagged(detached_busy, monkeypatch):
    from llmbench.models.sources import ModelRef
    from llmbench.kinds.inference.kind import run_point
    from llmbench.kinds.inference.spec import Point
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    monkeypatch.setattr("llmbench.measure.contention.CPU_SHARE_LIMIT", 0.01)  # any real busy work
    point = Point(backend="llamacpp", model="smollm2-135m", batch_size=1, input_len=4,
                  output_len=3, repeats=2, warmups=0)
    rec = Record(run_id="r", kind="inference", backend=BackendInfo(name="fake"),
                 model=ModelInfo(name="fake"), hardware=HardwareInfo(name="cpu"), env=envmod.capture())
    run_point(_SpinBackend(ModelRef(name="fake", source="synthetic")), point, rec)
    c = rec.env["contention"]
    assert c["windows"] == 2 and c["other_cpu_s"] > 0 and c["contended"]
    assert any(n.startswith("contended: other processes used") for n in rec.notes)
    assert rec.env["git_sha"] and rec.env["git_sha_source"]


def test_descendants_from_proc_match_psutil_and_leave_siblings_out():
    from llmbench.measure.contention import proc_descendants, psutil_descendants

    # a launcher with two children, as torchrun with two ranks: each rank alone is not the
    # other's, the launcher's tree holds both
    tree = ("import subprocess, sys, time\n"
            "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']) for _ in range(2)]\n"
            "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
            "time.sleep(30)\n")
    launcher = subprocess.Popen([sys.executable, "-c", tree], stdout=subprocess.PIPE, text=True)
    try:
        a, b = map(int, launcher.stdout.readline().split())
        assert proc_descendants(launcher.pid) == psutil_descendants(launcher.pid) == {launcher.pid, a, b}
        assert own_pids(a) == {a} and b not in own_pids(a)
        assert {launcher.pid, a, b} <= own_pids()  # all are this test's descendants
    finally:
        for p in psutil.Process(launcher.pid).children():
            p.kill()
        launcher.kill()
        launcher.wait()


def test_without_children_lists_in_proc_psutil_answers(tmp_path):
    from llmbench.measure.contention import proc_descendants

    (tmp_path / "42" / "task" / "42").mkdir(parents=True)  # a kernel without CONFIG_PROC_CHILDREN
    with pytest.raises(OSError):
        proc_descendants(42, proc=str(tmp_path))
    (tmp_path / "42" / "task" / "42" / "children").write_text("43 ")
    (tmp_path / "43" / "task" / "43").mkdir(parents=True)
    (tmp_path / "43" / "task" / "43" / "children").write_text("")
    (tmp_path / "43" / "task" / "44").mkdir()  # a thread that ended: no children file
    assert proc_descendants(42, proc=str(tmp_path)) == {42, 43}


def test_a_watch_rooted_elsewhere_counts_that_tree_as_ours(detached_busy):
    # under torchrun rank 0 roots its watch at the launcher, whose other ranks are not its own
    # descendants: here the busy process stands for such a sibling
    w = ContentionWatch.for_device("cpu", root_pid=detached_busy.pid)
    c0 = sum(detached_busy.cpu_times()[:2])
    with w.window():
        time.sleep(1.0)
    busy_cpu_s = sum(detached_busy.cpu_times()[:2]) - c0
    assert busy_cpu_s > 0.05 and w.own_cpu_s >= 0.9 * busy_cpu_s


def test_a_watch_counts_also_pids_as_ours_and_reset_forgets_the_windows(detached_busy):
    # serving: a server given by URL runs on this machine but is no descendant of the client
    w = ContentionWatch.for_device("cpu", also_pids=(detached_busy.pid,))
    c0 = sum(detached_busy.cpu_times()[:2])
    with w.window():
        time.sleep(1.0)
    busy_cpu_s = sum(detached_busy.cpu_times()[:2]) - c0
    assert busy_cpu_s > 0.05 and w.own_cpu_s >= 0.9 * busy_cpu_s
    w.reset()  # the next level's record counts its own windows only
    r = w.result()
    assert r["windows"] == 0 and r["own_cpu_s"] == 0 and r["other_cpu_s"] == 0 and not r["contended"]


def test_listening_pid_names_the_process_on_the_port():
    import socket

    from llmbench.measure.contention import listening_pid

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert listening_pid(port) == os.getpid()
    assert listening_pid(port) is None  # closed: nobody listens


def test_machine_busy_time_is_user_nice_system_irq_softirq_as_psutil_counts_it():
    import psutil

    from llmbench.measure import contention

    stat = b"cpu  100 20 30 400 50 6 7 8 0 0\ncpu0 100 20 30 400 50 6 7 8 0 0\nprocesses 4242\n"
    assert contention.busy_cpu_s(stat) == pytest.approx((100 + 20 + 30 + 6 + 7) * contention._TICK_S)
    assert contention._read_tasks_made(stat) == 4242
    live = contention.busy_cpu_s()
    t = psutil.cpu_times()
    assert live == pytest.approx(sum(getattr(t, k) for k in ("user", "nice", "system", "irq", "softirq")),
                                 abs=0.5)  # read a moment apart
