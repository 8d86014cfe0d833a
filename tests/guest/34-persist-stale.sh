#!/bin/bash
# Stale and forged metadata records and metadata I/O errors:
# - a record whose copy checks out but contradicts itself (a tag placed in
#   another cache set, as a misdirected write would leave it) is a bad copy:
#   the load ignores it and serves the origin's data, never the SSD frames
#   it names; after a crash only dirty blocks are loaded, and the records
#   are rewritten without the dropped clean ones before a clean shutdown
#   (states crafted with `ssdprio-tool debug-record`);
# - a tag past the origin's end: with dirty blocks the table is refused,
#   clean ones are dropped; a table shorter than the cache's origin alike;
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

# sets_of DEV: "cset:oset:valid:dirty" of every tag in a believed record on DEV, one a line
sets_of() {
	"$TOOL" show --json --sets "$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sets"]:
    for t in s["tags"]:
        print("%d:%d:%d:%d" % (s["cset"], t["oset"], t["valid"], t["dirty"]))'
}
json_key() { "$TOOL" show --json "$1" | python3 -c "import json, sys; print(json.load(sys.stdin)['$2'])"; }
place() { "$TOOL" debug-placement "$ssd" "$1" | cut -d' ' -f2; }

# --- a misplaced tag, beside a good record ------------------------------------------------
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
dm_remove sp
nr_csets=$(json_key "$ssd" total_sets)
nr_osets=$(json_key "$ssd" origin_sets)
set_sectors=$(($(json_key "$ssd" set_blocks) * $(json_key "$ssd" block_sectors)))
at5=$((5 * set_sectors / 2048)) # MiB: origin set 5's first
# origin set 5's data on the origin, and something else in every SSD frame
dd if=/dev/urandom of="$hdd" bs=1M seek="$at5" count=1 oflag=direct status=none
data_start=$(json_key "$ssd" data_start)
# (data_start is a multiple of 1 MiB)
tr '\0' '\252' </dev/zero | dd of="$ssd" bs=1M seek=$((data_start / 2048)) \
	count=$((($(sectors "$ssd") - data_start) / 2048)) iflag=fullblock oflag=direct status=none
sum5() { dd if="$1" bs=1M skip="$at5" count=1 iflag=direct status=none | sha256sum; }
want5=$(sum5 "$hdd")
# origin set 5 in the cache set after its own, 16 blocks, 8 dirty
bad=$((($(place 5) + 1) % nr_csets))
"$TOOL" debug-record "$ssd" "$bad" 0 5 0 16 8 >/dev/null 2>&1 &&
	fail "debug-record wrote a misplaced tag without --allow-misplaced"
"$TOOL" debug-record --allow-misplaced "$ssd" "$bad" 0 5 0 16 8 >/dev/null || fail "debug-record"
# a good record: origin set 7 in its own cache set, 10 blocks, 4 dirty
good=$(place 7)
[[ $good != "$bad" ]] || fail "origin sets 5 and 7 picked badly (cache set $good)"
"$TOOL" debug-record "$ssd" "$good" 3 7 0 10 4 >/dev/null || fail "debug-record"
assert_eq "$(sets_of "$ssd" | tr '\n' ' ')" "$good:7:10:4 " "crafted state (the misplaced record is no one's)"
assert_eq "$(json_key "$ssd" errors)" 1 "the tool reports the inconsistent record"
"$TOOL" check "$ssd" >/dev/null && fail "check passed a misplaced tag"
dmesg -C
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp meta_state)" recovered "load after the crafted crash"
assert_eq "$(status_get sp mapped_sets)" 1 "only the good record"
# unclean: the good record's dirty blocks are kept, its clean ones dropped
assert_eq "$(status_get sp dirty_blocks)" 4 "the good record's dirty blocks"
assert_eq "$(status_get sp valid_blocks)" 4 "clean blocks dropped after a crash"
assert_eq "$(sum5 /dev/mapper/sp)" "$want5" "origin set 5 read from the origin, not from the misplaced frames"
dm_remove sp
assert_eq "$(json_key "$ssd" clean)" True "clean shutdown"
assert_eq "$(sets_of "$ssd" | tr '\n' ' ')" "$good:7:4:4 " "records after a clean shutdown: dropped blocks gone"
assert_eq "$(json_key "$ssd" dirty_blocks)" 4 "dirty blocks kept across the shutdown"

# --- a tag past the origin's end ----------------------------------------------------
past=$nr_osets
pc=$(place "$past")
# clean: dropped at load, the table goes live
"$TOOL" debug-record "$ssd" "$pc" 14 "$past" 20 2 0 >/dev/null || fail "debug-record"
"$TOOL" show --json "$ssd" | grep -q '"kind": "past_origin", "severity": "warning"' ||
	fail "the tool does not warn about a clean tag past the origin"
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp dirty_blocks)" 4 "still origin set 7's dirty blocks"
assert_eq "$(sum5 /dev/mapper/sp)" "$want5" "origin set 5 still from the origin"
dm_remove sp
sets_of "$ssd" | grep -q ":$past:" && fail "the clean tag past the origin is still recorded"
# dirty: the table is refused, the cache left as it was
"$TOOL" debug-record "$ssd" "$pc" 14 "$past" 20 2 1 >/dev/null || fail "debug-record"
"$TOOL" show --json "$ssd" | grep -q '"kind": "past_origin", "severity": "error"' ||
	fail "the tool does not report a dirty tag past the origin as an error"
before=$(dd if="$ssd" bs=1M count=1 iflag=direct status=none | md5sum)
dmesg -C
if dm_try_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null 2>&1; then
	fail "a table went live over dirty blocks past the origin's end"
fi
dmesg | grep -q "ssdprio" || fail "no kernel message for the refused table"
dmsetup info sp >/dev/null 2>&1 && dmsetup remove sp
assert_eq "$(dd if="$ssd" bs=1M count=1 iflag=direct status=none | md5sum)" "$before" \
	"a refused table leaves the metadata alone"
wipe() { dd if=/dev/zero of="$ssd" bs=1M count=4 oflag=direct status=none; }

# --- a table shorter than the cache's origin --------------------------------------------
wipe
dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
dd if=/dev/urandom of=/dev/mapper/sp bs=1M seek=63 count=1 oflag=direct status=none
dd if=/dev/urandom of=/dev/mapper/sp bs=1M count=1 oflag=direct status=none
dm_remove sp
short=$((len - set_sectors)) # one set shorter: the last origin set past its end
dm_refused sp "0 $short ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" \
	"shorter than the origin the cache was formatted for"
# full length: flush them; then the shorter table drops the clean set and
# frees its record before it serves I/O
dm_create sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp tags_used)" 2 "both origin sets kept by the full table"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
dm_create sp "0 $short ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" >/dev/null
assert_eq "$(status_get sp tags_used)" 1 "the clean origin set past the end dropped"
assert_eq "$(sets_of "$ssd" | cut -d: -f2 | tr '\n' ' ')" "0 " "its tag freed at resume"
dm_remove sp

# --- a read error in one record copy --------------------------------------------------
sum10() { dd if=/dev/mapper/sp bs=1M skip=10 count=2 iflag=direct status=none | sha256sum; }
# records: a cache with 2 MiB of dirty data, shut down cleanly; sets sum,
# rs, ssz, newest (the copy of cache set 0's newest record) and mapped.
records() {
	wipe
	dm_create sp "0 $len ssdprio $hdd $ssd 5 format evict_wait 60000 read_alloc off" >/dev/null
	dd if=/dev/urandom of=/dev/mapper/sp bs=1M seek=10 count=2 oflag=direct status=none
	sum=$(sum10)
	dm_remove sp
	rs=$(json_key "$ssd" rec_sectors)
	ssz=$(sectors "$ssd")
	newest=$("$TOOL" show --json --sets "$ssd" | python3 -c '
import json, sys; print(json.load(sys.stdin)["sets"][0]["copy"])')
	mapped=$(json_key "$ssd" mapped_sets)
}
# errstack COPY: the cache with an error target over record copy COPY
errstack() {
	local at=$((8 + $1 * rs))
	dm_create ssdx "0 $at linear $ssd 0
$at $rs error
$((at + rs)) $((ssz - at - rs)) linear $ssd $((at + rs))" >/dev/null
}
records
for older in 1 0; do
	# A metadata failure ends the older copy's turn, and a cache whose
	# metadata failed is never loaded again: the newest's turn starts anew.
	((older)) || records
	copy=$newest
	((older)) && copy=$((1 - newest))
	errstack "$copy"
	dmesg -C
	dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdx 4 evict_wait 60000 read_alloc off" >/dev/null
	dmesg | grep -q "unreadable.*using the other copy" || fail "no message about the unreadable copy $copy"
	log "copy $copy unreadable: loaded, meta_state $(status_get sp meta_state), mapped_sets $(status_get sp mapped_sets)"
	if ((older)); then
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
	((older)) || continue
	# Its records fell behind the device while it served on: never loaded
	# again, even with both copies readable.
	dm_refused sp "0 $len ssdprio $hdd $ssd 4 evict_wait 60000 read_alloc off" \
		"metadata writes failed while it was in use"
	"$TOOL" show "$ssd" | grep -q "failed: *yes" || fail "ssdprio-tool show: $("$TOOL" show "$ssd")"
done
wipe
log "ok"
