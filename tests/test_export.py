"""Export round trip on a tiny tree: export, re-materialise with tree.sh,
export again: identical files. Also: a patch that does not apply is named."""
import filecmp
import os
import subprocess

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
    (src / "Makefile").write_text("all:\n")
    (src / "file.c").write_text("int a;\n")
    git(src, "init", "-q", "-b", "base", env=env)
    git(src, "add", ".", env=env)
    git(src, "commit", "-q", "-m", "base: Debian linux-source-6.12 test", env=env)
    git(src, "tag", "base-test", env=env)
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(src), str(dev), env=env)
    git(dev, "checkout", "-q", "-b", "series", env=env)
    for i, subject in enumerate(["net: first change", "selftests: net: second"]):
        (dev / "file.c").write_text(f"int a = {i};\n")
        git(dev, "commit", "-q", "-a", "-s", "-m", subject + "\n\nBecause.", env=env)
    git(dev, "config", "branch.series.description", "Cover subject\n\nCover body.", env=env)
    (tmp_path / "patches").mkdir()
    return env, dev


def test_export_round_trip(tmp_path):
    env, dev = setup(tmp_path)
    run(os.path.join(WB, "export.sh"), str(dev), env=env)
    first = sorted(os.listdir(tmp_path / "patches"))
    assert first == ["0000-cover-letter.patch", "0001-net-first-change.patch",
                     "0002-selftests-net-second.patch", "series"]
    saved = tmp_path / "saved"
    run("cp", "-a", str(tmp_path / "patches"), str(saved), env=env)

    tree2 = tmp_path / "tree2"
    run(os.path.join(WB, "tree.sh"), str(tree2), env=env)
    run(os.path.join(WB, "export.sh"), str(tree2), env=env)
    cmp = filecmp.dircmp(saved, tmp_path / "patches")
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only


def test_patch_that_does_not_apply_is_named(tmp_path):
    env, dev = setup(tmp_path)
    run(os.path.join(WB, "export.sh"), str(dev), env=env)
    broken = tmp_path / "patches" / "0002-selftests-net-second.patch"
    broken.write_text(broken.read_text().replace("-int a = 0;", "-int a = 42;"))
    proc = run(os.path.join(WB, "tree.sh"), str(tmp_path / "tree3"), env=env, check=False)
    assert proc.returncode != 0
    assert "patch does not apply: 0002-selftests-net-second.patch" in proc.stderr
