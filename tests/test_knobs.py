"""The workbench's switches: 0 means off for every one of them, two
kernel flavours at once are refused, and make help names every target."""
import itertools
import os
import re
import shutil
import subprocess

import pytest

from conftest import stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")
FLAVOURS = ("KASAN", "RT", "KCSAN", "UP")


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@invalid",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@invalid"))


def tree(tmp_path, force):
    """make tree (workbench/tree.sh) with FORCE=FORCE on a build/linux
    that has an uncommitted change; fetching and applying are stubs."""
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    for name in ("fetch-base.sh", "apply.sh"):
        stub_script(top, name, "#!/bin/bash\nexit 0\n")
    (top / "patches").mkdir()
    (top / "patches" / "series").write_text("")
    cache = tmp_path / "cache"
    src = cache / "src"
    src.mkdir(parents=True)
    _git(src, "init", "-q", "-b", "base")
    (src / "Makefile").write_text("VERSION = 6\n")
    _git(src, "add", "Makefile")
    _git(src, "commit", "-q", "-m", "base: test")
    _git(src, "tag", "base-test")
    dest = top / "build" / "linux"
    _git(tmp_path, "clone", "-q", str(src), str(dest))
    (dest / "Makefile").write_text("VERSION = 7\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE", "PATCHES") + FLAVOURS}
    env.update(NAPI_CACHE=str(cache), HOME=str(tmp_path), FORCE=force)
    proc = subprocess.run([str(top / "workbench" / "tree.sh")], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc, dest


@pytest.mark.parametrize("force, kept", [("", True), ("0", True), ("1", False)])
def test_force_zero_keeps_uncommitted_changes(tmp_path, force, kept):
    """FORCE=1 lets make tree reset a build/linux with uncommitted
    changes; unset or 0, it refuses and the change stays."""
    proc, dest = tree(tmp_path, force)
    refused = "has uncommitted changes" in proc.stderr
    assert refused == kept, (force, proc.returncode, proc.stderr)
    assert ((dest / "Makefile").read_text() == "VERSION = 7\n") == kept, force


def flavour(**env):
    """Source lib.sh with the flavour variables ENV; its FLAVOUR or error."""
    clean = {k: v for k, v in os.environ.items() if k not in FLAVOURS + ("OBJ", "SUBSET")}
    return subprocess.run(["bash", "-c", f'. "{TOP}/workbench/lib.sh" && echo "$FLAVOUR"'],
                          env={**clean, **env}, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("first, second", itertools.combinations(FLAVOURS, 2))
def test_two_flavours_are_refused(first, second):
    """Every pair of KASAN, RT, KCSAN and UP is an error naming both,
    never a silent choice of one; 0 is off and combines with anything."""
    proc = flavour(**{first: "1", second: "1"})
    assert proc.returncode != 0, proc.stdout
    assert f"one kernel flavour at a time, not: {first}=1 {second}=1" in proc.stderr
    proc = flavour(**{first: "1", second: "0"})
    assert proc.returncode == 0 and proc.stdout.strip() == first.lower(), proc.stderr


def test_no_flavour_is_the_debug_kernel():
    proc = flavour(**dict.fromkeys(FLAVOURS, "0"))
    assert proc.stdout.strip() == "debug", proc.stderr


def make_targets():
    """The targets the Makefile defines: its .PHONY list and every rule."""
    with open(os.path.join(TOP, "Makefile")) as fp:
        text = fp.read()
    targets = set()
    for line in text.splitlines():
        if line.startswith(".PHONY:"):
            targets.update(line.split(":", 1)[1].split())
        elif (m := re.match(r"^([A-Za-z][\w-]*)\s*:(?!=)", line)):
            targets.add(m[1])
    return targets


def test_make_help_lists_every_target():
    out = subprocess.run(["make", "-s", "-C", TOP, "help"], capture_output=True, text=True,
                         check=True).stdout
    listed = {m[1] for m in re.finditer(r"^make (\S+)", out, re.M)}
    assert make_targets() - listed == set(), out
