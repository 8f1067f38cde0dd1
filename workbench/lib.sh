# shellcheck shell=bash
# shellcheck disable=SC2034 # settings for the scripts that source this
# Common settings for the workbench scripts; sourced, never executed.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE_PKG=linux-source-6.12
BASE_VERSION=${BASE_VERSION:-6.12.117-1~deb12u1}
BASE_SHA256=${BASE_SHA256:-e849faf31ca3555757f3a8877cb01af92122f744f75d1f3102734651c4e14703}
# make test-mainline: Debian sid's mainline source, pinned the same way
# (MAINLINE_VERSION=newest: sid's newest linux-source-N.M, unpinned).
MAINLINE_VERSION=${MAINLINE_VERSION:-7.2.13-1}
MAINLINE_SHA256=${MAINLINE_SHA256:-30a8c5fc63f9028a62e6d7b3f7f43bee67425dbce2a05fceba83f9b87c92083d}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# Expensive state lives outside the checkout so that fresh clones reuse it.
CACHE=${NAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/napi-series}
REPO=$CACHE/src         # the base as a git repository (fetch-base.sh)
SRC=$REPO               # build worktree, checked out at the series tip
APPLY=$CACHE/apply      # scratch worktree for git am and bisect checks
MAINLINE_REPO=$CACHE/mainline # make test-mainline's kernel (fetch-mainline.sh)
# O= build directory and config flavour of the test kernel. The flavours
# exclude each other: asking for two is an error, not a silent choice.
flavours=
for f in KASAN RT KCSAN UP; do
	[ -n "${!f:-}" ] && [ "${!f}" != 0 ] && flavours+="${flavours:+ }$f=1"
done
case $flavours in *" "*)
	printf 'ERROR: one kernel flavour at a time, not: %s\n' "$flavours" >&2
	exit 1
	;;
esac
if [ -n "${KASAN:-}" ] && [ "${KASAN}" != 0 ]; then
	OBJ=${OBJ:-$CACHE/obj-kasan} FLAVOUR=kasan
elif [ -n "${RT:-}" ] && [ "${RT}" != 0 ]; then
	OBJ=${OBJ:-$CACHE/obj-rt} FLAVOUR=rt
elif [ -n "${KCSAN:-}" ] && [ "${KCSAN}" != 0 ]; then
	OBJ=${OBJ:-$CACHE/obj-kcsan} FLAVOUR=kcsan
elif [ -n "${UP:-}" ] && [ "${UP}" != 0 ]; then
	OBJ=${OBJ:-$CACHE/obj-up} FLAVOUR=up
elif [ -n "${SUBSET:-}" ]; then
	# make test-subsets: the debug kernel of a prefix of the series, from
	# worktrees of its own, so that make test's stay at the series tip.
	OBJ=${OBJ:-$CACHE/obj-subset} FLAVOUR=subset
	SRC=$CACHE/src-subset APPLY=$CACHE/apply-subset
else
	OBJ=${OBJ:-$CACHE/obj} FLAVOUR=debug
fi
VENV=$CACHE/venv
# Seconds a test VM takes to boot and shut down, beside its tests.
VM_BOOT_TIME=120
RESULTS=${RESULTS:-$TOP/build/results}
PATCHES=${PATCHES:-$TOP/patches}
# The selftests make test installs and runs (test-subsets.sh: a subset's).
SELFTESTS_LIST=${SELFTESTS_LIST:-$TOP/workbench/data/selftests.list}
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
export CCACHE_BASEDIR=$CACHE
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}

# Deterministic identity for commits the workbench creates itself.
export GIT_AUTHOR_NAME="napi-series workbench" GIT_AUTHOR_EMAIL="workbench@invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# qemu_has_nic MODEL: whether this QEMU emulates NIC MODEL (igb: QEMU
# 8.0+). grep reads all of it: with -q it could stop early and, under
# pipefail, QEMU's SIGPIPE would read as "no such NIC".
qemu_has_nic() {
	qemu-system-x86_64 -device help 2>/dev/null | grep "^name \"$1\"" >/dev/null
}

# use_nic MODEL WHAT: add MODEL to VM_NICS (a pair of them in the VM), once,
# if this QEMU emulates it, else warn that WHAT is left out and add why to
# NIC_WHY (for the skipped entries).
use_nic() {
	case " ${VM_NICS:-} " in *" $1 "*) return 0 ;; esac
	if qemu_has_nic "$1"; then
		export VM_NICS="${VM_NICS:+$VM_NICS }$1"
		return 0
	fi
	local why
	# sed reads it all: under pipefail, head's early exit could kill
	# QEMU with SIGPIPE, and the assignment the script.
	why="$(qemu-system-x86_64 --version | sed -n 1p) cannot emulate $1"
	NIC_WHY="${NIC_WHY:+$NIC_WHY; }$why"
	log "WARNING: $why: $2"
}

make_cc() {
	if command -v ccache >/dev/null; then echo "ccache gcc"; else echo gcc; fi
}

# list_entries FILE: the entries of a list file (series, selftests.list,
# known-failures.txt...), comments and blank lines stripped.
list_entries() {
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$1"
}

# timeout_scale ACCEL FLAVOUR: the factor on the selftests' time limits.
# KASAN slows the tests three- to fourfold again under TCG (measured
# against the debug kernel: busy_poll_test 252 s -> 1097 s, napi_config
# 65 s -> 274 s), so twofold timed a passing busy_poll_test out. KCSAN's
# watchpoints slow them too; the same factor, not measured apart.
timeout_scale() {
	local scale=1
	[ "$1" = tcg ] && scale=${TCG_TIMEOUT_SCALE:-3}
	case $2 in
	kasan | kcsan) scale=$(echo "$scale * ${KASAN_TIMEOUT_SCALE:-4}" | bc) ;;
	esac
	echo "$scale"
}

# plan_entries LIST SCALE [TESTS]: the entries of the selftest list LIST
# that TESTS selects (comma-separated substrings of TEST@NIC; empty: all),
# each with its time limit times SCALE: a VM's plan.
plan_entries() {
	list_entries "$1" |
		awk -v scale="$2" -v only="${3:-}" '
			BEGIN { n = split(only, want, ",") }
			{ hit = n == 0; for (i = 1; i <= n; i++) hit = hit || index($1 "@" $3, want[i]) }
			hit { $2 = int($2 * scale + 0.5); print }'
}

# Patch file names in series order.
series_patches() {
	list_entries "$PATCHES/series"
}

# The topic folders of patches/series, in order.
series_topics() {
	series_patches | cut -d/ -f1 | uniq
}

# last_in_topic NAME NEXT: whether patch NAME ends its topic series,
# NEXT being the patch after it in patches/series (empty at the end).
last_in_topic() {
	[ "$(dirname "$1")" != . ] && [ "$(dirname "$1")" != "$(dirname "${2:-}")" ]
}

# base_tag [TREE [REV]]: the base tag below REV (default: the base branch
# of SRC), base-<debian version> or base-local.
base_tag() {
	git -C "${1:-$REPO}" describe --tags --abbrev=0 --match 'base-*' "${2:-base}"
}

# base_upstream TREE: the upstream stable version the tree's Makefile
# says it is (Debian's 6.12.117-1 is upstream v6.12.117).
base_upstream() {
	awk -F' = ' '$1 == "VERSION" {v = $2} $1 == "PATCHLEVEL" {p = $2}
		$1 == "SUBLEVEL" {s = $2} END {print v "." p "." s}' "$1/Makefile"
}

# The newest version of BASE_PKG the archive has (empty if none).
newest_base_version() {
	apt-cache madison "$BASE_PKG" 2>/dev/null | awk 'NR == 1 {print $3}'
}

# tag_name PREFIX VERSION: a git tag for a Debian version (tags cannot
# hold '~' or ':').
tag_name() {
	echo "$1-$2" | tr '~:' '__'
}

# newest_mainline: "PKG VERSION" of the newest linux-source-N.M in sid.
newest_mainline() {
	curl -fsSL "$DEBIAN_MIRROR/dists/sid/main/binary-all/Packages.xz" | xz -d |
		awk '/^Package: / {p = $2} /^Version: / && p ~ /^linux-source-[0-9]+\.[0-9]+$/ {print p, $2}' |
		sort -V -k2 | tail -1
}

# lost_options CONFIG FRAGMENT...: the options the fragments ask for that
# CONFIG does not have as asked (olddefconfig drops an option whose
# dependencies are missing), one "config: wanted ..., got ..." line each.
lost_options() {
	local config=$1 want opt got
	shift
	while IFS= read -r want; do
		opt=${want%%=*}
		got=$(grep -E "^$opt=|^# $opt is not set" "$config" || true)
		[ "$got" = "$want" ] || echo "config: wanted $want, got '${got:-nothing}'"
	done < <(grep -h -E '^CONFIG_' "$@")
}

# add_result FILE NAME KIND STATUS [REASON]: append one result to the JSON
# list in FILE, which the report reads (report/make-test-report.py --extra).
add_result() {
	python3 - "$@" <<'PY'
import json, os, sys
path, name, kind, status = sys.argv[1:5]
reason = sys.argv[5] if len(sys.argv) > 5 else ""
results = []
if os.path.exists(path):
    with open(path) as fp:
        results = json.load(fp)
results.append({"name": name, "kind": kind, "status": status, "reason": reason or None})
with open(path, "w") as fp:
    json.dump(results, fp, indent=1)
PY
}

# worktree_at DIR REV: a worktree of REPO at DIR (or REPO itself),
# checked out (detached, forced) at REV; created on first use.
worktree_at() {
	if [ ! -e "$1/.git" ]; then
		git -C "$REPO" worktree prune
		git -C "$REPO" worktree add -q --detach "$1" "$2"
	fi
	git -C "$1" checkout -q -f --detach "$2"
}
