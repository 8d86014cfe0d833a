#!/bin/bash
# Deferred eviction: dirty sets are written back only after evict_wait of
# quiet, never while I/O keeps arriving (with evict_max_wait 0; the default
# writes back under pressure after it: 28-cache-clean); read hits come from
# the SSD.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256 100000 4)
ssd=$(make_ssd ssd 48)
len=$(sectors "$hdd")
# evict_max_wait 0: the paper's rule, no eviction under pressure.  A long
# evict_wait: on a loaded host (two emulated guests on two cores) the busy
# reader below can stall for seconds, and a stall that long is a quiet window.
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 10000 evict_max_wait 0")
total=$(status_get sp total_sets)

# Fill the cache with dirty data: sequential writes of 2x its size.
fio_run --name=fill --filename="$dev" --rw=write --bs=256k --direct=1 \
	--size=96M --ioengine=psync --verify=crc32c --do_verify=0 >/dev/null
dirty0=$(status_get sp dirty_blocks)
assert_ge "$(status_get sp bypassed)" 1 "writes bypassed once the cache was full"
log "after fill: $(dmsetup status sp)"

# Foreground I/O with gaps far shorter than evict_wait: no writeback starts.
# A reader with 100 ms think time keeps I/O arriving (a shell loop of dd and
# dmsetup could itself leave gaps of seconds on a loaded host). Writeback
# begun before it (a slow host can stall fio's fill for evict_wait) finishes
# first: sample once no set is under writeback any more.
fio --name=keepbusy --filename="$dev" --rw=randread --bs=16k --direct=1 \
	--ioengine=psync --thinktime=100000 --size=96M --runtime=300 --time_based \
	--randrepeat=0 --output=/tmp/keepbusy.out &
busy=$!
trap 'kill $busy 2>/dev/null; wait' EXIT
wait_status sp writeback_sets -eq 0 120
wb0=$(status_get sp blocks_written_back)
sleep 8
wb1=$(status_get sp blocks_written_back)
log "while busy: $(dmsetup status sp)"
assert_eq "$wb1" "$wb0" "no writeback while I/O keeps arriving"
assert_eq "$(status_get sp writeback_sets)" 0 "no set under writeback while I/O keeps arriving"
kill $busy 2>/dev/null
wait 2>/dev/null || true
trap - EXIT

# Quiet: eviction writes back; the blocks stay cached, clean.
sleep 12
wait_status sp dirty_blocks "<" "$dirty0" 120
wb2=$(status_get sp blocks_written_back)
log "after quiet: $(dmsetup status sp)"
assert_ge "$wb2" "$((wb1 + 1))" "writeback happened in the quiet window"
assert_ge "$(status_get sp sets_evicted)" 1 "sets_evicted counted"
assert_le "$(status_get sp mapped_sets)" "$total" "mapped sets within total"

# Everything written is still there.
fio_run --name=fill --filename="$dev" --rw=write --bs=256k --direct=1 \
	--size=96M --ioengine=psync --verify=crc32c --verify_only=1 >/dev/null

# flush_dirty empties the dirty set count without waiting for quiet.
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks == 0 150 # flush_dirty writes everything back

# Read hits are served by the SSD: rereads leave the HDD alone.  Nothing is
# dirty now: no frame the promotion needs is held by another origin set's
# dirty block (which would keep the copy out).
# udev reads the device too (blkid after a writer such as fio closes it),
# and its copies may take clean frames of this range: read it until a pass
# misses nothing.
for pass in 1 2 3 4 5; do
	m0=$(status_get sp read_misses)
	dd if="$dev" of=/dev/null bs=64k count=32 skip=1000 iflag=direct status=none
	(($(status_get sp read_misses) == m0)) && break
	((pass < 5)) || fail "the range still not all cached after $pass passes"
	sleep 2
done
hddname=$(basename "$hdd"); ssdname=$(basename "$ssd")
h_rd0=$(awk '{print $1}' /sys/block/$hddname/stat)
s_rd0=$(awk '{print $1}' /sys/block/$ssdname/stat)
hits0=$(status_get sp read_hits)
dd if="$dev" of=/dev/null bs=64k count=32 skip=1000 iflag=direct status=none
h_rd1=$(awk '{print $1}' /sys/block/$hddname/stat)
s_rd1=$(awk '{print $1}' /sys/block/$ssdname/stat)
hits1=$(status_get sp read_hits)
log "reread: hdd reads +$((h_rd1 - h_rd0)), ssd reads +$((s_rd1 - s_rd0)), hits +$((hits1 - hits0))"
assert_ge "$((hits1 - hits0))" 32 "reread counted as hits"
assert_ge "$((s_rd1 - s_rd0))" 32 "reread served by the SSD"
assert_le "$((h_rd1 - h_rd0))" 2 "reread left the HDD alone"

dm_remove sp
log "ok"
