#!/bin/bash
# An origin that goes away (a network origin whose target dropped) does not
# retire the cache.  A metadata commit that owes an origin flush fails it
# every try: meta_state failed and degraded for the rest of the table's
# life, the user's flush fails, but the SSD is not marked failed.  Once
# the origin is back, a new table loads the cache as after a power cut:
# what was fsync'ed before the outage reads back right, and flush_dirty
# writes it all to the origin.  (a) a fresh cache removed while the origin
# is gone; (b) data fsync'ed, the origin gone, suspend/resume, one more
# fsync.  The origin is a dm-linear swapped for a dm-flakey that fails
# all I/O, flushes too (dm-error takes no flush: it would pass them), and
# back.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "build/ssdprio-tool missing (make tools)"
trap cleanup_all EXIT

load_module
# A volatile write cache: flushes reach the driver.
hdd=$(NULLB_CACHE_MB=4 make_hdd ohdd 16 0 32)
ssd=$(make_ssd ossd 24)
nh=$(sectors "$hdd")
org=/dev/mapper/oleg
leg oleg "$hdd" linear
table() { echo "0 $nh ssdprio $org $ssd $*"; }
gone() { leg oleg "$hdd" all; }
back() { leg oleg "$hdd" linear; }
not_retired() { # not_retired WHEN
	local out
	out=$("$TOOL" show "$ssd") || fail "show ($1): $out"
	! grep -q "failed:" <<<"$out" || fail "the SSD is marked failed ($1): $(grep failed: <<<"$out")"
}
# drained NAME FILE OFFSET_KIB: written back, the origin holds FILE there.
drained() {
	local kib
	kib=$(($(stat -c %s "$2") / 1024))
	dmsetup message "$1" 0 flush_dirty || fail "flush_dirty"
	wait_status "$1" dirty_blocks -eq 0 60
	cmp <(dd if="$hdd" bs=1k skip="$3" count="$kib" iflag=direct status=none) "$2" ||
		fail "the origin does not hold the data written back at ${3} KiB"
}

# --- (a) a fresh cache removed while the origin is gone ------------------------------
head -c 256K /dev/urandom >/tmp/og.a
dev=$(dm_create sp "$(table 3 format write_policy writeback)")
dd if=/tmp/og.a of="$dev" bs=64k oflag=direct status=none || fail "write (a)"
assert_eq "$(status_get sp dirty_blocks)" 64 "dirty blocks (a)"
dmesg -C
gone
timeout 60 dmsetup remove sp || fail "remove with the origin gone"
_settle
not_retired "(a) removed with the origin gone"
log "(a) removed with the origin gone, not retired"
back
dev=$(dm_create sp "$(table 0)")
[[ $(status_get sp meta_state) == recovered ]] ||
	fail "meta_state of the load after (a): $(status_get sp meta_state)"
# Never fsync'ed: each block reads as written or as before (zeroes), and
# the device, once drained, is what the origin holds.
dd if="$dev" of=/tmp/og.a2 bs=64k count=4 iflag=direct status=none || fail "read (a)"
python3 - /tmp/og.a /tmp/og.a2 <<'PY' || fail "after (a): a block neither as written nor as before"
import sys
a, b = (open(f, "rb").read() for f in sys.argv[1:])
bad = [i for i in range(0, len(a), 4096)
       if b[i:i + 4096] not in (a[i:i + 4096], bytes(4096))]
sys.exit("blocks %s" % [i // 4096 for i in bad] if bad else 0)
PY
drained sp /tmp/og.a2 0
log "(a) loaded again and drained"

# --- (b) fsync'ed, the origin gone, suspend/resume, one more fsync --------------------
head -c 1M /dev/urandom >/tmp/og.b
dd if=/tmp/og.b of="$dev" bs=64k seek=16 oflag=direct conv=fsync status=none ||
	fail "write + fsync (b)"
assert_eq "$(status_get sp dirty_blocks)" 256 "dirty blocks (b)"
dmesg -C
gone
dmsetup suspend sp || fail "suspend with the origin gone"
dmsetup resume sp || fail "resume"
blk_put "$dev" 600 x || fail "write of block 600 with the origin gone"
timeout 60 sync "$dev" && fail "a flush succeeded with the origin gone"
assert_eq "$(status_get sp meta_state)" failed "meta_state with the origin gone"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode with the origin gone"
dmesg | grep -q "origin flush failed" || fail "no origin flush failure in dmesg: $(dmesg | grep ssdprio | tail -3)"
not_retired "(b) live"
log "(b) meta_state failed, not retired"
cmp <(dd if="$dev" bs=64k skip=16 count=16 iflag=direct status=none) /tmp/og.b ||
	fail "cached data read wrong with the origin gone"
timeout 60 dmsetup suspend sp || fail "suspend of the failed cache"
dmsetup resume sp || fail "resume of the failed cache"
not_retired "(b) suspended and resumed"
back
dm_remove sp
not_retired "(b) removed"
dev=$(dm_create sp "$(table 0)")
[[ $(status_get sp meta_state) == recovered ]] ||
	fail "meta_state of the load after (b): $(status_get sp meta_state)"
assert_ge "$(status_get sp dirty_blocks)" 256 "dirty blocks loaded after (b)"
cmp <(dd if="$dev" bs=64k skip=16 count=16 iflag=direct status=none) /tmp/og.b ||
	fail "fsync'ed data read wrong after the reload"
drained sp /tmp/og.b 1024
cmp <(dd if="$hdd" bs=64k count=4 iflag=direct status=none) /tmp/og.a2 ||
	fail "data of (a) changed on the origin"
dm_remove sp
log "(b) loaded again, fsync'ed data written back: ok"
dm_remove oleg
log "ok"
