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


def classify(ok, directive):
    directive = (directive or "").upper()
    if directive == "SKIP":
        return "skip"
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
    for raw in text.splitlines():
        depth, content = _level(raw.rstrip("\n"))
        m = RESULT_RE.match(content)
        if not m:
            if depth >= 2 and content.strip():
                notes = (notes + [content.strip()])[-DIAGNOSTICS_KEPT:]
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
            "status": classify(ok, directive),
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
