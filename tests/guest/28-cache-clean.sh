#!/bin/bash
# Cleaning and eviction that do not seize up.
# - Dirty data over dirty_target is written back in quiet windows, oldest
#   first, until it is under the target, then sets more than half dirty
#   (crowded); the blocks stay cached, clean.
#   Never while I/O keeps coming.
# - Dirty data older than dirty_max_age is written back the same way.
# - Once quiet for clean_all_wait, all dirty data is written back, not only
#   what is over the target; not in a shorter quiet window.
# - With a dirty set and no quiet window, new data takes the frames of
#   clean blocks in place: the cache keeps admitting it, no writeback.
# - With every set dirty and I/O that never stops, eviction still writes
#   back, one set at a time in the scheduler's guaranteed share. Under a load
#   that has not paused for evict_max_wait, at once when room runs short,
#   and in the gaps a scattered reader leaves on the origin.
# - A dirty block that keeps another origin set's block out of its frame
#   is written back at once, without a quiet window (lock-out cleaning),
#   and the block it kept out is cached next time; not with lockout_clean off.
# - A write to a set whose cleaning writeback is under way that cannot go on
#   beside it (writethrough) waits for one run, not the whole set: the
#   writeback yields, marks clean only what it wrote, and the rest is
#   written back later; nothing is lost.
# - Beside a writeback that does not yield (a flush's), rewrites of cached
#   blocks go on at once; a rewritten block is never marked clean on the
#   strength of the older data the writeback copied; nor are writes of
#   uncached blocks that free frames take. Bursts of verified
#   random writes with quiet gaps meet cleanings under way, round after round.
# - Writes in flight together in one set (new blocks, rewrites of cached
#   ones) leave it open: a third takes another origin set's clean frames.
# - A write that waited for a writeback of its set is cached even where its
#   frames do not follow each other (one SSD write per run of frames); no
#   run takes the frame of a block an earlier run of it holds.
# - While a writeback bridges a gap of clean blocks (reading them from the
#   SSD), no other origin set's new block takes one of their frames.
# - Writeback coalesces: dirty runs up to writeback_gap clean blocks apart go
#   to the origin as one write (the clean blocks rewritten), not with gaps
#   over it; a run across two origin sets goes out as one write; what the
#   device and the origin hold is what was written.
# - Under pressure, scattered dirty runs go out as bursts of origin writes
#   a short skip apart; every block reads back as written.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 384 1000000 8)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
st() { status_get sp "$1"; }
# written_back_equal MESSAGE MIB WHAT: after MESSAGE (flush_dirty, drain) has
# written everything back, the origin's first MIB MiB are the device's.
written_back_equal() {
	dmsetup message sp 0 "$1" || fail "$1"
	wait_status sp dirty_blocks -eq 0 300
	cmp <(dd if="$dm" bs=1M count="$2" iflag=direct status=none) \
		<(dd if="$hdd" bs=1M count="$2" iflag=direct status=none) ||
		fail "the origin differs from the device after $3"
}
# scattered_writes WANT: random data into every other block of origin set 0
# ($bs-byte blocks, $nb of them), one write each; WANT gets the set's image.
scattered_writes() {
	python3 - "$dm" "$bs" "$nb" "$1" <<'PY' || fail "scattered writes"
import mmap, os, sys
dev, bs, nb, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
img = bytearray(bs * nb)
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
for b in range(0, nb, 2):
    buf[:] = os.urandom(bs)
    img[b * bs:(b + 1) * bs] = buf[:]
    os.pwrite(fd, buf, b * bs)
os.close(fd)
open(want, "wb").write(img)
PY
}
# scattered_set "EVICT_WAIT DIRTY_TARGET IDLE_INTERVAL" WANT: a fresh cache over an
# origin whose set 0 is zeroes (the sections before left data there), every other
# block of origin set 0 written (scattered_writes), all of them dirty. The
# strict throttle (idle_budget 0) paces its writebacks: the writes the
# sections make beside them leave gaps that would take a writeback at once.
scattered_set() {
	"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
	dd if=/dev/zero of="$hdd" bs=1M count=16 oflag=direct status=none ||
		fail "zero the origin"
	dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 19 format seq_cutoff 0 read_alloc off dirty_max_age 0 lockout_clean off batch_mode_delay 3600000 idle_budget 0 $1")
	bs=$(($(st block_sectors) * 512))
	nb=$(st set_blocks)
	scattered_writes "$2"
	assert_eq "$(st dirty_blocks)" $((nb / 2)) "dirty blocks after the scattered writes"
}
set_image_is() { # WANT DEV WHAT: DEV's origin set 0 ($nb blocks of $bs) is WANT
	cmp "$1" <(dd if="$2" bs="$bs" count="$nb" iflag=direct status=none) || fail "$3"
}
origin_has() { # FILE MIB_OFFSET: the origin alone holds FILE there
	cmp -s "$1" <(dd if="$hdd" bs=1M skip="$2" count=$(($(stat -c %s "$1") >> 20)) \
		iflag=direct status=none)
}

# --- over the target: cleaned in a quiet window, oldest first -----------------------
# 17 MiB: four whole 4 MiB sets, then a quarter of a fifth, the newest. Oldest
# first, cleaning stops at the target (10%, 1.5 sets) with the fourth set
# dirty and whole, which it then writes back as crowded (more than half its
# frames dirty); the fifth, a quarter dirty, stays. Lock-out cleaning off: two
# of the sets written may share a cache set. free_floor 1: 17 MiB dirty is past
# eviction's automatic floor (twice the target), and eviction, which would
# write back first, is not what is tested.
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 15 format seq_cutoff 0 read_alloc off evict_wait 1000 dirty_target 10 dirty_max_age 0 lockout_clean off free_floor 1")
total=$(($(st total_sets) * $(st set_blocks)))
target=$((total / 10))
NMIB=17
for i in $(seq 0 $((NMIB - 1))); do head -c 1M /dev/urandom >"/tmp/clean.$i"; done
# A reader keeps I/O coming: the writes and a while after them are never quiet.
fio --name=busy --filename="$dm" --rw=randread --bs=4k --direct=1 --ioengine=psync \
	--offset=256M --size=128M --runtime=300 --time_based --randrepeat=0 >/dev/null &
reader=$!
trap 'kill $reader 2>/dev/null; wait' EXIT
wait_status sp bios_normal -ge 100 120
cat $(for i in $(seq 0 $((NMIB - 1))); do echo "/tmp/clean.$i"; done) |
	dd of="$dm" bs=1M iflag=fullblock oflag=direct status=none || fail "write $NMIB MiB"
d0=$(st dirty_blocks)
v0=$(st valid_blocks)
assert_ge "$d0" $((target + 1)) "dirty over the target after the writes"
sleep 3
kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the test proved nothing"
assert_eq "$(st blocks_written_back)" 0 "blocks written back while the reader ran"
assert_eq "$(st sets_cleaned)" 0 "sets cleaned while the reader ran"
kill "$reader"
wait "$reader" 2>/dev/null
trap - EXIT

wait_status sp dirty_blocks -le "$target" 120
wait_status sp dirty_blocks -le 256 120
wait_status sp writeback_sets -eq 0 120
d1=$(st dirty_blocks)
assert_eq "$d1" 256 "cleaning stops at the target and the crowded set, it is not a flush (the newest quarter set stays)"
assert_ge "$(st sets_cleaned)" 1 "sets_cleaned"
assert_eq "$(st valid_blocks)" "$v0" "cleaned blocks stay cached"
origin_has /tmp/clean.0 0 || fail "the oldest MiB was not the first cleaned"
origin_has /tmp/clean.$((NMIB - 1)) $((NMIB - 1)) && fail "the newest MiB was cleaned before older ones"
origin_has /tmp/clean.$((NMIB - 2)) $((NMIB - 2)) || fail "the crowded set's last MiB was not cleaned"
log "cleaned from $d0 to $d1 dirty blocks (target $target): $(dmsetup status sp)"

# --- a long quiet window: the rest too (clean_all_wait) -----------------------------
# Not in a short one; then, once quiet that long, what is under the target goes
# as well, and stays cached. The newest MiB is written again (the same data) for
# the next section.
dmsetup message sp 0 clean_all_wait 20000 || fail "clean_all_wait 20000"
sleep 3
assert_eq "$(st dirty_blocks)" 256 "dirty blocks after a quiet window shorter than clean_all_wait"
dmsetup message sp 0 clean_all_wait 1500 || fail "clean_all_wait 1500"
wait_status sp dirty_blocks -eq 0 120
wait_status sp writeback_sets -eq 0 60
assert_eq "$(st valid_blocks)" "$v0" "blocks cleaned in a long quiet window stay cached"
origin_has /tmp/clean.$((NMIB - 1)) $((NMIB - 1)) || fail "the newest MiB was not cleaned in a long quiet window"
dmsetup message sp 0 clean_all_wait 0 || fail "clean_all_wait 0"
dd if=/tmp/clean.$((NMIB - 1)) of="$dm" bs=1M seek=$((NMIB - 1)) oflag=direct status=none ||
	fail "rewrite the newest MiB"
assert_eq "$(st dirty_blocks)" 256 "dirty blocks after the rewrite"
log "a long quiet window cleaned what was under the target"

# --- too old: cleaned though under the target --------------------------------------
dmsetup message sp 0 dirty_target 100 || fail "dirty_target 100"
dmsetup message sp 0 dirty_max_age 2 || fail "dirty_max_age 2"
wait_status sp dirty_blocks -eq 0 120
assert_eq "$(st oldest_dirty_s)" 0 "oldest_dirty_s with nothing dirty"
for i in $(seq 0 $((NMIB - 1))); do origin_has "/tmp/clean.$i" "$i" || fail "origin MiB $i"; done
cat $(for i in $(seq 0 $((NMIB - 1))); do echo "/tmp/clean.$i"; done) |
	cmp - <(dd if="$dm" bs=1M count=$NMIB iflag=direct status=none) || fail "data through the cache"
dm_remove sp
log "aged dirty data cleaned"

# --- a dirty block locks another set's block out: written back at once -------------
# A block b has two candidate frames in its cache set, b and b ^ x, x by its origin
# set (ssdp_alt_xor(), frame_map.h): it is locked out only when both hold dirty
# blocks of other origin sets. Four origin sets of one cache set with one x: 2 MiB
# sets (7 choices of x), so that an origin of 384 MiB has such four.
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 11 format set_size 512 seq_cutoff 0 evict_wait 3600000 dirty_target 100 dirty_max_age 0")
set_mib=$(($(st set_blocks) * $(st block_sectors) / 2048))
# Origin sets that share a cache set and an alt xor (the hashes, ssdprio_format.h);
# half: that xor in 64 KiB (the offset of every block's second frame).
read -r a b c d half < <(python3 - "$(dirname "$0")" "$(st total_sets)" \
	$((len / (set_mib * 2048))) "$(st set_blocks)" <<'PY'
import collections, sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import alt_xor, oset_cset
n, osets, nb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
groups = collections.defaultdict(list)
# Away from the device's first and last MiBs, which udev's probes read.
for o in range(2, osets - 8):
    groups[oset_cset(o, n), alt_xor(o, nb, 4)].append(o)
for (_, x), same in sorted(groups.items()):
    if len(same) >= 4 and x >= 32:
        print(*same[:4], x // 16)
        break
PY
)
[[ -n $half ]] || fail "no four origin sets share a cache set and an alt frame"
log "origin sets $a, $b, $c and $d share a cache set of $set_mib MiB, alt frames $((half * 16)) blocks away"
head -c 64K /dev/urandom >/tmp/lock.a
head -c 64K /dev/urandom >/tmp/lock.c
# a's first 16 blocks in frames 0-15, c's 16 blocks from x in their home frames,
# x to x + 15: the two candidates of blocks 0-15 of a, b, c and d.
# udev's probes after each write read the device: let them end first, or
# their reads in flight keep the set's clean frames (promoted by earlier
# probes) from changing hands.
dd if=/tmp/lock.a of="$dm" bs=64k seek=$((a * set_mib * 16)) oflag=direct status=none || fail "write a"
_settle
dd if=/tmp/lock.c of="$dm" bs=64k seek=$((c * set_mib * 16 + half)) oflag=direct status=none ||
	fail "write c"
_settle
assert_eq "$(st dirty_blocks)" 32 "sets a's and c's dirty blocks"
rd() { dd if="$dm" of=/dev/null bs=64k skip=$(($1 * set_mib * 16)) count=1 iflag=direct status=none ||
	fail "read set $1"; }
rd "$b"
assert_ge "$(st lockouts)" 1 "the read of set b was locked out"
# The run in the refusing frame (the home one, a's) is written back, only it.
wait_status sp blocks_written_back -eq 16 120
wait_status sp writeback_sets -eq 0 60
assert_eq "$(st lockout_writebacks)" 1 "lock-out writebacks"
assert_eq "$(st dirty_blocks)" 16 "dirty blocks after the lock-out writeback (c's)"
assert_eq "$(st sets_cleaned)" 0 "sets cleaned (no quiet window, under the target)"
assert_eq "$(st pressure_writebacks)" 0 "pressure writebacks"
cmp /tmp/lock.a <(dd if="$hdd" bs=64k skip=$((a * set_mib * 16)) count=1 iflag=direct status=none) ||
	fail "set a's data is not on the origin"
origin_has_64k() { cmp "$1" <(dd if="$hdd" bs=64k skip="$2" count=1 iflag=direct status=none) 2>/dev/null; }
origin_has_64k /tmp/lock.c $((c * set_mib * 16 + half)) && fail "set c's dirty blocks reached the origin"
h0=$(st read_hits)
rd "$b"   # promoted now, over a's clean blocks
wait_status sp promotions -ge 1 60
rd "$b"
assert_ge "$(st read_hits)" $((h0 + 1)) "set b's block cached after the lock-out writeback"
cmp /tmp/lock.a <(dd if="$dm" bs=64k skip=$((a * set_mib * 16)) count=1 iflag=direct status=none) ||
	fail "set a's data through the cache"
cmp /tmp/lock.c <(dd if="$dm" bs=64k skip=$((c * set_mib * 16 + half)) count=1 iflag=direct status=none) ||
	fail "set c's data through the cache"
# Off: the lock-out is counted, nothing is written back.  d's blocks take b's
# clean frames; then both candidates of a's blocks are dirty again.
dmsetup message sp 0 lockout_clean off || fail "lockout_clean off"
dd if=/tmp/lock.a of="$dm" bs=64k seek=$((d * set_mib * 16)) oflag=direct status=none || fail "write d"
_settle
assert_eq "$(st dirty_blocks)" 32 "sets c's and d's dirty blocks"
l0=$(st lockouts)
rd "$a"
assert_ge "$(st lockouts)" $((l0 + 1)) "the read of set a was locked out"
sleep 2
assert_eq "$(st lockout_writebacks)" 1 "lock-out writebacks with lockout_clean off"
assert_eq "$(st dirty_blocks)" 32 "sets c and d stay dirty with lockout_clean off"
dm_remove sp
log "lock-out cleaning"

# --- writes in flight together in one set take other origin sets' clean frames ----
# A whole-block write does not close its set to other writes (it turns its own
# clean blocks into claims instead): the second of two 64 KiB writes in flight
# (an SSD of 20 ms, so the first surely is) takes b's clean frames; with the set
# closed under every write it went to the origin. First, a write cut where its
# frames stop following: a's block 4 sits in its second frame (x + 4: b's
# dirty block holds frame 4), so a write of a's blocks 0-15 is cut after block 3
# and again after 4, the rest placed from x + 5 on.
slow=$(make_ssd ssdslow 64 20000000)
dm=$(dm_create sp "0 $len ssdprio $hdd $slow 11 format set_size 512 seq_cutoff 0 evict_wait 3600000 dirty_target 100 dirty_max_age 0")
for off in 0 2 "$half" $((half + 2)); do
	p0=$(st promotions)
	dd if="$dm" of=/dev/null bs=64k skip=$((b * set_mib * 16 + off)) count=1 iflag=direct \
		status=none || fail "read set b"
	wait_status sp promotions -ge $((p0 + 1)) 60
done
head -c 4K /dev/urandom >/tmp/cut.b4
dd if=/tmp/cut.b4 of="$dm" bs=4k seek=$((b * set_mib * 256 + 4)) oflag=direct status=none ||
	fail "write b's block 4"
_settle
p0=$(st promotions)
dd if="$dm" of=/dev/null bs=4k skip=$((a * set_mib * 256 + 4)) count=1 iflag=direct status=none ||
	fail "read a's block 4"
wait_status sp promotions -ge $((p0 + 1)) 60
assert_eq "$(st dirty_blocks)" 1 "b's dirty block 4"
by0=$(st bypassed)
dd if=/tmp/lock.c of="$dm" bs=64k seek=$((a * set_mib * 16)) oflag=direct status=none || fail "write a"
_settle
log "after the cut write: $(dmsetup status sp | cut -d' ' -f4-40)"
assert_eq "$(st bypassed)" "$by0" "bios bypassed by the cut write"
assert_eq "$(st dirty_blocks)" 17 "dirty blocks after the cut write (a's 16, b's 1)"
cmp /tmp/lock.c <(dd if="$dm" bs=64k skip=$((a * set_mib * 16)) count=1 iflag=direct status=none) ||
	fail "a's data through the cache"
cmp /tmp/cut.b4 <(dd if="$dm" bs=4k skip=$((b * set_mib * 256 + 4)) count=1 iflag=direct status=none) ||
	fail "b's block 4 through the cache"
# in_flight NAME DEPTH UNITS DIRTY: UNITS 64 KiB writes from a's blocks 16 on,
# DEPTH of them in flight together: none bypassed, DIRTY dirty blocks after
# them, and once written back the origin holds what the device showed.
in_flight() {
	local name=$1 units=$3 by0
	by0=$(st bypassed)
	fio --name="$name" --filename="$dm" --rw=write --bs=64k --direct=1 --ioengine=libaio \
		--iodepth="$2" --offset=$(((a * set_mib * 16 + 1) * 65536)) --size=$((units * 64))k \
		--verify=crc32c --output=/tmp/cut.fio >/dev/null || fail "fio: $name"
	_settle
	log "after $name: $(dmsetup status sp | cut -d' ' -f4-40)"
	assert_eq "$(st bypassed)" "$by0" "bios bypassed by $name"
	assert_eq "$(st dirty_blocks)" "$4" "dirty blocks after $name"
	dd if="$dm" of="/tmp/cut.$name" bs=64k skip=$((a * set_mib * 16 + 1)) count="$units" \
		iflag=direct status=none || fail "read the blocks of $name"
	dmsetup message sp 0 flush_dirty || fail "flush_dirty"
	wait_status sp dirty_blocks -eq 0 120
	cmp "/tmp/cut.$name" <(dd if="$hdd" bs=64k skip=$((a * set_mib * 16 + 1)) count="$units" \
		iflag=direct status=none) || fail "the data of $name on the origin"
}
# a's blocks 16-31 into free frames, 32-47 over b's clean ones, in flight together.
in_flight two-writes 2 2 49
origin_has_64k /tmp/lock.c $((a * set_mib * 16)) || fail "a's data on the origin"
# A rewrite of blocks the set holds, beside another write in flight, leaves the
# set open too: nobody else writes those frames. Three 64 KiB writes in flight:
# a's blocks 16-31 and 32-47 (cached, clean), then 48-63, both of whose frames
# (48-63 and x + 48-63) hold b's clean blocks, read first. With the set
# closed by the second write, the third went to the origin.
for off in 3 $((half + 3)); do
	p0=$(st promotions)
	dd if="$dm" of=/dev/null bs=64k skip=$((b * set_mib * 16 + off)) count=1 iflag=direct \
		status=none || fail "read set b"
	wait_status sp promotions -ge $((p0 + 1)) 60
done
_settle
assert_eq "$(st dirty_blocks)" 0 "dirty blocks before the rewrite"
in_flight rewrite 3 3 48
# A write that waited for a writeback of its set cannot be cut any more: where
# its frames do not follow each other (a's blocks 0-3 at home, 4-15 from
# x + 4), it goes to the SSD as one write per run of frames, all cached.
# Before, it went to the origin whole and dropped a's cached blocks. The
# writeback that holds the set meanwhile: 224 scattered dirty blocks of a, each
# its own origin write (writeback_gap 0), each read from the 20 ms SSD first.
# It waits because block 15 is not cached (a write around drops it first): a
# rewrite of cached blocks alone would go on beside the writeback.
dmsetup message sp 0 writeback_gap 0 || fail "writeback_gap"
dmsetup message sp 0 write_policy writearound || fail "write_policy writearound"
dd if=/tmp/lock.a of="$dm" bs=4k skip=15 seek=$((a * set_mib * 256 + 15)) count=1 \
	oflag=direct status=none || fail "write a's block 15 around the cache"
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
fio --name=scatter --filename="$dm" --rw=write:4k --bs=4k --direct=1 --ioengine=psync \
	--offset=$(((a * set_mib * 256 + 64) * 4096)) --size=$((448 * 4096)) \
	--output=/tmp/scatter.fio >/dev/null || fail "fio: a's scattered blocks"
_settle
assert_eq "$(st dirty_blocks)" 224 "a's scattered dirty blocks"
by0=$(st bypassed)
d0=$(st deferred)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
dd if=/tmp/lock.a of="$dm" bs=64k seek=$((a * set_mib * 16)) oflag=direct status=none ||
	fail "write a's blocks 0-15 under the writeback"
_settle
log "after the deferred write: $(dmsetup status sp | cut -d' ' -f4-40)"
assert_ge "$(st deferred)" $((d0 + 1)) "writes deferred behind the writeback"
assert_eq "$(st bypassed)" "$by0" "bios bypassed: the deferred write"
m0=$(st read_misses)
cmp /tmp/lock.a <(dd if="$dm" bs=64k skip=$((a * set_mib * 16)) count=1 iflag=direct status=none) ||
	fail "a's blocks 0-15 through the cache after the deferred write"
assert_eq "$(st read_misses)" "$m0" "read misses on the deferred write's blocks"
wait_status sp writeback_sets -eq 0 120
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
origin_has_64k /tmp/lock.a $((a * set_mib * 16)) || fail "the deferred write's data on the origin"
dm_remove sp
remove_nullb ssdslow
log "writes in flight together keep their set open"

# --- a dirty set, never quiet: new blocks take clean frames in place ----------------
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 13 format seq_cutoff 0 evict_wait 3600000 evict_max_wait 0 dirty_target 100 dirty_max_age 0 free_floor 8")
head -c 1M /dev/urandom >/tmp/clean.head
dd if=/tmp/clean.head of="$dm" bs=1M seek=40 oflag=direct status=none || fail "write the dirty head"
dirty=$(st dirty_blocks)
sets=$(st total_sets)
# One and a half times the cache's worth of new data, read (and promoted).
dd if="$dm" of=/dev/null bs=1M skip=64 count=$((3 * sets * $(st set_blocks) / 512)) \
	iflag=direct status=none || fail "read"
assert_eq "$(st dirty_blocks)" "$dirty" "the dirty head stays dirty (no quiet window)"
assert_eq "$(st blocks_written_back)" 0 "blocks written back"
assert_ge "$(st blocks_replaced)" "$(st set_blocks)" "clean blocks replaced by new ones"
misses=$(st read_misses)
bypassed=$(st bypassed)
log "read misses $misses, bypassed $bypassed: $(dmsetup status sp)"
assert_le $((bypassed * 10)) "$misses" "bypassed bios under 10% of the read misses"
origin_has /tmp/clean.head 40 && fail "the dirty head reached the origin"
cmp /tmp/clean.head <(dd if="$dm" bs=1M skip=40 count=1 iflag=direct status=none) ||
	fail "the dirty head's data"
dm_remove sp

# --- every set dirty, a writer that never pauses: eviction under pressure -----------
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 13 format seq_cutoff 0 evict_wait 1000 evict_max_wait 2000 dirty_target 100 dirty_max_age 0 free_floor 8")
fio --name=writer --filename="$dm" --rw=write --bs=64k --direct=1 --ioengine=psync \
	--size=192M --runtime=30 --time_based --output=/tmp/clean.fio >/dev/null ||
	fail "fio writer"
log "writer done: $(dmsetup status sp)"
assert_ge "$(st pressure_writebacks)" 1 "writebacks under pressure"
assert_ge "$(st sets_evicted)" 1 "sets evicted while the writer ran"
assert_ge "$(st pressure_dispatched)" 1 "origin writes in the guaranteed share"
written_back_equal flush_dirty 192 "the flush"
dm_remove sp

# --- a load that never paused: pressure at once when room runs short ----------------
# A scattered reader runs from the start, a writer joins 25 s later and fills
# every set. When room runs short, evict_max_wait (20 s) has long passed
# without a quiet window (evict_wait 3 s): pressure writeback starts at once.
# Counted from running short it would start 20 s later, after both jobs end.
# Its origin writes go in the gaps the reader leaves (pressure_gaps).
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 15 format seq_cutoff 0 read_alloc off evict_wait 3000 evict_max_wait 20000 dirty_target 100 dirty_max_age 0 free_floor 8")
fio --name=reader --filename="$dm" --rw=randread --bs=4k --direct=1 --ioengine=psync \
	--offset=256M --size=128M --runtime=45 --time_based --randrepeat=0 \
	--name=writer --filename="$dm" --rw=write --bs=64k --direct=1 --ioengine=psync \
	--offset=0 --size=192M --startdelay=25 --runtime=20 --time_based \
	--output=/tmp/clean.fio >/dev/null || fail "fio reader and writer"
log "reader and writer done: $(dmsetup status sp)"
assert_ge "$(st pressure_writebacks)" 1 "writebacks under pressure while the load went on"
assert_ge "$(st pressure_gaps)" 1 "pressure writes in the reader's gaps"
written_back_equal flush_dirty 192 "the flush"
dm_remove sp

# --- scattered dirty blocks under pressure: writebacks go out in bursts -------------
# Random 4 KiB writes over one and a half times the cache, every block once,
# writeback_gap 0: each cache set holds scattered dirty runs. A scattered
# reader of uncached blocks keeps the origin busy, so eviction is under
# pressure, and each of its writes goes out as a burst of origin writes (one
# per run, a short skip apart) that the scheduler keeps together. Whatever
# went out in which burst, every block reads back as written (fio verify),
# and after a flush the origin holds what the device does. Lock-out cleaning
# off: it writes one run at a time, and with it on it did most of this
# writeback, leaving pressure eviction a set or none to burst.
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 17 format seq_cutoff 0 read_alloc off evict_wait 3600000 evict_max_wait 1000 dirty_target 100 dirty_max_age 0 writeback_gap 0 lockout_clean off")
writes_under_load "$dm" 0 $((3 * $(st total_sets) * $(st set_blocks) * $(st block_sectors) / 2 / 2048))M \
	256M 128M "scattered writes and their verification"
log "scattered writes done: $(dmsetup status sp)"
assert_ge "$(st pressure_writebacks)" 1 "writebacks under pressure"
assert_ge "$(st pressure_burst)" 1 "origin writes that went in a burst"
assert_eq "$(st writeback_errors)" 0 "writeback errors"
written_back_equal flush_dirty 256 "the bursts and the flush"
dm_remove sp

# --- a write to a set under a cleaning writeback: it yields -------------------------
# Idle origin writes one a second and never in batch mode: a writeback of a set
# of scattered blocks takes minutes, and a write that waited for all of it
# would find every block written back when it returns. The write is one that
# cannot go on beside the writeback, nor around it: a writethrough one (it
# reaches the origin) of a block the cache holds, the last dirty one (a block
# it does not hold would go around to the origin at once, and wait for nothing).
# Every other block of origin set 0: one run per block.
scattered_set "evict_wait 500 dirty_target 0 idle_dispatch_interval 1000" /tmp/yield.want
d0=$(st dirty_blocks)
# The writeback is under way: its origin writes go out one a second
# (blocks_written_back moves only when a writeback ends).
wait_status sp idle_dispatched -ge 2 120
head -c "$bs" /dev/urandom >/tmp/yield.blk
dmsetup message sp 0 write_policy writethrough || fail "write_policy writethrough"
dd if=/tmp/yield.blk of="$dm" bs="$bs" seek=$((nb - 2)) oflag=direct status=none ||
	fail "write during the writeback"
wb=$(st blocks_written_back)
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
assert_ge "$(st writeback_yields)" 1 "writebacks that yielded to the write"
assert_le "$wb" $((nb / 2 - 2)) "blocks written back when the write returned (it waited for the whole set)"
# No new cleaning; one restarted meanwhile runs to its end, unpaced.
dmsetup message sp 0 dirty_target 100 || fail "dirty_target 100"
dmsetup message sp 0 idle_dispatch_interval 1 || fail "idle_dispatch_interval 1"
wait_status sp writeback_sets -eq 0 120
# Each block made clean was written back (the block written through stayed
# dirty: clean needs the writeback's origin flush).
assert_eq $(($(st dirty_blocks) + $(st blocks_written_back))) "$d0" "dirty + written back"
log "yielded after $wb of $d0 blocks: $(dmsetup status sp)"
python3 - /tmp/yield.want /tmp/yield.blk "$bs" $((nb - 2)) <<'PY' || fail "expected image"
import sys
want, blk, bs, b = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3]), int(sys.argv[4])
img = bytearray(open(want, "rb").read())
img[b * bs:(b + 1) * bs] = blk
open(want, "wb").write(img)
PY
set_image_is /tmp/yield.want "$dm" "the set's data through the cache"
dmsetup message sp 0 drain || fail "drain"
wait_status sp dirty_blocks -eq 0 300
set_image_is /tmp/yield.want "$hdd" "the origin after the drain: a block marked clean was never written back"
dm_remove sp

# --- writes beside a writeback that does not yield: rewrites, new blocks -------------
# A flush's writeback holds origin set 0 (every other block dirty, one origin
# write per block, idle writes five a second: half a minute). Rewrites of its
# dirty blocks go on meanwhile, those it has written back already and those
# it has not reached; neither may end up clean with the origin holding the
# older data. Writes of blocks the cache does not hold go on too, into free
# frames, and stay dirty.
scattered_set "evict_wait 60000 dirty_target 100 idle_dispatch_interval 200" /tmp/beside.want
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp idle_dispatched -ge 4 120
# Eight blocks the cache does not hold (odd ones: their frames are free).
python3 - "$dm" "$bs" "$nb" /tmp/beside.want <<'PY' || fail "writes of uncached blocks during the writeback"
import mmap, os, sys
dev, bs, nb, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
img = bytearray(open(want, "rb").read())
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
for b in [1, 3, nb // 2 + 1, nb // 2 + 3, nb - 7, nb - 5, nb - 3, nb - 1]:
    buf[:] = os.urandom(bs)
    img[b * bs:(b + 1) * bs] = buf[:]
    os.pwrite(fd, buf, b * bs)
os.close(fd)
open(want, "wb").write(img)
PY
assert_eq "$(st flush_state)" running "flush_state after the writes of uncached blocks"
assert_ge "$(st writes_beside_writeback)" 8 "writes of uncached blocks that went on beside the writeback"
# Rewrites of dirty blocks from the first (written back) to the last (not
# reached yet), a few times each, and one of a block first written above.
python3 - "$dm" "$bs" "$nb" /tmp/beside.want <<'PY' || fail "rewrites during the writeback"
import mmap, os, random, sys, time
dev, bs, nb, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
img = bytearray(open(want, "rb").read())
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, bs)
blocks = [b for b in range(0, nb, 2) if b < 8 or b % 16 == 0 or b >= nb - 8] * 3
random.shuffle(blocks)
for b in blocks + [nb - 3]:
    buf[:] = os.urandom(bs)
    img[b * bs:(b + 1) * bs] = buf[:]
    os.pwrite(fd, buf, b * bs)
    time.sleep(0.05)
os.close(fd)
open(want, "wb").write(img)
PY
beside=$(st writes_beside_writeback)
log "rewrites during the flush: $beside beside the writeback: $(dmsetup status sp | cut -d' ' -f4-60)"
assert_ge "$beside" 1 "writes that went on beside the writeback"
set_image_is /tmp/beside.want "$dm" "the set's data through the cache after writes beside its writeback"
# The flush may have ended before the last write (it waited) made its block dirty.
# The rest of it unpaced: the writes it was to meet are done (at five idle writes
# a second it would take another minute and a half).
dmsetup message sp 0 idle_dispatch_interval 1 || fail "idle_dispatch_interval 1"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 300
set_image_is /tmp/beside.want "$hdd" "the origin after the flush: a block rewritten during its writeback was marked clean"
dm_remove sp

# --- writeback coalesces: runs a few clean blocks apart, the next origin set ----------
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 17 format seq_cutoff 0 read_alloc off evict_wait 500 dirty_target 100 dirty_max_age 0 lockout_clean off evict_max_wait 0 batch_mode_delay 0")
bs=$(($(st block_sectors) * 512))
nb=$(st set_blocks)
# model OFFSET_BLOCKS COUNT STEP: write COUNT blocks, STEP apart, from block
# OFFSET_BLOCKS of the device, new random data each; the image of the blocks
# [OFFSET_BLOCKS, OFFSET_BLOCKS + COUNT * STEP) after it in /tmp/co.want.
model() {
	python3 - "$dm" "$bs" "$1" "$2" "$3" /tmp/co.want <<'PY' || fail "writes at block $1"
import mmap, os, sys
dev, bs, off, count, step, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, bs * count * step)
os.preadv(fd, [buf], off * bs)
one = mmap.mmap(-1, bs)
for i in range(count):
    one[:] = os.urandom(bs)
    buf[i * step * bs:(i * step + 1) * bs] = one[:]
    os.pwrite(fd, one, (off + i * step) * bs)
os.close(fd)
open(want, "wb").write(buf[:])
PY
}
# flushed WHAT OFFSET_BLOCKS COUNT: flush_dirty; the device and the origin
# both hold /tmp/co.want there.
flushed() {
	dmsetup message sp 0 flush_dirty || fail "flush_dirty"
	wait_status sp dirty_blocks -eq 0 300
	wait_status sp writeback_sets -eq 0 60
	cmp /tmp/co.want <(dd if="$dm" bs="$bs" skip="$2" count="$3" iflag=direct status=none) ||
		fail "$1: the device's data"
	cmp /tmp/co.want <(dd if="$hdd" bs="$bs" skip="$2" count="$3" iflag=direct status=none) ||
		fail "$1: the origin's data after the flush"
}
# 64 blocks of origin set 2 cached, clean.
base=$((2 * nb))
model "$base" 64 1
flushed "64 blocks" "$base" 64
# Then every fourth of them rewritten: 16 dirty runs, 3 clean blocks apart.
for gap in 3 2; do
	dmsetup message sp 0 writeback_gap "$gap" || fail "writeback_gap $gap"
	w0=$(st writeback_writes) g0=$(st writeback_bridged_blocks) b0=$(st blocks_written_back)
	model "$base" 16 4
	assert_eq "$(st dirty_blocks)" 16 "dirty blocks after 16 scattered writes"
	flushed "16 runs, writeback_gap $gap" "$base" 64
	assert_eq $(($(st blocks_written_back) - b0)) 16 "blocks written back (writeback_gap $gap)"
	if ((gap == 3)); then
		assert_eq $(($(st writeback_writes) - w0)) 1 "origin writes for 16 runs 3 clean blocks apart"
		assert_eq $(($(st writeback_bridged_blocks) - g0)) 45 "clean blocks bridged"
	else
		assert_eq $(($(st writeback_writes) - w0)) 16 "origin writes with gaps over writeback_gap"
		assert_eq $(($(st writeback_bridged_blocks) - g0)) 0 "clean blocks bridged over writeback_gap"
	fi
done
# A run across the end of origin set 4 into origin set 5 (another cache set
# as a rule): the older half's writeback takes the next origin set's along,
# one origin write.
dmsetup message sp 0 writeback_gap 16 || fail "writeback_gap 16"
w0=$(st writeback_writes)
model $((5 * nb - 8)) 8 1
cp /tmp/co.want /tmp/co.first
sleep 1.2	# its set is the older dirty one
model $((5 * nb)) 8 1
cat /tmp/co.first /tmp/co.want >/tmp/co.both && mv /tmp/co.both /tmp/co.want
flushed "a run across two origin sets" $((5 * nb - 8)) 16
assert_eq $(($(st writeback_writes) - w0)) 1 "origin writes for a run across two origin sets"
dm_remove sp

# same_place FROM N X: N origin sets from FROM on that share a cache set, each
# with its second frames X blocks from its first (ssdp_alt_xor(), ssdprio_format.h),
# in a table of 16-block sets.
same_place() {
	python3 - "$(dirname "$0")" "$(st total_sets)" $((len / 128)) "$@" <<'PY'
import collections, sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import alt_xor, oset_cset
n, osets, frm, count, x = (int(v) for v in sys.argv[1:])
groups = collections.defaultdict(list)
for o in range(frm, osets - 64):
    if alt_xor(o, 16, 4) == x:
        groups[oset_cset(o, n)].append(o)
print(*next((g[:count] for g in groups.values() if len(g) >= count), []))
PY
}

# --- a write that waited, claimed run by run, keeps what its first run holds -------
# 16-block sets (x 8): a's blocks 6-7 at home, its block 8 in its second
# frame, 0 (b's dirty block 8 holds frame 8). A flush's writeback holds the
# set (b's scattered dirty blocks, one idle origin write each, one a second)
# when a write of a's blocks 6-14 comes: one claim cannot take it (its frames
# change after block 7), so it waits; after the writeback it is claimed run by
# run: 6-7 in place, 8-13 in frames 0-5, 14 at home. Not in frame 6, block
# 6's: the run that took it left block 6 with no frame (the write failed
# with a WARNING).
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 21 format set_size 16 seq_cutoff 0 read_alloc off evict_wait 3600000 dirty_target 100 dirty_max_age 0 writeback_gap 0 idle_dispatch_interval 1000 batch_mode_delay 3600000 idle_budget 0")
read -r a b < <(same_place 64 2 8)
[[ -n $b ]] || fail "no two origin sets share a cache set and an alt frame"
blk_write() { # SET BLOCK COUNT FILE: one write
	dd if="$4" of="$dm" bs=$(($3 * 4))k seek=$((($1 * 16 + $2) * 4096)) count=1 \
		iflag=fullblock oflag=direct,seek_bytes status=none ||
		fail "write set $1's blocks $2-$(($2 + $3 - 1))"
}
head -c 64K /dev/urandom >/tmp/runs.b
head -c 36K /dev/urandom >/tmp/runs.a
for blk in 8 10 12 15; do
	dd if=/tmp/runs.b of="$dm" bs=4k skip="$blk" seek=$((b * 16 + blk)) count=1 oflag=direct \
		status=none || fail "write b's block $blk"
done
blk_write "$a" 8 1 /dev/urandom
blk_write "$a" 6 2 /dev/urandom
_settle
assert_eq "$(st dirty_blocks)" 7 "a's and b's dirty blocks"
d0=$(st deferred) by0=$(st bypassed) wb0=$(st writes_beside_writeback)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
blk_write "$a" 6 9 /tmp/runs.a
_settle
log "after the write that waited: $(dmsetup status sp | cut -d' ' -f4-)"
assert_ge "$(st deferred)" $((d0 + 1)) "writes deferred behind the writeback"
assert_eq "$(st writes_beside_writeback)" "$wb0" "writes beside the writeback"
assert_eq "$(st bypassed)" "$by0" "bios bypassed: the write that waited"
m0=$(st read_misses)
cmp /tmp/runs.a <(dd if="$dm" bs=4k skip=$((a * 16 + 6)) count=9 iflag=direct status=none) ||
	fail "a's blocks 6-14 through the cache after the write that waited"
assert_eq "$(st read_misses)" "$m0" "read misses on the blocks of the write that waited"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
cmp /tmp/runs.a <(dd if="$hdd" bs=4k skip=$((a * 16 + 6)) count=9 iflag=direct status=none) ||
	fail "a's blocks 6-14 on the origin"
for blk in 8 10 12 15; do
	cmp <(dd if=/tmp/runs.b bs=4k skip="$blk" count=1 status=none) \
		<(dd if="$hdd" bs=4k skip=$((b * 16 + blk)) count=1 iflag=direct status=none) ||
		fail "b's block $blk on the origin"
done
dm_remove sp
log "a write that waited, claimed run by run"

# --- a bridging writeback: no other origin set's new block takes a clean frame ------
# 16-block sets, origin sets a and b in one cache set, both with their second
# frames 8 blocks from their first. a's blocks 0-6
# cached, 0 and 6 dirty, 1-5 clean; a's block 11 dirty; b's block 12 cached
# (b has its tag). A flush's writeback gathers a's 0-6 as one origin write,
# the clean 1-5 bridged, and reads them from the SSD, the reads held 8 s by
# dm-delay. Then a write of b's block 3, whose frames are 3 (a's clean block
# 3, in the bridged gap) and 11 (a's dirty block 11): were frame 3 to change
# hands now, the held read would return b's data and the origin would get it
# as a's block 3. It must wait, or go to the origin.
modprobe dm-delay || fail "modprobe dm-delay"
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
leg ssdleg "$ssd" linear
dm=$(dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdleg 19 format set_size 16 seq_cutoff 0 read_alloc off evict_wait 3600000 dirty_target 100 dirty_max_age 0 lockout_clean off writeback_gap 16 batch_mode_delay 0")
read -r a b < <(same_place 96 2 8)
[[ -n $b ]] || fail "no two origin sets share a cache set and an alt frame"
head -c 64K /dev/urandom >/tmp/bridge.a
head -c 64K /dev/urandom >/tmp/bridge.b
# blk FILE SET BLOCK: block BLOCK of FILE into origin set SET's block BLOCK.
blk() {
	dd if="$1" of="$dm" bs=4k skip="$3" seek=$(($2 * 16 + $3)) count=1 oflag=direct \
		status=none || fail "write set $2's block $3"
}
for i in 0 1 2 3 4 5 6; do blk /tmp/bridge.a "$a" "$i"; done
blk /tmp/bridge.b "$b" 12
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
head -c 4K /dev/urandom | dd of=/tmp/bridge.a bs=4k seek=0 conv=notrunc status=none
head -c 4K /dev/urandom | dd of=/tmp/bridge.a bs=4k seek=6 conv=notrunc status=none
for i in 0 6 11; do blk /tmp/bridge.a "$a" "$i"; done
assert_eq "$(st dirty_blocks)" 3 "a's dirty blocks"
hold_data_reads ssdleg "$ssd" 8000
b0=$(st writeback_bridged_blocks)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
sleep 1
blk /tmp/bridge.b "$b" 3
log "b's block 3 written: $(dmsetup status sp | cut -d' ' -f4-)"
# What the write left dirty after the flush began is the next flush's.
wait_status sp flush_state == idle 120
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
leg ssdleg "$ssd" linear
assert_ge "$(($(st writeback_bridged_blocks) - b0))" 5 "clean blocks bridged"
for s in a b; do
	o=${!s}
	for i in 0 1 2 3 4 5 6 11 12; do
		[[ $s == a && $i == 12 ]] && continue
		[[ $s == b && $i != 3 && $i != 12 ]] && continue
		cmp <(dd if=/tmp/bridge.$s bs=4k skip="$i" count=1 status=none) \
			<(dd if="$dm" bs=4k skip=$((o * 16 + i)) count=1 iflag=direct status=none) ||
			fail "$s's block $i through the cache"
		cmp <(dd if=/tmp/bridge.$s bs=4k skip="$i" count=1 status=none) \
			<(dd if="$hdd" bs=4k skip=$((o * 16 + i)) count=1 iflag=direct status=none) ||
			fail "$s's block $i on the origin after the bridging writeback"
	done
done
dm_remove sp
dm_remove ssdleg
log "a bridging writeback's clean frames kept"

# --- bursts with quiet gaps: writes keep meeting cleanings under way -----------------
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 19 format seq_cutoff 0 read_alloc off evict_wait 300 dirty_target 0 dirty_max_age 0 lockout_clean off idle_dispatch_interval 100 batch_mode_delay 3600000 idle_budget 0")
# Bursts of 64 random 4 KiB writes over four origin sets, 0.8 s apart: each
# gap starts cleanings of scattered runs that the next burst meets.
for round in $(seq 1 20); do
	fio_run --name=bursts --filename="$dm" --rw=randwrite --bs=4k --size=8M --io_size=2M \
		--direct=1 --ioengine=psync --thinktime=800000 --thinktime_blocks=64 \
		--verify=crc32c --verify_fatal=1 --randrepeat=0 --norandommap \
		--randseed=$((round * 13)) >/dev/null
	(($(st writeback_yields) >= 5)) && break
done
log "after $round rounds: $(dmsetup status sp)"
assert_ge "$(st writeback_yields)" 1 "writebacks that yielded to a burst"
written_back_equal drain 8 "bursts with yielding writebacks"
dm_remove sp
log "ok"
