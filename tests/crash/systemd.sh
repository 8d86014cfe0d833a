#!/bin/bash
# Boot and shutdown through systemd with the packages installed: the
# ssdpriotab's entries come up from the generated ssdprio@NAME units, an
# fstab UUID= line mounts the mapped device (never the raw origin), a
# nofail entry whose disks never come fails alone without stopping the
# boot, an entry whose cache appears late is activated when it does, and
# the shutdown removes the devices cleanly, so the next boot loads warm.
#
# Boot 1 (the bench's own init): `ssdprio-tool create fast` over the virtio
#   disks hdd and ssd (writeback, no writeback in this boot); ext4 on it,
#   files A written; unmounted, removed.
# Boot 2 (systemd as PID 1, tests/vm/run --systemd). Before systemd starts
#   (SSDPRIO_PHASE=preboot): the ssdprio-tools package (build/deb/) is
#   installed with dpkg, the module loaded, an ssdpriotab with
#   `fast` and `ghost` (nofail, device_timeout 10, disks that do not exist),
#   an fstab with `UUID=<fs uuid> /mnt/fast` and `/dev/mapper/ghost` (nofail).
#   Then: ssdprio@fast is active, /mnt/fast is mounted from
#   /dev/mapper/fast, files A verify, files B are written (dirty in the
#   cache); ssdprio@ghost failed after saying which disk did not appear, and
#   the boot reached its target (no emergency shell). A `late` entry is
#   added to the tab (daemon-reload runs the generator again) over null_blk
#   disks whose cache was formatted and then powered off: its unit waits,
#   the cache powers on, the unit activates it with its data; `systemctl
#   stop` removes it cleanly. The boot ends with `systemctl poweroff`.
# Boot 3 (init): the cache's superblock says clean (the shutdown removed the
#   device); loaded without format it is warm (meta_state clean); A and B
#   verify through it, and on the origin alone after flush_dirty.
#
# boots: 3
# systemd-boots: 2
# disks: hdd:128M ssd:32M
# timeout: 600
# shellcheck source=tests/crash/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
# Boot 2 uses the packaged tool.
PKG_TOOL=/usr/sbin/ssdprio-tool
MNT=/mnt/fast

# files_write DIR TAG N: N files of 256 KiB of random data, their sums kept.
files_write() {
	local dir=$1 tag=$2 n=$3 i
	mkdir -p "$dir/$tag"
	for ((i = 0; i < n; i++)); do
		head -c 262144 /dev/urandom >"$dir/$tag/f$i" || fail "write $dir/$tag/f$i"
	done
	sync
	(cd "$dir" && sha256sum "$tag"/*) >"$CRASH_STATE/sums-$tag"
}

files_verify() { # files_verify DIR TAG
	(cd "$1" && sha256sum --quiet -c "$CRASH_STATE/sums-$2") ||
		fail "files $2 do not verify in $1"
}

# unit_state UNIT: systemd's ActiveState (active, failed, activating, ...).
unit_state() { systemctl show -P ActiveState "$1"; }

wait_unit() { # wait_unit UNIT STATE [SECS=120]
	local i
	for ((i = 0; i < ${3:-120} * 2; i++)); do
		[[ $(unit_state "$1") == "$2" ]] && return 0
		sleep 0.5
	done
	journalctl -b -u "$1" --no-pager >&2
	fail "$1 is $(unit_state "$1"), not $2, after ${3:-120} s"
}

# preboot: in the overlay root, before systemd starts.
preboot() {
	local deb fsuuid
	deb=$(compgen -G "$REPO/build/deb/ssdprio-tools_*_amd64.deb" | head -1)
	[[ -n $deb ]] || fail "no ssdprio-tools package in build/deb (make debs)"
	log "preboot: dpkg -i $deb"
	# --no-triggers: the package's initramfs hook wakes update-initramfs,
	# which takes longer than the whole boot under TCG (this boot has no
	# initramfs to update; tests/crash/rootfs covers the hook).
	dpkg --no-triggers -i "$deb" >/dev/null || fail "dpkg -i $deb"
	# The module is loaded now rather than installed where DKMS puts it: a
	# DKMS build under TCG, or even depmod over the host's modules through
	# 9p, takes minutes (scripts/deb-check checks the DKMS build).
	log "preboot: load the module"
	load_module
	log "preboot: done"
	fsuuid=$(state_get fsuuid)
	mkdir -p /etc/ssdprio "$MNT" /mnt/ghost
	cat >/etc/ssdprio/ssdpriotab <<-EOF
	# written by tests/crash/systemd.sh
	fast  /dev/disk/by-id/virtio-hdd /dev/disk/by-id/virtio-ssd write_policy writeback evict_wait 3600000
	ghost /dev/disk/by-id/virtio-nosuch-hdd /dev/disk/by-id/virtio-nosuch-ssd nofail device_timeout 10
	EOF
	cat >/etc/fstab <<-EOF
	UUID=$fsuuid $MNT ext4 defaults 0 2
	/dev/mapper/ghost /mnt/ghost ext4 defaults,nofail,x-systemd.device-timeout=20s 0 2
	EOF
}

late_entry() {
	local sum
	make_hdd late_hdd 64 0 >/dev/null
	make_ssd late_ssd 16 0 >/dev/null
	"$PKG_TOOL" create late /dev/late_hdd /dev/late_ssd >/dev/null || fail "create late"
	head -c 1048576 /dev/urandom >/tmp/late.bin
	dd if=/tmp/late.bin of=/dev/mapper/late bs=1M oflag=direct status=none || fail "write late"
	sum=$(sha256sum </tmp/late.bin)
	# udev may still be probing the new device: wait for it, retry EBUSY.
	udevadm settle --timeout=60 || true
	dmsetup remove --retry late || fail "remove late"
	# The cache goes away (its data stays: memory-backed null_blk).
	echo 0 >"$NULLB_CONFIGFS/late_ssd/power"
	[[ ! -e /dev/late_ssd ]] || fail "/dev/late_ssd still there after power off"

	echo "late /dev/late_hdd /dev/late_ssd nofail device_timeout 300" >>/etc/ssdprio/ssdpriotab
	systemctl daemon-reload || fail "daemon-reload"
	[[ -f /run/systemd/generator/ssdprio@late.service.d/50-ssdpriotab.conf ]] ||
		fail "the generator wrote no unit for 'late': $(ls -R /run/systemd/generator)"
	systemctl start --no-block ssdprio@late.service
	for _ in $(seq 120); do
		journalctl -b -u ssdprio@late.service --no-pager | grep -q 'waiting up to 300 s for cache /dev/late_ssd' && break
		sleep 0.5
	done
	journalctl -b -u ssdprio@late.service --no-pager | grep -q 'waiting up to 300 s for cache /dev/late_ssd' ||
		fail "ssdprio@late does not say it waits for its cache: $(journalctl -b -u ssdprio@late.service --no-pager)"
	assert_eq "$(unit_state ssdprio@late.service)" activating "ssdprio@late while its cache is away"

	echo 1 >"$NULLB_CONFIGFS/late_ssd/power"
	wait_unit ssdprio@late.service active
	assert_eq "$(status_get late meta_state)" clean "late's load after its cache came"
	assert_eq "$(head -c 1048576 /dev/mapper/late | sha256sum)" "$sum" "late's data"
	log "late: $(journalctl -b -u ssdprio@late.service --no-pager -o cat | tr '\n' ' ')"

	systemctl stop ssdprio@late.service || fail "systemctl stop ssdprio@late"
	[[ ! -e /dev/mapper/late ]] || fail "/dev/mapper/late still there after the unit stopped"
	"$PKG_TOOL" show /dev/late_ssd | grep -Eq '^ +shutdown: +clean' ||
		fail "late's cache is not clean after the unit stopped: $("$PKG_TOOL" show /dev/late_ssd)"
	remove_nullb late_ssd
	remove_nullb late_hdd
}

if [[ ${SSDPRIO_PHASE:-} == preboot ]]; then
	preboot
	exit 0
fi

case $CRASH_BOOT in
1)
	load_module
	"$TOOL" create fast "$(vdisk hdd)" "$(vdisk ssd)" write_policy writeback evict_wait 3600000 ||
		fail "ssdprio-tool create"
	mkfs.ext4 -q /dev/mapper/fast || fail "mkfs.ext4"
	state_put fsuuid "$(blkid -o value -s UUID /dev/mapper/fast)"
	mkdir -p "$MNT"
	mount /dev/mapper/fast "$MNT" || fail "mount"
	files_write "$MNT" A 16
	umount "$MNT"
	dm_remove fast
	;;
2)
	[[ $(cat /proc/1/comm) == systemd ]] || fail "PID 1 is $(cat /proc/1/comm), not systemd"
	# The boot's journal, for whoever reads a failure (results/journal.txt).
	trap 'journalctl -b -o short-monotonic --no-pager >"$RESULTS_DIR/journal.txt" 2>&1' EXIT
	log "jobs still queued: $(systemctl list-jobs --no-pager --plain --no-legend | tr '\n' ';')"
	wait_unit ssdprio@fast.service active
	assert_eq "$(findmnt -n -o SOURCE "$MNT")" /dev/mapper/fast "what UUID= mounted on $MNT"
	[[ $(dmsetup info -c --noheadings -o uuid fast) == SSDPRIO-* ]] || fail "fast has no SSDPRIO- DM UUID"
	assert_eq "$(status_get fast meta_state)" clean "fast's load at boot (removed cleanly in boot 1)"
	files_verify "$MNT" A
	files_write "$MNT" B 16
	assert_ge "$(status_get fast dirty_blocks)" 1 "dirty blocks on fast (written back only at boot 3)"

	wait_unit ssdprio@ghost.service failed 120
	journalctl -b -u ssdprio@ghost.service --no-pager |
		grep -q 'ghost: origin /dev/disk/by-id/virtio-nosuch-hdd did not appear within 10 s' ||
		fail "ssdprio@ghost does not say what it waited for: $(journalctl -b -u ssdprio@ghost.service --no-pager)"
	assert_eq "$(unit_state local-fs.target)" active "local-fs.target with a nofail entry missing"
	assert_eq "$(unit_state emergency.target)" inactive "emergency.target"

	late_entry
	log "units: $(systemctl list-units --all --no-pager --plain 'ssdprio@*' | head -5 | tr '\n' ';')"
	# guest-run powers off with systemctl: the units stop, /mnt/fast is
	# unmounted, ssdprio@fast removes the device.
	;;
3)
	"$TOOL" show "$(vdisk ssd)" | grep -Eq '^ +shutdown: +clean' ||
		fail "the cache is not clean after the systemd shutdown: $("$TOOL" show "$(vdisk ssd)")"
	load_module
	dm_create "$CX" "$("$TOOL" table "$(vdisk hdd)" "$(vdisk ssd)")"
	dev=/dev/mapper/$CX
	assert_meta_state clean
	assert_ge "$(status_get "$CX" dirty_blocks)" 1 "dirty blocks kept across the shutdown"
	mkdir -p "$MNT"
	mount "$dev" "$MNT" || fail "mount"
	files_verify "$MNT" A
	files_verify "$MNT" B
	umount "$MNT"
	cx_drain
	dm_remove "$CX"
	mount -o ro "$(vdisk hdd)" "$MNT" || fail "mount the origin alone"
	files_verify "$MNT" A
	files_verify "$MNT" B
	umount "$MNT"
	log "A and B verified through the cache and on the origin alone"
	;;
esac
