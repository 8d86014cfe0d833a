#!/bin/bash
# The target's table line, messages, status, module refcount and a
# create/remove loop: everything an administrator types.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 64 0 64)
ssd=$(make_ssd ssd 32)
other=$(make_ssd small 1)
hdd2=$(make_hdd hdd2 64 0 64)
ssd2=$(make_ssd ssd2 32)
len=$(sectors "$hdd")

# --- malformed tables: each rejected, with a message, without a splat -------------
bad_tables=(
	"0 $len ssdprio"
	"0 $len ssdprio $hdd"
	"0 $len ssdprio /dev/nonexistent $ssd"
	"0 $len ssdprio $hdd /dev/nonexistent"
	"0 $len ssdprio $hdd $hdd"
	"0 $((len + 8)) ssdprio $hdd $ssd"
	"0 $len ssdprio $hdd $ssd 1"
	"0 $len ssdprio $hdd $ssd 2 block_size"
	"0 $len ssdprio $hdd $ssd 3 block_size 8 set_size"
	"0 $len ssdprio $hdd $ssd 2 no_such_key 1"
	"0 $len ssdprio $hdd $ssd 2 block_size 7"
	"0 $len ssdprio $hdd $ssd 2 block_size 0"
	"0 $len ssdprio $hdd $ssd 2 block_size 4096"
	"0 $len ssdprio $hdd $ssd 2 block_size abc"
	"0 $len ssdprio $hdd $ssd 2 set_size 3"
	"0 $len ssdprio $hdd $ssd 2 set_size 2048"
	"0 $len ssdprio $hdd $ssd 2 write_policy sometimes"
	"0 $len ssdprio $hdd $ssd 2 read_alloc yes"
	"0 $len ssdprio $hdd $ssd 2 evict_inflight 0"
	"0 $len ssdprio $hdd $ssd 2 idle_dispatch_interval -5"
	"0 $len ssdprio $hdd $ssd 2 batch_mode_delay 99999999999"
	"0 $len ssdprio $hdd $ssd 2 fifo_batch 0"
	"0 $len ssdprio $hdd $ssd 2 cache maybe"
	"0 $len ssdprio $hdd $ssd 65 block_size 8"
	"0 $len ssdprio $hdd $ssd 2 block_size 8 extra"
	"0 $len ssdprio $hdd $other 2 set_size 1024"
	"0 $len ssdprio $hdd $ssd x block_size 8"
	"0 $len ssdprio $hdd $ssd 3 format free_floor 1000000"
	# Two caches of one table: on one cache device, over one origin.
	"0 $len ssdprio $hdd $ssd 1 format"$'\n'"$len $len ssdprio $hdd2 $ssd 1 format"
	"0 $len ssdprio $hdd $ssd 1 format"$'\n'"$len $len ssdprio $hdd $ssd2 1 format"
)
i=0
for t in "${bad_tables[@]}"; do
	i=$((i + 1))
	dmesg -C
	# No udev round trip: a rejected table never gets a device for udev to see.
	if out=$(printf '%s\n' "$t" | dmsetup create --noudevsync "bad$i" 2>&1); then
		fail "table accepted: $t"
	fi
	msg=$(dmesg | grep -E 'device-mapper: table: .*ssdprio|ssdprio' || true)
	[[ -n $msg ]] || fail "no kernel message for rejected table: $t ($out)"
	log "rejected: $t -> $(tail -1 <<<"$msg" | sed 's/^\[[^]]*\] //')"
	dmsetup info "bad$i" >/dev/null 2>&1 && dmsetup remove "bad$i"
done
assert_ge "$i" 20 "malformed table count"

# --- table round trip ------------------------------------------------------------
table="0 $len ssdprio $hdd $ssd 9 format write_policy writethrough evict_wait 250 idle_dispatch_interval 50 read_alloc off"
dev=$(dm_create sp "$table")
t1=$(dmsetup table sp)
log "table: $t1"
grep -q "write_policy writethrough" <<<"$t1" || fail "table lost write_policy: $t1"
grep -q "evict_wait 250" <<<"$t1" || fail "table lost evict_wait: $t1"
grep -q "read_alloc off" <<<"$t1" || fail "table lost read_alloc: $t1"

# --- messages ------------------------------------------------------------------
dmsetup message sp 0 idle_dispatch_interval 75 || fail "valid message rejected"
dmsetup table sp | grep -q "idle_dispatch_interval 75" || fail "message did not take effect"
dmsetup message sp 0 write_policy writeback || fail "write_policy message rejected"
dmsetup table sp | grep -q "write_policy" && fail "default write_policy still printed"
for m in "no_such_key 1" "idle_dispatch_interval" "idle_dispatch_interval abc" \
	"idle_dispatch_interval 1 2" "block_size 16" "set_size 128" "read_alloc perhaps" \
	"evict_inflight 0" "write_policy" ""; do
	# shellcheck disable=SC2086
	if dmsetup message sp 0 $m 2>/dev/null; then
		fail "message accepted: '$m'"
	fi
done
dmsetup table sp | grep -q "idle_dispatch_interval 75" || fail "rejected message changed state"
# A free floor of every set would throw all data out: refused, with the reason.
total=$(status_get sp total_sets)
dmesg -C
dmsetup message sp 0 free_floor "$total" 2>/dev/null && fail "free_floor $total of $total sets accepted"
dmesg | grep -q "free_floor must be below" || fail "no reason for the refused free_floor: $(dmesg | tail -2)"
dmsetup table sp | grep -q "free_floor" && fail "refused free_floor changed the table"
dmsetup message sp 0 free_floor $((total - 1)) || fail "free_floor $((total - 1)) of $total refused"
dmsetup message sp 0 free_floor 0 || fail "free_floor 0 (automatic) refused"
# Counters: per CPU, summed by status; reads from every CPU all count, and
# reset_stats starts them again. Bounds, not equalities: udev may probe.
ncpu=$(nproc)
r0=$(status_get sp reads)
for ((c = 0; c < ncpu; c++)); do
	taskset -c "$c" dd if="$dev" of=/dev/null bs=4k count=64 iflag=direct status=none ||
		fail "reads on CPU $c failed"
done
r1=$(status_get sp reads)
assert_ge $((r1 - r0)) $((64 * ncpu)) "reads counted from $ncpu CPUs"
dmsetup message sp 0 reset_stats || fail "reset_stats rejected"
r2=$(status_get sp reads)
((r2 < 64)) || fail "reads still $r2 after reset_stats (were $r1)"
dd if="$dev" of=/dev/null bs=4k count=16 iflag=direct status=none || fail "reads after the reset failed"
assert_ge $(($(status_get sp reads) - r2)) 16 "reads counted after reset_stats"

# --- status keys -----------------------------------------------------------------
st=$(dmsetup status sp)
log "status: $st"
for k in bios_normal bios_idle reads writes flushes discards read_hits read_misses \
	write_hits write_misses bypassed valid_blocks dirty_blocks mapped_sets free_sets \
	evict_state sets_evicted blocks_written_back promotions metadata_bytes evict_why \
	cache_blocks; do
	status_get sp "$k" >/dev/null
done
assert_eq "$(status_get sp evict_why)" not_needed "evict_why of a fresh cache"
assert_eq "$(status_get sp cache_blocks)" "$(($(status_get sp total_sets) * $(status_get sp set_blocks)))" \
	"cache_blocks"

# --- module refcount ---------------------------------------------------------------
rmmod dm_ssdprio 2>/dev/null && fail "module unloaded while a device exists"
dm_remove sp

# dmsetup table names devices major:minor and leaves out "format" (a reload
# must load the cache, never re-initialise it); a device made from that line
# is identical.  (After sp is gone: two live tables must not share a cache.)
dm_create sp2 "$t1" >/dev/null
sp2_tbl=$(dmsetup table sp2)
[[ $(sed 's/^[^ ]* [^ ]* //' <<<"$t1") == $(sed 's/^[^ ]* [^ ]* //' <<<"$sp2_tbl") ]] ||
	fail "round trip differs: '$t1' vs '$sp2_tbl'"
grep -qw format <<<"$t1" && fail "dmsetup table prints format: $t1"
dm_remove sp2

# --- classification: ionice -c3 direct reads are idle, plain ones normal -----------
dev=$(dm_create cl "0 $len ssdprio $hdd $ssd 2 cache off")
dd if="$dev" of=/dev/null bs=4k count=50 iflag=direct status=none
n_normal=$(status_get cl bios_normal)
assert_ge "$n_normal" 50 "plain direct reads counted normal"
assert_eq "$(status_get cl bios_idle)" 0 "no idle bios yet"
ionice -c3 dd if="$dev" of=/dev/null bs=4k count=40 iflag=direct status=none
assert_ge "$(status_get cl bios_idle)" 40 "ionice -c3 reads counted idle"
assert_eq "$(status_get cl bios_normal)" "$n_normal" "idle reads not counted normal"
dm_remove cl

# --- a map too big for RAM: refused, no allocation splat ---------------------------
# 64 GiB of 512-byte blocks, one per set: 134 M cache sets, 8 GB of map
# (null_blk without memory behind it: only its size is read).
_nullb_setup
big=$NULLB_CONFIGFS/bigssd
mkdir "$big" && echo 65536 >"$big/size" && echo 512 >"$big/blocksize" &&
	echo 0 >"$big/memory_backed" && echo 1 >"$big/power" || fail "null_blk bigssd"
for _ in {1..50}; do [[ -b /dev/bigssd ]] && break; sleep 0.1; done
dm_refused big "0 $len ssdprio $hdd /dev/bigssd 5 format block_size 1 set_size 1" \
	"cannot allocate the map of [0-9]+ cache sets"
echo 0 >"$big/power" && rmdir "$big" || fail "removing bigssd"

# --- create/remove loop: nothing leaks ------------------------------------------------
mem_kb() { awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo; }
# Straight dmsetup, no udev round trips. Each cycle costs ~0.6 s of TCG.
cycle() {
	dmsetup create --noudevsync loop --table "0 $len ssdprio $hdd $ssd 1 format" ||
		fail "create in loop failed"
	dmsetup remove --retry --noudevsync loop >/dev/null 2>&1 || _dm_remove loop ||
		fail "remove in loop failed"
}
for n in $(seq 5); do cycle; done
before=$(mem_kb)
for n in $(seq 40); do cycle; done
after=$(mem_kb)
log "slab+vmalloc: before ${before} kB, after ${after} kB"
# One device's map is ~100 kB here; a leak of a map per cycle would show as
# 4 MB, one of a quarter of it as 1 MB.
assert_le "$((after - before))" 1024 "memory growth over 40 create/remove cycles (kB)"
# Zoned devices: a cache rewrites blocks anywhere, which a zone's write
# pointer forbids (dm itself refuses only a host-managed model; 6.1 stacks a
# host-aware disk's up).  null_blk's zoned model is host-managed.
zhdd=$(NULLB_ZONED=1 make_hdd zhdd 64 0 32)
dm_refused spz "0 $(sectors "$zhdd") ssdprio $zhdd $ssd 1 format" "Zoned devices are not supported"
dm_refused spz "0 $len ssdprio $hdd $zhdd 1 format" "Zoned devices are not supported"
remove_nullb zhdd
unload_module
log "ok"
