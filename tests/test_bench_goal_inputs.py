"""What the goals of bench/bench_report.py may rest on: every planned
device and transport, each kernel's own cells, each NAPI's own
suspension, the SUT's clock, every vector that carries RX, every part of
a counted function, and figures that can be counts at all."""
import json
import math
import os

import pytest

from conftest import load_script
from test_bench_report import (BENCH, Pair, Probes, bench_report, benchlib, fake_tool, insn_goal,
                               insn_ranges, mark, mc_point, report, rr_cell, snap,
                               threaded_reps, write_run, SUSPENDED)

THREADED_GOOD = dict(rx_polls_softirq=0.0, rx_polls_app=0.0, rx_polls_kthread=1.0,
                     kthread_packets=1.0, rx_irqs=0.01, rx_rearms=0.01)


def goal_rows(summary, goal, device):
    return [g for g in summary["goals"] if g["goal"] == goal and g["device"] == device]


# --- a planned device or transport without results ---------------------------

def test_a_device_whose_set_up_failed_is_a_broken_goal_row(tmp_path):
    top = str(tmp_path)
    skip = {"bench": "rr", "device": "virtio", "status": "skip",
            "error": "need two virtio_net NICs, found []: boot the VM with --network loop"}
    write_run(top, "run1-patched-full", "patched",
              rr=[rr_cell("threaded-busy", 100, **THREADED_GOOD), skip],
              mc=[dict(skip, bench="mc")])
    rc, summary, md = report(top)
    assert rc == 1
    for goal in (bench_report.GOAL_THREADED, bench_report.GOAL_SUSPEND):
        [row] = goal_rows(summary, goal, "virtio")
        assert row["status"] == "broken", row
        assert "set-up failed: need two virtio_net NICs" in row["result"]
    assert goal_rows(summary, bench_report.GOAL_THREADED, "netdevsim")[0]["status"] == "pass"
    assert "planned without results: patched virtio" in md


def test_a_transport_without_cells_is_a_broken_goal_row(tmp_path):
    top = str(tmp_path)
    cells = [rr_cell("threaded-busy", 100, device=device, transport=transport, **THREADED_GOOD)
             for device, transport in (("igb", "udp"), ("igb", "xdp"), ("virtio", "udp"))]
    write_run(top, "run1-patched-full", "patched", rr=cells)
    rc, summary, _ = report(top)
    assert rc == 1
    rows = {r["where"].split()[0]: r for r in goal_rows(summary, bench_report.GOAL_THREADED,
                                                        "virtio")}
    assert rows["UDP"]["status"] == "pass"
    assert rows["XDP"]["status"] == "broken"
    assert "no XDP cell recorded" in rows["XDP"]["result"]


def plan(bench, devices, **more):
    """The plan record rr_grid.py and mc_sweep.py write before their first cell."""
    return dict({"bench": bench, "status": "plan", "devices": devices}, **more)


def test_a_planned_device_the_run_never_reached_is_a_broken_goal_row(tmp_path):
    """The guest died during netdevsim's cells: virtio has no cell and no
    skip record, only the plan names it; the XDP transport no device got."""
    top = str(tmp_path)
    write_run(top, "run1-patched-full", "patched",
              rr=[plan("rr", ["netdevsim", "virtio"], transports=["udp", "xdp"],
                       experiment="grid"),
                  plan("rr", ["igb"], transports=["udp"], experiment="collapse"),
                  rr_cell("threaded-busy", 100, **THREADED_GOOD)],
              mc=[plan("mc", ["netdevsim", "virtio"])])
    rc, summary, md = report(top)
    for goal in (bench_report.GOAL_THREADED, bench_report.GOAL_SUSPEND):
        rows = goal_rows(summary, goal, "virtio")
        assert [r["status"] for r in rows] == ["broken"], f"{goal}: virtio rows {rows}"
        assert "planned, no cell recorded" in rows[0]["result"]
    rows = {r["where"].split()[0]: r["status"]
            for r in goal_rows(summary, bench_report.GOAL_THREADED, "netdevsim")}
    assert rows == {"UDP": "pass", "XDP": "broken"}, rows
    # The collapse experiment's plan is not the grid's: igb has no goal row.
    assert not goal_rows(summary, bench_report.GOAL_THREADED, "igb")
    assert rc == 1
    assert "planned without results: patched virtio" in md
    # A plan record is no cell: not in the run time, not a failed cell.
    assert [r["cells"] for r in summary["run_time"]] == [1]


def test_a_device_is_owed_only_the_transports_its_plans_name(tmp_path):
    """The smoke plan: netdevsim's grid on UDP and XDP, then virtio's
    AF_XDP modes on XDP alone; virtio owes no UDP cell."""
    top = str(tmp_path)
    write_run(top, "run1-patched-smoke", "patched",
              rr=[plan("rr", ["netdevsim"], transports=["xdp", "udp"], experiment="grid"),
                  rr_cell("threaded-busy", 100, **THREADED_GOOD),
                  rr_cell("threaded-busy", 100, transport="xdp", **THREADED_GOOD),
                  plan("rr", ["virtio"], transports=["xdp"], experiment="grid"),
                  rr_cell("xsk-prefer", 100, device="virtio", transport="xdp")])
    assert bench_report.missing_results(bench_report.load_runs(top)) == []


def test_a_device_planned_for_xsk_suspend_without_xdp_cells_breaks_its_goal(tmp_path):
    top = str(tmp_path)
    write_run(top, "run1-patched-xsk", "patched",
              rr=[plan("rr", ["virtio", "igb"], transports=["xdp"], experiment="grid",
                       modes=["xsk-prefer", "xsk-suspend"]),
                  rr_cell("xsk-prefer", 100, device="virtio", transport="xdp")])
    rc, summary, _ = report(top)
    [row] = goal_rows(summary, bench_report.GOAL_XSK, "igb")
    assert row["status"] == "broken" and "planned, no cell recorded" in row["result"], row
    [row] = goal_rows(summary, bench_report.GOAL_XSK, "virtio")
    assert row["status"] == "not measured", row
    assert rc == 1


def test_the_runbook_dry_run_reads_plan_records_as_no_cell(tmp_path):
    dryrun = load_script("runbook_dryrun", os.path.join(BENCH, "host", "runbook_dryrun.py"))
    path = tmp_path / "rr.jsonl"
    path.write_text(json.dumps(plan("rr", ["host"])) + "\n"
                    + json.dumps({"status": "ok"}) + "\n")
    assert dryrun.cells_ok(str(path)) == (True, [{"status": "ok"}])


# --- each kernel's own cells ---------------------------------------------------

def write_runbook_runs(top, base_label):
    """The runbook's layout: the patched kernel's run with a suspension
    cell, then the base kernel's with a better defer20 cell, labelled
    BASE_LABEL."""
    write_run(top, "run1-patched-host", "patched", mc=[
        mc_point("defer20", 4000, 97, 900, 1.0, device="host"),
        mc_point("suspend20", 4000, 96, 900, 0.08, device="host", **SUSPENDED)])
    write_run(top, "run2-base-host", base_label, mc=[
        mc_point("defer20", 4000, 97, 900, 0.2, device="host")])


def test_runs_of_two_kernels_never_replace_each_others_cells(tmp_path):
    """The runbook's layout: one plan, two kernels. The base kernel's
    defer20 cell must not become the patched kernel's reference."""
    top = str(tmp_path)
    write_runbook_runs(top, "base")
    _, summary, md = report(top)
    [row] = [g for g in goal_rows(summary, bench_report.GOAL_SUSPEND, "host")
             if g["where"].startswith("suspend20")]
    assert row["status"] == "pass", row
    assert row["kernel"] == "patched"
    assert "| IRQ suspension at the saturated point | patched | host |" in md


def test_two_runs_of_one_label_never_replace_each_others_cells(tmp_path):
    """The base kernel's run with --label left at its default: both runs
    say "patched". The base's defer20 cell must not become the patched
    kernel's reference, whatever the label files say."""
    top = str(tmp_path)
    write_runbook_runs(top, "patched")
    for name, kernel in (("run1-patched-host", "6.12.0-napi"), ("run2-base-host", "6.12.0")):
        (tmp_path / name / "machine.json").write_text(json.dumps({"kernel": kernel}))
    _, summary, md = report(top)
    rows = [g for g in goal_rows(summary, bench_report.GOAL_SUSPEND, "host")
            if g["where"].startswith("suspend20")]
    assert [(r["kernel"], r["status"]) for r in rows] == \
        [("patched (run1-patched-host)", "pass")], rows
    assert "| patched (run2-base-host) | host |" in md


def test_the_runbook_takes_its_label_from_the_run_directory():
    runbook = load_script("runbook", os.path.join(BENCH, "host", "runbook.py"))
    assert runbook.label_of("/tmp/bench/run2-base-host") == "base"
    assert runbook.label_of("/tmp/bench/run1-patched-host/") == "patched"
    assert runbook.label_of("/tmp/bench/somewhere") == "patched"


# --- each NAPI's own suspension -----------------------------------------------

def trace_line(ts, event, rest, cpu=0, comm="memcached-321", flags="b..1."):
    return f"   {comm}     [{cpu:03d}] {flags}  {ts:.6f}: {event}: {rest}"


def irq_event(ts, kind, napi_id, napi, cpu=0, reason="events"):
    """A suspension event, with the address probe's line right before it."""
    return [trace_line(ts - 0.000002, "napi_irq_ptr",
                       f"(trace_event_raw_event_napi_irq_suspend_class+0x4/0x130) "
                       f"napi=0x{napi:x}", cpu),
            trace_line(ts, f"napi_irq_{kind}", f"napi_id={napi_id} dev=eth1 timeout=20000000 "
                       f"reason={reason} disabled=0", cpu)]


def poll(ts, napi, cpu=1):
    return trace_line(ts, "napi_poll", f"napi poll on napi struct {napi:016x} for device eth1 "
                      "work 1 budget 64", cpu, "<idle>-0", "..s1.")


def rearm(ts, napi, cpu=1):
    return trace_line(ts, "napi_rearm", f"(mlx5e_napi_poll+0x1a4/0x2c0 <- napi_complete_done) "
                      f"napi=0x{napi:x} done=1", cpu, "<idle>-0", "..s1.")


NAPI_A, NAPI_B = 0xffff8880a0000000, 0xffff8880b0000000


def two_napis(pairs=True):
    """A suspended 100-102 s, B from 101 s on; a softirq poll and a re-arm
    on B at 105 s, and on A at 103 s (A no longer suspended)."""
    lines = (irq_event(100.0, "suspend", 8193, NAPI_A) + irq_event(101.0, "suspend", 8194, NAPI_B)
             + irq_event(102.0, "resume", 8193, NAPI_A, cpu=1, reason="timer")
             + [poll(103.0, NAPI_A), rearm(103.0, NAPI_A), poll(105.0, NAPI_B),
                rearm(105.0, NAPI_B)])
    if not pairs:
        lines = [line for line in lines if "napi_irq_ptr" not in line]
    return benchlib.parse_trace(lines, 100.0, 110.0)


def test_suspension_is_tracked_per_napi():
    events = two_napis()
    sut = benchlib.suspension_counts(events, 100)
    assert sut["suspended_frac"] == 0.55         # A 2 s, B 9 s of 10 s: the mean
    assert sut["suspensions"] == 2
    assert sut["softirq_polls_suspended"] == 1   # B's at 105 s, not A's at 103 s
    assert benchlib.rearm_counts(events, 100)["rx_rearms_suspended"] == 1
    assert events["napi_ids"] == {NAPI_A: 8193, NAPI_B: 8194}


NAPI_C = 0xffff8880c0000000


def test_an_rx_napi_that_never_suspended_counts_as_not_suspended():
    """Three queues, C never suspended: its softirq poll at 104 s is no
    poll while suspended, and C is 0 % of the window suspended. Every
    suspended NAPI has its address, so C's lack of one says it never
    suspended, not that its polls cannot be placed."""
    events = benchlib.parse_trace(
        irq_event(100.0, "suspend", 8193, NAPI_A) + irq_event(101.0, "suspend", 8194, NAPI_B)
        + irq_event(102.0, "resume", 8193, NAPI_A, cpu=1, reason="timer")
        + [poll(104.0, NAPI_C), rearm(104.0, NAPI_C), poll(105.0, NAPI_B), rearm(105.0, NAPI_B)],
        100.0, 110.0)
    sut = benchlib.suspension_counts(events, 100)
    assert sut["softirq_polls_suspended"] == 1, sut      # B's, not C's
    assert benchlib.rearm_counts(events, 100)["rx_rearms_suspended"] == 1
    assert sut["suspended_frac"] == pytest.approx((0.2 + 0.9 + 0.0) / 3, abs=1e-4)


def test_polls_of_several_napis_without_their_ids_are_not_measured():
    events = two_napis(pairs=False)
    before = snap(100.0, {"cpu0": 0}, {"cpu0": 0}, 0, {})
    after = snap(110.0, {"cpu0": 10}, {"cpu0": 4}, 8, {})
    got = benchlib.window_counts(before, after, 100, ["cpu0"], events)
    assert got["sut"]["softirq_polls_suspended"] is None
    assert got["sut"]["rx_rearms_suspended"] is None
    assert "cannot be placed in their NAPI's suspension" in got["not_measured"]["suspension"]


# --- the SUT's clock ---------------------------------------------------------------

def test_a_tool_on_another_clock_is_cut_at_the_harness_reads():
    run = benchlib.run_windowed(fake_tool(
        '{"window": "start", "ns": 5000000000, "sent": 61, "served": 60}',
        '{"window":"end","ns":7000000000,"sent":261,"served":250}', own_clock=True),
        None, timeout=30)
    probes = Probes()
    counts = benchlib.measured_counts(run, Pair(), probes, 200, ["cpu0"])
    assert probes.cut == (run["before"]["time"], run["after"]["time"])
    assert "not the SUT's clock" in counts["clock_mismatch"]
    cell = rr_cell("threaded-busy", 100)
    cell["counters"]["clock_mismatch"] = counts["clock_mismatch"]
    assert "not the SUT's clock" in bench_report.rep_problem(cell)


class TracedPolls:
    """A trace of softirq polls at 100.005 s and every 0.1 s from 100.05 s
    to 102.05 s on the SUT's clock; window() keeps those in its cut."""

    def window(self, t0, t1):
        self.cut = (t0, t1)
        times = [100.005] + [100.05 + i / 10 for i in range(21)]
        return {"window": (t0, t1), "irq": [],
                "polls": [{"ts": t, "pid": 0, "comm": "<idle>", "softirq": True, "work": 1,
                           "napi": NAPI_A} for t in times if t0 <= t <= t1]}, {}


def peer_run(skew, read_lags=(0.010, 0.012)):
    """Generators on the peer: a 2 s window from 100.000 s to 102.000 s
    of the SUT's clock, which the peer's clock reads SKEW s ahead, and
    whose edge lines the harness reads READ_LAGS s after each edge."""
    run = {}
    for key, at, lag, served in (("before", 100.0, read_lags[0], 60),
                                 ("after", 102.0, read_lags[1], 260)):
        run[key] = dict(snap(at + lag, {"cpu0": 0}, {"cpu0": 0}, 0, {}), tool_time=at + skew,
                        tool_sent=served, tool_served=served)
    return run


def host_pair(peer_netns=None):
    pair = benchlib.HostPair()
    pair.netns = {benchlib.NS_SUT: None, benchlib.NS_PEER: peer_netns}
    return pair


@pytest.mark.parametrize("skew", [4900.0, -3.7, 0.0])
def test_a_skewed_peer_clock_changes_no_count(skew):
    """The peer's edges translated by the offset measured where the
    harness read them: the tool's own 2 s window on the SUT's clock,
    whatever the peer's clock reads, and not the reads' 2.002 s."""
    probes = TracedPolls()
    counts = benchlib.measured_counts(peer_run(skew), host_pair(), probes, 200, ["cpu0"],
                                      tool_side=benchlib.NS_PEER)
    assert probes.cut == pytest.approx((100.010, 102.010)), probes.cut
    assert counts["sut"]["rx_polls_softirq"] == 0.1         # 20 polls, 200 served
    assert counts["peer_clock_offset_s"] == pytest.approx(0.010 - skew)
    assert "clock_mismatch" not in counts and "the peer's clock" in counts["window_clock"]


def test_peer_edges_read_apart_from_their_offset_break_the_repetition():
    """The end line reached the harness 0.6 s late: no one offset places
    both edges, so the trace counts are from another window than the
    tool's and the repetition cannot count toward a goal."""
    counts = benchlib.measured_counts(peer_run(4900.0, (0.010, 0.610)), host_pair(),
                                      TracedPolls(), 200, ["cpu0"], tool_side=benchlib.NS_PEER)
    assert "no one offset" in counts["clock_mismatch"], counts
    cell = rr_cell("threaded-busy", 100, device="host")
    cell["counters"]["clock_mismatch"] = counts["clock_mismatch"]
    assert bench_report.rep_problem(cell).startswith("window edges: the peer's edges")


def test_a_peer_in_a_namespace_of_this_machine_keeps_its_edges():
    probes = TracedPolls()
    counts = benchlib.measured_counts(peer_run(0.0), host_pair("peer"), probes, 200, ["cpu0"],
                                      tool_side=benchlib.NS_PEER)
    assert probes.cut == (100.0, 102.0)
    assert "window_clock" not in counts and "clock_mismatch" not in counts


# --- every vector that carries RX ---------------------------------------------

@pytest.mark.parametrize("vector", ["mlx5_comp0@pci:0000:03:00.0", "ice-eth0-TxRx-0",
                                    "idpf-eth0-TxRx-1"])
def test_combined_vectors_count_as_rx(vector):
    before = snap(10.0, {"cpu0": 0}, {"cpu0": 0}, 0, {vector: 100})
    after = snap(12.0, {"cpu0": 10}, {"cpu0": 4}, 8, {vector: 120})
    got = benchlib.window_counts(before, after, 100, ["cpu0"], None)
    assert got["sut"]["rx_irqs"] == 0.2 and got["sut"]["rxtx_irqs"] == 0.2
    assert "irqs" not in got["not_measured"]


def test_the_goal_says_combined_vectors_count_as_rx():
    [row] = bench_report.goal_suspension("host", bench_report.mc_points([
        mc_point("defer20", 4000, 97, 900, 1.0, device="host", rxtx_irqs=1.0),
        mc_point("suspend20", 4000, 96, 900, 0.05, device="host", rxtx_irqs=0.05,
                 **SUSPENDED)]))
    assert row["status"] == "pass"
    assert "SUT RX IRQs per query vs defer20's (RX+TX vectors, counted as RX) 0.050" \
        in row["figures"]


def test_rearms_judge_where_irqs_are_not_counted():
    cells = threaded_reps(2, device="host", rx_irqs=None, rx_rearms=0.01,
                          kthread_packets=1.0)
    for cell in cells:
        cell["counters"]["not_measured"] = {"irqs": "no RX vector among the device's "
                                                    "interrupt lines"}
    [row] = bench_report.goal_threaded("host", bench_report.rr_cells(cells))
    assert row["status"] == "partial", row
    assert "SUT RX IRQs per request: n/a (not measured: no RX vector" in row["result"]


def off_goal(device, base, patched):
    """goal_off over one interrupt-mode cell of DEVICE, a repetition per
    dict of SUT counts in BASE and PATCHED."""
    def agg(reps):
        return bench_report.rr_cells([rr_cell("interrupts", 100, rep, device=device, **sut)
                                      for rep, sut in enumerate(reps)])
    return bench_report.goal_off(device, bench_report.baseline_rows(agg(base), agg(patched)))


def test_rearms_judge_the_features_off_goal_where_irqs_cannot():
    """igb's RX IRQs are the model's: 10 % more re-arms with every
    feature off must not pass as "IRQs n/a"."""
    row = off_goal("igb", [dict(rx_rearms=0.5)] * 2, [dict(rx_rearms=0.55)] * 2)
    assert row["status"] == "missed", row
    assert "MISSED SUT RX re-arms patched/base at udp 600+0us 1.1000" in row["figures"]
    assert off_goal("igb", [dict(rx_rearms=0.5)] * 2, [dict(rx_rearms=0.5)] * 2)["status"] \
        == "partial"
    # A host NIC whose vectors were not counted: the re-arms judge there too.
    unnamed = dict(rx_irqs=None, rx_rearms=0.5)
    row = off_goal("host", [unnamed] * 2, [unnamed] * 2)
    assert row["status"] == "partial", row
    assert "SUT RX IRQs patched/base" in row["result"] and "the re-arms judge" in row["result"]
    # mlx5's completion vectors: counted as RX, and said so.
    combined = dict(rx_irqs=0.5, rxtx_irqs=0.5)
    row = off_goal("host", [combined] * 2, [combined] * 2)
    assert row["status"] == "pass", row
    assert "SUT RX IRQs (RX+TX vectors, counted as RX) patched/base" in row["figures"]


# --- every part of a counted function --------------------------------------------

CLONED_MAP = """ffffffff81000000 T _stext
ffffffff81100000 T napi_complete_done
ffffffff81100200 t __napi_poll.constprop.0
ffffffff81100400 t napi_gro_flush_normal.isra.0
ffffffff81100500 T net_rx_action
ffffffff81100900 T __x64_sys_sethostname
ffffffff81100a00 T _etext
ffffffff81200000 t napi_complete_done.cold
ffffffff81200040 t net_rx_action.cold
ffffffff81200080 t unrelated.cold
"""


def test_insn_ranges_count_every_part_of_a_function():
    syms = insn_ranges.text_symbols(CLONED_MAP.splitlines())
    found, missing = insn_ranges.ranges(syms, ["napi_complete_done", "__napi_poll",
                                               "napi_gro_flush_normal", "net_rx_action"])
    assert found == {"napi_complete_done": (0xffffffff81100000, 0xffffffff81100200),
                     "napi_complete_done.cold": (0xffffffff81200000, 0xffffffff81200040),
                     "__napi_poll.constprop.0": (0xffffffff81100200, 0xffffffff81100400),
                     "napi_gro_flush_normal.isra.0": (0xffffffff81100400, 0xffffffff81100500),
                     "net_rx_action": (0xffffffff81100500, 0xffffffff81100900),
                     "net_rx_action.cold": (0xffffffff81200040, 0xffffffff81200080)}
    assert missing == []
    assert "napi_gro_flush_normal" in insn_ranges.NAPI_CORE
    assert insn_ranges.logical_name("napi_poll.isra.0.cold") == "napi_poll"


def test_the_series_additions_outside_the_napi_core_are_counted():
    """virtqueue_napi_complete()'s suspension test (inlined into
    virtnet_poll() and virtnet_poll_tx()) and ep_poll()'s suspend call
    run on every request: their functions are counted, and the series'
    out-of-line epoll helpers are no difference between the kernels."""
    base = ["ffffffff81000000 T _stext", "ffffffff81100000 T napi_complete_done",
            "ffffffff81100100 t virtnet_poll", "ffffffff81100300 t virtnet_poll_tx",
            "ffffffff81100400 t ep_poll", "ffffffff81100600 T __x64_sys_sethostname",
            "ffffffff81100700 T _etext"]
    patched = base + ["ffffffff81100500 t ep_suspend_napi_irqs.isra.0"]
    found = {}
    for side, lines in (("base", base), ("patched", patched)):
        _, ranges, _ = insn_ranges.plugin_option("p.so", "o", insn_ranges.text_symbols(lines))
        found[side] = {insn_ranges.logical_name(s) for s in ranges}
    assert {"virtnet_poll", "virtnet_poll_tx", "ep_poll"} <= found["base"], found
    assert "ep_suspend_napi_irqs" in found["patched"]
    assert bench_report.insn_function_difference(found) is None


def test_every_counted_function_with_its_cold_part_fits_the_plugin():
    lines = ["ffffffff81000000 T _stext"]
    for i, name in enumerate(insn_ranges.NAPI_CORE + (insn_ranges.MARKER,)):
        lines += [f"{0xffffffff81100000 + 0x100 * i:x} t {name}",
                  f"{0xffffffff81200000 + 0x100 * i:x} t {name}.cold"]
    lines.append("ffffffff81300000 T _etext")
    option, found, missing = insn_ranges.plugin_option("p.so", "o",
                                                       insn_ranges.text_symbols(lines))
    assert len(found) == 2 * len(insn_ranges.NAPI_CORE) and missing == []
    with open(os.path.join(BENCH, "qemu-plugin", "napi_insn.c")) as f:
        assert f"#define MAX_SYMS {insn_ranges.PLUGIN_MAX_SYMS}\n" in f.read()


def test_insn_per_exchange_sums_the_parts_of_a_function():
    marks = [mark(1, {"napi_complete_done": [100], "napi_complete_done.cold": [0]}),
             mark(2, {"napi_complete_done": [300], "napi_complete_done.cold": [50]})]
    assert benchlib.insn_per_exchange(marks, 10) == ({"napi_complete_done": 25.0}, None)


def test_goal_off_a_ratio_far_below_one_is_a_broken_count():
    row = insn_goal([400.0, 400.0], [320.0, 321.0])     # 0.8 of the base
    assert row["status"] == "broken"
    assert "under 0.95 of the base" in row["result"]


def baseline_runs(top, symbols):
    """Base and patched baseline runs of one virtio cell; SYMBOLS: each
    kernel's insn-symbols.json "found" names (None: no file)."""
    for n, label in ((1, "patched"), (2, "base")):
        write_run(top, f"run{n}-{label}-baseline", label,
                  rr=[rr_cell("interrupts", 100, device="virtio")])
        if symbols[label] is not None:
            with open(f"{top}/run{n}-{label}-baseline/insn-symbols.json", "w") as f:
                json.dump({"found": {s: {} for s in symbols[label]}}, f)
    _, summary, _ = report(top)
    [row] = goal_rows(summary, bench_report.GOAL_OFF, "virtio")
    return row


CORE = ["napi_complete_done", "__napi_poll", "net_rx_action"]


def test_goal_off_needs_the_same_functions_counted_on_both_kernels(tmp_path):
    row = baseline_runs(str(tmp_path / "same"), {
        "base": CORE + ["____napi_schedule"],
        "patched": CORE + ["____napi_schedule.constprop.0", "napi_complete_done.cold",
                           "napi_complete_done_slow"]})
    assert row["status"] == "pass", row
    row = baseline_runs(str(tmp_path / "differ"), {
        "base": CORE + ["____napi_schedule"], "patched": CORE + ["napi_complete_done_slow"]})
    assert row["status"] == "broken"
    assert "base only: ____napi_schedule; patched only: -" in row["result"]
    row = baseline_runs(str(tmp_path / "unknown"), {"base": CORE, "patched": None})
    assert row["status"] == "broken"
    assert "patched: no insn-symbols.json" in row["result"]


# --- figures that can be counts ----------------------------------------------------

def test_negative_or_nan_counts_are_broken_not_judged():
    status, text = bench_report.check("SUT RX IRQs per request", [-0.5, 0.0],
                                      lambda v: v <= 0.02, "≤ 0.02")
    assert status == "broken" and "-0.500..0.000" in text
    status, text = bench_report.check("lost", [0.0, math.nan], lambda v: v == 0, "0")
    assert status == "broken"
    assert bench_report.span([0.0, math.nan]) == "0.000, NaN"


def test_a_nan_or_negative_reference_is_no_count():
    """max() and min() compare a NaN away: a reference repetition with a
    NaN count must break the ratio, not vanish from it."""
    points = [mc_point("defer20", 4000, 97, 900, irqs, device="host") | {"rep": rep}
              for rep, irqs in enumerate((1.0, math.nan))]
    points += [mc_point("suspend20", 4000, 96, 900, 0.05, device="host", **SUSPENDED)
               | {"rep": rep} for rep in range(2)]
    [row] = bench_report.goal_suspension("host", bench_report.mc_points(points))
    assert row["status"] == "broken", row
    assert "a negative or NaN figure is no count" in row["result"]


def test_an_unreadable_irq_affinity_is_a_problem():
    assert benchlib.irq_affinity_problem({"eth0-rx-0": None}, {"eth1-rx-0": "2"},
                                         ["cpu1"]) == \
        "SUT vector eth0-rx-0: effective affinity unreadable"


def test_pairing_probe_misses_drop_the_napi_ids(tmp_path):
    """A missed napi_irq_ptr hit lets a suspension event take an older
    address on its CPU: no pair of the window is trusted then."""
    probes = benchlib.TraceProbes.__new__(benchlib.TraceProbes)
    probes.TRACING = str(tmp_path)
    probes.enabled, probes.notes, probes.counting = ["napi_poll"], {}, []
    probes.rearm_probe = probes.napi_ptr_probe = True
    (tmp_path / "kprobe_profile").write_text("  napi_rearm     5     0\n"
                                             "  napi_irq_ptr   7     2\n")
    probes.reset()
    (tmp_path / "trace").write_text("\n".join(irq_event(1.2, "suspend", 8193, NAPI_A)
                                              + [poll(1.5, NAPI_A)]) + "\n")
    events, notes = probes.window(1.0, 2.0)
    assert events["napi_ids"] == {NAPI_A: 8193}
    (tmp_path / "kprobe_profile").write_text("  napi_rearm     9     0\n"
                                             "  napi_irq_ptr   9     3\n")
    events, notes = probes.window(1.0, 2.0)
    assert events["napi_ids"] == {}, events["napi_ids"]
    assert notes["napi_ids"] == "the NAPI address probe missed 1 hits (kprobe_profile nmissed)"


def test_rearm_probe_misses_leave_the_rearms_unmeasured(tmp_path):
    probes = benchlib.TraceProbes.__new__(benchlib.TraceProbes)
    probes.TRACING = str(tmp_path)
    probes.enabled, probes.notes, probes.counting = ["napi_poll"], {}, []
    probes.rearm_probe, probes.napi_ptr_probe = True, False
    (tmp_path / "kprobe_profile").write_text("  napi_rearm     5     2\n")
    probes.reset()
    (tmp_path / "trace").write_text("\n".join([poll(1.5, NAPI_B), rearm(1.5, NAPI_B)]) + "\n")
    events, notes = probes.window(1.0, 2.0)
    assert events["rearms"] == [1.5]
    (tmp_path / "kprobe_profile").write_text("  napi_rearm     9     3\n")
    events, notes = probes.window(1.0, 2.0)
    assert events["rearms"] is None
    assert notes["rearms"] == "the re-arm probe missed 1 returns (kprobe_profile nmissed)"


def test_irq_affinity_off_the_sut_cpus_breaks_the_repetition(tmp_path, monkeypatch):
    assert benchlib.irq_affinity_problem({"eth0-rx-0": "1"}, {"eth1-rx-0": "2"},
                                         ["cpu0", "cpu1"]) is None
    assert benchlib.irq_affinity_problem({"eth0-rx-0": "1-2"}, {"eth1-rx-0": "1"},
                                         ["cpu0", "cpu1"]) == \
        ("SUT vector eth0-rx-0 on CPU 1-2, outside the SUT's CPUs; "
         "peer vector eth1-rx-0 on CPU 1, one of the SUT's")
    monkeypatch.setattr(benchlib, "irq_affinity",
                        lambda regex: {"eth0-rx-0": "3"} if regex == "sut" else {})
    pair = Pair()
    pair.irq_regex = "sut"
    edge = {"time": 1.0, "cpu": {}, "net_rx": {}, "ctxt": 0, "irqs": {}}
    counts = benchlib.measured_counts({"before": edge, "after": dict(edge, time=3.0)}, pair,
                                      Probes(), 100, ["cpu1"])
    assert counts["irq_affinity_problem"] == \
        "SUT vector eth0-rx-0 on CPU 3, outside the SUT's CPUs"
    cells = threaded_reps(1, device="virtio", **THREADED_GOOD)
    cells[0]["counters"]["irq_affinity_problem"] = counts["irq_affinity_problem"]
    [row] = bench_report.goal_threaded("virtio", bench_report.rr_cells(cells))
    assert row["status"] == "broken"
    assert "rep 0: IRQ affinity: SUT vector eth0-rx-0 on CPU 3" in row["result"]
