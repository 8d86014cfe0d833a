#!/usr/bin/env bash
# Install the Debian (bookworm) packages the project needs: kernel and headers
# to build against, QEMU and the tools the guest uses (the guest runs the host's
# own binaries over 9p), and what the lint and bench steps use. Idempotent and
# fast when everything is there: apt-get only runs for missing packages.
# The one package list, used by `make deps` (and so `make check`) and .ci/run.
#
# usage: scripts/install-deps.sh [--checkpatch] [--fstests] [--kernel SERIES] [--list]
#   --checkpatch  also unpack scripts/checkpatch.pl (and its data files) from
#                 linux-source-6.1 into build/linux-src/ (for scripts/checkpatch.sh)
#   --fstests     accepted for older callers: the packages fstests needs to
#                 build and run (FSTESTS_PACKAGES) are in the default list,
#                 since `make check` runs a few fstests (docs/fstests.md)
#   --kernel 7.3  also the 7.x kernel SERIES: a Debian 13 (trixie) build root
#                 in build/trixie-root with that kernel's headers and the
#                 compiler it was built with (gcc-14), and its image and
#                 modules on this host for the QEMU bench
#                 (scripts/trixie-root.sh; docs/kernels.md). KVER=7.3 in
#                 the environment (make deps KVER=7.3, make check KVER=7.3)
#                 does the same.
#   --list        print the package list (with --fstests: that one too) and exit
#
# Kernels: Debian 12's 6.1 (linux-image-amd64) and 6.12 (bookworm-security's
# linux-image-6.12-amd64), image and headers through their meta packages, so
# the exact release is whatever Debian ships now (scripts/kernel finds it).
# SSDP_HEADERS=private: the 6.12 headers are not installed but unpacked into
# build/kheaders (SSDP_KHEADERS), for shared machines where a second tree in
# /lib/modules/*/build would change which kernel other checkouts build for.
set -euo pipefail

HEADERS_612=linux-headers-6.12-amd64
PACKAGES=(
	# Build: Debian's kernels (the guest runs them), headers, compiler; pahole
	# for the BTF that 6.12's kbuild adds to modules.
	linux-image-amd64 linux-headers-amd64 linux-image-6.12-amd64
	gcc make bc kmod dwarves
	# The DKMS build of both kernels (scripts/dkms-check, CI); dkms makes
	# the key it signs modules with by openssl.
	dkms openssl
	# Kernel source: reference, checkpatch.pl; sparse for `make lint`.
	linux-source-6.1 xz-utils sparse
	# The QEMU bench (tests/vm/run): QEMU, the initramfs' static busybox.
	qemu-system-x86 busybox-static cpio zstd
	# ssdprio-tool status/flush: libdevmapper (headers and the library).
	libdevmapper-dev
	libblkid-dev
	# Debian packages (scripts/deb-check): debhelper with the DKMS addon;
	# lintian checks what they build.
	debhelper dh-dkms dpkg-dev build-essential lintian
	# RPM packages (scripts/rpm-check): rpmbuild and rpmlint.
	rpm rpmlint
	# Man pages checked with groff (make unit).
	groff-base
	# Tools the guest tests use (from the host's root).
	dmsetup lvm2 fio blktrace e2fsprogs xfsprogs fdisk udev procps python3 mdadm
	# Network origins (81-net-nbd, 82-net-iscsi): an NBD server and client,
	# the open-iscsi initiator (the test sets up LIO through configfs).
	nbd-server nbd-client open-iscsi
	# The root file system on ssdprio (tests/crash/rootfs): initramfs-tools
	# comes with the kernel image; dracut-core builds the dracut initramfs.
	dracut-core
	# Bench: plots, JSON in the guest, the bcache peer; the database
	# scenario's PostgreSQL (initdb, postgres, pgbench).
	python3-matplotlib jq bcache-tools postgresql-15
)

# fstests (tests/fstests): its build (autotools, the xfs/acl/attr/aio/uring
# headers) and the tools its tests run in the guest: make check runs some.
FSTESTS_PACKAGES=(
	autoconf automake libtool make gcc pkg-config xfslibs-dev uuid-dev libattr1-dev
	libacl1-dev libaio-dev liburing-dev libgdbm-dev attr acl quota bc psmisc gawk
	# keyctl (encryption tests' keyrings), fsverity (verity tests), xfsdump
	# (xfs's dump and restore tests): without them fstests skips those tests
	# or, for generic/398, fails them.
	keyutils fsverity xfsdump
)

PACKAGES+=("${FSTESTS_PACKAGES[@]}")
[[ ${SSDP_HEADERS:-} == private ]] || PACKAGES+=("$HEADERS_612")

checkpatch=0 list=0 kernel=
# Debian 12 has no 7.x kernel: KVER=7.* means the trixie root's.
[[ ${KVER:-} =~ ^(7\.[0-9]+) ]] && kernel=${BASH_REMATCH[1]}
while (($#)); do
	case $1 in
	--checkpatch) checkpatch=1 ;;
	--fstests) ;;
	--kernel) kernel=${2:?--kernel needs a series, e.g. 7.3} && shift ;;
	--kernel=*) kernel=${1#*=} ;;
	--list) list=1 ;;
	*) echo "usage: $0 [--checkpatch] [--fstests] [--kernel SERIES] [--list]" >&2 && exit 2 ;;
	esac
	shift
done
[[ -z $kernel ]] || PACKAGES+=(debootstrap)
((list)) && printf '%s\n' "${PACKAGES[@]}" && exit 0

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

# The headers meta package's dependency names the release; its -common and
# linux-kbuild packages come along; the arch Makefile points at the unpacked
# -common tree instead of /usr/src.
private_headers() {
	local dest=${SSDP_KHEADERS:-$(cd "$(dirname "$0")/.." && pwd)/build/kheaders}
	local abi common kbuild tmp d
	abi=$(apt-cache depends "$HEADERS_612" | awk '/Depends: linux-headers-/ { print $2; exit }')
	[[ -n $abi ]] || { echo "install-deps: cannot resolve $HEADERS_612 (apt-get update?)" >&2; exit 1; }
	[[ -f $dest/usr/src/$abi/include/generated/utsrelease.h ]] && return 0
	common=$(apt-cache depends "$abi" | awk '/Depends: linux-headers-.*-common/ { print $2; exit }')
	kbuild=$(apt-cache depends "$abi" | awk '/Depends: linux-kbuild-/ { print $2; exit }')
	echo "install-deps: unpacking $abi $common $kbuild into $dest"
	tmp=$(mktemp -d)
	chmod 755 "$tmp"	# apt-get download runs as _apt
	(cd "$tmp" && apt-get download "$abi" "$common" "$kbuild")
	mkdir -p "$dest"
	for d in "$tmp"/*.deb; do dpkg -x "$d" "$dest"; done
	rm -rf "$tmp"
	sed -i "s|^include /usr/src/|include $dest/usr/src/|" "$dest/usr/src/$abi/Makefile"
}
[[ ${SSDP_HEADERS:-} != private ]] || private_headers

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

# A 7.x kernel: its build root and image (idempotent; fast when in place).
[[ -z $kernel ]] || "$(dirname "$0")/trixie-root.sh" "$kernel"
