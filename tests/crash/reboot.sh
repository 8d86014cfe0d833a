#!/bin/bash
# Warm restart across a guest reboot: after a clean remove and a
# reboot, the cache loads warm: the same valid and dirty blocks, reads of the
# cached range are SSD hits, the data verifies, and after flush_dirty the
# origin alone holds it.
#
# Boot 1 (fresh disks): ssdprio formatted (writeback, default geometry,
#   evict_wait of an hour and no eviction under pressure, so nothing is
#   written back in this boot) and removed; W (16 MiB) and P (8 MiB) placed
#   where their origin sets share no cache set (range_apart: blocks of origin
#   sets in one cache set compete for its frames); P written on the origin
#   alone (raw hdd); ssdprio created again; W written through it (dirty); P
#   read through it (read misses, promoted: valid and
#   clean), then again (the misses of this second read are saved); valid and
#   dirty counts saved; `dmsetup remove`; clean poweroff.
# Boot 2: the same table without `format`: valid_blocks and dirty_blocks as
#   saved; W read back with fio verify: every read a hit, no miss; P: hits,
#   and no more misses than its second read in boot 1; flush_dirty, remove,
#   both verified on the origin alone.
#
# boots: 2
# disks: hdd:256M ssd:64M
# timeout: 420
# shellcheck source=tests/crash/lib.sh
. "$(dirname "$0")/lib.sh"

BS=64k
W_MB=16
W_BLOCKS=$((W_MB * 256)) # in 4 KiB blocks
READS_W=$((W_MB * 16)) # fio reads of BS to read W
TABLE_ARGS=(evict_wait 3600000 evict_max_wait 0)

fio_w() { # fio_w DEV ARGS...: sequential write/verify of W
	local dev=$1
	shift
	fio_run --name=warmW --filename="$dev" --offset="${W_OFF}M" --size="${W_MB}M" --rw=write --bs=$BS \
		--direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 "$@" >/dev/null
}
fio_p() {
	local dev=$1
	shift
	fio_run --name=warmP --filename="$dev" --offset="${P_OFF}M" --size=8M --rw=write --bs=$BS \
		--direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 "$@" >/dev/null
}

# settle: wait until the promotion copies are done (valid_blocks stops moving).
settle() {
	local v prev=-1
	for _ in $(seq 60); do
		v=$(status_get "$CX" valid_blocks)/$(status_get "$CX" promotions)
		[[ $v == "$prev" ]] && return 0
		prev=$v
		sleep 1
	done
	fail "valid_blocks/promotions still changing after 60 s: $v"
}

# reads DEV: "hits misses" counters.
counters() { echo "$(status_get "$CX" read_hits) $(status_get "$CX" read_misses)"; }

case $CRASH_BOOT in
1)
	hdd=$(vdisk hdd)
	dev=$(cx_create format "${TABLE_ARGS[@]}")
	assert_meta_state formatted
	dm_remove "$CX"
	# Apart from each other and from udev's probes of the device's ends.
	end=$(($(sectors "$hdd") / 2048 - 2)):2
	W_OFF=$(range_apart "$(vdisk ssd)" "$W_MB" 0 0:2 "$end")
	P_OFF=$(range_apart "$(vdisk ssd)" 8 64 0:2 "$end" "$W_OFF:$W_MB")
	state_put w_off "$W_OFF"
	state_put p_off "$P_OFF"
	log "W at ${W_OFF} MiB, P at ${P_OFF} MiB"
	fio_p "$hdd" --do_verify=0
	dev=$(cx_create "${TABLE_ARGS[@]}")
	fio_w "$dev" --do_verify=0
	fio_p "$dev" --verify_only=1
	settle
	# A second read of P: what hits now must hit after the reboot too.
	dmsetup message "$CX" 0 reset_stats || fail "reset_stats"
	fio_p "$dev" --verify_only=1
	read -r hits misses < <(counters)
	log "P read again: $hits read hits, $misses read misses"
	state_put p_misses "$misses"
	settle
	log "status before remove: $(cx_status)"
	valid=$(status_get "$CX" valid_blocks)
	dirty=$(status_get "$CX" dirty_blocks)
	assert_eq "$dirty" "$W_BLOCKS" "dirty blocks after writing W"
	assert_ge "$((valid - dirty))" 1 "some P blocks were promoted (valid and clean)"
	state_put valid "$valid"
	state_put dirty "$dirty"
	dm_remove "$CX"
	log "removed; powering off"
	;;
2)
	W_OFF=$(state_get w_off)
	P_OFF=$(state_get p_off)
	valid=$(state_get valid)
	dirty=$(state_get dirty)
	dev=$(cx_create "${TABLE_ARGS[@]}")
	log "status after load: $(cx_status)"
	assert_meta_state clean
	assert_eq "$(status_get "$CX" valid_blocks)" "$valid" "valid_blocks after the warm load (before the reboot: $valid)"
	assert_eq "$(status_get "$CX" dirty_blocks)" "$dirty" "dirty_blocks after the warm load (before the reboot: $dirty)"

	dmsetup message "$CX" 0 reset_stats || fail "reset_stats"
	fio_w "$dev" --verify_only=1
	read -r hits misses < <(counters)
	log "W: $hits read hits, $misses read misses"
	assert_eq "$misses" 0 "read misses while reading W, all of it cached (dirty) before the reboot"
	assert_ge "$hits" "$READS_W" "read hits while reading W"

	dmsetup message "$CX" 0 reset_stats || fail "reset_stats"
	fio_p "$dev" --verify_only=1
	read -r hits misses < <(counters)
	p_misses=$(state_get p_misses)
	log "P: $hits read hits, $misses read misses (before the reboot: $p_misses misses)"
	assert_ge "$hits" 1 "read hits while reading P (promoted before the reboot)"
	assert_le "$misses" "$p_misses" "read misses while reading P (no more than its second read before the reboot)"

	cx_drain
	dm_remove "$CX"
	hdd=$(vdisk hdd)
	fio_w "$hdd" --verify_only=1
	fio_p "$hdd" --verify_only=1
	log "W and P verified on the origin alone"
	;;
esac
