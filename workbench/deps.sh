#!/bin/bash
# Install what the workbench needs on a Debian 12 machine: apt packages
# and a venv with pinned Python tools. Idempotent and quiet when done.
. "$(dirname "$0")/lib.sh"

APT_PACKAGES=(
	bc bison busybox-static ccache cpio dwarves ethtool flex gcc git iproute2 iputils-ping
	kmod libcap-dev libelf-dev libmnl-dev libssl-dev make pahole python3-venv
	python3-yaml qemu-system-x86 rsync socat udev xz-utils zstd
	libbpf-dev libxdp-dev bpftrace memcached python3-matplotlib python3-git python3-ply
	debhelper dpkg-dev shellcheck
)
VENV_PACKAGES=(virtme-ng==1.42 pytest==8.3.3 ruff==0.17.6)

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

# The igb tests need a QEMU that emulates the 82576 (8.0+): Debian 12
# has 7.2, bookworm-backports 10.0. Pinned to 10.0.x, the version the
# igb tests were measured with; without it they SKIP (test.sh says so).
QEMU_BACKPORTS=10.0.
if ! qemu_has_nic igb; then
	[ "$(id -u)" = 0 ] || die "need root to install QEMU $QEMU_BACKPORTS from bookworm-backports"
	sources=/etc/apt/sources.list.d/napi-series-backports.sources
	if [ ! -f "$sources" ]; then
		printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" \
			"Suites: bookworm-backports" "Components: main" \
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$sources"
	fi
	apt-get update -qq
	version=$(apt-cache madison qemu-system-x86 | awk -v want=":$QEMU_BACKPORTS" \
		'$6 ~ /bookworm-backports/ && index($3, want) {print $3; exit}')
	if [ -n "$version" ]; then
		log "installing QEMU $version from bookworm-backports (igb emulation)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-t bookworm-backports "qemu-system-x86=$version" >/dev/null ||
			log "WARNING: installing QEMU $version failed: the igb tests will SKIP"
	else
		log "WARNING: no QEMU $QEMU_BACKPORTS* in bookworm-backports: the igb tests will SKIP"
	fi
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
