#!/bin/bash
# Suspend, resume, table reload and remove with idle bios queued: no hang,
# no lost bio, fio verify passes. The idle writer is held by a long
# interval, a batch_mode_delay of an hour and no learnt gaps
# (idle_budget 0), so bios sit in the queue.
# timeout: 400
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 128)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
knobs="cache off idle_dispatch_interval 1000 batch_mode_delay 3600000 idle_budget 0"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 8 $knobs")
st() { status_get sp "$1"; }

wait_queued() { # wait_queued N: until queued_idle >= N (20 s guard)
	for _ in $(seq 100); do
		[[ $(st queued_idle) -ge $1 ]] && return 0
		sleep 0.2
	done
	fail "queued_idle did not reach $1 (is $(st queued_idle))"
}

# Idle writer with verification: 64 KiB writes, 8 in flight, then a
# verifying read pass (also idle).
ionice -c3 fio --name=idle --filename="$dm" --rw=randwrite --bs=64k \
	--direct=1 --ioengine=libaio --iodepth=8 --size=8M \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
	--output=/tmp/idle.out &
idle=$!
trap 'kill $idle 2>/dev/null; wait' EXIT
wait_queued 4
log "queued_idle $(st queued_idle) before suspend"

# 1. suspend with bios queued: must return, and release every held bio.
timeout 60 dmsetup suspend sp || fail "dmsetup suspend hung or failed with idle bios queued"
assert_eq "$(st queued_idle)" 0 "suspend released the queue"
assert_eq "$(st idle_inflight)" 0 "nothing in flight once suspended"
dmsetup resume sp || fail "resume failed"
wait_queued 4

# 2. noflush suspend.
timeout 60 dmsetup suspend --noflush sp || fail "noflush suspend hung"
assert_eq "$(st queued_idle)" 0 "noflush suspend released the queue"
dmsetup resume sp || fail "resume failed"
wait_queued 4

# 3. table reload + resume (the old table is suspended with bios queued).
table=$(dmsetup table sp)
dmsetup reload sp --table "$table" || fail "reload failed"
timeout 60 dmsetup resume sp || fail "resume of a reloaded table hung"
wait_queued 2

# Let the rest through quickly and check the data.
dmsetup message sp 0 throttle off || fail "message throttle off failed"
timeout 180 bash -c "while kill -0 $idle 2>/dev/null; do sleep 0.5; done" ||
	fail "idle fio did not finish"
wait "$idle" || fail "idle fio failed (verify?): $(tail -20 /tmp/idle.out)"
trap - EXIT
grep -Eq 'err= *[1-9]|verify.*(bad|fail)' /tmp/idle.out && fail "fio reported an error: $(cat /tmp/idle.out)"

# 4. remove with bios queued: an idle reader held, device closed by
# killing it would wait for its I/O, so use a forced remove of a device
# whose table has held bios (suspend inside remove must not hang).
dmsetup message sp 0 throttle on || fail "message throttle on failed"
ionice -c3 fio --name=idler --filename="$dm" --rw=randread --bs=4k \
	--direct=1 --ioengine=libaio --iodepth=8 --size=8M --runtime=600 \
	--time_based --output=/tmp/idler.out &
idler=$!
wait_queued 4
timeout 60 dmsetup remove --force sp || fail "forced remove hung with idle bios queued"
timeout 60 bash -c "while kill -0 $idler 2>/dev/null; do sleep 0.5; done" ||
	fail "idle reader did not end after the forced remove"
wait "$idler" 2>/dev/null
for _ in $(seq 50); do
	dmsetup info sp >/dev/null 2>&1 || break
	dmsetup remove sp 2>/dev/null && break
	sleep 0.2
done
dmsetup info sp >/dev/null 2>&1 && fail "sp still exists"
log "ok"
