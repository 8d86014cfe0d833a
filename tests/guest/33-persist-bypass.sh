#!/bin/bash
# A "cache off" table bypasses the cache: over a cache of ours for the same
# origin it is refused while the cache holds dirty blocks (an unclean
# superblock counts), accepted with "force" (refused without the cache's
# origin_id, which says whose it is); once one went live, the next
# caching table starts the cache empty (its blocks may be older than the
# origin's) and never writes them back over what was written meanwhile.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")
META_MB=4

meta_sum() { dd if="$1" bs=1M count=$META_MB iflag=direct status=none | sha256sum; }
pattern() { yes "$1" | head -c 4M; }   # 4 MiB of one repeated line
head4() { dd if="$1" bs=1M count=4 iflag=direct status=none | sha256sum | cut -d' ' -f1; }

# refused NAME TABLE PATTERN: the table fails with PATTERN in the kernel log,
# the cache's metadata area unchanged.
refused() {
	local name=$1 table=$2 pat=$3 before msg
	before=$(meta_sum "$ssd")
	dmesg -C
	if dm_try_create "$name" "$table" 2>/dev/null; then
		fail "table accepted: $table"
	fi
	msg=$(dmesg | grep 'ssdprio' || true)
	grep -qE "$pat" <<<"$msg" || fail "expected '$pat' for: $table; kernel said: $msg"
	log "refused: $(grep -E "$pat" <<<"$msg" | tail -1 | sed 's/^\[[^]]*\] //')"
	[[ $(meta_sum "$ssd") == "$before" ]] || fail "cache device written by a refused table: $table"
	dmsetup info "$name" >/dev/null 2>&1 && dmsetup remove "$name"
	return 0
}

# --- dirty blocks in the cache: cache off refused ---------------------------------------
dm_create sp "0 $len ssdprio $hdd $ssd 3 format evict_wait 60000" >/dev/null
pattern A | dd of=/dev/mapper/sp bs=1M oflag=direct status=none
sum_a=$(head4 /dev/mapper/sp)
assert_ge "$(status_get sp dirty_blocks)" 1024 "A is dirty in the cache"
# live (superblock unclean): refused too
refused off "0 $len ssdprio $hdd $ssd 2 cache off" "live or was not shut down cleanly"
dm_remove sp
"$TOOL" show "$ssd" | grep -q "shutdown: *clean$" || fail "clean shutdown with dirty blocks not recorded: $("$TOOL" show "$ssd")"
refused off "0 $len ssdprio $hdd $ssd 2 cache off" "Cache holds dirty blocks of this origin"

# --- force: the dirty blocks are given up; the cache is never trusted again --------------
dm_create off "0 $len ssdprio $hdd $ssd 3 cache off force" >/dev/null
"$TOOL" show "$ssd" | grep -q "bypassed: *yes" || fail "cache not marked bypassed at resume: $("$TOOL" show "$ssd")"
# while it is bypassed, no caching device may use the cache
refused sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" "(Origin|Cache) device is in use by another ssdprio device"
pattern B | dd of=/dev/mapper/off bs=1M oflag=direct status=none
sum_b=$(head4 /dev/mapper/off)
[[ $sum_b != "$sum_a" ]] || fail "patterns A and B are the same"
dm_remove off
# A cache already bypassed has nothing left to protect: cache off again is
# accepted as it is, without force.
dm_create off "0 $len ssdprio $hdd $ssd 2 cache off" >/dev/null
dm_remove off
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 100 read_alloc off" >/dev/null
dmesg | grep -q "bypassed by a 'cache off' table" || fail "no message about the bypassed cache: $(dmesg | grep ssdprio)"
assert_eq "$(status_get sp meta_state)" formatted "a bypassed cache starts empty"
assert_eq "$(status_get sp valid_blocks)" 0 "nothing of the bypassed cache is used"
assert_eq "$(head4 /dev/mapper/sp)" "$sum_b" "reads see what cache off wrote"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
dm_remove sp
assert_eq "$(head4 "$hdd")" "$sum_b" "the origin keeps what cache off wrote"

# --- no dirty blocks: cache off needs no force, and still invalidates -------------------
dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" >/dev/null
pattern C | dd of=/dev/mapper/sp bs=1M oflag=direct status=none
sum_c=$(head4 /dev/mapper/sp)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_ge "$(status_get sp valid_blocks)" 1024 "C stays cached, clean"
dm_remove sp
"$TOOL" show "$ssd" | grep -q "shutdown: *clean, no dirty blocks" || fail "no-dirty shutdown not recorded: $("$TOOL" show "$ssd")"
dm_create off "0 $len ssdprio $hdd $ssd 2 cache off" >/dev/null
assert_eq "$(head4 /dev/mapper/off)" "$sum_c" "cache off reads the written-back data"
pattern D | dd of=/dev/mapper/off bs=1M oflag=direct status=none
sum_d=$(head4 /dev/mapper/off)
dm_remove off
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp valid_blocks)" 0 "clean blocks of a bypassed cache are not used either"
assert_eq "$(head4 /dev/mapper/sp)" "$sum_d" "no stale clean block served"
dm_remove sp

# --- a cache of another origin is none of cache off's business ---------------------------
hdd2=$(make_hdd hdd2 80 0 32)
dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" >/dev/null
pattern E | dd of=/dev/mapper/sp bs=1M oflag=direct status=none
dm_remove sp
before=$(meta_sum "$ssd")
dm_create off "0 $(sectors "$hdd2") ssdprio $hdd2 $ssd 2 cache off" >/dev/null
dm_remove off
[[ $(meta_sum "$ssd") == "$before" ]] || fail "cache off over another origin touched the cache"
dm_create sp "0 $len ssdprio $hdd $ssd 2 evict_wait 60000" >/dev/null
assert_ge "$(status_get sp dirty_blocks)" 1024 "the other origin's cache kept its dirty blocks"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp

# --- a cache with an origin_id: a cache off table without it cannot tell whose ------------
# origin it is (null_blk has no identity of its own), so it is refused, not left
# alone while the origin is written around the cache; with the origin_id it works.
"$TOOL" wipe "$ssd" >/dev/null || fail "wipe"
id=$("$TOOL" gen-origin-id)
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 origin_id $id" >/dev/null
pattern F | dd of=/dev/mapper/sp bs=1M oflag=direct status=none
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
refused off "0 $len ssdprio $hdd $ssd 2 cache off" "has an origin_id this table lacks"
refused off "0 $len ssdprio $hdd $ssd 3 cache off force" "has an origin_id this table lacks"
dm_create off "0 $len ssdprio $hdd $ssd 4 cache off origin_id $id" >/dev/null
dm_remove off
"$TOOL" show "$ssd" | grep -q "bypassed: *yes" || fail "cache off with the origin_id did not mark the cache: $("$TOOL" show "$ssd")"
log "ok"
