#!/bin/bash
# Stale metadata records and metadata I/O errors:
# - two records for one origin set (a torn commit): the loser's record is
#   rewritten free before the device serves I/O, so a second crash can never
#   find it alone (states crafted with `ssdprio-tool debug-record`);
# - a table shorter than the cache's origin: refused while dirty blocks lie
#   past its end, clean ones there are dropped and their records freed;
# - a read error in one record copy: the load uses the other copy;
# - a failed metadata write: flushes fail, I/O, suspend/resume and remove go on.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")

# sets_json DEV: "cset:oset:lost" of every mapped record on DEV, one a line
sets_of() {
	"$TOOL" show --json --sets "$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sets"]:
    print("%d:%d:%s" % (s["cset"], s["oset"], "lost" if s["lost"] else "won"))'
}
json_key() { "$TOOL" show --json "$1" | python3 -c "import json, sys; print(json.load(sys.stdin)['$2'])"; }

# --- two records for one origin set ----------------------------------------------------
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
dm_remove sp
# origin set 5: cset 0 mapped it first (map_seq 10), cset 1 later (20);
# origin set 7: cset 2 later (30), cset 3 first (25): losers on both sides.
"$TOOL" debug-record "$ssd" 0 5 10 4 0 >/dev/null || fail "debug-record"
"$TOOL" debug-record "$ssd" 1 5 20 4 4 >/dev/null || fail "debug-record"
"$TOOL" debug-record "$ssd" 2 7 30 8 8 >/dev/null || fail "debug-record"
"$TOOL" debug-record "$ssd" 3 7 25 8 0 >/dev/null || fail "debug-record"
assert_eq "$(sets_of "$ssd" | tr '\n' ' ')" "0:5:lost 1:5:won 2:7:won 3:7:lost " "crafted state"
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp meta_state)" recovered "load after the crafted crash"
assert_eq "$(status_get sp mapped_sets)" 2 "one set per origin set"
assert_eq "$(status_get sp dirty_blocks)" 12 "the winners' valid blocks, dirty (unclean)"
# right after the resume, with no I/O since: the losers are free on the SSD
assert_eq "$(sets_of "$ssd" | tr '\n' ' ')" "1:5:won 2:7:won " "losers' records on disk after resume"
dmesg | grep -q "stale metadata records rewritten as free" || fail "no message about the rewritten records"
# the rest of the double-crash scenario: the winners written back, shut
# down; only the winners' records are on the SSD
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
assert_eq "$(sets_of "$ssd" | tr '\n' ' ')" "1:5:won 2:7:won " "records after writeback and shutdown"
wipe() { dd if=/dev/zero of="$ssd" bs=1M count=4 oflag=direct status=none; }

# --- a table shorter than the cache's origin --------------------------------------------
wipe
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
dd if=/dev/urandom of=/dev/mapper/sp bs=1M seek=63 count=1 oflag=direct status=none
dd if=/dev/urandom of=/dev/mapper/sp bs=1M count=1 oflag=direct status=none
dm_remove sp
short=$((len - 2048))
dmesg -C
if dm_try_create sp "0 $short ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null 2>&1; then
	fail "a shorter table dropped dirty blocks past its end"
fi
dmesg | grep -q "shorter than the origin the cache was formatted for" ||
	fail "no message for the shorter table: $(dmesg | grep ssdprio)"
dmsetup info sp >/dev/null 2>&1 && dmsetup remove sp
# full length: flush them; then the shorter table drops the clean set and
# frees its record before it serves I/O
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp mapped_sets)" 2 "both sets kept by the full table"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
dm_create sp "0 $short ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp mapped_sets)" 1 "the clean set past the end dropped"
assert_eq "$(sets_of "$ssd" | cut -d: -f2 | tr '\n' ' ')" "0 " "its record freed at resume"
dm_remove sp

# --- a read error in one record copy --------------------------------------------------
wipe
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
dd if=/dev/urandom of=/dev/mapper/sp bs=1M seek=10 count=2 oflag=direct status=none
sum10() { dd if=/dev/mapper/sp bs=1M skip=10 count=2 iflag=direct status=none | sha256sum; }
sum=$(sum10)
dm_remove sp
rs=$(json_key "$ssd" rec_sectors)
ssz=$(sectors "$ssd")
newest=$("$TOOL" show --json --sets "$ssd" | python3 -c '
import json, sys; print(json.load(sys.stdin)["sets"][0]["copy"])')
mapped=$(json_key "$ssd" mapped_sets)
# errstack COPY: the cache with an error target over record copy COPY
errstack() {
	local at=$((8 + $1 * rs))
	dm_create ssdx "0 $at linear $ssd 0
$at $rs error
$((at + rs)) $((ssz - at - rs)) linear $ssd $((at + rs))" >/dev/null
}
for copy in $((1 - newest)) "$newest"; do
	errstack "$copy"
	dmesg -C
	dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdx 4 evict_wait 60000 read_alloc off" >/dev/null
	dmesg | grep -q "unreadable.*using the other copy" || fail "no message about the unreadable copy $copy"
	log "copy $copy unreadable: loaded, meta_state $(status_get sp meta_state), mapped_sets $(status_get sp mapped_sets)"
	if [[ $copy != "$newest" ]]; then
		assert_eq "$(status_get sp meta_state)" clean "older copy unreadable"
		assert_eq "$(status_get sp mapped_sets)" "$mapped" "the newest copy's records"
		assert_eq "$(sum10)" "$sum" "data"
		# --- the next write of that metadata block goes to the broken copy ---
		dmesg -C
		if dd if=/dev/urandom of=/dev/mapper/sp bs=4k count=1 seek=100 oflag=direct conv=fsync status=none 2>/dev/null; then
			fail "fsync succeeded although the metadata write failed"
		fi
		assert_eq "$(status_get sp meta_state)" failed "meta_state after a failed metadata write"
		dd if=/dev/urandom of=/dev/mapper/sp bs=4k count=16 seek=200 oflag=direct status=none ||
			fail "writes after the metadata failure"
		assert_eq "$(sum10)" "$sum" "reads after the metadata failure"
		dmsetup suspend sp || fail "suspend after the metadata failure"
		dmsetup resume sp || fail "resume after the metadata failure"
		dd if=/dev/mapper/sp of=/dev/null bs=1M count=4 iflag=direct status=none || fail "reads after resume"
		assert_eq "$(status_get sp meta_state)" failed "still failed after resume"
	fi
	dm_remove sp
	dm_remove ssdx
done
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp meta_state)" recovered "a failed cache is not marked clean"
dm_remove sp
log "ok"
