#!/bin/bash
# Runs inside the VM: each selftest under its own timeout, with the
# kernel log of each test saved next to its TAP output.
# usage: guest-run-tests.sh KSFT_DIR RESULTS_DIR TIMEOUT_SCALE [FILTER]
set -u
ksft=$1 out=$2 scale=$3 filter=${4:-}
list=$(dirname "$0")/selftests.list
mkdir -p "$out/tests"
# The kselftest runner writes through /dev/stdout, which must follow our
# redirections (the VM's init may leave it pointing at the console).
for fd in 0:stdin 1:stdout 2:stderr; do
	ln -sfn "/proc/self/fd/${fd%%:*}" "/dev/${fd#*:}"
done
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
: >"$out/guest-results.jsonl"
uname -r >"$out/guest-kernel"

while read -r test timeout; do
	[ -n "$filter" ] && [[ $test != *$filter* ]] && continue
	name=${test//[:\/]/_}
	limit=$((timeout * scale))
	echo "$test" >"$out/current-test"
	# Appended to: the kselftest runner reopens /dev/stdout for the
	# nested output, which must not overwrite ours.
	: >"$out/tests/$name.tap"
	dmesg -C
	start=$(date +%s.%N)
	(cd "$ksft" && timeout -k 10 $((limit + 30)) ./run_kselftest.sh -o "$limit" -t "$test") \
		>>"$out/tests/$name.tap" 2>&1
	rc=$?
	end=$(date +%s.%N)
	dmesg >"$out/tests/$name.dmesg"
	printf '{"test": "%s", "rc": %d, "seconds": %.1f, "timeout": %d}\n' \
		"$test" "$rc" "$(echo "$end - $start" | bc)" "$limit" >>"$out/guest-results.jsonl"
	echo "guest: $test rc=$rc"
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
rm -f "$out/current-test"
echo done >"$out/guest-finished"
