"""make test (workbench/test.sh) in a copy of the workbench whose costly
steps are stubs: a step that dies is a failure named in the report, never
a silent gap."""
import os
import re
import shutil
import subprocess
import sys

from conftest import stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")


def make_test(tmp_path, stubs, path_stubs=None, env_extra=None):
    """Run test.sh with workbench scripts (STUBS) and commands on PATH
    (PATH_STUBS) replaced by the given shell bodies."""
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    shutil.copytree(os.path.join(TOP, "tools"), top / "tools")
    (top / "tests").mkdir()
    (top / "tests" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # The project's scripts by name, wherever they live; commands on PATH.
    for name, body in stubs.items():
        stub_script(top, name, "#!/bin/bash\n" + body + "\n")
    for name, body in (path_stubs or {}).items():
        (bindir / name).write_text("#!/bin/bash\n" + body + "\n")
        (bindir / name).chmod(0o755)
    venv = tmp_path / "cache" / "venv" / "bin"
    venv.mkdir(parents=True)
    # A wrapper, not a link: a venv's python finds its packages only
    # when started from its own directory.
    (venv / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (venv / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TESTS", "RESULTS", "SKIP_STATIC", "KASAN", "OBJ", "VM_ACCEL",
                        "BASE_VERSION", "KERNEL_SRC", "PATCHES",
                        # make test-subsets runs the unit tests with these
                        "SUBSET", "SELFTESTS_LIST", "BENCH_SMOKE", "PACKAGE_CHECK",
                        "BENCH_VM_TIMEOUT", "KASAN_TIMEOUT_SCALE", "MAKE_TEST_BUDGET",
                        "MAKE_TEST_CUTS", "FREEZE_CHECK", "FREEZE_CYCLES",
                        "FREEZE_CHECK_TIMEOUT")}
    env.update(NAPI_CACHE=str(tmp_path / "cache"), HOME=str(tmp_path),
               PATH=f"{bindir}:{os.environ['PATH']}", **(env_extra or {}))
    proc = subprocess.run([str(top / "workbench" / "test.sh")], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout.splitlines()


# Stubs for the steps before the build, all passing.
STATIC_STEPS_PASS = {
    "deps.sh": "exit 0",
    "fetch-base.sh": "exit 0",
    "napi-audit.py": "exit 0",
    "prepare-tree.sh": "exit 0",
    "check-test-only.py": "exit 0",
    "check-provenance.py": "exit 0",
    "check-newest.sh": "echo '[]' >\"$1\"",
    "lint.sh": "echo '[]' >\"$1\"",
}


def test_crashed_check_patches_is_a_named_failure(tmp_path):
    proc, lines = make_test(tmp_path, {
        **STATIC_STEPS_PASS,
        # Dies as a crash would: no static.json.
        "check-patches.sh": "echo 'W=1 build of net/core/dev.o ...' >&2; kill -SEGV $$",
        "build.sh": "exit 1",
    })
    assert proc.returncode != 0
    assert any(line.startswith("FAIL  check-patches - no static.json: check-patches died")
               for line in lines), lines
    # passed: unit tests, audit, series:apply, test-only, provenance;
    # failed: check-patches, build
    assert lines[-1] == "5 passed, 2 failed, 0 skipped"


def test_make_test_keeps_other_targets_results(tmp_path):
    """make test replaces its own results only: a finished make bench
    (hours of work) and the demo stay; the kernel build log is kept with
    the results."""
    results = tmp_path / "top" / "build" / "results"
    for kept in ("bench/bench.md", "demo/demo.log"):
        (results / kept).parent.mkdir(parents=True)
        (results / kept).write_text("kept\n")
    (results / "test").mkdir()
    (results / "test" / "stale.log").write_text("old run\n")
    obj = tmp_path / "cache" / "obj"
    proc, lines = make_test(tmp_path, {
        **STATIC_STEPS_PASS,
        "build.sh": f"mkdir -p {obj}; echo 'error: it broke' >{obj}/build.log; exit 1",
    }, env_extra={"SKIP_STATIC": "1"})
    assert proc.returncode != 0
    assert (results / "bench" / "bench.md").read_text() == "kept\n"
    assert (results / "demo" / "demo.log").read_text() == "kept\n"
    assert not (results / "test" / "stale.log").exists()
    assert "it broke" in (results / "test" / "kernel-build.log").read_text()
    assert any("see build/results/test/kernel-build.log" in line for line in lines), lines


def test_missing_base_is_a_named_failure(tmp_path):
    # The real fetch-base.sh, with an archive that no longer has the pin.
    proc, lines = make_test(tmp_path, {"deps.sh": "exit 0"},
                            path_stubs={"apt-get": "echo 'E: Version not found' >&2; exit 100"})
    assert proc.returncode != 0
    fails = [line for line in lines if line.startswith("FAIL  base:fetch")]
    assert fails and "is not in the archive" in fails[0], lines
    assert lines[-1] == "1 passed, 1 failed, 0 skipped"


def test_plan_takes_several_filters_and_boots_their_nics(tmp_path):
    """TESTS takes comma-separated substrings of "collection:test@NIC";
    the VM gets a pair of each NIC model the plan names (VM_NICS), and a
    model this QEMU lacks is named in the SKIP reason instead."""
    proc, lines = make_test(tmp_path, {
        **STATIC_STEPS_PASS,
        "build.sh": "exit 0",
        "ksft-install.sh": "exit 0",
        "vm-accel.sh": "echo tcg",
        "vm.sh": 'echo "VM_NICS=$VM_NICS VM_NETWORK=${VM_NETWORK:-} CMD=$4" >"$2/vm-env"',
    }, path_stubs={"qemu-system-x86_64":
                   # Long output: a reader that stops early kills it with
                   # SIGPIPE, which pipefail must not turn into an exit.
                   'echo \'name "igb", bus PCI\'; echo "QEMU 10"; sleep 0.2; seq 100000'},
        env_extra={"TESTS": "napi_reconfig.py@e1000e,napi_id.py@igb,napi_reconfig.py@virtio",
                   "SKIP_STATIC": "1", "VM_SHARDS": "2"})
    results = tmp_path / "top" / "build" / "results" / "test"
    # One entry per filter and NIC; the timeouts (x3 here, a slow
    # machine) follow selftests.list and are not this test's business.
    plan = [line.split() for line in (results / "plan").read_text().splitlines()]
    assert [(name, nic) for name, _, nic, *_ in plan] == [
        ("drivers/net:napi_reconfig.py", "e1000e"),
        ("drivers/net:napi_id.py", "igb"),
        ("drivers/net:napi_reconfig.py", "virtio")], plan
    # Two VMs side by side, each booted with the NICs of its part only;
    # the virtio entry's settings after its NIC still get it the loop.
    first, second = ((results / d / "vm-env").read_text() for d in ("vm", "vm2"))
    assert "VM_NICS=igb " in first and "VM_NETWORK= " in first, first
    assert "cannot emulate e1000e" in first, first
    assert "VM_NICS= " in second and "VM_NETWORK=loop " in second, second
    assert "GUEST_BUDGET=" in second, second


def test_use_nic_adds_each_model_once(tmp_path):
    """make test exports VM_NICS for the selftests and the bench smoke run
    adds igb again: a model listed twice is two QEMU devices with one ID."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "qemu-system-x86_64").write_text(
        "#!/bin/sh\necho 'name \"igb\", bus PCI'; echo 'name \"e1000e\", bus PCI'\n")
    (bindir / "qemu-system-x86_64").chmod(0o755)
    script = (f'. "{TOP}/workbench/lib.sh"; VM_NICS="e1000e igb"; '
              'use_nic igb x; use_nic e1000e x; echo "$VM_NICS"')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}"))
    assert proc.stdout.split() == ["e1000e", "igb"], proc.stdout


def test_plan_scales_time_limits_for_the_machine(tmp_path):
    """Each plan entry's limit is selftests.list's, times 3 under TCG and
    4 again for KASAN; both make the guest's selftests relax their
    timing (KSFT_MACHINE_SLOW), KVM without KASAN does not."""
    listed = next(int(line.split()[1]) for line in
                  open(os.path.join(TOP, "workbench", "data", "selftests.list"))
                  if line.split()[:1] == ["drivers/net:napi_id.py"] and line.split()[2:] == ["igb"])
    for accel, kasan, scale, slow in (("kvm", "", 1, "no"), ("tcg", "", 3, "yes"),
                                      ("tcg", "1", 12, "yes")):
        run = tmp_path / f"{accel}{kasan}"
        proc, lines = make_test(run, {
            **STATIC_STEPS_PASS,
            "build.sh": "exit 0",
            "ksft-install.sh": "exit 0",
            "vm.sh": 'echo "$4" >"$2/vm-cmd"',
        }, path_stubs={"qemu-system-x86_64": "echo 'name \"igb\", bus PCI'"},
            env_extra={"TESTS": "napi_id.py@igb", "SKIP_STATIC": "1", "VM_ACCEL": accel,
                       "KASAN": kasan})
        results = run / "top" / "build" / "results" / "test" / "vm"
        assert (results / "plan").read_text() == f"drivers/net:napi_id.py {listed * scale} igb\n", \
            (accel, kasan, lines)
        assert f"KSFT_MACHINE_SLOW={slow} " in (results / "vm-cmd").read_text(), (accel, kasan)


def test_guest_checks_the_budget_only_where_it_binds(tmp_path):
    """A plan whose limits fit in MAKE_TEST_BUDGET gets no budget in the
    guest: its check would count the boot against the first test and
    skip a plan of one entry. A budget smaller than the plan is passed."""
    for budget, expected in (("5200", "GUEST_BUDGET= "), ("150", None)):
        run = tmp_path / budget
        make_test(run, {
            **STATIC_STEPS_PASS,
            "build.sh": "exit 0",
            "ksft-install.sh": "exit 0",
            "vm.sh": 'echo "$3 $4" >"$2/vm-cmd"',
        }, path_stubs={"qemu-system-x86_64": "echo 'name \"igb\", bus PCI'"},
            env_extra={"TESTS": "napi_id.py@igb", "SKIP_STATIC": "1", "VM_ACCEL": "kvm",
                       "MAKE_TEST_BUDGET": budget})
        vm_cmd = (run / "top" / "build" / "results" / "test" / "vm" / "vm-cmd").read_text()
        if budget == "5200":
            assert expected in vm_cmd, vm_cmd
            continue
        # 150 s less the VM's boot time (120 s) less the steps so far: a
        # few seconds on a loaded machine.
        left = int(re.search(r"GUEST_BUDGET=(\d+) ", vm_cmd)[1])
        assert 25 <= left <= 30, vm_cmd


def test_a_cut_fails_make_test_unless_asked_for(tmp_path):
    """No budget by default; an entry a budget left out fails the run
    unless MAKE_TEST_CUTS=1 accepted the cut."""
    guest = ('echo \'{"test": "drivers/net:napi_id.py@igb", "rc": -1, "seconds": 0, '
             '"timeout": 60, "budget": 30, "left": 30}\' >"$2/guest-results.jsonl"; '
             'echo "$4" >"$2/vm-cmd"')
    for cuts, rc, verdict in (("", 1, "FAIL"), ("1", 0, "SKIP"), ("0", 1, "FAIL")):
        run = tmp_path / f"cuts{cuts}"
        proc, lines = make_test(run, {
            **STATIC_STEPS_PASS,
            "build.sh": "exit 0",
            "ksft-install.sh": "exit 0",
            "vm.sh": guest,
        }, path_stubs={"qemu-system-x86_64": "echo 'name \"igb\", bus PCI'"},
            env_extra={"TESTS": "napi_id.py@igb", "SKIP_STATIC": "1", "VM_ACCEL": "kvm",
                       "MAKE_TEST_BUDGET": "150", "MAKE_TEST_CUTS": cuts})
        assert proc.returncode == rc, (cuts, lines)
        assert any(line.startswith(f"{verdict}  drivers/net:napi_id.py@igb - not run:")
                   for line in lines), (cuts, lines)
    run = tmp_path / "default"
    make_test(run, {**STATIC_STEPS_PASS, "build.sh": "exit 0", "ksft-install.sh": "exit 0",
                    "vm.sh": 'echo "$4" >"$2/vm-cmd"'},
              path_stubs={"qemu-system-x86_64": "echo 'name \"igb\", bus PCI'"},
              env_extra={"TESTS": "napi_id.py@igb", "SKIP_STATIC": "1", "VM_ACCEL": "kvm"})
    vm_cmd = (run / "top" / "build" / "results" / "test" / "vm" / "vm-cmd").read_text()
    assert "GUEST_BUDGET= " in vm_cmd, vm_cmd


def test_smoke_run_gets_the_slow_kernels_time(tmp_path):
    """The benchmark smoke run boots the test kernel: KASAN slows its guest
    as it slows the selftests (the debug kernel's limit timed out twice
    under KASAN), so its limit takes the same factor."""
    for kasan, limit in (("", "720"), ("1", "2880")):
        run = tmp_path / f"kasan{kasan}"
        make_test(run, {
            **STATIC_STEPS_PASS,
            "build.sh": "exit 0",
            "ksft-install.sh": "exit 0",
            "vm.sh": "exit 0",
            "check-package.sh": "exit 0",
            "virtio-freeze-check.sh": "exit 0",
            "bench.sh": f'echo "$BENCH_VM_TIMEOUT" >{run}/smoke-limit',
        }, env_extra={"SKIP_STATIC": "1", "VM_ACCEL": "kvm", "KASAN": kasan})
        assert (run / "smoke-limit").read_text() == limit + "\n", kasan


def test_freeze_check_runs_in_the_kasan_flavours_full_run(tmp_path):
    """virtio_net's freeze check (a boot of its own) runs by default in
    the KASAN flavour's full run only; FREEZE_CHECK=0 turns it off there,
    1 on anywhere; a failed check is a FAIL with its reason."""
    for kasan, switch, exit_code, line in (
            ("", "", 0, None),
            ("1", "", 0, "PASS  vm:virtio-freeze"),
            ("1", "0", 0, None),
            ("", "1", 0, "PASS  vm:virtio-freeze"),
            ("1", "", 1, "FAIL  vm:virtio-freeze - KASAN: use-after-free")):
        run = tmp_path / f"kasan{kasan}-switch{switch}-exit{exit_code}"
        _, lines = make_test(run, {
            **STATIC_STEPS_PASS, "build.sh": "exit 0", "ksft-install.sh": "exit 0",
            "vm.sh": "exit 0", "check-package.sh": "exit 0", "bench.sh": "exit 0",
            "virtio-freeze-check.sh":
                f'echo "$2" >{run}/cycles; echo "ERROR: KASAN: use-after-free" >&2; exit {exit_code}',
        }, env_extra={"SKIP_STATIC": "1", "VM_ACCEL": "kvm", "KASAN": kasan, "FREEZE_CHECK": switch})
        ran = [x for x in lines if "vm:virtio-freeze" in x]
        assert ran == ([line] if line else []), (kasan, switch, lines)
        assert (run / "cycles").exists() == bool(line)


def test_skip_static_zero_runs_the_per_patch_checks(tmp_path):
    """SKIP_STATIC is a switch: 1 skips the per-patch checks, 0 (or
    unset) runs them, as 0 means off for every switch of the workbench."""
    for skip, ran in (("1", False), ("0", True), ("", True)):
        run = tmp_path / f"skip{skip}"
        make_test(run, {
            **STATIC_STEPS_PASS,
            "check-patches.sh": f"touch {run}/checked; echo '[]' >\"$1\"",
            "build.sh": "exit 1",
        }, env_extra={"SKIP_STATIC": skip})
        assert (run / "checked").exists() == ran, f"SKIP_STATIC={skip!r}"
