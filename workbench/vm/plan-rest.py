#!/usr/bin/env python3
"""After a VM ran DIR/plan: print the entries it never reached (a kernel
crash or a hang ended it early) and cut DIR/plan to those it ran or died
in, so that the report counts each entry once, in the VM that tried it.
Exit 1 if the VM tried none (it did not boot or died before its first
test): booting again would go no further. usage: plan_rest.py DIR"""
import json
import os
import sys


def entry_id(line):
    fields = line.split()
    return fields[0] + (f"@{fields[2]}" if len(fields) > 2 else "")


def main(vmdir):
    with open(os.path.join(vmdir, "plan")) as fp:
        plan = [line for line in fp.read().splitlines() if line.strip()]
    tried = set()
    results = os.path.join(vmdir, "guest-results.jsonl")
    if os.path.exists(results):
        with open(results) as fp:
            tried |= {json.loads(line)["test"] for line in fp if line.strip()}
    current = os.path.join(vmdir, "current-test")
    if os.path.exists(current):
        with open(current) as fp:
            tried.add(fp.read().strip())
    ran = [line for line in plan if entry_id(line) in tried]
    if not ran:
        return 1
    last = plan.index(ran[-1])
    with open(os.path.join(vmdir, "plan"), "w") as fp:
        fp.write("".join(f"{line}\n" for line in plan[:last + 1]))
    sys.stdout.write("".join(f"{line}\n" for line in plan[last + 1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
