"""make test-subsets (workbench/test-subsets.sh) with test.sh stubbed:
each subset is the series up to the end of a topic, with the selftests of
that topic and the ones before it, its results have a folder of their
own, and its build worktree is not make test's."""
import json
import os
import shutil
import subprocess

from conftest import stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")

SERIES = """# header
# 01-a: first
01-a/0001-x.patch
01-a/0002-y.patch

# 02-b: second
02-b/0001-z.patch

# 03-c: third
03-c/0001-w.patch
"""

SUBSETS = """# comment
01-a   net:one.py   60
02-b   net:two.py   120 igb
"""

# Records what it was given, and fails the subset that has test three.
STUB = """#!/bin/bash
d=$RESULTS/$SUBSET
mkdir -p "$d"
cp "$PATCHES/series" "$d/series"
cp "$SELFTESTS_LIST" "$d/selftests"
ls "$PATCHES" >"$d/folders"
fail=0
[ "$SUBSET" = 03-c ] && fail=1
echo "{\\"counts\\": {\\"pass\\": 2, \\"fail\\": $fail, \\"skip\\": 0}}" >"$d/summary.json"
exit $fail
"""


def run_subsets(tmp_path, **env_extra):
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    stub_script(top, "test.sh", STUB)
    stub_script(top, "subsets.list", SUBSETS)
    patches = top / "patches"
    for folder in ("01-a", "02-b", "03-c"):
        (patches / folder).mkdir(parents=True)
    (patches / "series").write_text(SERIES)
    stub_script(top, "fetch-base.sh", "#!/bin/bash\nexit 0\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RESULTS", "PATCHES", "SUBSETS")}
    env.update(NAPI_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path), **env_extra)
    # The base repository fetch-base.sh would have made.
    repo = tmp_path / "cache" / "src"
    repo.mkdir(parents=True)
    (repo / "Makefile").write_text("all:\n")
    for args in (["init", "-q", "-b", "base"], ["add", "."], ["commit", "-q", "-m", "base: toy"],
                 ["tag", "base-toy"]):
        subprocess.run(["git", "-C", str(repo), *args], env=dict(
            env, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@invalid", GIT_COMMITTER_NAME="t",
            GIT_COMMITTER_EMAIL="t@invalid"), check=True, capture_output=True)
    proc = subprocess.run([str(top / "workbench" / "test-subsets.sh")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    return proc, top / "build" / "results" / "subsets"


def test_each_subset_is_a_prefix_with_its_tests(tmp_path):
    proc, out = run_subsets(tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert (out / "01-a" / "series").read_text().split() == ["01-a/0001-x.patch",
                                                             "01-a/0002-y.patch"]
    assert (out / "02-b" / "folders").read_text().split() == ["01-a", "02-b", "series"]
    assert (out / "02-b" / "selftests").read_text().splitlines() == [
        "net:one.py 60 ", "net:two.py 120 igb"]
    assert len((out / "03-c" / "series").read_text().split()) == 4
    assert proc.stdout.splitlines() == [
        "PASS  subset:01-a (2 passed, 0 failed, 0 skipped)",
        "PASS  subset:02-b (2 passed, 0 failed, 0 skipped)",
        "FAIL  subset:03-c (2 passed, 1 failed, 0 skipped)"]
    assert json.loads((out / "03-c" / "summary.json").read_text())["counts"]["fail"] == 1


def test_subsets_picks_some(tmp_path):
    proc, out = run_subsets(tmp_path, SUBSETS="02-b")
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(out)) == ["02-b"]
    # Built from a worktree of their own: make test's stays where it is.
    worktree = tmp_path / "cache" / "src-subset"
    assert (worktree / ".git").is_file() and (worktree / "Makefile").exists()
