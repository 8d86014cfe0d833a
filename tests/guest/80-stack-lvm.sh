#!/bin/bash
# LVM over ssdprio and under it, with the real tools.
# Over: a PV on the mapped device.  Once written back, the raw origin
# carries the same PV label; the lvm.conf global_filter line of
# docs/tools.md keeps pvs to the mapped device, and the volume group
# comes back through it after a warm reload.  Under: origin and cache are
# LVs.  vgchange -an is refused while ssdprio holds them, and after a
# remove, a deactivation and an activation the cache loads warm with its
# dirty data, which then reaches the origin LV.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
command -v lvm >/dev/null || skip "no lvm2 in the guest"
# A writable configuration (the host's root is read-only here), which
# knows null_blk.
export LVM_SYSTEM_DIR=/tmp/lvm LVM_SUPPRESS_FD_WARNINGS=1
mkdir -p $LVM_SYSTEM_DIR
lvm_conf() { # lvm_conf FILTER: lvm.conf with FILTER as global_filter
	cat >$LVM_SYSTEM_DIR/lvm.conf <<-CONF
		devices { global_filter = [ $1 ] use_devicesfile = 0 types = [ "nullb", 16 ] }
		backup { backup = 0 archive = 0 }
		global { event_activation = 0 }
	CONF
}
lvm_conf '"a|.*|"'
pattern() { # pattern DEV CHAR: 8 MiB of CHAR at 1 MiB
	head -c $((8 << 20)) </dev/zero | tr '\0' "$2" |
		dd of="$1" bs=1M seek=1 iflag=fullblock oflag=direct status=none || fail "write $1"
}
check() { # check DEV CHAR
	local got
	got=$(dd if="$1" bs=1M skip=1 count=8 iflag=direct status=none | tr -d "$2" | wc -c)
	assert_eq "$got" 0 "bytes of $1 that are not '$2'"
}
FEATS="evict_wait 600000 dirty_max_age 0"

# --- LVM over ssdprio --------------------------------------------------------
hdd=$(make_ssd hddl 256)
ssd=$(make_ssd ssdl 64)
nh=$(sectors "$hdd")
# shellcheck disable=SC2086
dm_create sp "0 $nh ssdprio $hdd $ssd 5 format $FEATS" >/dev/null
pvcreate -q /dev/mapper/sp || fail "pvcreate on ssdprio"
vgcreate -q vgtop /dev/mapper/sp || fail "vgcreate"
lvcreate -q -an -Zn -L 64M -n lv vgtop || fail "lvcreate"
vgchange -q -ay vgtop || fail "vgchange -ay"
pattern /dev/vgtop/lv t
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 60
# Now the raw origin carries the PV label too.
all=$(pvs --noheadings -o pv_name 2>&1)
log "pvs without a filter: $(tr -s ' \n' ' ' <<<"$all")"
# Accept the mapped device (and the host's own PVs, none here), reject the
# rest: a filter that rejects the raw origin by one name would not do, as
# LVM accepts a disk that any of its names (/dev/block/M:m) lets through.
lvm_conf '"a|^/dev/mapper/sp$|", "r|.*|"'
all=$(pvs --noheadings -o pv_name 2>/tmp/80-pvs) || fail "pvs with the filter: $(cat /tmp/80-pvs)"
assert_eq "$(tr -d ' ' <<<"$all")" /dev/mapper/sp "pvs with the global_filter"
grep -i "duplicate\|not using" /tmp/80-pvs && fail "pvs with the global_filter still sees the raw origin: $(cat /tmp/80-pvs)"
vgchange -q -an vgtop || fail "vgchange -an"
# Warm reload: the volume group comes back through ssdprio.
dm_remove sp
# shellcheck disable=SC2086
dm_create sp "0 $nh ssdprio $hdd $ssd 4 $FEATS" >/dev/null
vgchange -q -ay vgtop || fail "vgchange -ay after the reload"
[[ $(lvs --noheadings -o devices vgtop/lv) == *"/dev/mapper/sp"* ]] ||
	fail "vgtop/lv is not on /dev/mapper/sp: $(lvs --noheadings -o devices vgtop/lv)"
check /dev/vgtop/lv t
vgchange -q -an vgtop || fail "vgchange -an"
dm_remove sp
remove_nullb hddl
remove_nullb ssdl

# --- ssdprio over LVM --------------------------------------------------------
lvm_conf '"a|.*|"'
hdd=$(make_ssd hddu 256)
ssd=$(make_ssd ssdu 64)
pvcreate -q "$hdd" "$ssd" || fail "pvcreate"
vgcreate -q vgu "$hdd" "$ssd" || fail "vgcreate"
lvcreate -q -Zn -L 192M -n origin vgu "$hdd" || fail "lvcreate origin"
lvcreate -q -Zn -L 48M -n cache vgu "$ssd" || fail "lvcreate cache"
nh=$(sectors /dev/vgu/origin)
# shellcheck disable=SC2086
dm_create spu "0 $nh ssdprio /dev/vgu/origin /dev/vgu/cache 5 format $FEATS" >/dev/null
pattern /dev/mapper/spu u
d=$(status_get spu dirty_blocks)
assert_ge "$d" 2048 "dirty blocks in the cache LV"
out=$(vgchange -an vgu 2>&1) && fail "vgchange -an succeeded under ssdprio: $out"
log "vgchange -an under ssdprio: $(tr '\n' ' ' <<<"$out")"
check /dev/mapper/spu u
dm_remove spu
vgchange -q -an vgu || fail "vgchange -an"
vgchange -q -ay vgu || fail "vgchange -ay"
# shellcheck disable=SC2086
dm_create spu "0 $nh ssdprio /dev/vgu/origin /dev/vgu/cache 4 $FEATS" >/dev/null
assert_eq "$(status_get spu dirty_blocks)" "$d" "dirty blocks after the warm load"
check /dev/mapper/spu u
dmsetup message spu 0 flush_dirty || fail "flush_dirty"
wait_status spu dirty_blocks -eq 0 60
check /dev/vgu/origin u
dm_remove spu
vgchange -q -an vgu || fail "vgchange -an"
vgremove -q -f vgu >/dev/null || fail "vgremove"
remove_nullb hddu
remove_nullb ssdu
log "ok"
