#!/bin/bash
# Guest script (tests/vm/run --script): replays the kept fsx operation logs of
# generic/112 on an xfs over a bare disk and over ssdprio, the devices of
# tests/fstests/guest.sh (1 GiB origin, 24 MiB cache, evict_wait 50): a copy
# of its setup_devs for one device, since guest.sh runs fstests when sourced;
# keep the two alike if guest.sh's devices change.
# shellcheck source=tests/guest/lib.sh
. "$REPO/tests/guest/lib.sh"
F=$REPO/tests/fstests/findings/xfs-generic-112
FSX=$REPO/build/fstests/ltp/fsx
load_module
mkdir -p /mnt/t
replay() { # replay CONFIG OPS OPTS...
	local cfg=$1 ops=$2 dev rc=0
	shift 2
	dev=$(NULLB_DISCARD=1 make_hdd hdt 1024 100000 4)
	if [[ $cfg == ssdprio ]]; then
		make_ssd cht 24 >/dev/null
		dm_create spt "0 $(sectors "$dev") ssdprio $dev /dev/cht 3 format evict_wait 50" >/dev/null
		dev=/dev/mapper/spt
	fi
	mkfs.xfs -q -f "$dev" >/dev/null
	mount "$dev" /mnt/t
	mkdir -p /mnt/t/fsx
	(cd /mnt/t/fsx && "$FSX" "$@" --replay-ops "$ops" -P /tmp fsxfile) >/tmp/fsx.out 2>&1 || rc=$?
	log "REPLAY $cfg $(basename "$ops") $*: rc=$rc $(grep -m1 'BAD DATA' /tmp/fsx.out)"
	umount /mnt/t
	[[ $cfg == ssdprio ]] && { log "status: $(dmsetup status spt)"; dm_remove spt; remove_nullb cht; }
	remove_nullb hdt
}
for cfg in bare ssdprio; do
	replay "$cfg" "$F/run2/112.0.fsxops" -A -d -N 1000 -S 0
	replay "$cfg" "$F/112.1.fsxops" -A -d -N 1000 -S 0 -x
done
