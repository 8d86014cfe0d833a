#!/bin/bash
# Validation of the test-only HDD model (tests/hddsim, docs/bench.md): a 7200 rpm,
# 150 MB/s, ~8 ms random access disk over a zero-latency memory null_blk.
#   - sequential 1 MiB reads are sequential to the model and never faster than
#     seq_mbps (their rate is logged: a loaded host only lowers it),
#   - random 4 KiB reads give ~120 IOPS, never above 250 (logged likewise),
#   - two interleaved sequential readers get < 50% of one reader's throughput,
#   - status counters, suspend/resume with I/O queued, remove.
# timeout: 1500
. "$(dirname "$0")/lib.sh"

HDDSIM_KO=$REPO/tests/hddsim/dm-hddsim.ko
[[ -f $HDDSIM_KO ]] || make -C "$REPO/tests/hddsim" >/dev/null ||
	fail "cannot build $HDDSIM_KO"

cleanup() {
	cleanup_all
	_unload "$HDDSIM_KO"
}
trap cleanup EXIT

load_module "$HDDSIM_KO"

SIZE_MB=256
back=$(make_hdd hddback "$SIZE_MB" 0 64) # zero latency, deep queue: the model sets the pace
len=$(sectors "$back")
dev=$(dm_create hddsim "0 $len hddsim $back")
table=$(dmsetup table hddsim)
log "table: $table"
[[ $table == *"rpm 7200 seq_mbps 150 avg_seek_us 4000 t2t_us 500"* ]] ||
	fail "unexpected default parameters: $table"

# Bad tables are rejected.
dm_try_create bad "0 $len hddsim $back rpm" 2>/dev/null && fail "odd key/value list accepted"
dm_try_create bad "0 $len hddsim $back bogus 1" 2>/dev/null && fail "unknown key accepted"
dm_try_create bad "0 $len hddsim $back rpm 0" 2>/dev/null && fail "rpm 0 accepted"

# fio_json OUT ARGS...: run fio with JSON output into OUT (checked by fio_run).
fio_json() {
	local out=$1
	shift
	fio_run --output-format=json --output="$out" "$@" >/dev/null
}
# Sum over jobs of read bytes/s and read IOPS.
read_bw_mbps() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print("%.1f" % (sum(x["read"]["bw_bytes"] for x in j["jobs"]) / 1e6))' "$1"
}
read_iops() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
print("%.1f" % sum(x["read"]["iops"] for x in j["jobs"]))' "$1"
}

tmp=$(mktemp -d)
common=(--filename="$dev" --direct=1 --ioengine=libaio --time_based --runtime=6
	--ramp_time=1 --group_reporting=0)

# 1. Sequential 1 MiB reads: the model sees them sequential (its counters;
# the rate it gives is a figure: a loaded host only lowers it, so only a
# floor far below the model's, against a model that stalls, is asserted).
s0=$(status_get hddsim seq)
k0=$(status_get hddsim seeks)
fio_json "$tmp/seq.json" "${common[@]}" --name=seq --rw=read --bs=1M --iodepth=2
seq_mb=$(read_bw_mbps "$tmp/seq.json")
ds=$(($(status_get hddsim seq) - s0))
dk=$(($(status_get hddsim seeks) - k0))
log "sequential 1 MiB reads: $seq_mb MB/s (model 150); $ds sequential, $dk seeks in the model"
assert_ge "$ds" $((20 * dk + 20)) "sequential reads taken as sequential by the model (not a seek each)"
assert_ge "$seq_mb" 15 "sequential read MB/s (a floor for a stalled model, not a rate)"
assert_le "$seq_mb" 160 "sequential read MB/s above the media rate"

# 2. Random 4 KiB reads.
fio_json "$tmp/rand.json" "${common[@]}" --name=rand --rw=randread --bs=4k \
	--iodepth=4 --randrepeat=0 --randseed=11
iops=$(read_iops "$tmp/rand.json")
log "random 4 KiB reads: $iops IOPS (model ~120)"
assert_ge "$iops" 15 "random 4 KiB read IOPS (a floor for a stalled model)"
assert_le "$iops" 250 "random 4 KiB read IOPS"

# 3. One sequential reader vs two interleaved ones (128 KiB, 128 MiB apart).
fio_json "$tmp/one.json" "${common[@]}" --rw=read --bs=128k --iodepth=1 \
	--size=128M --name=one --offset=0
one=$(read_bw_mbps "$tmp/one.json")
fio_json "$tmp/two.json" "${common[@]}" --rw=read --bs=128k --iodepth=1 \
	--size=128M --name=a --offset=0 --name=b --offset=128M
two=$(read_bw_mbps "$tmp/two.json")
log "sequential 128 KiB reads: one reader $one MB/s, two interleaved readers $two MB/s total"
assert_le "$(awk -v a="$two" -v b="$one" 'BEGIN { print a / b }')" 0.5 \
	"two interleaved readers' total / one reader"

# 4. Counters.
st=$(dmsetup status hddsim)
log "status: $st"
assert_ge "$(status_get hddsim seq)" 100 "sequential hits"
assert_ge "$(status_get hddsim seeks)" 100 "seeks"
assert_ge "$(status_get hddsim busy_us)" 1000000 "busy time"
assert_eq "$(status_get hddsim queued)" 0 "nothing queued when idle"

# 5. Suspend and resume with I/O queued, then remove.
fio --name=bg --filename="$dev" --direct=1 --ioengine=libaio --rw=randread \
	--bs=4k --iodepth=32 --time_based --runtime=30 --randrepeat=0 --randseed=3 \
	--output="$tmp/bg.txt" &
bg=$!
# fio may take a while to start on a loaded host: wait (up to 60 s) for the queue.
for _ in $(seq 300); do
	q=$(status_get hddsim queued)
	((q >= 8)) && break
	sleep 0.2
done
log "queued before suspend: $q"
assert_ge "$q" 8 "bios queued in the model"
timeout 180 dmsetup suspend hddsim || fail "dmsetup suspend hung or failed with I/O queued"
assert_eq "$(status_get hddsim queued)" 0 "queue drained by suspend"
dmsetup resume hddsim || fail "resume failed"
wait "$bg" || fail "fio across suspend/resume failed: $(cat "$tmp/bg.txt")"
grep -Eq 'err= *[1-9]' "$tmp/bg.txt" && fail "fio error across suspend: $(grep err= "$tmp/bg.txt")"
assert_ge "$(status_get hddsim passthrough)" 1 "bios released at suspend counted"

# Suspend with --noflush and a writer, then remove right after resume.
fio --name=bgw --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=4k --iodepth=16 --time_based --runtime=4 --randrepeat=0 --randseed=4 \
	--output="$tmp/bgw.txt" &
bg=$!
sleep 1.5
timeout 180 dmsetup suspend --noflush hddsim || fail "suspend --noflush hung with writes queued"
dmsetup resume hddsim || fail "resume failed"
wait "$bg" || fail "fio write across suspend failed: $(cat "$tmp/bgw.txt")"
dm_remove hddsim
rm -rf "$tmp"
log "hddsim: seq $seq_mb MB/s, rand $iops IOPS, one $one MB/s vs two $two MB/s"
