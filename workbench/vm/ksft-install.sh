#!/bin/bash
# Install the selftests listed in SELFTESTS_LIST (selftests.list) from SRC with the
# kselftest install target, plus run_kselftest.sh and its list, and the
# selftests of the tools the project ships (tests/tool-selftests/).
# Only Python/shell tests and the C helpers named in SELFTEST_GEN_FILES
# are built, so no toolchain beyond gcc is needed.
# usage: ksft-install.sh SRC DEST
. "$(dirname "$0")/../lib.sh"
src=$1 dest=$2
sel=$src/tools/testing/selftests
# C helpers our tests need, per collection ("dir:file ...").
SELFTEST_GEN_FILES=${SELFTEST_GEN_FILES:-net:busy_poller drivers/net:xsk_busy_poll}

rm -rf "$dest"
mkdir -p "$dest"
# C helpers include the uapi of the patched tree (new netdev attributes).
hdrs=$CACHE/obj-headers${SUBSET:+-subset}
make -s -C "$src" O="$hdrs" headers >/dev/null 2>&1 || die "make headers failed in $src"
# Once each: a test listed for several NICs is one kselftest, and
# run_kselftest.sh -t would run it once per line.
tests=$(list_entries "$SELFTESTS_LIST" | awk '!seen[$1]++ {print $1}')
collections=$(echo "$tests" | cut -d: -f1 | sort -u)
# lib.mk never rebuilds libynl.a once it exists, and tools/net/ynl keeps
# the objects and archives it built in the source tree: start from
# scratch so the YNL code is generated and compiled from the tree's
# current specs (a worktree that moved to another subset of the series
# otherwise links a libynl.a whose napi-set drops attributes it lacked).
rm -f "$sel"/net/libynl.a
make -s -C "$src/tools/net/ynl" clean >/dev/null 2>&1 || true
for dir in net/lib $collections; do
	# Absolute paths: a command-line TEST_GEN_FILES bypasses lib.mk's
	# $(OUTPUT)/ prefixing.
	gen=
	for g in $SELFTEST_GEN_FILES; do
		# A tree with only a prefix of the series may lack a helper
		# (make test-subsets); a test that needs it then fails.
		[ -e "$sel/$dir/${g#*:}.c" ] || continue
		if [ "${g%%:*}" = "$dir" ]; then gen="$gen $sel/$dir/${g#*:}"; fi
	done
	# Cheap to build, and never stale this way.
	# shellcheck disable=SC2086
	[ -z "$gen" ] || rm -f $gen
	# OUTPUT explicitly: lib.mk only defaults it at MAKELEVEL 0, and
	# 'make test' runs us from a make.
	make -s -C "$sel/$dir" install OUTPUT="$sel/$dir" INSTALL_PATH="$dest/$dir" \
		SRC_PATH="$sel" OBJ_PATH="$dest" KHDR_INCLUDES="-isystem $hdrs/usr/include" \
		TEST_GEN_PROGS= TEST_GEN_PROGS_EXTENDED= TEST_GEN_FILES="$gen" \
		>"$dest/install-${dir//\//_}.log" 2>&1 ||
		{ cat "$dest/install-${dir//\//_}.log" >&2; die "selftest install failed for $dir"; }
done
# The selftests of the tools the project ships (tests/tool-selftests/) run as
# drivers/net tests, on that collection's library, next to the tools.
install -m 0755 "$TOP"/tests/tool-selftests/*.py "$TOP/tools/napictl" "$TOP/tools/napi-irq-suspend.bt" \
	"$dest/drivers/net/"
install -m 0644 "$TOP/tools/napictl.d/99-napictl.rules" "$dest/drivers/net/"
cp -a "$sel/run_kselftest.sh" "$dest/"
mkdir -p "$dest/kselftest"
cp -a "$sel/kselftest/runner.sh" "$sel/kselftest/prefix.pl" "$sel/kselftest/ktap_helpers.sh" "$dest/kselftest/"
echo "$tests" >"$dest/kselftest-list.txt"
for t in $tests; do
	[ -e "$dest/${t%%:*}/${t#*:}" ] || die "selftest $t is not in the tree"
done
