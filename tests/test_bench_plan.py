"""workbench/bench.sh's boots, in a copy of the workbench whose VM is a
stub that records how it was started: which plans boot under which of
TCG's schedulers, and with what."""
import os
import shutil
import subprocess

import pytest

from conftest import stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")


def bench_boots(tmp_path, plan, env_extra=None):
    """Run bench.sh PLAN on a stub kernel; one dict per boot of the VM."""
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    (top / "bench").mkdir()
    (top / "bench" / "Makefile").write_text("all:\n")
    for name, body in (("vm.sh", 'echo "$VM_TCG_THREAD|$VM_CPUS|$VM_APPEND|$4" >>"$BOOTS"\n'
                                  'echo 0 >"$2/guest-finished"\n'
                                  'echo \'{"ok": true}\' >"$2/runbook-dryrun.json"'),
                       ("vm-accel.sh", "echo tcg")):
        stub_script(top, name, "#!/bin/bash\n" + body + "\n")
    stubs = {
        top / "bench" / "napi_struct_layout.sh": "exit 0",
        tmp_path / "bin" / "qemu-system-x86_64": "echo 'name \"igb\", bus PCI'",
        tmp_path / "bin" / "python3": 'case "$1" in *insn_ranges.py) exit 1 ;; esac\n'
                                      'exec /usr/bin/python3 "$@"',
    }
    (tmp_path / "bin").mkdir()
    for path, body in stubs.items():
        path.write_text("#!/bin/bash\n" + body + "\n")
        path.chmod(0o755)
    # Started by python3: no splat, no report.
    stub_script(top, "splat.py", "print('[]')\n")
    (top / "bench" / "bench_report.py").write_text("")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BENCH_", "VM_")) and k not in ("RESULTS", "BASELINE")}
    env.update(NAPI_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path),
               BOOTS=str(tmp_path / "boots"), RESULTS=str(tmp_path / "results"),
               PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", **(env_extra or {}))
    proc = subprocess.run([str(top / "workbench" / "bench.sh"), plan, str(tmp_path / "obj")],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    boots = []
    for line in (tmp_path / "boots").read_text().splitlines():
        thread, cpus, append, command = line.split("|")
        boots.append({"thread": thread or "default", "cpus": cpus, "append": append,
                      "plan": command.split()[-4]})
    return boots


@pytest.mark.parametrize("plan, env, boots", [
    # The spinning modes' verdicts need both schedulers.
    ("spinning", {}, [("spinning", "single"), ("spinning", "multi")]),
    ("full", {}, [("full", "default"), ("spinning", "single"), ("spinning", "multi"),
                  ("runbook", "default")]),
    ("full", {"BENCH_SPINNING": "0", "BENCH_RUNBOOK_DRYRUN": "0"},
     [("full", "default")]),
    ("smoke", {}, [("smoke", "default")]),
])
def test_plans_boot_under_the_schedulers_their_verdicts_need(tmp_path, plan, env, boots):
    assert [(b["plan"], b["thread"]) for b in bench_boots(tmp_path, plan, env)] == boots


def test_multi_threaded_boot_switches_the_events_on_at_boot(tmp_path):
    """Multi-threaded TCG now and then kills the guest when a tracepoint
    is switched on at run time; every boot has a CPU for the matched
    control's spinner."""
    single, multi = bench_boots(tmp_path, "spinning")
    assert "trace_event=" not in single["append"]
    assert "trace_event=napi:napi_poll," in multi["append"]
    assert single["cpus"] == multi["cpus"] == "5"
