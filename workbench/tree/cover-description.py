#!/usr/bin/env python3
"""Turn the headers+body of 0000-cover-letter.patch (stdin) back into the
branch description format-patch --cover-from-description=subject reads:
subject line, blank line, body up to the shortlog."""
import re
import sys


def main():
    text = sys.stdin.read()
    if not text.strip():
        return
    head, _, body = text.partition("\n\n")
    subject = re.search(r"^Subject: (.*(?:\n .*)*)", head, re.M)
    subj = re.sub(r"\s*\n\s*", " ", subject.group(1)) if subject else ""
    subj = re.sub(r"^\[[^]]*\]\s*", "", subj)
    lines = []
    for line in body.splitlines():
        # The shortlog ("Author Name (N):") starts the generated part.
        if re.match(r"^\S.* \(\d+\):$", line):
            break
        lines.append(line)
    print(subj + "\n\n" + "\n".join(lines).strip())


if __name__ == "__main__":
    main()
