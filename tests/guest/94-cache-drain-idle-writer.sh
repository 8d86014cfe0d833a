#!/bin/bash
# A drain finishes on a set that an idle-class writer keeps a write in
# flight on, and so does `ssdprio-tool detach`.
#
# A writeback cannot start while a write is in flight on its set, and under
# the strictest idle policy (idle_max_wait 0, no learnt gaps, an idle
# interval and batch delay of an hour) the idle queue holds the origin legs
# of an `ionice -c3` writer's writethrough writes (as a drain makes them)
# all but for ever.
# Four of them at a time on one 4 MiB region keep its set held: the drain
# must take the set anyway and release the idle writes in flight on it from
# the idle queue (priority inheritance, status idle_boosted), while new
# writes to the set wait for its writeback.  Nothing is lost: every block
# of the region holds the writer's last write to it (or what was there
# before), on the device and on the origin.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"

load_module
hdd=$(make_hdd hdd 64)
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
T=$(mktemp -d)
writer=""
cleanup() {
	# Held idle writes would keep the writer (and the device) busy for an hour.
	[[ -n $writer ]] && { dmsetup message sp 0 throttle off 2>/dev/null; touch "$T/stop"; kill "$writer" 2>/dev/null; wait "$writer"; }
	rm -rf "$T"
}
trap cleanup EXIT

# iw.py write DEV STATE STOP: four threads, each one 4 KiB O_DIRECT write at
# a time to blocks 0-1023 of DEV (thread t: the blocks b with b % 4 == t),
# each write saying its block and its number; ends at the first write after
# STOP exists, with STATE (json) the last write's number of every block
# written (carried on from STATE's numbers).  iw.py check DEV INIT STATE:
# every block holds its last write, or INIT's block where it had none.
cat >"$T/iw.py" <<'PY'
import json, mmap, os, random, sys, threading

def data(b, s):
    h = b"block %06d write %010d\n" % (b, s)
    return (h * (4096 // len(h) + 1))[:4096]

def load(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {int(k): v for k, v in json.load(f).items()}

mode, dev, *rest = sys.argv[1:]
if mode == "write":
    state_path, stop = rest
    state = load(state_path)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    errors = []

    def run(t):
        buf = mmap.mmap(-1, 4096)
        rnd = random.Random(t)
        mine = list(range(t, 1024, 4))
        try:
            while not os.path.exists(stop):
                b = rnd.choice(mine)
                s = state.get(b, 0) + 1
                buf[:] = data(b, s)
                os.pwrite(fd, buf, b * 4096)
                state[b] = s
        except OSError as e:
            errors.append("thread %d: %s" % (t, e))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with open(state_path, "w") as f:
        json.dump(state, f)
    if errors:
        sys.exit("writer: " + "; ".join(errors))
else:
    init_path, state_path = rest
    state = load(state_path)
    with open(init_path, "rb") as f:
        init = f.read()
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    bad = 0
    for b in range(1024):
        want = data(b, state[b]) if b in state else init[b * 4096:(b + 1) * 4096]
        if os.preadv(fd, [buf], b * 4096) != 4096 or buf[:] != want:
            if bad < 5:
                print("%s block %d: not %s" % (dev, b, "write %d" % state[b] if b in state else "its first data"))
            bad += 1
    sys.exit(1 if bad else 0)
PY
start_writer() {
	rm -f "$T/stop"
	ionice -c3 python3 "$T/iw.py" write "$dm" "$T/state" "$T/stop" &
	writer=$!
}
stop_writer() {
	touch "$T/stop"
	wait_exit "$writer" 60 || fail "the writer did not stop"
	wait "$writer" || fail "the writer failed"
	writer=""
}
# start_held_writer: writethrough (as a drain makes it), then the writer,
# until its four writes wait in the idle queue, their set held by them
# (the drain could find the set free between two writes otherwise).
start_held_writer() {
	dmsetup message sp 0 write_policy writethrough || fail "write_policy writethrough"
	start_writer
	wait_status sp queued_idle -ge 4 60
}
check_region() { # check_region WHAT: the writer's region on the device and the origin
	python3 "$T/iw.py" check "$dm" "$T/init" "$T/state" || fail "$1: the device's data"
	cmp <(dd if="$dm" bs=1M count=4 iflag=direct status=none) \
		<(dd if="$hdd" bs=1M count=4 iflag=direct status=none) ||
		fail "$1: device and origin differ"
}

# The writer's region, origin set 0: its first MiB dirty in the cache, the
# rest on the origin only; and 512 KiB dirty in another set, which the
# drain can take at once.
head -c 4M /dev/urandom >"$T/init"
dd if="$T/init" of="$hdd" bs=1M skip=1 seek=1 count=3 oflag=direct status=none || fail "write the origin"
dm=$(dm_create sp "0 $nh ssdprio $hdd $ssd 17 format evict_wait 3600000 dirty_max_age 0 read_alloc off seq_cutoff 0 idle_max_wait 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_budget 0")
st() { status_get sp "$1"; }
assert_eq "$(st set_blocks)" 1024 "set_blocks (origin set 0: the first 4 MiB)"
dd if="$T/init" of="$dm" bs=64k count=16 oflag=direct status=none || fail "write 1 MiB"
head -c 512K /dev/urandom >"$T/other1"
dd if="$T/other1" of="$dm" bs=64k seek=256 oflag=direct status=none || fail "write 512 KiB at 16 MiB"
assert_eq "$(st dirty_blocks)" 384 "dirty blocks"

# --- drain -------------------------------------------------------------------------
i0=$(st bios_idle)
b0=$(st idle_boosted)
start_held_writer
assert_ge "$(st bios_idle)" $((i0 + 4)) "the writer's writes are idle class"
dmsetup message sp 0 drain || fail "drain"
wait_status sp dirty_blocks -eq 0 180
wait_status sp draining -eq 0 60
wait_status sp flush_state == idle 60
kill -0 "$writer" 2>/dev/null || fail "the writer stopped: the test proves nothing"
assert_ge "$(st idle_boosted)" $((b0 + 1)) "idle writes released for the drain"
log "drained under the idle writer: $(st writes) writes, $(st deferred) deferred, idle_boosted $(st idle_boosted)"
# The writer's writes held now (writethrough, an hour's interval) go.
dmsetup message sp 0 throttle off || fail "throttle off"
stop_writer
check_region "after the drain"
cmp <(dd if="$hdd" bs=64k skip=256 count=8 iflag=direct status=none) "$T/other1" ||
	fail "the origin lacks the other set's drained data"

# --- detach ------------------------------------------------------------------------
# Writeback again, the other set and the writer's region dirty again (the
# writer's writes on the SSD alone), then its writes held again.
dmsetup message sp 0 throttle on || fail "throttle on"
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
head -c 512K /dev/urandom >"$T/other2"
dd if="$T/other2" of="$dm" bs=64k seek=384 oflag=direct status=none || fail "write 512 KiB at 24 MiB"
w0=$(st writes)
start_writer
wait_status sp writes -ge $((w0 + 200)) 120
stop_writer
assert_ge "$(st dirty_blocks)" 200 "dirty blocks before detach"
start_held_writer
timeout 300 "$TOOL" detach --timeout 240 sp || fail "detach under the idle writer"
[[ $(dmsetup table sp | awk '{ print $3 }') == linear ]] || fail "not linear after detach: $(dmsetup table sp)"
kill -0 "$writer" 2>/dev/null || fail "the writer stopped during detach: the test proves nothing"
stop_writer
check_region "after detach"
cmp <(dd if="$hdd" bs=64k skip=384 count=8 iflag=direct status=none) "$T/other2" ||
	fail "the origin lacks the data dirty at detach"
dm_remove sp
remove_nullb hdd
remove_nullb ssd
log "ok"
