#!/usr/bin/env python3
"""A kernel built from the series without the test option carries no
test-only code.

The series' last topic is test tooling (its patches/series header says
"not for merging"), and patches/series applies it, so every kernel built
from the series carries its patches. Outside test-only paths (selftests,
netdevsim, documentation), what it changes in the kernel must compile
away without OPTION: compare each such file before and after the topic,
with the OPTION-only blocks (#ifdef OPTION ... #else/#endif) taken out
and comments, blank lines, #includes, braces, 'noinline' and calls of the
option's empty inline stubs (STUBS) ignored. And no configuration that
make package merges may turn OPTION on, nor may its Kconfig default; the
nodebug configuration turns off what the selftests' fragments turn on.

usage: check-test-only.py GIT_TREE PATCHES CONFIG_DIR
GIT_TREE is the series applied as one commit per patch (make test's
source tree). Exit 1 with the first offending line.
"""
import os
import re
import subprocess
import sys

OPTION = "CONFIG_DEBUG_NET_NAPI_RACES"
# Inline functions that are empty without OPTION.
STUBS = ("napi_race_delay",)
TEST_ONLY_PATHS = ("tools/testing/", "drivers/net/netdevsim/", "Documentation/")
# What make package merges into the configuration it builds.
PACKAGE_CONFIGS = ("series.config", "nodebug.config")


def test_only_topic(series_text):
    """(topic, patches in it, patches after it) of the topic whose header
    in patches/series says it is not for merging."""
    topic, counts = None, {}
    order = []
    for line in series_text.splitlines():
        m = re.match(r"# (\S+): .*\(not for merging\)", line)
        if m:
            topic = m[1]
        line = line.split("#")[0].strip()
        if line:
            name = line.split("/")[0]
            if name not in counts:
                order.append(name)
            counts[name] = counts.get(name, 0) + 1
    if topic is None:
        return None
    after = sum(counts[t] for t in order[order.index(topic) + 1:])
    return topic, counts[topic], after


def without_option(text):
    """TEXT as the preprocessor sees it without OPTION, for the blocks
    that test OPTION alone; other conditionals are kept as they are."""
    out, stack = [], []  # stack: for each open #if, whether its lines are dropped here
    for line in text.splitlines():
        s = line.strip()
        if re.match(r"#\s*if", s):
            mine = re.fullmatch(rf"#\s*(ifdef\s+{OPTION}|if\s+(defined\s*\(\s*{OPTION}\s*\)"
                                rf"|IS_ENABLED\s*\(\s*{OPTION}\s*\)))", s)
            stack.append("drop" if mine else "keep")
            if mine:
                continue
        elif re.match(r"#\s*(else|elif)", s) and stack and stack[-1] != "keep":
            # What follows compiles without OPTION (an #elif may too).
            stack[-1] = "else"
            continue
        elif re.match(r"#\s*endif", s) and stack:
            if stack.pop() != "keep":
                continue
        if "drop" not in stack:
            out.append(line)
    return "\n".join(out)


def normalised(text):
    """The lines that make code, with what cannot change it removed."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    stubs = "|".join(STUBS)
    # The stubs' empty definitions, and ifs whose only statement calls one.
    text = re.sub(rf"static\s+inline\s+void\s+({stubs})\s*\(\s*void\s*\)\s*\{{\s*\}}", "", text)
    text = re.sub(rf"\bif\s*\([^;{{}}]*\)\s*({stubs})\s*\(\s*\)\s*;", "", text)
    lines = []
    for line in text.splitlines():
        line = re.sub(r"[{}]|\bnoinline\b", "", line).strip()
        if not line or line.startswith("#include"):
            continue
        if re.fullmatch(rf"({stubs})\s*\(\s*\)\s*;", line):
            continue
        lines.append(" ".join(line.split()))
    return lines


def first_difference(old, new):
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b:
            return i, a, b
    if len(old) != len(new):
        i = min(len(old), len(new))
        return i, (old[i:i + 1] or [None])[0], (new[i:i + 1] or [None])[0]
    return None


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, *args], check=True, capture_output=True,
                          text=True).stdout


def show(tree, rev, path):
    proc = subprocess.run(["git", "-C", tree, "show", f"{rev}:{path}"], capture_output=True,
                          text=True)
    return proc.stdout if proc.returncode == 0 else ""


def check_code(tree, before, after):
    """Problems in the files the test-only topic changes."""
    problems = []
    files = git(tree, "diff", "--name-only", before, after).split()
    for path in files:
        if path.startswith(TEST_ONLY_PATHS) or os.path.basename(path).startswith("Kconfig"):
            continue
        old = normalised(show(tree, before, path))
        new = normalised(without_option(show(tree, after, path)))
        diff = first_difference(old, new)
        if diff:
            problems.append(f"{path}: without {OPTION} the test-only topic still changes "
                            f"code: {diff[1]!r} -> {diff[2]!r}")
    return problems


def check_config(tree, after, config_dir):
    """OPTION off unless asked for: no default, no package config."""
    problems = []
    kconfig = show(tree, after, "net/Kconfig.debug")
    entry = re.search(rf"^config {OPTION[len('CONFIG_'):]}\n(.*?)(?=^\S)", kconfig,
                      re.M | re.S)
    if not entry:
        problems.append(f"{OPTION} is defined in no net/Kconfig.debug")
    elif re.search(r"^\s*default\s+(?!n\b)", entry[1], re.M):
        problems.append(f"{OPTION} has a default other than n")
    for name in PACKAGE_CONFIGS:
        with open(os.path.join(config_dir, name)) as fp:
            text = fp.read()
        if re.search(rf"^{OPTION}=[ym]", text, re.M):
            problems.append(f"config/{name}, which make package merges, sets {OPTION}")
        # The selftests' config fragments, merged before it, turn it on.
        if name == "nodebug.config" and f"# {OPTION} is not set" not in text:
            problems.append(f"config/{name} does not turn {OPTION} off")
    return problems


def main():
    tree, patches, config_dir = sys.argv[1:4]
    with open(os.path.join(patches, "series")) as fp:
        found = test_only_topic(fp.read())
    if not found:
        print("no topic of patches/series is marked (not for merging)")
        return 1
    topic, count, later = found
    after = f"HEAD~{later}"
    before = f"{after}~{count}"
    problems = check_code(tree, before, after) + check_config(tree, after, config_dir)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{topic}: nothing outside {', '.join(TEST_ONLY_PATHS)} is compiled without {OPTION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
