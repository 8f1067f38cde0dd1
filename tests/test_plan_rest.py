"""workbench/vm/plan-rest.py: after a VM died, the entries still to run."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "workbench" / "vm" / "plan-rest.py"
PLAN = ["drivers/net:late_irq.py 360 e1000e", "drivers/net:napi_reconfig.py 990 e1000e X=1",
        "drivers/net:late_irq.py 360 virtio", "net:napi_config.py 360"]


def vm(tmp_path, ran, current=None, finished=False, plan=PLAN):
    (tmp_path / "plan").write_text("".join(f"{line}\n" for line in plan))
    (tmp_path / "guest-results.jsonl").write_text(
        "".join(json.dumps({"test": t, "rc": 0}) + "\n" for t in ran))
    if current:
        (tmp_path / "current-test").write_text(current + "\n")
    if finished:
        (tmp_path / "guest-finished").write_text("done\n")
    proc = subprocess.run([sys.executable, SCRIPT, tmp_path], capture_output=True, text=True)
    blamed = (tmp_path / "current-test").read_text().strip() if (tmp_path / "current-test").exists() else None
    return proc.returncode, proc.stdout.splitlines(), (tmp_path / "plan").read_text().splitlines(), blamed


def test_a_crash_leaves_the_rest_for_the_next_vm(tmp_path):
    rc, rest, plan, blamed = vm(tmp_path, ["drivers/net:late_irq.py@e1000e"],
                                current="drivers/net:napi_reconfig.py@e1000e")
    assert rc == 0
    assert plan == PLAN[:2]          # the report counts the crash in this VM
    assert rest == PLAN[2:]
    assert blamed == "drivers/net:napi_reconfig.py@e1000e"


def test_a_death_between_two_tests_is_the_next_ones(tmp_path):
    # current-test still names the last test, which has its result.
    rc, rest, plan, blamed = vm(tmp_path, ["drivers/net:late_irq.py@e1000e"],
                                current="drivers/net:late_irq.py@e1000e")
    assert (rc, plan, rest) == (0, PLAN[:2], PLAN[2:])
    assert blamed == "drivers/net:napi_reconfig.py@e1000e"


def test_entries_with_the_same_name_are_counted_by_position(tmp_path):
    plan = [PLAN[0], PLAN[2], PLAN[0], PLAN[3]]
    rc, rest, cut, _ = vm(tmp_path, ["drivers/net:late_irq.py@e1000e"],
                          current="drivers/net:late_irq.py@virtio", plan=plan)
    assert (rc, cut, rest) == (0, plan[:2], plan[2:])


def test_a_vm_that_ran_everything_leaves_nothing(tmp_path):
    rc, rest, plan, _ = vm(tmp_path, ["drivers/net:late_irq.py@e1000e", "drivers/net:napi_reconfig.py@e1000e",
                                      "drivers/net:late_irq.py@virtio", "net:napi_config.py"], finished=True)
    assert (rc, rest, plan) == (0, [], PLAN)


def test_a_vm_that_ran_nothing_stops_the_retries(tmp_path):
    rc, rest, plan, _ = vm(tmp_path, [])
    assert rc == 1 and rest == [] and plan == PLAN
