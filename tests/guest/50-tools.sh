#!/bin/bash
# ssdprio-tool against caches the module wrote: `show` agrees with what
# `dmsetup status` said before the remove and `check` passes; a damaged
# record copy is reported as torn and the other copy is used, as the kernel
# does (the kernel's load agrees); `table` recreates the device warm; `wipe`
# refuses a live or dirty cache, works after flush_dirty, and the cache is
# then refused as blank; the udev rule activates an ssdpriotab entry when
# its disks appear (by-id paths, virtio disks) and leaves a blank cache alone.
# timeout: 400
# disks: tools_hdd:64M tools_ssd:32M
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"

T=$(mktemp -d)
RULE=/run/udev/rules.d/63-ssdprio.rules
cleanup() {
	if [[ -e $RULE ]]; then
		rm -f "$RULE"
		udevadm control --reload 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# The JSON of `show --json --sets` has one top-level key per line and one set
# per line: awk reads it (python3 costs seconds per start under TCG).
# j FILE KEY: a top-level value (strings without quotes; true/false/null).
j() {
	awk -v k="\"$2\":" '$1 == k { v = $2; sub(/,$/, "", v); gsub(/"/, "", v); print v; exit }' "$1"
}
# shellcheck disable=SC2016 # awk code
AWK_F='function f(k,  i, v) { i = index($0, "\"" k "\": "); if (!i) return ""
	v = substr($0, i + length(k) + 4); sub(/[,}].*/, "", v); gsub(/"/, "", v); return v }'
# set_field FILE CSET KEY: a field of one set.
set_field() {
	awk -v c="$2" -v k="$3" "$AWK_F"' /"cset": / && f("cset") == c { print f(k); exit }' "$1"
}
# show_json DEV NAME: `show --json --sets DEV` into $T/NAME.json (must exit 0).
show_json() {
	"$TOOL" show --json --sets "$1" >"$T/$2.json" || fail "show --json $1 failed"
	cp "$T/$2.json" "$RESULTS_DIR/50-tools-$2.json" 2>/dev/null || true
}
# flip DEV BYTE: invert bits of one byte, with direct I/O (the page cache of
# the device may be stale: the kernel writes it with bios).
flip() {
	local dev=$1 blk=$(($2 / 4096)) off=$(($2 % 4096)) b
	dd if="$dev" of="$T/blk" bs=4096 skip=$blk count=1 iflag=direct status=none
	b=$(od -An -tu1 -j "$off" -N1 "$T/blk")
	# shellcheck disable=SC2059 # the format is the byte
	printf "\\x$(printf %02x $((b ^ 0x5a)))" |
		dd of="$T/blk" bs=1 seek="$off" conv=notrunc status=none
	dd if="$T/blk" of="$dev" bs=4096 seek=$blk count=1 oflag=direct conv=notrunc status=none
}
# expect_rc RC CMD...: run CMD, its stderr into $T/err, and check its exit status.
expect_rc() {
	local want=$1 rc=0
	shift
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[[ $rc == "$want" ]] || fail "'$*' exited $rc, expected $want: $(cat "$T/out" "$T/err")"
}

load_module
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")

# --- gen-origin-id, a blank cache --------------------------------------------------
id=$("$TOOL" gen-origin-id)
[[ $id =~ ^[0-9a-f]{32}$ ]] || fail "gen-origin-id printed '$id'"
[[ $("$TOOL" gen-origin-id) != "$id" ]] || fail "gen-origin-id gave the same id twice"
expect_rc 2 "$TOOL" show "$ssd"
grep -q blank "$T/out" || fail "show on a blank cache: $(cat "$T/out")"
expect_rc 2 "$TOOL" check "$ssd"

# --- format, write, remove: show agrees with the status ---------------------------
dm_create sp "0 $len ssdprio $hdd $ssd 9 format set_size 128 origin_id $id evict_wait 60000 evict_max_wait 0" >/dev/null
# The device's first and last 2 MiB valid, so that udev's probe of every new
# table hits the cache instead of promoting (which would change the records).
dd if=/dev/urandom of=/dev/mapper/sp bs=1M count=2 oflag=direct status=none
dd if=/dev/urandom of=/dev/mapper/sp bs=1M seek=62 count=2 oflag=direct status=none
# Two rounds over the same 8 MiB, each ending with a flush (a commit): most
# record sectors then have a good record in both copies, the newer with more blocks.
wr() {
	fio_run --name="w$1" --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
		--offset=2M --size=8M --io_size=2M --randrepeat=0 --randseed="$1" \
		--verify=crc32c --ioengine=psync --end_fsync=1 "${@:2}" >/dev/null
}
wr 1
wr 2
# A cold read is promoted: valid, clean blocks (placed apart from the
# written ranges, whose dirty blocks would keep it out of shared sets).
v0=$(status_get sp valid_blocks)
cold=$(range_apart "$ssd" 4 16 0:10 62:2)
dd if=/dev/mapper/sp of=/dev/null bs=1M skip="$cold" count=4 iflag=direct status=none
wait_status sp valid_blocks -ge $((v0 + 1024)) 60
valid=$(status_get sp valid_blocks)
dirty=$(status_get sp dirty_blocks)
mapped=$(status_get sp mapped_sets)
total=$(status_get sp total_sets)
log "status before remove: valid $valid dirty $dirty mapped $mapped of $total"
assert_ge $((valid - dirty)) 1024 "clean blocks from the promotion"
expect_rc 1 "$TOOL" wipe "$ssd"
grep -q "in use" "$T/err" || fail "wipe of a live cache: $(cat "$T/err")"
show_json "$ssd" live
assert_eq "$(j "$T/live.json" in_use)" true "show: a live cache is in use"
assert_eq "$(j "$T/live.json" clean)" false "show: a live cache is not clean"
dm_remove sp

"$TOOL" show "$ssd" >"$T/show.txt" || fail "show failed"
cp "$T/show.txt" "$RESULTS_DIR/50-tools-show.txt" 2>/dev/null || true
show_json "$ssd" s0
assert_eq "$(j "$T/s0.json" superblock)" ok "superblock"
assert_eq "$(j "$T/s0.json" clean)" true "clean after remove"
assert_eq "$(j "$T/s0.json" valid_blocks)" "$valid" "show: valid blocks"
assert_eq "$(j "$T/s0.json" dirty_blocks)" "$dirty" "show: dirty blocks"
assert_eq "$(j "$T/s0.json" mapped_sets)" "$mapped" "show: mapped sets"
assert_eq "$(j "$T/s0.json" total_sets)" "$total" "show: total sets"
assert_eq "$(j "$T/s0.json" set_blocks)" 128 "show: set_size"
assert_eq "$(j "$T/s0.json" origin_id)" "$id" "show: origin_id"
assert_eq "$(j "$T/s0.json" origin_sectors)" "$len" "show: origin size"
assert_eq "$(j "$T/s0.json" torn_records)" 0 "torn records"
grep -Eq "dirty blocks: +$dirty " "$T/show.txt" || fail "text show: $(cat "$T/show.txt")"
"$TOOL" check "$ssd" >"$T/check" || fail "check on a clean cache: $(cat "$T/check")"
log "$(cat "$T/check")"

# --- a damaged record copy ---------------------------------------------------------
# A cache set holding a tag of the range both fio rounds wrote (origin sets
# 4-19; f() sees its first tag) with a good record in both copies: its older
# copy is from an earlier commit of its 4 KiB metadata block (which a
# neighbour's change may have caused).
read -r cset copy < <(awk "$AWK_F"' /"cset": / && f("other") == "good" && f("oset") + 0 >= 4 &&
	f("oset") + 0 < 20 {
	print f("cset"), f("copy"); exit }' "$T/s0.json")
[[ -n $cset ]] || fail "no set with a good record in both copies"
rs=$(j "$T/s0.json" rec_sectors)
rb=$(j "$T/s0.json" rec_bytes)
rec_byte() { # rec_byte COPY: a byte of cache set $cset's record (its seq) in COPY
	echo $(((8 + $1 * rs) * 512 + cset * rb + 8))
}
log "damaging cache set $cset: copy $((1 - copy)) (older), then copy $copy (newer)"
# The kernel's load below rewrites the damaged record: keep the metadata
# (superblock and both copies) as it is now, to go on from it afterwards.
dd if="$ssd" of="$T/meta.img" bs=512 count=$((8 + 2 * rs)) iflag=direct status=none ||
	fail "saving the metadata failed"
# The older copy: reported, nothing else changes.
flip "$ssd" "$(rec_byte $((1 - copy)))"
show_json "$ssd" s1
assert_eq "$(j "$T/s1.json" torn_records)" 1 "torn: older copy damaged"
assert_eq "$(set_field "$T/s1.json" "$cset" copy)" "$copy" "newer copy still used"
assert_eq "$(j "$T/s1.json" valid_blocks)" "$valid" "valid blocks unchanged"
"$TOOL" check "$ssd" >/dev/null || fail "check fails on a torn record"
flip "$ssd" "$(rec_byte $((1 - copy)))"
# The newer copy: the older record is used, as by the kernel's load.
flip "$ssd" "$(rec_byte "$copy")"
show_json "$ssd" s2
"$TOOL" show "$ssd" >"$T/show2.txt"
grep -q "torn: 1 (first cache set $cset)" "$T/show2.txt" || fail "text show of a torn record: $(cat "$T/show2.txt")"
assert_eq "$(j "$T/s2.json" torn_records)" 1 "torn: newer copy damaged"
assert_eq "$(set_field "$T/s2.json" "$cset" copy)" $((1 - copy)) "the other copy is used"
# (the older record may hold fewer blocks, or others: what the kernel loads;
# good in one copy only, it may be a commit old: only its dirty blocks load)
"$TOOL" check "$ssd" >"$T/check2.txt" || fail "check fails on a torn record"
# check and show count the same blocks: what a load keeps
cvalid=$(sed -n 's/.* mapped, \([0-9]*\) valid blocks.*/\1/p' "$T/check2.txt")
assert_eq "$cvalid" "$(j "$T/s2.json" load_valid_blocks)" "check counts what a load keeps (torn)"
if [[ $cvalid != "$(j "$T/s2.json" valid_blocks)" ]]; then
	grep -q "; $cvalid once loaded" "$T/show2.txt" ||
		fail "show does not say what a load keeps: $(grep 'valid blocks' "$T/show2.txt")"
fi
line=$("$TOOL" table "$hdd" "$ssd" evict_wait 60000) || fail "table failed"
# read_alloc off: udev's probe of the new device must not copy in a block
# the load dropped
tline=$("$TOOL" table "$hdd" "$ssd" evict_wait 60000 read_alloc off) || fail "table failed"
dm_create sp "$tline" >/dev/null
kvalid=$(status_get sp valid_blocks)
assert_eq "$kvalid" "$(j "$T/s2.json" load_valid_blocks)" "kernel and show agree on valid blocks (torn)"
assert_eq "$(status_get sp dirty_blocks)" "$(j "$T/s2.json" load_dirty_blocks)" "kernel and show agree on dirty blocks (torn)"
assert_eq "$(status_get sp mapped_sets)" "$(j "$T/s2.json" load_mapped_sets)" "kernel and show agree on mapped sets (torn)"
dm_remove sp
# The load rewrote the set's record, to both copies: nothing torn is left.
show_json "$ssd" s3
assert_eq "$(j "$T/s3.json" torn_records)" 0 "rewritten by the load"
assert_eq "$(j "$T/s3.json" valid_blocks)" "$kvalid" "rewritten: what the kernel held"
dd if="$T/meta.img" of="$ssd" bs=512 oflag=direct status=none || fail "restoring the metadata failed"
show_json "$ssd" s3
assert_eq "$(j "$T/s3.json" torn_records)" 0 "repaired"
assert_eq "$(j "$T/s3.json" valid_blocks)" "$valid" "repaired: valid blocks"
assert_eq "$(j "$T/s3.json" dirty_blocks)" "$dirty" "repaired: dirty blocks"

# --- table recreates the device, warm ----------------------------------------------
log "table: $line"
[[ $line == "0 $len ssdprio $hdd $ssd 6 set_size 128 origin_id $id evict_wait 60000" ]] ||
	fail "unexpected table line: $line"
expect_rc 3 "$TOOL" table "$hdd" "$ssd" set_size 256
expect_rc 3 "$TOOL" table "$hdd" "$ssd" origin_id "$("$TOOL" gen-origin-id)"
expect_rc 1 "$TOOL" table "$hdd" "$ssd" write_policy sometimes
dm_create sp "$line" >/dev/null
assert_eq "$(status_get sp meta_state)" clean "warm load from the table line"
assert_eq "$(status_get sp valid_blocks)" "$valid" "valid blocks after table"
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks after table"
wr 2 --verify_only=1

# --- wipe ----------------------------------------------------------------------------
dm_remove sp
# What the cache holds dirty now (a promotion under a slow guest may have
# needed room: eviction writes dirty sets back).
show_json "$ssd" s35
dirty=$(j "$T/s35.json" dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks to keep the wipe from"
expect_rc 3 "$TOOL" wipe "$ssd"
grep -q "$dirty dirty blocks" "$T/err" || fail "wipe refusal should count $dirty dirty blocks: $(cat "$T/err")"
dm_create sp "$line" >/dev/null
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
show_json "$ssd" s4
assert_eq "$(j "$T/s4.json" dirty_blocks)" 0 "no dirty blocks after flush_dirty"
assert_eq "$(j "$T/s4.json" valid_blocks)" "$valid" "flushed blocks stay valid"
"$TOOL" wipe "$ssd" >/dev/null || fail "wipe of a clean cache"
expect_rc 2 "$TOOL" show "$ssd"
expect_rc 2 "$TOOL" table "$hdd" "$ssd"
grep -q blank "$T/err" || fail "table on a wiped cache: $(cat "$T/err")"
if dm_try_create sp "$line" >/dev/null 2>&1; then
	fail "a table without format loaded a wiped cache"
fi
dmesg | tail -20 | grep -q "Cache device is blank" || fail "kernel did not refuse the wiped cache as blank"

# --- udev activation from an ssdpriotab ---------------------------------------------
if ! _udev_running; then
	log "udev is not running (VM_UDEV=0): activation not tested"
	exit 0
fi
vh=/dev/disk/by-id/virtio-tools_hdd
vs=/dev/disk/by-id/virtio-tools_ssd
[[ -b $vh && -b $vs ]] || fail "no by-id links for the virtio disks"
# The disk images persist between runs: start from a blank cache.
"$TOOL" wipe --force --records "$vs" >/dev/null || fail "wipe --force --records"
vlen=$(sectors "$vh")
# lockout_clean off: udev's probes of the device's ends may meet the dirty
# blocks in their cache set; lock-out cleaning would write some back, and the
# counts are compared after activation.
dm_create u "0 $vlen ssdprio $vh $vs 5 format evict_wait 60000 lockout_clean off" >/dev/null
uw() {
	fio_run --name=u --filename=/dev/mapper/u --rw=randwrite --bs=4k --direct=1 \
		--offset=4M --size=8M --io_size=4M --randrepeat=0 --randseed=9 \
		--verify=crc32c --ioengine=psync "$@" >/dev/null
}
uw
uvalid=$(status_get u valid_blocks)
udirty=$(status_get u dirty_blocks)
dm_remove u

tab=$T/ssdpriotab
cat >"$tab" <<EOF
# name  origin_dev  cache_dev  [features...]
u $vh $vs evict_wait 60000 lockout_clean off  # a warm cache
bl $hdd $ssd                 # wiped above: blank
EOF
"$TOOL" activate --tab "$tab" --dry-run u >"$T/dry" || fail "activate --dry-run"
grep -Eq "^dmsetup create u --uuid SSDPRIO-[0-9a-f]{32} --table '0 $vlen ssdprio $vh $vs 4 evict_wait 60000 lockout_clean off'$" "$T/dry" ||
	fail "activate --dry-run: $(cat "$T/dry")"
printf 'x %s %s format\n' "$vh" "$vs" >"$T/badtab"
expect_rc 3 "$TOOL" activate --tab "$T/badtab" --dry-run
grep -q "never formats" "$T/err" || fail "format in an ssdpriotab: $(cat "$T/err")"

mkdir -p "${RULE%/*}"
sed -e "s|/usr/local/sbin/ssdprio-tool|$TOOL|" -e "s|/etc/ssdprio/ssdpriotab|$tab|g" \
	"$REPO/tools/udev/63-ssdprio.rules" >"$RULE"
udevadm control --reload || fail "udevadm control --reload"
kmsg0=$(dmesg | grep -c 'ssdprio-tool\[' || true)
udevadm trigger --action=add "$(readlink -f "$vh")" "$(readlink -f "$vs")" ||
	fail "udevadm trigger"
udevadm settle --timeout=60 || true
for _ in $(seq 100); do
	[[ -b /dev/mapper/u ]] && break
	sleep 0.2
done
[[ -b /dev/mapper/u ]] || fail "udev did not activate u; kernel log: $(dmesg | tail -20)"
assert_eq "$(status_get u meta_state)" clean "udev activation: warm"
assert_eq "$(status_get u valid_blocks)" "$uvalid" "udev activation: valid blocks"
assert_eq "$(status_get u dirty_blocks)" "$udirty" "udev activation: dirty blocks"
dmsetup table u | grep -q "evict_wait 60000" || fail "features from the ssdpriotab: $(dmsetup table u)"
uw --verify_only=1
# Again: the device is active, nothing happens.
udevadm trigger --action=add "$(readlink -f "$vs")"
udevadm settle --timeout=60 || true
assert_eq "$(dmsetup ls | grep -c '^u[[:space:]]')" 1 "one device after a repeated event"
# A blank cache is left alone, with a message.
udevadm trigger --action=add "$ssd"
udevadm settle --timeout=60 || true
dmsetup info bl >/dev/null 2>&1 && fail "udev activated a blank cache"
dmesg | grep 'ssdprio-tool\[' | tail -n +$((kmsg0 + 1)) >"$T/kmsg"
log "tool in the kernel log: $(tr '\n' '|' <"$T/kmsg")"
grep -q "u: activated" "$T/kmsg" || fail "no activation message in the kernel log"
grep -q "$ssd: cache is blank" "$T/kmsg" || fail "no message about the blank cache"
rm -f "$RULE"
udevadm control --reload

# --- deactivate: the boot unit's stop, a clean remove ----------------------------------
# Held open: refused after its retries, the device stays.
exec 9<"/dev/mapper/u"
expect_rc 3 "$TOOL" deactivate u
grep -q "u: not removed (.*): still in use?" "$T/err" || fail "deactivate of a held device: $(cat "$T/err")"
[[ -b /dev/mapper/u ]] || fail "deactivate of a held device removed it"
exec 9<&-
expect_rc 0 "$TOOL" deactivate u
grep -q "u: removed cleanly" "$T/err" || fail "deactivate: $(cat "$T/out" "$T/err")"
dmsetup info u >/dev/null 2>&1 && fail "deactivate left u"
[[ -e /dev/mapper/u ]] && fail "deactivate left /dev/mapper/u"
expect_rc 0 "$TOOL" deactivate u
grep -q "^u: not active" "$T/out" || fail "deactivate of an inactive device: $(cat "$T/out" "$T/err")"
"$TOOL" show "$vs" | grep -q "shutdown: *clean" || fail "not clean after deactivate: $("$TOOL" show "$vs")"

# --- wipe --force of a dirty cache ------------------------------------------------------
expect_rc 3 "$TOOL" wipe "$vs"
"$TOOL" wipe --force "$vs" >/dev/null 2>"$T/err" || fail "wipe --force: $(cat "$T/err")"
grep -q "discarding $udirty dirty blocks" "$T/err" || fail "wipe --force should say what it discards: $(cat "$T/err")"
expect_rc 2 "$TOOL" show "$vs"
log "ok"
