#!/bin/bash
# Incremental O= build of the kernel in SRC (default: the series tip).
# usage: build.sh [SRC [OBJ [FLAVOUR]]]
. "$(dirname "$0")/lib.sh"
src=${1:-$SRC} obj=${2:-$OBJ} flavour=${3:-$FLAVOUR}

"$TOP/workbench/tree/configure.sh" "$src" "$obj" "$flavour"
mkdir -p "$CCACHE_DIR"
log "building $obj ($flavour) from $src"
start=$(date +%s)
if ! make -s -C "$src" O="$obj" CC="$(make_cc)" -j"$(nproc)" bzImage >"$obj/build.log" 2>&1; then
	grep -E 'error|Error' "$obj/build.log" | head -40 >&2
	die "kernel build failed in $src (full log: $obj/build.log)"
fi
log "built $obj/arch/x86/boot/bzImage in $(( $(date +%s) - start ))s"
