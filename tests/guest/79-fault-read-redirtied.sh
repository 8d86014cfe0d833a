#!/bin/bash
# Double fault: a read hit of a clean block fails on the SSD after a
# writeback that carried the block failed its origin write.  That write
# left the origin undefined where it wrote, and the writeback made the
# block dirty again at once: the read must return the error, not an
# answer from the origin.  The block is in a neighbour's set the
# writeback holds, not its own.
#
# Sets of 16 blocks.  Blocks 16-18 (origin set 1) cached clean (A); then
# block 15 (origin set 0) written, and 16 and 18 rewritten (B).  The flush
# starts with set 0's cache set, the older dirty one, takes origin set 1's
# as its neighbour, and sends 15-18 as one origin write, 17 bridged.  With
# that write held in dm-delay, a read of block 17 goes to the SSD, which
# holds it and then fails it.  Meanwhile the origin write fails; the
# origin comes back before the read ends.  Then everything heals, and
# nothing is lost.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
HOLD_MS=10000

# Sets of 16 blocks; no writeback but the flushes asked for.
FEATS="set_size 16 evict_wait 600000 dirty_max_age 0 lockout_clean off seq_cutoff 0 read_alloc off writeback_gap 16 idle_dispatch_interval 5"
table() {
	local args="$1 $FEATS"
	# shellcheck disable=SC2086
	set -- $args
	echo "0 $nh ssdprio /dev/mapper/hddleg /dev/mapper/ssdleg $# $args"
}

hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
ns=$(sectors "$ssd")
leg olow "$hdd" linear
leg hddleg /dev/mapper/olow linear
leg ssdleg "$ssd" linear
dm_create ssderr "0 $ns error" >/dev/null
dev=$(dm_create sp "$(table format)")

c0=$("$REPO/build/ssdprio-tool" debug-placement "$ssd" 0 | cut -d' ' -f2)
c1=$("$REPO/build/ssdprio-tool" debug-placement "$ssd" 1 | cut -d' ' -f2)
((c0 != c1)) || fail "origin sets 0 and 1 share cache set $c0: no neighbour"
for b in 16 17 18; do blk_put "$dev" $b A || fail "write block $b"; done
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 60
blk_put "$dev" 15 B || fail "write block 15"
sleep 0.1
blk_put "$dev" 16 B || fail "rewrite block 16"
blk_put "$dev" 18 B || fail "rewrite block 18"

# The flush's origin write, held.
leg_load hddleg "0 $nh delay /dev/mapper/olow 0 0 /dev/mapper/olow 0 600000"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_held hddleg 5 1

# SSD reads: held, then failed; its writes pass.
leg_load ssdleg "0 $ns delay /dev/mapper/ssderr 0 $HOLD_MS $ssd 0 0"
f0=$(status_get sp read_fallbacks)
e0=$(status_get sp writeback_errors)
rm -f /tmp/79-read
(dd if="$dev" bs=4096 skip=17 count=1 iflag=direct of=/tmp/79-read status=none 2>/dev/null
	echo $? >/tmp/79-rc) &
rpid=$!
wait_held ssdleg 4 1

# The origin write fails; the origin answers again before the read ends.
leg_load olow "0 $nh error"
leg_load hddleg "0 $nh linear /dev/mapper/olow 0"
wait_status sp writeback_errors -gt "$e0" 60
assert_eq "$(status_get sp dirty_blocks)" 4 "blocks 15-18 dirty after the failed writeback (3: block 17 not bridged)"
leg_load olow "0 $nh linear $hdd 0"
kill -0 $rpid 2>/dev/null ||
	fail "the read of block 17 ended before the origin came back: the test proves nothing"
wait $rpid
rc=$(cat /tmp/79-rc)
((rc != 0)) || fail "read of block 17 succeeded ($(tr -d '\0' </tmp/79-read | head -c 8)...): served from an origin the failed writeback left undefined (read_fallbacks $f0 -> $(status_get sp read_fallbacks))"
assert_eq "$(status_get sp read_fallbacks)" "$f0" "read_fallbacks after the refused fallback"

# Everything heals: block 17 is still A, and written back.
leg_load ssdleg "0 $ns linear $ssd 0"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_eq "$(blk_what "$dev" 17)" A "block 17 after healing"
for b in 15 16 17 18; do
	want=B
	((b == 17)) && want=A
	assert_eq "$(blk_what "$hdd" $b)" $want "origin block $b written back"
done
dm_remove sp
dm_remove ssdleg
dm_remove ssderr
dm_remove hddleg
dm_remove olow
remove_nullb hdd
remove_nullb ssd
log "ok"
