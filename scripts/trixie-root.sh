#!/usr/bin/env bash
# A Debian 13 (trixie) build root for the 7.x kernels: Debian builds them with
# trixie's gcc-14, and their headers' kbuild tools need trixie's libc, so the
# module for a 7.x kernel is built in here (scripts/in-root), with the
# compiler the kernel was built with. Also puts that kernel's image and
# modules on this (Debian 12) host, where the QEMU bench boots them.
# Idempotent: a second run with everything in place only checks.
#
# usage: scripts/trixie-root.sh [SERIES]      (default 7.3)
#   SSDP_TRIXIE_ROOT   the root's folder (default build/trixie-root)
#   SSDP_MIRROR        Debian mirror (default http://deb.debian.org/debian)
#
# The root has trixie, trixie-updates, trixie-security and trixie-backports
# (the 7.x kernels); in it: gcc-14, make, sparse, pahole, dkms and the headers of
# the newest 7.x release of SERIES (linux-headers-<release>). On the host:
# the same release's kernel image and modules, unpacked from its packages
# (below says why not installed), as /boot/vmlinuz-<release> and
# /lib/modules/<release>.
set -euo pipefail

series=${1:-7.3}
[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || { echo "usage: $0 [SERIES, e.g. 7.3]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd -P)
root=${SSDP_TRIXIE_ROOT:-$repo/build/trixie-root}
mirror=${SSDP_MIRROR:-http://deb.debian.org/debian}
secmirror=${SSDP_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
say() { echo "trixie-root: $*"; }
die() { echo "trixie-root: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, dpkg)"
# The tools of the root's own packages (gcc, sparse, kbuild): what a build
# in the root runs. pahole: 7.x's kbuild adds BTF to modules. dkms (and
# openssl, with which it makes its signing key): scripts/dkms-check builds
# the packaged source for a 7.x kernel in here, as trixie's dkms would.
ROOT_PACKAGES=(gcc-14 make bc kmod dwarves sparse libelf-dev python3 dkms openssl)

inroot() { "$repo/scripts/in-root" "$root" "$@"; }

# Held while this runs: what needs the root (tests/crash/run's second
# kernel) waits for a run that CI started in the background to finish.
mkdir -p "$(dirname "$root")"
exec {lockfd}>"$root.lock"
flock "$lockfd"

if [[ ! -x $root/usr/bin/apt-get || ! -f $root/.ssdp-bootstrapped ]]; then
	command -v debootstrap >/dev/null || {
		say "installing debootstrap on the host"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
	}
	say "debootstrap trixie into $root"
	rm -rf "$root"
	mkdir -p "$(dirname "$root")"
	debootstrap --variant=minbase --arch=amd64 trixie "$root" "$mirror"
	touch "$root/.ssdp-bootstrapped"
fi

sources="Types: deb
URIs: $mirror
Suites: trixie trixie-updates trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $secmirror
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"
if [[ $(cat "$root/etc/apt/sources.list.d/debian.sources" 2>/dev/null) != "${sources%$'\n'}" ]]; then
	printf '%s' "$sources" >"$root/etc/apt/sources.list.d/debian.sources"
	rm -f "$root/etc/apt/sources.list" "$root/.ssdp-updated"
fi
# No daemons started by package scripts in the root.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"

apt_root() { inroot env DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0 "$@"; }

# The list once a day: a new point release's headers replace the old.
if [[ -z $(find "$root/.ssdp-updated" -mmin -1440 2>/dev/null) ]]; then
	apt_root update
	touch "$root/.ssdp-updated"
fi

# The newest release of the series that has headers and a (signed) image;
# the generic flavour (not -rt-amd64, -cloud-amd64).
release=$(inroot apt-cache search --names-only "^linux-headers-${series//./\\.}\\.[0-9.]+[^-]*-amd64\$" |
	awk '{ print $1 }' | sed 's/^linux-headers-//' | sort -V |
	while read -r r; do
		inroot apt-cache show "linux-image-$r" >/dev/null 2>&1 && echo "$r"
	done | tail -1 || true)
[[ -n $release ]] || die "no linux-headers-$series.*-amd64 with an image in trixie-backports"
say "kernel $release"

missing=()
for p in "${ROOT_PACKAGES[@]}" "linux-headers-$release"; do
	[[ $(inroot dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	say "installing in the root: ${missing[*]}"
	apt_root install -y --no-install-recommends "${missing[@]}"
fi

# sparse: trixie's 0.6.4 cannot parse 7.x's headers (__typeof_unqual__,
# attributes in casts); 0.6.5 can, and Debian has it only in sid. Its sparse
# binary needs nothing but libc: it is unpacked into the root's
# /usr/local/bin, ahead of /usr/bin, and no other package comes from sid.
# Debian's linux-kbuild lacks scripts/checker-valid.sh, with which 7.x's
# kbuild tests the checker before C=1 or C=2 (without it, kbuild skips
# sparse with a note): it is put there, testing as upstream's does.
sparse_deb=sparse
sid="Types: deb
URIs: $mirror
Suites: sid
Components: main
Check-Valid-Until: no
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"
# (Debian's 0.6.5~rc1 calls itself "0.6.4 (Debian: 0.6.5~rc1-2)".)
if ! inroot /usr/local/bin/sparse --version 2>/dev/null | grep -qE '0\.6\.([5-9]|[1-9][0-9])'; then
	say "unpacking sparse from sid into the root's /usr/local/bin"
	printf '%s' "$sid" >"$root/etc/apt/sources.list.d/sid-sparse.sources"
	printf 'Package: *\nPin: release n=sid\nPin-Priority: 1\n' >"$root/etc/apt/preferences.d/sid-sparse"
	apt_root update
	stage=$root/var/tmp/ssdp-sparse
	rm -rf "$stage"
	mkdir -p "$stage/x"
	chmod 0777 "$stage"
	inroot sh -c "cd /var/tmp/ssdp-sparse && apt-get download -q $sparse_deb/sid"
	dpkg-deb -x "$stage"/sparse_*.deb "$stage/x"
	install -m 0755 "$stage/x/usr/bin/sparse" "$root/usr/local/bin/sparse"
	rm -rf "$stage" "$root/etc/apt/sources.list.d/sid-sparse.sources" \
		"$root/etc/apt/preferences.d/sid-sparse"
	rm -f "$root/.ssdp-updated" # the next run's update forgets sid's lists
fi
for d in "$root"/usr/lib/linux-kbuild-*/scripts; do
	[[ -f $d/checker-valid.sh ]] && continue
	cat >"$d/checker-valid.sh" <<'CHK'
#!/bin/sh
# Put here by dm-ssdprio's scripts/trixie-root.sh (Debian's kbuild lacks it):
# prints 1 if the checker "$@" parses what 7.x's headers use.
command -v "$1" >/dev/null 2>&1 || { echo 0; exit 0; }
t=$(mktemp --suffix=.c) || exit 1
trap 'rm -f "$t"' EXIT
printf 'static inline int u(const int *q) { __typeof_unqual__(*q) v = *q; return v; }\n' >"$t"
"$@" "$t" 2>&1 | grep -q error && echo 0 || echo 1
CHK
	chmod 0755 "$d/checker-valid.sh"
done

# The image on the host: what tests/vm/run boots (/boot/vmlinuz-<release>)
# and the guest loads modules from (/lib/modules/<release>, the host's root
# over 9p). 7.x's image package is split: the kernel (linux-binary-), its
# modules (linux-modules-) and their lists (linux-base-), each named by the
# release, all under /usr/lib/modules/<release>. It cannot be installed on
# Debian 12 (it pre-depends on trixie's linux-base tools), so its parts are
# unpacked: the modules folder as it is, with the host's depmod run on it,
# and the kernel also as /boot/vmlinuz-<release> (and its config). The
# mark says where they came from; to remove them: rm -rf
# /lib/modules/<release> /boot/vmlinuz-<release> /boot/config-<release>.
mark=/lib/modules/$release/.ssdp-trixie-root
if [[ ! -f $mark || ! -f /boot/vmlinuz-$release || ! -s /lib/modules/$release/modules.dep ]]; then
	say "unpacking linux-image-$release onto the host"
	stage=$root/var/tmp/ssdp-image
	rm -rf "$stage"
	mkdir -p "$stage/x"
	chmod 0777 "$stage" # apt-get download runs as _apt
	debs=($(inroot apt-cache depends "linux-image-$release" |
		awk -v r="-$release" '$1 == "Depends:" && substr($2, length($2) - length(r) + 1) == r { print $2 }'))
	((${#debs[@]})) || die "linux-image-$release names no parts"
	inroot sh -c 'cd /var/tmp/ssdp-image && apt-get download -q "$@"' sh "${debs[@]}"
	for d in "$stage"/*.deb; do dpkg-deb -x "$d" "$stage/x"; done
	[[ -f $stage/x/usr/lib/modules/$release/vmlinuz ]] || die "no vmlinuz in ${debs[*]}"
	rm -rf "/lib/modules/$release.ssdp-new"
	cp -a "$stage/x/usr/lib/modules/$release" "/lib/modules/$release.ssdp-new"
	rm -rf "/lib/modules/$release"
	mv "/lib/modules/$release.ssdp-new" "/lib/modules/$release"
	install -m 0644 "/lib/modules/$release/vmlinuz" "/boot/vmlinuz-$release"
	install -m 0644 "/lib/modules/$release/config" "/boot/config-$release"
	depmod -a "$release"
	echo "linux-image-$release unpacked by scripts/trixie-root.sh" >"$mark"
	rm -rf "$stage"
fi
[[ -f /boot/vmlinuz-$release && -d /lib/modules/$release/kernel ]] ||
	die "/boot/vmlinuz-$release or /lib/modules/$release missing after the install"
say "ready: headers $root/usr/src/linux-headers-$release, image /boot/vmlinuz-$release"
