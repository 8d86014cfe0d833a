# shellcheck shell=bash
# Library for guest tests (tests/guest/NN-name.sh), sourced as
#     . "$(dirname "$0")/lib.sh"        or        . "$REPO/tests/guest/lib.sh"
# Tests run as `bash tests/guest/NN-name.sh` inside the QEMU guest that
# tests/vm/run boots; exit 0 = pass, 77 = skip, anything else = fail.
#
# fail/skip work from anywhere, including $(...) subshells and pipelines: they
# signal the test's main shell, which then exits with 1 (fail) or 77 (skip). So
# `v=$(status_get dev key)` with a missing key fails the test, not just the
# subshell. (The signals are SIGUSR2 and SIGUSR1; tests should not trap them.)
#
# Devices made here:
#   make_hdd / make_ssd: null_blk devices created through configfs, named after
#     NAME (/dev/NAME), memory-backed (their pages come out of guest RAM, the data
#     is lost at power-off), 512-byte logical blocks (so any sector-aligned I/O
#     works; use bs=4k in fio for 4 KiB I/O), timer completion (irqmode 2) so
#     completion_nsec is a real per-I/O latency. One hardware queue, so the block
#     layer's default scheduler for them is mq-deadline.
#   vdisk NAME: a file-backed virtio disk attached by tests/vm/run --disk NAME:SIZE
#     or a "# disks: NAME:SIZE" header line; it survives reboots and killed guests.

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# The runner exports SSDPRIO_MODULE when --module names another dm-ssdprio.ko.
MODULE=${SSDPRIO_MODULE:-$REPO/dm-ssdprio.ko}
RESULTS_DIR=${RESULTS_DIR:-$REPO/build/vm/results}
NULLB_CONFIGFS=/sys/kernel/config/nullb

# fail/skip from a subshell signal the main shell (see the header).
trap 'exit 77' USR1
trap 'exit 1' USR2

# Every exec costs ~70 ms of emulated CPU under TCG (ld.so, page faults) and
# what a test polls with competes with the module for the guest's two vCPUs:
# the helpers that run in loops use bash builtins only.
# sleep: a read that times out on a pipe nobody writes to (bash has no sleep
# builtin); other forms (suffixes, several arguments) go to sleep(1), and so
# does everything before udev made /dev/fd (the crash scenarios' preboot).
[[ -e /dev/fd ]] && exec {_lib_sleep_fd}<> <(:)
sleep() {
	local _lib_unused
	if [[ -n ${_lib_sleep_fd:-} && $# == 1 && $1 =~ ^[0-9]*[.]?[0-9]+$ ]]; then
		read -rt "$1" -u "$_lib_sleep_fd" _lib_unused
		return 0
	fi
	command sleep "$@"
}

# --- Reporting ----------------------------------------------------------------------
log() { printf '[%4ss] %s\n' "$SECONDS" "$*" >&2; }

_lib_exit() {
	local code=$1
	if [[ $BASHPID != "$$" ]]; then
		if [[ $code == 77 ]]; then kill -USR1 "$$"; else kill -USR2 "$$"; fi
	fi
	exit "$code"
}

fail() {
	echo "FAIL: $*" >&2
	_lib_exit 1
}

skip() {
	echo "SKIP: $*" >&2
	_lib_exit 77
}

# An integer bash compares exactly (no sign, no fraction, fits in 64 bits).
_is_small_uint() { [[ $1 =~ ^[0-9]{1,18}$ ]]; }

_is_number() { [[ $1 =~ ^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }

# _num_cmp A OP B: whether the numbers A and B compare as OP says (== != < <=
# > >=); integers in bash, others (fractions, exponents) by awk.
_num_cmp() {
	local a=$1 op=$2 b=$3
	if _is_small_uint "$a" && _is_small_uint "$b"; then
		case $op in
		"==") ((10#$a == 10#$b)) ;; "!=") ((10#$a != 10#$b)) ;;
		"<") ((10#$a < 10#$b)) ;; "<=") ((10#$a <= 10#$b)) ;;
		">") ((10#$a > 10#$b)) ;; *) ((10#$a >= 10#$b)) ;;
		esac
		return
	fi
	awk -v a="$a" -v b="$b" -v op="$op" 'BEGIN {
		a += 0; b += 0
		if (op == "==") ok = a == b; else if (op == "!=") ok = a != b
		else if (op == "<") ok = a < b; else if (op == "<=") ok = a <= b
		else if (op == ">") ok = a > b; else ok = a >= b
		exit !ok }'
}

_num_check() { # _num_check NAME A OP B MSG
	local what=$1 a=$2 op=$3 b=$4 msg=$5
	_is_number "$a" || fail "$what: '$a' is not a number${msg:+ ($msg)}"
	_is_number "$b" || fail "$what: '$b' is not a number${msg:+ ($msg)}"
	_num_cmp "$a" "$op" "$b" || fail "${msg:-$what}: expected $a $op $b"
}

assert_eq() { # assert_eq ACTUAL EXPECTED [MSG]
	[[ $1 == "$2" ]] || fail "${3:-assert_eq}: got '$1', expected '$2'"
}
assert_ge() { _num_check assert_ge "$1" ">=" "$2" "${3:-}"; } # assert_ge A B [MSG]: A >= B
assert_le() { _num_check assert_le "$1" "<=" "$2" "${3:-}"; } # assert_le A B [MSG]: A <= B

# --- Modules ------------------------------------------------------------------------
_module_name() { # kernel name of a .ko path or module name (dm-ssdprio -> dm_ssdprio)
	local n=${1##*/}
	# A .ko file says its own name (BENCH_MODULE may be a copy named otherwise).
	if [[ $n == *.ko && -f $1 ]] && n=$(modinfo -F name "$1" 2>/dev/null) && [[ $n ]]; then
		echo "$n"
		return
	fi
	n=${1##*/}
	n=${n%.ko}
	echo "${n//-/_}"
}

_module_loaded() { [[ -e /sys/module/$(_module_name "$1")/initstate ]]; }

# load_module [PATH.ko [PARAMS...]]: insmod (default $MODULE) unless loaded, after
# modprobing what it depends on (dm-mod, dm-bufio, ...).
# cgroup_v2_setup: cgroup v2 at $CG (/sys/fs/cgroup, mounted if it is not),
# with the io and memory controllers on for its children: writeback is
# attributed to a cgroup only with both.  Skips the test without io.
cgroup_v2_setup() {
	CG=/sys/fs/cgroup
	if [[ ! -e $CG/cgroup.controllers ]]; then
		mkdir -p "$CG"
		mount -t cgroup2 none "$CG" || skip "cannot mount cgroup2"
	fi
	grep -qw io "$CG/cgroup.controllers" || skip "no io controller in cgroup2"
	echo "+io +memory" >"$CG/cgroup.subtree_control" ||
		fail "cannot enable io and memory controllers"
}

load_module() {
	local ko=${1:-$MODULE} dep err
	[[ $# -gt 0 ]] && shift
	_module_loaded "$ko" && return 0
	[[ -f $ko ]] || fail "load_module: $ko not found (build it first)"
	# dm-io and dm-kcopyd are part of dm-mod; dm-bufio is a module of its own.
	modprobe dm-mod || fail "load_module: modprobe dm-mod failed"
	modprobe dm-bufio || fail "load_module: modprobe dm-bufio failed"
	for dep in $(modinfo -F depends "$ko" 2>/dev/null | tr ',' ' '); do
		modprobe "$dep" || fail "load_module: modprobe $dep (needed by $ko) failed"
	done
	if ! err=$(insmod "$ko" "$@" 2>&1); then
		dmesg | tail -5 >&2
		fail "load_module: insmod $ko failed: $err"
	fi
}

_unload() { # _unload NAME-or-PATH: rmmod with retries; 0 if not loaded afterwards
	local name
	name=$(_module_name "$1")
	for _ in {1..50}; do
		[[ -e /sys/module/$name/initstate ]] || return 0
		rmmod "$name" 2>/dev/null && return 0
		sleep 0.2
	done
	rmmod "$name" # once more, to show the error
}

# unload_module [PATH.ko|NAME]: rmmod (default $MODULE); fails the test if it
# stays loaded.
unload_module() {
	local m=${1:-$MODULE}
	_unload "$m" || fail "unload_module: cannot unload $(_module_name "$m")"
}

# --- Emulated disks (null_blk) ------------------------------------------------------
_nullb_setup() {
	[[ -d $NULLB_CONFIGFS ]] && return 0
	grep -qs ' /sys/kernel/config ' /proc/mounts ||
		mount -t configfs configfs /sys/kernel/config 2>/dev/null
	[[ -d $NULLB_CONFIGFS ]] || modprobe null_blk nr_devices=0 ||
		fail "cannot load null_blk"
}

# _make_nullb NAME SIZE_MB COMPLETION_NSEC QUEUE_DEPTH MBPS
_make_nullb() {
	local name=$1 size=$2 nsec=$3 qd=$4 mbps=$5 d avail
	_nullb_setup
	d=$NULLB_CONFIGFS/$name
	[[ $name =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || fail "null_blk name '$name': letters, digits, _ only"
	[[ ! -e $d ]] || fail "null_blk $name already exists"
	[[ ! -e /dev/$name ]] || fail "/dev/$name already exists; choose another name"
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	if ((size + 256 > avail)); then
		log "warning: $name is ${size} MiB, guest has ${avail} MiB available; if it fills, use tests/vm/run --mem"
	fi
	mkdir "$d" || fail "mkdir $d failed"
	{
		echo "$size" >"$d/size" &&
			echo 512 >"$d/blocksize" &&
			echo "${NULLB_MAX_SECTORS:-2560}" >"$d/max_sectors" &&
			echo 1 >"$d/memory_backed" &&
			echo 2 >"$d/irqmode" &&
			echo "$nsec" >"$d/completion_nsec" &&
			echo "$qd" >"$d/hw_queue_depth" &&
			{ [[ $mbps == 0 ]] || echo "$mbps" >"$d/mbps"; } &&
			{ [[ ${NULLB_DISCARD:-0} == 0 ]] || echo 1 >"$d/discard"; } &&
			{ [[ ${NULLB_CACHE_MB:-0} == 0 ]] || echo "$NULLB_CACHE_MB" >"$d/cache_size"; } &&
			{ [[ ${NULLB_ZONED:-0} == 0 ]] || { echo 1 >"$d/zoned" && echo 4 >"$d/zone_size"; }; } &&
			echo 1 >"$d/power"
	} || {
		rmdir "$d"
		fail "configuring null_blk $name failed"
	}
	for _ in {1..100}; do
		[[ -b /dev/$name ]] && break
		sleep 0.1
	done
	[[ -b /dev/$name ]] || fail "/dev/$name did not appear"
	if [[ ${NULLB_DISCARD:-0} != 0 &&
		$(cat "/sys/block/$name/queue/discard_max_bytes") == 0 ]]; then
		fail "null_blk $name: discard was asked for but is not supported"
	fi
	echo "/dev/$name"
}

# Requests up to 1280 KiB (NULLB_MAX_SECTORS, default 2560: a SATA disk's
# max_sectors_kb) rather than null_blk's 255 sectors, which no real disk has
# and which is not a whole number of 4 KiB blocks.
#
# NULLB_DISCARD=1 before make_hdd/make_ssd (e.g. `hdd=$(NULLB_DISCARD=1 make_hdd hdd 64)`)
# makes a device that supports discard (null_blk's `discard`, 512-byte granularity;
# memory-backed, so discarded sectors read back as zeroes). Default: no discard.
#
# NULLB_CACHE_MB=N: a volatile write cache of N MiB (null_blk's cache_size):
# flushes reach the driver and are counted in /sys/block/NAME/stat.
# NULLB_ZONED=1: a host-managed zoned device, 4 MiB zones.
#
# make_hdd NAME SIZE_MB [completion_nsec=5000000] [queue_depth=1] [mbps=0]
# A one-head, HDD-like disk: ~5 ms per I/O, one at a time. Echoes /dev/NAME.
make_hdd() {
	[[ $# -ge 2 ]] || fail "usage: make_hdd NAME SIZE_MB [completion_nsec] [queue_depth] [mbps]"
	_make_nullb "$1" "$2" "${3:-5000000}" "${4:-1}" "${5:-0}"
}

# make_ssd NAME SIZE_MB [completion_nsec=50000]: 50 us, queue depth 64. Echoes /dev/NAME.
make_ssd() {
	[[ $# -ge 2 ]] || fail "usage: make_ssd NAME SIZE_MB [completion_nsec]"
	_make_nullb "$1" "$2" "${3:-50000}" 64 0
}

_remove_nullb() { # returns non-zero instead of failing (for cleanup_all)
	local name=${1#/dev/} d
	d=$NULLB_CONFIGFS/$name
	[[ -d $d ]] || return 0
	if [[ -n $(ls -A "/sys/block/$name/holders" 2>/dev/null) ]]; then
		echo "null_blk $name is still held by: $(ls "/sys/block/$name/holders")" >&2
		return 1
	fi
	echo 0 >"$d/power" 2>/dev/null
	rmdir "$d"
}

# remove_nullb NAME: power off and delete a null_blk made by make_hdd/make_ssd.
remove_nullb() {
	_remove_nullb "$1" || fail "remove_nullb $1 failed"
}

# vdisk NAME: the device of the virtio disk with serial NAME (see the header).
vdisk() {
	local link=/dev/disk/by-id/virtio-$1 s
	if [[ -b $link ]]; then
		readlink -f "$link"
		return 0
	fi
	# Without udev there are no by-id links: match the serial in sysfs.
	for s in /sys/block/vd*/serial; do
		[[ -r $s && $(<"$s") == "$1" ]] || continue
		s=${s%/serial}
		echo "/dev/${s##*/}"
		return 0
	done
	fail "vdisk: no virtio disk '$1' (tests/vm/run --disk $1:SIZE, or a '# disks: $1:SIZE' header line)"
}

# sectors DEV: size in 512-byte sectors.
sectors() { blockdev --getsz "$1"; }

# --- blocks of one character -----------------------------------------------------------
# For tests that place single 4 KiB blocks and read them back (crash images,
# frame placement): blk_put DEV BLOCKNR CHAR writes block BLOCKNR of DEV
# (O_DIRECT) as BLK_BYTES bytes of CHAR; blk_what DEV BLOCKNR echoes the
# character the block is made of (0 for zeroes), or "mixed (...)".
BLK_BYTES=4096
blk_put() {
	head -c "$BLK_BYTES" </dev/zero | tr '\0' "$3" |
		dd of="$1" bs=$BLK_BYTES seek="$2" count=1 oflag=direct conv=notrunc status=none
}
blk_what() {
	local s
	s=$(dd if="$1" bs=$BLK_BYTES skip="$2" count=1 iflag=direct status=none | tr '\0' '0') ||
		fail "read of block $2 of $1"
	if [[ ${#s} -eq $BLK_BYTES && -z ${s//"${s:0:1}"/} ]]; then
		echo "${s:0:1}"
	else
		echo "mixed (${#s} bytes: ${s:0:16}...)"
	fi
}

# oset_pair NCSETS NOSETS SET_BLOCKS: "0 B", origin set 0 and the first origin
# set B (< NOSETS) of the same cache set whose second candidate frames are
# SET_BLOCKS / 2 from their home ones (the placement hash of
# engine/ssdprio_format.h, in tests/guest/metacorrupt.py), so that B's block
# b competes for A's frames b and b ^ SET_BLOCKS / 2; empty B if none.
oset_pair() {
	python3 - "$REPO/tests/guest" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv.pop(1))
from metacorrupt import alt_xor, oset_cset
n, nos, sb = (int(a) for a in sys.argv[1:4])
b = next((o for o in range(1, nos)
          if oset_cset(o, n) == oset_cset(0, n) and alt_xor(o, sb, 4) == sb // 2), "")
print(0, b)
PY
}

# The frame-placement tests' cache: sets of 16 blocks (B's frames b and b ^ 8
# are a pair), no writeback but the ones a test asks for (flush_dirty, at
# once: the idle queue's interval short), no promotion.
PAIR_SET=16
PAIR_FEATS="set_size $PAIR_SET evict_wait 3600000 dirty_max_age 0 lockout_clean off seq_cutoff 0 read_alloc off idle_dispatch_interval 5"

# pair_devices: their devices, a fast 16 MiB "HDD" ($hdd, $nh sectors) and a
# 2 MiB SSD ($ssd, $ns sectors).
pair_devices() {
	hdd=$(make_hdd hdd 16 0 32)
	ssd=$(make_ssd ssd 2)
	nh=$(sectors "$hdd")
	ns=$(sectors "$ssd")
}

# pair_dirty NAME DEV NH SET_BLOCKS: the scene of the frame-placement tests,
# on ssdprio device NAME (DEV, NH origin sectors, sets of SET_BLOCKS blocks):
# origin sets A = 0 and B of one cache set (oset_pair), A's blocks 0 and
# SET_BLOCKS / 2 written (as "a" and "c"), dirty in those two frames, which
# are B's block 0's two candidates.  Sets a0, a8 and b0 (block numbers).
pair_dirty() {
	local ncs a b half=$(($4 / 2))
	ncs=$(status_get "$1" total_sets)
	read -r a b < <(oset_pair "$ncs" $(($3 / 8 / $4)) "$4")
	[[ -n $b ]] || fail "no second origin set in cache set of origin set 0 with its alt frames $half away"
	log "origin sets $a and $b share a cache set ($ncs sets of $4 blocks)"
	a0=$((a * $4)) a8=$((a * $4 + half)) b0=$((b * $4))
	blk_put "$2" $a0 a || fail "write A:0"
	blk_put "$2" $a8 c || fail "write A:$half"
	assert_eq "$(status_get "$1" dirty_blocks)" 2 "dirty blocks"
}

# --- device-mapper --------------------------------------------------------------------
_udev_running() { [[ -S /run/udev/control ]]; }

_settle() { if _udev_running; then udevadm settle --timeout=30 || true; fi; }

# dm_try_create NAME TABLE: like dm_create but returns dmsetup's status instead
# of failing the test (for tests that expect a table to be rejected).
dm_try_create() {
	local name=$1 table=$2
	printf '%s\n' "$table" | dmsetup create "$name" || return
	_settle
	[[ -b /dev/mapper/$name ]] || dmsetup mknodes "$name" 2>/dev/null
	for _ in {1..100}; do
		[[ -b /dev/mapper/$name ]] && break
		sleep 0.1
	done
	[[ -b /dev/mapper/$name ]] || {
		echo "/dev/mapper/$name did not appear" >&2
		return 1
	}
	echo "/dev/mapper/$name"
}

# dm_create NAME "TABLE": create a dm device (TABLE may have several lines),
# wait for /dev/mapper/NAME and echo that path. Fails the test if it cannot.
# dm_refused NAME TABLE PATTERN: creating NAME with TABLE must fail, with a
# kernel line matching PATTERN (extended regex) about it; a device the failed
# create left behind is removed.
dm_refused() {
	local msg
	dmesg -C
	if dm_try_create "$1" "$2" >/dev/null 2>&1; then
		fail "table accepted: $2"
	fi
	msg=$(dmesg | grep 'ssdprio' || true)
	grep -qE "$3" <<<"$msg" || fail "expected '$3' for: $2; kernel said: $msg"
	log "refused: $(grep -E "$3" <<<"$msg" | tail -1 | sed 's/^\[[^]]*\] //')"
	if dmsetup info "$1" >/dev/null 2>&1; then dmsetup remove "$1"; fi
	return 0
}
dm_create() {
	[[ $# -eq 2 ]] || fail "usage: dm_create NAME TABLE"
	dm_try_create "$1" "$2" || fail "dm_create $1 failed; table: $2"
}

# leg_load NAME "TABLE": a leg for fault injection under a live device: NAME
# created with TABLE if absent, else TABLE loaded and resumed in its place (the
# device over it sees no error, its I/O waits across the swap). Fails the test
# if it cannot.
leg_load() {
	if dmsetup info "$1" >/dev/null 2>&1; then
		printf '%s\n' "$2" | dmsetup load "$1" && dmsetup resume "$1" ||
			fail "leg $1: cannot swap in: $2"
	else
		dm_create "$1" "$2" >/dev/null
	fi
}

# leg NAME DEV MODE: leg_load NAME over all of DEV as linear, as dm-flakey
# failing writes only ("writes"; reads pass) or failing all I/O ("all").
leg() {
	local n t
	n=$(sectors "$2")
	case $3 in
	linear) t="0 $n linear $2 0" ;;
	writes) t="0 $n flakey $2 0 0 1 1 error_writes" ;;
	all) t="0 $n flakey $2 0 0 1" ;;
	*) fail "leg $1: unknown mode '$3'" ;;
	esac
	leg_load "$1" "$t"
}

_dm_remove() { # returns non-zero instead of failing
	local name=${1#/dev/mapper/} err
	for _ in {1..50}; do
		err=$(dmsetup remove "$name" 2>&1) && return 0
		dmsetup info "$name" >/dev/null 2>&1 || return 0
		# Usually udev (blkid) has it open for a moment after a change.
		_settle
		sleep 0.2
	done
	echo "dm_remove $name: $err" >&2
	dmsetup info "$name" >&2
	return 1
}

# dm_remove NAME: remove a dm device, retrying while it is busy.
dm_remove() {
	_dm_remove "$1" || fail "dm_remove $1: still busy after 10 s"
}

# dm_status NAME: `dmsetup status NAME`, from build/tools/dmstatus (one ioctl,
# static) where built: a dmsetup run costs ~140 ms of the guest's CPU, and
# tests poll status 5 times a second while they wait.
dm_status() {
	if [[ -x $REPO/build/tools/dmstatus ]]; then
		"$REPO/build/tools/dmstatus" "$1"
	else
		dmsetup status "$1"
	fi
}

# status_get DEV KEY: the value after KEY in `dmsetup status DEV`, whose fields
# after "start length target" are "key value" pairs. Fails the test if absent.
status_get() {
	local name=${1#/dev/mapper/} line i
	local -a f
	line=$(dm_status "$name") || fail "status_get: dmsetup status $name failed"
	line=${line%%$'\n'*}
	read -ra f <<<"$line"
	for ((i = 3; i < ${#f[@]} - 1; i += 2)); do
		if [[ ${f[i]} == "$2" ]]; then
			echo "${f[i + 1]}"
			return 0
		fi
	done
	fail "status_get: no key '$2' in status of $name: $line"
}

# wait_status DEV KEY OP VALUE [TIMEOUT_S=60]: poll `dmsetup status DEV` (every
# 0.2 s) until the value of KEY compares to VALUE as OP says; fail the test with
# the last status line if it does not within TIMEOUT_S seconds. OP: == != (numbers,
# or words such as evict_state), < <= > >= (numbers; -eq -ne -lt -le -gt -ge too).
# wait_exit PID SECONDS: 0 once PID has exited (not reaped: `wait PID` for its
# status), 1 if it still runs after SECONDS.
wait_exit() {
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

wait_status() {
	[[ $# -eq 4 || $# -eq 5 ]] || fail "usage: wait_status DEV KEY OP VALUE [TIMEOUT_S]"
	local dev=$1 key=$2 op=$3 want=$4 timeout=${5:-60} val end
	case $op in
	-eq) op="==" ;; -ne) op="!=" ;; -lt) op="<" ;; -le) op="<=" ;;
	-gt) op=">" ;; -ge) op=">=" ;;
	== | != | "<" | "<=" | ">" | ">=") ;;
	*) fail "wait_status: unknown operator '$op'" ;;
	esac
	case $op in
	"<" | "<=" | ">" | ">=") _is_number "$want" || fail "wait_status: '$want' is not a number" ;;
	esac
	end=$((SECONDS + timeout))
	while :; do
		val=$(status_get "$dev" "$key")
		if _is_number "$val" && _is_number "$want"; then
			_num_cmp "$val" "$op" "$want" && break
		elif [[ $op == "==" && $val == "$want" ]] || [[ $op == "!=" && $val != "$want" ]]; then
			break
		fi
		((SECONDS < end)) ||
			fail "wait_status: $key $op $want not reached in ${timeout} s (last $key=$val): $(dmsetup status "${dev#/dev/mapper/}")"
		sleep 0.2
	done
}

# --- fio -------------------------------------------------------------------------------
# fio_run ARGS...: run fio, pass its output through; fail the test if fio exits
# non-zero or reports a job error (err=N or "error" : N in JSON output). A
# failed run ends early and looks fast, so never use a result without this check.
fio_run() {
	local out rc a file=
	for a in "$@"; do
		[[ $a == --output=* ]] && file=${a#--output=}
	done
	out=$(fio "$@")
	rc=$?
	[[ -n $out ]] && printf '%s\n' "$out"
	((rc == 0)) || fail "fio exited with status $rc: fio $*"
	[[ -n $file && -f $file ]] && out+=$'\n'$(<"$file")
	if grep -Eq 'err= *[1-9]|"error" *: *[1-9]' <<<"$out"; then
		fail "fio reported an I/O error: $(grep -E -m1 'err= *[1-9]|"error" *: *[1-9]' <<<"$out")"
	fi
}

# writes_under_load DEV WOFF WSIZE ROFF RSIZE WHAT: random 4 KiB writes over
# [WOFF, WOFF + WSIZE) of DEV, every block once, verified (fio crc32c), while a
# random 4 KiB reader of [ROFF, ROFF + RSIZE) keeps the device under it busy:
# room comes only from eviction under pressure. Offsets and sizes as fio takes
# them (128M). Fails the test with WHAT if a write or its verification fails.
writes_under_load() {
	local reader
	fio --name=reader --filename="$1" --rw=randread --bs=4k --direct=1 --ioengine=psync \
		--offset="$4" --size="$5" --runtime=600 --time_based --randrepeat=0 >/dev/null &
	reader=$!
	fio --name=writer --filename="$1" --rw=randwrite --bs=4k --direct=1 --ioengine=psync \
		--offset="$2" --size="$3" --verify=crc32c --verify_fatal=1 --randrepeat=0 \
		--output=/tmp/under_load.fio >/dev/null || {
		kill "$reader" 2>/dev/null
		wait "$reader" 2>/dev/null
		fail "$6: $(cat /tmp/under_load.fio)"
	}
	kill "$reader" 2>/dev/null
	wait "$reader" 2>/dev/null
	return 0
}

# --- Crash tests -------------------------------------------------------------------------
# crash_arm: ask the host to kill QEMU with SIGKILL, --crash-after SEC seconds from
# now (tests/vm/run --crash-after SEC; without it the request is ignored). Use
# file-backed disks (vdisk) for data that must be checked after the crash, in a
# second run. Nothing is flushed here: the test decides what is durable.
crash_arm() {
	printf '\nssdprio-crash-arm\n' >/dev/console
}

# --- Cleanup ---------------------------------------------------------------------------
# Each exec costs tens of milliseconds under TCG and the runner checks after every
# test, so what is left over is found with shell builtins and sysfs only.
_dm_present() { compgen -G '/sys/block/dm-*' >/dev/null; }
_loop_present() { compgen -G '/sys/block/loop*/loop/backing_file' >/dev/null; }
_nullb_present() { compgen -G "$NULLB_CONFIGFS/*/" >/dev/null; }

# _dev_mounts: "source mountpoint" of mounts from block devices, innermost last.
_dev_mounts() {
	local src mnt _rest
	while read -r src mnt _rest; do
		[[ $src == /dev/* ]] && echo "$src $mnt"
	done </proc/mounts
}

# _our_modules: dm-ssdprio and the runner's extra modules, in unload order
# (the later in the list, the earlier unloaded).
_our_modules() {
	# shellcheck disable=SC2206 # a space-separated list of paths
	local mods=($MODULE ${SSDPRIO_MODULES:-}) i seen=" "
	for ((i = ${#mods[@]} - 1; i >= 0; i--)); do
		[[ $seen == *" ${mods[i]} "* ]] && continue
		seen+="${mods[i]} "
		_module_loaded "${mods[i]}" && echo "${mods[i]}"
	done
}

# leftovers: say what a test left behind (mounts, dm/loop/null_blk devices, our
# modules loaded); status 0 if anything. Builtins only (see above).
leftovers() {
	local found=1 m
	[[ -n $(_dev_mounts) ]] && echo "mounts" && found=0
	_dm_present && echo "dm devices" && found=0
	_loop_present && echo "loop devices" && found=0
	_nullb_present && echo "null_blk devices" && found=0
	m=$(_our_modules)
	[[ -n $m ]] && echo "modules: $m" && found=0
	return $found
}

# cleanup_all: put the guest back to its initial state: unmount everything
# mounted from a block device, resume and remove every dm device, detach loop
# devices, delete null_blk devices, unload dm-ssdprio and the runner's extra
# modules. Tests may `trap cleanup_all EXIT`; the runner calls it after every
# test that left something. Returns non-zero (and says why) if something could
# not be undone.
cleanup_all() {
	local rc=0 mnt src dev names m lines=()
	mapfile -t lines < <(_dev_mounts)
	for ((m = ${#lines[@]} - 1; m >= 0; m--)); do # children before parents
		src=${lines[m]%% *} mnt=${lines[m]#* }
		mnt=$(printf '%b' "$mnt") # /proc/mounts escapes spaces as \040
		echo "cleanup: umount $mnt ($src)" >&2
		umount "$mnt" 2>/dev/null || umount -l "$mnt" || rc=1
	done

	if _dm_present; then
		# A suspended device cannot finish its I/O; resume before removing.
		# One whose live table will not resume (a preresume that refuses)
		# gets an error table instead, so that its waiting I/O fails, its
		# openers go and the test after this one finds clean devices.
		while read -r dev; do
			[[ -n $dev ]] || continue
			echo "cleanup: resume $dev" >&2
			dmsetup resume "$dev" && continue
			rc=1
			echo "cleanup: $dev will not resume: its table replaced by error" >&2
			timeout 60 dmsetup wipe_table --noflush "$dev" ||
				timeout 60 dmsetup wipe_table "$dev" || true
		done < <(dmsetup info -c --noheadings -o name,suspended --separator ' ' 2>/dev/null |
			awk '$2 == "Suspended" { print $1 }')
		names=$(dmsetup ls 2>/dev/null | awk '$1 != "No" { printf "%s ", $1 }')
		echo "cleanup: remove dm devices: $names" >&2
		for _ in {1..20}; do
			dmsetup remove_all >/dev/null 2>&1
			_dm_present || break
			_settle
			sleep 0.3
		done
		if _dm_present; then
			echo "cleanup: dm devices left:" >&2
			dmsetup info -c >&2
			rc=1
		fi
	fi

	if _loop_present; then
		echo "cleanup: detach loop devices" >&2
		losetup -D || rc=1
	fi

	for dev in "$NULLB_CONFIGFS"/*/; do
		[[ -d $dev ]] || continue
		dev=${dev%/}
		dev=${dev##*/}
		echo "cleanup: remove null_blk $dev" >&2
		_remove_nullb "$dev" || rc=1
	done

	for m in $(_our_modules); do
		echo "cleanup: rmmod $(_module_name "$m")" >&2
		_unload "$m" || rc=1
	done
	return $rc
}

# cache_data_start CACHE: the first sector of a formatted cache device's data
# area (what comes before it is the metadata).
cache_data_start() {
	"$REPO/build/ssdprio-tool" show --json "$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["data_start"])' ||
		fail "data_start of $1"
}

# hold_data_io LEG CACHE READ_MS WRITE_MS: reload LEG, a dm device over all of
# the formatted CACHE, so that reads of the data area wait READ_MS ms and its
# writes and flushes WRITE_MS. The metadata area and the last MiB stay fast:
# udev's probe on resume reads the first and last sectors, and resume waits
# for it. hold_data_reads LEG CACHE MS: reads only.
hold_data_io() {
	local n ds
	n=$(sectors "$2")
	ds=$(cache_data_start "$2")
	leg_load "$1" "$(printf '0 %s linear %s 0\n%s %s delay %s %s %s %s %s %s\n%s 2048 linear %s %s\n' \
		"$ds" "$2" "$ds" $((n - 2048 - ds)) "$2" "$ds" "$3" "$2" "$ds" "$4" \
		$((n - 2048)) "$2" $((n - 2048)))"
}
hold_data_reads() { hold_data_io "$1" "$2" "$3" 0; }

# range_apart CACHE LEN_MB FROM_MB [START_MB:LEN_MB]...: the first offset in
# MiB, from FROM_MB on in steps of the set size, of a LEN_MB range whose
# origin sets land in cache sets apart from each other and from those of the
# ranges given.  Blocks of origin sets sharing a cache set compete for its
# frames (docs/design.md): a test that needs every block of a range cached
# places it with this.  CACHE: a formatted cache device.
range_apart() {
	local cache=$1
	shift
	"$REPO/build/ssdprio-tool" show --json "$cache" | python3 -c '
import json, sys
sb = json.load(sys.stdin)
ncs, set_mb = sb["total_sets"], sb["block_sectors"] * sb["set_blocks"] / 2048
length, frm = int(sys.argv[1]), int(sys.argv[2])
def csets(start, n):
    o0 = int(start // set_mb)
    o1 = int(-(-(start + n) // set_mb))
    return [((((o * 0x61C8864680B583EB) % 2**64) >> 32) * ncs) >> 32 for o in range(o0, o1)]
used = set()
for r in sys.argv[3:]:
    s, n = r.split(":")
    used.update(csets(int(s), int(n)))
step = max(set_mb, 1)
off = -(-frm // step) * step
while True:
    c = csets(off, length)
    if len(set(c)) == len(c) and not used & set(c):
        print(int(off))
        break
    off += step
' "$@" || fail "range_apart $*"
}

# ---- network origins (81, 82) ------------------------------------------------------
# net_written_back NAME ORIGIN DATA WHAT: flush_dirty ends with nothing failed,
# and ORIGIN's first 4 MiB, read directly, are DATA (WHAT names ORIGIN).
net_written_back() {
	dmsetup message "$1" 0 flush_dirty || fail "flush_dirty"
	wait_status "$1" dirty_blocks -eq 0 60
	wait_status "$1" flush_state == idle 30
	assert_eq "$(status_get "$1" failed_sets)" 0 "failed sets once the origin is back"
	[[ $(status_get "$1" meta_state) != failed ]] || fail "meta_state failed: $(dm_status "$1")"
	cmp <(dd if="$2" bs=64k count=64 iflag=direct status=none) "$3" ||
		fail "$4 does not hold the data written back"
}
# net_warm_restart NAME SAME OTHER SSD DATA WHAT: after a clean remove, the tab's
# entry over OTHER (another remote disk) is refused, over SAME it loads warm and
# reads DATA.
net_warm_restart() {
	local out tab=/tmp/$1.tab
	dm_remove "$1"
	echo "$1 $3 $4" >"$tab"
	out=$("$REPO/build/ssdprio-tool" activate --tab "$tab" "$1" 2>&1) &&
		fail "activated over the other $6: $out"
	grep -q "another origin" <<<"$out" || fail "the other $6: expected 'another origin': $out"
	echo "$1 $2 $4" >"$tab"
	"$REPO/build/ssdprio-tool" activate --tab "$tab" "$1" >/dev/null || fail "activate over $2"
	assert_eq "$(status_get "$1" meta_state)" clean "meta_state of the warm load"
	assert_ge "$(status_get "$1" valid_blocks)" 1024 "valid blocks after the warm load"
	cmp <(dd if="/dev/mapper/$1" bs=64k count=64 iflag=direct status=none) "$5" ||
		fail "data after the warm load"
}
# net_idle_class NAME: an ionice -c3 reader beside a normal one over the device:
# its bios are counted idle and dispatched, the normal reader's normal.
net_idle_class() {
	local idle0 idle
	dmsetup message "$1" 0 reset_stats || fail "reset_stats"
	idle0=$(status_get "$1" idle_dispatched)
	ionice -c3 dd if="/dev/mapper/$1" of=/dev/null bs=4k skip=2048 count=64 iflag=direct \
		status=none &
	idle=$!
	dd if="/dev/mapper/$1" of=/dev/null bs=4k skip=4096 count=64 iflag=direct status=none ||
		fail "normal reader"
	wait $idle || fail "idle reader"
	assert_ge "$(status_get "$1" bios_idle)" 64 "idle bios"
	assert_ge "$(status_get "$1" bios_normal)" 64 "normal bios"
	assert_ge "$(status_get "$1" idle_dispatched)" $((idle0 + 1)) "idle bios dispatched"
}

# ---- dm-delay legs (77, 79) ------------------------------------------------------
# held LEG FIELD: what dm-delay in LEG holds now (FIELD 4: reads, 5: writes).
held() { dmsetup status "$1" | awk -v f="$2" '$3 == "delay" { print $f }'; }
# wait_held LEG FIELD N: until dm-delay in LEG holds N bios (60 s at most).
wait_held() {
	for _ in $(seq 600); do
		(($(held "$1" "$2") >= $3)) && return 0
		sleep 0.1
	done
	fail "$1: dm-delay never held $3 (field $2)"
}
