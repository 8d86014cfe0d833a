#!/bin/bash
# An iSCSI origin: LIO in the guest (configured through configfs) exports
# two equal-size null_blk LUNs on 127.0.0.1, each with its own unit
# serial; open-iscsi logs in to both, with a replacement timeout of 5 s.
# The kernel reads the LUN's WWN (from the unit serial): the cache loads
# warm over the same LUN and is refused over the other.  The target
# portal group is disabled while a flush's writeback is queued at the
# initiator: the writeback fails once the replacement timeout ends
# (status, dmesg), the data stays dirty, cached data still reads, uncached
# reads fail, a suspend and a resume do not hang.  The portal enabled
# again, the session comes back by itself, the writeback completes and
# the LUN read directly holds the data.  Last, an ionice -c3 reader beside
# a normal one: its bios are idle and go through the throttle.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
for m in target_core_mod iscsi_target_mod target_core_iblock iscsi_tcp sd_mod; do
	modprobe "$m" 2>/dev/null || skip "no $m module in this kernel"
done
command -v iscsid >/dev/null && command -v iscsiadm >/dev/null ||
	fail "iscsid or iscsiadm missing (scripts/install-deps.sh installs open-iscsi)"
ip link set lo up || fail "cannot bring up lo"
load_module

CFS=/sys/kernel/config/target
IQN=iqn.2003-01.org.example.ssdprio
ISCSI_TIMEOUT=5
iscsid_pid=
cleanup() {
	local x t
	dmsetup remove spi >/dev/null 2>&1
	iscsiadm -m node --logoutall=all >/dev/null 2>&1
	[[ -n $iscsid_pid ]] && kill "$iscsid_pid" 2>/dev/null
	for x in a b; do
		t=$CFS/iscsi/$IQN:$x/tpgt_1
		[[ -d $t ]] || continue
		echo 0 >$t/enable
		rm -f $t/lun/lun_0/lun$x
		rmdir $t/lun/lun_0 $t/np/127.0.0.1:3260 $t "$CFS/iscsi/$IQN:$x"
	done
	for x in a b; do
		[[ -d $CFS/core/iblock_0/lun$x ]] && rmdir $CFS/core/iblock_0/lun$x
	done
	[[ -d $CFS/core/iblock_0 ]] && rmdir $CFS/core/iblock_0
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	cleanup_all
}
trap cleanup EXIT

# --- target: two LUNs, each with its own unit serial ----------------------------------
for x in a b; do
	make_ssd lun$x 32 >/dev/null
	d=$CFS/core/iblock_0/lun$x
	t=$CFS/iscsi/$IQN:$x/tpgt_1
	mkdir -p $d || fail "LIO: no iblock backstore"
	echo "udev_path=/dev/lun$x" >$d/control && echo 1 >$d/enable &&
		echo "ssdprio-test-lun-$x" >$d/wwn/vpd_unit_serial || fail "LIO: backstore lun$x"
	mkdir -p $t/lun/lun_0 && ln -s $d $t/lun/lun_0/lun$x &&
		mkdir $t/np/127.0.0.1:3260 &&
		echo 1 >$t/attrib/generate_node_acls &&
		echo 0 >$t/attrib/demo_mode_write_protect &&
		echo 0 >$t/attrib/authentication &&
		echo 1 >$t/enable || fail "LIO: target $IQN:$x"
done

# --- initiator: its files on a tmpfs (the root is read-only here) ----------------------
cp /etc/iscsi/iscsid.conf /tmp/iscsid.conf || fail "no /etc/iscsi/iscsid.conf"
mount -t tmpfs tmpfs /etc/iscsi || fail "tmpfs over /etc/iscsi"
cp /tmp/iscsid.conf /etc/iscsi/
echo "InitiatorName=iqn.2005-03.org.open-iscsi:ssdprio-guest" >/etc/iscsi/initiatorname.iscsi
mkdir -p /run/lock/iscsi
iscsid -p /run/iscsid.pid || fail "iscsid"
for _ in {1..50}; do [[ -s /run/iscsid.pid ]] && break; sleep 0.1; done
iscsid_pid=$(</run/iscsid.pid)
iscsiadm -m discovery -t st -p 127.0.0.1 >/dev/null || fail "iscsiadm discovery"
for x in a b; do
	iscsiadm -m node -T $IQN:$x -p 127.0.0.1 -o update \
		-n node.session.timeo.replacement_timeout -v $ISCSI_TIMEOUT || fail "iscsiadm update"
	iscsiadm -m node -T $IQN:$x -p 127.0.0.1 --login >/dev/null || fail "iscsiadm login $x"
done
lun_disk() { # lun_disk a|b: the initiator's disk of that target
	local s b
	for _ in {1..100}; do
		for s in /sys/class/iscsi_session/session*; do
			[[ $(<"$s/targetname") == "$IQN:$1" ]] || continue
			for b in "$s"/device/target*/*/block/*; do
				[[ -b /dev/${b##*/} ]] && echo "/dev/${b##*/}" && return 0
			done
		done
		sleep 0.1
	done
	fail "no disk for $IQN:$1"
}
da=$(lun_disk a)
db=$(lun_disk b)
state() { # the keys this test watches
	dm_status spi | tr ' ' '\n' | grep -A1 -xE 'dirty_blocks|writeback_errors|failed_sets|flush_state|meta_state|origin_read_errors' | paste -sd' '
}

# --- identity: the LUN's WWN -------------------------------------------------------------
out=$("$TOOL" origin-id "$da" 2>&1 >/dev/null)
[[ $out == *"the kernel checks its WWN"* ]] || fail "origin-id of $da: $out"
ssd=$(make_ssd ssdi 16)
"$TOOL" create spi "$da" "$ssd" evict_wait 3600000 dirty_max_age 0 >/dev/null ||
	fail "create over $da"
"$TOOL" show "$ssd" | grep -q "origin disk: *id" ||
	fail "show: no origin disk id: $("$TOOL" show "$ssd" | grep -i origin)"

# --- data through the cache ----------------------------------------------------------
head -c 4M /dev/urandom >/tmp/iscsi.data
dd if=/tmp/iscsi.data of=/dev/mapper/spi bs=64k oflag=direct conv=fsync status=none ||
	fail "write through the cache"
assert_eq "$(status_get spi dirty_blocks)" 1024 "dirty blocks"

# --- the portal gone in the middle of a writeback ------------------------------------
dmesg -C
echo 0 >$CFS/iscsi/$IQN:a/tpgt_1/enable || fail "disable the portal group"
dmsetup message spi 0 flush_dirty || fail "flush_dirty"
wait_status spi flush_state == failed 60
log "dropped: $(state)"
assert_ge "$(status_get spi writeback_errors)" 1 "writeback errors"
assert_ge "$(status_get spi failed_sets)" 1 "failed sets"
assert_eq "$(status_get spi dirty_blocks)" 1024 "dirty blocks after the drop"
dmesg | grep -q "writeback of cache set .* failed (origin)" ||
	fail "no writeback failure in dmesg: $(dmesg | grep ssdprio | tail -3)"
cmp <(dd if=/dev/mapper/spi bs=64k count=64 iflag=direct status=none) /tmp/iscsi.data ||
	fail "cached data read wrong while the origin is gone"
timeout 60 dd if=/dev/mapper/spi of=/dev/null bs=4k skip=4096 count=1 iflag=direct status=none 2>/dev/null &&
	fail "an uncached read succeeded with the origin gone"
assert_ge "$(status_get spi origin_read_errors)" 1 "origin read errors"
timeout 60 dmsetup suspend spi || fail "suspend with the origin gone"
timeout 60 dmsetup resume spi || fail "resume with the origin gone"

# --- the portal back: the session logs in again by itself --------------------------
echo 1 >$CFS/iscsi/$IQN:a/tpgt_1/enable || fail "enable the portal group"
for _ in {1..300}; do
	dd if="$da" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null && break
	sleep 0.2
done
dd if="$da" of=/dev/null bs=4k count=1 iflag=direct status=none || fail "$da did not come back"
net_written_back spi "$da" /tmp/iscsi.data "the LUN"
log "written back after the portal came back: $(state)"

# --- warm restart over the same LUN; the other one refused ---------------------------
net_warm_restart spi "$da" "$db" "$ssd" /tmp/iscsi.data LUN

# --- the idle class over the network origin ------------------------------------------
net_idle_class spi
dm_remove spi
log "ok"
