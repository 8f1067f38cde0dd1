#!/usr/bin/env python3
"""Send ICMP echo requests to a guest NIC through QEMU's datagram netdev.

QEMU's "-netdev dgram,local.type=unix,local.path=NIC,remote.type=unix,
remote.path=SINK" carries one Ethernet frame per datagram: what is sent
to NIC arrives on the guest's NIC, what the NIC sends goes to SINK, which
this tool binds and drains. The guest replies from softirq context, so
both its RX and its TX NAPI keep polling while its user space is frozen.

usage: frame_flood.py NIC SINK GUEST_MAC GUEST_IP [RATE]
"""

import socket
import struct
import sys
import time

PEER_MAC = "52:54:00:00:00:01"
PEER_IP = "10.0.2.1"


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echo_request(guest_mac: str, guest_ip: str) -> bytes:
    icmp = struct.pack("!BBHHH", 8, 0, 0, 0x4E41, 1) + b"napi" * 16
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0, 64, 1, 0,
                     socket.inet_aton(PEER_IP), socket.inet_aton(guest_ip))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    eth = (bytes.fromhex(guest_mac.replace(":", "")) +
           bytes.fromhex(PEER_MAC.replace(":", "")) + b"\x08\x00")
    return eth + ip + icmp


def main() -> None:
    nic, sink, guest_mac, guest_ip = sys.argv[1:5]
    rate = int(sys.argv[5]) if len(sys.argv) > 5 else 5000
    frame = echo_request(guest_mac, guest_ip)
    drain = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    drain.bind(sink)
    drain.setblocking(False)
    out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    batch = max(1, rate // 1000)
    while True:
        for _ in range(batch):
            try:
                out.sendto(frame, nic)
            except (FileNotFoundError, ConnectionRefusedError, BlockingIOError):
                break  # QEMU not listening yet, or its queue is full
        try:
            while True:
                drain.recv(2048)
        except BlockingIOError:
            pass
        time.sleep(0.001)


if __name__ == "__main__":
    main()
