import os
import subprocess
import sys

import splat
from conftest import FIXTURES as FIX, fixture_text


def scan(name):
    return splat.scan(fixture_text(name))


def test_clean_log_has_no_splat():
    assert scan("clean.dmesg") == []


def test_warning_found_once_per_line():
    kinds = [s["kind"] for s in scan("warn.dmesg")]
    assert kinds == ["warning", "warning"]


def test_every_kind_detected():
    kinds = {s["kind"] for s in scan("splats.dmesg")}
    assert {"kfence", "lockdep", "rcu_stall", "hung_task", "oops",
            "atomic_sleep", "tx_timeout"} <= kinds


def test_cli_exit_codes(tmp_path):
    script = os.path.join(os.path.dirname(__file__), "..", "workbench", "report", "splat.py")
    ok = subprocess.run([sys.executable, script, os.path.join(FIX, "clean.dmesg")])
    bad = subprocess.run([sys.executable, script, os.path.join(FIX, "warn.dmesg")],
                         capture_output=True)
    missing = subprocess.run([sys.executable, script, str(tmp_path / "nope")],
                             capture_output=True)
    assert (ok.returncode, bad.returncode, missing.returncode) == (0, 1, 2)
