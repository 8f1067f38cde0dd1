#!/bin/bash
# 'make run': build the patched kernel if needed, boot it and run the demo.
. "$(dirname "$0")/lib.sh"
"$TOP/workbench/deps.sh"
"$TOP/workbench/prepare-tree.sh"
"$TOP/workbench/build.sh" "$SRC" "$OBJ" "$FLAVOUR"
"$TOP/workbench/vm/ksft-install.sh" "$SRC" "$TOP/build/ksft"
# The demo's latency probe is the benchmarks' napi_rr.
make -s -C "$TOP/bench" >/dev/null
out=$RESULTS/demo
rm -rf "$out"
mkdir -p "$out"
"$TOP/workbench/vm/vm.sh" "$OBJ/arch/x86/boot/bzImage" "$out" 600 \
	"$TOP/workbench/demo/guest-demo.sh $SRC $TOP/build/ksft > $out/demo.txt 2>&1" || true
if [ ! -s "$out/demo.txt" ]; then
	tail -40 "$out/console.log" >&2
	die "the demo produced no output (console: $out/console.log)"
fi
cat "$out/demo.txt"
echo "(VM accelerator: $(cat "$out/accel"); console log: $out/console.log)"
