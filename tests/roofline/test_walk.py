"""The walk of an inference group asks the roofline once per record (one call from outside
roofline/ into it: annotate), enters roofline/ at most twice per record (annotate, then the
arithmetic once every fact is gathered: on the code before, hardware.find, the parameter
counts, dtype_bytes and Record.metric were reached from inside the arithmetic, 6 entries), and
the roofline counts the model's parameters once per bound (issue 38; on the code before, a
record counted them 8 times from 4 places)."""

import collections
import sys
import time
from pathlib import Path

import llmbench
from llmbench import backends
from llmbench.backends.base import Backend
from llmbench.measure.timeline import RequestTimeline

SRC = str(Path(llmbench.__file__).parent)
ROOF = str(Path(llmbench.__file__).parent / "roofline")


class _Fake(Backend):
    name, package, distribution, extra = "fakewalk", "json", "pip", "none"

    def load(self):
        pass

    def version(self):
        return "0"

    def tokenize(self, text):
        return [1] * len(text.split())

    @property
    def vocab_size(self):
        return 1000

    def generate(self, prompts, output_len, t_ref):
        out = [RequestTimeline(t_ref=t_ref, t_send=t_ref, prompt_tokens=len(p)) for p in prompts]
        for _ in range(output_len):
            t = time.perf_counter()
            for tl in out:
                tl.add(t)
        return out


def test_a_group_enters_the_roofline_once_per_record(monkeypatch):
    import llmbench.roofline  # noqa: F401 - its import is not a call into it
    from llmbench.kinds.inference.kind import InferenceKind
    from llmbench.kinds.inference.spec import Point

    monkeypatch.setitem(backends.REGISTRY, "fakewalk", f"{__name__}:_Fake")
    group = [Point(backend="fakewalk", model="smollm2-135m", batch_size=b, input_len=4, output_len=3,
                   repeats=1, warmups=0, energy_min_window_s=0) for b in (1, 2, 3)]
    kind = InferenceKind()
    entries, params = collections.Counter(), collections.Counter()
    rooms: list[bool] = []  # each llmbench function called, in time order: inside roofline/?

    def watch(frame, event, arg):
        if event != "call" or frame.f_back is None:
            return
        callee, caller = frame.f_code.co_filename, frame.f_back.f_code.co_filename
        # functions only: a module's body, a comprehension or a lambda belongs to its place
        if callee.startswith(SRC) and not frame.f_code.co_name.startswith("<"):
            rooms.append(callee.startswith(ROOF))
        if callee.startswith(ROOF) and not caller.startswith(ROOF):
            entries[frame.f_code.co_name] += 1
        if frame.f_code.co_name == "param_count" and callee.endswith("catalog.py"):
            params[(caller, frame.f_back.f_code.co_name)] += 1

    sys.setprofile(watch)
    try:
        records = [rec for _, rec in kind.run_group(group, kind.context(group), "walk", lambda *a: None)]
    finally:
        sys.setprofile(None)
    assert [r.status for r in records] == ["ok"] * 3
    assert all(r.roofline.bound for r in records)
    assert entries == {"annotate": 3}
    # the walk: a call into roofline/ right after a call outside it enters roofline/
    walk_entries = sum(1 for before, now in zip([False] + rooms, rooms) if now and not before)
    assert walk_entries <= 2 * len(records)
    # per record: the record's own model.params, and the bound's one count
    assert sum(params.values()) == 6 and len(params) == 2
    assert any(caller.startswith(ROOF) and name == "facts" for caller, name in params)
