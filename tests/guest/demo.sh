#!/bin/bash
# `make demo`: ssdprio over an emulated HDD and SSD, a file system on top,
# a normal job and an idle-class (ionice -c3) job side by side, then the
# status counters.  Runs inside the guest that tests/vm/run boots.
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

say() { printf '\n=== %s\n' "$*"; }

load_module
modprobe ext4
hdd=$(make_hdd hdd 512 5000000 1)
ssd=$(make_ssd ssd 128)
len=$(sectors "$hdd")
table="0 $len ssdprio $hdd $ssd 5 format evict_wait 1000 batch_mode_delay 2000"
say "dmsetup create demo: $table"
dev=$(dm_create demo "$table")
dmsetup table demo

say "mkfs.ext4 and mount on /mnt/demo"
mkfs.ext4 -q -F "$dev"
mkdir -p /mnt/demo && mount "$dev" /mnt/demo
head -c 32M /dev/urandom >/mnt/demo/data && sync

say "normal job (fio random 4k reads+writes on a file, 15 s) beside an idle job (ionice -c3 sequential reader of uncached HDD space)"
# The idle reader scans the device's upper half, which only the HDD holds:
# it is held back while the normal job runs, then runs in batch mode.
ionice -c3 fio --name=idle-reader --filename="$dev" --offset=256M --size=256M \
	--rw=read --bs=64k --direct=1 --time_based --runtime=20 \
	--output=/tmp/idle.txt >/dev/null &
idle=$!
fio --name=normal --directory=/mnt/demo --rw=randrw --bs=4k --size=24M \
	--direct=1 --time_based --runtime=15 --ioengine=psync --group_reporting \
	--output=/tmp/normal.txt >/dev/null
wait $idle
grep -E '^ +(read|write):' /tmp/normal.txt | sed 's/^/  normal /'
grep -E '^ +read:' /tmp/idle.txt | sed 's/^/  idle   /'

say "dmsetup status demo (key value pairs)"
dmsetup status demo | cut -d' ' -f4- | xargs -n2 printf '  %-22s %s\n'

say "flush_dirty, unmount, remove"
dmsetup message demo 0 flush_dirty
umount /mnt/demo
dm_remove demo
echo "demo done"
