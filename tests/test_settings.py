"""workbench/data/settings.tsv, the one description of the environment
variables: every variable the workbench's scripts read is in it and
every row is read where it says; switches treat 0 as off; and
docs/workbench.md's table is the one rendered from it."""
import glob
import os
import re

from conftest import load_script

TOP = os.path.join(os.path.dirname(__file__), "..")
WB = os.path.join(TOP, "workbench")
table = load_script("settings_table", os.path.join(WB, "report", "settings-table.py"))

# Read by the scripts but not knobs for a user: each with the reason.
INTERNAL = {
    "HOME": "the user's home, the cache's last resort",
    "PATH": "the shell's search path",
    "SECONDS": "bash's clock (demo/lib.sh)",
    "BASH_SOURCE": "bash's own: where lib.sh lives",
    "PIPESTATUS": "bash's own: a pipeline's exit codes",
    "SUBSET": "test-subsets.sh sets it for each subset's test.sh",
    "FRAGMENTS_FROM": "bench.sh sets it to configure the base with the series' fragments",
    "YNL_SRC": "guest-demo.sh sets it for demo/lib.sh",
    "GUEST_BUDGET": "test.sh passes the selftests' budget to the guest (through run-plan.sh)",
    "MISSING_HINT": "fetch-base.sh and fetch-mainline.sh tell import-source.sh what to say of a version gone",
    "SKIP_WHY": "test.sh passes the reason a NIC is missing to the guest",
    "NIC_WHY": "lib.sh's use_nic() collects the missing NICs' reasons",
    "NETIF": "guest-run-tests.sh sets it for the drivers/net tests (a row for bench/)",
    "REMOTE_V4": "guest-run-tests.sh sets it for the drivers/net tests",
}

NAME = r"([A-Z][A-Z0-9_]*)(?![A-Za-z0-9_])"
WITH_DEFAULT = re.compile(r"\$\{" + NAME + r"(?::?[-+?=])")
REFERENCE = re.compile(r"\$\{?" + NAME)
ASSIGNED = re.compile(r"(?:^|[\s;(&|])(?:export\s+|local\s+|readonly\s+)?([A-Z][A-Z0-9_]*)\+?=",
                      re.M)
LOOP_OR_READ = re.compile(r"\b(?:for|read(?:\s+-\w+)*|mapfile(?:\s+-\w+)*)\s+" + NAME)
PY_ENV = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["']""" + NAME + r"""["']""")


def code(path):
    with open(path) as fp:
        return "\n".join(line for line in fp.read().splitlines()
                         if not line.lstrip().startswith("#"))


def knobs_read(shell_files, python_files):
    """Variables the scripts take from the environment: read with a
    default (${X:-...}, ${X:+...}), or read and never assigned by any of
    them (lib.sh is sourced, so the shell files share one namespace), or
    read through os.environ/os.getenv."""
    assigned, referenced, defaulted = set(), set(), set()
    for path in shell_files:
        text = code(path)
        assigned |= set(ASSIGNED.findall(text)) | set(LOOP_OR_READ.findall(text))
        referenced |= set(REFERENCE.findall(text))
        defaulted |= set(WITH_DEFAULT.findall(text))
    from_python = {m for path in python_files for m in PY_ENV.findall(code(path))}
    return defaulted | (referenced - assigned) | from_python


def workbench_scripts():
    shell = glob.glob(os.path.join(WB, "**", "*.sh"), recursive=True)
    python = glob.glob(os.path.join(WB, "**", "*.py"), recursive=True)
    return shell, python


def test_detection_sees_defaults_plain_reads_and_python(tmp_path):
    sh = tmp_path / "a.sh"
    sh.write_text('OWN=1\nx=${KNOB:-0} y=$PLAIN z=$OWN\n# ${COMMENTED:-1}\n'
                  "fmt='${Status}'\nfor LOOP in a; do :; done; echo $LOOP\n")
    py = tmp_path / "b.py"
    py.write_text('import os\nos.environ.get("PYKNOB", "1")\nos.environ["OTHER"]\n')
    assert knobs_read([str(sh)], [str(py)]) == {"KNOB", "PLAIN", "PYKNOB", "OTHER"}


def test_every_variable_the_workbench_reads_is_in_settings_and_back():
    rows = table.read_settings()
    in_workbench = {r["name"] for r in rows
                    if any(p.startswith("workbench/") for p in r["read_by"].split())}
    read = knobs_read(*workbench_scripts()) - set(INTERNAL)
    assert sorted(read - in_workbench) == [], "read by the workbench, not in settings.tsv"
    assert sorted(in_workbench - read) == [], "in settings.tsv, not read by the workbench"


def test_every_row_is_read_where_it_says():
    rows = table.read_settings()
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), "a variable listed twice"
    for row in rows:
        assert row["kind"] in ("switch", "value"), row
        assert row["default"] and row["meaning"], row
        for path in row["read_by"].split():
            full = os.path.join(TOP, path)
            assert os.path.isfile(full), (row["name"], path)
            assert re.search(rf"\b{row['name']}\b", code(full)), (row["name"], path)


def test_switches_treat_zero_as_off():
    """A switch tested for emptiness alone ('[ -n "${X:-}" ]') is on for
    X=0: every such test of a switch must also compare with 0."""
    switches = [r["name"] for r in table.read_settings() if r["kind"] == "switch"]
    shell, _ = workbench_scripts()
    bad = []
    for path in shell:
        for line in code(path).splitlines():
            for name in switches:
                if re.search(rf'-[nz] "\$\{{{name}(:-)?\}}"', line) and \
                        not re.search(rf'"\$\{{?{name}\}}?" != 0', line):
                    bad.append(f"{os.path.relpath(path, TOP)}: {line.strip()}")
    assert bad == []
    for row in table.read_settings():
        if row["kind"] == "switch":
            assert row["default"].strip("`").split(";")[0].strip("`") in ("0", "1"), row


def test_docs_table_is_rendered_from_settings():
    with open(os.path.join(TOP, "docs", "workbench.md")) as fp:
        doc = table.table_in(fp.read())
    assert doc == table.render(table.read_settings()), \
        "run workbench/report/settings-table.py --write docs/workbench.md"
