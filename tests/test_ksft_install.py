"""ksft-install.sh with make stubbed: YNL is built from scratch in the
source tree before the selftests, since tools/net/ynl never rebuilds a
libynl.a that exists (a worktree moved to another subset of the series
linked a stale one)."""
import os
import shutil
import subprocess

TOP = os.path.join(os.path.dirname(__file__), "..")

# Records every make call; 'install' puts the listed tests in place.
MAKE = """#!/bin/bash
echo "$*" >>"$MAKE_LOG"
for a; do case $a in INSTALL_PATH=*) mkdir -p "${a#INSTALL_PATH=}";
    touch "${a#INSTALL_PATH=}/one.py";; esac; done
exit 0
"""


def test_ynl_is_cleaned_before_the_selftests_build(tmp_path):
    src, dest, bindir = tmp_path / "src", tmp_path / "ksft", tmp_path / "bin"
    for d in ("tools/testing/selftests/net", "tools/testing/selftests/kselftest",
              "tools/net/ynl"):
        (src / d).mkdir(parents=True)
    for f in ("run_kselftest.sh", "kselftest/runner.sh", "kselftest/prefix.pl",
              "kselftest/ktap_helpers.sh"):
        (src / "tools/testing/selftests" / f).write_text("")
    bindir.mkdir()
    (bindir / "make").write_text(MAKE)
    (bindir / "make").chmod(0o755)
    listing = tmp_path / "selftests.list"
    listing.write_text("net:one.py 60\n")
    log = tmp_path / "make.log"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", MAKE_LOG=str(log),
               NAPI_CACHE=str(tmp_path / "cache"), SELFTESTS_LIST=str(listing),
               SELFTEST_GEN_FILES="")
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    shutil.copytree(os.path.join(TOP, "tests", "tool-selftests"), top / "tests" / "tool-selftests")
    shutil.copytree(os.path.join(TOP, "tools"), top / "tools")
    (dest / "drivers" / "net").mkdir(parents=True)
    proc = subprocess.run([str(top / "workbench" / "vm" / "ksft-install.sh"), str(src), str(dest)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    calls = log.read_text().splitlines()
    ynl_clean = [i for i, c in enumerate(calls) if c.endswith("tools/net/ynl clean")]
    installs = [i for i, c in enumerate(calls) if " install " in f" {c} "]
    assert ynl_clean and installs and ynl_clean[0] < installs[0], (calls, proc.stderr)
