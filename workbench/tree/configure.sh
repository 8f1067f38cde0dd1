#!/bin/bash
# Generate the kernel .config in an O= directory:
#   virtme-ng minimal VM config + selftest fragments + config/*.config.
# usage: configure.sh SRC OBJ [debug|nodebug|bisect|kasan|rt|kcsan|up|subset|mainline|mainline-kasan]
# subset: the debug kernel of a tree that carries only a prefix of the
# series; mainline: the debug kernel of a mainline tree (make
# test-mainline). Options their Kconfig does not define (the test
# tooling's, or one mainline renamed) are not asked for.
. "$(dirname "$0")/../lib.sh"
src=$1 obj=$2 flavour=${3:-debug}
export PATH=$VENV/bin:$PATH

# FRAGMENTS_FROM: take the selftest fragments from another tree, so that
# the unpatched base gets the same config as the series for comparison.
frag_src=${FRAGMENTS_FROM:-$src}
fragments=(
	"$frag_src/tools/testing/selftests/net/config"
	"$frag_src/tools/testing/selftests/drivers/net/config"
	"$TOP/config/series.config"
	"$TOP/config/debug.config"
	"$TOP/config/vm-trim.config"
)
case $flavour in
debug | subset) ;;
mainline) fragments+=("$TOP/config/mainline.config") ;;
mainline-kasan) fragments+=("$TOP/config/kasan.config" "$TOP/config/mainline.config") ;;
nodebug) fragments+=("$TOP/config/nodebug.config") ;;
bisect) fragments+=("$TOP/config/bisect.config") ;;
kasan) fragments+=("$TOP/config/kasan.config") ;;
rt) fragments+=("$TOP/config/rt.config") ;;
kcsan) fragments+=("$TOP/config/kcsan.config") ;;
up) fragments+=("$TOP/config/up.config") ;;
*) die "unknown config flavour $flavour" ;;
esac

# Skip the work when neither the fragments nor the flavour changed.
sum=$(cat "${fragments[@]}" | sha256sum | cut -d' ' -f1)-$flavour
if [ -f "$obj/.config" ] && [ "$(cat "$obj/.config.fragments" 2>/dev/null)" = "$sum" ]; then
	exit 0
fi

mkdir -p "$obj"
log "configuring $obj ($flavour)"
(cd "$src" && virtme-configkernel --defconfig O="$obj" >"$obj/.config.vng.log" 2>&1) ||
	{ cat "$obj/.config.vng.log" >&2; die "virtme-configkernel failed"; }
merged=$obj/.config.fragment
cat "${fragments[@]}" >"$merged"
# Everything built in: the guest shares the host's root, which has no
# modules for this kernel, so modprobe cannot be relied on.
[ "$flavour" = bisect ] || sed -i 's/=m$/=y/' "$merged"
(cd "$src" && KCONFIG_CONFIG="$obj/.config" scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "$merged" >"$obj/.config.merge.log" 2>&1) || { cat "$obj/.config.merge.log" >&2; die "merge_config failed"; }
[ "$flavour" = bisect ] || sed -i 's/=m$/=y/' "$obj/.config"
# Overrides between fragments are expected; the log keeps them.
make -s -C "$src" O="$obj" olddefconfig >"$obj/.config.olddefconfig.log" 2>&1 ||
	{ cat "$obj/.config.olddefconfig.log" >&2; die "olddefconfig failed"; }

# Options we ask for explicitly must survive olddefconfig.
checked=("$TOP/config/series.config" "$TOP/config/debug.config")
# The bisect tree only needs what it compiles, modules included.
[ "$flavour" = bisect ] && checked=("$TOP/config/bisect.config")
case $flavour in kasan | mainline-kasan) checked=("$TOP/config/series.config" "$TOP/config/kasan.config") ;; esac
[ "$flavour" = rt ] && checked+=("$TOP/config/rt.config")
[ "$flavour" = up ] && checked+=("$TOP/config/up.config")
[ "$flavour" = kcsan ] && checked=("$TOP/config/series.config" "$TOP/config/kcsan.config")
lost=$(lost_options "$obj/.config" "${checked[@]}")
# overridden_by FRAGMENT: LOST without the options FRAGMENT sets
# otherwise than the checked fragments ask, plus those of FRAGMENT's own
# values that did not hold.
overridden_by() {
	grep -v -F -f <(sed -n -e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set.*/wanted \1=/p' \
		-e 's/^\(CONFIG_[A-Za-z0-9_]*=\).*/wanted \1/p' "$1") <<<"$lost" || true
	lost_options "$obj/.config" "$1"
}
# Except what debug.config asks for and nodebug.config overrides, or
# mainline.config restates in mainline's terms.
[ "$flavour" = nodebug ] && lost=$(overridden_by "$TOP/config/nodebug.config")
[ "${flavour%-kasan}" = mainline ] && lost=$(overridden_by "$TOP/config/mainline.config")
if [ "$flavour" = subset ] || [ "${flavour%-kasan}" = mainline ]; then
	lost=$(while IFS= read -r line; do
		opt=$(sed -n 's/^config: wanted CONFIG_\([A-Za-z0-9_]*\)[= ].*/\1/p' <<<"$line")
		[ -z "$opt" ] || grep -rqx "config $opt" --include='Kconfig*' "$src" || continue
		echo "$line"
	done <<<"$lost")
fi
[ -z "$lost" ] || { echo "$lost" >&2; die "kernel config lost requested options (missing dependency?)"; }
echo "$sum" >"$obj/.config.fragments"
