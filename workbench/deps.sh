#!/bin/bash
# Install what the workbench needs on a Debian 12 machine: apt packages
# and a venv with pinned Python tools. Idempotent and quiet when done.
. "$(dirname "$0")/lib.sh"

APT_PACKAGES=(
	bc bison busybox-static ccache cpio dwarves ethtool flex gcc git iproute2 iputils-ping
	kmod libcap-dev libelf-dev libmnl-dev libssl-dev make pahole python3-venv
	python3-yaml qemu-system-x86 rsync socat udev xz-utils zstd
	libbpf-dev libxdp-dev bpftrace memcached python3-matplotlib python3-git python3-ply
	debhelper dpkg-dev
)
VENV_PACKAGES=(virtme-ng==1.42 pytest==8.3.3)

missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	[ "$(id -u)" = 0 ] || die "need root to install ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp=$VENV/.installed
want="${VENV_PACKAGES[*]}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	log "creating venv $VENV ($want)"
	rm -rf "$VENV"
	/usr/bin/python3 -m venv --system-site-packages "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check "${VENV_PACKAGES[@]}"
	echo "$want" >"$stamp"
fi
