"""bench/host/host-setup.py on fixture trees: the IRQ regex of each driver
family against realistic /proc/interrupts lines, the plan of seeds 000
and 001 on the SUT and the peer, apply and --dry-run through a recording
runner, and record's JSON snapshot. Nothing here touches the host."""
import io
import json
import os
import subprocess

import pytest

from conftest import load_script

TOP = os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(TOP, "bench", "host", "host-setup.py")


hs = load_script("host_setup", SCRIPT)
nic_irqs = load_script("nic_irqs", os.path.join(TOP, "bench", "nic_irqs.py"))


class RecordingRunner(hs.Runner):
    """Answers queries from canned ethtool output and records, instead of
    making, every change."""

    def __init__(self, host, outputs=None, dry_run=False):
        super().__init__(host, dry_run=dry_run, out=io.StringIO())
        self.outputs = outputs or {}
        self.executed, self.queries = [], []

    def query(self, argv):
        self.queries.append(tuple(argv))
        return self.outputs.get(tuple(argv))

    def execute(self, step):
        self.executed.append(step.shell())


def make_tree(root, files, links=()):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    for path, target in links:
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)
    return hs.Host(str(root))


def nic_links(netif, device_dir, driver):
    """sysfs links of NETIF: its device (DEVICE_DIR under sys/devices) and
    the device's driver, relative as in sysfs."""
    depth = device_dir.count("/") + 1
    return [(f"sys/class/net/{netif}/device", f"../../../devices/{device_dir}"),
            (f"sys/devices/{device_dir}/driver", "../" * (depth + 1) + f"bus/pci/drivers/{driver}")]


# --- the IRQ regex of each family ------------------------------------------------------

HEAD = "            CPU0       CPU1       CPU2       CPU3\n"

ICE = HEAD + """\
   0:         44          0          0          0   IO-APIC   2-edge      timer
 120:          1          0          0          0  IR-PCI-MSIX-0000:17:00.0    0-edge      ice-0000:17:00.0:misc
 121:      81234          0          0          0  IR-PCI-MSIX-0000:17:00.0    1-edge      ice-ens785f0-TxRx-0
 122:          0      71233          0          0  IR-PCI-MSIX-0000:17:00.0    2-edge      ice-ens785f0-TxRx-1
 123:          0          0         12          0  IR-PCI-MSIX-0000:17:00.0    3-edge      ice-ens785f0-rx-2
 124:          0          0          0          0  IR-PCI-MSIX-0000:17:00.0    4-edge      ice-0000:17:00.0:ll_ts
 125:          0          0          0          0  IR-PCI-MSIX-0000:17:00.0    5-edge      ice-0000:17:00.0:ctrl-TxRx-0
 140:          0          0          0          0  IR-PCI-MSIX-0000:17:00.1    0-edge      ice-0000:17:00.1:misc
 141:          9          0          0          0  IR-PCI-MSIX-0000:17:00.1    1-edge      ice-ens785f01-TxRx-0
NMI:          0          0          0          0   Non-maskable interrupts
"""
IDPF = HEAD + """\
 150:         17          0          0          0  IR-PCI-MSIX-0000:af:00.0    0-edge      idpf-Mailbox-0
 151:      91234          0          0          0  IR-PCI-MSIX-0000:af:00.0    1-edge      idpf-eth0-TxRx-1
 152:          0      81234          0          0  IR-PCI-MSIX-0000:af:00.0    2-edge      idpf-eth0-TxRx-2
 153:          0          0          0          0  IR-PCI-MSIX-0000:af:00.0    3-edge      idpf-eth0-Rx-3
"""
I40E = HEAD + """\
  90:          3          0          0          0  IR-PCI-MSIX-0000:3b:00.0    0-edge      i40e-0000:3b:00.0:misc
  91:       1200          0          0          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      i40e-eno1-TxRx-0
  92:          0        800          0          0  IR-PCI-MSIX-0000:3b:00.0    2-edge      i40e-eno1-TxRx-1
  95:          2          0          0          0  IR-PCI-MSIX-0000:3b:00.1    0-edge      i40e-0000:3b:00.1:misc
  96:          0          0          0          0  IR-PCI-MSIX-0000:3b:00.1    1-edge      i40e-eno2-TxRx-0
"""
MLX5 = HEAD + """\
  60:         25          0          0          0  IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0
  61:      54321          0          0          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0
  62:          0      43210          0          0  IR-PCI-MSIX-0000:3b:00.0    2-edge      mlx5_comp1@pci:0000:3b:00.0
  63:          0          0          0          0  IR-PCI-MSIX-0000:3b:00.0    3-edge      mlx5_comp2@pci:0000:3b:00.0
  70:         20          0          0          0  IR-PCI-MSIX-0000:3b:00.1    0-edge      mlx5_async0@pci:0000:3b:00.1
  71:          7          0          0          0  IR-PCI-MSIX-0000:3b:00.1    1-edge      mlx5_comp0@pci:0000:3b:00.1
"""
BNXT = HEAD + """\
 180:       3000          0          0          0  IR-PCI-MSIX-0000:5e:00.0    0-edge      ens1f0np0-TxRx-0
 181:          0       2000          0          0  IR-PCI-MSIX-0000:5e:00.0    1-edge      ens1f0np0-TxRx-1
 182:          0          0          0          0  IR-PCI-MSIX-0000:5e:00.1    0-edge      ens1f1np1-TxRx-0
"""
IGB = HEAD + """\
  44:          1          0          0          0  PCI-MSIX-0000:00:06.0    0-edge      eth1
  45:        410          0          0          0  PCI-MSIX-0000:00:06.0    1-edge      eth1-rx-0
  46:          0        409          0          0  PCI-MSIX-0000:00:06.0    2-edge      eth1-tx-0
  47:          0          0          0          0  PCI-MSIX-0000:00:07.0    0-edge      eth10
  48:          0          0          0          0  PCI-MSIX-0000:00:07.0    1-edge      eth10-rx-0
"""
IXGBE = HEAD + """\
 100:       5000          0          0          0  IR-PCI-MSIX-0000:04:00.0    0-edge      enp4s0f0-TxRx-0
 101:          0       4000          0          0  IR-PCI-MSIX-0000:04:00.0    1-edge      enp4s0f0-TxRx-1
 102:          0          0       3000          0  IR-PCI-MSIX-0000:04:00.0    2-edge      enp4s0f0-TxRx-2
 103:          0          0          0       2000  IR-PCI-MSIX-0000:04:00.0    3-edge      enp4s0f0-TxRx-3
 104:          2          0          0          0  IR-PCI-MSIX-0000:04:00.0    4-edge      enp4s0f0
"""
VIRTIO = HEAD + """\
  33:          0          0          0          0  PCI-MSIX-0000:00:05.0   0-edge      virtio4-config
  34:        671          0          0          0  PCI-MSIX-0000:00:05.0   1-edge      virtio4-input
  37:          0          0          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
  38:          0       5311          0          0  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
  39:       3528          0          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
  40:          0          0         11          0  PCI-MSIX-0000:00:03.0   3-edge      virtio2-input.1
  41:          0          0          0         12  PCI-MSIX-0000:00:03.0   4-edge      virtio2-output.1
  50:          0          0          0          0  PCI-MSIX-0000:00:09.0   1-edge      virtio12-input.0
"""

FAMILY_CASES = {
    "ice": ("ens785f0", "pci0000:16/0000:17:00.0", "ice", ICE,
            [(121, "ice-ens785f0-TxRx-0", 0), (122, "ice-ens785f0-TxRx-1", 1),
             (123, "ice-ens785f0-rx-2", 2)]),
    "idpf": ("eth0", "pci0000:ae/0000:af:00.0", "idpf", IDPF,
             [(151, "idpf-eth0-TxRx-1", 1), (152, "idpf-eth0-TxRx-2", 2),
              (153, "idpf-eth0-Rx-3", 3)]),
    "i40e": ("eno1", "pci0000:3a/0000:3b:00.0", "i40e", I40E,
             [(91, "i40e-eno1-TxRx-0", 0), (92, "i40e-eno1-TxRx-1", 1)]),
    "mlx5": ("ens2f0np0", "pci0000:3a/0000:3b:00.0", "mlx5_core", MLX5,
             [(61, "mlx5_comp0@pci:0000:3b:00.0", 0), (62, "mlx5_comp1@pci:0000:3b:00.0", 1),
              (63, "mlx5_comp2@pci:0000:3b:00.0", 2)]),
    "bnxt": ("ens1f0np0", "pci0000:5d/0000:5e:00.0", "bnxt_en", BNXT,
             [(180, "ens1f0np0-TxRx-0", 0), (181, "ens1f0np0-TxRx-1", 1)]),
    "igb": ("eth1", "pci0000:00/0000:00:06.0", "igb", IGB,
            [(45, "eth1-rx-0", 0), (46, "eth1-tx-0", 0)]),
    "ixgbe": ("enp4s0f0", "pci0000:00/0000:04:00.0", "ixgbe", IXGBE,
              [(100, "enp4s0f0-TxRx-0", 0), (101, "enp4s0f0-TxRx-1", 1),
               (102, "enp4s0f0-TxRx-2", 2), (103, "enp4s0f0-TxRx-3", 3)]),
    "virtio": ("eth0", "pci0000:00/0000:00:03.0/virtio2", "virtio_net", VIRTIO,
               [(38, "virtio2-input.0", 0), (39, "virtio2-output.0", 0),
                (40, "virtio2-input.1", 1), (41, "virtio2-output.1", 1)]),
}


@pytest.mark.parametrize("family", FAMILY_CASES)
def test_data_irqs_of_each_driver_family(tmp_path, family):
    netif, device_dir, driver, interrupts, want = FAMILY_CASES[family]
    host = make_tree(tmp_path, {"proc/interrupts": interrupts},
                     nic_links(netif, device_dir, driver))
    assert hs.nic_irqs(host, netif) == want


def test_an_unknown_driver_tries_every_family(tmp_path):
    host = make_tree(tmp_path, {"proc/interrupts": BNXT},
                     nic_links("ens1f0np0", "pci0000:5d/0000:5e:00.0", "newdriver"))
    assert [irq for irq, _, _ in hs.nic_irqs(host, "ens1f0np0")] == [180, 181]


def test_mlx5_and_virtio_need_their_device_name():
    assert nic_irqs.irq_regex("mlx5", "eth0", "virtio2") is None
    assert nic_irqs.irq_regex("virtio", "eth0", "0000:3b:00.0") is None
    assert nic_irqs.irq_regex("mlx5", "eth0", "0000:3b:00.0").fullmatch("mlx5_combined0@pci:0000:3b:00.0")


def test_netif_names_are_escaped():
    regex = nic_irqs.irq_regex("netif", "eth0.100", None)
    assert regex.fullmatch("eth0.100-TxRx-0")
    assert not regex.fullmatch("eth0x100-TxRx-0")


def test_the_benchmarks_count_the_same_vectors_as_the_runbook():
    netif, _, _, interrupts, want = FAMILY_CASES["idpf"]
    found, regex = nic_irqs.data_irqs(interrupts, netif, "0000:3b:00.0", "idpf")
    assert found == want
    assert sorted(name for _, name, _ in nic_irqs.interrupt_lines(interrupts)
                  if regex.fullmatch(name)) == sorted(name for _, name, _ in want)


def test_queue_ranks_share_a_cpu_per_queue_and_start_idpf_at_the_first():
    assert hs.queue_ranks([(45, "eth1-rx-0", 0), (46, "eth1-tx-0", 0)]) == {0: 0}
    assert hs.queue_ranks([(151, "a", 1), (152, "b", 2)]) == {1: 0, 2: 1}


def test_benchmarks_spread_vectors_by_queue_like_the_setup():
    """benchlib's pin_irqs() (mc_sweep.py --server-cpus) and host-setup.py
    share nic_irqs.queue_ranks(): one queue's vectors on one CPU."""
    import nic_irqs
    igb = [(45, "eth1-rx-0", 0), (46, "eth1-tx-0", 0), (47, "eth1-rx-1", 1),
           (48, "eth1-tx-1", 1), (49, "eth1-rx-2", 2)]
    assert nic_irqs.spread_by_queue(igb, ["4", "5"]) == {45: "4", 46: "4", 47: "5", 48: "5",
                                                        49: "4"}
    assert set(nic_irqs.spread_by_queue(igb, ["1"]).values()) == {"1"}


# --- helpers ----------------------------------------------------------------------------------

def test_cpu_lists_and_masks():
    assert hs.parse_cpu_list("0,3,8-11") == [0, 3, 8, 9, 10, 11]
    assert hs.format_cpu_list([5, 0, 1, 2, 7]) == "0-2,5,7"
    assert hs.cpu_mask_hex([0, 4, 5, 6, 7]) == "f1"
    assert hs.cpu_mask_hex([1, 33]) == "2,00000002"
    assert hs.parse_cpu_mask("2,00000002") == [1, 33]
    assert hs.parse_cpu_mask("00") == []
    with pytest.raises(ValueError):
        hs.parse_cpu_list("2-")


COALESCE_ICE = """\
Coalesce parameters for ens785f0:
Adaptive RX: on  TX: on
stats-block-usecs: n/a
sample-interval: n/a
pkt-rate-low: n/a
pkt-rate-high: n/a

rx-usecs: 50
rx-frames: n/a
rx-usecs-irq: n/a
rx-frames-irq: n/a

tx-usecs: 50
tx-frames: n/a
tx-usecs-irq: n/a
tx-frames-irq: n/a

rx-usecs-high: 0
rx-frame-high: n/a
tx-usecs-high: n/a
tx-frame-high: n/a

CQE mode RX: n/a  TX: n/a

"""
RINGS_ICE = """\
Ring parameters for ens785f0:
Pre-set maximums:
RX:\t\t8160
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t8160
Current hardware settings:
RX:\t\t2048
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t2048
RX Buf Len:\t\tn/a
CQE Size:\t\tn/a
TX Push:\toff
TCP data split:\tn/a
"""
CHANNELS_ICE = """\
Channel parameters for ens785f0:
Pre-set maximums:
RX:\t\t64
TX:\t\t64
Other:\t\t1
Combined:\t64
Current hardware settings:
RX:\t\t0
TX:\t\t0
Other:\t\t1
Combined:\t8
"""
INFO_ICE = """\
driver: ice
version: 6.12.0
firmware-version: 4.40 0x8001c7d4 1.3534.0
expansion-rom-version: 
bus-info: 0000:17:00.0
supports-statistics: yes
supports-test: yes
supports-eeprom-access: yes
supports-register-dump: yes
supports-priv-flags: yes
"""


def test_ethtool_parsers():
    coalescing = hs.parse_ethtool_keys(COALESCE_ICE)
    assert coalescing["adaptive-rx"] == "on" and coalescing["adaptive-tx"] == "on"
    assert coalescing["rx-usecs"] == 50 and coalescing["rx-frames"] == "n/a"
    assert coalescing["cqe-mode-rx"] == "n/a" and coalescing["cqe-mode-tx"] == "n/a"
    rings = hs.parse_ethtool_sections(RINGS_ICE)
    assert rings["max"]["rx"] == 8160 and rings["current"]["rx"] == 2048
    assert rings["current"]["rx-buf-len"] == "n/a" and rings["current"]["tx-push"] == "off"
    channels = hs.parse_ethtool_sections(CHANNELS_ICE)
    assert channels == {"max": {"rx": 64, "tx": 64, "other": 1, "combined": 64},
                        "current": {"rx": 0, "tx": 0, "other": 1, "combined": 8}}
    info = hs.parse_ethtool_info(INFO_ICE)
    assert info["firmware-version"] == "4.40 0x8001c7d4 1.3534.0"
    assert info["expansion-rom-version"] == "" and info["driver"] == "ice"


def test_channels_combined_where_the_nic_has_them_else_rx_and_tx():
    combined = hs.parse_ethtool_sections(CHANNELS_ICE)
    assert hs.channels_target(combined, 1) == {"combined": 1}
    assert hs.channels_target(combined, 100) == {"combined": 64}
    separate = {"max": {"rx": 16, "tx": 16, "combined": "n/a"},
                "current": {"rx": 8, "tx": 8, "combined": "n/a"}}
    assert hs.channels_target(separate, 1) == {"rx": 1, "tx": 1}
    both = {"max": {"rx": 8, "tx": 8, "combined": 8}, "current": {"rx": 2, "tx": 0, "combined": 4}}
    assert hs.channels_target(both, 1) == {"combined": 1, "rx": 0}
    assert hs.channels_target(None, 8) == {"combined": 8}


# --- a SUT and a peer as fixture trees ------------------------------------------------------------

NETIF = "ens785f0"
ICE_DEVICE = "pci0000:16/0000:16:02.0/0000:17:00.0"
ICE_8Q = HEAD + "".join(
    f" {121 + q}:   {q}   0   0   0  IR-PCI-MSIX-0000:17:00.0   {q + 1}-edge      ice-{NETIF}-TxRx-{q}\n"
    for q in range(8)) + " 120:  1  0  0  0  IR-PCI-MSIX-0000:17:00.0   0-edge      ice-0000:17:00.0:misc\n"
ICE_IRQS = list(range(121, 129))
ETHTOOL = {("ethtool", "-c", NETIF): COALESCE_ICE, ("ethtool", "-g", NETIF): RINGS_ICE,
           ("ethtool", "-l", NETIF): CHANNELS_ICE, ("ethtool", "-i", NETIF): INFO_ICE}


def machine(tmp_path, extra=None):
    """8 CPUs, SMT on (siblings n and n+4), cpufreq powersave, 4 C-states,
    irqbalance running, an ice NIC with 8 queues local to CPUs 0-3, RPS
    on rx-1 and RFS on rx-2."""
    files = {
        "proc/interrupts": ICE_8Q,
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.12.0-napi root=/dev/sda1 ro quiet\n",
        "proc/sys/kernel/osrelease": "6.12.0-napi\n",
        "proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC\n",
        "proc/sys/kernel/hostname": "sut1\n",
        "proc/sys/kernel/timer_migration": "1\n",
        "proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "proc/sys/net/core/busy_poll": "50\n",
        "proc/sys/net/core/busy_read": "0\n",
        "proc/sys/net/core/rps_sock_flow_entries": "32768\n",
        "proc/1/comm": "systemd\n",
        "proc/812/comm": "irqbalance\n",
        f"sys/class/net/{NETIF}/ifindex": "4\n",
        f"sys/class/net/{NETIF}/threaded": "0\n",
        f"sys/class/net/{NETIF}/napi_defer_hard_irqs": "0\n",
        f"sys/class/net/{NETIF}/gro_flush_timeout": "0\n",
        f"sys/class/net/{NETIF}/mtu": "1500\n",
        f"sys/devices/{ICE_DEVICE}/local_cpulist": "0-3\n",
        f"sys/devices/{ICE_DEVICE}/numa_node": "0\n",
        "sys/devices/system/cpu/online": "0-7\n",
        "sys/devices/system/cpu/smt/control": "on\n",
        "sys/devices/virtual/workqueue/cpumask": "ff\n",
        "sys/devices/virtual/workqueue/writeback/cpumask": "ff\n",
        "sys/devices/virtual/workqueue/blkcg_punt_bio/cpumask": "ff\n",
    }
    for q in range(8):
        files[f"sys/class/net/{NETIF}/queues/rx-{q}/rps_cpus"] = "ff\n" if q == 1 else "00\n"
        files[f"sys/class/net/{NETIF}/queues/rx-{q}/rps_flow_cnt"] = "4096\n" if q == 2 else "0\n"
    for irq in ICE_IRQS:
        files[f"proc/irq/{irq}/smp_affinity_list"] = "0-7\n"
        files[f"proc/irq/{irq}/effective_affinity_list"] = f"{irq % 8}\n"
    for cpu in range(8):
        base = f"sys/devices/system/cpu/cpu{cpu}"
        files[f"{base}/topology/thread_siblings_list"] = f"{cpu % 4},{cpu % 4 + 4}\n"
        files[f"{base}/cpufreq/scaling_governor"] = "powersave\n"
        files[f"{base}/cpufreq/scaling_driver"] = "intel_pstate\n"
        for index, (name, latency) in enumerate((("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 170))):
            files[f"{base}/cpuidle/state{index}/name"] = f"{name}\n"
            files[f"{base}/cpuidle/state{index}/disable"] = "0\n"
            files[f"{base}/cpuidle/state{index}/latency"] = f"{latency}\n"
    files.update(extra or {})
    return make_tree(tmp_path, files, nic_links(NETIF, ICE_DEVICE, "ice"))


def plan_of(host, *args, env_cpus=None):
    runner = RecordingRunner(host, ETHTOOL)
    setup = hs.make_setup(host, hs.build_parser().parse_args(["plan", "--netif", NETIF, *args]))
    return [s.shell() for s in hs.plan(host, runner, setup) if not s.note], setup


def irq_pins(commands):
    return {int(c.split("/")[3]): int(c.split()[1]) for c in commands
            if c.endswith("/smp_affinity_list")}


GOVERNORS = [f"echo performance > /sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
             for c in range(8)]


@pytest.fixture(autouse=True)
def no_bench_cpus(monkeypatch):
    # rr_grid.py's variables in the developer's environment must not leak in.
    for which in ("NAPI", "APP", "PEER"):
        monkeypatch.delenv(f"BENCH_CPU_{which}", raising=False)


def test_plan_seed_000_sut(tmp_path):
    host = machine(tmp_path)
    commands, setup = plan_of(host, "--role", "sut", "--seed", "000",
                              "--cpus-napi", "1,2", "--cpus-app", "3")
    assert hs.problems(host, setup) == []
    assert commands == [
        "echo 0 > /proc/sys/kernel/timer_migration",
        "echo -1 > /proc/sys/kernel/sched_rt_runtime_us",
        "echo 0 > /proc/sys/net/core/rps_sock_flow_entries",
        "echo off > /sys/devices/system/cpu/smt/control",
        "systemctl stop irqbalance",
        *GOVERNORS,
        # housekeeping: online 0-7 without 1-3
        "echo f1 > /sys/devices/virtual/workqueue/blkcg_punt_bio/cpumask",
        "echo f1 > /sys/devices/virtual/workqueue/writeback/cpumask",
        f"echo 0 > /sys/class/net/{NETIF}/threaded",
        f"ethtool -L {NETIF} combined 1",
        f"ethtool -G {NETIF} rx 1024",
        f"ethtool -C {NETIF} adaptive-rx off adaptive-tx off rx-usecs 0 tx-usecs 0",
        f"echo 0 > /sys/class/net/{NETIF}/queues/rx-1/rps_cpus",
        *[f"echo {1 + i % 2} > /proc/irq/{irq}/smp_affinity_list" for i, irq in enumerate(ICE_IRQS)],
        "echo 0 > /proc/sys/net/core/busy_poll",
        "echo 0 > /proc/sys/net/core/busy_read",
    ]


def test_plan_seed_000_peer_pins_to_the_peer_cpus_and_interrupts(tmp_path):
    host = machine(tmp_path)
    commands, setup = plan_of(host, "--role", "peer", "--seed", "000", "--cpus-peer", "2,3")
    assert setup.napi_mode == "interrupt"
    assert irq_pins(commands) == {irq: (2, 3)[i % 2] for i, irq in enumerate(ICE_IRQS)}
    for expected in ("echo -1 > /proc/sys/kernel/sched_rt_runtime_us",
                     "echo off > /sys/devices/system/cpu/smt/control",
                     f"ethtool -L {NETIF} combined 1",
                     f"ethtool -C {NETIF} adaptive-rx off adaptive-tx off rx-usecs 0 tx-usecs 0",
                     "echo 0 > /proc/sys/net/core/busy_read",
                     f"echo 0 > /sys/class/net/{NETIF}/napi_defer_hard_irqs",
                     f"echo 15000 > /sys/class/net/{NETIF}/gro_flush_timeout"):
        assert expected in commands
    # housekeeping: everything but the peer CPUs
    assert "echo f3 > /sys/devices/virtual/workqueue/writeback/cpumask" in commands


def test_plan_seed_000_defaults_follow_the_seed_and_rr_grid_variables(tmp_path, monkeypatch):
    host = machine(tmp_path)
    _, setup = plan_of(host, "--role", "sut")
    assert (setup.seed, setup.irq_cpus, setup.busy_cpus) == ("000", [2], [2, 3, 4, 5])
    # CPUs 4 and 5 are the second threads of 0 and 1: SMT off takes them.
    assert any("CPU 4 goes offline with SMT off" in p for p in hs.problems(host, setup))
    monkeypatch.setenv("BENCH_CPU_NAPI", "1")
    monkeypatch.setenv("BENCH_CPU_APP", "2,3")
    _, setup = plan_of(host, "--role", "sut")
    assert (setup.irq_cpus, setup.busy_cpus) == ([1], [1, 2, 3])
    assert hs.problems(host, setup) == []


def test_plan_seed_001_sut(tmp_path):
    host = machine(tmp_path)
    commands, setup = plan_of(host, "--role", "sut", "--seed", "001")
    # NUMA-local CPUs 0-3 of the NIC, 8 queues already: round-robin twice.
    assert setup.irq_cpus == [0, 1, 2, 3] and setup.queues == 8
    assert irq_pins(commands) == {irq: i % 4 for i, irq in enumerate(ICE_IRQS)}
    assert "echo off > /sys/devices/system/cpu/smt/control" in commands
    assert f"echo 0 > /sys/class/net/{NETIF}/queues/rx-1/rps_cpus" in commands
    assert f"echo 0 > /sys/class/net/{NETIF}/queues/rx-2/rps_flow_cnt" in commands
    assert commands[-2:] == ["echo 0 > /proc/sys/net/core/busy_poll",
                             "echo 0 > /proc/sys/net/core/busy_read"]
    # Coalescing at boot defaults, rings not given, channels already 8;
    # no RT throttling or timer migration in this seed.
    assert not [c for c in commands if c.startswith("ethtool")]
    assert not [c for c in commands if "sched_rt_runtime_us" in c or "timer_migration" in c]
    assert not [c for c in commands if "workqueue" in c]


def test_seed_001_numa_local_cpus_are_first_threads_unless_smt_stays(tmp_path):
    host = machine(tmp_path, {f"sys/devices/{ICE_DEVICE}/local_cpulist": "0-7\n"})
    _, setup = plan_of(host, "--role", "sut", "--seed", "001")
    assert setup.irq_cpus == [0, 1, 2, 3] and hs.problems(host, setup) == []
    _, setup = plan_of(host, "--role", "sut", "--seed", "001", "--keep-smt")
    assert setup.irq_cpus == list(range(8))


def test_plan_seed_001_sut_sets_eight_channels(tmp_path):
    host = machine(tmp_path)
    four = CHANNELS_ICE.replace("Combined:\t8", "Combined:\t4")
    runner = RecordingRunner(host, {**ETHTOOL, ("ethtool", "-l", NETIF): four})
    setup = hs.make_setup(host, hs.build_parser().parse_args(
        ["plan", "--netif", NETIF, "--role", "sut", "--seed", "001"]))
    assert f"ethtool -L {NETIF} combined 8" in [s.shell() for s in hs.plan(host, runner, setup)]


def test_plan_seed_001_peer(tmp_path):
    host = machine(tmp_path)
    commands, _ = plan_of(host, "--role", "peer", "--seed", "001", "--cpus-peer", "2-3")
    assert irq_pins(commands) == {irq: (2, 3)[i % 2] for i, irq in enumerate(ICE_IRQS)}
    assert "systemctl stop irqbalance" in commands
    # Seed 001 describes the machine under test only.
    assert not [c for c in commands if "smt" in c or c.startswith("ethtool") or "rps" in c]


def test_threaded_mode_pins_the_napi_kthreads(tmp_path):
    host = machine(tmp_path, {"proc/900/comm": f"napi/{NETIF}-8"[:15] + "\n",
                              "proc/901/comm": "napi/eth9-8193\n"})
    commands, _ = plan_of(host, "--role", "sut", "--cpus-napi", "2", "--cpus-app", "3",
                          "--napi-mode", "threaded")
    assert f"echo 2 > /sys/class/net/{NETIF}/threaded" in commands
    assert commands[-2:] == ["chrt -f -p 50 900", "taskset -pc 2 900"]
    assert hs.napi_kthreads(host, "enp2s0f0np0") is None   # comm too short to tell


def test_max_cstate_disables_the_deeper_states(tmp_path):
    host = machine(tmp_path)
    commands, _ = plan_of(host, "--role", "sut", "--cpus-napi", "1", "--cpus-app", "2",
                          "--max-cstate", "1")
    disabled = [c for c in commands if c.endswith("/disable")]
    assert len(disabled) == 16
    assert "echo 1 > /sys/devices/system/cpu/cpu7/cpuidle/state3/disable" in disabled
    assert not [c for c in disabled if "state1" in c or "state0" in c]


def test_nothing_to_do_where_the_host_already_matches(tmp_path):
    host = machine(tmp_path, {f"sys/class/net/{NETIF}/queues/rx-1/rps_cpus": "0\n"})
    runner = RecordingRunner(host, {("ethtool", "-c", NETIF): COALESCE_ICE.replace(
        "Adaptive RX: on  TX: on", "Adaptive RX: off  TX: n/a").replace("usecs: 50", "usecs: 0")})
    setup = hs.make_setup(host, hs.build_parser().parse_args(
        ["plan", "--netif", NETIF, "--role", "sut", "--cpus-napi", "1", "--cpus-app", "2",
         "--governor", "keep"]))
    steps = hs.plan(host, runner, setup)
    commands = [s.shell() for s in steps if not s.note]
    assert not [c for c in commands
                if c.startswith("ethtool -C") or "/queues/" in c or "governor" in c]
    assert any("adaptive-tx: the driver has no such setting" in s.note for s in steps)
    # ethtool -l gave nothing: combined, as most NICs have.
    assert f"ethtool -L {NETIF} combined 1" in commands


# --- apply, --dry-run, the command line -----------------------------------------------------------

SUT_ARGS = ["--netif", NETIF, "--role", "sut", "--cpus-napi", "1,2", "--cpus-app", "3"]


def test_dry_run_executes_nothing(tmp_path):
    host = machine(tmp_path)
    runner = RecordingRunner(host, ETHTOOL, dry_run=True)
    assert hs.main(["apply", *SUT_ARGS, "--dry-run"], runner=runner) == 0
    assert runner.executed == []
    out = runner.out.getvalue()
    assert f"ethtool -C {NETIF} adaptive-rx off adaptive-tx off rx-usecs 0 tx-usecs 0" in out
    assert "echo 1 > /proc/irq/121/smp_affinity_list" in out
    # only read-only queries ran
    assert {argv[:2] for argv in runner.queries} <= {("ethtool", "-l"), ("ethtool", "-g"),
                                                     ("ethtool", "-c")}


def test_plan_executes_nothing_and_is_a_shell_script(tmp_path):
    host = machine(tmp_path)
    runner = RecordingRunner(host, ETHTOOL, dry_run=True)
    assert hs.main(["plan", *SUT_ARGS], runner=runner) == 0
    assert runner.executed == []
    out = runner.out.getvalue()
    assert out.startswith("#!/bin/sh\n")
    assert subprocess.run(["sh", "-n"], input=out, text=True).returncode == 0


def test_apply_executes_the_plan_in_order(tmp_path):
    host = machine(tmp_path)
    planned, _ = plan_of(host, *SUT_ARGS[2:])
    runner = RecordingRunner(host, ETHTOOL)
    assert hs.main(["apply", *SUT_ARGS], runner=runner) == 0
    assert runner.executed == planned


def test_apply_refuses_cpus_that_do_not_fit(tmp_path, capsys):
    host = machine(tmp_path)
    runner = RecordingRunner(host, ETHTOOL)
    assert hs.main(["apply", "--netif", NETIF, "--role", "sut", "--cpus-napi", "9",
                    "--cpus-app", "3"], runner=runner) == 2
    assert runner.executed == []
    assert "CPUs 9 are not online" in capsys.readouterr().err


def test_apply_reports_failures_and_goes_on(tmp_path, capsys):
    host = machine(tmp_path)

    class Failing(RecordingRunner):
        def execute(self, step):
            super().execute(step)
            if step.argv[:1] in (("systemctl",), ("ethtool",)):
                raise OSError(f"{step.argv[0]} failed")

    runner = Failing(host, ETHTOOL)
    assert hs.main(["apply", *SUT_ARGS], runner=runner) == 1
    err = capsys.readouterr().err
    assert "warning: systemctl stop irqbalance" in err      # optional
    assert f"failed: ethtool -L {NETIF} combined 1" in err
    assert runner.executed[-1] == "echo 0 > /proc/sys/net/core/busy_read"


def test_real_runner_writes_under_the_root(tmp_path):
    host = machine(tmp_path)
    runner = hs.Runner(host, out=io.StringIO())
    assert runner.apply(hs.write("host", "/proc/sys/kernel/timer_migration", 0, "why")) is None
    assert host.read("/proc/sys/kernel/timer_migration") == "0"
    dry = hs.Runner(host, dry_run=True, out=io.StringIO())
    dry.apply(hs.write("host", "/proc/sys/kernel/timer_migration", 1, "why"))
    assert host.read("/proc/sys/kernel/timer_migration") == "0"


def test_bad_cpu_list_is_a_usage_error(tmp_path):
    host = machine(tmp_path)
    assert hs.main(["plan", "--netif", NETIF, "--role", "sut", "--cpus-napi", "x"],
                   runner=RecordingRunner(host)) == 2


# --- record -----------------------------------------------------------------------------------------

def test_record_snapshot(tmp_path):
    host = machine(tmp_path)
    runner = RecordingRunner(host, ETHTOOL)
    out = tmp_path / "state.json"
    assert hs.main(["record", *SUT_ARGS, "--out", str(out)], runner=runner) == 0
    state = json.loads(out.read_text())
    assert state["kernel"] == {"release": "6.12.0-napi", "version": "#1 SMP PREEMPT_DYNAMIC",
                               "cmdline": "BOOT_IMAGE=/vmlinuz-6.12.0-napi root=/dev/sda1 ro quiet"}
    assert state["sysctls"]["kernel.sched_rt_runtime_us"] == 950000
    assert state["sysctls"]["kernel.timer_migration"] == 1
    assert state["sysctls"]["net.core.busy_poll"] == 50
    assert state["sysctls"]["kernel.numa_balancing"] is None     # absent in the tree
    nic = state["netif"]
    assert nic["device"] == "0000:17:00.0" and nic["sysfs"]["device/local_cpulist"] == "0-3"
    assert nic["driver"]["driver"] == "ice"
    assert nic["driver"]["firmware-version"] == "4.40 0x8001c7d4 1.3534.0"
    assert nic["coalescing"]["adaptive-rx"] == "on" and nic["coalescing"]["rx-usecs"] == 50
    assert nic["rings"]["current"]["rx"] == 2048 and nic["channels"]["current"]["combined"] == 8
    assert nic["rx_queues"]["rx-1"]["rps_cpus"] == "ff"
    assert state["irqs"][0] == {"irq": 121, "name": f"ice-{NETIF}-TxRx-0", "queue": 0,
                                "smp_affinity_list": "0-7", "effective_affinity_list": "1"}
    assert [i["irq"] for i in state["irqs"]] == ICE_IRQS
    cpu7 = state["cpus"]["per_cpu"]["cpu7"]
    assert cpu7["governor"] == "powersave" and cpu7["cpufreq_driver"] == "intel_pstate"
    assert cpu7["cstates"][3] == {"state": "state3", "name": "C6", "disable": 0, "latency_us": 170}
    assert state["cpus"]["smt_control"] == "on" and state["cpus"]["online"] == "0-7"
    assert state["irqbalance_running"] is True
    assert state["workqueue_cpumask"] == {"blkcg_punt_bio": "ff", "writeback": "ff"}
    assert state["setup"]["irq_cpus"] == "1-2" and state["hostname"] == "sut1"
    assert runner.executed == []
