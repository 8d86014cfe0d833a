#!/bin/bash
# Crash consistency with dm-log-writes (replaying the order writes became durable).
# timeout: 1800
#
# One null_blk data device under a log-writes target; the ssdprio origin and
# cache are two dm-linear slices of that ONE log-writes device, so the log
# holds the order of the writes on both legs as they became durable. A
# workload runs on ssdprio (small sets, evict_wait 50 ms: eviction writeback
# happens during the run) and puts a log mark after every acknowledged sync.
# Then the log is replayed, incrementally, up to each sampled FLUSH/FUA entry
# and each mark; for each such crash point a transient dm-snapshot of the
# replayed device gets the two slices and ssdprio is loaded WITHOUT `format`
# (it must recover the persisted state), and:
#   raw: every block holds a valid stamp of a generation that wrote it (or
#        zeroes if none acknowledged did), never older than the newest
#        acknowledged one; after flush_dirty the origin alone holds the same;
#   ext4: the files fsynced before that point are there with their contents,
#        an atomically replaced file holds a complete acknowledged-or-later
#        version, deleted files stay deleted, e2fsck -fn is clean (after a
#        mount has replayed the journal).
# The load must say meta_state recovered before the clean shutdown's mark, and
# clean after it. A self-check at the end proves the raw check notices
# garbage and lost blocks.
# Some crash points (at FLUSH entries) are not a prefix of the log but a power
# cut's state of the writes after them (replay-log --crash-window): those that
# reached the disks but no FLUSH yet, each kept or lost (FUA ones in their
# order), and in ssdprio's metadata area torn at 512-byte sectors (a metadata
# block written in part). The same checks must hold. A blktrace of the data
# device under the log gives the order writes were queued and completed in
# (replay-log --order): a write queued after a FUA write completed is not on
# the disk when that FUA write is cut, as after a real power cut (ssdprio
# gives a frame a commit freed to new data only after the commit completed).
# Without a usable trace every write of the window may be kept, which can
# find a state no power cut makes (and fail on it).
# The same workloads can run with the device under test being the origin
# slice itself (stack "linear"): the control that
# validates the harness and the replay; it is what runs when the module does
# not persist its metadata (it loads a blank cache without `format`).
#
# Knobs (CRASH_* variables reach the guest: CRASH_LW_BIG=1 make check T=...):
#   CRASH_LW_BIG=1          larger run: 4x the rounds and crash points, xfs too
#                           (~20 min on an idle host; one stack fits the timeout)
#   CRASH_LW_STACK=...      linear, ssdprio or "linear ssdprio" (default:
#                           ssdprio if the module has persistence, else linear)
#   CRASH_LW_ROUNDS, CRASH_LW_FS_ROUNDS, CRASH_LW_MAXCP  override the sizes
#   CRASH_LW_KEEP=1         keep the logs in $RESULTS_DIR even on success
#   CRASH_LW_WINDOW=some    crash points with a power cut's window: some (MAXCP/2
#                           more, at FLUSH entries), all, or off (prefixes only)
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/../../guest/lib.sh"
# shellcheck source=tests/crash/logwrites/lwlib.sh
. "$(dirname "$0")/lwlib.sh"

BIG=${CRASH_LW_BIG:-0}
if [[ $BIG == 1 ]]; then
	ROUNDS=${CRASH_LW_ROUNDS:-40} FS_ROUNDS=${CRASH_LW_FS_ROUNDS:-16}
	MAXCP=${CRASH_LW_MAXCP:-40} FSLIST="ext4 xfs"
else
	ROUNDS=${CRASH_LW_ROUNDS:-8} FS_ROUNDS=${CRASH_LW_FS_ROUNDS:-5}
	MAXCP=${CRASH_LW_MAXCP:-8} FSLIST="ext4"
fi
KEEP=${CRASH_LW_KEEP:-0}
WINDOW=${CRASH_LW_WINDOW:-some}
[[ $WINDOW == some || $WINDOW == all || $WINDOW == off ]] || fail "CRASH_LW_WINDOW: some, all or off, not '$WINDOW'"
REPLAY=$REPO/build/tools/replay-log
STAMP=$REPO/build/tools/stampio
[[ -x $REPLAY && -x $STAMP ]] || fail "$REPLAY or $STAMP missing: run 'make tools' on the host"

SEED=$((RANDOM + 1))
NB=4096                # raw region: 16 MiB of 4 KiB blocks
# geometry GEOM: the cache slice and the table's arguments of a phase.
#   narrow: 1 MiB metadata area + 80 sets of 64 KiB (128-byte records, four
#           to a sector: a tear keeps or loses whole records);
#   wide:   4 MiB sets (the default set_size: 1 KiB records, each across two
#           sectors, so a tear breaks records), 4 MiB metadata area + 2 sets.
# META_SECT: the metadata area (superblock, both record copies), what a power
# cut's window may tear.
geometry() {
	local sz
	case $1 in
	narrow) CACHE_MB=6 META_SECT=2048 sz=16 ;;
	wide) CACHE_MB=12 META_SECT=8192 sz=1024 ;;
	esac
	SSDP_FEATS="write_policy writeback set_size $sz evict_wait 50"
	# Loading a crash point: the same geometry; writeback unthrottled (flush_dirty).
	SSDP_RELOAD_FEATS="$SSDP_FEATS throttle off"
}
geometry narrow
CHK=/mnt/lwchk
MNT=/mnt/lwfs
OUTP=$RESULTS_DIR/${SSDPRIO_TEST:-60-crash-logwrites}

load_module
modprobe dm-log-writes || fail "no dm-log-writes"
modprobe dm-snapshot || fail "no dm-snapshot"
modprobe ext4
modprobe xfs || true
mkdir -p $CHK $MNT

# --- Does the module persist its metadata? ---------------------------------
# With persistence, a blank cache without `format` is refused.
has_persistence() {
	local o c r=0
	o=$(make_ssd lwprobeo 8)
	c=$(make_ssd lwprobec 8)
	if dm_try_create lwprobe "0 $(sectors "$o") ssdprio $o $c" >/dev/null 2>&1; then
		dm_remove lwprobe
		r=1
	fi
	remove_nullb lwprobeo
	remove_nullb lwprobec
	return $r
}

# The linear stack (the device under test is the origin slice itself) checks
# the harness, the replay and the kernel below; by default it runs only when
# the module has no persistence (CRASH_LW_STACK=linear: the control run).
STACKS=${CRASH_LW_STACK:-}
if [[ -z $STACKS ]]; then
	if has_persistence; then
		STACKS=ssdprio
	else
		STACKS=linear
		log "NOTE: the module keeps its metadata in RAM only (it loads a blank cache without 'format'):"
		log "NOTE: the ssdprio stack is skipped; only the harness (stack 'linear') runs"
	fi
fi

# --- Devices ------------------------------------------------------------------
# devs_up ORIGIN_MB: null_blk data, log, replay and snapshot-COW devices.
devs_up() {
	local omb=$1 dmb=$(($1 + CACHE_MB))
	DATA=$(make_ssd lwdata "$dmb" 0)
	LOGDEV=$(make_ssd lwlog 1024 0)
	REP=$(make_ssd lwrep "$dmb" 0)
	COW0=$(make_ssd lwcow0 "$dmb" 0)
	COW1=$(make_ssd lwcow1 "$dmb" 0)
	DSECT=$(sectors "$DATA")
	OSECT=$((omb * 2048))
	CSECT=$((DSECT - OSECT))
}

devs_down() {
	local d
	for d in lwdata lwlog lwrep lwcow0 lwcow1; do remove_nullb "$d"; done
}

lw_mark() { dmsetup message lw 0 mark "$1" || fail "log mark $1 failed"; }

# The order writes reached the data device in: blktrace from before the
# log-writes target exists until it is gone; ORDER is replay-log's --order
# file, or empty when the trace cannot be had or may have missed events.
BT=/tmp/lwbt
have_blktrace() {
	command -v blktrace >/dev/null && command -v blkparse >/dev/null || return 1
	[[ -d /sys/kernel/debug/block ]] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	[[ -d /sys/kernel/debug/block ]]
}
trace_start() {
	ORDER= BTPID=
	have_blktrace || { log "no blktrace: crash windows keep writes in any order"; return 0; }
	# One event per logged write: no merging of adjacent ones.
	echo 2 >"/sys/block/$(basename "$DATA")/queue/nomerges"
	rm -rf $BT && mkdir -p $BT
	blktrace -d "$DATA" -a queue -a complete -D $BT >$BT/blktrace.out 2>&1 &
	BTPID=$!
	for _ in $(seq 50); do
		compgen -G "$BT/$(basename "$DATA").blktrace.*" >/dev/null && break
		sleep 0.2
	done
	sleep 1
	# A read below the log: proof that the trace was live from here on.
	dd if="$DATA" of=/dev/null bs=4k count=1 iflag=direct status=none
}
trace_stop() {
	local name
	[[ -n $BTPID ]] || return 0
	name=$(basename "$DATA")
	kill -INT $BTPID
	wait $BTPID || { cat $BT/blktrace.out >&2; log "blktrace failed: crash windows keep writes in any order"; return 0; }
	blkparse -i "$name" -D $BT -f 'EV %a %d %S %n\n' 2>/dev/null |
		awk '$1 == "EV" { print $2, $3, $4, $5 }' >$BT/all
	if ! grep -q '^Q R[A-Z]* 0 8$' $BT/all || ! grep -q '(dropped 0)' $BT/blktrace.out; then
		log "blktrace was not live in time or dropped events: crash windows keep writes in any order"
		return 0
	fi
	awk '($1 == "Q" || $1 == "C") && $2 ~ /W/ && $4 > 0 { print $1, $3, $4 }' $BT/all >$BT/order
	ORDER=$BT/order
}

# stack_up STACK: log-writes, its two slices, the device under test in $DUT.
stack_up() {
	local lw
	lw=$(dm_create lw "0 $DSECT log-writes $DATA $LOGDEV")
	dm_create lworig "0 $OSECT linear $lw 0" >/dev/null
	dm_create lwcache "0 $CSECT linear $lw $OSECT" >/dev/null
	if [[ $1 == ssdprio ]]; then
		# shellcheck disable=SC2086 # word lists
		set -- $SSDP_FEATS
		DUT=$(dm_create lwsp "0 $OSECT ssdprio /dev/mapper/lworig /dev/mapper/lwcache $(($# + 1)) format $*")
	else
		DUT=/dev/mapper/lworig
	fi
	lw_mark start
}

# stack_down STACK: a clean shutdown of ssdprio (marked), then the log closed.
stack_down() {
	local st
	if [[ $1 == ssdprio ]]; then
		log "live status: $(dmsetup status lwsp)"
		lw_mark shutdown
		dm_remove lwsp
		lw_mark removed
	fi
	st=$(dmsetup status lw)
	[[ $st != *logging_disabled* ]] || fail "log device full or failed: $st"
	LOGSECT=$(awk '{ print $5 + 1 }' <<<"$st")
	dm_remove lwcache
	dm_remove lworig
	dm_remove lw
}

# --- The log -------------------------------------------------------------------
# sample N FILE: N of FILE's lines evenly spread, first and last included.
sample() {
	awk -v m="$1" '{ f[NR - 1] = $1 }
		END {
			n = NR
			if (n <= m) { for (i = 0; i < n; i++) print f[i]; exit }
			for (k = 0; k < m; k++) print f[int(k * (n - 1) / (m - 1) + 0.5)]
		}' "$2"
}

# analyse PHASE: list the log; set CPS (crash points to check, ascending),
# WINAT (those given a power cut's window) and the per-entry mark table used
# by acked().
declare -a CPS
declare -A WINAT
RSP_UP=
analyse() {
	local phase=$1 list=$OUTP.$1.list first nflush
	"$REPLAY" --log "$LOGDEV" --list >"$list" || fail "replay-log --list failed"
	lw_load_marks "$list"
	first=$(awk '$4 == "MARK" && $5 == "'"$FIRST_MARK"'" { print $1; exit }' "$list")
	[[ -n $first ]] || fail "$phase: no mark '$FIRST_MARK' in the log"
	"$REPLAY" --log "$LOGDEV" --find-flushes --start-entry "$first" >/tmp/lw.flushes ||
		fail "replay-log --find-flushes failed"
	nflush=$(wc -l </tmp/lw.flushes)
	# Flush/FUA entries: all, or MAXCP of them evenly spread (first and last
	# included); plus every mark from FIRST_MARK on; plus the end of the log.
	# Power cut windows open at FLUSH entries (a whole epoch after them:
	# the data writes and the metadata commit that follow), MAXCP / 2 of
	# them; with CRASH_LW_WINDOW=all every crash point has one.
	WINAT=()
	if [[ $WINDOW != off ]]; then
		awk -v f="$first" '$1 >= f && $4 ~ /FLUSH/ { print $1 }' "$list" >/tmp/lw.wflushes
		local e
		for e in $(sample $(((MAXCP + 1) / 2)) /tmp/lw.wflushes); do WINAT[$e]=1; done
	fi
	mapfile -t CPS < <({
		echo "$first"
		sample "$MAXCP" /tmp/lw.flushes
		awk -v f="$first" '$4 == "MARK" && $1 >= f { print $1 }' "$list"
		((${#WINAT[@]} == 0)) || printf '%s\n' "${!WINAT[@]}"
	} | sort -n -u)
	log "$phase: log of $(grep -vc '^#' "$list") entries, $nflush flush/FUA after '$FIRST_MARK' (entry $first), ${#MARK_AT[@]} marks; checking ${#CPS[@]} crash points, ${#WINAT[@]} of them with a power cut's window"
}

# The replayed state is seen through a transient dm-snapshot of $REP, so what
# the load and the checks write (superblock, recovery, journal replay) never
# reaches $REP. The snapshot and the two slices over it stay; each crash point
# reloads the snapshot table, alternating between two COW devices (a new
# snapshot on the COW device of the live one would take its exceptions over).
snap_init() {
	COWI=0
	dm_create lwsnap "0 $DSECT snapshot $REP $COW0 N 8" >/dev/null
	dm_create lwrorig "0 $OSECT linear /dev/mapper/lwsnap 0" >/dev/null
	dm_create lwrcache "0 $CSECT linear /dev/mapper/lwsnap $OSECT" >/dev/null
}

snap_fini() {
	dm_remove lwrcache
	dm_remove lwrorig
	dm_remove lwsnap
}

# The devices made per crash point do not wait for udev (--noudevsync): its
# probing of each new device runs beside the checks, harmlessly. The ssdprio
# device is used as /dev/dm-N, which the kernel's devtmpfs makes at create.
# reload_up STACK ENTRY [window]: a fresh snapshot of the replay, with a power
# cut's window after ENTRY written over it if asked; the device under test in
# RDUT.
reload_up() {
	local cow table out
	COWI=$((1 - COWI))
	cow=$COW0
	((COWI)) && cow=$COW1
	{ echo "0 $DSECT snapshot $REP $cow N 8" | dmsetup reload lwsnap &&
		dmsetup resume --noudevsync lwsnap; } || fail "crash point entry $2: snapshot reload failed"
	WEND=$2
	if [[ ${3:-} == window ]]; then
		# The torn part: the cache slice's metadata area. Every other window
		# must tear a write there; the rest are drawn freely, so that states
		# with every commit whole and later writes lost come too (a window
		# whose only writes to that area are commits always tears one).
		local tear=
		(((NWIN++ % 2) == 0)) && tear=1
		out=$("$REPLAY" --log "$LOGDEV" --replay /dev/mapper/lwsnap --discard-zeroes \
			--start-entry $(($2 + 1)) --crash-window --seed $((SEED * 100000 + $2)) \
			--tear-range "$OSECT+$META_SECT" ${tear:+--must-tear} ${ORDER:+--order "$ORDER"}) ||
			fail "crash point entry $2: replay-log --crash-window failed"
		[[ $out =~ entries\ \[[0-9]+,\ ([0-9]+)\).*\ ([0-9]+)\ whole,\ ([0-9]+)\ torn,\ ([0-9]+)\ dropped ]] ||
			fail "crash point entry $2: replay-log said: $out"
		WEND=$((BASH_REMATCH[1] - 1))
		WIN_WHOLE=$((WIN_WHOLE + BASH_REMATCH[2]))
		WIN_TORN=$((WIN_TORN + BASH_REMATCH[3]))
		WIN_DROPPED=$((WIN_DROPPED + BASH_REMATCH[4]))
		# Every FUA write whole (all its commits durable) and plain writes lost.
		[[ $out =~ \ ([1-9][0-9]*)\ dropped,\ ([0-9]+)\ of\ ([0-9]+)\ FUA && ${BASH_REMATCH[2]} == "${BASH_REMATCH[3]}" && ${BASH_REMATCH[3]} != 0 ]] &&
			WIN_FUA_WHOLE=$((WIN_FUA_WHOLE + 1))
		[[ $out =~ ([0-9]+)\ queued\ after ]] && WIN_AFTER=$((WIN_AFTER + BASH_REMATCH[1]))
		CPLOG+="w"
	fi
	# Nothing cached from the last crash point may be read.
	blockdev --flushbufs /dev/mapper/lwrorig /dev/mapper/lwrcache /dev/mapper/lwsnap
	if [[ $1 == ssdprio ]]; then
		# shellcheck disable=SC2086
		set -- "$1" "$2" $SSDP_RELOAD_FEATS
		table="0 $OSECT ssdprio /dev/mapper/lwrorig /dev/mapper/lwrcache $(($# - 2)) ${*:3}"
		out=$(echo "$table" | dmsetup create --noudevsync -v lwrsp 2>&1) || {
			echo "$out" >&2
			dmesg | tail -5 >&2
			fail "crash point entry $2: ssdprio refused to load the replayed cache; table: $table"
		}
		RSP_UP=1
		[[ $out =~ Major,\ minor:\ +[0-9]+,\ ([0-9]+) ]] || fail "no minor in: $out"
		RDUT=/dev/dm-${BASH_REMATCH[1]}
		[[ -b $RDUT ]] || fail "$RDUT (lwrsp) missing"
		check_load_status "$2" "$WEND"
	else
		RDUT=/dev/mapper/lwrorig
	fi
}

reload_down() {
	local err
	[[ -n $RSP_UP ]] || return 0
	for _ in $(seq 100); do
		# udev may be probing it for a moment
		err=$(dmsetup remove --noudevsync lwrsp 2>&1) && break
		sleep 0.2
	done
	dmsetup info lwrsp >/dev/null 2>&1 && fail "cannot remove lwrsp: $err"
	RSP_UP=
}

# check_load_status ENTRY LAST: a crash point before the clean shutdown began
# must load as a recovery (meta_state recovered), one after it as clean. LAST:
# the last entry a power cut's window may have written (ENTRY without one).
check_load_status() {
	local e=$1 last=$2 ms sh rm
	ms=$(status_get lwrsp meta_state)
	sh=$(mark_entry shutdown)
	rm=$(mark_entry removed)
	[[ -n ${LOADLOG_DONE:-} ]] || log "first load: $(dmsetup status lwrsp)"
	LOADLOG_DONE=1
	if [[ -n $sh ]] && ((last < sh)); then
		[[ $ms == recovered ]] ||
			fail "crash point entry $e (before the shutdown at $sh): meta_state $ms, expected recovered (unclean shutdown)"
	elif [[ -n $rm ]] && ((e >= rm)); then
		[[ $ms == clean ]] ||
			fail "crash point entry $e (after the clean shutdown at $rm): meta_state $ms, expected clean"
	else
		[[ $ms == recovered || $ms == clean ]] ||
			fail "crash point entry $e (during the shutdown): meta_state $ms"
	fi
	CPLOG+="${ms:0:1}"
}

# --- Raw workload ----------------------------------------------------------------
raw_workload() {
	local g mode
	for ((g = 1; g <= ROUNDS; g++)); do
		# Every 5th round uses O_DSYNC (FUA writes), every 7th is not synced
		# at all (not acknowledged; a later sync covers it), the rest fdatasync.
		mode=fdatasync
		((g % 5 == 0)) && mode=dsync
		((g % 7 == 3)) && mode=none
		"$STAMP" write "$DUT" --blocks $NB --gen $g --seed $SEED --sync $mode --reads 16 ||
			fail "stampio write gen $g ($mode) failed"
		[[ $mode == none ]] || lw_mark "g$g"
		# Quiet windows longer than evict_wait: writeback, set reuse.
		((g % 3 == 0)) && sleep 0.3
	done
	# The last round is always acknowledged (g is ROUNDS + 1 here).
	"$STAMP" write "$DUT" --blocks $NB --gen $g --seed $SEED --reads 64 || fail "stampio write gen $g failed"
	lw_mark "g$g"
	WRITTEN=$g
	sleep 0.5
}

raw_check() { # raw_check STACK ENTRY
	local stack=$1 e=$2 a out
	a=$(acked "$e" g)
	out=$("$STAMP" check "$RDUT" --blocks $NB --seed $SEED --acked "$a" --written "$WRITTEN") || {
		echo "$out" >&2
		fail "raw, stack $stack, crash point entry $e (acked gen $a): bad blocks (see above; log listing in $OUTP.$PHASE.list)"
	}
	CPLOG+="$e:${a}g "
	# Every third crash point (and the last):
	if [[ $stack == ssdprio ]] && ((++NPOINT % 3 == 2 || e == CPS[-1])); then
		lap verify
		# The recovered dirty state is complete: after flush_dirty, the
		# origin alone holds exactly what the cache showed.
		dd if="$RDUT" of=/tmp/lw.view bs=1M count=$((NB / 256)) iflag=direct status=none ||
			fail "reading the recovered device failed"
		dmsetup message lwrsp 0 flush_dirty || fail "flush_dirty failed"
		for _ in $(seq 300); do
			[[ $(status_get lwrsp dirty_blocks) == 0 ]] && break
			sleep 0.2
		done
		assert_eq "$(status_get lwrsp dirty_blocks)" 0 "crash point entry $e: dirty blocks after flush_dirty"
		reload_down
		lap flush
		cmp <(dd if=/dev/mapper/lwrorig bs=1M count=$((NB / 256)) iflag=direct status=none) /tmp/lw.view ||
			fail "crash point entry $e: after flush_dirty and remove, the origin differs from what the recovered cache showed"
	fi
}

# raw_selfcheck ENTRY: the check must notice garbage and lost blocks: scribble
# on block 300, then zero the first MiB of the last crash point's snapshot.
raw_selfcheck() {
	local a out
	a=$(acked "$1" g)
	dd if=/dev/urandom of=/dev/mapper/lwrorig bs=4k count=1 seek=300 oflag=direct status=none ||
		fail "self-check: writing the snapshot failed"
	out=$("$STAMP" check /dev/mapper/lwrorig --blocks $NB --seed $SEED --acked "$a" --written "$WRITTEN") &&
		fail "self-check: stampio check missed a scribbled block: $out"
	[[ $out == *"block 300: garbage"* ]] || fail "self-check: unexpected stampio output: $out"
	dd if=/dev/zero of=/dev/mapper/lwrorig bs=1M count=1 oflag=direct status=none ||
		fail "self-check: writing the snapshot failed"
	out=$("$STAMP" check /dev/mapper/lwrorig --blocks $NB --seed $SEED --acked "$a" --written "$WRITTEN") &&
		fail "self-check: stampio check missed zeroed blocks: $out"
	[[ $out == *"zeroes (initial content), expected gen"* ]] || fail "self-check: unexpected stampio output: $out"
}

# --- File system workload -----------------------------------------------------------
# Round r: a new file f<r> (fsync file and directory), an append to a log file
# (fsync), an atomic replace of "state" (write tmp, fsync, rename, fsync dir);
# every 6th round deletes f<r-5> (fsync dir). Then mark f<r>.
declare -A FSUM FDEL
declare -a APPLEN
fs_workload() {
	local fs=$1 r f sz
	case $fs in
	ext4) mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$DUT" ;;
	xfs) mkfs.xfs -q -f -K "$DUT" ;;
	esac >/tmp/lw.mkfs 2>&1 || { cat /tmp/lw.mkfs; fail "mkfs.$fs failed"; }
	mount -t "$fs" "$DUT" $MNT || fail "mount $fs failed"
	mkdir $MNT/d0 $MNT/d1 $MNT/d2 $MNT/d3
	: >$MNT/applog
	sync -f $MNT
	lw_mark mkfs
	: >/tmp/lw.applog
	APPLEN[0]=0
	for ((r = 1; r <= FS_ROUNDS; r++)); do
		f=d$((r % 4))/f$r
		sz=$(((r * 7919 % 61 + 1) * 1024 + r))
		head -c $sz /dev/urandom >/tmp/lw.src
		FSUM[$r]=$(sha256sum </tmp/lw.src)
		FSUM[$r]=${FSUM[$r]%% *}
		dd if=/tmp/lw.src of=$MNT/$f bs=64k conv=fsync status=none || fail "writing $f failed"
		sync "$MNT/d$((r % 4))"
		head -c $((r * 1000 % 9000 + 100)) /dev/urandom | tee -a /tmp/lw.applog >>$MNT/applog
		sync $MNT/applog
		APPLEN[r]=$(stat -c %s /tmp/lw.applog)
		printf 'state gen %d\n' $r >$MNT/state.tmp
		sync $MNT/state.tmp
		mv $MNT/state.tmp $MNT/state
		sync $MNT
		if ((r % 6 == 0 && r > 5)); then
			rm -f "$MNT/d$(((r - 5) % 4))/f$((r - 5))"
			FDEL[$((r - 5))]=$r
			sync "$MNT/d$(((r - 5) % 4))"
		fi
		lw_mark "f$r"
		((r % 3 == 0)) && sleep 0.3
	done
	cp /tmp/lw.applog /tmp/lw.applog.model
	umount $MNT || fail "umount $fs failed"
	lw_mark umount
}

fs_check() { # fs_check FS STACK ENTRY
	local fs=$1 stack=$2 e=$3 a r f st n out
	a=$(acked "$e" f)
	mount -t "$fs" "$RDUT" $CHK || fail "$fs, stack $stack, crash point entry $e (acked round $a): mount failed"
	: >/tmp/lw.sums
	for ((r = 1; r <= a; r++)); do
		f=d$((r % 4))/f$r
		if [[ -n ${FDEL[$r]:-} ]] && ((FDEL[$r] <= a)); then
			[[ ! -e $CHK/$f ]] || fail "$fs, stack $stack, crash point entry $e: f$r was deleted (round ${FDEL[$r]}) but is back"
		elif [[ -n ${FDEL[$r]:-} && ! -e $CHK/$f ]]; then
			# Deleted in a round not acknowledged yet, whose transaction
			# may be durable all the same: gone, or there whole.
			:
		else
			echo "${FSUM[$r]}  $f" >>/tmp/lw.sums
		fi
	done
	[[ ! -s /tmp/lw.sums ]] || (cd $CHK && sha256sum -c --quiet /tmp/lw.sums) >&2 ||
		fail "$fs, stack $stack, crash point entry $e (acked round $a): fsynced files missing or wrong"
	if ((a > 0)); then
		[[ -f $CHK/state ]] || fail "$fs, stack $stack, crash point entry $e: state file missing"
		st=$(<$CHK/state)
		[[ $st =~ ^state\ gen\ ([0-9]+)$ ]] ||
			fail "$fs, stack $stack, crash point entry $e: state file torn: '$st'"
		n=${BASH_REMATCH[1]}
		((n >= a && n <= FS_ROUNDS)) ||
			fail "$fs, stack $stack, crash point entry $e: state gen $n, acked $a"
		n=$(stat -c %s $CHK/applog)
		((n >= APPLEN[a])) || fail "$fs, stack $stack, crash point entry $e: applog has $n bytes, ${APPLEN[a]} were fsynced"
		cmp -n "${APPLEN[a]}" $CHK/applog /tmp/lw.applog.model ||
			fail "$fs, stack $stack, crash point entry $e: applog differs in its fsynced part"
	fi
	umount $CHK || fail "umount failed"
	case $fs in
	ext4) e2fsck -fn "$RDUT" ;;
	xfs) xfs_repair -n "$RDUT" ;;
	esac >/tmp/lw.fsck 2>&1 || {
		cat /tmp/lw.fsck >&2
		fail "$fs, stack $stack, crash point entry $e (acked round $a): fsck found errors"
	}
	CPLOG+="$e:${a}f "
}

# lap [WHAT]: add "WHAT Ns" (time since the last lap) to TIMES.
lap() {
	local now=${EPOCHREALTIME/[.,]/} t
	if [[ -n ${1:-} ]]; then
		t=$(((now - LAP) / 100000))
		TIMES+=" $1 $((t / 10)).$((t % 10))s"
	fi
	LAP=$now
}

# --- Phases ------------------------------------------------------------------------
run_phase() { # run_phase STACK WORKLOAD(raw|ext4|xfs) [GEOMETRY]
	local stack=$1 wl=$2 geom=${3:-narrow} omb e t0=$SECONDS
	geometry "$geom"
	case $wl in
	raw) omb=$((NB / 256)) FIRST_MARK=start ;;
	ext4) omb=48 FIRST_MARK=mkfs ;;
	xfs) omb=320 FIRST_MARK=mkfs ;;
	esac
	log "=== stack $stack, workload $wl, $geom geometry (origin $omb MiB, cache $CACHE_MB MiB: $SSDP_FEATS; seed $SEED)"
	devs_up $omb
	PHASE=$stack-$wl LOGSECT=
	[[ $geom == narrow ]] || PHASE+=-$geom
	trace_start
	stack_up "$stack"
	if [[ $wl == raw ]]; then raw_workload; else fs_workload "$wl"; fi
	stack_down "$stack"
	trace_stop
	log "workload done in $((SECONDS - t0)) s"
	analyse "$PHASE"
	dmesg_mark=$(dmesg | wc -l)
	REPLAYED=-1
	CPLOG=
	NPOINT=0
	LOADLOG_DONE=
	WIN_WHOLE=0 WIN_TORN=0 WIN_DROPPED=0 WIN_AFTER=0 NWIN=0 WIN_FUA_WHOLE=0
	local win
	snap_init
	for e in "${CPS[@]}"; do
		TIMES=
		lap
		replay_to "$e"
		lap replay
		win=
		[[ $WINDOW == all || -n ${WINAT[$e]:-} ]] && win=window
		reload_up "$stack" "$e" $win
		lap load
		if [[ $wl == raw ]]; then raw_check "$stack" "$e"; else fs_check "$wl" "$stack" "$e"; fi
		lap check
		reload_down
		lap remove
		log "crash point: entry $e:$TIMES"
	done
	[[ $wl == raw ]] && raw_selfcheck "$e"
	snap_fini
	log "checked ([w: with a power cut's window][recovered|clean load]entry:acked): $CPLOG"
	if [[ $WINDOW != off ]]; then
		log "power cut windows: $WIN_WHOLE writes kept, $WIN_TORN torn, $WIN_DROPPED lost ($WIN_AFTER of them queued after a cut FUA write; write order $([[ -n $ORDER ]] && echo "from blktrace" || echo unknown)); $WIN_FUA_WHOLE of $NWIN windows kept every FUA write and lost others"
		[[ $stack != ssdprio ]] || ALL_TORN=$((ALL_TORN + WIN_TORN))
	fi
	# What the loads made of the torn blocks (informational).
	[[ $stack != ssdprio ]] ||
		log "loads that found torn metadata blocks: $(dmesg | tail -n +$((dmesg_mark + 1)) | grep -c 'metadata blocks torn')"
	log "stack $stack, workload $wl, $geom geometry: ${#CPS[@]} crash points consistent ($((SECONDS - t0)) s)"
	if [[ $KEEP == 1 ]]; then save_log; else rm -f "$OUTP.$PHASE.list"; fi
	PHASE=
	devs_down
}

# save_log: the log of the current phase into $RESULTS_DIR (for replay-log).
save_log() {
	[[ -n $PHASE && -b ${LOGDEV:-} ]] || return 0
	dd if="$LOGDEV" of="$OUTP.$PHASE.log" bs=1M status=none \
		count=$(((${LOGSECT:-2097152} + 2047) / 2048)) &&
		log "log saved: $OUTP.$PHASE.log (replay-log --log FILE --list)"
	[[ -z ${ORDER:-} ]] || { cp "$ORDER" "$OUTP.$PHASE.order" &&
		log "write order saved: $OUTP.$PHASE.order (replay-log --order FILE)"; }
}
# On failure, keep the log that shows it.
trap 'rc=$?; ((rc == 0 || rc == 77)) || save_log' EXIT

ALL_TORN=0
for stack in $STACKS; do
	run_phase "$stack" raw
	# Records across sectors: a tear breaks them (their checksum).
	[[ $stack != ssdprio ]] || run_phase "$stack" raw wide
	for fs in $FSLIST; do
		if [[ $fs == xfs ]] && ! grep -qw xfs /proc/filesystems; then
			log "no xfs in this kernel: skipped"
			continue
		fi
		run_phase "$stack" "$fs"
	done
done
# The windows must have torn ssdprio's metadata, or they tested less than
# they claim.
[[ $WINDOW == off || " $STACKS " != *" ssdprio "* ]] || ((ALL_TORN > 0)) ||
	fail "no power cut window tore a metadata write of ssdprio's"
log "ok (stacks: $STACKS)"
