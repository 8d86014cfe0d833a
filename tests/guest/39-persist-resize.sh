#!/bin/bash
# An origin with an identity of its own (here a dm-linear with a DM UUID, as
# an LVM LV) may change size under its cache: grown live (lvextend, then a
# reload with the longer length) or between loads, the cache is accepted with
# its dirty data and records the new size; `ssdprio-tool table` gives the new
# length.  Shrunk below dirty data: refused, nothing lost; shrunk below clean
# sets only: accepted, those dropped.  An origin known by its size alone is
# still refused at another size (30-persist-refuse).
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
load_module
hdd=$(make_hdd hdd 160 0 32)
ssd=$(make_ssd ssd 24)
M=2048	# sectors per MiB
origin=/dev/mapper/og

# og MIB: (re)load "og", a linear over the first MIB MiB of the null_blk,
# always with the same DM UUID (what lvextend/lvreduce do to an LV).
og() {
	local t="0 $(($1 * M)) linear $hdd 0"
	if dmsetup info og >/dev/null 2>&1; then
		dmsetup reload og --table "$t" && dmsetup resume og || fail "og $1"
	else
		dmsetup create og --uuid LVM-ssdprio-resize-test --table "$t" || fail "og $1"
	fi
	_settle
	dmsetup mknodes og
	assert_eq "$(sectors "$origin")" "$(($1 * M))" "og size"
}
# region NAME START_MIB SEED [--verify_only=1]: 8 MiB of verified 4 KiB writes.
region() {
	local name=$1 start=$2 seed=$3
	shift 3
	fio_run --name="$name" --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
		--offset=$((start))M --size=8M --randrepeat=0 --randseed="$seed" \
		--verify=crc32c --verify_fatal=1 --ioengine=psync "$@" >/dev/null
}
# Dirty blocks are counted across reloads: nothing may write them back
# meanwhile (a long evict_wait, and none under load either: evict_max_wait 0).
sp_table() { echo "0 $(($1 * M)) ssdprio $origin $ssd 4 evict_wait 60000 evict_max_wait 0"; }

og 64
dm_create sp "0 $((64 * M)) ssdprio $origin $ssd 5 format evict_wait 60000 evict_max_wait 0" >/dev/null
region a 8 1
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks in region a"

# --- grown live: lvextend, then a reload with the longer length -------------------------
og 96
dmesg -C
dmsetup reload sp --table "$(sp_table 96)" && dmsetup resume sp || fail "reload over the grown origin"
dmesg | grep -q "origin resized from $((64 * M)) to $((96 * M)) sectors" ||
	fail "no resize message: $(dmesg | grep ssdprio)"
assert_eq "$(sectors /dev/mapper/sp)" "$((96 * M))" "the device's size after the reload"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks across the grow"
region a 8 1 --verify_only=1
region b 70 2		# past the old end
dm_remove sp
"$TOOL" show "$ssd" | grep -q "origin: *$((96 * M)) sectors" ||
	fail "the new size is not recorded: $("$TOOL" show "$ssd")"
log "grown live: 64 -> 96 MiB, $dirty dirty blocks kept"

# --- grown between loads: the tool's table has the new length ---------------------------
og 128
line=$("$TOOL" table "$origin" "$ssd" evict_wait 60000 evict_max_wait 0) || fail "ssdprio-tool table over the grown origin"
[[ $line == "0 $((128 * M)) ssdprio $origin $ssd "* ]] || fail "table line: $line"
dm_create sp "$line" >/dev/null
region a 8 1 --verify_only=1
region b 70 2 --verify_only=1
dm_remove sp

# --- shrunk below dirty data: refused, nothing lost --------------------------------------
og 72			# region b's dirty blocks lie past 72 MiB
dm_refused sp "$(sp_table 72)" "dirty blocks"
# The new end in the middle of an origin set (4 MiB): its blocks are judged
# one by one, dirty ones past the end refused.
og 74
dm_refused sp "$(sp_table 74)" "dirty blocks"
og 128
dm_create sp "$(sp_table 128)" >/dev/null
region a 8 1 --verify_only=1
region b 70 2 --verify_only=1

# Shrunk under a live cache (lvreduce, then a reload): the new table's first
# resume is refused and it stays live, suspended, with its metadata never
# loaded; a flush_dirty sent to it (what its refusal message suggests) may
# start nothing until a table that loads replaces it.
dmsetup suspend sp || fail "suspend sp"
og 72
dmsetup reload sp --table "$(sp_table 72)" || fail "reload sp at 72 MiB"
if dmsetup resume sp 2>/dev/null; then
	fail "a reload over an origin shrunk below dirty data was resumed"
fi
dmsetup message sp 0 flush_dirty 2>/dev/null || true
sleep 3
assert_eq "$(status_get sp blocks_written_back)" 0 "blocks written back by a table whose first resume was refused"
og 128
dmsetup reload sp --table "$(sp_table 128)" && dmsetup resume sp || fail "reload sp at 128 MiB"
region a 8 1 --verify_only=1
region b 70 2 --verify_only=1
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 300
dm_remove sp

# --- shrunk into a set of clean blocks: those past the end dropped -----------------------
# A clean copy kept past the end would be served again once the origin grows
# back, over whatever was written there meanwhile.
og 74
dm_create sp "$(sp_table 74)" >/dev/null
dm_remove sp
og 128
dd if="$origin" of=/tmp/39-b75 bs=4096 skip=$((75 * 256)) count=1 iflag=direct status=none ||
	fail "read of region b's block at 75 MiB"
blk_put "$origin" $((75 * 256)) z || fail "write past the old end, on the origin"
dm_create sp "$(sp_table 128)" >/dev/null
assert_eq "$(blk_what /dev/mapper/sp $((75 * 256)))" z "the block at 75 MiB after a shrink to 74 and a grow (region b's data: a clean copy past the end was kept)"
dd if=/tmp/39-b75 of=/dev/mapper/sp bs=4096 seek=$((75 * 256)) count=1 oflag=direct conv=notrunc status=none ||
	fail "region b's block at 75 MiB put back"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 300
dm_remove sp

# --- shrunk below clean sets only: accepted, those dropped --------------------------------
og 64
dm_create sp "$(sp_table 64)" >/dev/null
region a 8 1 --verify_only=1
assert_eq "$(status_get sp dirty_blocks)" 0 "dirty blocks after the shrink"
dm_remove sp
"$TOOL" show "$ssd" | grep -q "origin: *$((64 * M)) sectors" ||
	fail "the shrunk size is not recorded: $("$TOOL" show "$ssd")"
og 128
fio_run --name=b --filename="$origin" --rw=randwrite --bs=4k --direct=1 --offset=70M --size=8M \
	--randrepeat=0 --randseed=2 --verify=crc32c --verify_fatal=1 --ioengine=psync \
	--verify_only=1 >/dev/null
dmsetup remove og
log "ok"
