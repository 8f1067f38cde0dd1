#!/usr/bin/env python3
"""Turn the raw outputs of a 'make test' run into per-test results.

Reads build/results/test/vm, vm2, ... (each VM's plan, TAP, dmesg,
guest-results.jsonl, console.log) and any extra result lists (static
checks, unit tests), writes summary.json, prints one line per test and
the closing 'N passed, N failed, N skipped'.
Exit status 1 on any failure or kernel splat.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import splat  # noqa: E402
import tap  # noqa: E402


def read_entries(path, fields):
    """The entries of a list file (the plan, known-failures.txt), comments
    and blank lines stripped, each split into at most FIELDS fields."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as fp:
        lines = [line.split("#", 1)[0].strip() for line in fp]
    return [line.split(None, fields - 1) for line in lines if line]


def load_jsonl(path):
    if not os.path.exists(path):
        return {}
    with open(path) as fp:
        return {r["test"]: r for r in map(json.loads, filter(str.strip, fp))}


def read(path):
    with open(path, errors="replace") as fp:
        return fp.read()


# A failed case's diagnostic lines in the report, cut to this width.
DIAGNOSTIC_WIDTH = 160

WARN_AT = re.compile(r" at ([\w./-]+\.[ch]):(\d+)")


def blame(tree, splats):
    """Name the series patch that wrote the line a WARNING/BUG points at."""
    for sp in splats:
        m = WARN_AT.search(sp["text"])
        if not tree or not m:
            continue
        path, line = m.group(1), m.group(2)
        # O= builds print paths like ../src/net/core/dev.c
        while path.startswith("../") and path.count("/") >= 2:
            path = path.split("/", 2)[2]
        out = subprocess.run(["git", "-C", tree, "blame", "--porcelain", "-L",
                              f"{line},{line}", "--", path],
                             capture_output=True, text=True, check=False)
        if out.returncode or not out.stdout:
            continue
        sha = out.stdout.split()[0]
        subject = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%s", sha],
                                 capture_output=True, text=True, check=False).stdout.strip()
        if subject and not subject.startswith("base:"):
            sp["patch"] = subject


def read_known_failures(path):
    return {(test, case): reason for test, case, reason in read_entries(path, 3)}


def apply_known_failures(res, known):
    """A selftest failing only in known cases is an expected failure."""
    failed = [c for c in res["cases"] if c["status"] == "fail"]
    if res["status"] != "fail" or res["splats"] or not failed:
        return
    reasons = [known.get((res["name"], c["name"])) for c in failed]
    if all(reasons):
        res["status"] = "xfail"
        res["reason"] = "known: " + "; ".join(reasons)


def most_telling(splats):
    """The splat to quote: one blamed on a patch, else one naming a place."""
    for sp in splats:
        if sp.get("patch"):
            return sp
    for sp in splats:
        if WARN_AT.search(sp["text"]):
            return sp
    return splats[0]


# Of a test that reached its time limit: the blocked tasks, each with its
# innermost kernel frames, in the report.
STACK_FRAMES = 6
STACK_TASKS = 4


def blocked_stacks(text):
    """The first STACK_TASKS tasks in D state of a .stacks file (written by
    guest-run-tests.sh at a test's time limit), each with its innermost
    STACK_FRAMES frames."""
    out, tasks = [], 0
    for block in text.split("\n== ")[1:]:
        head, *frames = block.splitlines()
        if head.split()[1:2] != ["D"] or tasks == STACK_TASKS:
            continue
        tasks += 1
        out.append(f"blocked: {head}")
        out += [f"  {f.split('] ', 1)[-1]}" for f in frames[:STACK_FRAMES]]
    return out


def vm_dirs(results):
    """The VMs' result folders (test.sh: vm/, vm2/, ...), in order."""
    found = [d for d in os.listdir(results) if re.fullmatch(r"vm\d*", d)
             and os.path.isdir(os.path.join(results, d))]
    return [os.path.join(results, d) for d in sorted(found, key=lambda d: int(d[2:] or 1))]


def vm_results(vmdir, tree=None, known=None, cuts_allowed=False):
    """Results of the tests in VMDIR/plan (written by test.sh, run by
    guest-run-tests.sh): one line per test, its name and time limit. An
    entry the budget left out fails unless CUTS_ALLOWED (the caller asked
    for the cut, MAKE_TEST_CUTS=1): then it is a skip."""
    # A test run on a real NIC (third field) is its own entry, TEST@NIC.
    # Further fields are the entry's VAR=VALUE settings.
    tests = [e[0] + (f"@{e[2].split()[0]}" if len(e) > 2 else "")
             for e in read_entries(os.path.join(vmdir, "plan"), 3)]
    guest = load_jsonl(os.path.join(vmdir, "guest-results.jsonl"))
    current = os.path.join(vmdir, "current-test")
    died_in = read(current).strip() if os.path.exists(current) else None
    console = os.path.join(vmdir, "console.log")
    console_splats = splat.scan(read(console)) if os.path.exists(console) else []
    blame(tree, console_splats)
    accel = read(os.path.join(vmdir, "accel")).strip() \
        if os.path.exists(os.path.join(vmdir, "accel")) else "unknown"
    results = []
    for name in tests:
        base = os.path.join(vmdir, "tests", re.sub(r"[:/@]", "_", name))
        res = {"name": name, "kind": "selftest", "status": "fail", "reason": None,
               "cases": [], "splats": [], "seconds": None}
        results.append(res)
        if name not in guest:
            if name == died_in:
                res["reason"] = "VM died during this test"
                res["splats"] = console_splats
                if console_splats:
                    first = most_telling(console_splats)
                    res["reason"] += f": kernel {first['kind']}: {first['text']}"
                    if "int3" in first["text"]:
                        res["reason"] += (" (an int3 trap under multi-threaded TCG is"
                                          " usually code patching racing the emulator;"
                                          " VM_TCG_THREAD=single avoids it)")
            else:
                res["reason"] = "not run (VM stopped before it)"
            continue
        if guest[name].get("budget") is not None:
            # A test the budget left out was not run: a run that passes
            # without it hides it, unless the caller asked for cuts.
            res["status"] = "skip" if cuts_allowed else "fail"
            res["reason"] = (f"not run: its {guest[name]['timeout']}s limit exceeded the "
                             f"{guest[name].get('left', 0)}s left of the selftests' "
                             f"{guest[name]['budget']}s (MAKE_TEST_BUDGET"
                             + (", cut as MAKE_TEST_CUTS=1 asked)" if cuts_allowed else
                                "; MAKE_TEST_CUTS=1 accepts the cut)"))
            continue
        res["seconds"] = guest[name]["seconds"]
        if os.path.exists(base + ".stacks"):
            res["stacks"] = blocked_stacks(read(base + ".stacks"))
        tops = tap.parse(read(base + ".tap")) if os.path.exists(base + ".tap") else []
        if tops:
            top = tops[-1]
            res["status"] = top["status"]
            res["reason"] = top["reason"]
            res["cases"] = [c for t in tops for c in t["cases"]]
            failed = [c["name"] for c in res["cases"] if c["status"] == "fail"]
            if failed and res["status"] != "fail":
                # e.g. a failed check followed by a SKIP, which ksft.py
                # counts as a skip and exits 0 on.
                res["status"] = "fail"
                res["reason"] = f"failed case {failed[0]} although the test exited {top['status']}"
        else:
            res["reason"] = f"no TAP result (rc {guest[name]['rc']})"
        if not os.path.exists(base + ".dmesg"):
            res["status"] = "fail"
            res["reason"] = "kernel log missing, splat scan impossible"
            continue
        if guest[name].get("retried"):
            # Said, not hidden: the entry ran twice, this is the second run.
            res["retried"] = True
            res["reason"] = "; ".join(filter(None, [
                res["reason"], f"second run: the first failed because {guest[name]['retried']}"
                f" (output in {os.path.basename(base)}.try1.tap)"]))
        res["splats"] = splat.scan(read(base + ".dmesg"))
        blame(tree, res["splats"])
        apply_known_failures(res, known or {})
        if res["splats"]:
            res["status"] = "fail"
            first = most_telling(res["splats"])
            res["reason"] = f"kernel {first['kind']}: {first['text']}"
            if first.get("patch"):
                res["reason"] += f" (line from patch '{first['patch']}')"
    # A crash outside any test (boot, between tests) still fails the run.
    if console_splats and not any(r["splats"] for r in results):
        first = console_splats[0]
        results.append({"name": "vm:console", "kind": "vm", "status": "fail",
                        "reason": f"kernel {first['kind']} on the console: {first['text']}",
                        "cases": [], "splats": console_splats, "seconds": None})
    return results, accel


def extra_results(spec):
    """The result list another step wrote, given as STEP=PATH. A step that
    wrote no file died before finishing: that is a failure, named."""
    step, sep, path = spec.partition("=")
    if not sep:
        step, path = os.path.basename(spec), spec
    if os.path.exists(path):
        with open(path) as fp:
            return json.load(fp)
    return [{"name": step, "kind": "workbench", "status": "fail",
             "reason": f"no {os.path.basename(path)}: {step} died before writing its"
                       f" results (see {os.path.join(os.path.dirname(path), step + '.log')})"}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--known-failures", default=None)
    ap.add_argument("--base", default=None, help="the base the series was tested on")
    ap.add_argument("--tree", default=None,
                    help="git tree of the tested kernel, to name the patch behind a splat")
    ap.add_argument("--extra", action="append", default=[], metavar="STEP=PATH",
                    help="JSON list of results of a step; a missing file fails STEP")
    ap.add_argument("--cuts-allowed", action="store_true",
                    help="selftests the budget left out are skips, not failures")
    args = ap.parse_args()

    if args.base:
        print(f"Base: {args.base}")
    results = []
    for spec in args.extra:
        results.extend(extra_results(spec))
    accel = None
    for vmdir in vm_dirs(args.results):
        vm, vm_accel = vm_results(vmdir, args.tree, read_known_failures(args.known_failures),
                                  args.cuts_allowed)
        accel = accel or vm_accel
        results.extend(vm)

    for r in results:
        secs = f" ({r['seconds']:.0f}s)" if r.get("seconds") is not None else ""
        ncases = len(r.get("cases", []))
        cases = f" [{ncases} cases]" if ncases else ""
        shown = r.get("reason") and (r["status"] != "pass" or r.get("retried"))
        reason = f" - {r['reason']}" if shown else ""
        print(f"{r['status'].upper():5} {r['name']}{cases}{secs}{reason}")
        for c in r.get("cases", []):
            if c["status"] == "fail":
                print(f"      not ok: {c['name']}")
                for line in c.get("diagnostics", []):
                    print(f"        | {line[:DIAGNOSTIC_WIDTH]}")
        if r["status"] == "fail":
            for line in r.get("stacks", []):
                print(f"      {line[:DIAGNOSTIC_WIDTH]}")

    counts = {s: sum(r["status"] == s for r in results) for s in ("pass", "fail", "skip", "xfail")}
    summary = {"base": args.base, "accel": accel, "counts": counts, "results": results}
    with open(os.path.join(args.results, "summary.json"), "w") as fp:
        json.dump(summary, fp, indent=1)
    if accel:
        print(f"(VM accelerator: {accel})")
    if counts["xfail"]:
        names = ", ".join(r["name"] for r in results if r["status"] == "xfail")
        print(f"{counts['xfail']} expected failures (XFAIL, not counted as passed): {names}")
    unrun = [r["name"] for r in results if "MAKE_TEST_BUDGET" in (r.get("reason") or "")]
    if unrun:
        verdict = "skipped, as MAKE_TEST_CUTS=1 asked" if args.cuts_allowed else "failed"
        print(f"{len(unrun)} selftests not run, cut by MAKE_TEST_BUDGET ({verdict}): "
              f"{', '.join(unrun)}")
    print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] or not results else 0


if __name__ == "__main__":
    sys.exit(main())
