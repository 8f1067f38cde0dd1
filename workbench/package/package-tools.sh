#!/bin/bash
# Debian package napi-tools_<version>_all.deb of the userspace tools:
# napictl, the bpftrace script, and napictl's udev rule, systemd unit and
# config as examples (installed, not activated).
# usage: package-tools.sh [DEST]   (default build/packages)
#   NAPI_TOOLS_VERSION  overrides the version (default: napictl's VERSION)
. "$(dirname "$0")/../lib.sh"
dest=${1:-$TOP/build/packages}
tools=$TOP/tools
version=${NAPI_TOOLS_VERSION:-$(sed -n 's/^VERSION = "\(.*\)"$/\1/p' "$tools/napictl")}
[ -n "$version" ] || die "no VERSION in $tools/napictl"

umask 022
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root" # mktemp's 0700 would be the package's ./
install -D -m 0755 "$tools/napictl" "$root/usr/sbin/napictl"
install -D -m 0755 "$tools/napi-irq-suspend.bt" "$root/usr/share/napi-tools/napi-irq-suspend.bt"
examples=$root/usr/share/doc/napi-tools/examples
for f in 99-napictl.rules napictl@.service napictl.toml; do
	install -D -m 0644 "$tools/napictl.d/$f" "$examples/$f"
done
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: napi-tools
Version: $version
Architecture: all
Maintainer: napi-series workbench <workbench@invalid>
Section: net
Priority: optional
Depends: python3 (>= 3.11)
Suggests: bpftrace
Description: per-NAPI settings by queue over netdev netlink
 napictl shows each queue's NAPI, IRQ, kthread and settings, and sets
 defer-hard-irqs, gro-flush-timeout, irq-suspend-timeout, threaded mode
 and IRQ affinity per queue, by hand or from a config file (udev and
 systemd examples included). napi-irq-suspend.bt traces IRQ suspension.
EOF

mkdir -p "$dest"
deb=$dest/napi-tools_${version}_all.deb
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
log "$deb"
