# SPDX-License-Identifier: GPL-2.0
"""bench/memcached/mc_generators.py: several mc_load processes as one generator,
their results summed and their histograms merged (never averaged)."""
import json
import random
import subprocess
import sys
import time

from test_napi_rr import MC_LOAD_KEYS, mc_load, memcached_port  # noqa: F401 (fixtures)

import mc_generators as mg

GENERATORS = mg.__file__


def hist_of(values):
    """A histogram as mc_load writes it, from VALUES (ns)."""
    buckets = {}
    for v in values:
        buckets[mg.hist_index(v)] = buckets.get(mg.hist_index(v), 0) + 1
    return {"count": len(values), "sum": sum(values), "min": min(values, default=0),
            "max": max(values, default=0), "buckets": sorted([i, n] for i, n in buckets.items())}


def result(values, **over):
    """One process's mc_load result with latencies VALUES."""
    h = hist_of(values)
    out = {"mode": "open", "server": "192.0.2.1", "port": 11311, "threads": 1,
           "connections": 8, "seed": 1, "target_qps": 1000.0, "achieved_qps": 1000.0,
           "sent": len(values), "received": len(values), "gets": len(values), "sets": 0,
           "get_hits": 0, "get_misses": len(values), "errors": 0, "error_replies": 0,
           "lost": 0, "dropped": 0, "timeouts": 0, "conn_failures": 0,
           "latency_hist": h, "latency_us": mg.hist_us(h, (("p50", 50), ("p99", 99))),
           "lag_hist": hist_of([0]), "lag_us": {"avg": 0.0, "p99": 0.0, "max": 0.0,
                                                "first_half_avg": 1.0, "second_half_avg": 2.0},
           "lag_growing": False, "saturated": False}
    out.update(over)
    return out


def test_hist_index_and_value_agree_with_hist_h():
    # Exact below 128; above, the bucket's middle is within 1/128 of the value.
    assert [mg.hist_value(mg.hist_index(v)) for v in (0, 5, 127)] == [0, 5, 127]
    for v in (128, 1000, 123456, 10**9 + 7):
        assert abs(mg.hist_value(mg.hist_index(v)) - v) <= v / 128


def test_merged_percentiles_are_those_of_all_samples_not_averages():
    rng = random.Random(1)
    fast = [rng.randint(10_000, 20_000) for _ in range(900)]
    slow = [rng.randint(900_000, 1_000_000) for _ in range(100)]
    merged = mg.merge_results([result(fast), result(slow, seed=1001)])
    whole = hist_of(fast + slow)
    assert merged["latency_hist"] == whole
    for p, key in ((50, "p50"), (99, "p99"), (99.9, "p999")):
        assert merged["latency_us"][key] == round(mg.hist_percentile(whole, p) / 1e3, 1)
    # The p99 is the slow process's, far above the mean of the two p99s.
    assert merged["latency_us"]["p99"] > 900
    assert merged["latency_us"]["max"] == round(max(slow) / 1e3, 1)
    assert merged["latency_us"]["avg"] == round(sum(fast + slow) / 1e3 / 1000, 1)


def test_counts_add_up_and_flags_of_any_process_hold():
    a = result([1000] * 10, errors=2, timeouts=1)
    b = result([2000] * 30, seed=1001, lag_growing=True,
               lag_us={"avg": 0.0, "p99": 0.0, "max": 0.0, "first_half_avg": 5.0,
                       "second_half_avg": 9.0})
    merged = mg.merge_results([a, b])
    assert (merged["sent"], merged["received"], merged["errors"], merged["timeouts"]) == \
        (40, 40, 2, 1)
    assert merged["target_qps"] == 2000.0 and merged["achieved_qps"] == 2000.0
    assert merged["generators"] == 2 and merged["seeds"] == [1, 1001]
    assert merged["lag_growing"] and merged["saturated"]
    assert merged["lag_us"]["second_half_avg"] == 9.0


def test_short_of_the_summed_target_is_saturated():
    merged = mg.merge_results([result([1000], achieved_qps=900.0),
                               result([1000], achieved_qps=900.0)])
    assert merged["saturated"]


def test_one_process_is_passed_through():
    one = result([1000, 2000])
    assert mg.merge_results([one]) == dict(one, generators=1)


def test_edges_sum_their_counts_at_the_latest_time():
    edges = [{"window": "end", "ns": 10, "sent": 5, "served": 4},
             {"window": "end", "ns": 12, "sent": 7, "served": 7}]
    assert mg.merge_edges(edges) == {"window": "end", "ns": 12, "sent": 12, "served": 11}
    assert mg.merge_edges([{"window": "start", "ns": 1, "sent": None, "served": 1}])["sent"] \
        is None


def test_commands_split_rate_connections_and_cpus():
    args = mg.main.__globals__["argparse"].Namespace(
        mc_load="mc_load", generators=3, cpus="4-7", qps=3000.0, connections=16, seed=2)
    cmds = mg.commands(args, ["--threads", "1"], ["a", "b", "c"])
    assert [c[2] for c in cmds] == ["4,7", "5", "6"]
    assert [c[c.index("--connections") + 1] for c in cmds] == ["6", "5", "5"]
    assert [c[c.index("--seed") + 1] for c in cmds] == ["2", "1002", "2002"]
    assert all(c[c.index("--qps") + 1] == "1000.0" and "--sync" in c for c in cmds)
    args.qps = 0
    assert "--max" in mg.commands(args, [], ["a", "b", "c"])[0]


def test_two_processes_share_one_window(mc_load, memcached_port):  # noqa: F811
    done = subprocess.run([sys.executable, GENERATORS, "--mc-load", mc_load, "--generators", "2",
                           "--cpus", "0", "--qps", "400", "--connections", "4", "--",
                           "--server", "127.0.0.1", "--port", str(memcached_port),
                           "--duration", "0.5", "--warmup", "0.2", "--keys", "100"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert [x.get("window") for x in lines[:2]] == ["start", "end"]
    assert 0.45e9 < lines[1]["ns"] - lines[0]["ns"] < 1.5e9
    load = lines[2]["load_gen"]
    assert set(MC_LOAD_KEYS) <= set(load)
    assert load["generators"] == 2 and load["connections"] == 4 and load["target_qps"] == 400
    assert load["sent"] > 0 and load["errors"] == 0
    assert load["latency_hist"]["count"] == load["received"]


def test_a_generator_that_fails_releases_the_others(tmp_path):
    """The first process fails before it is ready; the second, ready and
    waiting for the start time, reads EOF and exits instead of waiting
    until the timeout."""
    fake = tmp_path / "fake_mc_load"
    fake.write_text("#!/bin/sh\n"
                    "case \" $* \" in *\" --seed 1 \"*) echo cannot connect >&2; exit 1;; esac\n"
                    "echo '{\"ready\": true}'\n"
                    "read start || { echo no start time >&2; exit 1; }\n")
    fake.chmod(0o755)
    started = time.monotonic()
    done = subprocess.run([sys.executable, GENERATORS, "--mc-load", str(fake), "--generators",
                           "2", "--cpus", "0", "--qps", "100", "--connections", "2",
                           "--timeout", "60"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "ended before it was ready" in done.stderr and "cannot connect" in done.stderr
    assert '"load_gen"' not in done.stdout
    assert time.monotonic() - started < 30
