# SPDX-License-Identifier: GPL-2.0
"""bench/perf_stat.py: cycles and instructions per query from perf stat's
CSV output; what perf could not count is "not counted" with a reason,
never 0."""
import shutil

import pytest

import perf_stat as ps

# perf 6.1 with -D -1 and the control FIFO writes its notices onto the
# counts' lines.
NO_PMU = """# started on Sun Nov 29 05:26:29 2026

<not supported>,,cycles,0,100.00,,
<not supported>,,instructions,0,100.00,,Events disabled
Events enabled
Events disabled
"""
COUNTED = """# started on Sun Nov 29 05:26:29 2026

Events disabled
Events enabled
123456789,,cycles,2000000,100.00,,
234567890,,instructions,2000000,100.00,1.90,insn per cycle
Events disabled
"""
HYBRID = """1000,,cpu_core/cycles/,100,100.00,,
500,,cpu_atom/cycles/,100,100.00,,
<not counted>,,cpu_core/instructions/,0,0.00,,
"""


def test_counts_per_query():
    counts = ps.parse_csv(COUNTED)
    assert counts == {"cycles": 123456789, "instructions": 234567890}
    assert ps.per_query(counts, 1000) == {"cycles": 123456789, "instructions": 234567890,
                                          "cpq": 123457, "ipq": 234568}


def test_no_pmu_is_not_counted_never_zero():
    out = ps.per_query(ps.parse_csv(NO_PMU), 1000)
    assert set(out) == {"not_counted"}
    assert "<not supported>" in out["not_counted"]["cycles"]
    assert "cpq" not in out and "cycles" not in out


def test_hybrid_pmus_add_up_and_a_not_counted_event_says_so():
    counts = ps.parse_csv(HYBRID)
    assert counts == {"cycles": 1500, "instructions": None}
    out = ps.per_query(counts, 10)
    assert out["cpq"] == 150 and "ipq" not in out
    assert "instructions" in out["not_counted"]


def test_no_query_served_gives_no_ratio():
    out = ps.per_query({"cycles": 5, "instructions": 7}, 0)
    assert "cpq" not in out and out["not_counted"]["cpq"] == "no query served in the window"


def test_a_reason_replaces_every_figure():
    assert ps.per_query({"cycles": 5}, 10, "perf not installed") == \
        {"not_counted": {"cycles": "perf not installed", "instructions": "perf not installed"}}


def test_missing_perf_is_a_reason():
    with ps.PerfStat("0", perf="no-such-perf-binary") as perf:
        perf.enable()
        perf.disable()
        out = perf.result(100)
    assert out == {"not_counted": {e: "no-such-perf-binary not installed" for e in ps.EVENTS}}


@pytest.mark.skipif(not shutil.which("perf"), reason="no perf")
def test_real_perf_gives_counts_or_reasons():
    """With or without a PMU: figures, or a reason for each missing one."""
    with ps.PerfStat("0") as perf:
        perf.enable()
        perf.disable()
        out = perf.result(100)
    for event, ratio in (("cycles", "cpq"), ("instructions", "ipq")):
        assert (event in out and ratio in out) or event in out.get("not_counted", {})
