#!/bin/bash
# The write-back cache keeps data exact: working sets larger than the
# cache (eviction and bypass), every write policy, partial and unaligned
# writes, flush_dirty, and the origin alone afterwards equal to a model
# file that received the same writes.
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 192 100000 4)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
model=/tmp/model.img

counters_ok() {
	local v d m f t
	v=$(status_get sp valid_blocks); d=$(status_get sp dirty_blocks)
	m=$(status_get sp mapped_sets); f=$(status_get sp free_sets); t=$(status_get sp total_sets)
	assert_ge "$v" "$d" "valid_blocks >= dirty_blocks"
	assert_eq "$((m + f))" "$t" "mapped + free = total sets"
}

# the same writes onto the device and onto a model file
both_fio() { # both_fio FIO-ARGS...
	fio_run --filename="$dev" --direct=1 "$@" >/dev/null
	fio_run --filename="$model" "$@" >/dev/null
}

wait_clean() {
	for _ in $(seq 600); do
		[[ $(status_get sp dirty_blocks) == 0 ]] && return 0
		sleep 0.5
	done
	fail "dirty blocks did not reach 0 after flush_dirty: $(dmsetup status sp)"
}

for policy in writeback writethrough writearound; do
	log "=== write_policy $policy"
	dd if=/dev/zero of="$hdd" bs=1M count=192 oflag=direct status=none
	rm -f $model; truncate -s 192M $model
	dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 4 write_policy $policy evict_wait 200")

	# random 4 KiB writes over 3x the cache, four jobs side by side
	both_fio --name=rw --rw=randwrite --bs=4k --size=192M --numjobs=4 \
		--offset_increment=48M --size=48M --randrepeat=0 --randseed=3 \
		--io_size=24M --ioengine=psync
	counters_ok
	# sequential, larger than the cache
	both_fio --name=seq --rw=write --bs=128k --offset=0 --size=160M --ioengine=psync
	counters_ok
	# partial and unaligned writes: 512 B and 1.5 KiB pieces at odd sectors
	for off in 7 4097 12345 40000 99999 200001; do
		head -c 1536 /dev/urandom >/tmp/piece
		dd if=/tmp/piece of="$dev" bs=512 seek=$off oflag=direct conv=notrunc status=none
		dd if=/tmp/piece of=$model bs=512 seek=$off conv=notrunc status=none
	done
	# reads through the device see exactly the model
	cmp "$dev" $model || fail "device differs from model ($policy)"
	# rereading the first MiB twice: the second read is a cache hit
	dd if="$dev" of=/dev/null bs=64k count=16 iflag=direct status=none
	sleep 1
	h0=$(status_get sp read_hits)
	dd if="$dev" of=/dev/null bs=64k count=16 iflag=direct status=none
	h1=$(status_get sp read_hits)
	if [[ $policy != writearound ]]; then
		assert_ge "$((h1 - h0))" 1 "read hits on a reread ($policy)"
	fi
	counters_ok
	log "status: $(dmsetup status sp)"

	dmsetup message sp 0 flush_dirty || fail "flush_dirty rejected"
	wait_clean
	dm_remove sp
	cmp "$hdd" $model || fail "origin alone differs from the model after remove ($policy)"
done

# remove without flush_dirty: the last suspend writes everything back
dd if=/dev/zero of="$hdd" bs=1M count=192 oflag=direct status=none
rm -f $model; truncate -s 192M $model
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000")
both_fio --name=rw2 --rw=randwrite --bs=4k --size=40M --randrepeat=0 --randseed=9 --ioengine=psync
d=$(status_get sp dirty_blocks)
assert_ge "$d" 1 "dirty data before remove"
dm_remove sp
cmp "$hdd" $model || fail "origin differs after remove with dirty data"
log "ok"
