"""Was the machine shared while we measured? Other processes on our GPUs (NVML) and the CPU time
other processes burnt during the measured windows (psutil), plus the load average.

Why: on a 2-core machine the same llama.cpp point measured 15 s batch latency while a `pip
install` ran and 0.362 s alone, and nothing in the record told the two apart. A record now says
`env.contention.contended` and why; `llmbench results` and the report show the flag.

"Ours" is this process and its descendants (engine workers, vLLM's engine core). Other work is
the machine's busy CPU time (psutil.cpu_times) less ours: unlike a per-process scan this also
catches the many short-lived processes of e.g. a `pip install` that start and end inside the
window. Reads happen outside the timed window (before it opens, after it closes), so they cost
the measurement nothing. NVML's list of our GPUs' processes waits in NVML for up to ~3 ms: it is
taken on the aside thread (measure/aside.py), when the watch starts (or is reset) and after each
window. A scan as the next window opened would land beside that window's opening energy read,
and came ms after the previous window's closing one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from llmbench.measure import env as envmod
from llmbench.measure.aside import aside

# Contended when other processes used more than this share of the machine's CPU capacity
# (cores x window) -- background daemons stay well under 1 % -- or any other process held one
# of our GPUs.
CPU_SHARE_LIMIT = 0.10
SCAN_TIMEOUT_S = 30.0  # a GPU list that hangs in NVML costs the point's contention, not the run


def own_pids(root: int | None = None, stat: bytes | None = None,
             fields: dict[int, list[bytes]] | None = None) -> set[int]:
    """`root` (this process unless given) and its descendants, from the last listing where the
    kernel's task count says little can have changed (`_tasks_made`, counted before each
    listing, so a task made during one moves it):
    - no task made since: the listing can only have shrunk; its pids' parents (a stat file
      each) say which are still ours;
    - tasks made: a new descendant is a new process, so only the processes /proc did not list
      last time are asked their parent, beside the kept tree (one directory read, where the
      full listing reads a children file for each of a torch process's ~150 threads: 0.5-0.7
      ms an edge on H200 hosts, whose task count moves between most edges);
    - no listing kept, or so many tasks made that a pid may have been reused: a full listing.
    `stat`: /proc/stat as the caller read it just now (proc_stat), else it is read here.
    `fields`: filled with the stat fields read on the way (pid -> fields), for pids_cpu_s."""
    root = os.getpid() if root is None else root
    made = _tasks_made(stat)
    known = _TREES.get(root)
    if made is not None and known is not None:
        if known[0] == made:
            tree = known[1] = ppid_descendants(root, sorted(known[1] - {root}), fields=fields)
            return tree
        if made - known[0] < _pid_max() - len(known[2]) and (procs := _procs()) is not None:
            tree = ppid_descendants(root, sorted((known[1] - {root}) | (procs - known[2])), fields=fields)
            _TREES[root] = [made, tree, procs]
            return tree
    procs = _procs()  # before the tree: a process made after it is new to the next listing
    tree = _list_tree(root, procs, fields)
    if made is not None and procs is not None:
        _TREES[root] = [made, tree, procs]
    return tree


def _procs() -> set[int] | None:
    """The processes /proc lists (threads are not listed), or None without /proc."""
    try:
        return {int(d) for d in os.listdir("/proc") if d.isdigit()}
    except OSError:
        return None


@functools.cache
def _pid_max() -> int:
    """The kernel's largest pid (pids are handed out in order up to it, then reused)."""
    try:
        return int(_read_all("/proc/sys/kernel/pid_max"))
    except (OSError, ValueError):
        return 32768  # the smallest default: reuse is assumed sooner, never later


def _list_tree(root: int, procs: set[int] | None = None,
               fields: dict[int, list[bytes]] | None = None) -> set[int]:
    """root's tree read the cheaper of two ways on Linux: each of our threads' children list
    (/proc/PID/task/TID/children: a torch process has ~150 threads, 0.5-0.9 ms an edge on H200
    hosts), or every process's parent from its stat file, where the machine runs fewer
    processes (`procs`, /proc's listing) than our tree has threads (a container). The choice
    compares the process count with the thread count the last children listing read; psutil
    answers where /proc has no lists."""
    try:
        threads = _CHILDREN_FILES.get(root)
        if threads is not None and procs is not None and len(procs) < threads:
            return ppid_descendants(root, sorted(procs), fields=fields)
        return proc_descendants(root)
    except OSError:
        return psutil_descendants(root)


_CHILDREN_FILES: dict[int, int] = {}  # root -> children files its last listing read
# root -> [tasks made before its last listing, the tree then, the processes /proc listed then]
_TREES: dict[int, list] = {}


def _tasks_made(stat: bytes | None = None) -> int | None:
    """Tasks (processes and threads) the kernel has made since boot: /proc/stat's `processes`
    (of `stat`, else read now), never reused, unlike a pid. None where it is missing or does
    not move when a task is made (checked once, with a thread: a sandbox's /proc)."""
    global _COUNTS_TASKS
    if _COUNTS_TASKS is None:
        before = _read_tasks_made()
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        after = _read_tasks_made()
        _COUNTS_TASKS = None not in (before, after) and after > before
    return _read_tasks_made(stat) if _COUNTS_TASKS else None


_COUNTS_TASKS: bool | None = None


def proc_stat() -> bytes | None:
    """/proc/stat's bytes (None without it): one read serves a window edge's machine CPU time
    and task count (the kernel writes every CPU's and interrupt's line: ~0.1 ms on a 16-core
    H200 host)."""
    try:
        return _read_all("/proc/stat")
    except OSError:
        return None


def _read_tasks_made(stat: bytes | None = None) -> int | None:
    try:
        raw = stat if stat is not None else _read_all("/proc/stat")
        at = raw.index(b"\nprocesses ") + 11
        return int(raw[at:raw.index(b"\n", at)])
    except (OSError, ValueError):
        return None


def proc_descendants(root: int, proc: str = "/proc") -> set[int]:
    """root and every descendant, from /proc/PID/task/TID/children (Linux >= 3.5 with
    CONFIG_PROC_CHILDREN); OSError when root's list is missing."""
    with open(f"{proc}/{root}/task/{root}/children"):  # the kernel lists children at all
        pass
    pids, todo, files = {root}, [root], 0
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError):  # a process or thread that ended meanwhile
            for tid in os.listdir(f"{proc}/{pid}/task"):
                with contextlib.suppress(OSError):
                    files += 1
                    listed = _read_all(f"{proc}/{pid}/task/{tid}/children").split()
                    kids = {int(c) for c in listed} - pids
                    pids |= kids
                    todo.extend(kids)
    _CHILDREN_FILES[root] = files
    return pids


def ppid_descendants(root: int, procs: list[int], proc: str = "/proc",
                     fields: dict[int, list[bytes]] | None = None) -> set[int]:
    """root and every descendant among `procs`, from each one's parent in /proc/PID/stat
    (`fields`: filled with each stat's fields, pid -> fields)."""
    kids: dict[int, list[int]] = {}
    for pid in procs:
        with contextlib.suppress(OSError, ValueError, IndexError):  # ended meanwhile
            f = _stat_fields(pid, proc)
            kids.setdefault(int(f[1]), []).append(pid)  # field 4, the parent
            if fields is not None:
                fields[pid] = f
    pids, todo = {root}, [root]
    while todo:
        for k in kids.get(todo.pop(), ()):
            if k not in pids:
                pids.add(k)
                todo.append(k)
    return pids


def _read_all(path: str) -> bytes:
    """A small /proc file's bytes: os.read, not open(), which costs ~4x as much a file, and a
    process with torch's threads has a children file per thread (1.4 -> 0.4 ms, 150 threads)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def psutil_descendants(root: int) -> set[int]:
    import psutil

    pids = {root}
    with contextlib.suppress(psutil.Error):
        pids |= {c.pid for c in psutil.Process(root).children(recursive=True)}
    return pids


_BUSY = ("user", "nice", "system", "irq", "softirq")


def busy_cpu_s(stat: bytes | None = None) -> float:
    """CPU-seconds the whole machine has spent busy (all processes, kernel work included):
    user, nice, system, irq and softirq time, as psutil.cpu_times names them. Linux: /proc/stat's
    first line (of `stat`, else read now; psutil parses the whole file), elsewhere psutil."""
    try:
        raw = stat if stat is not None else _read_all("/proc/stat")
        f = raw[:raw.index(b"\n")].split()  # cpu user nice system idle iowait irq softirq ...
        if f[0] == b"cpu" and len(f) >= 8:
            return (int(f[1]) + int(f[2]) + int(f[3]) + int(f[6]) + int(f[7])) * _TICK_S
    except (OSError, ValueError):
        pass
    import psutil

    t = psutil.cpu_times()
    return sum(getattr(t, k, 0.0) for k in _BUSY)


def pids_cpu_s(pids: set[int], fields: dict[int, list[bytes]] | None = None) -> dict[tuple[int, float], float]:
    """(pid, start time) -> CPU seconds of each of `pids` (own_pids: this process and its
    descendants), reaped children included (cutime/cstime), so a worker that exits mid-window
    still counts. Linux: one os.read of /proc/PID/stat a pid (psutil's Process, cpu_times and
    create_time took ~28 us a pid on a 2-core VM, this ~7), none for a pid whose stat fields
    own_pids has just read (`fields`); elsewhere psutil."""
    out = {}
    fields = fields or {}
    try:
        for pid in pids:
            found = _cpu_of(pid, fields[pid]) if pid in fields else _stat_cpu(pid)
            if found is not None:
                out[found[0]] = found[1]
    except _NoProc:
        return _psutil_cpu_s(pids)
    return out


class _NoProc(Exception):
    pass


_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def _stat_cpu(pid: int) -> tuple[tuple[int, float], float] | None:
    """((pid, start ticks), CPU seconds) from /proc/PID/stat; None when the process is gone."""
    try:
        f = _stat_fields(pid)
    except FileNotFoundError:
        if not os.path.isdir("/proc/self"):
            raise _NoProc from None
        return None
    except OSError:
        return None
    return _cpu_of(pid, f)


def _cpu_of(pid: int, f: list[bytes]) -> tuple[tuple[int, float], float]:
    """((pid, start ticks), CPU seconds) from a stat's fields (_stat_fields: from field 3 on)."""
    # utime 14, stime 15, cutime 16, cstime 17, starttime 22
    return (pid, float(f[19])), (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) * _TICK_S


def _stat_fields(pid: int, proc: str = "/proc") -> list[bytes]:
    """/proc/PID/stat's fields from field 3 (the state) on: the command name before them is in
    parentheses and may hold spaces."""
    raw = _read_all(f"{proc}/{pid}/stat")
    return raw[raw.rindex(b")") + 2:].split()


def _psutil_cpu_s(pids: set[int]) -> dict[tuple[int, float], float]:
    import psutil

    out = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            ct = p.cpu_times()
            out[(pid, p.create_time())] = ct.user + ct.system + ct.children_user + ct.children_system
    return out


def listening_pid(port: int) -> int | None:
    """The process listening on TCP `port` on this machine (None: none, or not visible to us),
    e.g. a server given by URL that llmbench did not start: its work is the measured load."""
    import psutil

    with contextlib.suppress(psutil.Error, OSError):
        for c in psutil.net_connections("tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return c.pid
    return None


def gpu_processes(nvml, indices: list[int]) -> dict[int, list[int]]:
    """NVML index -> pids of the compute processes running on it."""
    out = {}
    for i in indices:
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        out[i] = sorted({p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)})
    return out


class ContentionWatch:
    """Accumulates, over every measured window, what other work shared the machine."""

    def __init__(self, gpu_indices: list[int] | None = None, nvml=None, root_pid: int | None = None,
                 also_pids: tuple[int, ...] = ()):
        self.gpu_indices = gpu_indices or []
        self.nvml = nvml
        self.root_pid = root_pid  # whose process tree is ours (None: this process's)
        self.also_pids = also_pids  # more trees that are ours (a server llmbench did not start)
        self.gpu_note: str | None = None
        self.notes: list[str] = []  # what the watch could not tell apart
        self._found: list[dict[str, Any]] = []  # what the GPU scans found, not yet taken
        self._asked: list[threading.Event] = []  # set as each scan asked for is in
        self.reset()

    def reset(self) -> None:
        """Forget the windows so far (a serving sweep records each level's own), and list the
        GPUs' processes once before the next window."""
        self._wait_scans()  # a scan still out belongs to the windows forgotten
        self._found.clear()
        self._ours_seen: set[int] = set()  # our pids at any window edge: the scans' "ours"
        self.window_s = 0.0
        self.other_cpu_s = 0.0
        self.own_cpu_s = 0.0
        self.loadavg_1m: list[float] = []
        self.gpu_other_pids: set[int] = set()
        self.windows = 0
        self._gpu_where = "after each window"  # where the windows' GPU lists were taken
        self._gpu_scan()

    @classmethod
    def for_device(cls, device: str, count: int = 1, root_pid: int | None = None,
                   also_pids: tuple[int, ...] = ()) -> ContentionWatch:
        if not device.startswith("cuda"):
            return cls(root_pid=root_pid, also_pids=also_pids)
        from llmbench.measure.power import visible_cuda_indices

        try:
            import pynvml

            pynvml.nvmlInit()
            return cls(visible_cuda_indices(device, count), pynvml, root_pid, also_pids)
        except Exception as e:  # no driver, no pynvml: say so, do not guess
            w = cls(root_pid=root_pid, also_pids=also_pids)
            w.gpu_note = f"NVML unavailable, other GPU processes unknown: {e}"
            return w

    @contextlib.contextmanager
    def window(self, scan_after: bool = True):
        """scan_after=False: the GPUs are listed inside the window instead (`inside`)."""
        # Our process tree is listed once per edge, for both the GPU scans and the CPU times:
        # with torch's threads each listing costs ~2 ms (H200, 2026-12-03), 4 a point before.
        stat, fields = proc_stat(), {}  # the task count for the tree, the machine's CPU time
        pids = self._ours(stat, fields)
        self._ours_seen |= pids
        ours0, busy0 = pids_cpu_s(pids, fields), busy_cpu_s(stat)
        t0 = time.perf_counter()
        try:
            yield self
        finally:
            t1 = time.perf_counter()
            stat, fields = proc_stat(), {}
            busy1 = busy_cpu_s(stat)
            pids = self._ours(stat, fields)
            self._ours_seen |= pids
            ours1 = pids_cpu_s(pids, fields)
            if scan_after:
                self._gpu_scan()
            else:
                self._gpu_where = "inside each window, after the energy counter's opening read"
            # a process of ours born during the window spent all its CPU time inside it
            ours = sum(max(0.0, cpu - ours0.get(key, 0.0)) for key, cpu in ours1.items())
            self.own_cpu_s += ours
            self.other_cpu_s += max(0.0, (busy1 - busy0) - ours)
            self.window_s += t1 - t0
            self.loadavg_1m.append(os.getloadavg()[0])
            self.windows += 1

    def observer(self) -> str:
        """What the watch does around a measured window (a record's `observers`)."""
        if not self.lists_gpus:
            return "CPU times (psutil) read before and after the window, nothing inside it"
        return ("CPU times (psutil) read before and after the window; the processes on our GPUs "
                f"(NVML) listed on a thread beside it as the watch starts and {self._gpu_where}")

    def _ours(self, stat: bytes | None = None, fields: dict | None = None) -> set[int]:
        """The pids that are ours: the root's tree and every also_pids tree."""
        return own_pids(self.root_pid, stat, fields).union(
            *(own_pids(p, stat, fields) for p in self.also_pids))

    @property
    def lists_gpus(self) -> bool:
        return self.nvml is not None and bool(self.gpu_indices)

    def _gpu_scan(self) -> None:
        """List the processes on our GPUs on the aside thread: NVML's list took 0.15-2.75 ms a
        call on two H200s (2026-12-03), waiting in NVML with the GIL released, so the point's
        own work goes on meanwhile; result() takes what the scans found."""
        if self.lists_gpus:
            aside(self._scan_job())

    def inside(self) -> Callable[[], None] | None:
        """The GPU list for an energy meter to take inside its window, on the aside thread
        right after the counter's opening read (EnergyMeter.window's `inside`): the closing
        edge then waits in NVML for the energy and GPM reads only. None: nothing to list."""
        return self._scan_job() if self.lists_gpus else None

    def _scan_job(self) -> Callable[[], None]:
        done = threading.Event()
        self._asked.append(done)

        def job() -> None:
            try:
                self._list_gpus()
            finally:
                done.set()
        return job

    def _list_gpus(self) -> None:  # on the aside thread
        import psutil

        try:
            listed = gpu_processes(self.nvml, self.gpu_indices)
        except Exception as e:  # e.g. NVMLError_NotSupported under some MIG set-ups
            self._found.append({"error": e})
            return
        # whether any listed pid is in our pid namespace, asked now, while they still run
        self._found.append({"listed": {i: (pids, any(psutil.pid_exists(p) for p in pids))
                                       for i, pids in listed.items()}})

    def _wait_scans(self) -> None:
        """Wait for the scans asked for (never for the aside thread's later jobs: the energy
        counter's closing read comes after a window's GPU list)."""
        for done in self._asked:
            if not done.wait(SCAN_TIMEOUT_S):
                self.notes.append(f"a GPU process list did not finish in {SCAN_TIMEOUT_S:g} s")
        self._asked.clear()

    def _take_scans(self) -> None:
        """Take every scan asked for so far."""
        self._wait_scans()
        ours = self._ours_seen or self._ours()  # no window yet: ours now
        for found in self._found:
            if "error" in found:
                self.gpu_note = f"NVML cannot list GPU processes: {found['error']}"
                continue
            for i, (pids, visible) in found["listed"].items():
                if pids and not visible:
                    # NVML lists host pids inside a container: ours cannot be told apart, so
                    # assume one of them per device is us and count the rest as others
                    self.gpu_note = "NVML pids are from another pid namespace; others counted as extra processes"
                    self.gpu_other_pids |= {f"{i}:{p}" for p in pids[1:]}
                else:
                    self.gpu_other_pids |= {p for p in pids if p not in ours}
        self._found.clear()

    def result(self) -> dict[str, Any]:
        self._take_scans()
        cores = envmod.cores() or 1
        share = self.other_cpu_s / (self.window_s * cores) if self.window_s > 0 else 0.0
        reasons = []
        if share > CPU_SHARE_LIMIT:
            reasons.append(f"other processes used {share:.0%} of the CPU ({self.other_cpu_s:.2f} CPU-s "
                           f"in {self.window_s:.2f} s on {cores} cores)")
        if self.gpu_other_pids:
            reasons.append(f"{len(self.gpu_other_pids)} other process(es) on GPU {self.gpu_indices}")
        return {
            "contended": bool(reasons),
            "reasons": reasons,
            "windows": self.windows,
            "window_s": self.window_s,
            "other_cpu_s": self.other_cpu_s,
            "own_cpu_s": self.own_cpu_s,
            "other_cpu_share": share,
            "cpu_share_limit": CPU_SHARE_LIMIT,
            "cores": cores,
            "loadavg_1m_max": max(self.loadavg_1m, default=None),
            "gpu_indices": self.gpu_indices,
            "gpu_other_pids": sorted(map(str, self.gpu_other_pids)),
            "gpu_note": self.gpu_note,
            "notes": self.notes,
        }


class WatchedMeter:
    """An energy meter whose every window is also watched for contention: the measured window
    is the meter's window in every workload, so the workloads need no change."""

    def __init__(self, meter, watch: ContentionWatch):
        self._meter = meter
        self.watch = watch

    def __getattr__(self, name):
        return getattr(self._meter, name)

    @contextlib.contextmanager
    def window(self, *args, **kwargs):
        # the watch's CPU reads are outside the energy window: they cost neither time nor
        # joules; its GPU list waits in NVML inside it, on the aside thread, off the closing edge
        inside = self.watch.inside()
        if inside is not None:
            kwargs["inside"] = (*kwargs.get("inside", ()), inside)
        with self.watch.window(scan_after=inside is None), self._meter.window(*args, **kwargs) as win:
            yield win
