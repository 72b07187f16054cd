"""Which records one comparison reads (analysis/pairing.py): one run, else one machine and day,
else none, named."""

from llmbench.analysis.pairing import choose


def row(label, run, at, host="vm", thr=1.0):
    return {"label": label, "run_id": run, "created_at": at, "host": host, "thr": thr}


def test_the_newest_run_holding_both_sides_wins_over_newer_singles():
    old_a, old_b = row("Q4_0", "r1", "2026-12-01T21:14"), row("F16", "r1", "2026-12-01T21:13")
    new_b = row("F16", "r2", "2026-12-02T13:15")           # newer, but alone in its run and day
    got, how = choose({"Q4_0": [old_a], "F16": [old_b, new_b]})
    assert got == {"Q4_0": old_a, "F16": old_b}
    assert how.how == "one run" and how.text() == "one run: r1 (2026-12-01)"
    # two complete runs: the newer
    got, how = choose({"Q4_0": [old_a, row("Q4_0", "r3", "2026-12-03T01:00")],
                       "F16": [old_b, row("F16", "r3", "2026-12-03T01:01")]})
    assert how.text() == "one run: r3 (2026-12-03)" and got["F16"]["run_id"] == "r3"


def test_one_machine_and_day_when_no_run_holds_both():
    fp8 = row("fp8", "ra", "2026-12-02T04:32")
    bf16_same_day = row("bf16", "rb", "2026-12-02T04:35")
    bf16_other_day = row("bf16", "rc", "2026-12-01T21:03")
    bf16_other_host = row("bf16", "rd", "2026-12-02T05:00", host="other")
    got, how = choose({"fp8": [fp8], "bf16": [bf16_other_day, bf16_same_day, bf16_other_host]})
    assert got == {"fp8": fp8, "bf16": bf16_same_day}
    assert how.text() == "one machine and day: host vm, 2026-12-02: fp8 from ra, bf16 from rb"


def test_never_mixed_silently():
    got, how = choose({"b64": [row("b64", "r1", "2026-12-01T10:00")], "b1": [row("b1", "r2", "2026-12-02T10:00")]})
    assert got == {} and how.how == "none"
    assert how.text().startswith("not paired") and "r1 (2026-12-01" in how.text() and "r2 (2026-12-02" in how.text()
    # the same day without a host name is not one machine
    got, _ = choose({"a": [row("a", "r1", "2026-12-01T10:00", host=None)],
                     "b": [row("b", "r2", "2026-12-01T11:00", host=None)]})
    assert got == {}
    got, how = choose({"a": [row("a", "r1", "2026-12-01T10:00")], "b": []})
    assert got == {} and how.text() == "no own record of b"


def test_fewer_than_all_takes_the_group_holding_most():
    r1 = [row("block 32", "r1", "2026-12-02T04:43"), row("block 64", "r1", "2026-12-02T04:45")]
    r0 = [row("block 16", "r0", "2026-12-02T04:36")]
    got, how = choose({"block 16": r0, "block 32": [r1[0]], "block 64": [r1[1]], "block 128": []}, need=2)
    assert set(got) == {"block 16", "block 32", "block 64"} and how.how == "one machine and day"
    got, how = choose({"block 16": [], "block 32": [r1[0]], "block 64": [r1[1]]}, need=2)
    assert how.text() == "one run: r1 (2026-12-02)"
