#!/usr/bin/env python3
"""Every patch of the series says where it comes from, stable style: the
first paragraph after the subject is its provenance statement, and the
message has no other.

  commit <sha> upstream.          a backport of mainline work: one line
  [ Upstream commit <sha> ]       per upstream commit, 12 to 40 hex digits
  Not upstream: <why>             no upstream counterpart, and why

A "Differences from upstream:" paragraph may follow a backport's lines;
docs/upstream-provenance.md is the evidence for the shas. The patches are
those PATCHES/series lists; cover letters are not in it and are exempt.

usage: check-provenance.py PATCHES
Exit 1 with a summary line first, then one line per failing patch.
"""
import os
import re
import sys

UPSTREAM = re.compile(r"^(?:commit [0-9a-f]{12,40} upstream\.|\[ Upstream commit [0-9a-f]{12,40} \])$")
NOT_UPSTREAM = re.compile(r"^Not upstream: \S")
# Any line that reads as a provenance statement, well formed or not.
STATEMENT = re.compile(r"^(?:commit [0-9a-f]{7,} upstream|\[ Upstream commit |Not upstream:)", re.I)
FORMS = "'commit <sha> upstream.', '[ Upstream commit <sha> ]' or 'Not upstream: <why>'"


def series_entries(patches):
    with open(os.path.join(patches, "series")) as fp:
        return [line.split("#")[0].strip() for line in fp if line.split("#")[0].strip()]


def message_paragraphs(text):
    """The paragraphs of a format-patch file's commit message after the
    subject: the body up to the '---' line, split at blank lines."""
    body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    lines = []
    for line in body.splitlines():
        if line == "---" or line.startswith("diff --git "):
            break
        lines.append(line)
    paragraphs, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    # An in-body From: (format-patch --from) is not part of the message.
    if paragraphs and len(paragraphs[0]) == 1 and paragraphs[0][0].startswith("From: "):
        paragraphs = paragraphs[1:]
    return paragraphs


def problem(text):
    """Why the patch TEXT has no proper provenance statement, or None."""
    paragraphs = message_paragraphs(text)
    if not paragraphs:
        return f"no commit message; it must start with {FORMS}"
    first, rest = paragraphs[0], paragraphs[1:]
    if all(UPSTREAM.match(line) for line in first):
        kind = "upstream"
    elif NOT_UPSTREAM.match(first[0]) and not any(STATEMENT.match(line) for line in first[1:]):
        kind = "not upstream"
    else:
        return f"the first paragraph after the subject is not a provenance statement ({FORMS})"
    others = [line for paragraph in rest for line in paragraph if STATEMENT.match(line)]
    if others:
        return f"a second provenance statement after the {kind} one: {others[0]!r}"
    return None


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: check-provenance.py PATCHES")
    patches = argv[1]
    names = [n for n in series_entries(patches) if os.path.basename(n) != "0000-cover-letter.patch"]
    failures = []
    for name in names:
        path = os.path.join(patches, name)
        if not os.path.exists(path):
            failures.append(f"{name}: listed in series but missing")
            continue
        with open(path, encoding="utf-8", errors="replace") as fp:
            why = problem(fp.read())
        if why:
            failures.append(f"{name}: {why}")
    if failures:
        print(f"{len(failures)} of {len(names)} patches lack a provenance statement, "
              f"first {failures[0].split(':')[0]}")
        print("\n".join(failures))
        return 1
    print(f"{len(names)} patches, each with one provenance statement")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
