#!/usr/bin/env python3
"""After a VM ran DIR/plan: print the entries it never reached (a kernel
crash or a hang ended it early) and cut DIR/plan to those it ran or died
in, so that the report counts each entry once, in the VM that tried it.
The guest runs the plan in order and writes a result line per entry, so
the entries tried are the first as many as there are result lines, and
the next one if the VM died in it: current-test names it, or, when the
VM died between two tests (setting up the next NIC), nobody does and
it is named here, so that the report blames the entry it died before.
Exit 1 if the VM tried none (it did not boot or died before its first
test): booting again would go no further. usage: plan-rest.py DIR"""
import os
import sys


def entry_id(line):
    fields = line.split()
    return fields[0] + (f"@{fields[2]}" if len(fields) > 2 else "")


def read(path):
    with open(path) as fp:
        return fp.read()


def main(vmdir):
    plan = [line for line in read(os.path.join(vmdir, "plan")).splitlines() if line.strip()]
    results = os.path.join(vmdir, "guest-results.jsonl")
    done = len(read(results).splitlines()) if os.path.exists(results) else 0
    tried = done
    if done < len(plan) and not os.path.exists(os.path.join(vmdir, "guest-finished")):
        current = os.path.join(vmdir, "current-test")
        if done or os.path.exists(current):
            # It died in the next entry or before it: that entry's failure.
            with open(current, "w") as fp:
                fp.write(entry_id(plan[done]) + "\n")
            tried = done + 1
    if not tried:
        return 1
    with open(os.path.join(vmdir, "plan"), "w") as fp:
        fp.write("".join(f"{line}\n" for line in plan[:tried]))
    sys.stdout.write("".join(f"{line}\n" for line in plan[tried:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
