#!/usr/bin/env python3
"""The driver-pattern table of docs/testing.md, generated from the base's
audit (docs/napi-audit.json, written by tools/napi-audit.py --json) and
the prose the audit cannot compute (docs/patterns.tsv: per pattern, the
series' behaviour in each NAPI mode and what tests it; also the rows of
patterns the audit does not count).

pattern-table.py            print the table
pattern-table.py --write F  replace the table between F's markers

Per pattern: its drivers' count and names (the module's name), those of
the NIC matrix (in F or docs/testing.md) first and in bold, at most
SHOWN names. Every audited pattern but napi-enable (the sentence above
the table) needs a row in patterns.tsv, and every row an audited pattern
or the id "-".
"""
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_tables  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
AUDIT = os.path.join(TOP, "docs", "napi-audit.json")
PROSE = os.path.join(TOP, "docs", "patterns.tsv")
TESTING = os.path.join(TOP, "docs", "testing.md")
BEGIN = "<!-- napi-audit.json, patterns.tsv: begin (workbench/report/pattern-table.py --write) -->"
END = "<!-- napi-audit.json, patterns.tsv: end -->"
SHOWN = 8
HEADER = ["pattern", "drivers", "interrupts, threaded", "threaded busy poll",
          "IRQ suspension", "tested by"]
MODES = ["interrupts_threaded", "threaded_busy_poll", "irq_suspension", "tested_by"]


def read_prose(path=PROSE):
    """The rows of patterns.tsv as dicts, comments skipped."""
    with open(path) as fp:
        lines = [line for line in fp if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_audit(path=AUDIT):
    with open(path) as fp:
        return json.load(fp)


def matrix_drivers(doc_text):
    """The drivers of the NIC matrix: the first name in parentheses of
    each row ('`igb` (igb, 82576)'), else the row's name (netdevsim)."""
    rows = re.search(r"^\| NIC \(driver\) \|.*\n\|[-|]+\|\n((?:\|.*\n)*)", doc_text, re.M)
    if not rows:
        sys.exit("no NIC matrix ('| NIC (driver) |' table) to mark drivers with")
    cells = [line.split("|")[1].strip() for line in rows[1].splitlines()]
    return {(re.search(r"\((\w[\w-]*)", c) or re.search(r"(\w[\w-]*)", c))[1] for c in cells}


def module(driver):
    """A driver's module name: net/ethernet/intel/e1000e/ -> e1000e."""
    return os.path.basename(driver.rstrip("/")).removesuffix(".c")


def drivers_cell(pattern, note, marked):
    names = [module(d) for d in pattern["drivers"]]
    first = [n for n in names if n in marked] + [n for n in names if n not in marked]
    shown = [f"**{n}**" if n in marked else n for n in first[:SHOWN]]
    cell = str(pattern["count"])
    if shown:
        cell += ": " + ", ".join(shown) + (", ..." if len(first) > SHOWN else "")
    return f"{cell}; {note}" if note else cell


def check_rows(audit, prose):
    audited = {p["id"] for p in audit["patterns"]} - {"napi-enable"}
    described = [row["id"] for row in prose if row["id"] != "-"]
    problems = [f"{pid}: no row in patterns.tsv" for pid in sorted(audited - set(described))]
    problems += [f"{pid}: not an audited pattern" for pid in sorted(set(described) - audited)]
    problems += [f"{pid}: more than one row" for pid in sorted(set(described))
                 if described.count(pid) > 1]
    if problems:
        sys.exit("pattern-table: " + "; ".join(problems))


def render(audit, prose, marked):
    check_rows(audit, prose)
    patterns = {p["id"]: p for p in audit["patterns"]}
    enable = patterns["napi-enable"]
    out = [f"In `{audit['source']}`, {enable['count']} drivers call `napi_enable()`.", "",
           f"| {' | '.join(HEADER)} |", "|" + "---|" * len(HEADER)]
    for row in prose:
        if row["id"] == "-":  # not counted by the audit: prose only
            name, drivers = row["pattern"], row["drivers"]
        else:
            name = f"{row['pattern']} (`{row['id']}`)"
            drivers = drivers_cell(patterns[row["id"]], row["drivers"], marked)
        out.append(f"| {name} | {drivers} | " + " | ".join(row[m] for m in MODES) + " |")
    return "\n".join(out) + "\n"


def table_in(text):
    """The part of TEXT between the markers (None if it has none)."""
    return doc_tables.table_in(text, BEGIN, END)


def doc_table(doc_text, audit_path=AUDIT, prose_path=PROSE):
    """The table for a doc whose NIC matrix marks the drivers."""
    return render(read_audit(audit_path), read_prose(prose_path), matrix_drivers(doc_text))


def main(argv):
    if argv[1:2] == ["--write"] and len(argv) == 3:
        doc_tables.write_table(argv[2], BEGIN, END, doc_table)
    elif len(argv) == 1:
        with open(TESTING) as fp:
            sys.stdout.write(doc_table(fp.read()))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
