# shellcheck shell=bash
# Common settings for the workbench scripts; sourced, never executed.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE_PKG=linux-source-6.12
BASE_VERSION=${BASE_VERSION:-6.12.117-1~deb12u1}
BASE_SHA256=${BASE_SHA256:-e849faf31ca3555757f3a8877cb01af92122f744f75d1f3102734651c4e14703}

# Expensive state lives outside the checkout so that fresh clones reuse it.
CACHE=${NAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/napi-series}
SRC=$CACHE/src          # build worktree, checked out at the series tip
APPLY=$CACHE/apply      # scratch worktree for git am and bisect checks
# O= build directory and config flavour of the test kernel.
if [ -n "${KASAN:-}" ] && [ "${KASAN}" != 0 ]; then
	OBJ=${OBJ:-$CACHE/obj-kasan} FLAVOUR=kasan
else
	OBJ=${OBJ:-$CACHE/obj} FLAVOUR=debug
fi
VENV=$CACHE/venv
RESULTS=${RESULTS:-$TOP/build/results}
PATCHES=${PATCHES:-$TOP/patches}
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
export CCACHE_BASEDIR=$CACHE
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}

# Deterministic identity for commits the workbench creates itself.
export GIT_AUTHOR_NAME="napi-series workbench" GIT_AUTHOR_EMAIL="workbench@invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

make_cc() {
	if command -v ccache >/dev/null; then echo "ccache gcc"; else echo gcc; fi
}

# Patch file names in series order, comments and blank lines stripped.
series_patches() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/series"
}

# The base tag of the unpacked base in SRC (base-<debian version>).
base_tag() {
	git -C "$SRC" describe --tags --abbrev=0 --match 'base-*' base
}

# worktree_at DIR REV: a worktree of SRC at DIR, checked out (detached,
# forced) at REV; created on first use.
worktree_at() {
	if [ ! -e "$1/.git" ]; then
		git -C "$SRC" worktree prune
		git -C "$SRC" worktree add -q --detach "$1" "$2"
	fi
	git -C "$1" checkout -q -f --detach "$2"
}
