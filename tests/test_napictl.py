"""tools/napictl against a fake netlink transport and a fake host: netlink
encoding and parsing, CPU lists, the config file, the show table, queue to
NAPI resolution, napi-set errors; and workbench/package/package-tools.sh's .deb."""
import errno
import json
import os
import shutil
import struct
import subprocess

import pytest

from conftest import load_script

TOP = os.path.join(os.path.dirname(__file__), "..")
TOOL = os.path.join(TOP, "tools", "napictl")


napictl = load_script("napictl", TOOL)
NetlinkError = napictl.NetlinkError
FAMILY = 0x22
ALL_OPS = (napictl.NETDEV_CMD_QUEUE_GET, napictl.NETDEV_CMD_NAPI_GET, napictl.NETDEV_CMD_NAPI_SET)

# eth0 (ifindex 2): rx-0 and tx-0 on NAPI 8193, rx-1 on 8194 (busy-poll
# kthread), tx-1 without NAPI, NAPI 8195 with no queue and no IRQ.
NAPIS = [
    {"id": 8193, "ifindex": 2, "irq": 40, "defer-hard-irqs": 100,
     "gro-flush-timeout": 20000, "irq-suspend-timeout": 0, "threaded": 0},
    {"id": 8194, "ifindex": 2, "irq": 41, "pid": 1234, "defer-hard-irqs": 0,
     "gro-flush-timeout": 2**40, "irq-suspend-timeout": 20000000, "threaded": 2},
    {"id": 8195, "ifindex": 2, "defer-hard-irqs": 0, "gro-flush-timeout": 0,
     "irq-suspend-timeout": 0, "threaded": 0},
    {"id": 9000, "ifindex": 3, "irq": 50, "defer-hard-irqs": 0, "gro-flush-timeout": 0,
     "irq-suspend-timeout": 0, "threaded": 0},
]
QUEUES = [
    {"id": 0, "ifindex": 2, "type": "rx", "napi-id": 8193},
    {"id": 1, "ifindex": 2, "type": "rx", "napi-id": 8194},
    {"id": 0, "ifindex": 2, "type": "tx", "napi-id": 8193},
    {"id": 1, "ifindex": 2, "type": "tx"},
    {"id": 0, "ifindex": 3, "type": "rx", "napi-id": 9000},
]
# A 6.12 kernel without the series: napi-get has no settings, no napi-set.
OLD_NAPIS = [{"id": n["id"], "ifindex": n["ifindex"], **({"irq": n["irq"]} if "irq" in n else {})}
             for n in NAPIS]


def ctrl_reply(ops):
    ops_attr = b"".join(napictl.nla_nested(i + 1, napictl.nla_u32(napictl.CTRL_ATTR_OP_ID, op))
                        for i, op in enumerate(ops))
    return (napictl.nla(napictl.CTRL_ATTR_FAMILY_ID, struct.pack("=H", FAMILY))
            + napictl.nla_str(napictl.CTRL_ATTR_FAMILY_NAME, "netdev")
            + napictl.nla_nested(napictl.CTRL_ATTR_OPS, ops_attr))


class FakeTransport:
    """The kernel's side of napictl's requests, from canned NAPIs and
    queues, encoded as the kernel does; errors[cmd] is raised instead."""

    def __init__(self, napis=NAPIS, queues=QUEUES, ops=ALL_OPS, errors=None, down=()):
        # As the kernel, no NAPIs or queues of devices that are down.
        self.napis = [n for n in napis if n["ifindex"] not in down]
        self.queues = [q for q in queues if q["ifindex"] not in down]
        self.ops = ops
        self.errors = errors or {}
        self.sets = []

    def request(self, family, cmd, attrs=b"", dump=False):
        if family == napictl.GENL_ID_CTRL:
            return [ctrl_reply(self.ops)]
        assert family == FAMILY
        if cmd in self.errors:
            raise self.errors[cmd]
        if cmd == napictl.NETDEV_CMD_NAPI_SET:
            self.sets.append(napictl.decode_attrs(napictl.NAPI_ATTRS, attrs))
            return []
        assert dump
        if cmd == napictl.NETDEV_CMD_NAPI_GET:
            want = napictl.decode_attrs(napictl.NAPI_ATTRS, attrs).get("ifindex")
            return [napictl.encode_attrs(napictl.NAPI_ATTRS, n) for n in self.napis
                    if want in (None, n["ifindex"])]
        want = napictl.decode_attrs(napictl.QUEUE_ATTRS, attrs).get("ifindex")
        return [napictl.encode_attrs(napictl.QUEUE_ATTRS,
                                     {**q, "type": napictl.QUEUE_TYPES.index(q["type"])})
                for q in self.queues if want in (None, q["ifindex"])]


class FakeHost(napictl.Host):
    """eth0 and eth1 up, IRQ 40 on CPUs 0-1 (effective 1), IRQ 41 without
    effective_affinity_list, kthread 1234 on CPU 2 last run on 3."""

    def __init__(self, up=("eth0", "eth1"), possible=range(4)):
        self.up, self.possible, self.writes = up, list(possible), []

    def ifindex(self, ifname):
        index = {"eth0": 2, "eth1": 3, "eth2": 4}.get(ifname)
        if index is None:
            raise napictl.Failure(f"no such network device: {ifname}")
        return index

    def ifname(self, ifindex):
        return {2: "eth0", 3: "eth1"}[ifindex]

    def is_up(self, ifname):
        return ifname in self.up

    def possible_cpus(self):
        return self.possible

    def irq_cpus(self, irq, effective=False):
        return {(40, False): [0, 1], (40, True): [1], (41, False): [2, 3], (50, False): [0]}.get(
            (irq, effective))

    def task_cpus(self, pid):
        return [2] if pid == 1234 else None

    def task_last_cpu(self, pid):
        return 3 if pid == 1234 else None

    def set_irq_cpus(self, irq, cpus):
        self.writes.append((irq, cpus))


def run(argv, transport=None, host=None):
    transport, host = transport or FakeTransport(), host or FakeHost()
    return napictl.main(argv, transport, host), transport, host


# --- CPU lists ----------------------------------------------------------------

def test_cpu_list_parse_and_format():
    assert napictl.parse_cpu_list("0-3,8") == [0, 1, 2, 3, 8]
    assert napictl.parse_cpu_list(" 2 ") == [2]
    assert napictl.parse_cpu_list("3,1-2,1") == [1, 2, 3]
    assert napictl.parse_cpu_list(5) == [5]
    assert napictl.format_cpu_list([8, 0, 1, 2, 3, 10]) == "0-3,8,10"
    assert napictl.format_cpu_list([]) == ""
    for text in ("0-3,8", "7", "0,2,4-6"):
        assert napictl.format_cpu_list(napictl.parse_cpu_list(text)) == text


@pytest.mark.parametrize("text, reason", [
    ("", "empty CPU list"),
    ("a", "'a' in CPU list 'a' is not a CPU or a range N-M"),
    ("1-", "is not a CPU or a range"),
    ("-1", "is not a CPU or a range"),
    ("0-2:2", "is not a CPU or a range"),
    ("\u00b2", "is not a CPU or a range"),
    ("3-1", "range '3-1' in CPU list '3-1' runs backwards"),
    ("0-99999999", "CPU 99999999 in CPU list '0-99999999' is beyond any kernel's CPUs"),
])
def test_cpu_list_errors(text, reason):
    with pytest.raises(ValueError, match=reason):
        napictl.parse_cpu_list(text)


def test_cpus_beyond_the_machine():
    napictl.check_cpus_exist([0, 3], range(4))
    with pytest.raises(napictl.UsageError,
                       match=r"CPUs 4-5,9 do not exist here \(possible CPUs: 0-3\)"):
        napictl.check_cpus_exist([1, 4, 5, 9], range(4))


def test_last_cpu_from_stat():
    rest = " ".join(str(n) for n in range(3, 52))  # field N holds N
    assert napictl.last_cpu_from_stat(f"1234 (napi/eth0-8193) {rest}") == 39
    assert napictl.last_cpu_from_stat(f"1 (a) b (c)) {rest}") == 39
    assert napictl.last_cpu_from_stat("1 (short) S 0") is None


# --- netlink attributes and messages --------------------------------------------

def test_attrs_round_trip():
    values = {"id": 8193, "defer-hard-irqs": napictl.S32_MAX, "gro-flush-timeout": 2**40,
              "irq-suspend-timeout": 7, "threaded": 2}
    buf = napictl.encode_attrs(napictl.NAPI_ATTRS, values)
    assert napictl.decode_attrs(napictl.NAPI_ATTRS, buf) == values
    lengths = {t: len(p) for t, p in napictl.iter_attrs(buf)}
    assert lengths[6] == 8 and lengths[7] == 4  # uint: 8 bytes only when needed
    assert len(buf) % 4 == 0


def test_attr_padding_unknown_and_truncated():
    buf = napictl.nla_str(99, "abcde") + napictl.nla_u32(2, 5)
    assert len(napictl.nla_str(99, "abcde")) == 12  # 4 + 6, padded to 4
    assert napictl.decode_attrs(napictl.NAPI_ATTRS, buf) == {"id": 5}
    assert list(napictl.iter_attrs(buf[:-2])) == [(99, b"abcde\0")]


def test_nested_attrs_round_trip():
    inner = napictl.nla_u32(1, 14) + napictl.nla_u32(2, 0xA)
    buf = napictl.nla_nested(6, napictl.nla_nested(1, inner))
    [(outer_type, outer)] = napictl.iter_attrs(buf)
    assert outer_type == 6  # NLA_F_NESTED stripped
    assert struct.unpack_from("=H", buf, 2)[0] == 6 | napictl.NLA_F_NESTED
    [(entry_type, entry)] = napictl.iter_attrs(outer)
    assert entry_type == 1
    assert [(t, napictl.decode_int(p)) for t, p in napictl.iter_attrs(entry)] == [(1, 14), (2, 10)]


def error_msg(code, seq, flags, extack=None, capped=True, request_payload=b"x" * 24):
    request = napictl.nlmsg(FAMILY, 1, seq, request_payload)
    payload = struct.pack("=i", -code) + (request[:16] if capped else request)
    if extack is not None:
        payload += (napictl.nla_str(napictl.NLMSGERR_ATTR_MSG, extack)
                    + napictl.nla_u32(2, 20))  # NLMSGERR_ATTR_OFFS after it
    return napictl.nlmsg(napictl.NLMSG_ERROR, flags, seq, payload)


@pytest.mark.parametrize("capped", [True, False])
def test_extack_of_an_error(capped):
    flags = napictl.NLM_F_ACK_TLVS | (napictl.NLM_F_CAPPED if capped else 0)
    buf = error_msg(errno.ERANGE, 7, flags, "integer out of range", capped)
    [(msg_type, msg_flags, seq, payload)] = napictl.iter_messages(buf)
    assert (msg_type, seq) == (napictl.NLMSG_ERROR, 7)
    assert napictl.parse_ack(msg_type, msg_flags, payload) == (errno.ERANGE, "integer out of range")


def test_error_without_extack_and_done():
    buf = error_msg(errno.ENOENT, 1, napictl.NLM_F_CAPPED)
    [(t, f, _, p)] = napictl.iter_messages(buf)
    assert napictl.parse_ack(t, f, p) == (errno.ENOENT, None)
    done = struct.pack("=i", -errno.EMSGSIZE) + napictl.nla_str(1, "dump failed")
    assert napictl.parse_ack(napictl.NLMSG_DONE, napictl.NLM_F_ACK_TLVS, done) == (
        errno.EMSGSIZE, "dump failed")
    assert napictl.parse_ack(napictl.NLMSG_DONE, 0, struct.pack("=i", 0)) == (0, None)


class FakeSocket:
    """recv() hands out chunks built from the sequence number sent."""

    def __init__(self, *chunks):
        self.chunks, self.sent = list(chunks), []

    def send(self, data):
        self.sent.append(data)

    def recv(self, size):
        seq = struct.unpack_from("=I", self.sent[-1], 8)[0]
        return self.chunks.pop(0)(seq)


def genl_reply(seq, attrs, flags=0x2):
    return napictl.nlmsg(FAMILY, flags, seq, struct.pack("=BBH", 11, 1, 0) + attrs)


def test_dump_spans_several_reads():
    napis = [napictl.encode_attrs(napictl.NAPI_ATTRS, n) for n in NAPIS[:3]]
    sock = FakeSocket(
        lambda seq: (genl_reply(seq - 1, b"stale") + genl_reply(seq, napis[0])
                     + genl_reply(seq, napis[1])),
        lambda seq: genl_reply(seq, napis[2]) + napictl.nlmsg(napictl.NLMSG_DONE, 2, seq, bytes(4)))
    genl = napictl.GenlSocket(sock)
    replies = genl.request(FAMILY, napictl.NETDEV_CMD_NAPI_GET, dump=True)
    ids = [napictl.decode_attrs(napictl.NAPI_ATTRS, r)["id"] for r in replies]
    assert ids == [8193, 8194, 8195]
    _, msg_type, flags, seq, _ = struct.unpack_from("=IHHII", sock.sent[0])
    assert (msg_type, seq) == (FAMILY, 1)
    assert flags & napictl.NLM_F_DUMP == napictl.NLM_F_DUMP and flags & napictl.NLM_F_ACK


def test_do_request_error_carries_extack():
    flags = napictl.NLM_F_ACK_TLVS | napictl.NLM_F_CAPPED
    sock = FakeSocket(lambda seq: error_msg(errno.ENOENT, seq, flags, "the NAPI's device is down"))
    with pytest.raises(NetlinkError) as err:
        napictl.GenlSocket(sock).request(FAMILY, napictl.NETDEV_CMD_NAPI_SET, b"")
    assert err.value.errno == errno.ENOENT
    assert str(err.value) == "the NAPI's device is down (No such file or directory)"


def test_do_request_ack():
    sock = FakeSocket(lambda seq: error_msg(0, seq, napictl.NLM_F_CAPPED))
    assert napictl.GenlSocket(sock).request(FAMILY, napictl.NETDEV_CMD_NAPI_SET) == []


def test_resolve_family():
    assert napictl.resolve_family(FakeTransport()) == (FAMILY, set(ALL_OPS))

    class NoFamily:
        def request(self, *args, **kwargs):
            raise NetlinkError(errno.ENOENT)
    with pytest.raises(napictl.Failure, match="this kernel has no 'netdev' netlink family"):
        napictl.resolve_family(NoFamily())


# --- config file ------------------------------------------------------------------

CONFIG = """
[eth0]
defer-hard-irqs = 100
gro-flush-timeout = 20000
[eth0.queue.1]
threaded = "busy-poll"
irq-affinity = "2"
gro-flush-timeout = 0

[eth1.queue.0]
irq-suspend-timeout = 18446744073709551615
"""


def write_config(tmp_path, text=CONFIG):
    path = tmp_path / "napictl.toml"
    path.write_text(text)
    return str(path)


def test_config_defaults_and_overrides(tmp_path):
    config = napictl.load_config(write_config(tmp_path))
    assert config == {
        "eth0": {"defaults": {"defer-hard-irqs": 100, "gro-flush-timeout": 20000},
                 "queues": {1: {"threaded": "busy-poll", "irq-affinity": [2],
                                "gro-flush-timeout": 0}}},
        "eth1": {"defaults": {}, "queues": {0: {"irq-suspend-timeout": napictl.U64_MAX}}},
    }
    napis = {n["id"]: n for n in NAPIS if n["ifindex"] == 2}
    rx = [q for q in QUEUES if q["ifindex"] == 2 and q["type"] == "rx"]
    assert napictl.plan_interface("eth0", config["eth0"], napis, rx) == {
        8193: {"defer-hard-irqs": 100, "gro-flush-timeout": 20000},
        8194: {"defer-hard-irqs": 100, "gro-flush-timeout": 0, "threaded": "busy-poll",
               "irq-affinity": [2]},
        8195: {"defer-hard-irqs": 100, "gro-flush-timeout": 20000},
    }


@pytest.mark.parametrize("text, message", [
    ('[eth0]\nthreaded = "busypoll"\n',
     "eth0: threaded: 'busypoll' is not one of disabled, enabled, busy-poll"),
    ("[eth0]\ndefer-hard-irqs = 2147483648\n",
     "eth0: defer-hard-irqs: 2147483648 is out of range 0..2147483647 (napi-set caps "
     "defer-hard-irqs at S32_MAX)"),
    ("[eth0.queue.0]\ngro-flush-timeout = -1\n",
     "eth0.queue.0: gro-flush-timeout: -1 is out of range 0..18446744073709551615"),
    ("[eth0]\nirq-suspend-timeout = true\n", "eth0: irq-suspend-timeout: True is not an integer"),
    ("[eth0]\ngro-flush-timeout = 1.5\n", "eth0: gro-flush-timeout: 1.5 is not an integer"),
    ('[eth0]\nirq-affinity = "0-x"\n', "eth0: irq-affinity: '0-x' in CPU list '0-x' is not a CPU"),
    ("[eth0]\nirq-affinity = [1, 2]\n", "eth0: irq-affinity: [1, 2] is not a CPU list"),
    ("[eth0]\nbusy-poll = 1\n", "eth0: unknown setting 'busy-poll' (known: defer-hard-irqs,"),
    ('[eth0.queue.rx0]\nthreaded = "enabled"\n',
     "eth0.queue.rx0: 'rx0' is not an rx queue index"),
    ("[eth0]\nqueue = 1\n", "eth0.queue must be tables: [eth0.queue.N]"),
    ("eth0 = 1\n", "'eth0' must be a table: [eth0]"),
    ("[eth0\n", "Expected ']'"),
])
def test_config_errors(tmp_path, capsys, text, message):
    rc, transport, _ = run(["apply", write_config(tmp_path, text)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert transport.sets == []


def test_config_missing(capsys):
    assert run(["apply", "/nonexistent/napictl.toml"])[0] == 2
    assert "/nonexistent/napictl.toml: No such file or directory" in capsys.readouterr().err


def test_config_cpu_beyond_machine(tmp_path, capsys):
    rc, transport, _ = run(["apply", write_config(tmp_path)], host=FakeHost(possible=range(2)))
    assert rc == 2
    assert "CPUs 2 do not exist here (possible CPUs: 0-1)" in capsys.readouterr().err
    assert transport.sets == []


def test_apply_all(tmp_path, capsys):
    rc, transport, host = run(["apply", write_config(tmp_path)])
    assert rc == 0
    assert transport.sets == [
        {"id": 8193, "defer-hard-irqs": 100, "gro-flush-timeout": 20000},
        {"id": 8194, "defer-hard-irqs": 100, "gro-flush-timeout": 0, "threaded": 2},
        {"id": 8195, "defer-hard-irqs": 100, "gro-flush-timeout": 20000},
        {"id": 9000, "irq-suspend-timeout": napictl.U64_MAX},
    ]
    assert host.writes == [(41, [2])]
    out = capsys.readouterr().out
    assert ("eth0 NAPI 8194 (rx-1): defer-hard-irqs=100 gro-flush-timeout=0 "
            "threaded=busy-poll irq-affinity=2") in out
    assert "eth0 NAPI 8195 (no rx queue): " in out


def test_apply_ifname_filter(tmp_path, capsys):
    rc, transport, _ = run(["apply", write_config(tmp_path), "--ifname", "eth1"])
    assert rc == 0
    assert transport.sets == [{"id": 9000, "irq-suspend-timeout": napictl.U64_MAX}]
    rc, transport, _ = run(["apply", write_config(tmp_path), "--ifname", "eth7"])
    assert rc == 0 and transport.sets == []
    assert "eth7 is not in" in capsys.readouterr().out


def test_apply_goes_on_after_a_failing_interface(tmp_path, capsys):
    path = write_config(tmp_path, "[eth2]\ndefer-hard-irqs = 1\n[eth0]\ndefer-hard-irqs = 2\n")
    rc, transport, _ = run(["apply", path], FakeTransport(down=(4,)), FakeHost(up=("eth0",)))
    assert rc == 1
    assert "napictl: eth2 is down: the kernel reports no NAPIs" in capsys.readouterr().err
    assert [s["id"] for s in transport.sets] == [8193, 8194, 8195]


def test_apply_queue_out_of_range(tmp_path, capsys):
    path = write_config(tmp_path, '[eth0.queue.2]\nthreaded = "enabled"\n')
    rc, transport, _ = run(["apply", path])
    assert rc == 1
    assert "eth0 has no rx queue 2: it has 2 rx queues (0-1)" in capsys.readouterr().err
    assert transport.sets == []


def test_queues_sharing_a_napi_must_agree():
    iface = {"defaults": {}, "queues": {0: {"threaded": "enabled"}, 1: {"threaded": "busy-poll"}}}
    rx = [{"id": 0, "type": "rx", "napi-id": 8193}, {"id": 1, "type": "rx", "napi-id": 8193}]
    with pytest.raises(napictl.Failure, match="rx queues 0 and 1 share NAPI 8193 but their"):
        napictl.plan_interface("eth0", iface, {8193: {}}, rx)
    iface["queues"][1] = {"threaded": "enabled"}
    assert napictl.plan_interface("eth0", iface, {8193: {}}, rx) == {8193: {"threaded": "enabled"}}


# --- show ---------------------------------------------------------------------------

def show_lines(capsys, argv, **kwargs):
    rc, _, _ = run(["show", *argv], **kwargs)
    assert rc == 0
    return capsys.readouterr().out.splitlines()


def columns(line):
    return line.split()


def test_show_table(capsys):
    lines = show_lines(capsys, ["eth0"])
    assert lines[0] == "eth0 (ifindex 2): 2 rx, 2 tx queues, 3 NAPIs"
    assert columns(lines[1]) == ["QUEUE", "NAPI", "IRQ", "IRQ-CPUS", "EFFECTIVE", "PID",
                                 "PID-CPUS", "LAST-CPU", "THREADED", "DEFER-IRQS",
                                 "GRO-FLUSH-NS", "IRQ-SUSPEND-NS"]
    rows = [columns(line) for line in lines[2:]]
    assert rows == [
        ["rx-0", "8193", "40", "0-1", "1", "-", "-", "-", "disabled", "100", "20000", "0"],
        ["rx-1", "8194", "41", "2-3", "-", "1234", "2", "3", "busy-poll", "0",
         str(2**40), "20000000"],
        ["tx-0", "8193", "40", "0-1", "1", "-", "-", "-", "disabled", "100", "20000", "0"],
        ["tx-1"] + ["-"] * 11,
        ["-", "8195", "-", "-", "-", "-", "-", "-", "disabled", "0", "0", "0"],
    ]
    assert len({len(line.rstrip()) for line in lines[1:3]}) <= 2  # aligned columns


def test_show_old_kernel_and_down_device(capsys):
    lines = show_lines(capsys, ["eth0", "eth1"],
                       transport=FakeTransport(napis=OLD_NAPIS, ops=ALL_OPS[:2], down=(3,)),
                       host=FakeHost(up=("eth0",)))
    assert columns(lines[2]) == ["rx-0", "8193", "40", "0-1", "1"] + ["-"] * 7
    assert lines[-1].startswith("eth1 (ifindex 3): down (the kernel reports no queues")


def test_show_all_devices_json(capsys):
    devices = json.loads("\n".join(show_lines(capsys, ["--json"])))["devices"]
    assert [(d["ifname"], d["up"], len(d["rows"])) for d in devices] == [
        ("eth0", True, 5), ("eth1", True, 1)]
    rx1 = devices[0]["rows"][1]
    assert rx1 == {"queue-type": "rx", "queue-id": 1, "napi-id": 8194, "irq": 41,
                   "irq-affinity": [2, 3], "irq-effective-affinity": None, "pid": 1234,
                   "pid-affinity": [2], "pid-last-cpu": 3, "threaded": "busy-poll",
                   "defer-hard-irqs": 0, "gro-flush-timeout": 2**40,
                   "irq-suspend-timeout": 20000000}
    assert devices[0]["rows"][4]["queue-type"] is None


def test_show_unknown_device(capsys):
    assert run(["show", "eth9"])[0] == 1
    assert "no such network device: eth9" in capsys.readouterr().err


def test_real_host_unknown_device():
    with pytest.raises(napictl.Failure, match="no such network device: nosuch-napi0"):
        napictl.Host().ifindex("nosuch-napi0")


# --- set ----------------------------------------------------------------------------

def test_queue_to_napi():
    rx = [q for q in QUEUES if q["ifindex"] == 2 and q["type"] == "rx"]
    assert napictl.napi_of_rx_queue("eth0", rx, 1) == 8194
    with pytest.raises(napictl.Failure,
                       match=r"eth0 has no rx queue 2: it has 2 rx queues \(0-1\)"):
        napictl.napi_of_rx_queue("eth0", rx, 2)
    with pytest.raises(napictl.Failure, match=r"eth1 has no rx queue 3: it has 1 rx queue \(0\)"):
        napictl.napi_of_rx_queue("eth1", rx[:1], 3)
    with pytest.raises(napictl.Failure, match="eth0 rx queue 0 has no NAPI ID"):
        napictl.napi_of_rx_queue("eth0", [{"id": 0, "type": "rx"}], 0)


def test_set_queue(capsys):
    rc, transport, host = run(["set", "eth0", "--queue", "1", "--threaded", "enabled",
                               "--gro-flush-timeout", "5000000000", "--irq-affinity", "0,3"])
    assert rc == 0
    assert transport.sets == [{"id": 8194, "gro-flush-timeout": 5000000000, "threaded": 1}]
    assert host.writes == [(41, [0, 3])]
    assert capsys.readouterr().out.startswith("eth0 NAPI 8194 (rx-1): ")


def test_set_all():
    rc, transport, host = run(["set", "eth0", "--all", "--defer-hard-irqs", "5"])
    assert rc == 0
    assert transport.sets == [{"id": i, "defer-hard-irqs": 5} for i in (8193, 8194, 8195)]
    assert host.writes == []


def test_set_queue_out_of_range(capsys):
    rc, transport, _ = run(["set", "eth0", "--queue", "4", "--threaded", "enabled"])
    assert rc == 1
    assert "napictl: eth0 has no rx queue 4: it has 2 rx queues (0-1)" in capsys.readouterr().err
    assert transport.sets == []


def test_set_irq_affinity_without_irq_changes_nothing(capsys):
    rc, transport, host = run(["set", "eth0", "--all", "--threaded", "enabled",
                               "--irq-affinity", "1"])
    assert rc == 1
    assert "NAPI 8195 has no IRQ (the driver reports none)" in capsys.readouterr().err
    assert transport.sets == [] and host.writes == []


def test_set_eperm(capsys):
    transport = FakeTransport(errors={napictl.NETDEV_CMD_NAPI_SET: NetlinkError(errno.EPERM)})
    assert run(["set", "eth0", "--queue", "0", "--defer-hard-irqs", "1"], transport)[0] == 1
    assert capsys.readouterr().err == "napictl: napi-set needs CAP_NET_ADMIN\n"


def test_set_extack(capsys):
    error = NetlinkError(errno.ERANGE, "integer out of range")
    transport = FakeTransport(errors={napictl.NETDEV_CMD_NAPI_SET: error})
    assert run(["set", "eth0", "--queue", "0", "--threaded", "busy-poll"], transport)[0] == 1
    assert capsys.readouterr().err == (
        "napictl: napi-set of NAPI 8193: integer out of range (Numerical result out of range)\n")


def test_set_kernel_without_napi_set(capsys):
    transport = FakeTransport(napis=OLD_NAPIS, ops=ALL_OPS[:2])
    assert run(["set", "eth0", "--queue", "0", "--defer-hard-irqs", "1"], transport)[0] == 1
    err = capsys.readouterr().err
    assert "this kernel has no napi-set: it lacks the per-NAPI config series" in err
    assert transport.sets == []


def test_set_kernel_without_threaded(capsys):
    napis = [{k: v for k, v in n.items() if k != "threaded"} for n in NAPIS]
    transport = FakeTransport(napis=napis)
    assert run(["set", "eth0", "--all", "--threaded", "busy-poll"], transport)[0] == 1
    assert "this kernel's napi-get has no threaded" in capsys.readouterr().err
    assert transport.sets == []


def test_set_device_down(capsys):
    assert run(["set", "eth1", "--all", "--defer-hard-irqs", "1"], FakeTransport(down=(3,)),
               FakeHost(up=("eth0",)))[0] == 1
    assert "eth1 is down" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--queue", "0", "--threaded", "on"], "'on' is not one of disabled, enabled, busy-poll"),
    (["--queue", "0", "--defer-hard-irqs", "2147483648"], "out of range 0..2147483647"),
    (["--queue", "0", "--irq-suspend-timeout", "18446744073709551616"],
     "out of range 0..18446744073709551615"),
    (["--queue", "0", "--gro-flush-timeout", "1e6"], "'1e6' is not a non-negative integer"),
    (["--queue", "-1", "--threaded", "enabled"], "'-1' is not an rx queue index"),
    (["--queue", "0", "--irq-affinity", "1-0"], "runs backwards"),
    (["--defer-hard-irqs", "1"], "one of the arguments --queue --all is required"),
    (["--queue", "0", "--all", "--defer-hard-irqs", "1"], "not allowed with argument"),
])
def test_set_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        run(["set", "eth0", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_set_nothing_and_missing_cpu(capsys):
    assert run(["set", "eth0", "--queue", "0"])[0] == 2
    assert "nothing to set" in capsys.readouterr().err
    assert run(["set", "eth0", "--queue", "0", "--irq-affinity", "6"])[0] == 2
    assert "CPUs 6 do not exist here" in capsys.readouterr().err


# --- packaging -------------------------------------------------------------------------

@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="no dpkg-deb")
def test_package_tools(tmp_path):
    subprocess.run([os.path.join(TOP, "workbench", "package", "package-tools.sh"), str(tmp_path)],
                   check=True, capture_output=True)
    [deb] = tmp_path.glob("napi-tools_*_all.deb")
    version = subprocess.run([TOOL, "--version"], capture_output=True, text=True).stdout.split()[1]
    assert deb.name == f"napi-tools_{version}_all.deb"
    fields = {f: subprocess.run(["dpkg-deb", "-f", str(deb), f], capture_output=True,
                                text=True).stdout.strip() for f in ("Package", "Architecture")}
    assert fields == {"Package": "napi-tools", "Architecture": "all"}
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                             check=True).stdout
    modes = {line.split()[-1]: line.split()[0] for line in listing.splitlines()}
    examples = "./usr/share/doc/napi-tools/examples/"
    assert modes["./usr/sbin/napictl"] == "-rwxr-xr-x"
    for path in ("./usr/share/napi-tools/napi-irq-suspend.bt", examples + "99-napictl.rules",
                 examples + "napictl@.service", examples + "napictl.toml"):
        assert path in modes, listing
    assert "root/root" in listing and "./etc/" not in modes  # examples only, not activated
