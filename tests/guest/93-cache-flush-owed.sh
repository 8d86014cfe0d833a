#!/bin/bash
# flush_dirty owes data, not sets, and freezes no other writeback.
#
# The origin's writes take 500 ms (dm-delay), sets are 16 blocks.  32 sets
# are written dirty, then flush_dirty is asked while a writer rewrites one
# owed block of the first of them, whole, every 200 ms: each writeback of
# that set meets a rewrite.  What the rewrite replaced is no longer owed,
# so the flush ends, while the writer goes on.  New data written after the
# request, over dirty_target, is cleaned meanwhile (sets_cleaned moves
# while flush_state says running).  Every block written before the request
# and not rewritten since is then on the origin.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 64)
nh=$(sectors "$hdd")
leg_load hddleg "0 $nh linear $hdd 0"
dm=$(dm_create sp "0 $nh ssdprio /dev/mapper/hddleg $ssd 13 format set_size 16 evict_wait 50 dirty_target 100 dirty_max_age 0 read_alloc off seq_cutoff 0")
assert_eq "$(status_get sp set_blocks)" 16 "set_blocks"
rewriter=
trap '[[ -n $rewriter ]] && kill "$rewriter" 2>/dev/null; wait' EXIT

# Owed: the even origin sets (64 KiB each) of a 4 MiB range whose sets have
# cache sets of their own, so that no writeback takes a neighbour along and
# the flush has 32 writebacks to do.  New: 2 MiB elsewhere, after the request.
owed_mb=$(range_apart "$ssd" 4 0)
new_mb=$(range_apart "$ssd" 2 8 "$owed_mb:4")
head -c $((4 << 20)) /dev/urandom >/tmp/owed || fail "random data"
python3 - "$dm" /tmp/owed "$owed_mb" <<'PY' || fail "owed writes"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
data = open(sys.argv[2], "rb").read()
base = int(sys.argv[3]) << 20
m = mmap.mmap(-1, 65536)
for s in range(0, 64, 2):
    m.seek(0)
    m.write(data[s * 65536:(s + 1) * 65536])
    assert os.pwritev(fd, [m], base + s * 65536) == 65536
os.close(fd)
PY
assert_eq "$(status_get sp dirty_blocks)" 512 "dirty blocks before the request"

# The origin's writes (and flushes) take 500 ms from here on: a writeback
# takes a second at least.
leg_load hddleg "0 $nh delay $hdd 0 0 $hdd 0 500"
# Block 5 of the first owed set, rewritten whole every 200 ms (one process:
# a dd per write would cost more than that under TCG).
python3 - "$dm" $(((owed_mb << 20) + 5 * 4096)) <<'PY' &
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
m = mmap.mmap(-1, 4096)
while True:
    m.seek(0)
    m.write(os.urandom(4096))
    assert os.pwritev(fd, [m], int(sys.argv[2])) == 4096
    time.sleep(0.2)
PY
rewriter=$!
sleep 1

# counters: "flush_state sets_cleaned pressure_writebacks lockout_writebacks
# sets_evicted" from one status line.
counters() {
	local line i
	local -a f
	line=$(dm_status sp) || fail "status of sp"
	read -ra f <<<"${line%%$'\n'*}"
	declare -A v
	for ((i = 3; i < ${#f[@]} - 1; i += 2)); do v[${f[i]}]=${f[i + 1]}; done
	echo "${v[flush_state]} ${v[sets_cleaned]} ${v[pressure_writebacks]} ${v[lockout_writebacks]} ${v[sets_evicted]}"
}
read -r _ c0 p0 l0 e0 <<<"$(counters)"
others0=$((c0 + p0 + l0 + e0))
"$REPO/build/ssdprio-tool" flush --wait --timeout 90 sp >/tmp/flush.out 2>&1 &
flusher=$!
# After the request, new data over the target, cleaned while the flush runs.
sleep 0.5
dmsetup message sp 0 dirty_target 0 || fail "dirty_target 0"
dd if=/dev/urandom of="$dm" bs=64k seek=$((new_mb << 4)) count=32 oflag=direct status=none ||
	fail "new writes"
moved=0
while kill -0 "$flusher" 2>/dev/null; do
	read -r state c p l e <<<"$(counters)"
	[[ $state == running ]] && ((c + p + l + e > others0)) && moved=1
	sleep 0.5
done
wait "$flusher"
rc=$?
cat /tmp/flush.out >&2
if ((rc != 0)); then
	log "$(dmsetup status sp)"
	fail "flush --wait exited $rc (4: timed out after 90 s) with a rewriter of an owed block running"
fi
kill -0 "$rewriter" 2>/dev/null || fail "the rewriter stopped: the test proves nothing"
assert_eq "$moved" 1 "a cleaning, eviction or lock-out writeback started while the flush ran"
assert_ge "$(status_get sp writes_beside_writeback)" 1 "rewrites beside the flush's writebacks"
kill "$rewriter"
wait "$rewriter" 2>/dev/null
rewriter=
log "flush ended under the rewriter: $(status_get sp sets_cleaned) sets cleaned, $(status_get sp writes_beside_writeback) writes beside writebacks"

# Everything written before the request but the rewritten block: on the origin.
python3 - "$hdd" /tmp/owed "$owed_mb" <<'PY' || fail "owed data not on the origin after the flush"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
data = open(sys.argv[2], "rb").read()
base = int(sys.argv[3]) << 20
m = mmap.mmap(-1, 4096)
bad = []
for s in range(0, 64, 2):
    for b in range(16):
        if s == 0 and b == 5:
            continue
        off = s * 65536 + b * 4096
        assert os.preadv(fd, [m], base + off) == 4096
        if m[:] != data[off:off + 4096]:
            bad.append((s, b))
if bad:
    sys.exit("origin differs in (set, block) %s" % bad[:10])
PY

# And the device is what the origin holds once the rest is written back.
leg_load hddleg "0 $nh linear $hdd 0"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
for r in "$owed_mb 4" "$new_mb 2"; do
	set -- $r
	cmp <(dd if="$dm" bs=1M skip="$1" count="$2" iflag=direct status=none) \
		<(dd if="$hdd" bs=1M skip="$1" count="$2" iflag=direct status=none) ||
		fail "device and origin differ at $1 MiB after the final flush"
done
dm_remove sp
dm_remove hddleg
remove_nullb hdd
remove_nullb ssd
log "ok"
