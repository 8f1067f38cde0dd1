#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0

"""tools/napictl, the queue-addressed tool we ship, on the device under
test: `show` maps each queue to the NAPI and IRQ that napi-get and
queue-get report, and a config file applied by queue takes effect, its
per-NAPI settings surviving down/up and a channel count change (the
config slots). IRQ affinity is re-applied by napictl; the kernel keeps it
only on drivers that opted in (topic 8: igb): it is printed after each
change, not checked. The shipped udev rule (its line for systemd-less
hosts) applies a config file on an "add" event, as at boot or hot-plug.

Installed by workbench/vm/ksft-install.sh beside the drivers/net selftests,
whose library it uses; runs on netdevsim or on a NIC given by NETIF.
"""

import errno
import json
import os
import time

from lib.py import ksft_run, ksft_exit, ksft_pr
from lib.py import ksft_eq
from lib.py import KsftSkipEx, NetDrvEnv, NetdevFamily, NlError
from lib.py import channels, cmd, defer, down_up, keep_napi_settings, rx_napis, set_channels

NAPICTL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "napictl")
# How long the rule's program may take after udevadm trigger --settle
# returned (it should be done by then; the wait tells a late one from none).
UDEV_WITHIN = 30 if os.environ.get("KSFT_MACHINE_SLOW") == "yes" else 5


def napictl(args):
    return cmd(f"{NAPICTL} {args}").stdout


def _irq_cpus(irq):
    with open(f"/proc/irq/{irq}/smp_affinity_list") as fp:
        return fp.read().strip()


def show_matches_kernel(cfg, nf) -> None:
    ifname = cfg.dev["ifname"]
    for line in napictl(f"show {ifname}").splitlines():
        ksft_pr(line)
    rows = json.loads(napictl(f"show {ifname} --json"))["devices"][0]["rows"]
    queues = nf.queue_get({"ifindex": cfg.ifindex}, dump=True)
    ksft_eq(sorted((r["queue-type"], r["queue-id"], r["napi-id"]) for r in rows if r["queue-type"]),
            sorted((q["type"], q["id"], q.get("napi-id")) for q in queues), "queue -> NAPI")
    napis = {n["id"]: n for n in nf.napi_get({"ifindex": cfg.ifindex}, dump=True)}
    ksft_eq({r["napi-id"]: r["irq"] for r in rows if r["napi-id"]},
            {i: n.get("irq") for i, n in napis.items()}, "NAPI -> IRQ")


def _channel_round_trip(cfg):
    """Combined channels to 1 and back; False if the driver cannot."""
    ifname, count = cfg.dev["ifname"], channels(cfg.ifindex).get("combined-count", 0)
    if count < 2:
        return False
    try:
        set_channels(ifname, cfg.ifindex, "combined", 1)
    except NlError as e:
        if e.error in (errno.EOPNOTSUPP, errno.EINVAL):
            return False
        raise
    set_channels(ifname, cfg.ifindex, "combined", count)
    return True


def apply_config_survives_reconfig(cfg, nf) -> None:
    ifname = cfg.dev["ifname"]
    napis = rx_napis(nf, cfg.ifindex)
    if napis[0].get("irq") is None:
        raise KsftSkipEx(f"{ifname} reports no IRQ for its NAPIs")
    keep_napi_settings(nf, cfg.ifindex)
    defer(cmd, f"echo {_irq_cpus(napis[0]['irq'])} > /proc/irq/{napis[0]['irq']}/smp_affinity_list",
          shell=True, fail=False)
    conf = f"/tmp/napictl-{os.getpid()}.toml"
    with open(conf, "w") as fp:
        fp.write(f'[{ifname}]\ndefer-hard-irqs = 7\ngro-flush-timeout = 30000\n'
                 f'[{ifname}.queue.0]\ndefer-hard-irqs = 9\nirq-affinity = "1"\n')
    defer(os.unlink, conf)
    napictl(f"apply {conf} --ifname {ifname}")
    ksft_eq(_irq_cpus(napis[0]["irq"]), "1", "queue 0's IRQ affinity")

    for change in ("applied", "down/up", "channels 1 and back"):
        if change == "down/up":
            down_up(ifname)
        elif change.startswith("channels") and not _channel_round_trip(cfg):
            ksft_pr(f"{ifname} cannot change its channels")
            continue
        now = rx_napis(nf, cfg.ifindex)
        got = {q: (n["defer-hard-irqs"], n["gro-flush-timeout"]) for q, n in now.items()}
        ksft_eq(got, {q: (9 if q == 0 else 7, 30000) for q in now}, f"settings, {change}")
        ksft_pr(f"{change}: queue 0's IRQ {now[0].get('irq')} on CPUs "
                f"{_irq_cpus(now[0]['irq']) if now[0].get('irq') else '-'}")


def _udev_rule(conf, log):
    """The shipped rule's systemd-less line, pointed at our napictl and
    CONF; its program's exit status and output go to LOG, so that a
    failure says whether udev ran it."""
    with open(os.path.join(os.path.dirname(NAPICTL), "99-napictl.rules")) as fp:
        line = next(ln for ln in fp if ln.startswith("#ACTION==") and "RUN+=" in ln)
    line = line[1:].replace("/usr/sbin/napictl", NAPICTL).replace("/etc/napictl.toml", conf)
    run = line[line.index('RUN+="') + 6:line.rindex('"')]
    return line.replace(run, f"/bin/sh -c '{run} >{log} 2>&1; echo rc=$$? >>{log}'")


def _udev_log(log):
    try:
        with open(log) as fp:
            return fp.read().strip() or "empty"
    except OSError:
        return "udev did not run the rule's program"


def _settings_become(nf, ifindex, want):
    """The RX NAPIs' (defer-hard-irqs, gro-flush-timeout) once they are
    WANT, or as they are after UDEV_WITHIN."""
    def got():
        return {(n["defer-hard-irqs"], n["gro-flush-timeout"])
                for n in rx_napis(nf, ifindex).values()}
    end = time.monotonic() + UDEV_WITHIN
    while True:
        now = got()
        if now == want or time.monotonic() > end:
            return now
        time.sleep(0.2)


def udev_add_event_applies_config(cfg, nf) -> None:
    ifname = cfg.dev["ifname"]
    if cmd("udevadm control --ping", fail=False).ret:
        raise KsftSkipEx("no udevd")
    keep_napi_settings(nf, cfg.ifindex)
    conf = f"/tmp/napictl-udev-{os.getpid()}.toml"
    with open(conf, "w") as fp:
        fp.write(f"[{ifname}]\ndefer-hard-irqs = 5\ngro-flush-timeout = 40000\n")
    defer(os.unlink, conf)
    log = f"/tmp/napictl-udev-{os.getpid()}.log"
    defer(lambda: os.path.exists(log) and os.unlink(log))
    rule = f"/run/udev/rules.d/99-napictl-test-{os.getpid()}.rules"
    os.makedirs(os.path.dirname(rule), exist_ok=True)
    with open(rule, "w") as fp:
        fp.write(_udev_rule(conf, log))
    defer(cmd, "udevadm control --reload")
    defer(os.unlink, rule)
    cmd("udevadm control --reload")
    cmd(f"udevadm trigger --action=add --settle /sys/class/net/{ifname}")
    for change in ("add event", "channels 1 and back"):
        if change.startswith("channels") and not _channel_round_trip(cfg):
            raise KsftSkipEx(f"{ifname} cannot change its channels")
        ksft_eq(_settings_become(nf, cfg.ifindex, {(5, 40000)}), {(5, 40000)},
                f"settings after the {change} (udev's program: {_udev_log(log)})")


def main() -> None:
    with NetDrvEnv(__file__) as cfg:
        ksft_run([show_matches_kernel, apply_config_survives_reconfig,
                  udev_add_event_applies_config],
                 args=(cfg, NetdevFamily()))
    ksft_exit()


if __name__ == "__main__":
    main()
