#!/bin/bash
# A failing SSD or origin, switched on at chosen moments with dm-flakey under
# one leg: a clean block whose SSD read fails is read from the origin (no
# error for the user), a dirty one reports the error; a failed SSD write
# never makes older data visible (a 512-byte write into a dirty block, a
# whole-block overwrite); the device degrades and keeps serving; a
# writeback the origin refuses is held aside with backoff, flush_dirty ends
# as "failed" instead of spinning, and finishes once the origin is back;
# the clean blocks a failed origin write bridged (writeback_gap) turn dirty.
# Rewrites beside a writeback that the origin refuses midway go on without an
# error, and neither the failed writes nor the retries after the backoff
# leave a rewritten block clean with older data on the origin.
# A set held aside is retried in the background with its gaps bridged after
# an origin error (one origin write), run by run after an SSD read error (a
# clean block the SSD cannot read does not keep its dirty data from the origin).
# A retry never starts beside a write in flight to its set: it could call a
# block clean that the write changes. A burst of origin writes under pressure
# of which one fails leaves every block it carried dirty.
# reset_stats does not reset the count of SSD read errors that degrades.
# Clean blocks a writeback bridged, failing on the SSD while its origin write
# is out, come back dirty when that write fails. Sets held aside in a dead
# region of the origin do not keep healthy sets from being cleaned.
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-flakey

BLK=4096
# pat CHAR: one 4 KiB block of CHAR.
pat() { head -c "$BLK" </dev/zero | tr '\0' "$1"; }
# put DEV BLOCKNR CHAR [BYTES]: direct write of BYTES (default a block) of
# CHAR at the block's start; returns dd's status.
put() {
	set -o pipefail
	head -c "${4:-$BLK}" </dev/zero | tr '\0' "$3" |
		dd of="$1" bs="${4:-$BLK}" seek="$(($2 * BLK / ${4:-$BLK}))" count=1 \
			oflag=direct conv=notrunc status=none 2>/dev/null
}
# get DEV BLOCKNR: the block's bytes as one line of characters (direct read);
# returns dd's status.
get() {
	local out
	out=$(set -o pipefail
		dd if="$1" bs="$BLK" skip="$2" count=1 iflag=direct status=none 2>/dev/null | tr '\0' '0') ||
		return 1
	printf '%s' "$out"
}
# --- SSD failing under a device with clean and dirty blocks -------------------------
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
len=$(sectors "$hdd")
for b in 10 20 30 40; do put "$hdd" $b A || fail "origin write"; done
leg ssdleg "$ssd" linear
dev=$(dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdleg 5 format evict_wait 600000 seq_cutoff 0")

put "$dev" 10 E || fail "write E"
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 120
put "$dev" 20 F || fail "write F"
assert_eq "$(status_get sp dirty_blocks)" 1 "block 20 dirty"
[[ $(get "$dev" 10) == "$(pat E)" ]] || fail "block 10 before the fault"

leg ssdleg "$ssd" all
got=$(get "$dev" 10) || fail "clean cached block: the SSD read error reached the user"
[[ $got == "$(pat E)" ]] || fail "clean cached block read from the origin: wrong data"
assert_ge "$(status_get sp read_fallbacks)" 1 "read_fallbacks counted"
assert_ge "$(status_get sp ssd_read_errors)" 1 "ssd_read_errors counted"
if get "$dev" 20 >/dev/null; then
	fail "dirty block read while the SSD fails: its only copy cannot be read, yet no error"
fi
log "SSD failing: clean read served from the origin, dirty read reported: $(dmsetup status sp)"

leg ssdleg "$ssd" linear
[[ $(get "$dev" 20) == "$(pat F)" ]] || fail "dirty block after the SSD came back"

# --- SSD write errors never revert acknowledged data --------------------------------
# The read errors above may have passed the degrade threshold (how many reads
# reach a failing block depends on the kernel's page cache retries: 6.12
# makes more), and a degraded cache sends writes of blocks that are not dirty
# around it.  A table reload ends degraded mode; the dirty block stays.
dmsetup suspend sp
dmsetup reload sp --table "0 $len ssdprio $hdd /dev/mapper/ssdleg 4 evict_wait 600000 seq_cutoff 0"
dmsetup resume sp
assert_eq "$(status_get sp cache_mode)" normal "cache_mode after a reload"
assert_eq "$(status_get sp dirty_blocks)" 1 "block 20 still dirty after a reload"
put "$dev" 30 B || fail "write B"
assert_eq "$(status_get sp dirty_blocks)" 2 "blocks 20 and 30 dirty"
leg ssdleg "$ssd" writes
if put "$dev" 30 C 512; then fail "512-byte write into a dirty block succeeded on a failing SSD"; fi
got=$(get "$dev" 30) || fail "read of block 30 after the failed partial write"
[[ ${got:512} == "$(pat B | tail -c +513)" ]] ||
	fail "the untouched 3.5 KiB of a dirty block changed after a failed 512-byte write: ${got:512:16}..."
[[ ${got:0:512} =~ ^(B+|C+)$ ]] || fail "failed 512-byte write left neither old nor new data: ${got:0:16}"
if put "$dev" 30 D; then fail "whole-block overwrite of a dirty block succeeded on a failing SSD"; fi
got=$(get "$dev" 30) || fail "read of block 30 after the failed overwrite"
[[ $got != *A* ]] || fail "a failed overwrite of a dirty block made the origin's older data visible"
assert_ge "$(status_get sp ssd_write_errors)" 2 "ssd_write_errors counted"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode after an SSD write error"

# Degraded: what the SSD does not hold alone goes around it, and works.
put "$dev" 40 G || fail "write around a failing SSD"
[[ $(get "$dev" 40) == "$(pat G)" ]] || fail "block 40 after a write around the cache"
[[ $(get "$dev" 10) == "$(pat E)" ]] || fail "clean block 10 while degraded"
log "after SSD write errors: $(dmsetup status sp)"

# The SSD comes back: the dirty blocks are written back; the origin alone
# holds every acknowledged write.
leg ssdleg "$ssd" linear
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
[[ $(get "$hdd" 10) == "$(pat E)" ]] || fail "origin block 10"
[[ $(get "$hdd" 20) == "$(pat F)" ]] || fail "origin block 20"
got=$(get "$hdd" 30)
[[ $got != *A* && ${got:512} =~ ^(B+|D+)$ ]] || fail "origin block 30: ${got:0:16}...${got:512:16}"
[[ $(get "$hdd" 40) == "$(pat G)" ]] || fail "origin block 40"
dm_remove ssdleg

# --- writeback refused by the origin ------------------------------------------------
hdd2=$(make_hdd hdd2 64 0 32)
ssd2=$(make_ssd ssd2 32)
len=$(sectors "$hdd2")
leg hddleg "$hdd2" linear
dev=$(dm_create sp2 "0 $len ssdprio /dev/mapper/hddleg $ssd2 5 format evict_wait 600000 seq_cutoff 0")
head -c $((4 << 20)) /dev/urandom >/tmp/data
dd if=/tmp/data of="$dev" bs=1M oflag=direct status=none || fail "write 4 MiB"
want=$(sha256sum </tmp/data)
assert_eq "$(status_get sp2 dirty_blocks)" 1024 "4 MiB dirty"

leg hddleg "$hdd2" writes
dmsetup message sp2 0 flush_dirty
wait_status sp2 flush_state == failed 300
assert_ge "$(status_get sp2 failed_sets)" 1 "failed_sets"
assert_ge "$(status_get sp2 writeback_errors)" 1 "writeback_errors"
assert_eq "$(status_get sp2 dirty_blocks)" 1024 "nothing marked clean by a failed writeback"
# Held aside with backoff: a handful of tries in a few seconds, not a loop.
e0=$(status_get sp2 writeback_errors)
sleep 5
e1=$(status_get sp2 writeback_errors)
assert_le "$((e1 - e0))" 40 "writeback retried back to back ($e0 -> $e1 errors in 5 s)"
[[ $(dd if="$dev" bs=1M count=4 iflag=direct status=none | sha256sum) == "$want" ]] ||
	fail "data through the cache while writeback fails"
log "origin refusing writes: $(dmsetup status sp2)"

leg hddleg "$hdd2" linear
dmsetup message sp2 0 flush_dirty
wait_status sp2 dirty_blocks -eq 0 300
wait_status sp2 flush_state == idle 60
assert_eq "$(status_get sp2 failed_sets)" 0 "failed_sets after the origin came back"
dm_remove sp2
[[ $(dd if=/dev/mapper/hddleg bs=1M count=4 iflag=direct status=none | sha256sum) == "$want" ]] ||
	fail "origin alone after the writeback finished"
dm_remove hddleg

# --- a failed origin write that bridged clean blocks: they turn dirty ---------------
hdd3=$(make_hdd hdd3 64 0 32)
ssd3=$(make_ssd ssd3 32)
len=$(sectors "$hdd3")
leg hddleg3 "$hdd3" linear
dev=$(dm_create sp3 "0 $len ssdprio /dev/mapper/hddleg3 $ssd3 9 format evict_wait 600000 seq_cutoff 0 read_alloc off writeback_gap 16")
for b in 0 1 2 3 4; do put "$dev" $b A || fail "write A"; done
dmsetup message sp3 0 flush_dirty
wait_status sp3 dirty_blocks -eq 0 120
for b in 0 4; do put "$dev" $b B || fail "write B"; done
leg hddleg3 "$hdd3" writes
dmsetup message sp3 0 flush_dirty
wait_status sp3 flush_state == failed 300
# The failed write covered blocks 0-4, so the origin may hold anything there:
# the three clean blocks it bridged are dirty now, the cache's copy counts.
assert_eq "$(status_get sp3 dirty_blocks)" 5 "dirty blocks after a failed write that bridged 3 clean ones"
leg hddleg3 "$hdd3" linear
dmsetup message sp3 0 flush_dirty
wait_status sp3 dirty_blocks -eq 0 300
wait_status sp3 flush_state == idle 60
for b in 0 1 2 3 4; do
	want=A
	((b % 4)) || want=B
	[[ $(get /dev/mapper/hddleg3 "$b") == "$(pat $want)" ]] || fail "origin block $b after the bridged writeback"
done
dm_remove sp3
dm_remove hddleg3

# --- rewrites beside a writeback the origin refuses midway ---------------------------
# Origin set 0 cached whole and clean, then every other block rewritten: a
# flush writes it back 64 blocks per origin write (the clean blocks between
# bridged), two idle writes a second (the strict throttle: the rewrites'
# gaps would take the whole writeback at once). Rewrites of dirty and clean
# blocks go on beside it while the origin refuses writes for a few seconds
# and after, while the set held aside is retried. Each rewrite lands on the
# SSD alone: no error reaches the writer; at the end the origin holds the
# newest data.
hdd4=$(make_hdd hdd4 64 0 32)
ssd4=$(make_ssd ssd4 32)
len=$(sectors "$hdd4")
leg hddleg4 "$hdd4" linear
dev=$(dm_create sp4 "0 $len ssdprio /dev/mapper/hddleg4 $ssd4 19 format seq_cutoff 0 read_alloc off dirty_max_age 0 lockout_clean off batch_mode_delay 3600000 evict_wait 600000 dirty_target 100 idle_dispatch_interval 500 idle_budget 0")
bs=$(($(status_get sp4 block_sectors) * 512))
nb=$(status_get sp4 set_blocks)
# rewrite WANT SECONDS STEP: rewrites of blocks 0, STEP, 2*STEP... of origin set
# 0 (random data; with SECONDS > 0 random blocks, 20 a second, for that long);
# WANT holds the set's image before and after.
rewrite() {
	python3 - "$dev" "$bs" "$nb" "$1" "$2" "$3" <<'PY'
import mmap, os, random, sys, time
dev, bs, nb, want, secs, step = sys.argv[1], *map(int, sys.argv[2:4]), sys.argv[4], *map(int, sys.argv[5:7])
img = bytearray(open(want, "rb").read()) if os.path.exists(want) else bytearray(bs * nb)
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
def put(b):
    buf[:] = os.urandom(bs)
    img[b * bs:(b + 1) * bs] = buf[:]
    os.pwrite(fd, buf, b * bs)
if secs:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        put(random.randrange(nb))
        time.sleep(0.05)
else:
    for b in range(0, nb, step):
        put(b)
os.close(fd)
open(want, "wb").write(img)
PY
}
rm -f /tmp/f4.want
rewrite /tmp/f4.want 0 1 || fail "the set written whole"
dmsetup message sp4 0 flush_dirty || fail "flush_dirty"
wait_status sp4 dirty_blocks -eq 0 300
rewrite /tmp/f4.want 0 2 || fail "every other block rewritten"
assert_eq "$(status_get sp4 dirty_blocks)" $((nb / 2)) "dirty blocks before the flush"
d0=$(status_get sp4 idle_dispatched)
dmsetup message sp4 0 flush_dirty || fail "flush_dirty"
wait_status sp4 idle_dispatched -ge $((d0 + 2)) 120
rewrite /tmp/f4.want 15 0 &
writer=$!
sleep 2
leg hddleg4 "$hdd4" writes
sleep 4
leg hddleg4 "$hdd4" linear
wait "$writer" || fail "a rewrite beside the writeback failed while the origin refused writes"
log "after the origin's refusal: $(dmsetup status sp4 | cut -d' ' -f4-60)"
assert_ge "$(status_get sp4 writeback_errors)" 1 "writeback errors while the origin refused writes"
assert_ge "$(status_get sp4 writes_beside_writeback)" 1 "rewrites beside the writeback"
cmp /tmp/f4.want <(dd if="$dev" bs="$bs" count="$nb" iflag=direct status=none) ||
	fail "the set's data through the cache after rewrites beside a failing writeback"
# Unthrottled from here: the rest goes back at once.
dmsetup message sp4 0 batch_mode_delay 0 || fail "batch_mode_delay 0"
dmsetup message sp4 0 flush_dirty || fail "flush_dirty"
wait_status sp4 dirty_blocks -eq 0 300
wait_status sp4 flush_state == idle 60
assert_eq "$(status_get sp4 failed_sets)" 0 "failed_sets after the origin came back"
dm_remove sp4
cmp /tmp/f4.want <(dd if=/dev/mapper/hddleg4 bs="$bs" count="$nb" iflag=direct status=none) ||
	fail "the origin after the flush: a block rewritten beside a failing writeback is stale there"
dm_remove hddleg4

# --- retries: bridged after an origin error, run by run after an SSD read error ---
# Blocks 0-9 cached clean, then the even ones among 0-8 (or 0-4) rewritten:
# dirty runs one clean block apart.
# bridge_setup NAME ORIGIN CACHE LAST: the device NAME over them, blocks 0-9
# written and written back, then B into blocks 0, 2 ... LAST (dirty).
bridge_setup() {
	local b
	dev=$(dm_create "$1" "0 $(sectors "$2") ssdprio $2 $3 9 format evict_wait 600000 seq_cutoff 0 read_alloc off writeback_gap 16")
	for b in $(seq 0 9); do put "$dev" "$b" A || fail "write A"; done
	dmsetup message "$1" 0 flush_dirty
	wait_status "$1" dirty_blocks -eq 0 120
	for b in $(seq 0 2 "$4"); do put "$dev" "$b" B || fail "write B"; done
	assert_eq "$(status_get "$1" dirty_blocks)" $(($4 / 2 + 1)) "dirty blocks before the failing writeback"
}
# origin_blocks_are DEV LAST WHAT: blocks 0-9 of DEV hold B at 0, 2 ... LAST, A elsewhere.
origin_blocks_are() {
	local b want
	for b in $(seq 0 9); do
		want=A
		((b % 2 == 0 && b <= $2)) && want=B
		[[ $(get "$1" "$b") == "$(pat $want)" ]] || fail "origin block $b $3"
	done
}
# An origin that refuses writes: the flush writes run by run (writeback_gap 0)
# and stops at the first, so the clean blocks between the runs stay clean.
# Once the backoff is long, bridging is on again and the origin back: the
# background retry writes the five runs and the four blocks between as one write.
hdd5=$(make_hdd hdd5 64 0 32)
ssd5=$(make_ssd ssd5 32)
leg hddleg5 "$hdd5" linear
bridge_setup sp5 /dev/mapper/hddleg5 "$ssd5" 8
dmsetup message sp5 0 writeback_gap 0
leg hddleg5 "$hdd5" writes
e0=$(status_get sp5 writeback_errors)
dmsetup message sp5 0 flush_dirty
wait_status sp5 flush_state == failed 120
assert_eq "$(status_get sp5 dirty_blocks)" 5 "dirty blocks after a failed writeback of the first run"
# Three retries more (after 1, 2 and 4 s): the next one is 8 s away.
wait_status sp5 writeback_errors -ge $((e0 + 4)) 120
dmsetup message sp5 0 writeback_gap 16
leg hddleg5 "$hdd5" linear
b0=$(status_get sp5 writeback_bridged_blocks)
w0=$(status_get sp5 writeback_writes)
wait_status sp5 dirty_blocks -eq 0 120
assert_eq "$(status_get sp5 failed_sets)" 0 "failed_sets after the retry"
assert_eq "$(($(status_get sp5 writeback_bridged_blocks) - b0))" 4 "clean blocks the retry bridged"
assert_eq "$(($(status_get sp5 writeback_writes) - w0))" 1 "origin writes of the retry"
dm_remove sp5
origin_blocks_are /dev/mapper/hddleg5 8 "after the bridged retry"
dm_remove hddleg5

# A clean block (1) whose frame the SSD cannot read (a dm-error segment
# there): the flush's write of blocks 0-4 bridges it and fails; the retry
# writes blocks 0, 2 and 4 one by one and never reads it.
hdd6=$(make_hdd hdd6 64 0 32)
ssd6=$(make_ssd ssd6 32)
leg ssdleg6 "$ssd6" linear
bridge_setup sp6 "$hdd6" /dev/mapper/ssdleg6 4
data_start=$(cache_data_start "$ssd6")
cset=$("$REPO/build/ssdprio-tool" debug-placement "$ssd6" 0 | cut -d' ' -f2)
# Blocks go to their home frame first: block 1 in frame 1.
bad=$((data_start + cset * $(status_get sp6 set_blocks) * 8 + 8))
n=$(sectors "$ssd6")
leg_load ssdleg6 "$(printf '0 %s linear %s 0\n%s 8 error\n%s %s linear %s %s\n' "$bad" "$ssd6" \
	"$bad" $((bad + 8)) $((n - bad - 8)) "$ssd6" $((bad + 8)))"
w0=$(status_get sp6 writeback_writes)
dmsetup message sp6 0 flush_dirty
# The retry may have written everything back already (after 1 s).
wait_status sp6 flush_state == failed 120
assert_ge "$(status_get sp6 writeback_errors)" 1 "writeback errors: the SSD read of block 1"
wait_status sp6 dirty_blocks -eq 0 120
assert_eq "$(status_get sp6 failed_sets)" 0 "failed_sets after the retry"
assert_eq "$(status_get sp6 writeback_bridged_blocks)" 0 "clean blocks bridged"
assert_eq "$(($(status_get sp6 writeback_writes) - w0))" 3 "origin writes of the retry: one per run"
dm_remove sp6
dm_remove ssdleg6
origin_blocks_are "$hdd6" 4 "after the retry around a bad SSD block"

# --- a retry never starts beside a write in flight --------------------------------
# A set held aside (the origin refused its writeback) with the next retry a
# few seconds away; the origin comes back and a writethrough rewrite of one
# of its dirty blocks reaches the origin at once while its SSD leg is held
# (dm-delay, writes only) past that retry. A retry that started then would
# not know of the write: it would read the older data from the SSD, write it
# over the rewrite's on the origin and call the block clean (a writethrough
# write leaves a block's dirty bit as it was), so the origin would keep the
# older data under a clean block. It must wait for the write and write back
# what it left.
modprobe dm-delay || fail "modprobe dm-delay"
hdd7=$(make_hdd hdd7 64 0 32)
ssd7=$(make_ssd ssd7 32)
leg hddleg7 "$hdd7" linear
leg ssdleg7 "$ssd7" linear
bridge_setup sp7 /dev/mapper/hddleg7 /dev/mapper/ssdleg7 8
leg hddleg7 "$hdd7" writes
e0=$(status_get sp7 writeback_errors)
dmsetup message sp7 0 flush_dirty
wait_status sp7 flush_state == failed 120
# Retries after 1, 2 and 4 s: the next one is 8 s away, then 16 s.
wait_status sp7 writeback_errors -ge $((e0 + 4)) 120
leg hddleg7 "$hdd7" linear
dmsetup message sp7 0 write_policy writethrough || fail "write_policy writethrough"
n7=$(sectors "$ssd7")
# SSD writes held 12 s.
leg_load ssdleg7 "0 $n7 delay $ssd7 0 0 $ssd7 0 12000"
w0=$(status_get sp7 writeback_writes)
put "$dev" 0 C &
writer=$!
sleep 1
kill -0 "$writer" 2>/dev/null || fail "the rewrite was not held: the test proves nothing"
wait "$writer" || fail "the writethrough rewrite of block 0 beside the set held aside"
log "rewrite done: $(status_get sp7 dirty_blocks) dirty, $(($(status_get sp7 writeback_writes) - w0)) origin writes since"
leg ssdleg7 "$ssd7" linear
wait_status sp7 dirty_blocks -eq 0 120
assert_eq "$(status_get sp7 failed_sets)" 0 "failed_sets after the retry"
[[ $(get "$dev" 0) == "$(pat C)" ]] || fail "block 0 through the cache after the retry"
dm_remove sp7
[[ $(get /dev/mapper/hddleg7 0) == "$(pat C)" ]] ||
	fail "origin block 0: a retry beside the rewrite in flight left it stale"
for b in 2 4 6 8; do
	[[ $(get /dev/mapper/hddleg7 "$b") == "$(pat B)" ]] || fail "origin block $b after the retry"
done
dm_remove ssdleg7
dm_remove hddleg7

# --- a burst whose origin writes partly fail ---------------------------------------
# A random 60% of the cache's worth of origin blocks written (dirty,
# scattered runs), then one written block of every MiB made a hole that
# fails writes (dm-flakey, reads pass). A reader keeps the origin busy and
# random writes elsewhere need room: eviction writes back under pressure, each
# set's scattered runs as a burst of origin writes, and a burst over a hole
# has writes that land and one that fails. Nothing of such a burst may be
# called clean: every block reads back as written while the holes fail, and
# once the origin heals a flush leaves on it exactly what was written.
hdd8=$(make_hdd hdd8 256 1000000 8)
ssd8=$(make_ssd ssd8 32)
n8=$(sectors "$hdd8")
leg hddleg8 "$hdd8" linear
dev=$(dm_create sp8 "0 $n8 ssdprio /dev/mapper/hddleg8 $ssd8 17 format seq_cutoff 0 read_alloc off evict_wait 3600000 evict_max_wait 1000 dirty_target 100 dirty_max_age 0 writeback_gap 0 lockout_clean off")
bs=$(($(status_get sp8 block_sectors) * 512))
na=$(status_get sp8 cache_blocks)
# Writes the blocks, their image to /tmp/a8.want, and the origin's table
# with the holes to /tmp/leg8.
python3 - "$dev" "$bs" "$na" /tmp/a8.want "$hdd8" "$n8" <<'PY' >/tmp/leg8 || fail "the scattered blocks written"
import mmap, os, random, sys
dev, bs, n, want, hdd, sectors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
img = bytearray(bs * n)
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
blocks = random.sample(range(n), n * 6 // 10)
for b in blocks:
    buf[:] = os.urandom(bs)
    img[b * bs:(b + 1) * bs] = buf[:]
    os.pwrite(fd, buf, b * bs)
os.close(fd)
open(want, "wb").write(img)
written = set(blocks)
per_mib = (1 << 20) // bs
spb = bs // 512
at = 0
for m in range(0, n - per_mib + 1, per_mib):
    hole = next((b for b in range(m + per_mib // 2, m + per_mib) if b in written), None)
    if hole is None:
        continue
    s = hole * spb
    if s > at:
        print(f"{at} {s - at} linear {hdd} {at}")
    print(f"{s} {spb} flakey {hdd} {s} 0 1 1 error_writes")
    at = s + spb
print(f"{at} {sectors - at} linear {hdd} {at}")
PY
leg_load hddleg8 "$(cat /tmp/leg8)"
log "$(grep -c flakey /tmp/leg8) holes"
writes_under_load "$dev" 128M $((na * bs >> 20))M 192M 64M "writes beside the failing bursts"
log "after the failing bursts: $(dmsetup status sp8)"
# Errors only from bursts: no quiet window, no lock-out runs, no cleaning.
assert_ge "$(status_get sp8 pressure_writebacks)" 1 "writebacks under pressure"
assert_eq "$(status_get sp8 lockout_writebacks)" 0 "lock-out writebacks"
assert_ge "$(status_get sp8 pressure_burst)" 1 "origin writes that went in a burst"
assert_ge "$(status_get sp8 writeback_errors)" 1 "writeback errors on the holes"
cmp /tmp/a8.want <(dd if="$dev" bs="$bs" count="$na" iflag=direct status=none) ||
	fail "the scattered blocks through the cache while bursts fail"
leg hddleg8 "$hdd8" linear
dmsetup message sp8 0 flush_dirty
wait_status sp8 dirty_blocks -eq 0 600
wait_status sp8 flush_state == idle 60
assert_eq "$(status_get sp8 failed_sets)" 0 "failed_sets after the origin healed"
cmp <(dd if="$dev" bs=1M skip=128 count=$((na * bs >> 20)) iflag=direct status=none) \
	<(dd if="$hdd8" bs=1M skip=128 count=$((na * bs >> 20)) iflag=direct status=none) ||
	fail "the writes beside the bursts: origin and device after the flush"
dm_remove sp8
cmp /tmp/a8.want <(dd if="$hdd8" bs="$bs" count="$na" iflag=direct status=none) ||
	fail "the scattered blocks on the origin after the flush: a block of a failed burst was called clean"
dm_remove hddleg8
# --- reset_stats does not reset the SSD's read-error count ---------------------------
# The 8th SSD read error degrades the cache; a monitor zeroing the counters
# shown in status must not keep a failing SSD in use.  Clean cached blocks,
# each read once with the SSD failing: one fallback, one error each.
hdd9=$(make_hdd hdd9 64 0 32)
ssd9=$(make_ssd ssd9 32)
leg ssdleg9 "$ssd9" linear
dev=$(dm_create sp9 "0 $(sectors "$hdd9") ssdprio $hdd9 /dev/mapper/ssdleg9 5 format evict_wait 600000 seq_cutoff 0")
for b in $(seq 0 4 60); do put "$dev" "$b" R || fail "write block $b"; done
dmsetup message sp9 0 flush_dirty
wait_status sp9 dirty_blocks -eq 0 120
leg ssdleg9 "$ssd9" all
b=0 before=0
while ((before < 4)); do
	[[ $(get "$dev" $b) == "$(pat R)" ]] || fail "clean block $b with the SSD failing"
	before=$(status_get sp9 ssd_read_errors)
	b=$((b + 4))
done
assert_eq "$(status_get sp9 cache_mode)" normal "cache_mode after $before read errors"
dmsetup message sp9 0 reset_stats || fail "reset_stats"
assert_eq "$(status_get sp9 ssd_read_errors)" 0 "ssd_read_errors shown after reset_stats"
while (($(status_get sp9 ssd_read_errors) + before < 8)); do
	((b <= 60)) || fail "out of clean blocks to read"
	[[ $(get "$dev" $b) == "$(pat R)" ]] || fail "clean block $b with the SSD failing"
	b=$((b + 4))
done
assert_eq "$(status_get sp9 cache_mode)" degraded \
	"cache_mode after $before read errors, reset_stats, then $(status_get sp9 ssd_read_errors) more"
leg ssdleg9 "$ssd9" linear
dm_remove sp9
dm_remove ssdleg9
# --- clean blocks a writeback bridged, failing on the SSD while its origin write is out --
# The writeback of blocks 0-4 bridges clean blocks 1 and 3 and has read them;
# its origin write waits in dm-delay.  Meanwhile a read of block 1 and a
# 512-byte write into block 3 fail on the SSD (error segments under their
# frames): the read is served from the origin, the write reports its error.
# Then the origin write is let go into a failing origin: the origin may hold anything in blocks 0-4,
# so 1 and 3 must come back dirty with the cache's copy, not be dropped.
hdd10=$(make_hdd hdd10 64 0 32)
ssd10=$(make_ssd ssd10 32)
leg olow10 "$hdd10" linear
leg hddleg10 /dev/mapper/olow10 linear
leg ssdleg10 "$ssd10" linear
bridge_setup sp10 /dev/mapper/hddleg10 /dev/mapper/ssdleg10 4
modprobe dm-delay || fail "modprobe dm-delay"
n=$(sectors /dev/mapper/olow10)
# Writes held until the table is swapped (dm-delay sends what it holds then).
leg_load hddleg10 "0 $n delay /dev/mapper/olow10 0 0 /dev/mapper/olow10 0 600000"
# Writes dm-delay holds now (its status: reads, writes, flushes held).
inflight_writes() { dmsetup status hddleg10 | awk '{ print $5 }'; }
f0=$(status_get sp10 read_fallbacks)
dmsetup message sp10 0 flush_dirty
for _ in $(seq 600); do
	(($(inflight_writes) >= 1)) && break
	sleep 0.1
done
(($(inflight_writes) >= 1)) || fail "the writeback's origin write never went out"
data_start=$(cache_data_start "$ssd10")
cset=$("$REPO/build/ssdprio-tool" debug-placement "$ssd10" 0 | cut -d' ' -f2)
# Blocks go to their home frame first: block B in frame B.
f1=$((data_start + cset * $(status_get sp10 set_blocks) * 8 + 8))
f3=$((f1 + 16))
m=$(sectors "$ssd10")
leg_load ssdleg10 "$(printf '0 %s linear %s 0\n%s 8 error\n%s 8 linear %s %s\n%s 8 error\n%s %s linear %s %s\n' \
	"$f1" "$ssd10" "$f1" $((f1 + 8)) "$ssd10" $((f1 + 8)) "$f3" \
	$((f3 + 8)) $((m - f3 - 8)) "$ssd10" $((f3 + 8)))"
[[ $(get "$dev" 1) == "$(pat A)" ]] || fail "clean block 1 with its SSD frame failing"
assert_eq "$(status_get sp10 read_fallbacks)" $((f0 + 1)) "read_fallbacks: block 1 from the origin"
put "$dev" 3 W 512 &
w3=$!
leg olow10 "$hdd10" all
leg_load hddleg10 "0 $n linear /dev/mapper/olow10 0"
wait_status sp10 flush_state == failed 300
wait "$w3" && log "the 512-byte write into block 3 succeeded (it waited for the writeback)"
assert_eq "$(status_get sp10 dirty_blocks)" 5 "dirty blocks after the failed write that bridged 1 and 3"
# What a failed write may leave on the origin: anything.  Written while the
# origin leg still fails, so that no retry can write back before it.
for b in 0 1 2 3 4; do put "$hdd10" $b J || fail "junk on the origin"; done
leg ssdleg10 "$ssd10" linear
leg olow10 "$hdd10" linear
dmsetup message sp10 0 flush_dirty
wait_status sp10 dirty_blocks -eq 0 300
for b in 0 1 2 4; do
	want=A
	((b % 2)) || want=B
	[[ $(get "$dev" $b) == "$(pat $want)" ]] || fail "block $b after the failed bridged writeback"
	[[ $(get /dev/mapper/hddleg10 $b) == "$(pat $want)" ]] || fail "origin block $b after the retry"
done
# Block 3: its first 512 bytes are the failed write's (undefined), the rest A.
[[ $(get "$dev" 3 | cut -c513-) == "$(pat A | cut -c513-)" ]] ||
	fail "block 3 beyond the failed 512-byte write after the failed bridged writeback"
dm_remove sp10
dm_remove ssdleg10
dm_remove hddleg10
dm_remove olow10
# --- a dead region of the origin does not stop cleaning elsewhere ---------------------
# Sets whose writeback fails are held aside, retried with backoff; eviction and
# cleaning look at the oldest dirty sets only.  Dirty sets in a region whose
# writes fail (more than that look covers) must not hide the healthy ones
# written later: those are cleaned as usual (dirty_max_age 1, evict_wait 100).
hdd11=$(make_hdd hdd11 64 0 32)
ssd11=$(make_ssd ssd11 32)
n11=$(sectors "$hdd11")
# Writes to the first 8 MiB fail; reads and the rest pass.
leg_load hddleg11 "$(printf '0 16384 flakey %s 0 0 1 1 error_writes\n16384 %s linear %s 16384\n' \
	"$hdd11" $((n11 - 16384)) "$hdd11")"
dev=$(dm_create sp11 "0 $n11 ssdprio /dev/mapper/hddleg11 $ssd11 13 format set_size 16 evict_wait 100 dirty_target 0 dirty_max_age 1 seq_cutoff 0 read_alloc off")
# put_every DEV FIRST N CHAR: block FIRST + 16 i of CHAR, for i < N: one
# block in each of N sets (64 KiB each), one process.
put_every() {
	python3 - "$@" <<'PY' || fail "put_every $*"
import mmap, os, sys
dev, first, n, ch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
buf = mmap.mmap(-1, 4096)
buf[:] = ch.encode() * 4096
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
for i in range(n):
    if os.pwrite(fd, buf, (first + 16 * i) * 4096) != 4096:
        raise SystemExit("short write")
os.close(fd)
PY
}
put_every "$dev" 0 96 D
wait_status sp11 failed_sets -ge 90 300
# Healthy sets written after them: cleaned all the same.
put_every "$dev" 4096 10 H
wait_status sp11 dirty_blocks -le 96 300
assert_eq "$(status_get sp11 dirty_blocks)" 96 "dirty blocks: the dead region's only"
for i in $(seq 0 9); do
	[[ $(get /dev/mapper/hddleg11 $((4096 + i * 16))) == "$(pat H)" ]] ||
		fail "healthy block $i not written back"
done
leg_load hddleg11 "0 $n11 linear $hdd11 0"
dmsetup message sp11 0 flush_dirty
wait_status sp11 dirty_blocks -eq 0 300
[[ $(get "$hdd11" $((95 * 16))) == "$(pat D)" ]] || fail "dead region block after the origin came back"
dm_remove sp11
dm_remove hddleg11
log "ok"
