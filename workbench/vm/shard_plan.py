#!/usr/bin/env python3
"""Split the selftests' plan (test.sh: "TEST LIMIT [NIC]" lines) into
shards, one VM each, run side by side: under single-threaded TCG a VM
keeps one host CPU busy, and the machine has two.

The entries of one NIC stay in one shard, so each VM boots only its
NICs' pairs; NICs are placed longest first (the sum of their limits),
each on the shard with the least so far. Each shard keeps the plan's
order. usage: shard_plan.py PLAN OUT1 [OUT2 ...] (empty shards are
written empty)."""
import sys
from collections import OrderedDict


def shard(lines, count):
    groups = OrderedDict()
    for line in lines:
        fields = line.split()
        nic = fields[2] if len(fields) > 2 else "netdevsim"
        groups.setdefault(nic, []).append((line, int(fields[1])))
    loads, members = [0] * count, [set() for _ in range(count)]
    for nic in sorted(groups, key=lambda n: -sum(limit for _, limit in groups[n])):
        least = loads.index(min(loads))
        loads[least] += sum(limit for _, limit in groups[nic])
        members[least].add(nic)
    out = [[] for _ in range(count)]
    for line in lines:
        fields = line.split()
        nic = fields[2] if len(fields) > 2 else "netdevsim"
        out[next(i for i in range(count) if nic in members[i])].append(line)
    return out


def main():
    plan, outs = sys.argv[1], sys.argv[2:]
    with open(plan) as fp:
        lines = [line.rstrip("\n") for line in fp if line.strip()]
    for path, part in zip(outs, shard(lines, len(outs))):
        with open(path, "w") as fp:
            fp.write("".join(line + "\n" for line in part))


if __name__ == "__main__":
    main()
