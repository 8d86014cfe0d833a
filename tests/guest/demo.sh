#!/bin/bash
# `make demo`: what dm-ssdprio is for, in numbers.  A normal job (random 4 KiB
# reads and writes) alone and beside an idle-class job (ionice -c3, a
# sequential reader), on the bare emulated HDD with mq-deadline and then on
# ssdprio over that HDD and an emulated SSD, with a file system on top; then
# the device's status.  Runs inside the guest that tests/vm/run boots.
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

say() { printf '\n=== %s\n' "$*"; }
RT=${SSDP_DEMO_SECS:-10}
TOOL=$REPO/build/ssdprio-tool

load_module
modprobe ext4
hdd=$(make_hdd hdd 512 5000000 1)
ssd=$(make_ssd ssd 128)
len=$(sectors "$hdd")

# iops FILE: read+write IOPS of a fio JSON result; mibs FILE: read MiB/s.
iops() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))' "$1"; }
mibs() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(round(j["read"]["bw"]/1024, 2))' "$1"; }
# normal DEV OUT [OFFSET]: random 4 KiB reads and writes over 256 MiB, QD 1.
normal() {
	fio --name=normal --filename="$1" --offset="${3:-0}" --size=256M --rw=randrw --bs=4k \
		--direct=1 --ioengine=psync --time_based --runtime="$RT" --randseed=7 \
		--output-format=json --output="$2" >/dev/null
}
# idle DEV OUT: a sequential reader of the upper 256 MiB as ionice -c3.
idle() {
	ionice -c3 fio --name=idle --filename="$1" --offset=256M --size=256M --rw=read \
		--bs=64k --direct=1 --time_based --runtime="$((RT + 2))" \
		--output-format=json --output="$2" >/dev/null
}
# pair DEV TAG: the normal job alone, then beside the idle job.
pair() {
	normal "$1" "/tmp/$2-alone.json"
	idle "$1" "/tmp/$2-idle.json" &
	local p=$!
	sleep 1
	normal "$1" "/tmp/$2-beside.json"
	wait $p
	printf '  normal job alone:            %6s IOPS\n' "$(iops "/tmp/$2-alone.json")"
	printf '  normal job beside idle job:  %6s IOPS (idle job: %s MiB/s)\n' \
		"$(iops "/tmp/$2-beside.json")" "$(mibs "/tmp/$2-idle.json")"
}

say "the bare HDD model (5 ms per I/O, queue depth 1) with mq-deadline, $RT s per run"
echo mq-deadline >"/sys/block/${hdd#/dev/}/queue/scheduler"
pair "$hdd" bare

table="0 $len ssdprio $hdd $ssd 5 format evict_wait 1000 batch_mode_delay 2000"
say "dmsetup create demo: $table"
dev=$(dm_create demo "$table")
dmsetup table demo
say "ssdprio over that HDD and a 128 MiB SSD model: a warm-up run, then the same two"
normal "$dev" /tmp/ssdp-warmup.json
printf '  warm-up:                     %6s IOPS\n' "$(iops /tmp/ssdp-warmup.json)"
pair "$dev" ssdp

say "a file system on top: mkfs.ext4, mount, a file written and read back"
mkfs.ext4 -q -F -E nodiscard "$dev"
mkdir -p /mnt/demo && mount "$dev" /mnt/demo
head -c 32M /dev/urandom >/tmp/demo.data
cp /tmp/demo.data /mnt/demo/data && sync && echo 3 >/proc/sys/vm/drop_caches
cmp /tmp/demo.data /mnt/demo/data && echo "  32 MiB file read back intact"

say "in numbers (TCG guest, one boot: compare the ratios, not the absolute IOPS)"
python3 - /tmp <<'PY'
import json, sys
d = sys.argv[1]
def iops(n):
    j = json.load(open(f"{d}/{n}.json"))["jobs"][0]
    return j["read"]["iops"] + j["write"]["iops"]
def mibs(n):
    return json.load(open(f"{d}/{n}.json"))["jobs"][0]["read"]["bw"] / 1024
print(f"  {'':28} {'alone':>8} {'beside idle':>12} {'ratio':>6} {'idle MiB/s':>11}")
for tag, name in (("bare", "bare HDD + mq-deadline"), ("ssdp", "dm-ssdprio")):
    a, b = iops(f"{tag}-alone"), iops(f"{tag}-beside")
    print(f"  {name:28} {a:8.0f} {b:12.0f} {b / a if a else 0:6.2f} {mibs(tag + '-idle'):11.2f}")
print("  ratio: the normal job's IOPS beside the idle job over alone (1.00: the idle job costs it nothing)")
PY

say "ssdprio-tool status demo"
if [[ -x $TOOL ]]; then
	"$TOOL" status demo | sed 's/^/  /'
else
	dmsetup status demo | cut -d' ' -f4- | xargs -n2 printf '  %-22s %s\n'
fi

say "flush_dirty, unmount, remove"
dmsetup message demo 0 flush_dirty
umount /mnt/demo
dm_remove demo
echo "demo done"
