#!/bin/bash
# Whole disks the kernel cannot identify (an md array, a virtio disk) are
# identified by ssdprio-tool: `create` records an origin_id derived from
# the array's UUID or the disk's serial, and every activation recomputes
# it from the origin.  An equal-size array or disk is refused (by the tool
# and by the kernel) and nothing is written; the same array under another
# name loads with its dirty data.
# disks: oid_a:48M oid_b:48M oid_ssd:24M
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
command -v mdadm >/dev/null || skip "no mdadm (scripts/install-deps.sh installs it)"
modprobe raid1 2>/dev/null || skip "no raid1 module"
load_module
ssd=$(vdisk oid_ssd)
tab=/tmp/oid.tab
cleanup_md() {
	local m h
	dmsetup remove spo 2>/dev/null
	for m in m1 m2 m3 m4; do # every array on our members, also one udev assembled
		for h in /sys/block/$m/holders/md*; do
			[[ -e $h ]] && mdadm --stop "/dev/${h##*/}" >/dev/null 2>&1
		done
	done
	_settle
	for m in m1 m2 m3 m4; do
		[[ -b /dev/$m ]] && mdadm --zero-superblock "/dev/$m" >/dev/null 2>&1
	done
	rm -f "$tab"
}
trap cleanup_md EXIT

meta_sum() { dd if="$ssd" bs=1M count=4 iflag=direct status=none | sha256sum; }
# refused ORIGIN: neither the tool nor a raw table loads the cache over it.
refused() {
	local before out
	before=$(meta_sum)
	echo "spo $1 $ssd" >"$tab"
	out=$("$TOOL" activate --tab "$tab" spo 2>&1) && fail "activated over $1: $out"
	grep -q "another origin" <<<"$out" || fail "tool: expected 'another origin' for $1: $out"
	dmesg -C
	dm_try_create spo "0 $(sectors "$1") ssdprio $1 $ssd" >/dev/null 2>&1 &&
		fail "raw table without origin_id accepted over $1"
	dmesg | grep -q "another origin" || fail "kernel: expected 'another origin' for $1: $(dmesg | tail -3)"
	dmsetup info spo >/dev/null 2>&1 && dmsetup remove spo
	[[ $(meta_sum) == "$before" ]] || fail "cache device written by a refused table over $1"
	log "refused over $1: $(tail -1 <<<"$out")"
}
# dirty_create ORIGIN: a new cache over it (by the tool), 1 MiB left dirty.
dirty_create() {
	"$TOOL" wipe --force "$ssd" >/dev/null || fail "wipe"
	"$TOOL" create spo "$1" "$ssd" evict_wait 3600000 || fail "create over $1"
	head -c 1M /dev/urandom >/tmp/oid.data
	dd if=/tmp/oid.data of=/dev/mapper/spo bs=64k oflag=direct status=none || fail "write"
	assert_ge "$(status_get spo dirty_blocks)" 1 "dirty data in the cache"
	dm_remove spo
}
# intact ORIGIN: the tab entry activates over it and serves the dirty data.
intact() {
	echo "spo $1 $ssd" >"$tab"
	"$TOOL" activate --tab "$tab" spo || fail "activate over $1"
	cmp <(dd if=/dev/mapper/spo bs=64k count=16 iflag=direct status=none) /tmp/oid.data ||
		fail "dirty data over $1"
	dm_remove spo
	log "loaded over $1 with its dirty data"
}

# --- a bare format: tied by size only, and said so ---------------------------------
# A null_blk origin has no identity: the kernel says so at format, and show
# tells it from the superblock.  A dm origin with a UUID has one: no word.
SIZE_ONLY="has no identity the kernel can read: the cache is tied to it by its size only"
nb=$(make_hdd oidn 16 0 32)
"$TOOL" wipe --force "$ssd" >/dev/null || fail "wipe"
dmesg -C
dm_create spo "0 $(sectors "$nb") ssdprio $nb $ssd 1 format" >/dev/null
line=$(dmesg | grep "$SIZE_ONLY") || fail "no word on a format over $nb: $(dmesg | grep ssdprio)"
[[ $line == *"origin_id"*"ssdprio-tool create"* ]] || fail "the line names no fix: $line"
dm_remove spo
out=$("$TOOL" show "$ssd") || fail "show"
grep -q "tied by: *origin size only" <<<"$out" || fail "show says nothing of it: $out"
"$TOOL" show --json "$ssd" | grep -q '"tied_by_size_only": true' || fail "show --json"
dmsetup create oidu --uuid "LVM-ssdprioTESTvgO0000000000000000lvO0000000000000000000" \
	--table "0 $(sectors "$nb") linear $nb 0" || fail "create oidu"
_settle
"$TOOL" wipe --force "$ssd" >/dev/null || fail "wipe"
dmesg -C
dm_create spo "0 $(sectors "$nb") ssdprio /dev/mapper/oidu $ssd 1 format" >/dev/null
dmesg | grep -q "$SIZE_ONLY" && fail "word on a format over an origin with a DM UUID"
dm_remove spo
"$TOOL" show "$ssd" | grep -q "tied by: *origin size only" && fail "show: size only over a DM UUID"
dm_remove oidu
remove_nullb oidn
log "a bare format over null_blk: $(sed 's/^\[[^]]*\] //' <<<"$line")"

# --- virtio disks: the serial ----------------------------------------------------------
va=$(vdisk oid_a)
vb=$(vdisk oid_b)
ida=$("$TOOL" origin-id "$va" 2>/dev/null) || fail "origin-id $va"
idb=$("$TOOL" origin-id "$vb" 2>/dev/null) || fail "origin-id $vb"
[[ $ida == 7350694402* && $idb == 7350694402* ]] || fail "not serial-derived ids: $ida $idb"
[[ $ida != "$idb" ]] || fail "two disks, one id: $ida"
dirty_create "$va"
dmesg | grep -q "$SIZE_ONLY" && fail "word on a format by the tool with a derived origin_id"
"$TOOL" show "$ssd" | grep -q "origin_id: *$ida (derived from the disk serial)" ||
	fail "show: $("$TOOL" show "$ssd" | grep origin_id)"
refused "$vb"
intact "$va"

# --- md arrays: the array UUID ---------------------------------------------------------
for m in m1 m2 m3 m4; do make_hdd "$m" 40 50000 8 >/dev/null; done
mk_md() { # DEV MEMBERS...
	local dev=$1
	shift
	mdadm --create "$dev" --run --quiet --level=1 --raid-devices=2 --assume-clean \
		--metadata=1.2 "$@" || fail "mdadm --create $dev"
}
mk_md /dev/md100 /dev/m1 /dev/m2
mk_md /dev/md101 /dev/m3 /dev/m4
_settle
assert_eq "$(sectors /dev/md100)" "$(sectors /dev/md101)" "equal-size arrays"
mda=$("$TOOL" origin-id /dev/md100 2>/dev/null) || fail "origin-id md100"
[[ $mda == 7350694401* ]] || fail "not an md-derived id: $mda"
dirty_create /dev/md100
"$TOOL" show "$ssd" | grep -q "derived from the md array UUID" || fail "show: no md origin_id"
refused /dev/md101

# The same array, stopped and assembled again under another name.
mdadm --stop /dev/md100 >/dev/null || fail "mdadm --stop md100"
_settle
again=""
for h in /sys/block/m1/holders/md*; do # udev may assemble it on its own
	[[ -e $h ]] && again=/dev/${h##*/}
done
if [[ -z $again ]]; then
	mdadm --assemble /dev/md102 /dev/m1 /dev/m2 --run --quiet || fail "mdadm --assemble"
	again=/dev/md102
fi
_settle
[[ $again != /dev/md100 ]] || fail "the array came back under its old name"
assert_eq "$("$TOOL" origin-id "$again" 2>/dev/null)" "$mda" "the array's id under $again"
intact "$again"

# The udev program case: the event's own properties, no database needed.
id_env=$(SUBSYSTEM=block MAJOR=$(($(stat -c 0x%t "$again"))) MINOR=$(($(stat -c 0x%T "$again"))) \
	MD_UUID=00000000:00000000:00000000:00000001 "$TOOL" origin-id "$again" 2>/dev/null)
[[ $id_env == 7350694401* && $id_env != "$mda" ]] || fail "the event's MD_UUID not used: $id_env"
log "serial and md array ids; equal-size other origins refused"

# --- udev: an md origin named by md's own link --------------------------------------
# md's rule (63-md-raid-arrays) makes /dev/md/NAME, runs blkid again and
# raises the array's link priority; ours runs after it: the array is known
# as the origin, hidden, and by-uuid names the mapped device.
if _udev_running; then
	RULE=/run/udev/rules.d/63-ssdprio.rules
	trap 'rm -f "$RULE"; udevadm control --reload; cleanup_md' EXIT
	mdadm --stop /dev/md101 >/dev/null 2>&1
	_settle
	mdadm --zero-superblock /dev/m3 /dev/m4 >/dev/null 2>&1
	mk_md /dev/md/oidhide /dev/m3 /dev/m4
	_settle
	[[ -b /dev/md/oidhide ]] || fail "no /dev/md/oidhide"
	# A file system on the array, then a cache in front of it: the raw
	# array carries the same UUID as the mapped device.
	fsuuid=$(cat /proc/sys/kernel/random/uuid)
	mkfs.ext4 -q -F -U "$fsuuid" /dev/md/oidhide || fail "mkfs.ext4"
	"$TOOL" wipe --force "$ssd" >/dev/null || fail "wipe"
	"$TOOL" create spo /dev/md/oidhide "$ssd" >/dev/null || fail "create over /dev/md/oidhide"
	dm_remove spo
	echo "spo /dev/md/oidhide $ssd" >"$tab"
	mkdir -p "${RULE%/*}"
	sed -e "s|/usr/local/sbin/ssdprio-tool|$TOOL|" -e "s|/etc/ssdprio/ssdpriotab|$tab|g" \
		"$REPO/tools/udev/63-ssdprio.rules" >"$RULE"
	udevadm control --reload || fail "udevadm control --reload"
	# The array stopped and assembled again: its events meet the rule.
	mdadm --stop /dev/md/oidhide >/dev/null || fail "mdadm --stop oidhide"
	_settle
	compgen -G "/sys/block/m3/holders/md*" >/dev/null || # udev may assemble it
		mdadm --assemble /dev/md/oidhide /dev/m3 /dev/m4 --run --quiet ||
		fail "mdadm --assemble oidhide"
	_settle
	for _ in $(seq 150); do
		[[ -b /dev/mapper/spo ]] && break
		sleep 0.2
	done
	arr=$(readlink -f /dev/md/oidhide)
	props=$(udevadm info --query=property --name="$arr")
	[[ -b /dev/mapper/spo ]] ||
		fail "udev did not activate spo over $arr: $(grep -E 'SSDPRIO|DEVLINKS' <<<"$props")"
	udevadm settle --timeout=60 || true
	props=$(udevadm info --query=property --name="$arr")
	grep -qx "SSDPRIO_ROLE=origin" <<<"$props" || fail "the array's role: $props"
	grep -qx "SYSTEMD_READY=0" <<<"$props" || fail "the array not hidden from systemd: $props"
	grep -qx "ID_FS_TYPE=ssdprio_origin" <<<"$props" || fail "the array's ID_FS_TYPE: $props"
	grep -qx "SSDPRIO_ID_FS_TYPE=ext4" <<<"$props" || fail "the array's type kept aside: $props"
	got=$(readlink -f "/dev/disk/by-uuid/$fsuuid" || true)
	assert_eq "$got" "$(readlink -f /dev/mapper/spo)" "by-uuid over an md origin names the mapped device"
	log "md origin by its md link: activated by udev, hidden, by-uuid -> $got"
	dm_remove spo
else
	log "udev is not running: the md origin's udev case not run"
fi
log "ok"
