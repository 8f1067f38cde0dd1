#!/usr/bin/env python3
"""Find kernel splats in a dmesg/console log.

Any match fails a test run even when every test passed. Exit status:
0 no splat, 1 splats found (JSON list on stdout), 2 cannot scan.
"""
import json
import re
import sys

# One pattern per kind of report the debug kernel can produce.
SPLAT_PATTERNS = [
    # Specific reports first: the first match names the line's kind.
    ("kfence", r"BUG: KFENCE: "),
    ("kasan", r"BUG: KASAN: "),
    ("lockdep", r"WARNING: possible (circular|recursive) locking|"
                r"inconsistent lock state|suspicious RCU usage|"
                r"WARNING: bad unlock balance|held lock freed"),
    ("atomic_sleep", r"BUG: sleeping function called from invalid context|"
                     r"BUG: scheduling while atomic"),
    ("rcu_stall", r"rcu: INFO: .* detected (expedited )?stalls|"
                  r"rcu_(sched|preempt) self-detected stall|"
                  r"RCU Tasks( Trace)?: .* stall"),
    ("hung_task", r"INFO: task .* blocked for more than \d+ seconds"),
    ("soft_lockup", r"watchdog: BUG: soft lockup|hard LOCKUP"),
    ("ubsan", r"UBSAN: "),
    ("leak", r"unreferenced object 0x"),
    ("softirq_pending", r"NOHZ tick-stop error"),
    # A stuck TX queue: netdev_crit(), no WARNING, yet traffic is lost.
    ("tx_timeout", r"NETDEV WATCHDOG: .*transmit queue \d+ timed out"),
    ("oops", r"\bOops: |general protection fault|Kernel panic - not syncing"),
    ("bug", r"\bBUG: |kernel BUG at "),
    ("warning", r"WARNING: .* at |------------\[ cut here \]------------"),
]
COMPILED = [(kind, re.compile(rx)) for kind, rx in SPLAT_PATTERNS]


def scan(text):
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for kind, rx in COMPILED:
            if rx.search(line):
                found.append({"kind": kind, "line": lineno,
                              "text": line.strip()[:300]})
                break
    return found


def main():
    try:
        with open(sys.argv[1], errors="replace") as fp:
            text = fp.read()
    except (IndexError, OSError) as e:
        print(json.dumps({"error": str(e)}))
        return 2
    splats = scan(text)
    print(json.dumps(splats, indent=1))
    return 1 if splats else 0


if __name__ == "__main__":
    sys.exit(main())
