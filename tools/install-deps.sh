#!/usr/bin/env bash
# Install the Debian (bookworm) packages the project needs: kernel and headers
# to build against, QEMU and the tools the guest uses (the guest runs the host's
# own binaries over 9p), and what the lint and bench steps use. Idempotent and
# fast when everything is there: apt-get only runs for missing packages.
# The one package list, used by `make deps` (and so `make check`) and .ci/run.
#
# usage: tools/install-deps.sh [--checkpatch] [--list]
#   --checkpatch  also unpack scripts/checkpatch.pl (and its data files) from
#                 linux-source-6.1 into build/linux-src/ (for tools/checkpatch.sh)
#   --list        print the package list and exit
set -euo pipefail

PACKAGES=(
	# Build: Debian's kernel (the guest runs it), its headers, compiler.
	linux-image-amd64 linux-headers-amd64 gcc make bc kmod
	# Kernel source: reference, checkpatch.pl; sparse for `make lint`.
	linux-source-6.1 xz-utils sparse
	# The QEMU bench (tests/vm/run): QEMU, the initramfs' static busybox.
	qemu-system-x86 busybox-static cpio
	# ssdprio-tool status/flush: libdevmapper (headers and the library).
	libdevmapper-dev
	# Man pages checked with groff (make unit).
	groff-base
	# Tools the guest tests use (from the host's root).
	dmsetup lvm2 fio blktrace e2fsprogs xfsprogs udev procps python3
	# Bench: plots, JSON in the guest, the bcache peer.
	python3-matplotlib jq bcache-tools
)

checkpatch=0
for a in "$@"; do
	case $a in
	--checkpatch) checkpatch=1 ;;
	--list) printf '%s\n' "${PACKAGES[@]}" && exit 0 ;;
	*) echo "usage: $0 [--checkpatch] [--list]" >&2 && exit 2 ;;
	esac
done

missing=()
for p in "${PACKAGES[@]}"; do
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done

if ((${#missing[@]})); then
	echo "install-deps: installing ${missing[*]}"
	if [[ $(id -u) != 0 ]]; then
		echo "install-deps: not root; run: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ((checkpatch)); then
	dest=$(cd "$(dirname "$0")/.." && pwd)/build/linux-src
	if [[ ! -f $dest/scripts/checkpatch.pl ]]; then
		tarball=$(printf '%s\n' /usr/src/linux-source-*.tar.xz | sort -V | tail -1)
		[[ -f $tarball ]] || { echo "install-deps: no /usr/src/linux-source-*.tar.xz" >&2; exit 1; }
		echo "install-deps: unpacking checkpatch.pl from $tarball"
		mkdir -p "$dest"
		tar -xJf "$tarball" -C "$dest" --strip-components=1 --wildcards \
			'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
	fi
fi
