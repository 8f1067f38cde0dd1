#!/usr/bin/env python3
"""Parse (nested) TAP/KTAP as printed by kselftest's run_kselftest.sh.

Each nesting level is prefixed by "# " (and runner indentation). Returns
the top-level results and, for each, the sub-test results that precede it.
"""
import json
import re
import sys

RESULT_RE = re.compile(
    r"^(?P<ok>ok|not ok)\s+(?P<num>\d+)\s*-?\s*(?P<desc>[^#]*?)\s*"
    r"(?:#\s*(?P<directive>\w+)\b\s*(?P<reason>.*))?$")


DIRECTIVES = {"SKIP", "TODO", "XFAIL", "TIMEOUT"}


def _level(line):
    """Strip nesting prefixes; return (depth, content)."""
    depth = 0
    while True:
        stripped = line.lstrip(" ")
        if stripped.startswith("# ") or stripped == "#":
            line = stripped[2:]
            depth += 1
            continue
        return depth, stripped


# What kselftest's ksft.py prints when a check fails. A case may go on
# after it and end in a SKIP or XFAIL; the failed check still counts.
CHECK_FAILED_RE = re.compile(r"^Check failed\b")


def classify(ok, directive, check_failed=False):
    """A result's status. "not ok" with SKIP, or a failed check before a
    SKIP or XFAIL, is a failure: a case that found a bug and then raised
    a skip (a precondition checked too late) must not hide it. Expected
    failures are the report's to excuse (known-failures.txt)."""
    directive = (directive or "").upper()
    if check_failed and directive in ("SKIP", "XFAIL", "TODO"):
        return "fail"
    if directive == "SKIP":
        return "skip" if ok else "fail"
    if directive in ("XFAIL", "TODO") and not ok:
        return "xfail"
    if directive == "TIMEOUT":
        return "fail"
    return "pass" if ok else "fail"


# Diagnostic lines kept per sub-result: a failed check's location and
# verdict, or the end of a traceback.
DIAGNOSTICS_KEPT = 3


def parse(text):
    """Return a list of top-level results, each with its sub-results.
    A sub-result carries the last DIAGNOSTICS_KEPT diagnostic lines
    printed since the previous one."""
    tops = []
    pending = []
    notes = []
    check_failed = False
    for raw in text.splitlines():
        depth, content = _level(raw.rstrip("\n"))
        m = RESULT_RE.match(content)
        if not m:
            if depth >= 2 and content.strip():
                notes = (notes + [content.strip()])[-DIAGNOSTICS_KEPT:]
                check_failed = check_failed or bool(CHECK_FAILED_RE.match(content.strip()))
            continue
        ok = m.group("ok") == "ok"
        directive = (m.group("directive") or "").upper()
        reason = (m.group("reason") or "").strip()
        if directive not in DIRECTIVES:
            # A plain comment, e.g. "# exit=1".
            reason = ((m.group("directive") or "") + reason).strip()
            directive = ""
        res = {
            "name": m.group("desc").strip(),
            "number": int(m.group("num")),
            "status": classify(ok, directive, check_failed and depth == 1),
            "directive": directive or None,
            "reason": reason or None,
        }
        if depth == 0:
            res["cases"] = pending
            pending = []
            tops.append(res)
        elif depth == 1:
            res["diagnostics"] = notes
            pending.append(res)
        notes = []
        check_failed = False
    if pending:
        # Sub-results with no closing top-level line: the runner died.
        tops.append({"name": None, "number": None, "status": "fail",
                     "directive": None, "reason": "no top-level result",
                     "cases": pending})
    return tops


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    json.dump(parse(text), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
