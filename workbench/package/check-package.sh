#!/bin/bash
# make test's check of 'make package': package the kernel already built in
# OBJ (no second build), check the .deb metadata and contents, and boot the
# kernel image taken out of the package for one short selftest.
# Results package:metadata, package:contents, package:boot go to the JSON
# list OUT.
# usage: check-package.sh OBJ OUT
#   PACKAGE_BOOT_TEST  the selftest to run (default net:nl_netdev.py)
. "$(dirname "$0")/../lib.sh"
obj=$1 out=$2
dest=$RESULTS/package
rm -rf "$dest" "$out"
KDEB_COMPRESS=gzip "$TOP/workbench/package.sh" "$obj" "$dest/debs"
release=$(cat "$obj/include/config/kernel.release")

deb_of() { # package name
	find "$dest/debs" -maxdepth 1 -name "${1}_*.deb" | head -1
}
# Not grep -q: an early exit would fail the pipeline (pipefail).
has_file() { # deb path
	dpkg-deb --fsys-tarfile "$1" | tar -t | grep -x "\./$2" >/dev/null
}

problems=()
for p in "linux-image-$release" "linux-headers-$release" linux-libc-dev napi-tools; do
	deb=$(deb_of "$p")
	if [ -z "$deb" ]; then
		problems+=("no $p package")
		continue
	fi
	[ "$(dpkg-deb -f "$deb" Package)" = "$p" ] || problems+=("$deb: Package is not $p")
	arch=amd64
	[ "$p" = napi-tools ] && arch=all
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || problems+=("$deb: Architecture not $arch")
	[ -n "$(dpkg-deb -f "$deb" Version)" ] || problems+=("$deb: no Version")
done
[ ${#problems[@]} = 0 ] && add_result "$out" package:metadata package pass ||
	add_result "$out" package:metadata package fail "$(IFS=';'; echo "${problems[*]}")"

problems=()
image=$(deb_of "linux-image-$release") headers=$(deb_of "linux-headers-$release")
libc=$(deb_of linux-libc-dev)
for want in "$image:boot/vmlinuz-$release" "$image:boot/config-$release" \
	"$image:boot/System.map-$release" "$image:lib/modules/$release/modules.builtin" \
	"$headers:usr/src/linux-headers-$release/Makefile" \
	"$headers:usr/src/linux-headers-$release/Module.symvers" \
	"$libc:usr/include/linux/netdev.h" \
	"$(deb_of napi-tools):usr/sbin/napictl"; do
	deb=${want%%:*} file=${want#*:}
	[ -n "$deb" ] && has_file "$deb" "$file" || problems+=("no $file")
done
# The series' uapi must be what userspace gets.
[ -n "$libc" ] && dpkg-deb --fsys-tarfile "$libc" | tar -xO ./usr/include/linux/netdev.h |
	grep NETDEV_CMD_NAPI_SET >/dev/null || problems+=("linux-libc-dev's netdev.h has no NETDEV_CMD_NAPI_SET")
[ ${#problems[@]} = 0 ] && add_result "$out" package:contents package pass ||
	add_result "$out" package:contents package fail "$(IFS=';'; echo "${problems[*]}")"

if [ -z "$image" ]; then
	add_result "$out" package:boot package fail "no linux-image package to boot"
	exit 0
fi
mkdir -p "$dest/image" "$dest/vm"
dpkg-deb -x "$image" "$dest/image"
test=${PACKAGE_BOOT_TEST:-net:nl_netdev.py}
echo "$test 300" >"$dest/vm/plan"
"$TOP/workbench/vm/vm.sh" "$dest/image/boot/vmlinuz-$release" "$dest/vm" 600 \
	"env KSFT_MACHINE_SLOW=yes $TOP/workbench/vm/guest-run-tests.sh $TOP/build/ksft $dest/vm" || true
# The test's own verdict, from its TAP output.
name=${test//[:\/]/_}
status=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import tap
tops = tap.parse(open(sys.argv[2], errors="replace").read())
print(tops[-1]["status"] if tops else "no result")' "$TOP/workbench/report" "$dest/vm/tests/$name.tap" 2>/dev/null ||
	echo "no result")
booted=$(cat "$dest/vm/guest-kernel" 2>/dev/null || true)
if [ "$booted" != "$release" ]; then
	add_result "$out" package:boot package fail "the packaged image did not boot to $release (console: $dest/vm/console.log)"
elif ! python3 "$TOP/workbench/report/splat.py" "$dest/vm/console.log" >"$dest/vm/splats.json"; then
	add_result "$out" package:boot package fail "kernel splat on the console, see $dest/vm/splats.json"
elif [ "$status" != pass ]; then
	add_result "$out" package:boot package fail "$test: $status on the packaged image (see $dest/vm/tests/$name.tap)"
else
	add_result "$out" package:boot package pass
fi
