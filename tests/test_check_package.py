"""check-package.sh with package.sh and vm.sh stubbed: fake .deb files
stand in for bindeb-pkg's, a fake guest for the VM. Shows what the check
accepts and what it names as missing."""
import json
import os
import shutil
import subprocess

from conftest import stub_script

TOP = os.path.join(os.path.dirname(__file__), "..")
RELEASE = "6.12.117"

# package.sh OBJ DEST: fake packages of RELEASE in DEST, and the real
# napi-tools package. $SKIP names a file left out; the libc-dev netdev.h
# carries the series' napi-set.
PACKAGE_STUB = r"""#!/bin/bash
set -e
dest=$2 r=6.12.117
mk() { # package version files...
	local d; d=$(mktemp -d); shift 0
	mkdir -p "$d/DEBIAN"
	printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: t <t@invalid>\nDescription: t\n' "$1" "$2" >"$d/DEBIAN/control"
	local p=$1; shift 2
	for f; do [ "$f" = "${SKIP:-}" ] && continue; mkdir -p "$d/$(dirname "$f")"; echo NETDEV_CMD_NAPI_SET >"$d/$f"; done
	mkdir -p "$dest"; dpkg-deb -Zgzip --build "$d" "$dest/${p}_$r-1_amd64.deb" >/dev/null
}
mk linux-image-$r $r-1 boot/vmlinuz-$r boot/config-$r boot/System.map-$r lib/modules/$r/modules.builtin
mk linux-headers-$r $r-1 usr/src/linux-headers-$r/Makefile usr/src/linux-headers-$r/Module.symvers
mk linux-libc-dev $r-1 usr/include/linux/netdev.h
"$(dirname "$0")/package/package-tools.sh" "$dest"
"""

# vm.sh KERNEL RWDIR TIMEOUT CMD: a guest that boots KERNEL's release and
# passes the test, unless $BOOT_FAILS.
VM_STUB = r"""#!/bin/bash
[ -n "${BOOT_FAILS:-}" ] && exit 124
[ -f "$1" ] || exit 1
echo 6.12.117 >"$2/guest-kernel"
mkdir -p "$2/tests"
printf 'TAP version 13\n1..1\n# ok 1 napi_list\nok 1 selftests: net: nl_netdev.py\n' >"$2/tests/net_nl_netdev.py.tap"
echo "[ 1.0] booted" >"$2/console.log"
"""


def check_package(tmp_path, **env_extra):
    top = tmp_path / "top"
    shutil.copytree(os.path.join(TOP, "workbench"), top / "workbench")
    shutil.copytree(os.path.join(TOP, "tools"), top / "tools")
    for name, body in (("package.sh", PACKAGE_STUB), ("vm.sh", VM_STUB)):
        stub_script(top, name, body)
    obj = tmp_path / "obj" / "include" / "config"
    obj.mkdir(parents=True)
    (obj / "kernel.release").write_text(RELEASE + "\n")
    out = tmp_path / "package.json"
    env = dict(os.environ, NAPI_CACHE=str(tmp_path / "cache"), RESULTS=str(tmp_path / "results"),
               **env_extra)
    subprocess.run([str(top / "workbench" / "package" / "check-package.sh"), str(tmp_path / "obj"), str(out)],
                   env=env, check=True, capture_output=True, text=True)
    return {r["name"]: r for r in json.loads(out.read_text())}


def test_good_packages_pass(tmp_path):
    res = check_package(tmp_path)
    assert [(n, r["status"]) for n, r in res.items()] == [
        ("package:metadata", "pass"), ("package:contents", "pass"), ("package:boot", "pass")]


def test_missing_modules_and_failed_boot_are_named(tmp_path):
    res = check_package(tmp_path, SKIP=f"lib/modules/{RELEASE}/modules.builtin", BOOT_FAILS="1")
    assert res["package:metadata"]["status"] == "pass"
    assert res["package:contents"]["reason"] == f"no lib/modules/{RELEASE}/modules.builtin"
    assert res["package:boot"]["status"] == "fail"
    assert res["package:boot"]["reason"].startswith("the packaged image did not boot")
