#!/bin/bash
# Data through the target: fio verify, file systems with fsck and checksums,
# suspend/resume under load; with the cache off (pass-through) and on. The
# random writes cover 1.5x the cache (eviction on the write path).
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe ext4; modprobe xfs
hdd=$(make_hdd hdd 400 200000 4)  # mkfs.xfs needs >= 300 MiB
ssd=$(make_ssd ssd 32)
len=$(sectors "$hdd")

fs_check() { # fs_check DEV MKFS FSCK...
	local dev=$1 mkfs=$2 mnt=/tmp/mnt
	shift 2
	$mkfs "$dev" >/tmp/mkfs.log 2>&1 || { cat /tmp/mkfs.log; fail "$mkfs failed"; }
	mkdir -p $mnt
	mount "$dev" $mnt || fail "mount after $mkfs failed"
	mkdir $mnt/tree
	for i in $(seq 40); do
		head -c $((RANDOM * 8 + 1000)) /dev/urandom >$mnt/tree/f$i
	done
	cp -r $mnt/tree $mnt/copy
	(cd $mnt/tree && sha256sum ./* >/tmp/sums)
	sync
	umount $mnt
	"$@" "$dev" >/tmp/fsck.log 2>&1 || { cat /tmp/fsck.log; fail "$* found errors"; }
	mount "$dev" $mnt || fail "remount failed"
	(cd $mnt/tree && sha256sum -c --quiet /tmp/sums) || fail "checksums differ after remount"
	(cd $mnt/copy && sha256sum -c --quiet /tmp/sums) || fail "copy checksums differ"
	umount $mnt
}

# SSDP_IO_POLICIES: which of the four runs (make check-subset's second kernel
# takes off and writeback: the other two differ in the engine, not in what
# the kernel offers).
for policy in ${SSDP_IO_POLICIES:-off writeback writethrough writearound}; do
	case $policy in
	off) mode="2 cache off" ;;
	writeback) mode="1 format" ;;
	writethrough | writearound) mode="3 format write_policy $policy" ;;
	*) fail "SSDP_IO_POLICIES: no policy '$policy' (off writeback writethrough writearound)" ;;
	esac
	log "=== table features: '${mode}'"
	dev=$(dm_create sp "0 $len ssdprio $hdd $ssd $mode")
	fio_run --name=verify --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=8 --size=48M --verify=crc32c \
		--verify_fatal=1 --randrepeat=0 --randseed=11 >/dev/null
	fio_run --name=verifyseq --filename="$dev" --rw=write --bs=64k --direct=1 \
		--ioengine=libaio --iodepth=4 --offset=100M --size=32M --verify=crc32c \
		--verify_fatal=1 >/dev/null
	fs_check "$dev" "mkfs.ext4 -q -F" fsck.ext4 -fn
	fs_check "$dev" "mkfs.xfs -q -f" xfs_repair -n
	log "status: $(dmsetup status sp)"

	# suspend/resume while fio writes and verifies: no error, no hang
	# Random writes, then a verify pass; rate-limited so suspends land
	# mid-run, and sized so fio's random map never wraps (no overwrites).
	fio --name=busy --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=8 --size=64M --io_size=20M \
		--rate_iops=600 --verify=crc32c --verify_fatal=1 \
		--randrepeat=0 --randseed=5 >/tmp/busy.log 2>&1 &
	fpid=$!
	for _ in 1 2 3; do
		sleep 2
		timeout 120 dmsetup suspend sp || fail "suspend failed or hung"
		sleep 0.5
		timeout 60 dmsetup resume sp || fail "resume failed"
	done
	wait $fpid || { cat /tmp/busy.log; fail "fio failed across suspend/resume"; }
	grep -Eq 'err= *[1-9]' /tmp/busy.log && fail "fio error across suspend/resume"
	dm_remove sp
done
log "ok"
