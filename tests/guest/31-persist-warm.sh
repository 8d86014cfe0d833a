#!/bin/bash
# Warm restart: after dmsetup remove, a table reload, or suspend/resume, the
# cache comes back with the same valid and dirty blocks; reads of cached data
# hit the SSD without touching the origin; flushes and FUA writes commit the
# metadata (batched); a table that names no block_size or set_size loads a
# cache formatted with another set size than the default, with its own; and
# the load time of a 100 GiB cache, measured.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 128 0 32)
ssd=$(make_ssd ssd 40)
len=$(sectors "$hdd")
# seq_cutoff 0: the 8 MiB sequential read below is to be promoted whole (by
# default a stream past 4 MiB is not).
table="0 $len ssdprio $hdd $ssd 6 evict_wait 60000 evict_max_wait 0 seq_cutoff 0"

origin_reads() { awk '{ print $1 }' /sys/block/hdd/stat; }
data() { # data DEV EXTRA-FIO-ARGS: 16 MiB of writes at 4 KiB, then 8 MiB read once
	local dev=$1
	shift
	fio_run --name=w --filename="$dev" --rw=randwrite --bs=4k --direct=1 --size=16M \
		--randrepeat=0 --randseed=21 --verify=crc32c --ioengine=psync "$@" >/dev/null
}

dm_create sp "0 $len ssdprio $hdd $ssd 7 format evict_wait 60000 evict_max_wait 0 seq_cutoff 0" >/dev/null
# The cold range below shares no cache set with the written one (its blocks
# could find their frames dirty) nor with udev's probe of the device's end.
cold=$(range_apart "$ssd" 8 64 0:16 $((len / 2048 - 2)):2)
data /dev/mapper/sp
# a cold range read once is promoted: valid and clean after the copy lands
dd if=/dev/mapper/sp of=/dev/null bs=1M skip="$cold" count=8 iflag=direct status=none
wait_status sp valid_blocks -ge $((4096 + 2048)) 60
valid=$(status_get sp valid_blocks)
dirty=$(status_get sp dirty_blocks)
log "before remove: valid $valid dirty $dirty"
dm_remove sp

# --- remove / create: same state, reads served by the SSD ---------------------------
dm_create sp "$table" >/dev/null
assert_eq "$(status_get sp meta_state)" clean "state after remove + create"
assert_eq "$(status_get sp valid_blocks)" "$valid" "valid blocks after remove + create"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks after remove + create"
_settle # udev's probe of the new device reads (and may miss) its ends
r0=$(origin_reads)
m0=$(status_get sp read_misses)
dd if=/dev/mapper/sp of=/dev/null bs=1M skip="$cold" count=8 iflag=direct status=none
data /dev/mapper/sp --verify_only=1
assert_eq "$(($(status_get sp read_misses) - m0))" 0 "read misses on cached data after restart"
assert_ge "$(status_get sp read_hits)" 100 "read hits after restart"
assert_eq "$(origin_reads)" "$r0" "origin reads while reading cached data"

# --- reload (the new table's ctr runs while the old one is live) ---------------------
dmsetup reload sp --table "$table" || fail "reload"
dmsetup resume sp || fail "resume after reload"
assert_eq "$(status_get sp meta_state)" clean "state after reload"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks after reload"
data /dev/mapper/sp --verify_only=1

# --- suspend / resume keeps the RAM state --------------------------------------------
dmsetup suspend sp && dmsetup resume sp || fail "suspend/resume"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks after suspend/resume"

# --- flushes and FUA writes commit, batched -----------------------------------------
c0=$(status_get sp meta_commits)
w0=$(status_get sp meta_block_writes)
fio_run --name=fs --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
	--offset=32M --size=4M --fsync=16 --ioengine=psync >/dev/null
c1=$(status_get sp meta_commits)
assert_ge "$((c1 - c0))" 60 "about a commit per fsync (1024 writes, fsync every 16)"
assert_le "$((c1 - c0))" 200 "commits are per flush, not per write"
fio_run --name=fua --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
	--offset=40M --size=1M --sync=1 --ioengine=psync >/dev/null
c2=$(status_get sp meta_commits)
assert_ge "$((c2 - c1))" 256 "O_SYNC (FUA) writes commit"
log "commits: $((c1 - c0)) for 64 fsyncs, $((c2 - c1)) for 256 O_SYNC writes; metadata block writes $(($(status_get sp meta_block_writes) - w0))"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 300
dm_remove sp
data "$hdd" --verify_only=1

# --- block_size / set_size a table leaves out are the cache's ---------------------------
# A cache formatted with a set_size other than the default (say, by a table
# written before the default changed) loads from a table that names none.
dd if=/dev/zero of="$ssd" bs=1M count=1 oflag=direct status=none
dm_create sp "0 $len ssdprio $hdd $ssd 5 format set_size 512 evict_wait 60000" >/dev/null
data /dev/mapper/sp
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks in the 2 MiB-set cache"
dm_remove sp
dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" >/dev/null
assert_eq "$(status_get sp set_blocks)" 512 "set_size taken from the superblock"
assert_eq "$(status_get sp meta_state)" clean "loaded warm"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks kept"
dmsetup table sp | grep -qw "set_size 512" || fail "table does not say set_size 512: $(dmsetup table sp)"
data /dev/mapper/sp --verify_only=1
dm_remove sp
dm_create sp "0 $len ssdprio $hdd $ssd 4 block_size 8 evict_wait 60000" >/dev/null
assert_eq "$(status_get sp set_blocks)" 512 "set_size taken from the superblock beside a block_size"
dm_remove sp
dmesg -C
if dm_try_create sp "0 $len ssdprio $hdd $ssd 2 set_size 1024" 2>/dev/null; then
	fail "a table naming another set_size loaded the cache"
fi
dmesg | grep -q "formatted with block_size 8 set_size 512; table has 8 1024" ||
	fail "no geometry message: $(dmesg | grep ssdprio)"
dmsetup info sp >/dev/null 2>&1 && dmsetup remove sp

# --- load time of a 100 GiB cache (sparse file on tmpfs: reads of holes are cheap) -----
mkdir -p /tmp/big
mount -t tmpfs -o size=1G tmpfs /tmp/big
truncate -s 100G /tmp/big/cache.img
big=$(losetup -f --show --direct-io=off /tmp/big/cache.img)
dm_create big "0 $len ssdprio $hdd $big 3 format evict_wait 60000" >/dev/null
data /dev/mapper/big
log "100 GiB cache: $(status_get big total_sets) sets, metadata_bytes $(status_get big metadata_bytes)"
dm_remove big
t0=$(date +%s%N)
dm_create big "0 $len ssdprio $hdd $big 2 evict_wait 60000" >/dev/null
t1=$(date +%s%N)
assert_eq "$(status_get big meta_state)" clean "100 GiB cache reloads"
data /dev/mapper/big --verify_only=1
log "LOAD-TIME 100GiB cache: meta_load_ms $(status_get big meta_load_ms), dmsetup create $(((t1 - t0) / 1000000)) ms"
echo "meta_load_ms $(status_get big meta_load_ms) create_ms $(((t1 - t0) / 1000000))" \
	>"$RESULTS_DIR/load-time-100GiB.txt"
dm_remove big
losetup -d "$big"
umount /tmp/big
log "ok"
