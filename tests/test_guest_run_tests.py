"""workbench/vm/guest-run-tests.sh, the VM side of make test, in a fake VM:
its NICs a sysfs fixture, `ip` a stub that keeps the netns state, and the
kselftest runner a stub that records what each test was given."""
import json
import os
import subprocess

TOP = os.path.join(os.path.dirname(__file__), "..")

IP_STUB = r'''#!/usr/bin/env python3
import os, shutil, sys
state, args = os.environ["FAKE_VM"], sys.argv[1:]
with open(os.path.join(state, "ip.log"), "a") as fp:
    fp.write(" ".join(args) + "\n")
netns = os.path.join(state, "netns")
if args[:2] == ["netns", "add"]:
    try:
        os.makedirs(os.path.join(netns, args[2]))
    except FileExistsError:
        sys.exit(1)
elif args[:2] == ["link", "set"] and "netns" in args:
    nic, ns = args[args.index("dev") + 1], args[args.index("netns") + 1]
    shutil.move(os.path.join(os.environ["SYS_CLASS_NET"], nic), os.path.join(netns, ns, nic))
elif args[0] == "-n" and args[2:] == ["-d", "-o", "link", "show"]:
    # A new netns has fallback tunnels, some of them Ethernet (gretap0).
    print("1: lo: <LOOPBACK,UP> mtu 65536\\    link/loopback 00:00:00:00:00:00")
    print("2: gretap0@NONE: <BROADCAST> mtu 1462\\    link/ether 00:00:00:00:00:00 brd "
          "ff:ff:ff:ff:ff:ff promiscuity 0 gretap remote any")
    for i, nic in enumerate(sorted(os.listdir(os.path.join(netns, args[1])))):
        with open(os.path.join(netns, args[1], nic, "address")) as fp:
            mac = fp.read().strip()
        print(f"{i + 3}: {nic}: <BROADCAST,UP> mtu 1500\\    link/ether {mac} brd "
              f"ff:ff:ff:ff:ff:ff promiscuity 0 parentbus pci parentdev 0000:0{i}:00.0")
'''

# What the kselftest runner was given, one JSON line per run.
RUNNER_STUB = r'''#!/bin/bash
python3 -c 'import json, os, sys
keys = ("NETIF", "LOCAL_V4", "REMOTE_V4", "LOCAL_V6", "REMOTE_V6", "REMOTE_TYPE", "REMOTE_ARGS",
        "CASES")
print(json.dumps({"args": sys.argv[1:], **{k: os.environ.get(k) for k in keys}}))' "$@" \
	>>"$FAKE_VM/runs.jsonl"
echo "ok 1 selftests: $4"
'''

# What guest-run-tests.sh exports for a NIC entry, unset for the others.
ENDPOINT_VARS = ("NETIF", "LOCAL_V4", "REMOTE_V4", "LOCAL_V6", "REMOTE_V6")

NICS = {"eth0": ("igb", "52:54:00:00:00:02"),
        "eth1": ("igb", "52:54:00:00:00:01"),
        "eth2": ("virtio_net", "52:54:00:00:00:03"),
        "eth3": ("pcnet32", "52:54:00:00:00:05"),
        "eth4": ("pcnet32", "52:54:00:00:00:04")}


def guest_run(tmp_path, plan, runner=RUNNER_STUB, **extra_env):
    state, sysfs, ksft, out, bindir = (tmp_path / d for d in ("vm", "sys", "ksft", "out", "bin"))
    for d in (state, sysfs, ksft, out, bindir):
        d.mkdir()
    for nic, (driver, mac) in NICS.items():
        (sysfs / nic / "device").mkdir(parents=True)
        (sysfs / nic / "address").write_text(mac + "\n")
        (sysfs / nic / "device" / "driver").symlink_to(f"/bus/pci/drivers/{driver}")
    stubs = {"ip": IP_STUB, "ping": "exit 0", "sysctl": 'echo "$@" >>"$FAKE_VM/sysctl.log"',
             "udevadm": "exit 0", "mountpoint": "exit 0", "mount": "exit 0", "ln": "exit 0",
             "dmesg": "exit 0"}
    for name, body in stubs.items():
        (bindir / name).write_text(body if body.startswith("#!") else f"#!/bin/sh\n{body}\n")
        (bindir / name).chmod(0o755)
    (ksft / "run_kselftest.sh").write_text(runner)
    (ksft / "run_kselftest.sh").chmod(0o755)
    (out / "plan").write_text("".join(line + "\n" for line in plan))
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARS}
    env.update(PATH=f"{bindir}:{env['PATH']}", FAKE_VM=str(state), SYS_CLASS_NET=str(sysfs),
               SKIP_WHY="this QEMU lacks it", **extra_env)
    subprocess.run(["bash", os.path.join(TOP, "workbench", "vm", "guest-run-tests.sh"), str(ksft),
                    str(out)], env=env, check=True, capture_output=True, text=True, timeout=60)
    ran = state / "runs.jsonl"
    runs = [json.loads(line) for line in ran.read_text().splitlines()] if ran.exists() else []
    return state, out, runs


def test_nic_entry_gets_the_lowest_mac_and_its_peer_in_a_netns(tmp_path):
    state, _, runs = guest_run(tmp_path, ["drivers/net:napi_id.py 60 igb"])
    assert runs == [{"args": ["-o", "60", "-t", "drivers/net:napi_id.py"],
                     "NETIF": "eth1", "LOCAL_V4": "203.0.113.1", "REMOTE_V4": "203.0.113.2",
                     "LOCAL_V6": None, "REMOTE_V6": None, "REMOTE_TYPE": "netns",
                     "REMOTE_ARGS": "igb-peers", "CASES": None}]
    # The other igb is parked up and silent; the virtio NIC stays.
    assert sorted(os.listdir(state / "netns" / "igb-peers")) == ["eth0"]
    log = (state / "ip.log").read_text().splitlines()
    for expected in ("netns exec igb-peers sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1",
                     "-n igb-peers link set dev eth0 up",
                     "-n igb-peers addr replace 203.0.113.2/24 dev eth0",
                     "addr replace 203.0.113.1/24 dev eth1"):
        assert expected in log, log


def test_pcnet_pair_talks_ipv6_kept_over_a_link_cycle(tmp_path):
    # QEMU's pcnet sends ARP unpadded and pcnet32 drops it as a runt.
    state, _, runs = guest_run(tmp_path, ["drivers/net:napi_id.py 60 pcnet"])
    assert [(r["NETIF"], r["LOCAL_V4"], r["REMOTE_V4"], r["LOCAL_V6"], r["REMOTE_V6"])
            for r in runs] == [("eth4", None, None, "2001:db8:6::1", "2001:db8:6::2")]
    log = (state / "ip.log").read_text().splitlines()
    for expected in ("-n pcnet32-peers addr replace 2001:db8:6::2/64 dev eth3 nodad",
                     "addr replace 2001:db8:6::1/64 dev eth4 nodad",
                     "netns exec pcnet32-peers sysctl -qw net.ipv6.conf.eth3.disable_ipv6=0 "
                     "net.ipv6.conf.eth3.keep_addr_on_down=1"):
        assert expected in log, log
    assert (state / "sysctl.log").read_text() == "-qw net.ipv6.conf.eth4.keep_addr_on_down=1\n"


def test_missing_nic_skips_loudly_and_netdevsim_gets_no_netif(tmp_path):
    _, out, runs = guest_run(tmp_path, ["drivers/net:napi_id.py 60 e1000e",
                                        "net:napi_config.py 120"])
    tap = (out / "tests" / "drivers_net_napi_id.py_e1000e.tap").read_text()
    assert ("ok 1 drivers/net:napi_id.py # SKIP no e1000e NIC in this VM "
            "(this QEMU lacks it)") in tap, tap
    results = [json.loads(line) for line in (out / "guest-results.jsonl").read_text().splitlines()]
    assert [(r["test"], r["rc"]) for r in results] == [
        ("drivers/net:napi_id.py@e1000e", 4), ("net:napi_config.py", 0)]
    assert runs == [{"args": ["-o", "120", "-t", "net:napi_config.py"], "NETIF": None,
                     "LOCAL_V4": None, "REMOTE_V4": None, "LOCAL_V6": None, "REMOTE_V6": None,
                     "REMOTE_TYPE": None,
                     "REMOTE_ARGS": None, "CASES": None}]
    assert (out / "guest-finished").read_text() == "done\n"


def test_budget_starts_only_tests_whose_limit_fits_in_what_is_left(tmp_path):
    _, out, runs = guest_run(tmp_path, ["net:a.py 60", "net:b.py 300", "net:c.py 100"],
                             GUEST_BUDGET="200")
    assert [r["args"] for r in runs] == [["-o", "60", "-t", "net:a.py"],
                                         ["-o", "100", "-t", "net:c.py"]]
    results = [json.loads(line) for line in (out / "guest-results.jsonl").read_text().splitlines()]
    skipped = [r for r in results if "budget" in r]
    assert [(r["test"], r["budget"], r["timeout"]) for r in skipped] == [("net:b.py", 200, 300)]
    assert 195 <= skipped[0]["left"] <= 200


def test_an_entry_sets_its_environment_unless_make_test_does(tmp_path):
    _, _, runs = guest_run(tmp_path, ["net:a.py 60 netdevsim CASES=x,y", "net:b.py 60"])
    assert [r["CASES"] for r in runs] == ["x,y", None]
    (tmp_path / "given").mkdir()
    _, _, runs = guest_run(tmp_path / "given", ["net:a.py 60 netdevsim CASES=x,y"], CASES="all")
    assert runs[0]["CASES"] == "all"


# Fails once the way mainline's nsim.py does when udevd drops its control
# connection, or, with ALWAYS set, every time.
UDEVD_FLAKE_STUB = RUNNER_STUB.replace('echo "ok 1 selftests: $4"', '''
if [ -n "${ALWAYS:-}" ] || [ ! -e "$FAKE_VM/failed-once" ]; then
	touch "$FAKE_VM/failed-once"
	echo "# Exception| STDERR: b'Failed to wait for daemon to reply: Broken pipe'"
	echo "not ok 1 selftests: $4"
	exit 1
fi
echo "ok 1 selftests: $4"''')


def test_udevd_control_reset_reruns_the_entry_once_and_says_so(tmp_path):
    _, out, runs = guest_run(tmp_path, ["net:nl_netdev.py 60", "net:b.py 60"],
                             runner=UDEVD_FLAKE_STUB)
    assert [r["args"][-1] for r in runs] == ["net:nl_netdev.py", "net:nl_netdev.py", "net:b.py"]
    results = [json.loads(line) for line in (out / "guest-results.jsonl").read_text().splitlines()]
    assert [(r["test"], r["rc"], r.get("retried")) for r in results] == [
        ("net:nl_netdev.py", 0, "udevd closed its control connection"), ("net:b.py", 0, None)]
    assert "not ok 1" in (out / "tests" / "net_nl_netdev.py.try1.tap").read_text()
    assert "ok 1 selftests" in (out / "tests" / "net_nl_netdev.py.tap").read_text()


def test_a_second_udevd_failure_stays_a_failure(tmp_path):
    _, out, runs = guest_run(tmp_path, ["net:nl_netdev.py 60"], runner=UDEVD_FLAKE_STUB,
                             ALWAYS="1")
    assert len(runs) == 2
    results = [json.loads(line) for line in (out / "guest-results.jsonl").read_text().splitlines()]
    assert [(r["rc"], r.get("retried")) for r in results] == [
        (1, "udevd closed its control connection")]
