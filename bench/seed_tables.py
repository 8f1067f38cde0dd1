# SPDX-License-Identifier: GPL-2.0
"""The two seeds' own tables, from bench_report.py's aggregated cells, so
that a run on two real hosts can be read side by side with the cover
letters:

- seed 000 (threaded NAPI busy poll, net-next v4): "| Experiment |
  interrupts | SO_BUSYPOLL | SO_BUSYPOLL(separate) | NAPI Threaded |", a
  row "<rate> pkt/s + <delay>us delay" per workload followed by rows of
  "p5: N", "p50: N", "p95: N", "p99: N" per mode, in ns;
- seed 001 (IRQ suspension, net-next v3): per load, a block
  "testcase load qps avglat 95%lat 99%lat cpu cpq ipq" (latency in us,
  cpu the server cores' busy %, cycles and instructions per query).

Figures are the medians bench_report.py computed; a figure that was not
measured prints "-" and a note below the table says why.
"""

import statistics

# Seed 000's columns and the rr_grid.py modes that reproduce them.
SEED000_COLUMNS = (("interrupts", "interrupts"), ("SO_BUSYPOLL", "busy-inline"),
                   ("SO_BUSYPOLL(separate)", "busy-thread"), ("NAPI Threaded", "threaded-busy"))
SEED000_PCTS = ("p5", "p50", "p95", "p99")
SEED001_HEAD = ("testcase", "load", "qps", "avglat", "95%lat", "99%lat", "cpu", "cpq", "ipq")


def perf_of(cells):
    """Median cycles and instructions per query (perf stat, bench/perf_stat.py)
    over CELLS, and why they are missing: {"cpq", "ipq", "why"}."""
    out, why = {}, {}
    for key in ("cpq", "ipq"):
        values = []
        for c in cells:
            perf = (c.get("counters") or {}).get("perf")
            if perf is None:
                why.setdefault(key, "not run with --perf-stat")
            elif perf.get(key) is not None:
                values.append(perf[key])
            else:
                # perf_stat.per_query() names the event or the ratio.
                missing = perf.get("not_counted") or {}
                event = "cycles" if key == "cpq" else "instructions"
                why.setdefault(key, missing.get(key) or missing.get(event) or "not counted")
        out[key] = statistics.median(values) if values else None
    out["why"] = why
    # perf switched by the harness noticeably later than the tool's edges.
    out["flags"] = [perf["window_mismatch"] for c in cells
                    if (perf := (c.get("counters") or {}).get("perf"))
                    and perf.get("window_mismatch")]
    return out


def number(value):
    return "-" if value is None else str(int(round(value)))


def rate_label(rate):
    """12000 -> '12K', 125000 -> '125K', 1250 -> '1250' (the seed's style)."""
    return f"{rate // 1000}K" if rate >= 1000 and rate % 1000 == 0 else str(rate)


def load_label(load):
    """mc_sweep.py's load (qps, or "MAX") as the seed writes it."""
    if load in ("MAX", 0, None):
        return "MAX"
    return rate_label(int(load))


def why_lines(reasons, lines, flags=()):
    for what, why in sorted(reasons.items()):
        lines.append(f"- {what} not counted: {why}")
    for flag in flags:
        lines.append(f"- cpq/ipq of {flag}")


def seed000_table(agg, device, transport, workload_order=None):
    """Seed 000's table for DEVICE and TRANSPORT from rr_cells()' AGG, keyed
    (device, transport, rate, delay, mode); [] when no seed mode ran."""
    here = {k[2:4] for k in agg if k[:2] == (device, transport)
            and k[4] in dict((m, c) for c, m in SEED000_COLUMNS)}
    if not here:
        return []
    order = workload_order or {}
    lines = ["| Experiment | " + " | ".join(c for c, _ in SEED000_COLUMNS) + " |",
             "|---|" + "---|" * len(SEED000_COLUMNS)]
    reasons, flags = {}, []
    for rate, delay in sorted(here, key=lambda w: (order.get(w, 99), w)):
        cells = [agg.get((device, transport, rate, delay, m)) for _, m in SEED000_COLUMNS]
        lines.append(f"| {rate_label(rate)} pkt/s + {delay}us delay |" + " |" * len(cells))
        for p in SEED000_PCTS:
            lines.append("| | " + " | ".join(
                f"{p}: {number(c[p] * 1000) if c and c.get(p) is not None else '-'}"
                for c in cells) + " |")
        # Not in the seed: the SUT's cycles and instructions per request.
        lines.append("| | " + " | ".join(
            f"cpq: {number(c['perf']['cpq'])} ipq: {number(c['perf']['ipq'])}"
            if c and c.get("perf") else "-" for c in cells) + " |")
        for (_, mode), c in zip(SEED000_COLUMNS, cells):
            perf = (c or {}).get("perf") or {}
            for key, why in perf.get("why", {}).items():
                reasons.setdefault(f"{key} ({mode})", why)
            flags += [f"{mode} at {rate_label(rate)} pkt/s: {f}" for f in perf.get("flags", [])]
    lines.append("")
    lines.append("Latency in ns, medians over the repetitions; cpq/ipq (not in the seed): "
                 "the SUT's cycles and instructions per request (perf stat).")
    why_lines(reasons, lines, flags)
    return lines


def seed001_blocks(agg, device, variant_key, load_key):
    """Seed 001's blocks for DEVICE from mc_points()' AGG, keyed (device,
    load, variant), ordered by VARIANT_KEY and LOAD_KEY (bench_report's)."""
    loads = sorted({k[1] for k in agg if k[0] == device}, key=load_key)
    if not loads:
        return []
    lines = ["```"]
    reasons, flags = {}, []
    for load in loads:
        rows = [SEED001_HEAD]
        for (d, cell_load, variant), a in sorted(agg.items(), key=lambda kv: variant_key(kv[0][2])):
            if d != device or cell_load != load:
                continue
            perf = a.get("perf") or {}
            rows.append((variant, load_label(load), number(a.get("qps")), number(a.get("avg")),
                         number(a.get("p95")), number(a.get("p99")), number(a.get("cpu")),
                         number(perf.get("cpq")), number(perf.get("ipq"))))
            for key, why in perf.get("why", {}).items():
                reasons.setdefault(f"{key} ({variant})", why)
            flags += [f"{variant} at {load_label(load)}: {f}" for f in perf.get("flags", [])]
        widths = [max(len(r[i]) for r in rows) for i in range(len(SEED001_HEAD))]
        lines += [" ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
        lines.append("")
    lines[-1] = "```"
    lines.append("")
    lines.append("Latency in us, medians over the repetitions; cpu: the server cores' busy %; "
                 "cpq/ipq: cycles and instructions per query on the server cores (perf stat).")
    why_lines(reasons, lines, flags)
    return lines
