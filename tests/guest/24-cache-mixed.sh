#!/bin/bash
# Concurrent reads and writes, every read checked, while eviction writes
# back and frees sets between bursts: 4 writer jobs (random 4 KiB overwrites,
# each on its own 16 MiB region, verifying their recent writes as they go)
# and 2 reader jobs (verifying data written before) over a working set 3x the
# cache, evict_wait 50 ms, the I/O paused now and then so quiet windows
# occur. Afterwards (flush_dirty, remove) the origin alone holds exactly
# what the target showed, and what fio last wrote. Twice: with lockout_clean
# off, so that room runs short and eviction writes back; and with it on (the
# default), where dirty runs that lock blocks out are written back under the
# load instead.
# timeout: 720
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 100 100000 4)
ssd=$(make_ssd ssd 36) # ~32 MiB of cache sets
len=$(sectors "$hdd")
AREA_MB=96
# Short idle interval and batch delay: writeback (idle class) makes progress in
# the short quiet windows, instead of one origin write per 200 ms.
sample() { # evicted written_back
	local st
	st=$(dmsetup status sp)
	awk '{ for (i = 4; i < NF; i += 2) v[$i] = $(i + 1)
		print v["sets_evicted"], v["blocks_written_back"] }' <<<"$st"
}

run_mixed() { # LOCKOUT_CLEAN (on|off)
	dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 9 format evict_wait 50 idle_dispatch_interval 5 batch_mode_delay 150 lockout_clean $1")
	total=$(status_get sp total_sets)
	log "cache sets: $total, working set ${AREA_MB} MiB"

	# fio's verify needs the same job definitions to check again later, so they
	# are fixed here. --thread: one process, so SIGSTOP pauses all of it.
	# Writers: norandommap, so blocks are overwritten (fio keeps
	# the newest write of each block to verify); readers: read-only verify.
	G=(--ioengine=psync --direct=1 --bs=4k --verify=crc32c --verify_fatal=1 --randrepeat=0 --thread)
	RW=(--name=rw --rw=randwrite --norandommap --numjobs=4 --offset=0 --size=16M
		--offset_increment=16M --io_size=16M --randseed=11)
	RO_FILL=(--name=ro --offset=64M --size=32M --bs=128k --verify_interval=4k --rw=write --do_verify=0)
	RO=(--name=ro --rw=randread --norandommap --numjobs=2 --offset=64M --size=16M
		--offset_increment=16M --io_size=6M --randseed=5)
	RO_CHECK=(--name=ro --offset=64M --size=32M --rw=read)

	# The readers' data: [64M, 96M), written through the target (cache full, dirty).
	fio_run --filename="$dev" "${G[@]}" "${RO_FILL[@]}" >/dev/null
	sleep 1 # the quiet after the fill starts eviction; let it finish first
	wait_status sp evict_state == normal 120
	read -r ev0 wb0 < <(sample)
	log "before the run: $(dmsetup status sp)"

	fio --filename="$dev" "${G[@]}" "${RW[@]}" --verify_backlog=32 "${RO[@]}" \
		>/tmp/mixed.log 2>&1 &
	fpid=$!
	pauses=0 ev1=$ev0 wb1=$wb0
	while kill -0 $fpid 2>/dev/null; do
		sleep "1.$((RANDOM % 5))"
		kill -STOP $fpid 2>/dev/null || break
		pauses=$((pauses + 1))
		sleep "0.$((3 + RANDOM % 4))" # quiet: eviction starts after 50 ms
		kill -CONT $fpid
		# sampled while fio still runs
		kill -0 $fpid 2>/dev/null && read -r ev1 wb1 < <(sample)
	done
	wait $fpid
	rc=$?
	if ((rc != 0)) || grep -Eq 'err= *[1-9]|verify:' /tmp/mixed.log; then
		grep -E 'err=|verify:|fio:' /tmp/mixed.log | head -20 >&2
		fail "fio failed (status $rc) under eviction"
	fi
	log "after the run ($pauses pauses): $(dmsetup status sp)"
	if [[ $1 == off ]]; then
		assert_ge "$((ev1 - ev0))" 1 "sets evicted during the run"
	else
		assert_ge "$(status_get sp lockout_writebacks)" 1 "lock-out writebacks during the run"
	fi
	assert_ge "$((wb1 - wb0))" 1 "blocks written back during the run"

	# What the target shows now, then the origin alone after writeback.
	dd if="$dev" of=/tmp/through.img bs=1M count=$AREA_MB iflag=direct status=none ||
		fail "reading the target failed"
	dmsetup message sp 0 flush_dirty
	wait_status sp dirty_blocks == 0 180
	dm_remove sp
	dd if="$hdd" of=/tmp/origin.img bs=1M count=$AREA_MB iflag=direct status=none
	if ! cmp -s /tmp/through.img /tmp/origin.img; then
		python3 - /tmp/through.img /tmp/origin.img <<-'PY' >&2
	import sys
	a, b = (open(p, "rb").read() for p in sys.argv[1:3])
	bad = [i for i in range(0, len(a), 4096) if a[i:i + 4096] != b[i:i + 4096]]
	print(f"{len(bad)} blocks differ, first at bytes {bad[:8]}")
	PY
		fail "the origin after flush_dirty/remove differs from what the target showed"
	fi
	fio_run --filename="$hdd" "${G[@]}" "${RW[@]}" --verify_only=1 >/dev/null
	fio_run --filename="$hdd" "${G[@]}" "${RO_CHECK[@]}" >/dev/null
	log "ok (lockout_clean $1)"
}

run_mixed off
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
run_mixed on
