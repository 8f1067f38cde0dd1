#!/usr/bin/env python3
"""Tiny UDP request/response latency probe for the demo.

  udp_rr.py server ADDR PORT          echo until killed
  udp_rr.py client ADDR PORT COUNT    print a JSON line of RTT percentiles (us)
"""
import json
import socket
import sys
import time


def server(addr, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, port))
    while True:
        data, peer = sock.recvfrom(2048)
        sock.sendto(data, peer)


def client(addr, port, count):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(1.0)
    rtts, lost = [], 0
    for seq in range(count):
        payload = seq.to_bytes(8, "little")
        start = time.perf_counter_ns()
        sock.sendto(payload, (addr, port))
        try:
            while sock.recv(2048) != payload:
                pass
        except socket.timeout:
            lost += 1
            continue
        rtts.append((time.perf_counter_ns() - start) / 1000)
    rtts.sort()

    def pct(p):
        return round(rtts[min(len(rtts) - 1, int(p / 100 * len(rtts)))], 1) if rtts else None

    print(json.dumps({"count": count, "lost": lost, "p50_us": pct(50),
                      "p90_us": pct(90), "p99_us": pct(99)}))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2], int(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
