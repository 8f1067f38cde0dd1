#!/bin/bash
# The layout of struct napi_struct in a built kernel, as pahole prints it:
# the cost-when-off report shows it for the base and the patched kernel
# (docs/benchmarks.md, "Instructions in the NAPI core"). The benchmark kernels are
# built without debug info, so a one-line external module is compiled
# with -g against the build's headers and configuration; nothing in the
# build directory changes.
# usage: napi_struct_layout.sh SRC OBJ OUT
set -eu
src=$1 obj=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <linux/netdevice.h>\nstruct napi_struct napi_struct_layout;\n' >"$tmp/layout.c"
printf 'obj-m := layout.o\nccflags-y := -g\n' >"$tmp/Kbuild"
make -s -C "$src" O="$obj" M="$tmp" layout.o >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log" >&2; exit 1; }
pahole -C napi_struct "$tmp/layout.o" >"$out"
