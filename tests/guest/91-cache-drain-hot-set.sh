#!/bin/bash
# A drain finishes on a set that is written without pause.
#
# A writeback cannot start while a write is in flight on its set (it could
# not tell what that write leaves).  Two writers whose writes take 10 s
# each (writethrough, as a drain makes them; the origin's writes held by
# dm-delay), started 5 s apart, keep a write in flight on the set all the
# time: the drain makes new writes to it wait until its writeback starts,
# and finishes while the writers go on.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
leg_load hddleg "0 $nh linear $hdd 0"
dm=$(dm_create sp "0 $nh ssdprio /dev/mapper/hddleg $ssd 9 format evict_wait 3600000 dirty_max_age 0 read_alloc off seq_cutoff 0")
assert_eq "$(status_get sp set_blocks)" 1024 "set_blocks (origin set 0: the first 4 MiB)"
writers=()
trap 'kill "${writers[@]}" 2>/dev/null; wait' EXIT

# The set cached whole and clean, then its first MiB dirty.
dd if=/dev/urandom of="$dm" bs=1M count=4 oflag=direct status=none || fail "write 4 MiB"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dd if=/dev/urandom of="$dm" bs=64k count=16 oflag=direct status=none || fail "write 1 MiB"
assert_eq "$(status_get sp dirty_blocks)" 256 "the set's dirty blocks"

# Writethrough from here (as the drain makes it), and the origin's writes
# take 10 s: each write of the other 3 MiB of the set (cached, clean) holds
# the set that long.  Two writers, one write at a time each, 5 s apart: one
# is always in flight.
dmsetup message sp 0 write_policy writethrough || fail "write_policy writethrough"
leg_load hddleg "0 $nh delay $hdd 0 0 $hdd 0 10000"
writer() { # writer FIRST_BLOCK: one block after another, of the set's last 3 MiB
	local b=$1
	while dd if=/dev/urandom of="$dm" bs=4k seek=$b count=1 oflag=direct status=none; do
		b=$((256 + (b - 256 + 97) % 768))
	done
}
writer 300 &
writers+=($!)
sleep 5
writer 700 &
writers+=($!)
sleep 2
w0=$(status_get sp writes)
dmsetup message sp 0 drain || fail "drain"
wait_status sp dirty_blocks -eq 0 300
kill -0 "${writers[0]}" 2>/dev/null && kill -0 "${writers[1]}" 2>/dev/null ||
	fail "a writer stopped: the test proves nothing"
assert_ge "$(status_get sp writes)" $((w0 + 2)) "writes went on during the drain"
log "drained under two writers of the same set ($(status_get sp deferred) writes waited)"
kill "${writers[@]}"
wait "${writers[@]}" 2>/dev/null || true
writers=()
leg_load hddleg "0 $nh linear $hdd 0"
for _ in $(seq 100); do pgrep -x dd >/dev/null || break; sleep 0.2; done
wait_status sp flush_state == idle 60
assert_eq "$(status_get sp dirty_blocks)" 0 "dirty blocks after the writer stopped"
cmp <(dd if="$dm" bs=1M count=4 iflag=direct status=none) \
	<(dd if="$hdd" bs=1M count=4 iflag=direct status=none) ||
	fail "the drained set: device and origin differ"
dm_remove sp
dm_remove hddleg
remove_nullb hdd
remove_nullb ssd
log "ok"
