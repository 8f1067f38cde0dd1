"""README.md and docs/ against the tree: the figures and tables they
state that the tree can check (patch count, topics, subsets, NIC matrix),
their length budgets, and no run-log references (nor in the code)."""
import glob
import os
import re

import pytest

TOP = os.path.join(os.path.dirname(__file__), "..")
README = os.path.join(TOP, "README.md")
DOCS = sorted(glob.glob(os.path.join(TOP, "docs", "*.md")))


def read(path):
    with open(path) as fp:
        return fp.read()


def entries(path):
    """The entries of a workbench list file, comments and blanks dropped."""
    return [line.split("#")[0].split() for line in read(path).splitlines()
            if line.split("#")[0].strip()]


def topics():
    return sorted(os.path.basename(d) for d in glob.glob(os.path.join(TOP, "patches", "[0-9]*"))
                  if os.path.isdir(d))


def patches(topic="*"):
    return [p for p in glob.glob(os.path.join(TOP, "patches", topic, "[0-9]*.patch"))
            if not p.endswith("/0000-cover-letter.patch")]


def table(text, first_header):
    """The rows (lists of cells) of the markdown table whose header's
    first cell is FIRST_HEADER."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return cells, rows
    raise AssertionError(f"no table headed {first_header!r}")


def test_patch_count_is_the_patches_present():
    """Every 'N patches' the README states is the number of patch files
    (the cover letters not counted), also patches/series' count."""
    count = len(patches())
    listed = [e for e in entries(os.path.join(TOP, "patches", "series"))]
    assert len(listed) == count
    stated = re.findall(r"(\d+) patches\b", read(README))
    assert stated and set(stated) == {str(count)}, (stated, count)


def test_topic_table_lists_every_topic_folder():
    header, rows = table(read(README), "topic")
    assert "upstream" in header
    assert [row[0].strip("`") for row in rows] == topics()
    counts = {row[0].strip("`"): row[header.index("patches")] for row in rows}
    assert counts == {t: str(len(patches(t))) for t in topics()}


def test_subset_table_matches_subsets_list():
    """One row per topic, naming the selftests subsets.list gives it."""
    _, rows = table(read(README), "subset up to")
    assert [row[0].strip("`") for row in rows] == topics()
    wanted = {}
    for topic, test, *_ in entries(os.path.join(TOP, "workbench", "data", "subsets.list")):
        wanted.setdefault(topic, set()).add(test.split(":")[1])
    for row in rows:
        named = set(re.findall(r"`([\w.]+\.(?:py|sh))`", row[2]))
        own = wanted.get(row[0].strip("`"), set())
        assert own <= named and (own or not named or "none" in row[2]), row


def nic_matrix():
    """The NIC matrix of the docs: {(test, NIC)} marked yes."""
    for path in DOCS:
        text = read(path)
        if "| NIC (driver) |" in text:
            header, rows = table(text, "NIC (driver)")
            tests = [h.strip("`") for h in header[1:]]
            marked = set()
            for row in rows:
                nic = re.match(r"`?([\w]+)`?", row[0])[1]
                marked |= {(t, nic) for t, cell in zip(tests, row[1:]) if cell == "yes"}
            return marked
    raise AssertionError("no NIC matrix in docs/")


def test_nic_matrix_has_every_entry_of_selftests_list():
    """Each drivers/net entry of selftests.list (no NIC: netdevsim) is a
    'yes' of the matrix, and the matrix marks nothing else."""
    planned = set()
    for name, _, *rest in entries(os.path.join(TOP, "workbench", "data", "selftests.list")):
        collection, test = name.split(":")
        if collection != "drivers/net":
            continue
        nic = rest[0] if rest and "=" not in rest[0] else "netdevsim"
        planned.add((test.rsplit(".", 1)[0], nic))
    assert nic_matrix() == planned


def test_readme_within_250_lines():
    assert len(read(README).splitlines()) <= 250


@pytest.mark.parametrize("path", DOCS, ids=os.path.basename)
def test_doc_within_its_budget(path):
    text = read(path)
    budget = re.match(r"<!-- budget: (\d+) lines -->", text)
    assert budget, f"{path}: no '<!-- budget: N lines -->' on its first line"
    assert len(text.splitlines()) <= int(budget[1])


@pytest.mark.parametrize("path", [README, os.path.join(TOP, "CHANGELOG.md"), *DOCS],
                         ids=os.path.basename)
def test_no_run_log_references(path):
    found = re.findall(r"\b(?:issue|stop) \d+", read(path), re.I)
    assert not found, found


# The code, and the bench.md and reports it writes, say the reason, not
# the tracker entry it came from.
CODE = sorted(path for part in ("workbench", "bench", "tools")
              for path in glob.glob(os.path.join(TOP, part, "**", "*"), recursive=True)
              if path.endswith((".py", ".sh", ".c", ".h", ".bt", "Makefile", "napictl")))


@pytest.mark.parametrize("path", CODE, ids=lambda path: os.path.relpath(path, TOP))
def test_no_issue_references_in_code(path):
    found = re.findall(r"\bissues? \d+", read(path), re.I)
    assert not found, found
