"""check-patches.sh and KERNEL_SRC on a toy kernel tree: the series is
exported from a development clone, applied to the toy tree imported with
KERNEL_SRC, and every patch gets its own message, checkpatch and W=1
results; only warnings a patch adds fail it."""
import json
import os
import shutil
import subprocess

from conftest import mark_topics, stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")

# A kernel-like Makefile: 'prepare', and any OBJ.o compiled from OBJ.c
# into O= with warnings on (standing in for W=1).
MAKEFILE = """O ?= .
MAKEFLAGS += -r
Makefile: ;
prepare:
\t@mkdir -p $(O)
%.o: FORCE
\t@mkdir -p $(dir $(O)/$@)
\t@gcc -Wall -c $(CURDIR)/$*.c -o $(O)/$@
FORCE:
.PHONY: FORCE prepare
"""


def run(*args, env, check=True):
    return subprocess.run(args, env=env, check=check, capture_output=True, text=True)


def git(repo, *args, env):
    return run("git", "-C", str(repo), *args, env=env)


def write(tree, files):
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)


def toy_series(tmp_path, commits):
    """A toy kernel tree for KERNEL_SRC and a workbench copy whose patches/
    is exported from COMMITS (subject, files, signed) made on that tree."""
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    # The toy tree has no Kconfig.
    stub_script(top, "configure.sh", "#!/bin/bash\nmkdir -p \"$2\"\n")
    (top / "patches").mkdir()
    env = dict(os.environ, NAPI_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path),
               RESULTS=str(tmp_path / "results"), KERNEL_SRC=str(tmp_path / "linux"),
               GIT_AUTHOR_NAME="Test Dev", GIT_AUTHOR_EMAIL="dev@example.invalid",
               GIT_COMMITTER_NAME="Test Dev", GIT_COMMITTER_EMAIL="dev@example.invalid")
    for k in ("PATCHES", "BASE_VERSION", "OBJ", "KASAN"):
        env.pop(k, None)
    linux = tmp_path / "linux"
    write(linux, {"Makefile": MAKEFILE, "net/a.c": "int a;\n",
                  "net/old.c": "int f(void) { int unused; return 0; }\n",
                  "scripts/checkpatch.pl": "#!/bin/sh\nexit 0\n"})
    (linux / "scripts" / "checkpatch.pl").chmod(0o755)
    git(linux, "init", "-q", "-b", "master", env=env)
    git(linux, "add", ".", env=env)
    git(linux, "commit", "-q", "-m", "v6.12.999", env=env)
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(linux), str(dev), env=env)
    git(dev, "tag", "base-local", env=env)
    for subject, files, signed in commits:
        write(dev, files)
        git(dev, "add", ".", env=env)
        git(dev, "commit", "-q", *(["-s"] if signed else []), "-m", subject + "\n\nBecause.",
            env=env)
    # Commits 1 and 2 are topics of their own, the rest a third one.
    ends = [("01-one", 1), ("02-two", 2), ("03-three", len(commits))]
    mark_topics(dev, [(name, end) for i, (name, end) in enumerate(ends)
                      if end <= len(commits) and (i == 0 or end > ends[i - 1][1])], env)
    run(str(top / "workbench" / "export.sh"), str(dev), env=env)
    return top, env


SERIES = [
    ("net: add b", {"net/b.c": "int b(void) { return 0; }\n"}, True),
    ("net: b gets a warning", {"net/b.c": "int b(void) { int x; return 0; }\n"}, True),
    ("net: old keeps its warning",
     {"net/old.c": "int f(void) { int unused; return 0; }\nint g(void) { return 1; }\n"}, True),
    ("docs: no signature", {"Documentation/x.rst": "x\n"}, False),
]


def test_kernel_src_toy_tree_and_one_result_per_check(tmp_path):
    top, env = toy_series(tmp_path, SERIES)
    run(str(top / "workbench" / "prepare-tree.sh"), env=env)
    src = tmp_path / "cache" / "src"
    assert git(src, "log", "-1", "--format=%s", "base-local", env=env).stdout.startswith(
        f"base: local tree {tmp_path / 'linux'} at ")
    assert git(src, "rev-list", "--count", "base-local..HEAD", env=env).stdout.strip() == "4"

    out = tmp_path / "static.json"
    proc = run(str(top / "workbench" / "checks" / "check-patches.sh"), str(out), env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    res = {r["name"]: r for r in json.loads(out.read_text())}
    assert len(res) == 15
    p = ["patch:01-one/0001-net-add-b.patch", "patch:02-two/0001-net-b-gets-a-warning.patch",
         "patch:03-three/0001-net-old-keeps-its-warning.patch",
         "patch:03-three/0002-docs-no-signature.patch"]
    assert res[p[0] + ":w1-build"]["status"] == "pass"
    assert res[p[1] + ":w1-build"]["status"] == "fail"
    assert res[p[1] + ":w1-build"]["reason"].startswith("1 new W=1 warnings, first: net/b.c:")
    assert res[p[2] + ":w1-build"]["status"] == "pass"       # the warning was there before
    assert res[p[3] + ":w1-build"]["status"] == "skip"
    assert res[p[3] + ":message"]["reason"] == "no Signed-off-by"
    assert all(res[n + ":checkpatch"]["status"] == "pass" for n in p)
    assert all(res[n + ":message"]["status"] == "pass" for n in p[:3])
    # A subset a kernel may carry ends with each topic: the first one alone
    # is fine, the stack up to the second one is not, and neither is the
    # one up to the third, which carries the second.
    assert res["subset:01-one"]["status"] == "pass"
    assert res["subset:02-two"]["status"] == "fail"
    assert "patch failed: 02-two/0001-net-b-gets-a-warning.patch w1-build" in \
        res["subset:02-two"]["reason"]
    assert "patch failed: 02-two/0001-net-b-gets-a-warning.patch w1-build" in \
        res["subset:03-three"]["reason"]
    assert "patch failed: 03-three/0002-docs-no-signature.patch message" in \
        res["subset:03-three"]["reason"]


def test_kernel_src_change_reimports(tmp_path):
    top, env = toy_series(tmp_path, SERIES[:1])
    run(str(top / "workbench" / "fetch-base.sh"), env=env)
    other = tmp_path / "linux2"
    shutil.copytree(tmp_path / "linux", other)
    write(other, {"net/c.c": "int c;\n"})
    proc = run(str(top / "workbench" / "prepare-tree.sh"), env=dict(env, KERNEL_SRC=str(other)))
    assert "importing " + str(other) in proc.stderr
    assert (tmp_path / "cache" / "src" / "net" / "c.c").exists()


def fake_archive(tmp_path, env, version, files):
    """An archive whose newest linux-source-6.12 is VERSION holding the toy
    tree plus FILES: the .deb already in the cache, apt-* stubbed."""
    pkg = tmp_path / "pkg"
    tree = tmp_path / "newest" / "linux-source-6.12"
    shutil.copytree(tmp_path / "linux", tree, ignore=shutil.ignore_patterns(".git"))
    write(tree, files)
    (pkg / "usr" / "src").mkdir(parents=True)
    run("tar", "-cJf", str(pkg / "usr" / "src" / "linux-source-6.12.tar.xz"),
        "-C", str(tree.parent), "linux-source-6.12", env=env)
    write(pkg, {"DEBIAN/control": f"Package: linux-source-6.12\nVersion: {version}\n"
                "Architecture: all\nMaintainer: t <t@invalid>\nDescription: toy\n"})
    debs = tmp_path / "cache" / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    run("dpkg-deb", "-Zxz", "--build", str(pkg), str(debs / f"linux-source-6.12_{version}_all.deb"),
        env=env)
    bindir = tmp_path / "bin"
    write(bindir, {"apt-cache": f"#!/bin/sh\necho ' linux-source-6.12 | {version} | x Packages'\n",
                   "apt-get": "#!/bin/sh\nexit 0\n"})
    for stub in ("apt-cache", "apt-get"):
        (bindir / stub).chmod(0o755)
    return dict(env, PATH=f"{bindir}:{env['PATH']}")


def test_series_on_the_newest_archive_version(tmp_path):
    top, env = toy_series(tmp_path, SERIES[:3])
    run(str(top / "workbench" / "prepare-tree.sh"), env=env)
    check = str(top / "workbench" / "checks" / "check-newest.sh")
    out = tmp_path / "newest.json"

    ok = fake_archive(tmp_path, env, "6.12.1000-1", {"net/other.c": "int o;\n"})
    run(check, str(out), env=ok)
    assert json.loads(out.read_text()) == [{"name": "series:apply:newest-6.12.1000-1",
                                            "kind": "static", "status": "pass", "reason": None}]

    shutil.rmtree(tmp_path / "newest")
    shutil.rmtree(tmp_path / "pkg")
    moved = fake_archive(tmp_path, env, "6.12.1001-1", {"net/old.c": "int f(void);\n"})
    run(check, str(out), env=moved)
    res = json.loads(out.read_text())[0]
    assert res["name"] == "series:apply:newest-6.12.1001-1" and res["status"] == "fail"
    assert res["reason"] == "patch does not apply: 03-three/0001-net-old-keeps-its-warning.patch"


def test_newest_tree_grows_with_the_files_the_series_touches(tmp_path):
    """The newest version's files, unpacked once for a series, are unpacked
    again when the series later touches a file they lack."""
    top, env = toy_series(tmp_path, SERIES[2:3])
    run(str(top / "workbench" / "prepare-tree.sh"), env=env)
    check = str(top / "workbench" / "checks" / "check-newest.sh")
    out = tmp_path / "newest.json"
    archive = fake_archive(tmp_path, env, "6.12.1000-1", {})
    run(check, str(out), env=archive)
    assert json.loads(out.read_text())[0]["status"] == "pass"

    dev = tmp_path / "dev"
    write(dev, {"net/a.c": "int a;\nint a2;\n"})
    git(dev, "commit", "-q", "-a", "-s", "-m", "net: add a2\n\nBecause.", env=env)
    mark_topics(dev, [("01-one", 1), ("02-two", 2)], env)
    run(str(top / "workbench" / "export.sh"), str(dev), env=env)
    run(str(top / "workbench" / "prepare-tree.sh"), env=env)
    proc = subprocess.run([check, str(out)], env=archive, capture_output=True, text=True)
    assert json.loads(out.read_text())[0]["status"] == "pass", proc.stderr
