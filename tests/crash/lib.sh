# shellcheck shell=bash
# Guest side of the multi-boot scenarios (tests/crash/*.sh), sourced as
#     . "$(dirname "$0")/lib.sh"
# tests/crash/run boots the guest once per phase of a scenario with the same
# file-backed virtio disks and runs the scenario script with, in the
# environment:
#   CRASH_SCENARIO  scenario name (e.g. powercut, powercut-linear)
#   CRASH_BOOT      1, 2, ...: which boot of the round this is
#   CRASH_ROUND     round number (1-based)
#   CRASH_SEED      this round's seed: derive every random choice from it
#   CRASH_TARGET    ssdprio (default) or linear: the device under test; linear
#                   (dm-linear over the origin, the cache disk unused) checks
#                   the scenario and the harness themselves
#   CRASH_STATE     a directory on the host's 9p export, kept across the boots
#                   of a round (fio verify state, write logs): what is written
#                   there is on the host at once and outlives a killed guest
#   CRASH_KILL_AFTER  seconds from crash_arm to the kill (crash boots only)
# Everything of tests/guest/lib.sh is available (fail, assert_*, fio_run, ...).

# shellcheck source=tests/guest/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../guest/lib.sh"

: "${CRASH_BOOT:?run by tests/crash/run}" "${CRASH_STATE:?run by tests/crash/run}"
: "${CRASH_SEED:=1}" "${CRASH_ROUND:=1}" "${CRASH_TARGET:=ssdprio}" "${CRASH_SCENARIO:=?}"
# shellcheck disable=SC2034 # used by the scenarios
GENIO=(python3 "$REPO/tests/crash/genio.py")
# shellcheck disable=SC2034
FSIO=(python3 "$REPO/tests/crash/fsio.py")
CX=cx # the device under test: /dev/mapper/cx

# crash_rand LO HI: a number in [LO, HI] from this round's seed (the same
# sequence of calls gives the same numbers on every boot of the round).
_crash_rng_init=0
crash_rand() {
	if ((!_crash_rng_init)); then
		RANDOM=$CRASH_SEED
		_crash_rng_init=1
	fi
	echo $(($1 + RANDOM % ($2 - $1 + 1)))
}

# cx_create [format] [KEY VALUE...]: create /dev/mapper/cx over the virtio
# disks hdd (origin) and ssd (cache) and echo its path. With CRASH_TARGET=ssdprio
# it is an ssdprio target with these feature args ("format" only on a blank
# cache, i.e. on the first boot; without it the cache's contents are loaded);
# with CRASH_TARGET=linear a dm-linear over hdd (the args are ignored).
cx_create() {
	local hdd ssd len table
	hdd=$(vdisk hdd)
	ssd=$(vdisk ssd)
	len=$(sectors "$hdd")
	if [[ $CRASH_TARGET == linear ]]; then
		table="0 $len linear $hdd 0"
	else
		# shellcheck disable=SC2119 # the default module
		load_module
		table="0 $len ssdprio $hdd $ssd $# $*"
		[[ $# -gt 0 ]] || table="0 $len ssdprio $hdd $ssd"
	fi
	log "create $CX: $table"
	dm_create "$CX" "$table"
}

is_ssdprio() { [[ $CRASH_TARGET == ssdprio ]]; }

# assert_meta_state STATE: ssdprio's meta_state is STATE (formatted, clean,
# recovered); nothing on linear.
assert_meta_state() {
	is_ssdprio || return 0
	assert_eq "$(status_get "$CX" meta_state)" "$1" "meta_state"
}

# cx_load_after_crash KEY VALUE...: create cx without `format` after an unclean
# shutdown and check the load: meta_state recovered and every valid block
# dirty (docs/design.md). Checked before anything can change the counts: the
# table has read_alloc off (udev's probe reads would promote clean blocks) and
# a long evict_wait (no writeback yet); then KEY VALUE... are set by messages
# (e.g. evict_wait 20, read_alloc on). Echoes the device path.
cx_load_after_crash() {
	local dev k
	dev=$(cx_create evict_wait 3600000 read_alloc off)
	is_ssdprio || {
		echo "$dev"
		return 0
	}
	log "status after load: $(cx_status)"
	assert_meta_state recovered
	assert_eq "$(status_get "$CX" dirty_blocks)" "$(status_get "$CX" valid_blocks)" \
		"dirty_blocks = valid_blocks after a crash"
	while (($# >= 2)); do
		k=$1
		dmsetup message "$CX" 0 "$k" "$2" || fail "message $k $2"
		shift 2
	done
	echo "$dev"
}

# cx_status: one line of the device's status (for logs).
cx_status() { dmsetup status "$CX"; }

# cx_drain: write back every dirty block (flush_dirty) and wait until none is
# left (ssdprio only).
cx_drain() {
	is_ssdprio || return 0
	dmsetup message "$CX" 0 flush_dirty || fail "flush_dirty failed"
	wait_status "$CX" dirty_blocks -eq 0 300
}

# state_put KEY VALUE / state_get KEY: small facts handed from one boot to
# the next (files in CRASH_STATE).
state_put() { printf '%s\n' "$2" >"$CRASH_STATE/$1"; }
state_get() {
	[[ -f $CRASH_STATE/$1 ]] || fail "no '$1' in $CRASH_STATE: did the previous boot get that far?"
	cat "$CRASH_STATE/$1"
}

# wait_lines FILE ERE N [SECS=120]: wait until FILE has N lines matching ERE
# (a background writer got going); fails the test after SECS.
wait_lines() {
	local file=$1 ere=$2 n=$3 secs=${4:-120} i c
	for ((i = 0; i < secs * 5; i++)); do
		c=$(grep -Ec "$ere" "$file" 2>/dev/null) || c=${c:-0}
		((c >= n)) && return 0
		sleep 0.2
	done
	fail "$file: fewer than $n lines matching '$ere' after $secs s"
}

# arm_and_wait: ask the host to kill the guest (crash_arm) and keep the
# background writers going until it does.
arm_and_wait() {
	log "crash_arm: the host kills QEMU in ${CRASH_KILL_AFTER:-?} s"
	crash_arm
	sleep 3600
	fail "still alive an hour after crash_arm (was --crash-after given?)"
}
