#!/bin/bash
# The write-back cache keeps data exact: working sets 3x the cache (eviction
# and bypass), every write policy, partial and unaligned writes, flush_dirty,
# and afterwards the origin alone holds exactly the data written; with
# writethrough, a write of a block another write has in flight waits for it,
# so the SSD and the origin agree afterwards.
# timeout: 1500
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 200 100000 4)
ssd=$(make_ssd ssd 36)
len=$(sectors "$hdd")
MiB=$((1024 * 1024))

counters_ok() { # from one status line: eviction may run between two
	local st
	st=$(dmsetup status sp)
	python3 - "$st" <<'PY' || fail "inconsistent counters: $st"
import sys
f = sys.argv[1].split()[3:]
d = dict(zip(f[0::2], f[1::2]))
assert int(d["valid_blocks"]) >= int(d["dirty_blocks"])
assert int(d["mapped_sets"]) + int(d["free_sets"]) + int(d["limbo_sets"]) == int(d["total_sets"])
PY
}

# Random 4 KiB writes by 4 jobs, 12 MiB each in [0, 96M), and sequential
# 128 KiB writes over [96M, 144M): together 3x the ~32 MiB cache. fio's
# verify headers carry the offset and a checksum, so a block that came back
# stale or misplaced fails.
bulk() { # bulk FILE EXTRA-FIO-ARGS...
	local f=$1
	shift
	fio_run --name=rnd --filename="$f" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=psync --numjobs=4 --offset_increment=24M --size=12M \
		--randrepeat=0 --randseed=3 --verify=crc32c --verify_fatal=1 "$@" >/dev/null
	fio_run --name=seq --filename="$f" --rw=write --bs=128k --direct=1 \
		--ioengine=psync --offset=96M --size=48M --verify=crc32c \
		--verify_fatal=1 "$@" >/dev/null
}

# Partial and unaligned writes in [192M, 200M), mirrored into a model file.
partial_writes() {
	dd if="$dev" of=/tmp/model bs=1M skip=192 count=8 iflag=direct status=none
	for off in 7 4097 5000 12345 15000 16377; do
		head -c 1536 /dev/urandom >/tmp/piece
		dd if=/tmp/piece of="$dev" bs=512 seek=$((192 * 2048 + off)) oflag=direct conv=notrunc status=none
		dd if=/tmp/piece of=/tmp/model bs=512 seek=$off conv=notrunc status=none
	done
	# rewrite a whole block over one partial one, then a partial over that
	head -c 4096 /dev/urandom >/tmp/piece
	dd if=/tmp/piece of="$dev" bs=4k seek=$((192 * 256 + 1)) oflag=direct conv=notrunc status=none
	dd if=/tmp/piece of=/tmp/model bs=4k seek=1 conv=notrunc status=none
	head -c 512 /dev/urandom >/tmp/piece
	dd if=/tmp/piece of="$dev" bs=512 seek=$((192 * 2048 + 9)) oflag=direct conv=notrunc status=none
	dd if=/tmp/piece of=/tmp/model bs=512 seek=9 conv=notrunc status=none
	cmp <(dd if="$dev" bs=1M skip=192 count=8 iflag=direct status=none) /tmp/model ||
		fail "partial writes: device differs from the model"
}

for policy in writeback writethrough writearound; do
	log "=== write_policy $policy"
	dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format write_policy $policy evict_wait 200")
	bulk "$dev"
	counters_ok
	partial_writes
	# everything still reads back right through the cache
	bulk "$dev" --verify_only=1
	# a reread of a region just read is served by the cache (once cleaning
	# has left clean frames for its promotion and eviction is idle again).
	# The promotion runs after the read, and is dropped if a writeback holds
	# its set then: read again until it is in, up to a bound.
	wait_status sp dirty_blocks "<=" $(($(status_get sp cache_blocks) / 5)) 60
	wait_status sp evict_state == normal 60
	hit=
	for try in $(seq 30); do
		h0=$(status_get sp read_hits)
		dd if="$dev" of=/dev/null bs=64k count=16 skip=1600 iflag=direct status=none
		(($(status_get sp read_hits) > h0)) && hit=$try && break
		sleep 1
	done
	[[ -n $hit ]] || fail "read hits on a reread ($policy): none in 30 reads: $(dmsetup status sp)"
	log "the region read hit the cache at read $hit ($policy)"
	counters_ok
	log "status: $(dmsetup status sp)"

	dmsetup message sp 0 flush_dirty || fail "flush_dirty rejected"
	wait_status sp dirty_blocks -eq 0 300
	assert_eq "$(status_get sp dirty_blocks)" 0 "dirty blocks after flush_dirty"
	dm_remove sp
	# the origin alone now holds exactly what was written
	bulk "$hdd" --verify_only=1
	cmp <(dd if="$hdd" bs=1M skip=192 count=8 iflag=direct status=none) /tmp/model ||
		fail "origin differs from the model after remove ($policy)"
done

# remove without flush_dirty: the dirty data stays in the cache, durable;
# the next table finds it (warm), and flush_dirty then brings the origin level
late() { # late FILE EXTRA-FIO-ARGS...
	local f=$1
	shift
	fio_run --name=late --filename="$f" --rw=randwrite --bs=4k --direct=1 --size=24M \
		--randrepeat=0 --randseed=9 --verify=crc32c --ioengine=psync "$@" >/dev/null
}
# No eviction under pressure either: a writeback finishing during the remove
# would change the dirty count compared below.
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 evict_max_wait 0")
late "$dev"
dirty=$(status_get sp dirty_blocks)
valid=$(status_get sp valid_blocks)
assert_ge "$dirty" 1 "dirty data before remove"
dm_remove sp
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 evict_max_wait 0")
assert_eq "$(status_get sp meta_state)" clean "load after dmsetup remove"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks kept across remove/create"
assert_eq "$(status_get sp valid_blocks)" "$valid" "valid blocks kept across remove/create"
late "$dev" --verify_only=1
dmsetup message sp 0 flush_dirty || fail "flush_dirty rejected"
wait_status sp dirty_blocks -eq 0 300
dm_remove sp
late "$hdd" --verify_only=1

# Two writes of one block in flight, writethrough: a whole-block write whose SSD
# leg is held (the dm device under the cache suspended), and a partial write of
# the same block, which would reach the origin alone (its block is not valid
# yet). The second waits for the first: otherwise the origin ends with both and
# the cache, as clean, with the first alone, and a read changes its answer once
# the block is evicted.
dm_create ssdleg "0 $(sectors "$ssd") linear $ssd 0" >/dev/null
dev=$(dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdleg 5 format write_policy writethrough read_alloc off")
blk=$((150 * 256)) # a 4 KiB block at 150 MiB, away from udev's probes
head -c 4K /dev/urandom >/tmp/two.w
head -c 512 /dev/urandom >/tmp/two.p
{ cat /tmp/two.p; tail -c +513 /tmp/two.w; } >/tmp/two.want
_settle
w0=$(status_get sp writes)
d0=$(status_get sp deferred)
dmsetup suspend ssdleg || fail "suspend the SSD leg"
trap 'dmsetup resume ssdleg 2>/dev/null' EXIT
dd if=/tmp/two.w of="$dev" bs=4k seek=$blk oflag=direct status=none &
first=$!
wait_status sp writes -ge $((w0 + 1)) 60
dd if=/tmp/two.p of="$dev" bs=512 seek=$((blk * 8)) oflag=direct status=none &
second=$!
wait_status sp deferred -ge $((d0 + 1)) 60
dmsetup resume ssdleg || fail "resume the SSD leg"
trap - EXIT
wait $first || fail "the whole-block write"
wait $second || fail "the partial write"
cmp /tmp/two.want <(dd if="$dev" bs=4k skip=$blk count=1 iflag=direct status=none) ||
	fail "the device after two writes of one block in flight"
cmp /tmp/two.want <(dd if="$hdd" bs=4k skip=$blk count=1 iflag=direct status=none) ||
	fail "the origin after two writes of one block in flight"
dm_remove sp
dmsetup remove ssdleg || fail "remove ssdleg"

# writearound (as a degraded cache writes) keeps on the SSD only the blocks
# that are dirty there: one write over a dirty block and two it does not
# hold is cut, the new data of those two goes to the origin alone.
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 3600000 read_alloc off")
blk=$((160 * 256 + 2)) # 12 KiB aligned, in one set
blk_put "$dev" $blk D || fail "the dirty block"
assert_eq "$(status_get sp dirty_blocks)" 1 "one dirty block"
dmsetup message sp 0 write_policy writearound || fail "write_policy writearound"
head -c 12K /dev/urandom >/tmp/around.w
dd if=/tmp/around.w of="$dev" bs=12k seek=$((blk / 3)) oflag=direct status=none ||
	fail "the write over the dirty block and two others"
assert_eq "$(status_get sp dirty_blocks)" 1 "dirty blocks after the writearound write"
cmp <(tail -c +4097 /tmp/around.w) \
	<(dd if="$hdd" bs=4k skip=$((blk + 1)) count=2 iflag=direct status=none) ||
	fail "the origin lacks the blocks writearound does not hold"
cmp /tmp/around.w <(dd if="$dev" bs=4k skip=$blk count=3 iflag=direct status=none) ||
	fail "the device after the writearound write"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
cmp /tmp/around.w <(dd if="$hdd" bs=4k skip=$blk count=3 iflag=direct status=none) ||
	fail "the origin after the flush"
dm_remove sp
log "ok"
