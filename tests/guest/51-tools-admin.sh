#!/bin/bash
# ssdprio-tool's live commands and admin fixes against the kernel: `status`
# (text, --json checked against `dmsetup status`, --watch, --prometheus: the
# text format, counters rising after I/O, the metrics unit's ExecStart writing
# its file atomically), the status line's
# status_version, `flush --wait` to completion, to `failed` (a dm-flakey
# origin refusing writes: names failed_sets and writeback_errors), to its
# timeout and to Ctrl-C (the flush goes on), argument checks, an ssdpriotab
# with bad, duplicate and conflicting lines (the good entry still activates),
# the kernel's reason for a refused table, `set` at run time and with
# --persist (the tab line rewritten, the rest kept), and udev activation in both
# arrival orders with an origin that is 0 sectors at "add" and grows at
# "change" (a loop device attached later).
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"
command -v jq >/dev/null || skip "jq is missing (scripts/install-deps.sh)"

T=$(mktemp -d)
RULE=/run/udev/rules.d/63-ssdprio.rules
cleanup() {
	if [[ -e $RULE ]]; then
		rm -f "$RULE"
		udevadm control --reload 2>/dev/null || true
	fi
	dmsetup resume orig 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

# expect_rc RC CMD...: run CMD (stdout in $T/out, stderr in $T/err), check its status.
expect_rc() {
	local want=$1 rc=0
	shift
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[[ $rc == "$want" ]] || fail "'$*' exited $rc, expected $want: $(cat "$T/out" "$T/err")"
}
# origin_set MODE: "orig" over $hdd, linear or refusing every write (lib.sh leg).
origin_set() { leg orig "$hdd" "$1"; }
dirty_some() { # dirty_some SEED: 4 MiB of random 4 KiB writes, all dirty
	fio_run --name=d --filename=/dev/mapper/sp --rw=randwrite --bs=4k --direct=1 \
		--offset=1M --size=16M --io_size=4M --randrepeat=0 --randseed="$1" \
		--ioengine=psync >/dev/null
}

load_module
modprobe dm-flakey
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")
origin_set linear
dm_create sp "0 $len ssdprio /dev/mapper/orig $ssd 3 format evict_wait 600000" >/dev/null
dm_create lin "0 2048 linear $hdd 0" >/dev/null # not ssdprio: never listed

# --- the status line: versioned, still key value pairs from field 4 ------------------
read -r _ _ tgt k1 v1 _ < <(dmsetup status sp)
assert_eq "$tgt $k1 $v1" "ssdprio status_version 1" "status_version first"
assert_eq "$(status_get sp status_version)" 1 "status_get reads status_version"

dirty_some 1
dd if=/dev/mapper/sp of=/dev/null bs=1M skip=40 count=2 iflag=direct status=none
dd if=/dev/mapper/sp of=/dev/null bs=1M skip=40 count=2 iflag=direct status=none

# --- status: text and JSON against dmsetup status ---------------------------------------
expect_rc 0 "$TOOL" status
grep -q '^sp: ssdprio' "$T/out" || fail "status lists sp: $(cat "$T/out")"
grep -q '^lin:' "$T/out" && fail "status lists a linear device: $(cat "$T/out")"
grep -q 'cache_mode normal, meta_state formatted' "$T/out" || fail "status health: $(cat "$T/out")"
grep -q 'flush_state idle' "$T/out" || fail "status flush_state: $(cat "$T/out")"
log "$(cat "$T/out")"
expect_rc 1 "$TOOL" status lin
grep -q "not an ssdprio device" "$T/err" || fail "status lin: $(cat "$T/err")"
expect_rc 1 "$TOOL" status nosuchdev

# Every key of the status line, in its order, with its value (numbers as
# numbers).  The two reads are moments apart and an idle device may enter
# batch mode in between: they must agree on one of a few tries.
for try in 1 2 3 4 5; do
	"$TOOL" status --json sp >"$T/j" || fail "status --json"
	st=$(dmsetup status sp)
	jq -e '.schema == 1 and (.devices | length) == 1 and .devices[0].name == "sp"' "$T/j" >/dev/null ||
		fail "status --json shape: $(cat "$T/j")"
	awk '{ for (i = 4; i < NF; i += 2) print $i, $(i + 1) }' <<<"$st" >"$T/want"
	jq -r '.devices[0].status | to_entries[] | "\(.key) \(.value)"' "$T/j" >"$T/got"
	diff "$T/want" "$T/got" >"$T/diff" && break
	((try < 5)) || { cat "$T/diff" >&2; fail "status --json differs from dmsetup status"; }
	sleep 1
done
jq -e '.devices[0].status.dirty_blocks | type == "number"' "$T/j" >/dev/null ||
	fail "status --json: numbers as numbers"
assert_eq "$(jq -r '.devices[0].sectors' "$T/j")" "$len" "json sectors"
assert_eq "$(jq -r '.devices[0].status_version' "$T/j")" 1 "json status_version"
dirty=$(status_get sp dirty_blocks)
assert_eq "$(jq -r '.devices[0].summary.dirty_bytes' "$T/j")" $((dirty * 4096)) "json dirty_bytes"
rh=$(status_get sp read_hits) rm_=$(status_get sp read_misses)
jq -e --argjson h "$rh" --argjson m "$rm_" \
	'.devices[0].summary.read_hit_ratio - ($h / ($h + $m)) | fabs < 0.001' "$T/j" >/dev/null ||
	fail "json read_hit_ratio: $(jq -c .devices[0].summary "$T/j"), hits $rh misses $rm_"
# All devices: sp only.
"$TOOL" status --json | jq -e '[.devices[].name] == ["sp"]' >/dev/null || fail "status --json lists only ssdprio devices"

# --- status --prometheus: the text format, counters that rise, the timer's file ---------
# prom_check FILE: every line a HELP, a TYPE or a sample of sp (the linear
# device never), each metric's HELP and TYPE once and before its samples,
# counters named _total, the last line whole.
prom_check() {
	[[ -s $1 && $(tail -c1 "$1" | od -An -c | tr -d ' ') == '\n' ]] || fail "$1: empty or a cut line"
	awk '
	function bad(why) { print FILENAME ":" NR ": " why ": " $0; err = 1; exit 1 }
	/^# HELP / { if (help[$3]++) bad("second HELP"); next }
	/^# TYPE / {
		if (type[$3]) bad("second TYPE")
		if ($4 != "counter" && $4 != "gauge") bad("type")
		if ($4 == "counter" && $3 !~ /_total$/) bad("a counter not named _total")
		type[$3] = $4; next
	}
	/^ssdprio_[a-z_]+\{device="sp"(,[a-z_]+="[a-z_]+")*\} [0-9]+(\.[0-9]+)?$/ {
		name = $0; sub(/\{.*/, "", name)
		if (!help[name] || !type[name]) bad("no HELP or TYPE before it")
		if (done[name]) bad("samples of one metric apart")
		if (name != last && last != "") done[last] = 1
		last = name; n++; next
	}
	{ bad("not a sample") }
	END { if (!err && n < 40) { print FILENAME ": only " n " samples"; exit 1 } }
	' "$1" || fail "status --prometheus: bad text format"
}
# prom VALUE-OF FILE METRIC{LABELS}: the sample's value
prom() { awk -v m="$2" 'index($0, m " ") == 1 { print $2 }' "$1"; }
expect_rc 0 "$TOOL" status --prometheus
cp "$T/out" "$T/p0"
prom_check "$T/p0"
grep -q '^# TYPE ssdprio_io_errors_total counter$' "$T/p0" || fail "no io_errors_total counter"
assert_eq "$(prom "$T/p0" 'ssdprio_meta_state{device="sp",state="formatted"}')" 1 "meta_state formatted"
assert_eq "$(prom "$T/p0" 'ssdprio_meta_state{device="sp",state="failed"}')" 0 "meta_state failed"
assert_eq "$(prom "$T/p0" 'ssdprio_cache_mode{device="sp",mode="normal"}')" 1 "cache_mode normal"
assert_eq "$(prom "$T/p0" 'ssdprio_dirty_blocks{device="sp"}')" "$(status_get sp dirty_blocks)" "dirty_blocks"
assert_eq "$(prom "$T/p0" 'ssdprio_dirty_bytes{device="sp"}')" $(($(status_get sp dirty_blocks) * 4096)) "dirty_bytes"
assert_eq "$(prom "$T/p0" 'ssdprio_size_bytes{device="sp"}')" $((len * 512)) "size_bytes"
for m in 'ssdprio_inflight_bios{device="sp",class="idle"}' 'ssdprio_queued_bios{device="sp",queue="idle"}' \
	'ssdprio_written_back_blocks_total{device="sp"}' 'ssdprio_bypassed_total{device="sp"}' \
	'ssdprio_writeback_errors_total{device="sp"}' 'ssdprio_io_errors_total{device="sp",leg="origin",op="write"}'; do
	[[ -n $(prom "$T/p0" "$m") ]] || fail "no sample $m"
done
# A normal and an idle (ionice -c3) direct read: bios and bytes of their class rise.
dd if=/dev/mapper/sp of=/dev/null bs=64k count=16 skip=100 iflag=direct status=none
ionice -c3 dd if=/dev/mapper/sp of=/dev/null bs=64k count=4 skip=200 iflag=direct status=none
"$TOOL" status --prometheus sp >"$T/p1" || fail "status --prometheus sp"
prom_check "$T/p1"
n='ssdprio_bytes_total{device="sp",class="normal"}' i='ssdprio_bytes_total{device="sp",class="idle"}'
assert_ge $(($(prom "$T/p1" "$n") - $(prom "$T/p0" "$n"))) $((1 << 20)) "normal bytes after a 1 MiB read"
assert_eq $(($(prom "$T/p1" "$i") - $(prom "$T/p0" "$i"))) $((256 << 10)) "idle bytes after a 256 KiB idle read (each piece the cache split off counted once)"
b='ssdprio_bios_total{device="sp",class="idle"}'
assert_ge $(($(prom "$T/p1" "$b") - $(prom "$T/p0" "$b"))) 4 "idle bios after the idle read"
assert_eq "$(prom "$T/p1" "$i")" "$(status_get sp bytes_idle)" "ssdprio_bytes_total is the kernel's bytes_idle"
expect_rc 1 "$TOOL" status --prometheus lin
expect_rc 1 "$TOOL" status --output "$T/x.prom"
expect_rc 1 "$TOOL" status --prometheus --output "$T/no/such/dir/x.prom"
grep -q "no/such/dir/x.prom: No such file" "$T/err" || fail "--output into a missing directory: $(cat "$T/err")"

# The service's ExecStart as its unit has it: under systemd the unit itself,
# otherwise the line run with the tool and the directory (the read-only
# host's) swapped for ours.
unit=$REPO/tools/systemd/ssdprio-metrics.service
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
prom_dir=/var/lib/prometheus/node-exporter
[[ $exec_line == "/usr/local/sbin/ssdprio-tool status --prometheus --output $prom_dir/ssdprio.prom" ]] ||
	fail "the unit's ExecStart: $exec_line"
if [[ -d /run/systemd/system ]]; then
	mkdir -p "$prom_dir"
	sed "s|/usr/local/sbin/ssdprio-tool|$TOOL|" "$unit" >/run/systemd/system/ssdprio-metrics.service
	systemctl daemon-reload
	systemctl start ssdprio-metrics.service || fail "ssdprio-metrics.service: $(systemctl status ssdprio-metrics.service 2>&1)"
	prom_file=$prom_dir/ssdprio.prom
else
	mkdir -p "$T/textfile"
	read -ra cmd <<<"${exec_line//$prom_dir/$T/textfile}"
	cmd[0]=$TOOL
	"${cmd[@]}" || fail "the service's command: ${cmd[*]}"
	prom_file=$T/textfile/ssdprio.prom
fi
prom_check "$prom_file"
assert_eq "$(stat -c %a "$prom_file")" 644 "the metrics file's mode"
[[ -e $prom_file.tmp ]] && fail "$prom_file.tmp left behind"
# Atomic: each write is a new file renamed into place (a new inode), and a
# reader meanwhile only ever sees whole files.
ino=$(stat -c %i "$prom_file")
lines=$(wc -l <"$prom_file")
(for _ in $(seq 30); do "$TOOL" status --prometheus --output "$prom_file" || exit 1; done) &
wpid=$!
reads=0
while kill -0 "$wpid" 2>/dev/null; do
	# (not cp: it refuses a file replaced between its stat and its open)
	cat "$prom_file" >"$T/seen" || fail "the file was missing while being rewritten"
	[[ $(wc -l <"$T/seen") == "$lines" && $(tail -c1 "$T/seen" | od -An -c | tr -d ' ') == '\n' ]] ||
		fail "a reader saw a partial file: $(wc -l <"$T/seen") lines of $lines"
	reads=$((reads + 1))
done
wait "$wpid" || fail "status --prometheus --output in a loop"
[[ $(stat -c %i "$prom_file") != "$ino" ]] || fail "--output rewrote the file in place"
prom_check "$prom_file"
[[ -e $prom_file.tmp ]] && fail "$prom_file.tmp left behind"
log "status --prometheus: $(grep -vc '^#' "$T/p1") samples; $reads reads during 30 rewrites"
if [[ -d /run/systemd/system ]]; then
	rm -f /run/systemd/system/ssdprio-metrics.service "$prom_file"
	systemctl daemon-reload
fi

# --watch on a pipe: plain repeated blocks; with --json one object per line,
# the later ones with the interval's figures. Ended by SIGINT (exit 0).
# watch_until FILE PATTERN COUNT ARGS...: run status ARGS until FILE has COUNT
# lines matching PATTERN, then SIGINT it.
watch_until() {
	local file=$1 pat=$2 count=$3 pid rc=0
	shift 3
	: >"$file"
	"$TOOL" status "$@" >"$file" &
	pid=$!
	for _ in $(seq 600); do
		(($(grep -c -- "$pat" "$file") >= count)) && break
		sleep 0.2
	done
	kill -INT "$pid"
	wait "$pid" || rc=$?
	assert_eq "$rc" 0 "status $* ended by SIGINT"
	assert_ge "$(grep -c -- "$pat" "$file")" "$count" "status $*: rounds"
}
watch_until "$T/w" '^sp: ssdprio' 2 --watch 0.2 sp
grep -q 'over the last' "$T/w" || fail "status --watch: no interval figures: $(head -20 "$T/w")"
grep -q '^ssdprio status at' "$T/w" || fail "status --watch: no round header: $(head -20 "$T/w")"
grep -q $'\e' "$T/w" && fail "status --watch to a pipe: terminal escapes"
watch_until "$T/wj" '"schema": 1' 2 --json --watch=0.2
jq -e -s 'all(.schema == 1) and (.[1].devices[0].summary | has("interval_read_hit_ratio"))' "$T/wj" >/dev/null ||
	fail "status --json --watch: $(head -3 "$T/wj")"
# A device that does not exist: an error at once, not empty rounds for ever.
expect_rc 1 timeout 60 "$TOOL" status --watch 0.2 sp-no-such-device
grep -q 'sp-no-such-device: no such device' "$T/err" || fail "status --watch of a missing device: $(cat "$T/err")"

# --- flush --wait: to completion --------------------------------------------------------
assert_ge "$(status_get sp dirty_blocks)" 1 "dirty before the flush"
expect_rc 0 "$TOOL" flush --wait sp
grep -q "sp: flushed" "$T/out" || fail "flush --wait: $(cat "$T/out")"
assert_eq "$(status_get sp dirty_blocks)" 0 "dirty after flush --wait"
assert_eq "$(status_get sp flush_state)" idle "flush_state after flush --wait"
expect_rc 0 "$TOOL" flush sp
grep -q "flush_dirty sent" "$T/out" || fail "flush without --wait: $(cat "$T/out")"

# --- flush --wait: the origin refuses writes: failed ------------------------------------
dirty_some 2
origin_set writes
expect_rc 3 "$TOOL" flush --wait --timeout 300 sp
grep -Eq "flush failed: failed_sets [1-9][0-9]*, writeback_errors [1-9]" "$T/out" ||
	fail "flush --wait on a failing origin: $(cat "$T/out")"
log "$(cat "$T/out")"
assert_eq "$(status_get sp flush_state)" failed "flush_state failed"
"$TOOL" status sp >"$T/st" || fail "status after a failed flush"
grep -q "no errors" "$T/st" && fail "status hides the errors: $(cat "$T/st")"
grep -Eq "errors: .*writeback [1-9][0-9]*," "$T/st" ||
	fail "status error line: $(cat "$T/st")"
grep -Eq "flush_state failed" "$T/st" || fail "status flush_state: $(cat "$T/st")"
origin_set linear
expect_rc 0 "$TOOL" flush --wait --timeout 300 sp
assert_eq "$(status_get sp dirty_blocks)" 0 "dirty after the origin came back"

# --- timeout and Ctrl-C: the origin suspended, the flush cannot end ---------------------
dirty_some 3
dmsetup suspend orig || fail "suspend orig"
expect_rc 4 "$TOOL" flush --wait --timeout 1 sp
grep -q "timed out" "$T/out" || fail "flush --timeout: $(cat "$T/out")"
grep -q "flush_state running" "$T/out" || fail "flush --timeout says what is left: $(cat "$T/out")"
# On a terminal: one progress line redrawn with \r; status --watch clears the screen.
rc=0
script -qec "$TOOL flush --wait --timeout 1 sp" /dev/null >"$T/tty" || rc=$?
assert_eq "$rc" 4 "flush --wait --timeout on a terminal"
grep -q $'\rsp: '"[0-9.]* MiB left" "$T/tty" || fail "no \\r progress line on a terminal: $(od -c "$T/tty" | head)"
script -qec "timeout -s INT 10 $TOOL status --watch 0.5 sp" /dev/null >"$T/ttyw" || true
grep -q $'\e\[H\e\[J' "$T/ttyw" || fail "status --watch on a terminal does not redraw: $(od -c "$T/ttyw" | head)"
"$TOOL" flush --wait sp >"$T/int" 2>&1 &
pid=$!
for _ in $(seq 300); do
	grep -q "MiB left" "$T/int" && break
	sleep 0.1
done
grep -q "MiB left" "$T/int" || fail "flush --wait printed no progress: $(cat "$T/int")"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 130 "flush --wait after SIGINT"
grep -q "interrupted: the flush goes on" "$T/int" || fail "SIGINT: $(cat "$T/int")"
grep -q "cache_mode normal, flush_state running" "$T/int" || fail "SIGINT: mode and what is left: $(cat "$T/int")"
dmsetup resume orig || fail "resume orig"
wait_status sp flush_state == idle 300
assert_eq "$(status_get sp dirty_blocks)" 0 "the flush went on after SIGINT"


# --- arguments -------------------------------------------------------------------------------
expect_rc 0 "$TOOL" --help
grep -q "status \[--json\]" "$T/out" || fail "--help on stdout: $(cat "$T/out")"
expect_rc 0 "$TOOL" --version
grep -Eq '^ssdprio-tool [0-9]' "$T/out" || fail "--version: $(cat "$T/out")"
expect_rc 0 "$TOOL" flush --help
expect_rc 1 "$TOOL" status --bogus
expect_rc 1 "$TOOL" flush --wait --timeout x sp
dm_remove sp
expect_rc 1 "$TOOL" table /dev/mapper/orig "$ssd" set_size abc
grep -q "set_size abc: not a number" "$T/err" || fail "table set_size abc: $(cat "$T/err")"
expect_rc 0 "$TOOL" table --help
line=$("$TOOL" table /dev/mapper/orig "$ssd") || fail "table"

# --- ssdpriotab: bad lines refused one by one ----------------------------------------------
cat >"$T/tab" <<EOF
good /dev/mapper/orig $ssd evict_wait 600000
this line is   # three words: an entry whose disks are not there
bad!name /dev/mapper/orig $ssd
good /dev/null $ssd
other /dev/mapper/lin $ssd
EOF
expect_rc 3 "$TOOL" activate --tab "$T/tab" --dry-run
grep -Eq "^dmsetup create good --uuid SSDPRIO-[0-9a-f]{32} --table '$line 2 evict_wait 600000'" "$T/out" ||
	fail "the good entry is activated: $(cat "$T/out" "$T/err")"
grep -q "tab:3: expected" "$T/err" || fail "bad name line 3: $(cat "$T/err")"
grep -q "tab:4: 'good' refused: the name is already used by 'good' on line 1" "$T/err" ||
	fail "duplicate name: $(cat "$T/err")"
grep -q "tab:5: 'other' refused: its cache device is already used by 'good' on line 1" "$T/err" ||
	fail "shared cache: $(cat "$T/err")"
grep -q "3 lines refused" "$T/err" || fail "count of refused lines: $(cat "$T/err")"
# line 2 ("this line is") names devices that are not there: not activated, not a tab error.
grep -q "this: line is not there" "$T/err" || fail "line 2: $(cat "$T/err")"

# The kernel refuses what the tool cannot check: its reason, not "Invalid argument".
printf 'kr /dev/mapper/orig %s idle_cgroup /no/such/cgroup\n' "$ssd" >"$T/tab2"
expect_rc 3 "$TOOL" activate --tab "$T/tab2" kr
grep -q "kr: the kernel refused the table: idle_cgroup" "$T/err" || fail "kernel reason: $(cat "$T/err")"
log "$(cat "$T/err")"
dmsetup info kr >/dev/null 2>&1 && fail "kr was created"

# --- set: at run time, and with --persist in the tab line ------------------------------------
cat >"$T/stab" <<EOF
# a comment that stays
st /dev/mapper/orig $ssd evict_wait 600000 nofail idle_dispatch_interval 50   # tuned
other /dev/null /dev/zero
EOF
cp "$T/stab" "$T/stab.orig"
expect_rc 0 "$TOOL" activate --tab "$T/stab" st
expect_rc 0 "$TOOL" set --tab "$T/stab" st idle_dispatch_interval 250
grep -q "run time only" "$T/out" || fail "set without --persist: $(cat "$T/out")"
dmsetup table st | grep -q "idle_dispatch_interval 250" || fail "not set live: $(dmsetup table st)"
cmp -s "$T/stab" "$T/stab.orig" || fail "set without --persist changed the tab"
expect_rc 1 "$TOOL" set --persist --tab "$T/stab" st no_such_key 1
expect_rc 1 "$TOOL" set --persist --tab "$T/stab" st idle_dispatch_interval abc
expect_rc 1 "$TOOL" set --persist --tab "$T/stab" st block_size 16
grep -q "block_size" "$T/err" || fail "table-only key: $(cat "$T/err")"
# the kernel's own refusal (free_floor of every set): the tab untouched
expect_rc 3 "$TOOL" set --persist --tab "$T/stab" st free_floor 1000000
cmp -s "$T/stab" "$T/stab.orig" || fail "a refused set changed the tab"
expect_rc 1 "$TOOL" set --persist --tab "$T/stab" nosuch idle_dispatch_interval 5
expect_rc 3 "$TOOL" set --persist --tab "$T/tab2" st idle_dispatch_interval 5
grep -q "no entry named st" "$T/err" || fail "set --persist, no tab entry: $(cat "$T/err")"
expect_rc 0 "$TOOL" set --persist --tab "$T/stab" st idle_dispatch_interval 300 batch_mode_delay 7000
grep -q "saved in $T/stab line 2" "$T/out" || fail "set --persist: $(cat "$T/out")"
assert_eq "$(sed -n 2p "$T/stab")" "st /dev/mapper/orig $ssd evict_wait 600000 nofail idle_dispatch_interval 300 batch_mode_delay 7000 # tuned" \
	"the tab line after set --persist"
assert_eq "$(sed -n '1p;3p' "$T/stab")" "$(sed -n '1p;3p' "$T/stab.orig")" "the other lines of the tab"
dm_remove st
expect_rc 0 "$TOOL" activate --tab "$T/stab" st
dmsetup table st | grep -Eq "batch_mode_delay 7000 idle_dispatch_interval 300|idle_dispatch_interval 300.*batch_mode_delay 7000" ||
	fail "the next activation lacks the persisted values: $(dmsetup table st)"
dm_remove st
log "set --persist: $(sed -n 2p "$T/stab")"

# --- udev: both orders, an origin of 0 sectors at "add" growing at "change" -------------------
if ! _udev_running; then
	log "udev is not running (VM_UDEV=0): activation not tested"
	exit 0
fi
# The origin for udev: a loop device over a copy of the origin (same size as
# the cache's superblock says); the cache: a dm-linear over the SSD.
dd if=/dev/mapper/orig of="$T/origin.img" bs=1M status=none || fail "copy the origin"
dm_remove orig
loop=$(losetup -f) || fail "losetup -f"
[[ -b $loop ]] || fail "no free loop device node"
assert_eq "$(sectors "$loop")" 0 "a detached loop device is empty"
cat >"$T/utab" <<EOF
u $loop /dev/mapper/uc evict_wait 600000
EOF
mkdir -p "${RULE%/*}"
sed -e "s|/usr/local/sbin/ssdprio-tool|$TOOL|" -e "s|/etc/ssdprio/ssdpriotab|$T/utab|g" \
	"$REPO/tools/udev/63-ssdprio.rules" >"$RULE"
udevadm control --reload || fail "udevadm control --reload"
kmsg() { dmesg | grep 'ssdprio-tool\[' | tail -n +$((k0 + 1)); }
wait_dev() { # wait_dev NAME: udev's activation is asynchronous to us
	udevadm settle --timeout=60 || true
	for _ in $(seq 150); do
		[[ -b /dev/mapper/$1 ]] && return 0
		sleep 0.2
	done
	fail "udev did not activate $1; tool in the kernel log: $(kmsg | tr '\n' '|')"
}

# Order 1: the origin first (0 sectors at "add", then attached: "change"),
# then the cache.
k0=$(dmesg | grep -c 'ssdprio-tool\[' || true)
udevadm trigger --action=add --settle "$loop" || fail "trigger add $loop"
kmsg | grep -q "u: waiting for origin $loop (empty so far)" ||
	fail "no waiting message for the empty origin: $(kmsg | tr '\n' '|')"
losetup "$loop" "$T/origin.img" || fail "losetup"
udevadm settle --timeout=60 || true
kmsg | grep -q "u: waiting for cache /dev/mapper/uc (not there yet)" ||
	fail "no waiting message for the cache: $(kmsg | tr '\n' '|')"
dmsetup info u >/dev/null 2>&1 && fail "u activated without its cache"
dm_create uc "0 $(sectors "$ssd") linear $ssd 0" >/dev/null
wait_dev u
assert_eq "$(status_get u meta_state)" clean "udev, origin first: warm"
kmsg | grep -q "u: activated" || fail "no activation message: $(kmsg | tr '\n' '|')"
log "order 1: $(kmsg | tr '\n' '|')"
dm_remove u
losetup -d "$loop" || fail "losetup -d"
udevadm settle --timeout=60 || true

# Order 2: the cache first (its event finds the origin empty), then the
# origin grows from 0 at "change".
dm_remove uc
k0=$(dmesg | grep -c 'ssdprio-tool\[' || true)
dm_create uc "0 $(sectors "$ssd") linear $ssd 0" >/dev/null
udevadm settle --timeout=60 || true
kmsg | grep -q "u: waiting for origin $loop (empty so far)" ||
	fail "no waiting message for the origin: $(kmsg | tr '\n' '|')"
dmsetup info u >/dev/null 2>&1 && fail "u activated with an empty origin"
losetup "$loop" "$T/origin.img" || fail "losetup"
wait_dev u
assert_eq "$(status_get u meta_state)" clean "udev, cache first: warm"
log "order 2: $(kmsg | tr '\n' '|')"
kmsg | grep -q "format" && fail "activation mentions format: $(kmsg)"
# Removed on purpose: a synthetic change (udev's watch after a writer closed
# the disk, udevadm trigger) does not bring it back.
dm_remove u
udevadm trigger --action=change --settle "$loop" /dev/mapper/uc || fail "trigger change"
udevadm settle --timeout=60 || true
dmsetup info u >/dev/null 2>&1 && fail "a synthetic change event activated u again"
rm -f "$RULE"
udevadm control --reload
dm_remove uc
losetup -d "$loop"
log "ok"
