# SPDX-License-Identifier: GPL-2.0
"""A NIC's data vectors in /proc/interrupts, by its driver's naming: the
one place the benchmarks (benchlib.py, in the guest) and the two-machine
runbook (host/host-setup.py) find them. Also the NICs of a driver, for
the benchmarks and the selftests' guest (workbench/vm/guest-run-tests.sh,
through "nic_irqs.py nics DRIVER"). Python 3.11 standard library only.
"""

import os
import re

# One regex per driver family over a /proc/interrupts action name; group
# "queue" is the queue (vector) number. Only data vectors match: ice's and
# i40e's "<driver>-<bdf>:misc" (ice's ":ll_ts", ":ctrl-TxRx-N" of its flow
# director), idpf's "idpf-Mailbox-0", iavf's "iavf-<bdf>:mbx", mlx5's
# "mlx5_async<N>", the bare "<netif>" other-cause vector of igb/ixgbe and
# virtio's "-config" carry no packets of the netif. {netif} and {device}
# (the name of /sys/class/net/IF/device: a PCI address, or virtio<N>) are
# substituted escaped, so eth0 never matches eth01's vectors.
IRQ_FAMILIES = {
    # ice, i40e, iavf, idpf: "<driver>-<netif>-TxRx-N"; a vector of one
    # direction is -rx-/-tx- (ice, i40e, iavf) or -Rx-/-Tx- (idpf).
    "intel": r"(?:ice|i40e|iavf|idpf)-{netif}-(?:TxRx|[Rr]x|[Tt]x)-(?P<queue>\d+)",
    # mlx5: "mlx5_comp<N>@pci:<bdf>", one completion vector per channel
    # ("mlx5_combined0" when the function has a single vector).
    "mlx5": r"mlx5_(?:comp|combined)(?P<queue>\d+)@pci:{device}",
    # bnxt, igb, igc, ixgbe, e1000e: "<netif>-TxRx-N", "<netif>-rx-N", "<netif>-tx-N".
    "netif": r"{netif}-(?:TxRx|rx|tx)-(?P<queue>\d+)",
    # virtio-net: "virtio<N>-input.M" / "virtio<N>-output.M".
    "virtio": r"{device}-(?:input|output)\.(?P<queue>\d+)",
}
DRIVER_FAMILY = {"ice": "intel", "i40e": "intel", "iavf": "intel", "idpf": "intel",
                 "mlx5_core": "mlx5", "bnxt_en": "netif", "igb": "netif", "igc": "netif",
                 "ixgbe": "netif", "e1000e": "netif", "virtio_net": "virtio"}
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
VIRTIO_DEVICE = re.compile(r"virtio\d+")


def irq_regex(family, netif, device):
    """The compiled regex of FAMILY for NETIF, None when the device is not
    of the kind the family names vectors by (no PCI address for mlx5, no
    virtio<N> for virtio)."""
    if family == "mlx5" and not (device and PCI_ADDRESS.fullmatch(device)):
        return None
    if family == "virtio" and not (device and VIRTIO_DEVICE.fullmatch(device)):
        return None
    text = IRQ_FAMILIES[family].replace("{netif}", re.escape(netif))
    return re.compile(text.replace("{device}", re.escape(device or "")))


def interrupt_lines(text):
    """(irq, action name, count over all CPUs) of each numbered line of
    /proc/interrupts (TEXT); the name is the line's last field."""
    out = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[0].endswith(":") and fields[0][:-1].isdigit():
            out.append((int(fields[0][:-1]), fields[-1],
                        sum(int(v) for v in fields[1:] if v.isdigit())))
    return out


def match_irqs(lines, regex):
    """[(irq, name, queue)] of the LINES whose name REGEX matches whole, by
    queue."""
    found = []
    for irq, name, _ in lines:
        m = regex.fullmatch(name)
        if m:
            found.append((irq, name, int(m.group("queue"))))
    return sorted(found, key=lambda t: (t[2], t[0]))


def queue_ranks(irqs):
    """{queue number: rank} of IRQS ([(irq, name, queue)]): vectors of one
    queue (igb's rx-0 and tx-0) share a CPU, and idpf's numbering from 1
    still starts at the first CPU."""
    return {q: i for i, q in enumerate(sorted({queue for _, _, queue in irqs}))}


def spread_by_queue(irqs, cpus):
    """{irq: cpu}: IRQS ([(irq, name, queue)]) on CPUS round-robin by
    queue, as seed 001 spreads its queues over the server cores; every
    vector on the one CPU when CPUS has one."""
    ranks = queue_ranks(irqs)
    return {irq: cpus[ranks[queue] % len(cpus)] for irq, _, queue in irqs}


def families_for(driver):
    """The driver's family; every family, in turn, for a driver we do not know."""
    return [DRIVER_FAMILY[driver]] if driver in DRIVER_FAMILY else list(IRQ_FAMILIES)


def data_irqs(interrupts, netif, device, driver):
    """NETIF's data vectors in INTERRUPTS (the text of /proc/interrupts),
    as [(irq, name, queue)], and the regex that found them (None if none
    did). DEVICE and DRIVER are the names /sys/class/net/NETIF/device and
    its driver link to."""
    lines = interrupt_lines(interrupts)
    for family in families_for(driver):
        regex = irq_regex(family, netif, device)
        found = match_irqs(lines, regex) if regex else []
        if found:
            return found, regex
    return [], None


def link_name(path):
    """The last component of the symlink PATH, None if it is none."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def netif_irq_regex(netif):
    """The regex of this machine's NETIF's data vectors, None if it has
    none (netdevsim) or its driver names them in a way we do not know."""
    with open("/proc/interrupts") as fp:
        interrupts = fp.read()
    return data_irqs(interrupts, netif, link_name(f"/sys/class/net/{netif}/device"),
                     link_name(f"/sys/class/net/{netif}/device/driver"))[1]


def nics_of_driver(driver):
    """(MAC, name) of each NIC of DRIVER in this network namespace, by MAC
    address: QEMU's NIC pairs are created in that order, the first is the
    one under test. SYS_CLASS_NET points unit tests at a fixture."""
    sysfs = os.environ.get("SYS_CLASS_NET", "/sys/class/net")
    found = []
    for dev in os.listdir(sysfs):
        link = os.path.join(sysfs, dev, "device", "driver")
        if os.path.islink(link) and os.path.basename(os.readlink(link)) == driver:
            with open(os.path.join(sysfs, dev, "address")) as f:
                found.append((f.read().strip(), dev))
    return sorted(found)


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "nics":
        sys.exit("usage: nic_irqs.py nics DRIVER   # prints MAC NAME lines")
    for mac, dev in nics_of_driver(sys.argv[2]):
        print(mac, dev)
