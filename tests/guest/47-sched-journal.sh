#!/bin/bash
# No priority inversion through a journal: on ext4 (data=ordered) an idle
# task's fsync sends its data as idle-class bios, and the transaction that
# allocated those blocks cannot commit until they are written.  A normal
# task's fsync in the same transaction waits for that commit.  With normal
# I/O pending all the time, an idle interval of an hour and no learnt
# gaps (idle_budget 0), only the starvation bound (idle_max_wait, on by
# default) lets the idle data out: the normal fsync must complete while
# normal I/O still runs.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 512)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
# The default starvation bound is what is under test: no idle_max_wait here.
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 8 cache off idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_budget 0")
st() { status_get sp "$1"; }

mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dm" 128M || fail "mkfs.ext4"
mnt=/mnt/journal
mkdir -p "$mnt"
# dioread_lock: writeback allocates written extents and puts the idle file on
# the transaction's ordered list, so the commit waits for its data. With the
# default (dioread_nolock: unwritten extents, converted when the I/O ends) 6.12
# commits without it and the test proved nothing there (the normal fsync did
# not wait, no idle bio was promoted); 6.1 waited either way.
mount -t ext4 -o data=ordered,dioread_lock "$dm" "$mnt" || fail "mount"
reader= idle=
trap 'kill $reader $idle 2>/dev/null; wait; umount "$mnt" 2>/dev/null' EXIT

# A normal reader past the filesystem's end keeps normal I/O pending.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=192M --size=256M --readonly \
	--runtime=500 --time_based --randrepeat=0 --output=/tmp/normal.out &
reader=$!
wait_status sp bios_normal -ge 50 120
# One idle bio goes out per idle_dispatch_interval whenever normal I/O
# leaves a gap: spend this hour's one now.
ionice -c3 dd if="$dm" of=/dev/null bs=4k count=1 skip=60000 iflag=direct status=none
wait_status sp idle_dispatched -ge 1 60
held0=$(st idle_dispatched)

# The idle writer: its fsync's data waits in the idle queue, and the
# running transaction now orders it.
head -c $((4 << 20)) /dev/urandom >/tmp/idle.data
ionice -c3 dd if=/tmp/idle.data of="$mnt/idle" bs=1M conv=fsync status=none &
idle=$!
wait_status sp queued_idle -ge 1 60
log "idle data held: $(dmsetup status sp)"

# The normal writer: a 4 KiB write and fsync.
head -c 4096 /dev/urandom >/tmp/normal.data
dd if=/tmp/normal.data of="$mnt/normal" bs=4k conv=fsync status=none &
writer=$!
wait_exit "$writer" 300 ||
	fail "a normal fsync waited on idle-class data behind the journal: $(dmsetup status sp)"
wait "$writer" || fail "the normal write failed"
kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the test proved nothing"
assert_ge "$(st idle_promoted)" 1 "aged idle bios went out as normal ones"
log "normal fsync done while normal I/O ran: idle_dispatched $held0 -> $(st idle_dispatched): $(dmsetup status sp)"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null || true
wait "$idle" || fail "the idle writer failed"
trap - EXIT

umount "$mnt" || fail "umount"
mount -t ext4 -o ro "$dm" "$mnt" || fail "mount again"
cmp "$mnt/idle" /tmp/idle.data || fail "the idle writer's data"
cmp "$mnt/normal" /tmp/normal.data || fail "the normal writer's data"
umount "$mnt"
log "ok"
