"""Shared set-up of the workbench unit tests: import path and fixtures."""
import importlib.machinery
import importlib.util
import os
import sys

TOP = os.path.join(os.path.dirname(__file__), "..")
WORKBENCH = os.path.join(TOP, "workbench")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# The workbench's modules the tests import by name: report/ (tap, splat)
# and vm/ (shard_plan).
sys.path[:0] = [os.path.join(WORKBENCH, "report"), os.path.join(WORKBENCH, "vm")]
# The tests run the workbench's scripts as a user would: nothing a
# surrounding make test (or test-subsets) set may leak into them.
for _name in ("SUBSET", "SUBSETS", "SELFTESTS_LIST", "PATCHES", "RESULTS", "TESTS", "OBJ",
              "KASAN", "RT", "KCSAN", "UP", "BASE_VERSION", "KERNEL_SRC", "SKIP_STATIC", "VM_ACCEL"):
    os.environ.pop(_name, None)
# The benchmarks import their own modules (benchlib: nic_irqs), and the
# memcached tools' (mc_generators).
sys.path[:0] = [os.path.join(TOP, "bench"), os.path.join(TOP, "bench", "memcached")]


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as fp:
        return fp.read()


def stub_script(top, name, body):
    """Replace the file NAME in the copy of the project at TOP (its
    workbench/, tools/ or bench/) with BODY. Found by name wherever it
    lives, and exactly once: a stub for a script that moved or was
    renamed fails here instead of standing in for nothing."""
    found = [path for part in ("workbench", "tools", "bench") if (top / part).is_dir()
             for path in (top / part).rglob(name)]
    assert len(found) == 1, f"{name}: {len(found)} files of that name in {top}: {found}"
    found[0].write_text(body)
    found[0].chmod(0o755)
    return found[0]


def load_script(name, path):
    """Import the script at PATH as module NAME; the loader is named
    explicitly because some scripts have no .py suffix or a hyphen."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def mark_topics(dev, ends, env):
    """Topic branches topic/NAME in the git tree DEV, as export.sh wants
    them: ENDS lists (NAME, commits from the base to its end), stacked, with
    a cover letter each whose change-ids chain them."""
    import subprocess

    prev = None
    for name, end in ends:
        rev = subprocess.run(["git", "-C", str(dev), "rev-list", "--reverse", "HEAD"],
                             env=env, check=True, capture_output=True,
                             text=True).stdout.split()[end]
        subprocess.run(["git", "-C", str(dev), "branch", "-f", f"topic/{name}", rev],
                       env=env, check=True)
        prereq = f"\nprerequisite-change-id: 20261127-{prev}-0123456789ab:v1" if prev else ""
        desc = (f"Topic {name}\n\nWhat {name} is.\n\n"
                f"change-id: 20261127-{name}-0123456789ab{prereq}")
        subprocess.run(["git", "-C", str(dev), "config", f"branch.topic/{name}.description", desc],
                       env=env, check=True)
        prev = name
