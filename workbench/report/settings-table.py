#!/usr/bin/env python3
"""The environment-variable table of docs/workbench.md, rendered from
workbench/data/settings.tsv (the one place the variables are described).

settings-table.py            print the table
settings-table.py --write F  replace the table between F's markers
"""
import csv
import os
import sys

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
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def main(argv):
    table = render(read_settings())
    if argv[1:2] == ["--write"] and len(argv) == 3:
        with open(argv[2]) as fp:
            text = fp.read()
        if table_in(text) is None:
            sys.exit(f"{argv[2]}: no {BEGIN} ... {END} markers")
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(argv[2], "w") as fp:
            fp.write(f"{head}{BEGIN}\n{table}{END}{tail}")
    elif len(argv) == 1:
        sys.stdout.write(table)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
