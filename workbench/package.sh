#!/bin/bash
# 'make package': Debian packages (bindeb-pkg) of the patched kernel, to
# install on a 6.12 system, local version -napi.
# usage: package.sh [OBJ DEST]
#   no arguments  configure and build $CACHE/pkg/obj: the running system's
#                 /boot/config-$(uname -r) if there is one, else the small VM
#                 configuration (no debug options), plus config/series.config;
#                 the packages go to build/packages
#   OBJ DEST      package the kernel already built in OBJ as it was built
#                 (make test's check: no second build), packages to DEST
#   PACKAGE_CONFIG=debian  Debian's own linux-config-6.12 instead: a full
#                 distribution kernel, hours on 2 cores
#   PACKAGE_CONFIG=/path   any other .config
. "$(dirname "$0")/lib.sh"
obj=${1:-} dest=${2:-$TOP/build/packages}
start=$(date +%s)

# package_config OBJ: OBJ/.config for an installable kernel.
package_config() {
	local o=$1 from
	mkdir -p "$o"
	case ${PACKAGE_CONFIG:-} in
	debian)
		log "PACKAGE_CONFIG=debian: Debian's full configuration (thousands of modules)."
		log "This build takes HOURS on 2 cores; Ctrl-C now if that is not what you want."
		[ -f /usr/src/linux-config-6.12/config.amd64_none_amd64.xz ] ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-config-6.12 >/dev/null
		xz -dc /usr/src/linux-config-6.12/config.amd64_none_amd64.xz >"$o/.config"
		from="Debian's linux-config-6.12"
		;;
	"")
		if [ -f "/boot/config-$(uname -r)" ]; then
			cp "/boot/config-$(uname -r)" "$o/.config"
			from="/boot/config-$(uname -r)"
		else
			"$TOP/workbench/tree/configure.sh" "$SRC" "$o" nodebug
			from="the VM configuration without debug options"
		fi
		;;
	*)
		cp "$PACKAGE_CONFIG" "$o/.config"
		from=$PACKAGE_CONFIG
		;;
	esac
	log "configuration: $from + config/series.config"
	(cd "$SRC" && KCONFIG_CONFIG="$o/.config" scripts/kconfig/merge_config.sh -m -O "$o" \
		"$o/.config" "$TOP/config/series.config" >"$o/.config.merge.log" 2>&1) ||
		{ cat "$o/.config.merge.log" >&2; die "merge_config failed"; }
	# Distribution configs name their own signing keys, which we do not
	# have; the build makes a throw-away module signing key instead.
	"$SRC/scripts/config" --file "$o/.config" --set-str SYSTEM_TRUSTED_KEYS "" \
		--set-str SYSTEM_REVOCATION_KEYS "" --set-str LOCALVERSION "" -d LOCALVERSION_AUTO
	make -s -C "$SRC" O="$o" olddefconfig >"$o/.config.olddefconfig.log" 2>&1 ||
		{ cat "$o/.config.olddefconfig.log" >&2; die "olddefconfig failed"; }
	local lost
	lost=$(lost_options "$o/.config" "$TOP/config/series.config")
	[ -z "$lost" ] || { echo "$lost" >&2; die "the configuration lost options the series needs"; }
}

localversion=
if [ -z "$obj" ]; then
	"$TOP/workbench/deps.sh"
	"$TOP/workbench/prepare-tree.sh"
	obj=$CACHE/pkg/obj
	localversion=-napi
	package_config "$obj"
fi
# dpkg-buildpackage writes next to the build directory: collect from there.
parent=$(dirname "$obj")
marker=$(mktemp "$parent/.package-start.XXXXXX")
trap 'rm -f "$marker"' EXIT
release=$(make -s -C "$SRC" O="$obj" LOCALVERSION="$localversion" kernelrelease)
log "building Debian packages of $release in $obj (log: $obj/package.log)"
# No -dbg package (a full debug vmlinux). KDEB_COMPRESS from the
# environment picks the compression (make test: gzip, for speed).
if ! DEB_BUILD_PROFILES="pkg.linux-upstream.nokerneldbg" \
	make -C "$SRC" O="$obj" CC="$(make_cc)" LOCALVERSION="$localversion" -j"$(nproc)" \
	bindeb-pkg >"$obj/package.log" 2>&1; then
	tail -30 "$obj/package.log" >&2
	die "bindeb-pkg failed (full log: $obj/package.log)"
fi
mkdir -p "$dest"
find "$parent" -maxdepth 1 -newer "$marker" -type f \
	\( -name '*.deb' -o -name '*.buildinfo' -o -name '*.changes' \) -exec mv -t "$dest" {} +
"$TOP/workbench/package/package-tools.sh" "$dest"
log "packages of $release in $dest after $(( $(date +%s) - start ))s:"
ls -l "$dest"/*.deb >&2
cat >&2 <<EOF

Install with:
    apt install $dest/linux-image-${release}_*.deb $dest/linux-headers-${release}_*.deb
    apt install $dest/napi-tools_*.deb     # napictl, the bpftrace script
then reboot and pick $release in the boot menu. The series changes the
layout of kernel structures: out-of-tree modules (DKMS) must be rebuilt
against linux-headers-$release, which DKMS does on install when the headers
package is installed with the image.
EOF
