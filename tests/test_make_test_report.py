import json
import os
import subprocess
import sys

REPORT = os.path.join(os.path.dirname(__file__), "..", "workbench", "report", "make-test-report.py")
FIX = os.path.join(os.path.dirname(__file__), "fixtures")


def make_run(tmp_path, finished, died_in=None, console="", plan="net:a.py 10\nnet:b.py 10\n"):
    vm = tmp_path / "vm" / "tests"
    vm.mkdir(parents=True)
    lines = []
    for name, tapfile, dmesg in finished:
        base = name.replace(":", "_").replace("/", "_").replace("@", "_")
        (vm / (base + ".tap")).write_text(open(os.path.join(FIX, tapfile)).read())
        (vm / (base + ".dmesg")).write_text(open(os.path.join(FIX, dmesg)).read())
        lines.append(json.dumps({"test": name, "rc": 0, "seconds": 1.0, "timeout": 10}))
    (tmp_path / "vm" / "plan").write_text(plan)
    (tmp_path / "vm" / "guest-results.jsonl").write_text("\n".join(lines) + "\n")
    if died_in:
        (tmp_path / "vm" / "current-test").write_text(died_in + "\n")
    (tmp_path / "vm" / "console.log").write_text(console)
    proc = subprocess.run([sys.executable, REPORT,
                           "--results", str(tmp_path)],
                          capture_output=True, text=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    return proc, {r["name"]: r for r in summary["results"]}


def one_test_run(tmp_path, tap, stacks=None):
    """make-test-report.py's output for one test net:a.py with TAP output TAP
    (and a .stacks file STACKS), its kernel log clean."""
    vm = tmp_path / "vm" / "tests"
    vm.mkdir(parents=True)
    (vm / "net_a.py.tap").write_text(tap)
    (vm / "net_a.py.dmesg").write_text(open(os.path.join(FIX, "clean.dmesg")).read())
    if stacks:
        (vm / "net_a.py.stacks").write_text(stacks)
    (tmp_path / "vm" / "guest-results.jsonl").write_text(
        json.dumps({"test": "net:a.py", "rc": 1, "seconds": 1.0, "timeout": 10}) + "\n")
    (tmp_path / "vm" / "plan").write_text("net:a.py 10\n")
    return subprocess.run([sys.executable, REPORT, "--results",
                           str(tmp_path)], capture_output=True, text=True)


def test_splat_fails_a_passing_test(tmp_path):
    proc, res = make_run(tmp_path, [("net:a.py", "skip.tap", "clean.dmesg"),
                                    ("net:b.py", "skip.tap", "warn.dmesg")])
    assert res["net:a.py"]["status"] == "skip"
    assert res["net:b.py"]["status"] == "fail"
    assert "warning" in res["net:b.py"]["reason"]
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed, 1 skipped"


def test_crash_is_attributed_to_the_running_test(tmp_path):
    console = "[ 30.0] Oops: int3: 0000 [#1] PREEMPT SMP\n[ 30.1] RIP: enqueue_timer\n"
    proc, res = make_run(tmp_path, [("net:a.py", "skip.tap", "clean.dmesg")],
                         died_in="net:b.py", console=console)
    assert res["net:b.py"]["status"] == "fail"
    assert res["net:b.py"]["reason"].startswith("VM died during this test: kernel oops")
    assert res["net:b.py"]["splats"][0]["kind"] == "oops"
    assert proc.returncode == 1


def test_missing_dmesg_fails(tmp_path):
    make_run(tmp_path, [("net:a.py", "skip.tap", "clean.dmesg")])
    os.unlink(tmp_path / "vm" / "tests" / "net_a.py.dmesg")
    subprocess.run([sys.executable, REPORT,
                    "--results", str(tmp_path)], capture_output=True, text=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    first = summary["results"][0]
    assert first["status"] == "fail" and "splat scan impossible" in first["reason"]


def test_xfail_is_counted_apart_and_not_as_passed(tmp_path):
    known = tmp_path / "known"
    known.write_text("net:a.py bad.case reason outside the series\n")
    fails = tmp_path / "fail.tap"
    fails.write_text("# ok 1 good.case\n# not ok 2 bad.case\nnot ok 1 selftests: net: a.py # exit=1\n")
    vm = tmp_path / "vm" / "tests"
    vm.mkdir(parents=True)
    (vm / "net_a.py.tap").write_text(fails.read_text())
    (vm / "net_a.py.dmesg").write_text(open(os.path.join(FIX, "clean.dmesg")).read())
    (tmp_path / "vm" / "guest-results.jsonl").write_text(
        json.dumps({"test": "net:a.py", "rc": 1, "seconds": 1.0, "timeout": 10}) + "\n")
    (tmp_path / "vm" / "plan").write_text("net:a.py 10\n")
    proc = subprocess.run([sys.executable, REPORT, "--results",
                           str(tmp_path), "--known-failures", str(known),
                           "--base", "Debian linux-source-6.12 6.12.117-1~deb12u1"],
                          capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0
    assert lines[0] == "Base: Debian linux-source-6.12 6.12.117-1~deb12u1"
    assert lines[-2] == "1 expected failures (XFAIL, not counted as passed): net:a.py"
    assert lines[-1] == "0 passed, 0 failed, 0 skipped"


def test_a_test_on_a_real_nic_is_its_own_entry(tmp_path):
    proc, res = make_run(tmp_path, [("drivers/net:a.py", "skip.tap", "clean.dmesg"),
                                    ("drivers/net:a.py@igb", "skip.tap", "warn.dmesg")],
                         plan="drivers/net:a.py 10\ndrivers/net:a.py 10 igb\n")
    assert res["drivers/net:a.py"]["status"] == "skip"
    assert res["drivers/net:a.py@igb"]["status"] == "fail"
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed, 1 skipped"


def test_a_failed_case_shows_why(tmp_path):
    proc = one_test_run(tmp_path, "# # polls: 0\n# # Check failed 0 < 1 no poll by a kthread\n"
                                  "# not ok 1 a.case\nnot ok 1 selftests: net: a.py # exit=1\n")
    assert "      not ok: a.case\n        | polls: 0\n" \
           "        | Check failed 0 < 1 no poll by a kthread\n" in proc.stdout


def cut_run(tmp_path, *flags):
    """A VM run in which the budget left net:b.py out, reported with FLAGS."""
    make_run(tmp_path, [("net:a.py", "skip.tap", "clean.dmesg")])
    with open(tmp_path / "vm" / "guest-results.jsonl", "a") as fp:
        fp.write(json.dumps({"test": "net:b.py", "rc": -1, "seconds": 0, "timeout": 10,
                             "budget": 4000, "left": 7}) + "\n")
    proc = subprocess.run([sys.executable, REPORT,
                           "--results", str(tmp_path), *flags], capture_output=True, text=True)
    return proc, json.loads((tmp_path / "summary.json").read_text())["results"][1]


def test_a_test_the_budget_cut_fails_the_run(tmp_path):
    proc, cut = cut_run(tmp_path)
    assert proc.returncode == 1
    assert cut["status"] == "fail"
    assert cut["reason"] == ("not run: its 10s limit exceeded the 7s left of the selftests' "
                             "4000s (MAKE_TEST_BUDGET; MAKE_TEST_CUTS=1 accepts the cut)")
    assert proc.stdout.splitlines()[-2] == ("1 selftests not run, cut by MAKE_TEST_BUDGET "
                                            "(failed): net:b.py")


def test_a_cut_asked_for_is_a_named_skip(tmp_path):
    proc, cut = cut_run(tmp_path, "--cuts-allowed")
    assert proc.returncode == 0
    assert cut["status"] == "skip"
    assert cut["reason"].endswith("(MAKE_TEST_BUDGET, cut as MAKE_TEST_CUTS=1 asked)")
    assert proc.stdout.splitlines()[-2] == ("1 selftests not run, cut by MAKE_TEST_BUDGET "
                                            "(skipped, as MAKE_TEST_CUTS=1 asked): net:b.py")


def test_a_timed_out_test_shows_its_blocked_tasks(tmp_path):
    proc = one_test_run(
        tmp_path, "not ok 1 selftests: net: a.py # TIMEOUT 10 seconds\n",
        stacks="  PID   TID STAT WCHAN COMMAND\n"
               "== /proc/1/task/1 S init\n[<0>] do_wait+0x1/0x2\n"
               "== /proc/7/task/7 D ip\n[<0>] napi_disable+0x10/0x20\n[<0>] dev_close+0x1/0x2\n")
    assert "      blocked: /proc/7/task/7 D ip\n        napi_disable+0x10/0x20\n" \
           "        dev_close+0x1/0x2\n" in proc.stdout, proc.stdout
    assert "init" not in proc.stdout


def test_the_results_of_every_vm_are_read_in_order(tmp_path):
    make_run(tmp_path, [("net:a.py", "skip.tap", "clean.dmesg")], plan="net:a.py 10\n")
    second = tmp_path / "vm2"
    (second / "tests").mkdir(parents=True)
    (second / "plan").write_text("net:b.py 10\n")
    (second / "tests" / "net_b.py.tap").write_text(open(os.path.join(FIX, "skip.tap")).read())
    (second / "tests" / "net_b.py.dmesg").write_text(open(os.path.join(FIX, "warn.dmesg")).read())
    (second / "guest-results.jsonl").write_text(
        json.dumps({"test": "net:b.py", "rc": 0, "seconds": 1.0, "timeout": 10}) + "\n")
    proc = subprocess.run([sys.executable, REPORT,
                           "--results", str(tmp_path)], capture_output=True, text=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(r["name"], r["status"]) for r in summary["results"]] == [
        ("net:a.py", "skip"), ("net:b.py", "fail")]
    assert proc.returncode == 1


def test_an_entry_with_settings_keeps_its_name(tmp_path):
    proc, res = make_run(tmp_path, [("drivers/net:a.py@igb", "skip.tap", "clean.dmesg")],
                         plan="drivers/net:a.py 10 igb CASES=x,y\n")
    assert list(res) == ["drivers/net:a.py@igb"]


def test_a_retried_entry_says_it_ran_twice(tmp_path):
    vm = tmp_path / "vm" / "tests"
    vm.mkdir(parents=True)
    (vm / "net_a.py.tap").write_text("TAP version 13\n1..1\nok 1 selftests: net: a.py\n")
    (vm / "net_a.py.dmesg").write_text(open(os.path.join(FIX, "clean.dmesg")).read())
    (tmp_path / "vm" / "guest-results.jsonl").write_text(json.dumps(
        {"test": "net:a.py", "rc": 0, "seconds": 1.0, "timeout": 10,
         "retried": "udevd closed its control connection"}) + "\n")
    (tmp_path / "vm" / "plan").write_text("net:a.py 10\n")
    proc = subprocess.run([sys.executable, REPORT, "--results",
                           str(tmp_path)], capture_output=True, text=True)
    res = json.loads((tmp_path / "summary.json").read_text())["results"][0]
    assert res["status"] == "pass", proc.stdout
    assert res["reason"] == ("second run: the first failed because udevd closed its control"
                             " connection (output in net_a.py.try1.tap)")
    assert "second run" in proc.stdout


def test_a_failed_case_fails_a_test_that_exited_0(tmp_path):
    from test_tap import FAILED_THEN_SKIPPED
    proc = one_test_run(tmp_path, FAILED_THEN_SKIPPED)
    summary = json.loads((tmp_path / "summary.json").read_text())
    res = summary["results"][0]
    assert res["status"] == "fail"
    assert res["reason"] == ("failed case napi_races.synchronize_vs_busy_poll_stop although "
                             "the test exited pass")
    assert proc.returncode == 1
