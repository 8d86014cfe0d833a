#!/bin/bash
# One cache under two kernels: a cache left dirty under one kernel loads
# warm under the other with every block's data, both ways; the on-SSD
# format and the origin's identity do not depend on the kernel.
#
# Two caches, one for each kind of origin identity that another kernel
# could read differently: "xd" over the whole virtio disk hdd, made by `ssdprio-tool
# create` (the origin_id the tool derives from the disk's serial in sysfs;
# `activate` derives it again at each load), and "xp" over the first GPT
# partition of phdd, made by a raw table with `format` (the kernel records
# the partition's UUID itself). No writeback in any boot (evict_wait an
# hour, evict_max_wait 0): what is written stays dirty.
#
# Boot 1 (the first kernel, fresh disks): both caches made; W written
#   through each (dirty); counts saved; removed (clean shutdown).
# Boot 2 (the second kernel): the origin's serial and the tool's origin_id
#   as in boot 1; xd activated from a tab, xp by a table without `format`:
#   meta_state clean, the same valid and dirty blocks, W reads back verified
#   with every read a hit; then V written (dirty) in other sets; removed.
# Boot 3 (the first kernel): the same load checks; W and V verified, all
#   hits; flush_dirty; removed; W and V verified on the origins alone.
#
# boots: 3
# kernels: 7.3 6.1 7.3
# disks: hdd:64M ssd:32M phdd:72M pssd:32M
# timeout: 240
# shellcheck source=tests/crash/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
FEATURES=(evict_wait 3600000 evict_max_wait 0)
MB=4
BLOCKS=$((MB * 256)) # 4 KiB blocks
TAB=/tmp/crosskernel.tab

# fio_at DEV OFF_MB ARGS...: sequential write/verify of MB MiB at OFF_MB.
fio_at() {
	local dev=$1 off=$2
	shift 2
	fio_run --name="x$off" --filename="$dev" --offset="${off}M" --size="${MB}M" --rw=write \
		--bs=64k --direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 "$@" >/dev/null
}

# verified NAME DEV OFF_MB: the range reads back verified, every read a hit.
verified() {
	local name=$1 dev=$2 off=$3
	dmsetup message "$name" 0 reset_stats || fail "reset_stats $name"
	fio_at "$dev" "$off" --verify_only=1
	assert_eq "$(status_get "$name" read_misses)" 0 "$name: read misses over ${off} MiB (all of it cached, dirty)"
	assert_ge "$(status_get "$name" read_hits)" "$((MB * 16))" "$name: read hits over ${off} MiB"
}

# loaded NAME: a warm load: clean shutdown, the counts as saved.
loaded() {
	log "$1 after load: $(dmsetup status "$1")"
	assert_eq "$(status_get "$1" meta_state)" clean "$1: meta_state"
	assert_eq "$(status_get "$1" valid_blocks)" "$(state_get "$1.valid")" "$1: valid_blocks after the load"
	assert_eq "$(status_get "$1" dirty_blocks)" "$(state_get "$1.dirty")" "$1: dirty_blocks after the load"
}

save_counts() {
	state_put "$1.valid" "$(status_get "$1" valid_blocks)"
	state_put "$1.dirty" "$(status_get "$1" dirty_blocks)"
}

hdd=$(vdisk hdd)
ssd=$(vdisk ssd)
phdd=$(vdisk phdd)
pssd=$(vdisk pssd)
part=${phdd}1
serial=$(<"/sys/block/${hdd#/dev/}/serial")
log "kernel $(uname -r); hdd $hdd, serial '$serial'"
echo "xd /dev/disk/by-id/virtio-hdd /dev/disk/by-id/virtio-ssd ${FEATURES[*]}" >"$TAB"
load_module

case $CRASH_BOOT in
1)
	state_put serial "$serial"
	state_put kernel "$(uname -r)"
	oid=$("$TOOL" origin-id "$hdd") || fail "origin-id $hdd"
	[[ -n $oid ]] || fail "ssdprio-tool derives no origin_id for $hdd (serial '$serial')"
	state_put oid "$oid"
	"$TOOL" create xd "$hdd" "$ssd" "${FEATURES[@]}" >/dev/null || fail "create xd"
	"$TOOL" show "$ssd" | grep -q "$oid" || fail "xd's superblock lacks the origin_id $oid: $("$TOOL" show "$ssd")"

	printf 'label: gpt\nstart=2048, size=%s\n' $((64 << 11)) | sfdisk -q "$phdd" ||
		fail "sfdisk $phdd"
	_settle
	for _ in {1..50}; do [[ -b $part ]] && break; sleep 0.1; done
	[[ -b $part ]] || fail "no $part after sfdisk"
	dm_create xp "0 $(sectors "$part") ssdprio $part $pssd $((${#FEATURES[@]} + 1)) format ${FEATURES[*]}" >/dev/null
	"$TOOL" show --json "$pssd" | grep -q '"origin_uid_type": 257' ||
		fail "xp: the kernel recorded no partition UUID: $("$TOOL" show --json "$pssd")"

	end=$(($(sectors "$hdd") / 2048 - 2)):2
	w=$(range_apart "$ssd" "$MB" 0 0:2 "$end")
	pw=$(range_apart "$pssd" "$MB" 0 0:2 "$(($(sectors "$part") / 2048 - 2)):2")
	state_put w "$w"
	state_put pw "$pw"
	fio_at /dev/mapper/xd "$w" --do_verify=0
	fio_at /dev/mapper/xp "$pw" --do_verify=0
	for n in xd xp; do
		assert_eq "$(status_get "$n" dirty_blocks)" "$BLOCKS" "$n: dirty blocks after writing W"
		save_counts "$n"
		log "$n before remove: $(dmsetup status "$n")"
		dm_remove "$n"
	done
	;;
2)
	log "formatted under $(state_get kernel)"
	assert_eq "$serial" "$(state_get serial)" "hdd's serial under this kernel"
	oid=$("$TOOL" origin-id "$hdd") || fail "origin-id $hdd"
	assert_eq "$oid" "$(state_get oid)" "the origin_id derived from hdd under this kernel"
	"$TOOL" activate --tab "$TAB" xd || fail "activate xd"
	dm_create xp "0 $(sectors "$part") ssdprio $part $pssd ${#FEATURES[@]} ${FEATURES[*]}" >/dev/null
	w=$(state_get w)
	pw=$(state_get pw)
	loaded xd
	loaded xp
	verified xd /dev/mapper/xd "$w"
	verified xp /dev/mapper/xp "$pw"

	# V: dirty data of this kernel, in sets apart from W's.
	end=$(($(sectors "$hdd") / 2048 - 2)):2
	v=$(range_apart "$ssd" "$MB" 0 0:2 "$end" "$w:$MB")
	pv=$(range_apart "$pssd" "$MB" 0 0:2 "$(($(sectors "$part") / 2048 - 2)):2" "$pw:$MB")
	state_put v "$v"
	state_put pv "$pv"
	fio_at /dev/mapper/xd "$v" --do_verify=0
	fio_at /dev/mapper/xp "$pv" --do_verify=0
	for n in xd xp; do
		assert_eq "$(status_get "$n" dirty_blocks)" "$((2 * BLOCKS))" "$n: dirty blocks after writing V"
		save_counts "$n"
		dm_remove "$n"
	done
	state_put kernel2 "$(uname -r)"
	;;
3)
	log "written under $(state_get kernel), then $(state_get kernel2)"
	assert_eq "$(state_get kernel)" "$(uname -r)" "boot 3 runs boot 1's kernel"
	"$TOOL" activate --tab "$TAB" xd || fail "activate xd"
	dm_create xp "0 $(sectors "$part") ssdprio $part $pssd ${#FEATURES[@]} ${FEATURES[*]}" >/dev/null
	loaded xd
	loaded xp
	for r in "xd $(state_get w)" "xd $(state_get v)" "xp $(state_get pw)" "xp $(state_get pv)"; do
		read -r n off <<<"$r"
		verified "$n" "/dev/mapper/$n" "$off"
	done
	for n in xd xp; do
		dmsetup message "$n" 0 flush_dirty || fail "flush_dirty $n"
		wait_status "$n" dirty_blocks -eq 0 120
		dm_remove "$n"
	done
	fio_at "$hdd" "$(state_get w)" --verify_only=1
	fio_at "$hdd" "$(state_get v)" --verify_only=1
	fio_at "$part" "$(state_get pw)" --verify_only=1
	fio_at "$part" "$(state_get pv)" --verify_only=1
	log "W and V verified on both origins alone"
	;;
esac
