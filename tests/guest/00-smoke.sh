#!/bin/bash
# Smoke test of the test bench itself: the guest has the tools, the emulated
# disks behave like an HDD and an SSD, dm and filesystems work.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

for tool in dmsetup fio mkfs.ext4 mkfs.xfs python3 ionice blktrace blkparse udevadm; do
	command -v "$tool" >/dev/null || fail "$tool is missing in the guest"
done

hdd=$(make_hdd hdd 64)
ssd=$(make_ssd ssd 64)
assert_eq "$(sectors "$hdd")" $((64 * 2048)) "hdd size in sectors"
assert_eq "$(sectors "$ssd")" $((64 * 2048)) "ssd size in sectors"

# Mean completion latency (usec) of direct 4 KiB random reads at queue depth 1.
read_lat_us() {
	fio_run --name=lat --filename="$1" --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --iodepth=1 --size=16M --runtime=3 --time_based \
		--output-format=json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["clat_ns"]["mean"] / 1000)'
}
hdd_us=$(read_lat_us "$hdd")
ssd_us=$(read_lat_us "$ssd")
log "4 KiB direct read, qd1: hdd ${hdd_us} us, ssd ${ssd_us} us"
# 5 ms configured; only assert >= 2 ms so a slow or fast TCG host is no problem.
assert_ge "$hdd_us" 2000 "hdd read latency (us)"
assert_le "$ssd_us" 2000 "ssd read latency (us)"

# dm-linear over the HDD, through dm_create/status_get/dm_remove.
len=$(sectors "$hdd")
dm=$(dm_create lin "0 $len linear $hdd 0")
[[ -b $dm ]] || fail "$dm is not a block device"
assert_eq "$(sectors "$dm")" "$len" "dm-linear size"
dd if=/dev/urandom of=/tmp/pattern bs=1M count=4 status=none
dd if=/tmp/pattern of="$dm" bs=1M oflag=direct status=none || fail "write to $dm failed"
cmp -n $((4 << 20)) /tmp/pattern "$hdd" || fail "data written through dm-linear differs on the hdd"
# The status helper the tests poll with says what dmsetup says, target by
# target (three here), and fails as dmsetup does for a device that is not there.
half=$((len / 2))
printf '0 %s linear %s 0\n%s %s error\n%s %s linear %s %s\n' "$half" "$hdd" \
	"$half" 8 $((half + 8)) $((len - half - 8)) "$hdd" $((half + 8)) | dmsetup reload lin &&
	dmsetup resume lin || fail "three targets in lin"
[[ -x $REPO/build/tools/dmstatus ]] || fail "build/tools/dmstatus is not built (make tools)"
assert_eq "$("$REPO/build/tools/dmstatus" lin)" "$(dmsetup status lin)" "dmstatus lin"
assert_eq "$(dm_status lin | wc -l)" 3 "status lines of lin"
"$REPO/build/tools/dmstatus" no-such-device 2>/dev/null && fail "dmstatus of a missing device succeeded"
dm_remove lin
[[ ! -e /dev/mapper/lin ]] || fail "/dev/mapper/lin still exists after dm_remove"

# ext4 on a null_blk: mkfs, mount (module autoload path), write, unmount.
mkfs.ext4 -q -F "$ssd" || fail "mkfs.ext4 failed"
mkdir -p /mnt/smoke
mount "$ssd" /mnt/smoke || fail "mount ext4 failed"
echo hello >/mnt/smoke/f && sync
assert_eq "$(cat /mnt/smoke/f)" hello "file content on ext4"
umount /mnt/smoke

remove_nullb hdd
remove_nullb ssd
[[ ! -e /dev/hdd ]] || fail "/dev/hdd still exists after remove_nullb"
log "smoke ok"
