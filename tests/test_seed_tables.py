# SPDX-License-Identifier: GPL-2.0
"""bench/seed_tables.py through bench_report.py: a host run's cells come
out in seed 000's and seed 001's own table layouts."""
import os

from test_bench_report import mc_point, report, rr_cell, write_run

import seed_tables

SEED000_HEAD = "| Experiment | interrupts | SO_BUSYPOLL | SO_BUSYPOLL(separate) | NAPI Threaded |"
SEED001_HEAD = "testcase load qps avglat 95%lat 99%lat cpu cpq ipq"


def with_perf(cell, **perf):
    cell["counters"]["perf"] = perf
    return cell


def host_run(top):
    rr = [with_perf(rr_cell(m, p99, device="host", transport="xdp"), cycles=1, instructions=1,
                    cpq=cpq, ipq=2 * cpq)
          for m, p99, cpq in (("interrupts", 14.2, 9000), ("busy-inline", 13.8, 12000),
                              ("busy-thread", 14.2, 15000), ("threaded-busy", 13.1, 20000),
                              ("epoll-prefer", 14.0, 9000))]
    for c in rr:
        c.update(rate=12000, seed_rate=12000)
    not_counted = {"not_counted": {"cycles": "perf printed <not supported>",
                                   "instructions": "perf printed <not supported>"}}
    mc = [with_perf(mc_point("base", 200000, 25, 458, 1.0, device="host"), cpq=12748, ipq=11289,
                    window_mismatch="perf counted over 2.1 s, the tool's window is 2.0 s"),
          with_perf(mc_point("suspend20", 200000, 29, 170, 0.0, device="host"), **not_counted),
          with_perf(mc_point("base", "MAX", 100, 14979, 1.0, device="host"), cpq=8679, ipq=7918)]
    write_run(top, "run1-patched-full", "patched", rr=rr, mc=mc)


def test_host_run_gives_both_seed_tables(tmp_path):
    top = str(tmp_path)
    host_run(top)
    rc, _, _ = report(top)
    assert rc == 0
    with open(os.path.join(top, "seed-tables.md")) as f:
        md = f.read()
    lines = md.splitlines()
    # Seed 000: its four columns, its row per workload, p5..p99 in ns.
    assert SEED000_HEAD in lines
    assert "| 12K pkt/s + 0us delay | | | | |" in lines
    assert "| | p99: 14200 | p99: 13800 | p99: 14200 | p99: 13100 |" in lines
    assert "| | p5: 7100 | p5: 6900 | p5: 7100 | p5: 6550 |" in lines
    assert "| | cpq: 9000 ipq: 18000 | cpq: 12000 ipq: 24000 | cpq: 15000 ipq: 30000 | " \
        "cpq: 20000 ipq: 40000 |" in lines
    # Seed 001: a block per load with its nine columns, MAX last.
    rows = [line.split() for line in lines]
    assert rows.count(SEED001_HEAD.split()) == 2
    base = "base 200K 200000 229 366 458 25 12748 11289".split()
    suspend = "suspend20 200K 200000 85 136 170 29 - -".split()
    top_load = "base MAX 5000 7490 11983 14979 100 8679 7918".split()
    assert rows.index(base) < rows.index(suspend) < rows.index(top_load)
    # What was not counted says why, never 0.
    assert "- cpq (suspend20) not counted: perf printed <not supported>" in lines
    assert "- cpq/ipq of base at 200K: perf counted over 2.1 s, the tool's window is 2.0 s" \
        in lines


def test_a_run_without_perf_stat_says_so():
    agg = {("host", "udp", 600, 0, "interrupts"): {
        "p5": 1.0, "p50": 2.0, "p95": 3.0, "p99": 4.0,
        "perf": seed_tables.perf_of([{"counters": {}}])}}
    lines = seed_tables.seed000_table(agg, "host", "udp")
    assert "| 600 pkt/s + 0us delay | | | | |" in lines
    assert "| | p99: 4000 | p99: - | p99: - | p99: - |" in lines
    assert "- cpq (interrupts) not counted: not run with --perf-stat" in lines


def test_labels_follow_the_seed():
    assert [seed_tables.rate_label(r) for r in (12000, 125000, 1250)] == ["12K", "125K", "1250"]
    assert [seed_tables.load_label(x) for x in (200000, "MAX", 0, 500)] == \
        ["200K", "MAX", "MAX", "500"]


def test_no_seed_mode_no_table():
    agg = {("host", "udp", 600, 0, "epoll-prefer"): {"p99": 1.0}}
    assert seed_tables.seed000_table(agg, "host", "udp") == []


def test_the_runbook_boot_is_no_run_of_cells(tmp_path):
    """make bench's full plan boots once more for the runbook's dry run;
    that boot has no cells and must not make the report fail."""
    top = str(tmp_path)
    host_run(top)
    write_run(top, "run2-patched-runbook", "patched")
    rc, summary, md = report(top)
    assert rc == 0
    assert "run2-patched-runbook" not in md
    assert [r["dir"] for r in summary["runs"]] == ["run1-patched-full"]
