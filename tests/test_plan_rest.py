"""workbench/vm/plan-rest.py: after a VM died, the entries still to run."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "workbench" / "vm" / "plan-rest.py"
PLAN = ["drivers/net:late_irq.py 360 e1000e", "drivers/net:napi_reconfig.py 990 e1000e X=1",
        "drivers/net:late_irq.py 360 virtio", "net:napi_config.py 360"]


def vm(tmp_path, ran, died_in=None):
    (tmp_path / "plan").write_text("".join(f"{line}\n" for line in PLAN))
    (tmp_path / "guest-results.jsonl").write_text(
        "".join(json.dumps({"test": t, "rc": 0}) + "\n" for t in ran))
    if died_in:
        (tmp_path / "current-test").write_text(died_in + "\n")
    proc = subprocess.run([sys.executable, SCRIPT, tmp_path], capture_output=True, text=True)
    return proc.returncode, proc.stdout.splitlines(), (tmp_path / "plan").read_text().splitlines()


def test_a_crash_leaves_the_rest_for_the_next_vm(tmp_path):
    rc, rest, plan = vm(tmp_path, ["drivers/net:late_irq.py@e1000e"],
                        died_in="drivers/net:napi_reconfig.py@e1000e")
    assert rc == 0
    assert plan == PLAN[:2]          # the report counts the crash in this VM
    assert rest == PLAN[2:]


def test_a_vm_that_ran_everything_leaves_nothing(tmp_path):
    rc, rest, plan = vm(tmp_path, ["drivers/net:late_irq.py@e1000e", "drivers/net:napi_reconfig.py@e1000e",
                                   "drivers/net:late_irq.py@virtio", "net:napi_config.py"])
    assert (rc, rest, plan) == (0, [], PLAN)


def test_a_vm_that_ran_nothing_stops_the_retries(tmp_path):
    rc, rest, plan = vm(tmp_path, [])
    assert rc == 1 and rest == [] and plan == PLAN
