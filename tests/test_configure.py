"""workbench/tree/configure.sh's flavours on a fake kernel tree: which
fragments each flavour merges, modules built in except for the per-patch
build, the skip when nothing changed, and a requested option that
olddefconfig drops failing the step."""
import os
import subprocess

import pytest

TOP = os.path.join(os.path.dirname(__file__), "..")

# merge_config.sh -m -O OBJ BASE FRAGMENT: later values win, as in the
# real one (a "# CONFIG_X is not set" line is a value too).
MERGE_STUB = r'''#!/usr/bin/env python3
import re, sys
base, fragment = sys.argv[4], sys.argv[5]
values = {}
for path in (base, fragment):
    for line in open(path):
        m = re.match(r"(?:# )?(CONFIG_\w+)[= ]", line)
        if m:
            values[m[1]] = line
open(base, "w").writelines(values.values())
'''


def configure(tmp_path, flavour, olddefconfig="exit 0"):
    src, obj, cache, bindir = (tmp_path / d for d in ("src", "obj", "cache", "bin"))
    for sub in ("net", "drivers/net"):
        (src / "tools/testing/selftests" / sub).mkdir(parents=True, exist_ok=True)
        (src / "tools/testing/selftests" / sub / "config").write_text(
            f"CONFIG_SELFTEST_{sub.replace('/', '_').upper()}=m\n")
    (src / "scripts/kconfig").mkdir(parents=True, exist_ok=True)
    (src / "scripts/kconfig/merge_config.sh").write_text(MERGE_STUB)
    (bindir).mkdir(exist_ok=True)
    (cache / "venv/bin").mkdir(parents=True, exist_ok=True)
    stubs = {cache / "venv/bin/virtme-configkernel":
             'o=${2#O=}; mkdir -p "$o"; echo "CONFIG_BASE=y" >"$o/.config"; '
             f'echo run >>"{tmp_path}/vng-runs"',
             src / "scripts/kconfig/merge_config.sh": None,
             bindir / "make": olddefconfig}
    for path, body in stubs.items():
        if body is not None:
            path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    env = dict(os.environ, NAPI_CACHE=str(cache), PATH=f"{bindir}:{os.environ['PATH']}")
    proc = subprocess.run(["bash", os.path.join(TOP, "workbench", "tree", "configure.sh"), str(src),
                           str(obj), flavour], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    return proc, obj


@pytest.mark.parametrize("flavour, extra, modules", [
    ("debug", None, "y"), ("kasan", "kasan.config", "y"), ("nodebug", "nodebug.config", "y"),
    ("bisect", "bisect.config", "m")])
def test_flavour_merges_its_fragments(tmp_path, flavour, extra, modules):
    proc, obj = configure(tmp_path, flavour)
    assert proc.returncode == 0, proc.stderr
    merged = (obj / ".config.fragment").read_text()
    wanted = ["series.config", "debug.config", "vm-trim.config"] + ([extra] if extra else [])
    for name in wanted:
        with open(os.path.join(TOP, "config", name)) as fp:
            first = next(line for line in fp if line.startswith("CONFIG_"))
        assert first.replace("=m\n", f"={modules}\n") in merged, (name, first)
    others = {"kasan.config", "nodebug.config", "bisect.config", "rt.config", "kcsan.config"}
    for name in others - set(wanted):
        with open(os.path.join(TOP, "config", name)) as fp:
            own = [line for line in fp if line.startswith("CONFIG_")]
        assert not set(own) <= set(merged.splitlines(True)), name
    config = (obj / ".config").read_text()
    assert f"CONFIG_SELFTEST_NET={modules}\n" in config


def test_unchanged_fragments_skip_and_unknown_flavour_fails(tmp_path):
    assert configure(tmp_path, "debug")[0].returncode == 0
    assert configure(tmp_path, "debug")[0].returncode == 0
    assert (tmp_path / "vng-runs").read_text() == "run\n"
    proc, _ = configure(tmp_path, "fast")
    assert proc.returncode != 0 and "unknown config flavour fast" in proc.stderr


def test_option_dropped_by_olddefconfig_fails(tmp_path):
    with open(os.path.join(TOP, "config", "series.config")) as fp:
        option = next(line for line in fp if line.startswith("CONFIG_")).split("=")[0]
    proc, _ = configure(tmp_path, "debug",
                        olddefconfig=f'sed -i "/^{option}=/d" "${{4#O=}}/.config"')
    assert proc.returncode != 0
    assert f"wanted {option}=" in proc.stderr and "lost requested options" in proc.stderr


def test_subset_asks_only_for_options_its_tree_defines(tmp_path):
    """A subset of the series has no test tooling: the debug option it
    lacks is not asked for; one its Kconfig defines still is."""
    drop = 'sed -i "/^CONFIG_DEBUG_NET_NAPI_RACES=/d" "${4#O=}/.config"'
    proc, _ = configure(tmp_path, "subset", olddefconfig=drop)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "src" / "net").mkdir(exist_ok=True)
    (tmp_path / "src" / "net" / "Kconfig.debug").write_text("config DEBUG_NET_NAPI_RACES\n")
    (tmp_path / "obj" / ".config.fragments").unlink()
    proc, _ = configure(tmp_path, "subset", olddefconfig=drop)
    assert proc.returncode != 0
    assert "wanted CONFIG_DEBUG_NET_NAPI_RACES=y" in proc.stderr


def test_nodebug_turns_off_the_sub_options_of_what_it_turns_off():
    """olddefconfig drops DEBUG_OBJECTS_TIMERS with DEBUG_OBJECTS; unless
    nodebug.config says so too, the nodebug flavour (make bench) fails
    with "kernel config lost requested options"."""
    def options(name):
        with open(os.path.join(TOP, "config", name)) as f:
            return [line for line in f if "CONFIG_" in line]
    off = {line.split()[1] for line in options("nodebug.config") if line.startswith("# CONFIG_")}
    wanted = {line.split("=")[0] for line in options("debug.config") if line.startswith("CONFIG_")}
    missing = sorted(o for o in wanted if o not in off and any(o.startswith(f + "_") for f in off))
    assert missing == [], f"nodebug.config must turn these off too: {missing}"


def _flavour(**env):
    script = f". {os.path.join(TOP, 'workbench', 'lib.sh')}; echo $FLAVOUR $OBJ"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "NAPI_CACHE": "/c", **env})


def test_up_flavour_has_its_own_build_directory():
    proc = _flavour(UP="1")
    assert proc.stdout.split() == ["up", "/c/obj-up"]
    assert _flavour(UP="0").stdout.split() == ["debug", "/c/obj"]


def test_two_flavours_at_once_are_refused():
    proc = _flavour(KASAN="1", UP="1")
    assert proc.returncode != 0
    assert "one kernel flavour at a time, not: KASAN=1 UP=1" in proc.stderr
