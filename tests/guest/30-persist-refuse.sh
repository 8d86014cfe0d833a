#!/bin/bash
# A cache device is used only when it is ours and fits the table: blank or
# foreign starts need `format`; another origin, another geometry, a broken
# superblock checksum, a truncated device or a cache of format version 1 are
# refused with a precise message, and nothing is written to the cache device.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 64 0 32)
hdd2=$(make_hdd hdd2 80 0 32)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")
META_MB=4 # the metadata area and the first sets: what a refusal must not touch

meta_sum() { dd if="$1" bs=1M count=$META_MB iflag=direct status=none | sha256sum; }

# refused NAME TABLE PATTERN: the table fails, the kernel says PATTERN, and the
# cache's first MiBs are unchanged.
refused() {
	local before
	before=$(meta_sum "$ssd")
	dm_refused "$@"
	[[ $(meta_sum "$ssd") == "$before" ]] || fail "cache device written by a refused table: $2"
}

# stamp NAME SEED write|verify: 4 MiB of random 4 KiB writes through sp (fio's
# checksummed blocks), or the check that they read back.
stamp() {
	local mode=--do_verify=0
	[[ $3 == verify ]] && mode=--verify_only=1
	fio_run --name="$1" --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
		--size=4M --randrepeat=0 --randseed="$2" --verify=crc32c --ioengine=psync \
		"$mode" >/dev/null
}

# --- blank and foreign caches need format -------------------------------------------
refused sp "0 $len ssdprio $hdd $ssd" "blank: add the feature flag 'format'"
printf 'XFSB-not-a-cache' | dd of="$ssd" bs=512 seek=0 conv=notrunc oflag=direct status=none
refused sp "0 $len ssdprio $hdd $ssd" "no ssdprio superblock: add the feature flag 'format'"
refused sp "0 $len ssdprio $hdd $ssd 2 origin_id 00000000000000000000000000000000" \
	"origin_id must be 32 hex digits"

# --- format, and data that must survive everything below ---------------------------
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 evict_max_wait 0" >/dev/null
assert_eq "$(status_get sp meta_state)" formatted "first table formats"
fio_run --name=keep --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
	--size=8M --randrepeat=0 --randseed=5 --verify=crc32c --ioengine=psync >/dev/null
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty data in the cache"
dm_remove sp

# --- another geometry, another origin, a truncated cache -----------------------------
refused sp "0 $len ssdprio $hdd $ssd 2 block_size 16" "another block_size or set_size"
refused sp "0 $len ssdprio $hdd $ssd 3 format set_size 128" "another block_size or set_size"
refused sp "0 $(sectors "$hdd2") ssdprio $hdd2 $ssd 1 format" "another origin \(origin size differs\)"
refused sp "0 $len ssdprio $hdd $ssd 2 origin_id 0123456789abcdef0123456789abcdef" \
	"another origin \(origin_id differs\)"
dm_create short "0 $(($(sectors "$ssd") - 2048)) linear $ssd 0" >/dev/null
refused sp "0 $len ssdprio $hdd /dev/mapper/short 1 format" "smaller than when it was formatted"
dm_remove short

# --- a damaged superblock: refused, even with format; repaired: loads ----------------
sb=$(dd if="$ssd" bs=512 count=1 iflag=direct status=none | od -An -tx1 -v | tr -d ' \n')
byte=${sb:200:2}
printf "\\x$(printf %02x $((0x$byte ^ 0x10)))" |
	dd of="$ssd" bs=1 seek=100 conv=notrunc status=none
sync
echo 1 >/proc/sys/vm/drop_caches
refused sp "0 $len ssdprio $hdd $ssd" "checksum mismatch"
refused sp "0 $len ssdprio $hdd $ssd 1 format" "checksum mismatch"
printf "\\x$byte" | dd of="$ssd" bs=1 seek=100 conv=notrunc status=none
sync
echo 1 >/proc/sys/vm/drop_caches

dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 evict_max_wait 0" >/dev/null
assert_eq "$(status_get sp meta_state)" clean "repaired superblock loads"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks kept"
fio_run --name=keep --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
	--size=8M --randrepeat=0 --randseed=5 --verify=crc32c --ioengine=psync \
	--verify_only=1 >/dev/null
dm_remove sp

# --- format version 1 (an earlier ssdprio): refused, or started afresh when empty -----
# sb_rewrite DEV VERSION FLAGS: the superblock as an older module would write it,
# and the records that check out sealed again as that version seals them
# (ssdp_rec_seed(): from version 4 the version is in the seed).
sb_rewrite() {
	echo 1 >/proc/sys/vm/drop_caches
	python3 - "$(dirname "$0")" "$@" <<'PY'
import os, struct, sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import SB, SB_FIELDS, crc32c
fd = os.open(sys.argv[1], os.O_RDWR | os.O_SYNC)
sb = bytearray(os.pread(fd, 512, 0))
f = dict(zip(SB_FIELDS, SB.unpack_from(sb, 0)))
def seed(version):
    s = crc32c(0xFFFFFFFF, f["uuid"])
    return crc32c(s, struct.pack("<I", version)) if version >= 4 else s
old, new = seed(f["version"]), seed(int(sys.argv[2]))
rb = f["rec_bytes"]
for copy in (0, 1):
    base = (8 + copy * f["rec_sectors"]) * 512
    for cset in range(f["nr_csets"]):
        rec = bytearray(os.pread(fd, rb, base + cset * rb))
        if struct.unpack_from("<I", rec)[0] == crc32c(old, bytes(rec[4:])):
            struct.pack_into("<I", rec, 0, crc32c(new, bytes(rec[4:])))
            os.pwrite(fd, bytes(rec), base + cset * rb)
struct.pack_into("<II", sb, 8, int(sys.argv[2]), int(sys.argv[3]))
struct.pack_into("<I", sb, 508, crc32c(0xFFFFFFFF, bytes(sb[:508])))
os.pwrite(fd, bytes(sb), 0)
os.close(fd)
PY
	echo 1 >/proc/sys/vm/drop_caches
}
# Shut down cleanly with dirty blocks (SSDP_SB_CLEAN only): they may be data the
# origin lacks, and this module cannot read version 1 records.
sb_rewrite "$ssd" 1 1
refused sp "0 $len ssdprio $hdd $ssd" "format version 1 .*may hold dirty blocks"
refused sp "0 $len ssdprio $hdd $ssd 1 format" "format version 1 .*may hold dirty blocks"
out=$("$REPO/build/ssdprio-tool" show "$ssd" 2>&1) && fail "show accepted a version 1 cache"
grep -q "format version 1" <<<"$out" || fail "show on a version 1 cache: $out"
# Clean and no dirty block (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY): nothing to lose.
sb_rewrite "$ssd" 1 3
refused sp "0 $len ssdprio $hdd $ssd" "format version 1 .*no dirty blocks: add the feature flag 'format'"
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 1 format" >/dev/null
assert_eq "$(status_get sp meta_state)" formatted "an empty version 1 cache formatted afresh"
dmesg | grep -q "format version 1 and no dirty blocks: formatting it afresh" ||
	fail "no word of the version 1 cache: $(dmesg | grep ssdprio)"
dm_remove sp
"$REPO/build/ssdprio-tool" show "$ssd" >/dev/null || fail "show after the new format"

# --- format version 2 (no alt frames): taken over in place where records keep their size
# A version 2 record is a version 3 record with every block in its home frame:
# a fresh cache written once has only home blocks, so rewriting its superblock
# as version 2 makes the cache a version 2 cache would have left.
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 1 format")
head -c 1M /dev/urandom >/tmp/v2.data
dd if=/tmp/v2.data of="$dm" bs=1M seek=3 oflag=direct status=none || fail "write"
d2=$(status_get sp dirty_blocks)
assert_ge "$d2" 1 "dirty blocks before the version 2 rewrite"
dm_remove sp
sb_rewrite "$ssd" 2 1
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "format version 2" ||
	fail "show on a version 2 cache: $("$REPO/build/ssdprio-tool" show "$ssd" 2>&1)"
dmesg -C
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd")
assert_eq "$(status_get sp meta_state)" clean "a version 2 cache loaded warm"
assert_eq "$(status_get sp dirty_blocks)" "$d2" "its dirty blocks"
dmesg | grep -q "format version 2 taken over in place" ||
	fail "no word of the version 2 take-over: $(dmesg | grep ssdprio)"
cmp /tmp/v2.data <(dd if="$dm" bs=1M skip=3 count=1 iflag=direct status=none) ||
	fail "the version 2 cache's data"
dm_remove sp
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "format version 3" ||
	fail "the superblock after the take-over: $("$REPO/build/ssdprio-tool" show "$ssd" 2>&1)"
# 256-block sets: version 4 records are twice the size, so version 2 is refused.
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 3 format set_size 256")
dd if=/tmp/v2.data of="$dm" bs=1M seek=3 oflag=direct status=none || fail "write"
dm_remove sp
sb_rewrite "$ssd" 2 1
refused sp "0 $len ssdprio $hdd $ssd 2 set_size 256" "format version 2 with set_size 256"
refused sp "0 $len ssdprio $hdd $ssd 3 format set_size 256" "format version 2 with set_size 256"
sb_rewrite "$ssd" 2 3
dm_create sp "0 $len ssdprio $hdd $ssd 3 format set_size 256" >/dev/null
assert_eq "$(status_get sp meta_state)" formatted "an empty version 2 cache of 256-block sets formatted afresh"
dm_remove sp
log "format version 2: taken over in place, or refused where its records differ"

# --- format version 3 (alt frames at b ^ S/2 for all): used as it is, stays 3 -------
# An empty cache of 16-block sets rewritten as version 3. Origin set a's blocks
# 0-7 dirty in their home frames, then b's (same cache set): their home frames
# hold a's dirty blocks, so they go to their second frames, b ^ 8 in version 3.
# b's version 4 xor is another, so reading the cache as version 4 would put b's
# blocks elsewhere. Reloaded, both read back as written, the tool lists the same
# dirty blocks, they reach the origin, and the cache stays version 3.
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
dm_create sp "0 $len ssdprio $hdd $ssd 3 format set_size 16" >/dev/null
read -r a b < <(python3 - "$(dirname "$0")" "$(status_get sp total_sets)" $((len / 128)) <<'PY'
import sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import alt_xor, oset_cset
n, nos = int(sys.argv[1]), int(sys.argv[2])
for a in range(64, nos):
    b = next((o for o in range(a + 2, nos)
              if oset_cset(o, n) == oset_cset(a, n) and alt_xor(o, 16, 4) != 8), None)
    if b is not None:
        print(a, b)
        break
PY
)
[[ -n $b ]] || fail "no two origin sets share a cache set"
dm_remove sp
sb_rewrite "$ssd" 3 3
dmesg -C
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 2 set_size 16")
dmesg | grep -q "format version 3 used as it is" || fail "no word of the version 3 cache: $(dmesg | grep ssdprio)"
head -c 32K /dev/urandom >/tmp/v3.a
head -c 32K /dev/urandom >/tmp/v3.b
dd if=/tmp/v3.a of="$dm" bs=32k seek=$((a * 2)) oflag=direct status=none || fail "write a"
dd if=/tmp/v3.b of="$dm" bs=32k seek=$((b * 2)) oflag=direct status=none || fail "write b"
assert_eq "$(status_get sp dirty_blocks)" 16 "a's and b's dirty blocks"
dm_remove sp
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "format version 3" ||
	fail "the version 3 superblock after use: $("$REPO/build/ssdprio-tool" show "$ssd" 2>&1)"
"$REPO/build/ssdprio-tool" check "$ssd" >/dev/null || fail "check of the version 3 cache"
want=$(printf '%s %s\n' $((a * 128)) 64 $((b * 128)) 64 | sort -n)
got=$("$REPO/build/ssdprio-tool" dirty "$ssd" | sort -n)
assert_eq "$got" "$want" "the tool's dirty extents of the version 3 cache"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 2 set_size 16")
assert_eq "$(status_get sp meta_state)" clean "the version 3 cache loaded warm"
assert_eq "$(status_get sp dirty_blocks)" 16 "its dirty blocks"
cmp /tmp/v3.a <(dd if="$dm" bs=32k skip=$((a * 2)) count=1 iflag=direct status=none) || fail "a's data (version 3)"
cmp /tmp/v3.b <(dd if="$dm" bs=32k skip=$((b * 2)) count=1 iflag=direct status=none) || fail "b's data (version 3)"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
cmp /tmp/v3.a <(dd if="$hdd" bs=32k skip=$((a * 2)) count=1 iflag=direct status=none) || fail "a's data on the origin"
cmp /tmp/v3.b <(dd if="$hdd" bs=32k skip=$((b * 2)) count=1 iflag=direct status=none) || fail "b's data on the origin"
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "format version 3" || fail "still version 3 after the flush"
log "format version 3: used as it is, its alt frames read as b ^ S/2"

# --- origin_id: kept in the superblock, required to match -----------------------------
id=0123456789abcdef0123456789abcdef
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
dm_create sp "0 $len ssdprio $hdd $ssd 3 format origin_id $id" >/dev/null
dmsetup table sp | grep -q "origin_id $id" || fail "table does not print origin_id: $(dmsetup table sp)"
dm_remove sp
refused sp "0 $len ssdprio $hdd $ssd" "another origin \(origin_id differs\)"
dm_create sp "0 $len ssdprio $hdd $ssd 2 origin_id $id" >/dev/null
assert_eq "$(status_get sp meta_state)" clean "origin_id matches"
dm_remove sp

# --- a cache or an origin serves one ssdprio device at a time --------------------------
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
ssd2=$(make_ssd ssd2 24)
dm_create sp "0 $len ssdprio $hdd $ssd 1 format" >/dev/null
refused sp2 "0 $(sectors "$hdd2") ssdprio $hdd2 $ssd 1 format" "Cache device is in use by another ssdprio device"
refused sp2 "0 $len ssdprio $hdd $ssd2 1 format" "Origin device is in use by another ssdprio device"
# a reload of the same device builds its new table while the old one is live
dmsetup reload sp --table "0 $len ssdprio $hdd $ssd 2 evict_wait 500" || fail "reload refused"
dmsetup resume sp || fail "resume after reload"
assert_eq "$(status_get sp meta_state)" clean "reloaded table loads the cache"
dm_remove sp
# released with the device: another may use them now
dm_create sp2 "0 $len ssdprio $hdd $ssd2 1 format" >/dev/null
dm_remove sp2

# --- reloads naming another cache over the same origin ------------------------------
# The table replaced holds dirty blocks: they would be left on a cache nothing
# reads while the new table served the origin's older data.  The resume is
# refused, the device stays suspended, and the old table loads again warm.
# Once it is written back, the new cache was away from the origin while the
# old one served it: clean blocks it held are stale (it starts empty), dirty
# ones may be older than the origin (refused).  ssd2 held clean blocks of
# this origin from before, ssd3 a dirty one.
ssd3=$(make_ssd ssd3 24)
for c in "$ssd" "$ssd2" "$ssd3"; do dd if=/dev/zero of="$c" bs=1M count=$META_MB oflag=direct status=none; done
dm_create sp "0 $len ssdprio $hdd $ssd2 3 format seq_cutoff 0" >/dev/null
fio_run --name=stale --filename=/dev/mapper/sp --rw=randread --bs=4k --direct=1 --size=4M \
	--randrepeat=0 --ioengine=psync >/dev/null
wait_status sp valid_blocks -ge 512 60
dm_remove sp
dm_create sp "0 $len ssdprio $hdd $ssd3 1 format" >/dev/null
dd if=/dev/urandom of=/dev/mapper/sp bs=4k count=1 seek=8000 oflag=direct status=none
assert_eq "$(status_get sp dirty_blocks)" 1 "ssd3's dirty block"
dm_remove sp
dm_create sp "0 $len ssdprio $hdd $ssd 3 format evict_wait 60000" >/dev/null
stamp swap 9 write
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks before the swap"
for t in "0 $len ssdprio $hdd $ssd2 1 format" "0 $len ssdprio $hdd $ssd2 2 cache off"; do
	dmsetup reload sp --table "$t" || fail "reload: $t"
	dmesg -C
	dmsetup resume sp 2>/dev/null && fail "resume accepted over $dirty dirty blocks on the cache replaced: $t"
	dmesg | grep -q "the table replaced holds $dirty dirty blocks on cache" ||
		fail "no word of the stranded dirty blocks: $(dmesg | grep ssdprio)"
	dmsetup info sp | grep -q SUSPENDED || fail "device not left suspended: $(dmsetup info sp)"
	dmsetup reload sp --table "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" || fail "reload of the old table"
	dmsetup resume sp || fail "resume of the old table"
	assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks back with the old table"
done
log "the old table's data, after the refused swaps"
stamp swap 9 verify
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dmsetup reload sp --table "0 $len ssdprio $hdd $ssd3 1 format" || fail "reload naming ssd3"
dmesg -C
dmsetup resume sp 2>/dev/null && fail "resume accepted over ssd3's dirty block from before"
dmesg | grep -q "was away while the table replaced served the origin through another cache, and may hold dirty blocks" ||
	fail "no word of ssd3's old dirty block: $(dmesg | grep ssdprio)"
dmsetup reload sp --table "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" || fail "reload of the old table"
dmsetup resume sp || fail "resume of the old table after ssd3"
dmsetup reload sp --table "0 $len ssdprio $hdd $ssd2 1 format" || fail "reload naming ssd2"
dmesg -C
dmsetup resume sp || fail "resume naming ssd2 once nothing is dirty"
dmesg | grep -q "its contents are out of date and are discarded; starting empty" ||
	fail "ssd2's stale blocks not discarded: $(dmesg | grep ssdprio)"
log "the data on the origin, through the new cache"
stamp swap 9 verify
dm_remove sp
remove_nullb ssd3

# --- the origin disk's own id, recorded at format (no origin_id needed) ---------------
# Two SCSI disks of the same size with their own NAA ids (VPD page 0x83):
# scsi_debug, two targets.  The cache formatted over one is refused over the other.
if modprobe sd_mod 2>/dev/null && modprobe scsi_debug dev_size_mb=16 num_tgts=2 max_luns=1 2>/dev/null; then
	sds=()
	for _ in $(seq 100); do
		mapfile -t sds < <(ls -d /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/* 2>/dev/null | sort)
		((${#sds[@]} == 2)) && [[ -b /dev/${sds[0]##*/} && -b /dev/${sds[1]##*/} ]] && break
		sleep 0.1
	done
	((${#sds[@]} == 2)) || fail "scsi_debug: expected 2 disks, found ${#sds[@]}"
	sda=/dev/${sds[0]##*/} sdb=/dev/${sds[1]##*/}
	slen=$(sectors "$sda")
	assert_eq "$(sectors "$sdb")" "$slen" "scsi_debug disks of one size"
	dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
	dm_create sp "0 $slen ssdprio $sda $ssd 3 format evict_wait 60000" >/dev/null
	dd if=/dev/urandom of=/dev/mapper/sp bs=1M count=2 oflag=direct status=none
	dm_remove sp
	"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "origin disk: *id " ||
		fail "origin disk id not recorded: $("$REPO/build/ssdprio-tool" show "$ssd")"
	refused sp "0 $slen ssdprio $sdb $ssd" "another origin \(origin disk id differs\)"
	refused sp "0 $slen ssdprio $sdb $ssd 1 format" "another origin \(origin disk id differs\)"
	dm_create sp "0 $slen ssdprio $sda $ssd 2 evict_wait 60000" >/dev/null
	assert_eq "$(status_get sp meta_state)" clean "the same disk loads"
	assert_ge "$(status_get sp dirty_blocks)" 512 "its dirty blocks kept"
	dmesg -C
	dmsetup message sp 0 flush_dirty || fail "flush_dirty"
	wait_status sp dirty_blocks -eq 0 120
	dm_remove sp
	_settle
	modprobe -r scsi_debug || fail "cannot unload scsi_debug"
else
	log "SKIP part: scsi_debug or sd_mod not available: the origin disk id check is not tested"
fi
# --- a disk id this kernel cannot read (a newer kernel recorded it) -------------------
# 6.11+ reads an NVMe disk's EUI-64/NGUID and records it; 6.1 cannot read it.
# After such a downgrade the cache must still load, dirty blocks and all, the
# origin told by its size and start (or the table's origin_id) as for a disk
# without an id.  null_blk reports no id: record one as a newer kernel would.
# sb_uid DEV ID_HEX TYPE [ORIGIN_SECTORS [ORIGIN_ID_HEX]]: forge those fields.
sb_uid() {
	echo 1 >/proc/sys/vm/drop_caches
	python3 - "$(dirname "$0")" "$@" <<'PY'
import os, struct, sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import SB, SB_FIELDS, crc32c
dev, uid, typ = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
fd = os.open(dev, os.O_RDWR | os.O_SYNC)
sb = bytearray(os.pread(fd, 512, 0))
f = dict(zip(SB_FIELDS, SB.unpack_from(sb, 0)))
struct.pack_into("<I", sb, 16, f["compat"] | 1)
off = SB.size
struct.pack_into("<16sIIQ", sb, off, uid.ljust(16, b"\0"), len(uid), typ, 0)
if len(sys.argv) > 4:
    struct.pack_into("<Q", sb, 56, int(sys.argv[4]))
if len(sys.argv) > 5:
    struct.pack_into("<16s", sb, 40, bytes.fromhex(sys.argv[5]))
struct.pack_into("<I", sb, 508, crc32c(0xFFFFFFFF, bytes(sb[:508])))
os.pwrite(fd, bytes(sb), 0)
os.close(fd)
PY
	echo 1 >/proc/sys/vm/drop_caches
}
eui=0123456789abcdef
dd if=/dev/zero of="$ssd" bs=1M count=$META_MB oflag=direct status=none
dm_create sp "0 $len ssdprio $hdd $ssd 3 format evict_wait 60000" >/dev/null
stamp down 7 write
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks before the downgrade"
dm_remove sp
sb_uid "$ssd" "$eui" 2
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "origin disk: *id $eui (designator type 2) at sector 0" ||
	fail "forged disk id not shown: $("$REPO/build/ssdprio-tool" show "$ssd")"
# Another size: nothing tells this origin from another, refused.
sb_uid "$ssd" "$eui" 2 $((len + 8))
refused sp "0 $len ssdprio $hdd $ssd" "origin disk id unreadable here, and size or start differs"
refused sp "0 $len ssdprio $hdd $ssd 1 format" "origin disk id unreadable here, and size or start differs"
# The same size and start: taken, with a word in dmesg, the dirty blocks kept.
sb_uid "$ssd" "$eui" 2 "$len"
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" >/dev/null
dmesg | grep -q "cannot read the origin disk id recorded at format ($eui, type 0x2): taken as the origin by its size and start" ||
	fail "no word of the unreadable disk id: $(dmesg | grep ssdprio)"
assert_eq "$(status_get sp meta_state)" clean "the cache loads after the downgrade"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "its dirty blocks kept"
stamp down 7 verify
dm_remove sp
# The recorded id is kept for the kernel that can read it.
"$REPO/build/ssdprio-tool" show "$ssd" | grep -q "origin disk: *id $eui (designator type 2)" ||
	fail "the disk id was not kept: $("$REPO/build/ssdprio-tool" show "$ssd")"
# With the table's origin_id the size may differ (a grown origin).
oid=00112233445566778899aabbccddeeff
sb_uid "$ssd" "$eui" 2 $((len - 8)) "$oid"
refused sp "0 $len ssdprio $hdd $ssd" "origin_id differs|origin_id this table lacks"
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 4 origin_id $oid evict_wait 60000" >/dev/null
dmesg | grep -q "taken as the origin by its origin_id" ||
	fail "no word of the unreadable disk id: $(dmesg | grep ssdprio)"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks kept by origin_id"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
# A DM or partition UUID missing is another device, not an older kernel.
sb_uid "$ssd" 00112233445566778899aabbccddeeff $((0x100)) "$len" 00000000000000000000000000000000
refused sp "0 $len ssdprio $hdd $ssd" "origin disk id differs"
log "ok"
