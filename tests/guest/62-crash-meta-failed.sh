#!/bin/bash
# A cache whose metadata can no longer be written gives no frame away.
#
# Once a metadata write fails (here the superblock's, at suspend), the
# records on the SSD stay as the last commit left them: they still call
# A's blocks dirty in their frames after A is written back (its commit
# fails).  A write of another origin set B of the same cache set, whose
# candidate frames are A's, must not take them: after a restart the
# records would bring B's data back as A's.  A failed metadata write
# degrades the cache, so B's write goes to the origin.  Loaded again from
# the SSD (the superblock never said clean: recovered), A reads as written
# and B as written.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
BLK=4096
SET=16                     # blocks per set: B's frames b and b ^ 8 are a pair
FEATS="set_size $SET evict_wait 3600000 dirty_max_age 0 lockout_clean off seq_cutoff 0 read_alloc off idle_dispatch_interval 5"
NF=$(wc -w <<<"$FEATS")

pat() { head -c "$BLK" </dev/zero | tr '\0' "$1"; }
put() { # put DEV BLOCKNR CHAR
	set -o pipefail
	pat "$3" | dd of="$1" bs=$BLK seek="$2" count=1 oflag=direct conv=notrunc status=none
}
# what DEV BLOCKNR: the character the block is made of (0: zeroes), or "mixed ..."
what() {
	local s
	s=$(dd if="$1" bs=$BLK skip="$2" count=1 iflag=direct status=none | tr '\0' '0') ||
		fail "read of block $2 of $1"
	if [[ ${#s} -eq $BLK && -z ${s//"${s:0:1}"/} ]]; then
		echo "${s:0:1}"
	else
		echo "mixed (${#s} bytes: ${s:0:16}...)"
	fi
}

hdd=$(make_hdd hdd 16 0 32)
ssd=$(make_ssd ssd 2)
nh=$(sectors "$hdd")
ns=$(sectors "$ssd")
ssd_table() { # ssd_table broken|whole: the cache leg, its superblock failing or not
	if [[ $1 == broken ]]; then
		printf '0 8 error\n8 %s linear %s 8\n' $((ns - 8)) "$ssd"
	else
		echo "0 $ns linear $ssd 0"
	fi
}
leg_load ssdleg "$(ssd_table whole)"
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg $((NF + 1)) format $FEATS")
assert_eq "$(status_get sp set_blocks)" $SET "set_blocks"

# Two origin sets of one cache set (the placement hash of ssdprio_format.h),
# the second's block b in frame b or b ^ 8 (its alt xor).
ncs=$(status_get sp total_sets)
read -r A B < <(python3 - "$(dirname "$0")" "$ncs" $((nh / 8 / SET)) <<'PY'
import sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import alt_xor, oset_cset
n, nos = int(sys.argv[1]), int(sys.argv[2])
b = next((o for o in range(1, nos)
          if oset_cset(o, n) == oset_cset(0, n) and alt_xor(o, 16, 4) == 8), "")
print(0, b)
PY
)
[[ -n $B ]] || fail "no second origin set in cache set of origin set 0 with its alt frames 8 away"
log "origin sets $A and $B share a cache set ($ncs sets of $SET blocks)"
a0=$((A * SET)) a8=$((A * SET + 8)) b0=$((B * SET))

# A's blocks 0 and 8 dirty in frames 0 and 8, durable (a flush commits).
put "$dev" $a0 a || fail "write A:0"
put "$dev" $a8 c || fail "write A:8"
sync "$dev" || fail "flush"
assert_eq "$(status_get sp dirty_blocks)" 2 "dirty blocks"

# The superblock stops taking writes: suspend commits the records (they
# are past it), then its clean mark fails; resume serves on.
leg_load ssdleg "$(ssd_table broken)"
dmsetup suspend sp || fail "suspend"
dmsetup resume sp || fail "resume after the failed superblock write"
assert_eq "$(status_get sp meta_state)" failed "meta_state after the failed superblock write"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode after the failed superblock write"

# A written back: clean in memory, its commit fails, the records keep it dirty.
w0=$(status_get sp blocks_written_back)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_ge "$(status_get sp blocks_written_back)" $((w0 + 2)) "A's blocks written back"
assert_eq "$(what "$hdd" $a0)" a "A:0 on the origin"

# B's block 0: its candidate frames hold A's blocks, clean in memory.
put "$dev" $b0 b || fail "write B:0"
assert_eq "$(what "$dev" $a0)" a "A:0 live"
assert_eq "$(what "$dev" $a8)" c "A:8 live"
assert_eq "$(what "$dev" $b0)" b "B:0 live"
# What the devices hold now, as after a power cut.
dm_remove sp
dm_remove ssdleg

dev=$(dm_create sp "0 $nh ssdprio $hdd $ssd $NF $FEATS")
assert_eq "$(status_get sp meta_state)" recovered "meta_state: the superblock never said clean"
assert_eq "$(what "$dev" $a0)" a \
	"A:0 after the restart (its frame given to B:0 after the failed metadata write reads as B's data)"
assert_eq "$(what "$dev" $a8)" c "A:8 after the restart"
assert_eq "$(what "$dev" $b0)" b "B:0 after the restart"
dm_remove sp
remove_nullb hdd
remove_nullb ssd
log "ok"
