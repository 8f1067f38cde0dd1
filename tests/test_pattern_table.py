"""workbench/report/pattern-table.py: docs/testing.md's driver-pattern
table is the one generated from docs/napi-audit.json (the base's audit,
which make test checks its own against) and docs/patterns.tsv (the prose),
and that audit has the patterns tools/napi-audit.py audits."""
import os

import pytest

from conftest import TOP, load_script

table = load_script("pattern_table", os.path.join(TOP, "workbench", "report", "pattern-table.py"))
napi_audit = load_script("napi_audit", os.path.join(TOP, "tools", "napi-audit.py"))
TESTING = os.path.join(TOP, "docs", "testing.md")


def read(path):
    with open(path) as fp:
        return fp.read()


def test_docs_table_is_generated_from_the_committed_audit():
    doc = read(TESTING)
    assert table.table_in(doc) == table.doc_table(doc), \
        "run workbench/report/pattern-table.py --write docs/testing.md (or make docs)"


def test_committed_audit_has_the_tools_patterns():
    """A pattern added or reworded in the tool needs the audit again."""
    committed = [(p["id"], p["description"], p["approximate"])
                 for p in table.read_audit()["patterns"]]
    assert committed == [(pid, description, approximate)
                         for pid, _, description, approximate in napi_audit.PATTERNS], \
        "run make docs: docs/napi-audit.json is not the audit of this tools/napi-audit.py"


def test_matrix_drivers_are_those_the_nics_run():
    marked = table.matrix_drivers(read(TESTING))
    assert {"netdevsim", "virtio_net", "igb", "8139cp", "pcnet32", "tulip"} <= marked
    assert "8139too" not in marked and "rtl8139" not in marked


def audit(**drivers):
    patterns = [{"id": "napi-enable", "count": 2, "drivers": ["a.c", "b/"]}]
    patterns += [{"id": pid, "count": len(names), "drivers": names}
                 for pid, names in drivers.items()]
    return {"source": "base-test", "patterns": patterns}


def row(pid, pattern, drivers=""):
    return {"id": pid, "pattern": pattern, "drivers": drivers,
            **{mode: mode.replace("_", " ") for mode in table.MODES}}


def test_render_marks_matrix_drivers_first_and_carries_prose_rows():
    many = [f"drivers/net/x{i}.c" for i in range(9)] + ["drivers/net/ethernet/intel/igb/"]
    lines = table.render(audit(one=many), [row("one", "a pattern", "a note"),
                                           row("-", "not audited", "e100 (prose)")],
                         {"igb"}).splitlines()
    assert lines[0] == "In `base-test`, 2 drivers call `napi_enable()`."
    assert lines[-2] == ("| a pattern (`one`) | 10: **igb**, x0, x1, x2, x3, x4, x5, x6, ...; "
                         "a note | interrupts threaded | threaded busy poll | irq suspension "
                         "| tested by |")
    assert lines[-1].startswith("| not audited | e100 (prose) | interrupts threaded |")


@pytest.mark.parametrize("rows, problem", [
    ([], "one: no row in patterns.tsv"),
    ([row("one", "p"), row("two", "q")], "two: not an audited pattern"),
    ([row("one", "p"), row("one", "q")], "one: more than one row"),
])
def test_render_refuses_prose_that_does_not_fit_the_audit(rows, problem):
    with pytest.raises(SystemExit, match=problem):
        table.render(audit(one=["drivers/a.c"]), rows, set())
