"""Export round trip on a tiny tree: export, re-materialise with tree.sh,
export again: identical files, topic branches and cover letters back. Also:
a patch that does not apply is named, and a topic chain that does not hold
is refused."""
import filecmp
import os
import subprocess

from conftest import mark_topics

WB = os.path.join(os.path.dirname(__file__), "..", "workbench")


def run(*args, env, cwd=None, check=True):
    return subprocess.run(args, env=env, cwd=cwd, check=check,
                          capture_output=True, text=True)


def git(repo, *args, env):
    return run("git", "-C", str(repo), *args, env=env)


def setup(tmp_path):
    env = dict(os.environ, NAPI_CACHE=str(tmp_path / "cache"), BASE_VERSION="test",
               PATCHES=str(tmp_path / "patches"), HOME=str(tmp_path),
               GIT_AUTHOR_NAME="Test Dev", GIT_AUTHOR_EMAIL="dev@example.invalid",
               GIT_COMMITTER_NAME="Test Dev", GIT_COMMITTER_EMAIL="dev@example.invalid")
    src = tmp_path / "cache" / "src"
    src.mkdir(parents=True)
    (src / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 1\nall:\n")
    (src / "file.c").write_text("int a;\n")
    git(src, "init", "-q", "-b", "base", env=env)
    git(src, "add", ".", env=env)
    git(src, "commit", "-q", "-m", "base: Debian linux-source-6.12 test", env=env)
    git(src, "tag", "base-test", env=env)
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(src), str(dev), env=env)
    git(dev, "checkout", "-q", "-b", "series", env=env)
    for i, subject in enumerate(["net: first change", "selftests: net: second",
                                 "net: third"]):
        (dev / "file.c").write_text(f"int a = {i};\n")
        git(dev, "commit", "-q", "-a", "-s", "-m", subject + "\n\nBecause.", env=env)
    mark_topics(dev, [("01-one", 2), ("02-two", 3)], env)
    (tmp_path / "patches").mkdir()
    return env, dev


def test_export_round_trip(tmp_path):
    env, dev = setup(tmp_path)
    run(os.path.join(WB, "export.sh"), str(dev), env=env)
    patches = tmp_path / "patches"
    assert sorted(os.listdir(patches)) == ["01-one", "02-two", "series"]
    assert sorted(os.listdir(patches / "01-one")) == [
        "0000-cover-letter.patch", "0001-net-first-change.patch", "0002-selftests-net-second.patch"]
    assert sorted(os.listdir(patches / "02-two")) == [
        "0000-cover-letter.patch", "0001-net-third.patch"]
    series = (patches / "series").read_text()
    assert "upstream v6.12.1" in series
    assert "# 02-two: Topic 02-two\n#   needs: 01-one;" in series
    assert [line for line in series.splitlines() if line and not line.startswith("#")] == [
        "01-one/0001-net-first-change.patch", "01-one/0002-selftests-net-second.patch",
        "02-two/0001-net-third.patch"]
    cover = (patches / "02-two" / "0000-cover-letter.patch").read_text()
    assert "Subject: [PATCH 6.12 0/1] Topic 02-two" in cover
    assert "prerequisite-change-id: 20261127-01-one-0123456789ab:v1" in cover
    assert "base-commit:" not in cover     # the workbench's import commit: nobody has it
    saved = tmp_path / "saved"
    run("cp", "-a", str(tmp_path / "patches"), str(saved), env=env)

    tree2 = tmp_path / "tree2"
    run(os.path.join(WB, "tree.sh"), str(tree2), env=env)
    assert git(tree2, "rev-parse", "topic/01-one", env=env).stdout == \
        git(tree2, "rev-parse", "HEAD~1", env=env).stdout
    run(os.path.join(WB, "export.sh"), str(tree2), env=env)
    for sub in ("", "01-one", "02-two"):
        cmp = filecmp.dircmp(saved / sub, patches / sub)
        assert not cmp.diff_files and not cmp.left_only and not cmp.right_only, sub


def test_broken_topic_chain_is_refused(tmp_path):
    env, dev = setup(tmp_path)
    git(dev, "config", "branch.topic/02-two.description",
        "Topic 02-two\n\nNo prerequisite.\n\nchange-id: 20261127-02-two-0123456789ab", env=env)
    proc = run(os.path.join(WB, "export.sh"), str(dev), env=env, check=False)
    assert proc.returncode != 0
    assert "topic/02-two: prerequisite-change-id must be '20261127-01-one-0123456789ab:v1'" in \
        proc.stderr


def test_patch_that_does_not_apply_is_named(tmp_path):
    env, dev = setup(tmp_path)
    run(os.path.join(WB, "export.sh"), str(dev), env=env)
    broken = tmp_path / "patches" / "01-one" / "0002-selftests-net-second.patch"
    broken.write_text(broken.read_text().replace("-int a = 0;", "-int a = 42;"))
    proc = run(os.path.join(WB, "tree.sh"), str(tmp_path / "tree3"), env=env, check=False)
    assert proc.returncode != 0
    assert "patch does not apply: 01-one/0002-selftests-net-second.patch" in proc.stderr


def test_commits_in_a_new_tree_carry_the_series_identity(tmp_path):
    """A commit made in the tree tree.sh creates is signed off by its
    author (checkpatch's NO_AUTHOR_SIGN_OFF), whoever runs the workbench."""
    env, _ = setup(tmp_path)
    run(os.path.join(WB, "export.sh"), str(tmp_path / "dev"), env=env)
    tree = tmp_path / "tree4"
    run(os.path.join(WB, "tree.sh"), str(tree), env=env)
    bare = {k: v for k, v in env.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    git(tree, "commit", "-q", "--allow-empty", "-m", "new", env=bare)
    assert git(tree, "log", "-1", "--format=%an <%ae>", env=bare).stdout.strip() == \
        "NAPI Series Developers <napi-series@lists.invalid>"
