#!/bin/bash
# Many jobs at once on one cache set and on many, with suspend and resume,
# messages and status reads beside them: every read returns what was last
# written (fio verify), nothing hangs, and after flush_dirty and remove the
# origin alone holds what fio wrote. Four writers share one cache set (each
# its own slice of one origin set), four more have a region each over many
# sets, two readers verify data written before. Small sets (256 KiB) so the
# "many sets" jobs cross set boundaries all the time. On two vCPUs the jobs
# run truly at once; on one, they interleave at every preemption.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256 100000 4)
ssd=$(make_ssd ssd 40)
len=$(sectors "$hdd")
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 7 format set_size 64 evict_wait 50 idle_dispatch_interval 5")
log "cache sets: $(status_get sp total_sets), vCPUs: $(nproc)"

# psync: with more than one write of a job in flight, fio's verify of
# overwritten blocks would race itself. The jobs make the concurrency.
G=(--ioengine=psync --direct=1 --bs=4k --verify=crc32c --verify_fatal=1 --randrepeat=0 --thread)
# One origin set (256 KiB) at 8 MiB, four 64 KiB slices of it.
ONE=(--name=one --rw=randwrite --numjobs=4 --offset=8M --size=64k --offset_increment=64k
	--io_size=4M --norandommap --verify_backlog=16 --randseed=3)
# Four 8 MiB regions at 16 MiB: 32 sets each.
MANY=(--name=many --rw=randwrite --numjobs=4 --offset=16M --size=8M --offset_increment=8M
	--io_size=8M --norandommap --verify_backlog=16 --randseed=7)
RO_FILL=(--name=ro --offset=64M --size=16M --bs=64k --verify_interval=4k --rw=write --do_verify=0)
RO=(--name=ro --rw=randread --numjobs=2 --offset=64M --size=8M --offset_increment=8M
	--io_size=4M --norandommap --randseed=5)
RO_CHECK=(--name=ro --offset=64M --size=16M --rw=read)

fio_run --filename="$dev" "${G[@]}" "${RO_FILL[@]}" >/dev/null

fio --filename="$dev" "${G[@]}" "${ONE[@]}" "${MANY[@]}" "${RO[@]}" >/tmp/95-fio.log 2>&1 &
fpid=$!
trap 'kill $fpid 2>/dev/null; wait' EXIT
rounds=0
while kill -0 $fpid 2>/dev/null; do
	case $((rounds % 4)) in
	0)
		timeout 60 dmsetup suspend sp || fail "suspend under load hung or failed"
		sleep 0.$((RANDOM % 3))
		dmsetup resume sp || fail "resume failed"
		;;
	1) dmsetup message sp 0 flush_dirty || fail "flush_dirty under load refused" ;;
	2) dmsetup message sp 0 evict_wait $((20 + RANDOM % 100)) || fail "evict_wait message refused" ;;
	3) dmsetup message sp 0 reset_stats || fail "reset_stats refused" ;;
	esac
	dmsetup status sp >/dev/null || fail "status failed under load"
	rounds=$((rounds + 1))
	sleep 0.$((RANDOM % 5))
done
trap - EXIT
wait $fpid
rc=$?
if ((rc != 0)) || grep -Eq 'err= *[1-9]|verify:' /tmp/95-fio.log; then
	grep -E 'err=|verify:|fio:' /tmp/95-fio.log | head -20 >&2
	fail "fio failed (status $rc) beside suspend and messages"
fi
log "$rounds rounds of suspend, messages and status beside the jobs"
assert_ge "$rounds" 4 "rounds beside the jobs"

# What the target shows is what the origin keeps once written back.
dd if="$dev" of=/tmp/95-through.img bs=1M count=80 iflag=direct status=none ||
	fail "reading the target failed"
dmsetup message sp 0 flush_dirty || fail "flush_dirty refused"
wait_status sp dirty_blocks == 0 300
dm_remove sp
dd if="$hdd" of=/tmp/95-origin.img bs=1M count=80 iflag=direct status=none
cmp -s /tmp/95-through.img /tmp/95-origin.img ||
	fail "the origin after flush_dirty and remove differs from what the target showed"
# The writers in the run's order: fio seeds each job by its place.
fio_run --filename="$hdd" "${G[@]}" --verify_only=1 "${ONE[@]}" "${MANY[@]}" >/dev/null
fio_run --filename="$hdd" "${G[@]}" "${RO_CHECK[@]}" >/dev/null
rm -f /tmp/95-through.img /tmp/95-origin.img
log "every job's last writes and the readers' data verified on the origin alone"
