#!/bin/bash
# What the kernel versions handle differently under the same code (6.1 and
# 6.12: queue limits are validated as a whole since 6.9, bio ioprio and blkcg
# plumbing changed in between): the limits .io_hints leaves on the dm device,
# also across a reload, and the idle classification of direct I/O by class
# and by idle_cgroup (buffered writeback: 42-sched-cgroup; flush/FUA:
# 41-sched-nohold).
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

log "kernel $(uname -r)"
load_module
hdd=$(make_hdd hdd 128)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
q() { cat "/sys/block/$(basename "$(readlink -f "$1")")/queue/$2"; }
hdd_min=$(q "$hdd" minimum_io_size) hdd_opt=$(q "$hdd" optimal_io_size)

# --- io_hints: io_min and io_opt are one cache block, max_sectors whole blocks ------
check_limits() { # check_limits DEV BLOCK_SECTORS
	local dev=$1 bs=$2 kb
	assert_eq "$(q "$dev" minimum_io_size)" $((bs * 512)) "minimum_io_size is one cache block"
	# io_min without io_opt reads as a stripe unit without a width (mkfs.xfs warns)
	assert_eq "$(q "$dev" optimal_io_size)" $((bs * 512)) "optimal_io_size is one cache block"
	kb=$(q "$dev" max_sectors_kb)
	assert_ge "$kb" $((bs / 2)) "max_sectors_kb at least one block"
	assert_eq $((kb * 2 % bs)) 0 "max_sectors_kb ($kb) is whole blocks of $bs sectors"
	assert_ge "$(q "$dev" logical_block_size)" 512 "logical block size"
	# A write under a block is a partial block, as under a physical sector
	assert_eq "$(q "$dev" physical_block_size)" $((bs * 512 < 4096 ? bs * 512 : 4096)) \
		"physical_block_size is one cache block, at most 4 KiB"
}
dev=$(dm_create lim "0 $len ssdprio $hdd $ssd 3 format block_size 4")
check_limits "$dev" 4
dm_remove lim
ssd1=$(make_ssd ssd1 64)
dev=$(dm_create lim "0 $len ssdprio $hdd $ssd1 3 format block_size 16")
check_limits "$dev" 16
# A reload with another geometry re-runs .io_hints (and 6.12's validation).
dm_remove lim
# Another geometry needs another cache device (ours is never re-formatted).
ssd2=$(make_ssd ssd2 64)
dev=$(dm_create lim "0 $len ssdprio $hdd $ssd2 3 format block_size 32")
check_limits "$dev" 32
table=$(dmsetup table lim)
dmsetup reload lim --table "$table" || fail "reload failed"
dmsetup resume lim || fail "resume failed"
check_limits "$dev" 32
# Direct I/O of one block through the limits works and reads back.
head -c 16384 /dev/urandom >/tmp/blk
dd if=/tmp/blk of="$dev" bs=16k count=1 seek=3 oflag=direct status=none || fail "direct write failed"
cmp <(dd if="$dev" bs=16k count=1 skip=3 iflag=direct status=none) /tmp/blk ||
	fail "direct read-back differs"
dm_remove lim
# Cache off: no hint of ours, the origin's own io_min shows through.
dev=$(dm_create lim "0 $len ssdprio $hdd $ssd 2 cache off")
assert_eq "$(q "$dev" minimum_io_size)" "$hdd_min" "cache off: the origin's minimum_io_size"
assert_eq "$(q "$dev" optimal_io_size)" "$hdd_opt" "cache off: the origin's optimal_io_size"
assert_eq "$(q "$dev" physical_block_size)" "$(q "$hdd" physical_block_size)" \
	"cache off: the origin's physical_block_size"
dm_remove lim

# mkfs.xfs reads io_min/io_opt as stripe unit/width: no note about them, neither
# under 1 GiB, where it notes any stripe it ignores (xfs/075 expects silence), nor
# above with a block over 4 KiB, which it takes as a stripe unit of that block.
# A dry run (-N) writes nothing, so the large null_blk costs no memory.
mkfs_quiet() { # mkfs_quiet SIZE_MB [BLOCK_SECTORS]
	local hdx ssx dev out
	hdx=$(make_hdd hdx "$1" 100000 4)
	ssx=$(make_ssd ssx 32)
	dev=$(dm_create limx "0 $(sectors "$hdx") ssdprio $hdx $ssx 3 format block_size ${2:-8}")
	out=$(mkfs.xfs -N -f "$dev" 2>&1) || fail "mkfs.xfs -N failed: $out"
	if grep -qi stripe <<<"$out"; then
		fail "mkfs.xfs on $1 MiB notes the stripe geometry: $(grep -i stripe <<<"$out")"
	fi
	log "mkfs.xfs -N, $1 MiB, block ${2:-8}: no stripe note ($(grep -o 'sunit=[0-9]* *swidth=[0-9]* blks' <<<"$out" | head -1))"
	dm_remove limx
	remove_nullb ssx
	remove_nullb hdx
}
if command -v mkfs.xfs >/dev/null; then
	mkfs_quiet 512
	mkfs_quiet 1100 16
else
	log "no mkfs.xfs in the guest: the stripe note is not checked"
fi

# --- direct I/O classification: ionice class and idle_cgroup --------------------------
CG=/sys/fs/cgroup
[[ -e $CG/cgroup.controllers ]] || skip "no cgroup2 at $CG"
echo "+io +memory" >"$CG/cgroup.subtree_control" || fail "cannot enable io and memory controllers"
mkdir -p "$CG/maint" "$CG/other"
dev=$(dm_create cl "0 $len ssdprio $hdd $ssd 4 cache off idle_cgroup $CG/maint")
st() { status_get cl "$1"; }
in_cg() { # in_cg CGROUP CMD...: run CMD in CGROUP
	local cg=$1
	shift
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG/$cg" "$@"
}

# Reads first: closing a device written to makes udev probe it, and its
# reads (normal) would land in the counters of what follows.
i0=$(st bios_idle) n0=$(st bios_normal)
ionice -c3 dd if="$dev" of=/dev/null bs=4k count=32 iflag=direct status=none || fail "ionice -c3 dd failed"
assert_ge $(($(st bios_idle) - i0)) 32 "ionice -c3 direct reads are idle"
assert_eq "$(st bios_normal)" "$n0" "ionice -c3 direct reads are not normal"

i0=$(st bios_idle) n0=$(st bios_normal)
in_cg maint dd if="$dev" of=/dev/null bs=4k count=32 skip=64 iflag=direct status=none ||
	fail "dd in maint failed"
assert_ge $(($(st bios_idle) - i0)) 32 "direct reads in idle_cgroup are idle"
assert_eq "$(st bios_normal)" "$n0" "direct reads in idle_cgroup are not normal"

i0=$(st bios_idle) n0=$(st bios_normal)
in_cg other dd if="$dev" of=/dev/null bs=4k count=32 skip=128 iflag=direct status=none ||
	fail "dd in other failed"
assert_eq "$(st bios_idle)" "$i0" "direct reads of another cgroup are not idle"
assert_ge $(($(st bios_normal) - n0)) 32 "direct reads of another cgroup are normal"

# Writes: only the idle count is exact (udev's probe reads are normal).
i0=$(st bios_idle)
ionice -c3 dd if=/dev/zero of="$dev" bs=4k count=32 oflag=direct status=none || fail "ionice -c3 dd failed"
assert_ge $(($(st bios_idle) - i0)) 32 "ionice -c3 direct writes are idle"

i0=$(st bios_idle)
in_cg maint dd if=/dev/zero of="$dev" bs=4k count=32 seek=64 oflag=direct status=none ||
	fail "dd in maint failed"
assert_ge $(($(st bios_idle) - i0)) 32 "direct writes in idle_cgroup are idle"

i0=$(st bios_idle) n0=$(st bios_normal)
in_cg other dd if=/dev/zero of="$dev" bs=4k count=32 seek=128 oflag=direct status=none ||
	fail "dd in other failed"
assert_eq "$(st bios_idle)" "$i0" "direct writes of another cgroup are not idle"
assert_ge $(($(st bios_normal) - n0)) 32 "direct writes of another cgroup are normal"

dm_remove cl
rmdir "$CG/maint" "$CG/other" 2>/dev/null
log "ok"
