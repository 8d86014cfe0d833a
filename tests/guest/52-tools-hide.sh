#!/bin/bash
# The raw origin cannot be mounted by mistake: it carries the same file
# system UUID as the mapped device, with older data.  With the udev rule,
# the devices of an ssdpriotab entry get SYSTEMD_READY=0, UDISKS_IGNORE=1 and
# the lowest link priority, so /dev/disk/by-uuid names the mapped device,
# which carries a DM UUID (SSDPRIO-<cache uuid>).  With systemd-udevd.
# disks: hide_hdd:64M hide_ssd:32M
# timeout: 400
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"
_udev_running || skip "no udevd in this guest"
RULE=/run/udev/rules.d/63-ssdprio.rules
tab=/tmp/hide.tab
trap 'rm -f "$RULE"; udevadm control --reload' EXIT

load_module
vh=$(vdisk hide_hdd)
vs=$(vdisk hide_ssd)
dd if=/dev/zero of="$vs" bs=1M count=4 oflag=direct status=none
fsuuid=$(cat /proc/sys/kernel/random/uuid)
mkfs.ext4 -q -F -U "$fsuuid" -L hidetest "$vh" || fail "mkfs.ext4"
_settle
log "before: by-uuid -> $(readlink -f "/dev/disk/by-uuid/$fsuuid" || true)"

# A cache in front of the file system, then boot-time activation by udev.
dm_create fmt "0 $(sectors "$vh") ssdprio $vh $vs 1 format" >/dev/null
dm_remove fmt
cuuid=$("$TOOL" show --json "$vs" | sed -n 's/^ *"uuid": "\([0-9a-f-]*\)".*/\1/p' | tr -d -)
[[ ${#cuuid} == 32 ]] || fail "no cache uuid in: $("$TOOL" show --json "$vs")"
# The tab names the disks by their by-id links: udev (re)makes them after
# mkfs and the format above; the tool matches an event by them.
udevadm settle --timeout=60 || true
for l in /dev/disk/by-id/virtio-hide_hdd /dev/disk/by-id/virtio-hide_ssd; do
	for _ in $(seq 100); do
		[[ -b $l ]] && break
		sleep 0.2
	done
	[[ -b $l ]] || fail "udev did not make $l: $(ls -l /dev/disk/by-id/ | grep hide || true)"
done
echo "hid /dev/disk/by-id/virtio-hide_hdd /dev/disk/by-id/virtio-hide_ssd" >"$tab"
mkdir -p "${RULE%/*}"
sed -e "s|/usr/local/sbin/ssdprio-tool|$TOOL|" -e "s|/etc/ssdprio/ssdpriotab|$tab|g" \
	"$REPO/tools/udev/63-ssdprio.rules" >"$RULE"
udevadm control --reload || fail "udevadm control --reload"
udevadm trigger --action=add "$vh" "$vs" || fail "udevadm trigger"
udevadm settle --timeout=60 || true
for _ in $(seq 100); do
	[[ -b /dev/mapper/hid ]] && break
	sleep 0.2
done
if [[ ! -b /dev/mapper/hid ]]; then
	log "links: $(ls -l /dev/disk/by-id/ | grep hide || true)"
	log "origin: $(udevadm info --query=property --name="$vh" | grep -E 'SSDPRIO|DEVLINKS' || true)"
	log "tool, by hand: $("$TOOL" activate --tab "$tab" --dry-run hid 2>&1)"
	fail "udev did not activate hid: $(dmesg | tail -20)"
fi
udevadm settle --timeout=60 || true

assert_eq "$(dmsetup info -c --noheadings -o uuid hid)" "SSDPRIO-$cuuid" "the mapped device's DM UUID"
props=$(udevadm info --query=property --name="$vh")
grep -qx "SYSTEMD_READY=0" <<<"$props" || fail "origin not hidden from systemd: $props"
grep -qx "UDISKS_IGNORE=1" <<<"$props" || fail "origin not hidden from udisks: $props"
grep -qx "SSDPRIO_ROLE=origin" <<<"$props" || fail "origin's role: $props"
# LVM's, md's and btrfs's rules act on ID_FS_TYPE: not on the origin's.
grep -qx "ID_FS_TYPE=ssdprio_origin" <<<"$props" || fail "origin's ID_FS_TYPE: $props"
grep -qx "SSDPRIO_ID_FS_TYPE=ext4" <<<"$props" || fail "origin's type kept aside: $props"
grep -qx "SSDPRIO_ROLE=cache" <<<"$(udevadm info --query=property --name="$vs")" ||
	fail "cache's role"
mapped=$(readlink -f /dev/mapper/hid)
for link in "/dev/disk/by-uuid/$fsuuid" /dev/disk/by-label/hidetest; do
	got=$(readlink -f "$link" || true)
	log "$link -> $got"
	assert_eq "$got" "$mapped" "$link names the mapped device"
done
# What an fstab UUID= line mounts: the cached device, with its data.
mkdir -p /mnt/hide
mount "UUID=$fsuuid" /mnt/hide || fail "mount UUID=$fsuuid"
assert_eq "$(findmnt -n -o SOURCE /mnt/hide)" "/dev/mapper/hid" "mounted by UUID"
echo data >/mnt/hide/f
umount /mnt/hide
dm_remove hid

# The origin taken by another device while the cache was away (here a
# dm-linear, as LVM activating a PV found on the raw disk would make):
# activation refuses rather than write dirty blocks back under its user.
dm_create rawuser "0 $(sectors "$vh") linear $vh 0" >/dev/null
out=$("$TOOL" activate --tab "$tab" hid 2>&1) && fail "activated over a held origin: $out"
grep -q "origin .* is held by another device" <<<"$out" || fail "activate said: $out"
[[ ! -e /dev/mapper/hid ]] || fail "hid exists"
log "refused: $out"
dm_remove rawuser
"$TOOL" activate --tab "$tab" hid || fail "activate once the origin is free"
dm_remove hid
log "ok"
