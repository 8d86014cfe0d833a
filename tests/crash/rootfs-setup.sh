#!/bin/bash
# Guest side of tests/crash/rootfs (its first boot, the harness's own
# init): an ssdprio cache over the virtio disks rhdd and rssd made with
# `ssdprio-tool create rootfs`, ext4 on /dev/mapper/rootfs, and in it a
# minimal root: busybox, dmstatus, ssdprio-tool and dmsetup, and
# tests/crash/rootfs-init as /sbin/init.  Removed cleanly at the end.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/../guest/lib.sh"

TOOL=$REPO/build/ssdprio-tool
MNT=/tmp/rootfs

load_module
hdd=$(vdisk rhdd)
ssd=$(vdisk rssd)
log "create rootfs over $hdd (cache $ssd)"
"$TOOL" create rootfs "$hdd" "$ssd" write_policy writeback >&2 || fail "ssdprio-tool create"
dev=/dev/mapper/rootfs
[[ -b $dev ]] || dmsetup mknodes
mkfs.ext4 -q -L ssdprio-root "$dev" || fail "mkfs.ext4"
mkdir -p "$MNT"
mount "$dev" "$MNT" || fail "mount $dev"
mkdir -p "$MNT"/{bin,sbin,proc,sys,dev,run,tmp,etc,data}
cp /bin/busybox "$MNT/bin/busybox"
chroot "$MNT" /bin/busybox --install -s /bin || fail "busybox --install"
cp "$REPO/build/tools/dmstatus" "$MNT/bin/dmstatus"
# The boot unit's stop, `ssdprio-tool deactivate`, with dmsetup and the
# libraries of both.
for f in "$TOOL" /sbin/dmsetup $(ldd "$TOOL" /sbin/dmsetup | grep -o '/[^ ]*' | sort -u); do
	[[ $f == "$TOOL" ]] && dest=/sbin/ssdprio-tool || dest=$f
	mkdir -p "$MNT$(dirname "$dest")"
	cp -L "$f" "$MNT$dest"
done
rm -f "$MNT/bin/dmsetup"
rm -f "$MNT/sbin/init"
cp "$REPO/tests/crash/rootfs-init" "$MNT/sbin/init"
chmod 755 "$MNT/sbin/init"
head -c $((4 << 20)) /dev/urandom >"$MNT/data/base"
(cd "$MNT/data" && sha256sum base >base.sha256)
sync
umount "$MNT"
dm_remove rootfs
log "rootfs ready: $("$TOOL" show "$ssd" | grep -E 'shutdown|valid' | tr -s ' \n' ' ')"
