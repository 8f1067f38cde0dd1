# SPDX-License-Identifier: GPL-2.0
"""bench/host/runbook.py (the two-host runbook's steps) and
bench/host/runbook_dryrun.py (its checks), without running anything."""
import json
import os

from conftest import load_script

HOST = os.path.join(os.path.dirname(__file__), "..", "bench", "host")
runbook = load_script("runbook", os.path.join(HOST, "runbook.py"))
dryrun = load_script("runbook_dryrun", os.path.join(HOST, "runbook_dryrun.py"))


def planned_steps(monkeypatch, tmp_path, *extra):
    """(step name, argv, env) of every step main() would run."""
    seen = []

    def run(self, name, argv, env=None, stdout_to=None):
        seen.append((name, argv, env))
        self.done.append({"step": name, "rc": 0, "seconds": 0, "log": ""})
        return True
    monkeypatch.setattr(runbook.Steps, "run", run)
    monkeypatch.setattr(runbook, "finish_run_dir", lambda *a: None)
    monkeypatch.setattr(runbook, "kernel_log", lambda: [])
    rc = runbook.main(["--out", str(tmp_path / "run1-patched-host"), "--src", "/linux",
                       "--netif", "eth1", "--sut-addr", "10.0.0.1",
                       "--peer-addr", "10.0.0.2"] + list(extra))
    assert rc == 0
    return seen


def test_steps_in_order_with_both_seeds(monkeypatch, tmp_path):
    steps = planned_steps(monkeypatch, tmp_path, "--peer-ssh", "root@peer")
    assert [s[0] for s in steps] == [
        "record-sut", "record-peer", "setup-seed000-sut", "setup-seed000-peer",
        "seed000-rr-grid", "setup-seed001-sut", "setup-seed001-peer", "seed001-mc-sweep",
        "record-sut-after", "report"]
    byname = {name: (argv, env) for name, argv, env in steps}
    # The peer's commands go over ssh; the SUT's run here.
    assert byname["setup-seed000-peer"][0][:2] == ["ssh", "root@peer"]
    assert byname["setup-seed000-sut"][0][0] == "python3"
    assert "--dry-run" not in byname["setup-seed000-sut"][0]
    rr, env = byname["seed000-rr-grid"]
    assert rr[rr.index("--modes") + 1] == "interrupts busy-inline busy-thread threaded-busy"
    assert rr[rr.index("--workload-indexes") + 1] == "0 1 2 3 4"
    assert "--perf-stat" in rr and rr[rr.index("--rate-scale") + 1] == "1"
    assert env["BENCH_PEER_SSH"] == "root@peer" and env["NETIF"] == "eth1"
    mc = byname["seed001-mc-sweep"][0]
    assert mc[mc.index("--loads") + 1] == "200000 400000 600000 800000 1000000 0"
    assert mc[mc.index("--server-threads") + 1] == "8"
    assert mc[mc.index("--generators") + 1] == "4" and "--perf-stat" in mc
    assert mc[mc.index("--gen-threads") + 1] == "2" and mc[mc.index("--connections") + 1] == "64"
    assert "suspend200" in mc[mc.index("--variants") + 1].split()
    assert byname["report"][0][-1] == str(tmp_path)


def test_seed001_pins_memcached_and_irqs_together(monkeypatch, tmp_path):
    steps = planned_steps(monkeypatch, tmp_path, "--peer-ssh", "p", "--server-cpus", "4-7")
    sut = dict((n, a) for n, a, _ in steps)["setup-seed001-sut"]
    assert sut[sut.index("--cpus-napi") + 1] == sut[sut.index("--cpus-app") + 1] == "4-7"


def test_dry_run_uses_namespaces_and_prints_the_setup(monkeypatch, tmp_path):
    steps = planned_steps(monkeypatch, tmp_path, "--sut-netns", "nsA", "--peer-netns", "nsB",
                          "--setup-dry-run", "--rr-args", "--reps 1 --modes 'interrupts'")
    byname = {name: (argv, env) for name, argv, env in steps}
    assert byname["setup-seed000-sut"][0][:4] == ["ip", "netns", "exec", "nsA"]
    assert byname["setup-seed000-peer"][0][:4] == ["ip", "netns", "exec", "nsB"]
    assert byname["setup-seed000-sut"][0][-1] == "--dry-run"
    rr, env = byname["seed000-rr-grid"]
    # Appended options come last: argparse keeps the last value.
    assert rr[-4:] == ["--reps", "1", "--modes", "interrupts"]
    assert env["BENCH_SUT_NETNS"] == "nsA" and env["BENCH_PEER_NETNS"] == "nsB"


def write_cells(run_dir, rr, mc):
    os.makedirs(run_dir, exist_ok=True)
    for name, cells in (("rr.jsonl", rr), ("mc.jsonl", mc)):
        with open(os.path.join(run_dir, name), "w") as f:
            f.writelines(json.dumps(c) + "\n" for c in cells)


NOT_COUNTED = {"not_counted": {"cycles": "perf printed <not supported>",
                               "instructions": "perf printed <not supported>"}}


def tables(path, *heads):
    with open(path, "w") as f:
        f.write("\n".join(heads) + "\n")
    return path


def test_dryrun_checks_pass_and_fail(tmp_path):
    run_dir = str(tmp_path / "run1")
    good = {"status": "ok", "counters": {"perf": NOT_COUNTED}}
    write_cells(run_dir, [good], [dict(good, counters={"perf": {"cpq": 10, "ipq": 20}})])
    head000 = "| Experiment | interrupts | SO_BUSYPOLL | SO_BUSYPOLL(separate) | NAPI Threaded |"
    path = tables(str(tmp_path / "t.md"), head000,
                  "testcase  load qps avglat 95%lat 99%lat cpu cpq ipq")
    checks = dryrun.checks_of({"ok": True}, run_dir, path)
    assert all(v is True for v in checks.values()), checks

    # A zero that says nothing, a failed cell, a missing table: each fails.
    write_cells(run_dir, [dict(good, counters={"perf": {"cpq": 0, "ipq": 0}})],
                [{"status": "error", "error": "mc_load exit 1"}])
    checks = dryrun.checks_of({"ok": False, "steps": [{"step": "report", "rc": 1}]}, run_dir,
                              tables(path, head000))
    assert "neither counted nor explained" in checks["perf stat per query"]
    assert "mc_load exit 1" in checks["mc.jsonl"]
    assert checks["seed 001 table"] != True  # noqa: E712 (a reason string)
    assert checks["runbook steps"] == "failed steps: ['report']"


def test_host_pair_in_namespaces_or_over_ssh(monkeypatch):
    """benchlib.HostPair: the dry run's namespaces replace ssh; the SUT's
    commands run in its namespace, or here on a real host."""
    import benchlib
    ran = []
    monkeypatch.setattr(benchlib, "sh", lambda *cmd, **kw: ran.append(list(cmd)) or "")
    monkeypatch.setattr(benchlib.nic_irqs, "netif_irq_regex", lambda netif: None)
    env = {"NETIF": "nsim1", "BENCH_PEER_NETIF": "nsim2", "BENCH_SUT_ADDR": "192.0.2.1",
           "BENCH_PEER_ADDR": "192.0.2.2"}
    for k, v in dict(env, BENCH_SUT_NETNS="nsA", BENCH_PEER_NETNS="nsB").items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("BENCH_PEER_SSH", raising=False)
    pair = benchlib.HostPair()
    pair.setup()
    assert ran == [["ip", "netns", "exec", "nsA", "ping", "-c1", "-W1", "192.0.2.2"]]
    assert pair.wrap(benchlib.NS_PEER, ["napi_rr"]) == ["ip", "netns", "exec", "nsB", "napi_rr"]
    assert pair.netns == {benchlib.NS_SUT: "nsA", benchlib.NS_PEER: "nsB"}

    monkeypatch.delenv("BENCH_SUT_NETNS")
    monkeypatch.delenv("BENCH_PEER_NETNS")
    monkeypatch.setenv("BENCH_PEER_SSH", "root@peer")
    pair = benchlib.HostPair()
    pair.setup()
    assert pair.wrap(benchlib.NS_SUT, ["napi_rr"]) == ["napi_rr"]
    assert pair.wrap(benchlib.NS_PEER, ["napi_rr"]) == ["ssh", "root@peer", "napi_rr"]
    # The peer's loss counters are on another machine.
    assert benchlib.loss_snapshot(pair)["peer"] == "the peer is another machine"
