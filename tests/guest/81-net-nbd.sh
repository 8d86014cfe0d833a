#!/bin/bash
# An NBD origin: nbd-server exports two equal-size disk images on
# loopback, each with a GPT partition; nbd-client connects them with a
# 5 s timeout.  A bare NBD disk has no identity, its partition has one:
# the cache over export a's partition loads warm over it again, and is
# refused over export b's.  The server is stopped while a flush's
# writeback is in flight at it, then killed: the writeback fails (status,
# dmesg), the data stays dirty, cached data still reads, uncached reads
# fail.  The export connected again on another nbd device replaces the
# dead one by a live reload; the writeback then completes and the origin
# read directly holds the data.  Last, an ionice -c3 reader beside a
# normal one: its bios are idle and go through the throttle.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
modprobe nbd nbds_max=4 2>/dev/null || skip "no nbd module in this kernel"
command -v nbd-server >/dev/null && command -v nbd-client >/dev/null ||
	fail "nbd-server or nbd-client missing (scripts/install-deps.sh installs them)"
ip link set lo up || fail "cannot bring up lo"
load_module

NBD_TIMEOUT=5
srv_pid=
conf=/tmp/nbd.conf
cleanup() {
	local d
	dmsetup remove spn >/dev/null 2>&1
	for d in /sys/block/nbd*/pid; do
		[[ -e $d ]] && nbd-client -d "/dev/$(basename "$(dirname "$d")")" >/dev/null 2>&1
	done
	stop_server KILL
	cleanup_all
}
trap cleanup EXIT

# The server and the children that serve its connections, by their ids.
server_pids() { [[ -n $srv_pid ]] && echo "$srv_pid" $(pgrep -P "$srv_pid"); }
stop_server() { # stop_server SIGNAL
	local p
	p=$(server_pids)
	[[ -n $p ]] || return 0
	# shellcheck disable=SC2086
	kill -"$1" $p 2>/dev/null
	if [[ $1 == KILL ]]; then
		# shellcheck disable=SC2086
		for _ in {1..50}; do kill -0 $p 2>/dev/null || break; sleep 0.1; done
		srv_pid=
	fi
}
serve() {
	rm -f /tmp/nbd.pid
	nbd-server -C $conf -p /tmp/nbd.pid || fail "nbd-server"
	for _ in {1..50}; do [[ -s /tmp/nbd.pid ]] && break; sleep 0.1; done
	srv_pid=$(</tmp/nbd.pid)
}
connect() { # connect EXPORT NBDDEV: echoes its partition
	nbd-client -N "$1" 127.0.0.1 10809 "$2" -t $NBD_TIMEOUT >/dev/null ||
		fail "nbd-client $1 $2"
	for _ in {1..100}; do [[ -b ${2}p1 ]] && break; sleep 0.1; done
	[[ -b ${2}p1 ]] || fail "no ${2}p1"
	echo "${2}p1"
}
state() { # the keys this test watches
	dm_status spn | tr ' ' '\n' | grep -A1 -xE 'dirty_blocks|writeback_errors|failed_sets|flush_state|meta_state|origin_read_errors' | paste -sd' '
}

# Two equal-size images, a GPT partition on each (its own random UUID).
for x in a b; do
	truncate -s 40M /tmp/$x.img
	printf 'label: gpt\n,32M\n' | sfdisk -q /tmp/$x.img || fail "sfdisk $x"
done
cat >$conf <<-CONF
	[generic]
	user = root
	group = root
	listenaddr = 127.0.0.1
	[a]
	exportname = /tmp/a.img
	flush = true
	[b]
	exportname = /tmp/b.img
	flush = true
CONF
serve
pa=$(connect a /dev/nbd0)
pb=$(connect b /dev/nbd1)

# --- identity ----------------------------------------------------------------------
out=$("$TOOL" origin-id /dev/nbd0 2>&1 >/dev/null)
[[ $out == *"no identity"* ]] || fail "origin-id of a bare nbd disk: $out"
out=$("$TOOL" origin-id "$pa" 2>&1 >/dev/null)
[[ $out == *"partition UUID"* ]] || fail "origin-id of $pa: $out"
ssd=$(make_ssd ssdn 16)
"$TOOL" create spn "$pa" "$ssd" evict_wait 3600000 dirty_max_age 0 >/dev/null ||
	fail "create over $pa"
"$TOOL" show "$ssd" | grep -q "origin id: *partition UUID" ||
	fail "show: no partition UUID: $("$TOOL" show "$ssd" | grep -i origin)"

# --- data through the cache ----------------------------------------------------------
head -c 4M /dev/urandom >/tmp/nbd.data
dd if=/tmp/nbd.data of=/dev/mapper/spn bs=64k oflag=direct conv=fsync status=none ||
	fail "write through the cache"
assert_eq "$(status_get spn dirty_blocks)" 1024 "dirty blocks"

# --- the connection dropped in the middle of a writeback ---------------------------
stop_server STOP
dmesg -C
dmsetup message spn 0 flush_dirty || fail "flush_dirty"
# The writeback's origin writes wait at the stopped server.
for _ in {1..100}; do
	read -r _ w </sys/block/nbd0/inflight
	((w > 0)) && break
	sleep 0.1
done
((w > 0)) || fail "no writeback write in flight at nbd0: $(state)"
stop_server KILL
wait_status spn flush_state == failed 30
log "dropped: $(state)"
assert_ge "$(status_get spn writeback_errors)" 1 "writeback errors"
assert_ge "$(status_get spn failed_sets)" 1 "failed sets"
assert_eq "$(status_get spn dirty_blocks)" 1024 "dirty blocks after the drop"
dmesg | grep -q "writeback of cache set .* failed (origin)" ||
	fail "no writeback failure in dmesg: $(dmesg | grep ssdprio | tail -3)"
# Reads meanwhile: cached data from the SSD, the rest fails.
cmp <(dd if=/dev/mapper/spn bs=64k count=64 iflag=direct status=none) /tmp/nbd.data ||
	fail "cached data read wrong while the origin is gone"
timeout 60 dd if=/dev/mapper/spn of=/dev/null bs=4k skip=4096 count=1 iflag=direct status=none 2>/dev/null &&
	fail "an uncached read succeeded with the origin gone"
assert_ge "$(status_get spn origin_read_errors)" 1 "origin read errors"

# --- connected again: a live reload over the new connection --------------------------
# A dead nbd device cannot take a new connection while it is held open:
# the export goes on another nbd device, and a reload moves the table.
serve
pa=$(connect a /dev/nbd2)
table=$(dmsetup table spn | awk -v o="$pa" '{ $4 = o; print }')
dmsetup reload spn --table "$table" || fail "reload over $pa"
dmsetup resume spn || fail "resume over $pa"
nbd-client -d /dev/nbd0 >/dev/null 2>&1
net_written_back spn "$pa" /tmp/nbd.data "the origin"
log "written back over the new connection: $(state)"

# --- warm restart over the same export; the other one refused ---------------------
net_warm_restart spn "$pa" "$pb" "$ssd" /tmp/nbd.data export

# --- the idle class over the network origin ------------------------------------------
net_idle_class spn
dm_remove spn
log "ok"
