#!/usr/bin/env python3
"""The environment-variable table of docs/workbench.md, rendered from
workbench/data/settings.tsv (the one place the variables are described).

settings-table.py            print the table
settings-table.py --write F  replace the table between F's markers
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_tables  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SETTINGS = os.path.join(TOP, "workbench", "data", "settings.tsv")
BEGIN = "<!-- settings.tsv: begin (workbench/report/settings-table.py --write) -->"
END = "<!-- settings.tsv: end -->"


def read_settings(path=SETTINGS):
    """The rows of settings.tsv as dicts, comments skipped."""
    with open(path) as fp:
        lines = [line for line in fp if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def render(rows):
    out = ["| variable | default | read by | effect |", "|---|---|---|---|"]
    for row in rows:
        where = ", ".join(f"`{path}`" for path in row["read_by"].split())
        out.append(f"| `{row['name']}` | {row['default']} | {where} | {row['meaning']} |")
    return "\n".join(out) + "\n"


def table_in(text):
    """The part of TEXT between the markers (None if it has none)."""
    return doc_tables.table_in(text, BEGIN, END)


def main(argv):
    table = render(read_settings())
    if argv[1:2] == ["--write"] and len(argv) == 3:
        doc_tables.write_table(argv[2], BEGIN, END, lambda _: table)
    elif len(argv) == 1:
        sys.stdout.write(table)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
