"""check-provenance.py: each patch's first paragraph after the subject is
one provenance statement; cover letters are exempt."""
import os
import subprocess

import pytest

from conftest import WORKBENCH

SCRIPT = os.path.join(WORKBENCH, "checks", "check-provenance.py")
SHA = "58e2330bd45572a6e3d46ea94cf7a9641f43591a"
BODY = ("The watchdog is armed too early.\n\n"
        "Fixes: 7fd3253a7de6 (\"net: Introduce preferred busy-polling\")\n"
        "Signed-off-by: A Developer <dev@example.invalid>\n")
COVER = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
         "From: A Developer <dev@example.invalid>\n"
         "Subject: [PATCH 6.12 0/1] net: a topic\n\nWhat the topic does.\n\n"
         "A Developer (1):\n  net: napi: a change\n\n-- \n2.39.5\n")


def patch(message):
    return ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            "From: A Developer <dev@example.invalid>\n"
            "Date: Sun, 6 Dec 2026 10:04:21 +0000\n"
            "Subject: [PATCH 6.12 1/1] net: napi: a change that needs a\n"
            " long subject line\n\n"
            f"{message}---\n net/core/dev.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
            "diff --git a/net/core/dev.c b/net/core/dev.c\n"
            "--- a/net/core/dev.c\n+++ b/net/core/dev.c\n@@ -1 +1 @@\n"
            "-Not upstream: a line of code\n+commit 0123456789ab upstream.\n")


def series(tmp_path, message, cover=COVER):
    """A patches/ folder with one topic: a cover letter and one patch."""
    topic = tmp_path / "patches" / "01-one"
    topic.mkdir(parents=True)
    (topic / "0000-cover-letter.patch").write_text(cover)
    (topic / "0001-net-napi-a-change.patch").write_text(patch(message))
    (tmp_path / "patches" / "series").write_text(
        "# 01-one: net: a topic\n01-one/0001-net-napi-a-change.patch\n")
    return tmp_path / "patches"


def run(patches):
    return subprocess.run([SCRIPT, str(patches)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("statement", [
    f"commit {SHA} upstream.\n\n",
    f"commit {SHA[:12]} upstream.\n\n",
    f"[ Upstream commit {SHA} ]\n\n",
    f"commit {SHA} upstream.\ncommit acb8d4ed5661d05f794ef2ce34fd11e699e9ca32 upstream.\n\n"
    "Differences from upstream: the two commits are one patch here.\n\n",
    "Not upstream: test tooling for this series' CI.\n\n",
    "Not upstream: the bug is in mainline too; the fix is not yet\nsubmitted.\n\n",
], ids=["commit-full", "commit-12", "bracketed", "two-commits-differences", "not-upstream",
        "not-upstream-wrapped"])
def test_each_accepted_form_passes(tmp_path, statement):
    proc = run(series(tmp_path, statement + BODY))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout == "1 patches, each with one provenance statement\n"


@pytest.mark.parametrize("message", [
    BODY,                                                   # none at all
    "The watchdog is armed too early.\n\n" f"commit {SHA} upstream.\n\n" + BODY,  # not first
    f"commit {SHA[:8]} upstream.\n\n" + BODY,              # sha too short
    f"commit {SHA} upstream\n\n" + BODY,                   # no full stop
    "Not upstream:\n\n" + BODY,                            # no reason
    "Upstream patch: \"net: a change\", not yet merged.\n\n" + BODY,
], ids=["missing", "not-first", "short-sha", "no-full-stop", "no-reason", "other-wording"])
def test_a_patch_without_the_statement_first_fails(tmp_path, message):
    proc = run(series(tmp_path, message))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "1 of 1 patches lack a provenance statement, first 01-one/0001-net-napi-a-change.patch"
    assert lines[1].startswith("01-one/0001-net-napi-a-change.patch: the first paragraph after "
                               "the subject is not a provenance statement")


@pytest.mark.parametrize("message", [
    f"commit {SHA} upstream.\n\nNot upstream: but also this.\n\n" + BODY,
    f"commit {SHA} upstream.\nNot upstream: mixed in.\n\n" + BODY,
    f"Not upstream: an extension.\n\n[ Upstream commit {SHA} ]\n\n" + BODY,
], ids=["second-paragraph", "same-paragraph", "not-then-commit"])
def test_two_statements_fail(tmp_path, message):
    proc = run(series(tmp_path, message))
    assert proc.returncode == 1
    assert "01-one/0001-net-napi-a-change.patch" in proc.stdout.splitlines()[1]


def test_the_diff_is_not_the_message(tmp_path):
    """Lines of the patch's diff that look like statements do not count."""
    proc = run(series(tmp_path, "Not upstream: the series' own test.\n\n" + BODY))
    assert proc.returncode == 0, proc.stdout


def test_cover_letters_are_exempt(tmp_path):
    """A cover letter has no statement and is not checked, even if
    patches/series were to list it."""
    patches = series(tmp_path, "Not upstream: the series' own test.\n\n" + BODY)
    (patches / "series").write_text("01-one/0000-cover-letter.patch\n"
                                    "01-one/0001-net-napi-a-change.patch\n")
    proc = run(patches)
    assert proc.returncode == 0, proc.stdout


def test_a_listed_patch_that_is_missing_fails(tmp_path):
    patches = series(tmp_path, "Not upstream: the series' own test.\n\n" + BODY)
    with open(patches / "series", "a") as fp:
        fp.write("01-one/0002-gone.patch\n")
    proc = run(patches)
    assert proc.returncode == 1
    assert "01-one/0002-gone.patch: listed in series but missing" in proc.stdout


def test_the_series_in_patches_passes():
    """The exported series itself: every patch carries its statement."""
    proc = run(os.path.join(WORKBENCH, "..", "patches"))
    assert proc.returncode == 0, proc.stdout
