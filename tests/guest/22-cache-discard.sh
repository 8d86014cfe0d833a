#!/bin/bash
# Discard through the cache: whole blocks (dirty and clean) are dropped from
# the cache and the discard reaches the origin; a partial block keeps its data
# outside the discarded sectors; data outside the discarded ranges is intact
# through the cache and, after flush_dirty + remove, on the origin; a discard
# that lands on a set under writeback waits for it (no stale writeback after
# the discard). A partial-block discard leaves one answer per sector: a clean
# block reads back what the origin holds, a dirty block what the origin gets
# at its writeback. A whole-block discard that arrives while a writethrough
# write of that block is in flight waits for it and leaves one answer: what the target
# returns is what the origin holds once the cache's copy is dropped. Discard
# is offered when the origin has it, whatever the cache device supports, and
# not when the origin lacks it. Devices: null_blk with discard (memory-backed,
# so discarded sectors read back as zeroes; checked on the raw device first).
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
KiB=1024
MiB=$((1024 * KiB))
BLK=$((4 * KiB)) # block_size default: 8 sectors
SIZE_MB=24
hdd=$(NULLB_DISCARD=1 make_hdd hdd $SIZE_MB 100000 4)
ssd=$(NULLB_DISCARD=1 make_ssd ssd 16)
len=$(sectors "$hdd")

disc_sectors() { awk '{ print $14 }' "/sys/block/${1#/dev/}/stat"; } # discarded sectors

# --- Does the origin's discard zero?  Assert content only if it does.
head -c $((8 * KiB)) /dev/urandom | dd of="$hdd" bs=4k seek=$(((SIZE_MB - 1) * 256)) oflag=direct status=none
blkdiscard -o $(((SIZE_MB - 1) * MiB)) -l $((8 * KiB)) "$hdd" || fail "blkdiscard on the raw origin failed"
if cmp -s <(dd if="$hdd" bs=4k skip=$(((SIZE_MB - 1) * 256)) count=2 iflag=direct status=none) \
	<(head -c $((8 * KiB)) /dev/zero); then
	zeroes=1
else
	zeroes=0
	log "the origin's discard does not zero: discarded content is not checked"
fi

# --- The model: what the device must hold, byte for byte, and a mask with one
# byte per 512-byte sector: 1 = discarded sector whose content is unspecified
# (a partial block, or a whole one when the origin does not zero).
head -c $((SIZE_MB * MiB)) /dev/urandom >/tmp/model
dd if=/tmp/model of="$hdd" bs=1M oflag=direct status=none
head -c $((SIZE_MB * MiB / 512)) /dev/zero >/tmp/mask

mask_set() { # mask_set OFF LEN 0|1 (bytes, sector-aligned)
	head -c $(($2 / 512)) /dev/zero | tr '\0' "\\$3" |
		dd of=/tmp/mask bs=64k oflag=seek_bytes seek=$(($1 / 512)) conv=notrunc status=none
}

put() { # put OFF LEN: random data at byte OFF through the target, and into the model
	local off=$1 n=$2 bs=512
	((off % (64 * KiB) == 0 && n % (64 * KiB) == 0)) && bs=$((64 * KiB))
	head -c "$n" /dev/urandom >/tmp/piece
	dd if=/tmp/piece of="$dev" bs=$bs seek=$((off / bs)) oflag=direct conv=notrunc status=none ||
		fail "write at $off failed"
	dd if=/tmp/piece of=/tmp/model bs=$bs seek=$((off / bs)) conv=notrunc status=none
	mask_set "$off" "$n" 0
}

WHOLE_BLOCKS=0 # blocks wholly inside the discards so far
disc() { # disc OFF LEN: discard through the target; update the model
	local off=$1 n=$2 b0 b1
	blkdiscard -o "$off" -l "$n" "$dev" || fail "blkdiscard -o $off -l $n failed"
	b0=$(((off + BLK - 1) / BLK * BLK)) b1=$(((off + n) / BLK * BLK))
	mask_set "$off" "$n" 1
	if ((b1 > b0)); then
		WHOLE_BLOCKS=$((WHOLE_BLOCKS + (b1 - b0) / BLK))
		if ((zeroes)); then # whole blocks: zeroes, exactly
			dd if=/dev/zero of=/tmp/model bs=512 seek=$((b0 / 512)) count=$(((b1 - b0) / 512)) \
				conv=notrunc status=none
			mask_set "$b0" $((b1 - b0)) 0
		fi
	fi
}

check() { # check SRC WHAT: SRC's first $SIZE_MB MiB against the model and mask
	dd if="$1" bs=1M count=$SIZE_MB iflag=direct status=none >/tmp/actual ||
		fail "reading $1 failed"
	python3 - /tmp/actual /tmp/model /tmp/mask /tmp/before "$2" <<'PY' || fail "$2: content differs from the model"
import sys
act, model, mask = (open(p, "rb").read() for p in sys.argv[1:4])
before = open(sys.argv[4], "rb").read()
exp = bytearray(model)
s = mask.find(1)
while s >= 0:                         # unspecified sectors: take what is there
    exp[s * 512:(s + 1) * 512] = act[s * 512:(s + 1) * 512]
    s = mask.find(1, s + 1)
if bytes(exp) == act:
    sys.exit(0)
bad = [s for s in range(len(mask)) if exp[s * 512:(s + 1) * 512] != act[s * 512:(s + 1) * 512]]
runs, start = [], bad[0]
for a, b in zip(bad, bad[1:] + [None]):
    if b != a + 1:
        runs.append((start, a))
        start = b
for a, b in runs[:10]:
    old = act[a * 512:(b + 1) * 512] == before[a * 512:(b + 1) * 512]
    print(f"{sys.argv[5]}: bytes {a * 512}..{(b + 1) * 512 - 1} differ"
          + (" (still the data from before the discards)" if old else ""), file=sys.stderr)
print(f"{sys.argv[5]}: {len(bad)} sectors differ in {len(runs)} runs", file=sys.stderr)
sys.exit(1)
PY
}

# read_alloc off: only our writes and discards change valid_blocks, whatever
# udev's blkid probes read meanwhile.
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off")
[[ $(cat "/sys/block/$(basename "$(readlink -f "$dev")")/queue/discard_max_bytes") != 0 ]] ||
	fail "the target does not advertise discard over discard-capable devices"

log "setup done"
# [0, 2M) clean (written, then flushed), [2M, 4M) dirty, [4M, 6M) only on the origin.
put 0 $((2 * MiB))
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks == 0 60
put $((2 * MiB)) $((2 * MiB))
cp /tmp/model /tmp/before
check "$dev" "before the discards"
v0=$(status_get sp valid_blocks) d0=$(status_get sp dirty_blocks)
n0=$(status_get sp discards) o0=$(disc_sectors "$hdd")
assert_eq "$d0" 512 "dirty blocks before the discards"
assert_ge "$v0" 1024 "valid blocks before the discards"

# D1: partial head in clean block 256, clean 257..511, dirty 512..767,
#     partial tail (4 sectors) in dirty block 768
disc $((MiB + 1536)) $((2 * MiB + 2048 - 1536))
# D2: dirty 896..1023, then a set that is not cached at all
disc $((3 * MiB + 512 * KiB)) $((MiB + 512 * KiB))
# D3: two sectors in the middle of dirty block 832
disc $((3 * MiB + 256 * KiB + 1024)) 1024
total=$(((2 * MiB + 512) + (MiB + 512 * KiB) + 1024))
whole=$(((255 + 256 + 128 + 256) * BLK))
assert_eq "$WHOLE_BLOCKS" $((whole / BLK)) "test arithmetic"

v1=$(status_get sp valid_blocks) d1=$(status_get sp dirty_blocks)
log "valid $v0 -> $v1, dirty $d0 -> $d1, discards +$(($(status_get sp discards) - n0))," \
	"origin discarded sectors +$(($(disc_sectors "$hdd") - o0))"
# ... and the clean block 256, partly discarded: its SSD copy would differ
# from the origin in the discarded sectors
assert_eq "$((v0 - v1))" $((255 + 256 + 128 + 1)) "valid blocks dropped: cached whole blocks and the clean partial one"
assert_eq "$((d0 - d1))" $((256 + 128)) "dirty blocks dropped for the dirty whole blocks discarded"
assert_ge "$(($(status_get sp discards) - n0))" 3 "discards counted"
# every whole block reached the origin; partial pieces may or may not
assert_ge "$(($(disc_sectors "$hdd") - o0))" $((whole / 512)) "discarded sectors on the origin"
assert_le "$(($(disc_sectors "$hdd") - o0))" $((total / 512)) "discarded sectors on the origin"

# Reads of the discarded blocks come from the origin (zeroes), never the old
# cached copy; everything else, partial blocks included, is intact.
check "$dev" "through the target after the discards"
# Promoting what is read now keeps it so, and the blocks take new writes.
dmsetup message sp 0 read_alloc on
dd if="$dev" of=/dev/null bs=64k skip=16 count=64 iflag=direct status=none
wait_status sp valid_blocks ">" "$v1" 30
check "$dev" "through the target, reread with read_alloc on"
put $((2 * MiB + 64 * KiB)) $((64 * KiB))
put $((MiB + 128 * KiB + 512)) 1024 # partial write to a discarded (invalid) block
check "$dev" "after writes into discarded blocks"

log "discards checked"

# --- Partial blocks: one answer per sector, whatever the cache state.
blk() { dd if="$1" bs=4k skip=$(($2 / BLK)) count=1 iflag=direct status=none | md5sum; }
pc=$((6 * MiB)) pd=$((6 * MiB + 64 * KiB)) # a clean and a dirty cached block
put "$pc" $((64 * KiB))
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks == 0 60
put "$pd" $((64 * KiB))
disc $((pc + 1024)) 1024 # sectors 2-3 of the clean block
disc $((pd + 1024)) 1024 # sectors 2-3 of the dirty block
assert_eq "$(blk "$dev" "$pc")" "$(blk "$hdd" "$pc")" \
	"a partly discarded clean block reads as the origin has it"
after=$(blk "$dev" "$pd")
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks == 0 60
assert_eq "$(blk "$hdd" "$pd")" "$after" \
	"a partly discarded dirty block: the origin gets what the target returned"
assert_eq "$(blk "$dev" "$pd")" "$after" "... and the target still returns it"
check "$dev" "after partial discards"
log "partial blocks checked"

# A discard racing a writeback of its set: the writeback wins the set, the
# discard waits (deferred), so no old data is written over the discard.
for r in 0 1 2; do
	base=$(((8 + 4 * r) * MiB))
	put "$base" $((4 * MiB))
	dmsetup message sp 0 flush_dirty
	disc "$base" $((4 * MiB))
done
wait_status sp dirty_blocks == 0 120
log "discard vs writeback: deferred $(status_get sp deferred) (bios that waited for a set)"
check "$dev" "after discards racing writeback"

# Writeback and remove: the origin alone holds the model.
put $((4 * MiB + 512 * KiB)) $((MiB)) # dirty again, half over a discarded range
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks == 0 60
log "status: $(dmsetup status sp)"
dm_remove sp
check "$hdd" "origin after flush_dirty and remove"

# --- Discard follows the origin alone: it goes there, never to the SSD.
dmax() { cat "/sys/block/$(basename "$(readlink -f "$1")")/queue/discard_max_bytes"; }
ssd_nd=$(make_ssd ssdnd 16) # no discard
assert_eq "$(dmax "$ssd_nd")" 0 "test setup: the cache device has no discard"
dev=$(dm_create spn "0 $len ssdprio $hdd $ssd_nd 1 format")
[[ $(dmax "$dev") != 0 ]] || fail "discard not offered over a discard-capable origin and a discard-less cache"
o0=$(disc_sectors "$hdd")
blkdiscard -o $((2 * MiB)) -l $((MiB)) "$dev" || fail "blkdiscard over a discard-less cache failed"
assert_eq $(($(disc_sectors "$hdd") - o0)) $((MiB / 512)) "the discard reached the origin"
dm_remove spn
dev=$(dm_create spo "0 $len ssdprio $hdd $ssd_nd 2 cache off")
[[ $(dmax "$dev") != 0 ]] || fail "cache off: discard not offered over a discard-capable origin"
dm_remove spo
hdd_nd=$(make_hdd hddnd 8 100000 4)                   # no discard
ssd_d=$(NULLB_DISCARD=1 make_ssd ssdd 16)
dev=$(dm_create spx "0 $(sectors "$hdd_nd") ssdprio $hdd_nd $ssd_d 1 format")
assert_eq "$(dmax "$dev")" 0 "discard offered although the origin has none"
n0=$(status_get spx discards)
if blkdiscard -o 0 -l $((MiB)) "$dev" 2>/dev/null; then
	fail "a discard the origin cannot do was accepted"
fi
assert_eq "$(status_get spx discards)" "$n0" "no discard reached the target"
dm_remove spx

# --- A whole-block discard racing a writethrough write of that block. The
# SSD half of the write is held (its device suspended), so the write is still
# in flight when the discard arrives, after its origin half has landed. The
# discard waits for the write (the write range lock: one write of a block in
# flight at a time), then goes: one outcome only, and the target's answer
# must be the origin's once the cache's (clean) copy is gone.
hdd_r=$(NULLB_DISCARD=1 make_hdd hddr 8 100000 4)
ssd_r=$(make_ssd ssdr 16)
ssdl=$(dm_create ssdl "0 $(sectors "$ssd_r") linear $ssd_r 0")
dev=$(dm_create spw "0 $(sectors "$hdd_r") ssdprio $hdd_r $ssdl 5 format write_policy writethrough read_alloc off")
dm_n=$(basename "$(readlink -f "$dev")")
origin_writes() { awk '{ print $5 }' /sys/block/hddr/stat; } # completed write requests
dm_writing() { awk '{ print $2 }' "/sys/block/$dm_n/inflight"; }
off=$((2 * MiB + 64 * KiB))
head -c $BLK /dev/urandom >/tmp/wblk
dmsetup suspend ssdl || fail "suspend ssdl failed"
w0=$(origin_writes)
dd if=/tmp/wblk of="$dev" bs=$BLK seek=$((off / BLK)) count=1 oflag=direct conv=notrunc status=none &
wpid=$!
end=$((SECONDS + 60)) # hang guard
until (($(origin_writes) > w0 && $(dm_writing) > 0)); do
	((SECONDS < end)) || fail "the write's origin half did not land (origin writes $w0 -> $(origin_writes), in flight $(dm_writing))"
	sleep 0.1
done
o0=$(disc_sectors "$hdd_r")
d0=$(status_get spw deferred)
blkdiscard -o "$off" -l $BLK "$dev" &
dpid=$!
trap 'dmsetup resume ssdl 2>/dev/null' EXIT
wait_status spw deferred -ge $((d0 + 1)) 60
assert_eq $(($(disc_sectors "$hdd_r") - o0)) 0 "the discard went while the write was in flight"
assert_ge "$(dm_writing)" 1 "test setup: the write is still in flight beside the discard"
dmsetup resume ssdl || fail "resume ssdl failed"
trap - EXIT
wait_exit "$wpid" 60 || fail "the write did not complete once its SSD half was let through"
wait "$wpid" || fail "the write failed"
wait_exit "$dpid" 60 || fail "the discard did not complete after the write"
wait "$dpid" || fail "blkdiscard of the block being written failed"
o1=$(disc_sectors "$hdd_r")
log "discard during a writethrough write: origin discarded sectors +$((o1 - o0))"
got=$(blk "$dev" "$off")
[[ $got == "$(md5sum </tmp/wblk)" || $got == "$(head -c $BLK /dev/zero | md5sum)" ]] ||
	fail "the block reads neither as written nor as discarded"
assert_eq "$(status_get spw dirty_blocks)" 0 "writethrough left dirty blocks"
dm_remove spw # drops the clean copy: from now on the origin answers
assert_eq "$(blk "$hdd_r" "$off")" "$got" \
	"a block written and discarded together: the origin answers what the cache did"
assert_eq "$((o1 - o0))" $((BLK / 512)) "the discard reached the origin after the write"
dm_remove ssdl
log "ok"
