"""bench/bench_report.py on synthetic cells: tables, ratios, baseline, findings."""
import importlib.util
import json
import os
import sys

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")
spec = importlib.util.spec_from_file_location("bench_report", os.path.join(BENCH, "bench_report.py"))
bench_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_report)

COUNTERS = {"seconds": 3, "cpu_busy_pct": {"cpu0": 50.0, "cpu1": 20.0},
            "net_rx_softirqs_per_req": 1.0, "dev_irqs_per_req": 0.5,
            "ctx_switches_per_req": 2.0, "napi_polls_per_req": 1.5}


def rr_cell(mode, p99_us, rep=0, device="netdevsim"):
    lat = {p: p99_us * 1000 * f for p, f in
           (("p5", 0.5), ("p50", 0.7), ("p95", 0.9), ("p99", 1.0), ("p999", 1.1), ("max", 2))}
    return {"bench": "rr", "status": "ok", "device": device, "transport": "udp", "mode": mode,
            "workload": 0, "seed_rate": 12000, "rate": 600, "delay_us": 0, "rep": rep,
            "client": {"latency_ns": lat, "sent": 100, "received": 100, "lost": 0},
            "counters": COUNTERS}


def mc_point(variant, load, cpu, p99, irqs, saturated=False):
    return {"bench": "mc", "status": "ok", "device": "virtio", "variant": variant, "load": load,
            "rep": 0, "server_cpu_pct": cpu,
            "load_gen": {"achieved_qps": load if load != "MAX" else 5000, "errors": 0,
                         "timeouts": 0, "saturated": saturated,
                         "latency_us": {"avg": p99 / 2, "p95": p99 * 0.8, "p99": p99}},
            "counters": dict(COUNTERS, dev_irqs_per_req=irqs, napi_polls_per_query=1.0)}


def write_run(top, name, label, rr=(), mc=()):
    d = os.path.join(top, name)
    os.makedirs(d)
    for fname, text in (("kernel-label", label), ("accel", "tcg (thread=single)"),
                        ("machine.json", json.dumps({"kernel": "6.12.117", "vcpus": 2}))):
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)
    for fname, cells in (("rr.jsonl", rr), ("mc.jsonl", mc)):
        with open(os.path.join(d, fname), "w") as f:
            f.writelines(json.dumps(c) + "\n" for c in cells)


def test_report_tables_ratios_and_baseline(tmp_path):
    top = str(tmp_path)
    write_run(top, "run1-patched-baseline", "patched", rr=[rr_cell("interrupts", 110)])
    write_run(top, "run2-base-baseline", "base", rr=[rr_cell("interrupts", 100)])
    rr = [rr_cell(m, v, rep) for rep in range(3) for m, v in
          (("interrupts", 200 + rep), ("busy-thread", 150), ("threaded-busy", 100))]
    mc = [mc_point("base", 500, 30, 900, 1.0), mc_point("defer20", 500, 25, 600, 0.2),
          mc_point("fullbusy", 500, 100, 300, 0.0), mc_point("suspend20", 500, 40, 320, 0.05),
          mc_point("base", 1000, 50, 950, 1.0), mc_point("defer20", 1000, 45, 700, 0.2),
          mc_point("fullbusy", 1000, 100, 310, 0.0), mc_point("suspend20", 1000, 60, 330, 0.04),
          mc_point("base", 2000, 99, 9000, 1.0, saturated=True)]
    write_run(top, "run3-patched-full", "patched", rr=rr, mc=mc)

    sys.argv = ["bench_report.py", top]
    assert bench_report.main() == 0
    summary = json.load(open(os.path.join(top, "bench.json")))
    ratios = summary["rr"][0]["ratios"]
    assert ratios["threaded_p99_over_interrupts_p99"] == 0.5       # 100 / median(200..202)
    assert ratios["threaded_p99_over_busy-thread_p99"] == 0.67
    assert summary["baseline"][0]["patched_over_base"]["p99"] == 1.1
    found = summary["mc_findings"][0]
    assert found["highest_sustained_load"] == 1000                # 2000 saturates base
    assert found["suspend20_over_fullbusy_at_1000"] == {"qps": 1.0, "p99": 1.06}
    assert found["suspend20_cpu_over_fullbusy_at_500"] == 0.4
    assert found["irqs_per_query"]["suspend20@500"] == 0.05
    md = open(os.path.join(top, "bench.md")).read()
    assert "| 600 pkt/s + 0us delay |" in md and "p99: 100.0" in md
    assert "TCG" in md
