#!/bin/bash
# Taking the cache away from a live device and giving it back, under a
# mounted file system with a writer running: `ssdprio-tool detach` drains,
# swaps in a linear table over the origin and leaves the cache marked out
# of date; `attach` gives the device an empty cache again.  Every file
# written before, during and after reads back right through each table
# and from the origin alone.  The kernel's guard under detach: a "cache
# off" table loaded over the device's own caching table resumes only if
# that table's suspend left no dirty block (else the caching table comes
# back, its dirty data intact); a cache not marked out of date is refused
# by attach (the origin was written around it).
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"

MNT=/mnt/detach
T=$(mktemp -d)
cleanup() {
	[[ -n ${writer:-} ]] && kill "$writer" 2>/dev/null
	umount "$MNT" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

load_module
hdd=$(make_hdd hdd 256 1000000 4)
ssd=$(make_ssd ssd 48)
len=$(sectors "$hdd")
id=$("$TOOL" gen-origin-id)

# writer TAG N: N files of 64-256 KiB of random data under $MNT/TAG,
# their sums in $T/TAG.sums as each is complete (written and fsynced).
# writer TAG N: N files, one after another, each synced; fewer once
# $T/TAG.stop exists (the detach or attach it ran beside is over) and it has
# written ten more since.
writer() {
	local tag=$1 n=$2 i f left=10
	mkdir -p "$MNT/$tag"
	for ((i = 0; i < n; i++)); do
		if [[ -e $T/$tag.stop ]]; then
			((left-- > 0)) || break
		fi
		f=$MNT/$tag/f$i
		head -c $(((RANDOM % 4 + 1) * 65536)) /dev/urandom >"$f.tmp" || return 1
		sync "$f.tmp" && mv "$f.tmp" "$f" && sync "$MNT/$tag" || return 1
		sha256sum "$f" >>"$T/$tag.sums"
	done
}
# verify TAG...: every file listed reads back as written (not from the page
# cache: it is dropped first).
verify() {
	local tag
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for tag in "$@"; do
		[[ -s $T/$tag.sums ]] || fail "verify $tag: no files were written"
		sha256sum --quiet -c "$T/$tag.sums" || fail "files of '$tag' differ from what was written"
	done
}
table_type() { dmsetup table sp | awk '{ print $3 }'; }
# refused_at_resume FEATURES PATTERN: a cache-off table over sp's origin and
# cache (FEATURES with their count) loads over the live caching table, and
# its resume is refused with PATTERN in the kernel log.
refused_at_resume() {
	dmesg -C
	dmsetup reload sp --table "0 $len ssdprio ${caching%% *} $(cut -d' ' -f2 <<<"$caching") $1" ||
		fail "the cache-off table ($1) was refused at load"
	if dmsetup resume sp 2>/dev/null; then
		fail "cache off ($1) resumed"
	fi
	dmesg | grep -q "$2" || fail "no reason in the kernel log: $(dmesg | grep ssdprio)"
}
back_to_caching() {
	dmsetup reload sp --table "0 $len ssdprio $caching" && dmsetup resume sp ||
		fail "the caching table could not come back"
}

# --- the kernel's guard: cache off over the live caching table ----------------------------
# lockout_clean off: udev's probes of the device's ends, after each table
# change, may meet the dirty blocks below in their cache set; lock-out
# cleaning would then write some back, and the dirty count is compared.
"$TOOL" create sp "$hdd" "$ssd" write_policy writeback evict_wait 60000 dirty_target 100 lockout_clean off origin_id "$id" >/dev/null ||
	fail "ssdprio-tool create"
caching=$(dmsetup table sp | cut -d' ' -f4-)
fio_run --name=d --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 --size=8M \
	--randrepeat=0 --randseed=5 --verify=crc32c --ioengine=psync >/dev/null
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "dirty blocks before the cache-off reload"
refused_at_resume "4 cache off origin_id $id" "left dirty blocks"
"$TOOL" show "$ssd" | grep -q "bypassed: *yes" && fail "a refused cache off marked the cache bypassed"
back_to_caching
assert_eq "$(status_get sp dirty_blocks)" "$dirty" "dirty blocks after going back"
fio_run --name=d --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 --size=8M \
	--randrepeat=0 --randseed=5 --verify=crc32c --ioengine=psync --verify_only=1 >/dev/null
log "cache off over $dirty dirty blocks: refused at resume, caching table back, data intact"
# without the cache's origin_id, whose cache it is cannot be told: refused too
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 300
refused_at_resume "2 cache off" "origin_id this 'cache off' table lacks"
back_to_caching

# --- detach under a mounted file system and a writer ---------------------------------------
mkfs.ext4 -q -F /dev/mapper/sp || fail "mkfs"
mkdir -p "$MNT"
mount /dev/mapper/sp "$MNT" || fail "mount"
writer before 40 || fail "writer before"
assert_ge "$(status_get sp dirty_blocks)" 1 "dirty blocks before detach"
writer during 120 &
writer=$!
sleep 2
"$TOOL" detach --timeout 300 sp >"$T/out" 2>&1 || fail "detach: $(cat "$T/out")"
log "$(tail -1 "$T/out")"
grep -q "detached" "$T/out" || fail "detach said: $(cat "$T/out")"
touch "$T/during.stop"
assert_eq "$(table_type)" linear "table after detach"
"$TOOL" show "$ssd" | grep -q "bypassed: *yes" || fail "cache not marked out of date: $("$TOOL" show "$ssd")"
[[ -z $(ls "/sys/block/${ssd#/dev/}/holders") ]] || fail "the cache is still held after detach"
wait_exit "$writer" 600 || fail "writer did not end"
wait "$writer" || fail "the writer failed across the detach"
writer=
verify before during
"$TOOL" detach sp | grep -q "already detached" || fail "detach of a linear device"

# --- attach: an empty cache again, under the writer ----------------------------------------
writer after 60 &
writer=$!
sleep 1
"$TOOL" attach sp "$ssd" write_policy writeback evict_wait 60000 >"$T/out" 2>&1 || fail "attach: $(cat "$T/out")"
grep -q "attached" "$T/out" || fail "attach said: $(cat "$T/out")"
touch "$T/after.stop"
assert_eq "$(table_type)" ssdprio "table after attach"
dmesg | grep -q "bypassed by a 'cache off' table" || fail "the bypassed cache was not started empty: $(dmesg | grep ssdprio)"
wait_exit "$writer" 600 || fail "writer did not end"
wait "$writer" || fail "the writer failed across the attach"
writer=
verify before during after
assert_ge "$(status_get sp dirty_blocks)" 1 "the attached cache caches writes"
"$TOOL" attach sp "$ssd" | grep -q "already has a cache" || fail "attach of a caching device"
log "status after attach: $(dmsetup status sp | cut -d' ' -f4-40)"

# --- the origin alone holds everything once flushed ----------------------------------------
"$TOOL" flush --wait --timeout 300 sp >/dev/null || fail "flush --wait"
umount "$MNT"
dm_remove sp
fsck.ext4 -fn "$hdd" >"$T/fsck" 2>&1 || fail "fsck of the origin: $(tail -5 "$T/fsck")"
mount -o ro "$hdd" "$MNT" || fail "mount the origin"
verify before during after
umount "$MNT"

# --- attach refuses a cache the origin was written around ----------------------------------
dmsetup create sp --table "0 $len linear $hdd 0" || fail "linear over the origin"
if "$TOOL" attach sp "$ssd" >"$T/out" 2>&1; then
	fail "attach accepted a cache not marked out of date"
fi
grep -q "not detached" "$T/out" || fail "attach's refusal: $(cat "$T/out")"
assert_eq "$(table_type)" linear "table after a refused attach"
dm_remove sp
# --- the first flush after a swap into a caching table reaches the origin ----------------
# Writes the table before (linear here, as `attach` replaces) acknowledged may
# sit in the origin's volatile cache, and dm flushes nothing at a swap: the
# first flush through the caching table must flush the origin too, though
# no write of its own reached it.  The origin has a write cache and counts
# the flushes that reach it (/sys/block/*/stat, field 16).
hddc=$(NULLB_CACHE_MB=16 make_hdd hddc 64 0 32)
ssdc=$(make_ssd ssdc 16)
flushes() { awk '{ print $16 }' "/sys/block/${1#/dev/}/stat"; }
dmsetup create spc --table "0 $(sectors "$hddc") linear $hddc 0" || fail "linear over hddc"
dd if=/dev/urandom of=/dev/mapper/spc bs=64k count=16 oflag=direct status=none || fail "write through linear"
f0=$(flushes "$hddc")
dmsetup load spc --table "0 $(sectors "$hddc") ssdprio $hddc $ssdc 3 format evict_wait 60000" || fail "load ssdprio"
dmsetup resume spc || fail "resume into ssdprio"
python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); os.fsync(fd)' /dev/mapper/spc ||
	fail "fsync of the device"
assert_ge "$(flushes "$hddc")" $((f0 + 1)) "origin flushes by the first flush after the swap"
dm_remove spc
remove_nullb hddc
remove_nullb ssdc
log "ok"
