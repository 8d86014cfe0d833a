#!/bin/bash
# The guest environment that tests/vm/run promises, and lib.sh's own behaviour:
# mounts, writable results, sysctls, module autoloading through the kernel's
# modprobe helper, udev, "# disks:" headers and vdisk, fail/skip from subshells,
# status_get parsing, fio_run's error detection.
# (That the runner itself reports failures, warnings and timeouts is checked
# from the host by tests/vm/selftest.)
# timeout: 180
# disks: vmbench:16M
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

# --- Mounts and settings.
for fs in "/proc proc" "/sys sysfs" "/dev devtmpfs" "/tmp tmpfs" "/run tmpfs" "/mnt tmpfs" \
	"/sys/kernel/config configfs" "/sys/kernel/debug debugfs" "/sys/fs/cgroup cgroup2"; do
	read -r mnt type <<<"$fs"
	awk -v m="$mnt" -v t="$type" '$2 == m && $3 == t { f = 1 } END { exit !f }' /proc/mounts ||
		fail "$mnt is not a $type mount"
done
{ touch "$RESULTS_DIR/.vmbench-write" && rm "$RESULTS_DIR/.vmbench-write"; } ||
	fail "results dir $RESULTS_DIR not writable"
[[ -w $REPO ]] || fail "repo $REPO not writable"
assert_eq "$(cat /proc/sys/kernel/hung_task_timeout_secs)" 60 "hung_task_timeout_secs"
assert_eq "$(cat /proc/sys/kernel/panic_on_oops)" 0 "panic_on_oops"
[[ ! -e /dev/nullb0 ]] || fail "null_blk was loaded with default devices (want nr_devices=0)"
for m in dm_mod null_blk loop virtio_blk ext4 xfs dm_bufio dm_delay dm_flakey dm_log_writes bfq; do
	[[ -d /sys/module/$m ]] || fail "module $m not pre-loaded"
done
if [[ -f $MODULE ]]; then
	v=$(modinfo -F vermagic "$MODULE" | awk '{ print $1 }')
	assert_eq "$v" "$(uname -r)" "dm-ssdprio.ko built for the guest's kernel"
fi

# --- Module autoloading from the kernel (request_module -> helper -> chroot).
[[ ! -d /sys/module/dm_zero ]] || skip "dm-zero already loaded; cannot test autoloading"
dmsetup create vmb-zero --table "0 8 zero" || fail "dm 'zero' target did not autoload"
[[ -d /sys/module/dm_zero ]] || fail "dm_zero not loaded after use"

# --- udev: it made the node and ran dm's rules (the dm-name-* link).
if [[ -S /run/udev/control ]]; then
	udevadm settle
	[[ -b /dev/mapper/vmb-zero ]] || fail "udev did not create /dev/mapper/vmb-zero"
	[[ -L /dev/disk/by-id/dm-name-vmb-zero ]] || fail "dm udev rules did not run (no by-id/dm-name link)"
else
	log "udevd not running (VM_UDEV=0?): skipping udev checks"
fi
dm_remove vmb-zero

# --- "# disks: vmbench:16M" above attached a virtio disk.
d=$(vdisk vmbench)
assert_eq "$(sectors "$d")" $((16 * 2048)) "vdisk vmbench size"
if [[ -S /run/udev/control ]]; then
	[[ -L /dev/disk/by-id/virtio-vmbench ]] || fail "no /dev/disk/by-id/virtio-vmbench"
fi
dd if=/dev/urandom of=/tmp/blk bs=4k count=1 status=none
dd if=/tmp/blk of="$d" bs=4k oflag=direct,sync status=none || fail "write to $d failed"
cmp -n 4096 /tmp/blk "$d" || fail "read back from $d differs"

# --- make_hdd's optional arguments reach null_blk.
make_hdd vmbhdd 8 1000000 2 100 >/dev/null
c=$NULLB_CONFIGFS/vmbhdd
assert_eq "$(cat $c/completion_nsec) $(cat $c/hw_queue_depth) $(cat $c/mbps)" "1000000 2 100" "make_hdd parameters"
assert_eq "$(cat /sys/block/vmbhdd/queue/logical_block_size)" 512 "null_blk logical block size"
remove_nullb vmbhdd

# --- fail/skip reach the test's main shell from subshells.
lib=$REPO/tests/guest/lib.sh
# shellcheck disable=SC2016 # expanded by the inner bash
bash -c '. "$1"; x=$(fail "from a subshell"); echo "still running: $x"; exit 0' _ "$lib" >/tmp/out 2>&1
assert_eq "$?" 1 "exit status after fail in \$(...)"
grep -q "still running" /tmp/out && fail "the test went on after fail in a subshell"
# shellcheck disable=SC2016
bash -c '. "$1"; echo | { skip "from a pipeline"; }; exit 0' _ "$lib" >/dev/null 2>&1
assert_eq "$?" 77 "exit status after skip in a pipeline"
# shellcheck disable=SC2016
bash -c '. "$1"; assert_ge 2.5 2.49 && assert_le 1e3 1000 && assert_eq a a; echo ok' _ "$lib" >/tmp/out 2>&1
assert_eq "$(cat /tmp/out)" ok "numeric asserts on floats"
# shellcheck disable=SC2016
bash -c '. "$1"; assert_ge 1 2 "one vs two"' _ "$lib" >/dev/null 2>&1 && fail "assert_ge 1 2 passed"

# --- status_get parses "key value" pairs after "start length target".
# shellcheck disable=SC2016
v=$(bash -c '. "$1"; dm_status() { echo "0 2048 fake hits 12 misses 3 mode wb"; }; status_get /dev/mapper/x misses' _ "$lib")
assert_eq "$v" 3 "status_get value"
# shellcheck disable=SC2016
bash -c '. "$1"; dm_status() { echo "0 2048 fake hits 12"; }; status_get x nokey' _ "$lib" >/dev/null 2>&1 &&
	fail "status_get of a missing key succeeded"

# --- fio_run fails on I/O errors. dm-flakey, always "down", failing only writes
# (failing reads would make udev's blkid probe fill the log with I/O errors).
make_ssd vmbssd 8 >/dev/null
dm_create vmb-err "0 $(sectors /dev/vmbssd) flakey /dev/vmbssd 0 0 3600 1 error_writes" >/dev/null
# shellcheck disable=SC2016
bash -c '. "$1"; fio_run --name=e --filename=/dev/mapper/vmb-err --rw=write --bs=4k --size=64k --direct=1' \
	_ "$lib" >/tmp/out 2>&1 && fail "fio_run on failing I/O did not fail: $(cat /tmp/out)"
grep -Eq "FAIL: fio (exited|reported)" /tmp/out || fail "fio_run did not report the error: $(cat /tmp/out)"
dm_remove vmb-err
remove_nullb vmbssd
log "vmbench ok"
