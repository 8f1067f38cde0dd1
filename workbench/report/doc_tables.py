"""Tables generated into a document between two marker comments
(settings-table.py, pattern-table.py)."""
import sys


def table_in(text, begin, end):
    """The part of TEXT between the markers (None if it has none)."""
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0].lstrip("\n")


def write_table(path, begin, end, render):
    """Replace the table between PATH's markers with render(PATH's text)."""
    with open(path) as fp:
        text = fp.read()
    if table_in(text, begin, end) is None:
        sys.exit(f"{path}: no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as fp:
        fp.write(f"{head}{begin}\n{render(text)}{end}{tail}")
