#!/bin/bash
# Where reads go, seen by blktrace on both devices: rereads of cached data
# (written, or promoted by an earlier read) are served by the SSD and leave the
# origin alone; reads of a cold range go to the origin, exactly that range.
# timeout: 240
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

if ! command -v blktrace >/dev/null || ! command -v blkparse >/dev/null; then
	skip "blktrace/blkparse not installed (scripts/install-deps.sh installs blktrace)"
fi
if [[ ! -d /sys/kernel/debug/block ]]; then
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	[[ -d /sys/kernel/debug/block ]] || skip "no debugfs: blktrace cannot run"
fi

load_module
MiB=$((1024 * 1024))
hdd=$(make_hdd hdd 64 100000 4)
ssd=$(make_ssd ssd 16)
len=$(sectors "$hdd")
hdd_marker=$((len - 8)) # marker reads (raw devices) show the trace is live
ssd_marker=0            # the cache's superblock area: never a data read

# Origin data for the promoted (B) and cold (C) ranges.
dd if=/dev/urandom of="$hdd" bs=1M count=16 oflag=direct status=none
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 3 format evict_wait 60000")

A=$((4 * MiB)) B=$((8 * MiB)) C=$((12 * MiB)) R=$MiB # range starts, length
dd if=/dev/urandom of="$dev" bs=64k seek=$((A / 65536)) count=$((R / 65536)) oflag=direct status=none
dd if="$dev" of=/dev/null bs=64k skip=$((B / 65536)) count=$((R / 65536)) iflag=direct status=none
wait_status sp valid_blocks ">=" $((2 * R / 4096)) 60 # B's promotions are in
dmsetup message sp 0 flush_dirty                      # no writeback while tracing
wait_status sp dirty_blocks == 0 60
_settle

BT=/tmp/bt
marker_reads() { # one read on each raw device, before the traced I/O
	dd if="$hdd" of=/dev/null bs=4k count=1 skip=$((hdd_marker / 8)) iflag=direct status=none
	dd if="$ssd" of=/dev/null bs=4k count=1 skip=$((ssd_marker / 8)) iflag=direct status=none
}

# trace NAME CMD...: blktrace both devices around CMD; leaves NAME-hdd.ev and
# NAME-ssd.ev, lines "ACTION RWBS SECTOR NSECTORS", marker reads dropped.
# blktrace writes nothing until it stops, so whether it was live when CMD
# started is told by the marker reads made just before: if either is
# missing, trace again.
trace() {
	local name=$1 pid try d marker ok
	shift
	for try in 1 2 3; do
		rm -rf $BT && mkdir -p $BT
		blktrace -d "$hdd" -d "$ssd" -D $BT >$BT/blktrace.out 2>&1 &
		pid=$!
		for _ in $(seq 50); do
			compgen -G "$BT/ssd.blktrace.*" >/dev/null && break
			sleep 0.2
		done
		sleep 1
		marker_reads
		"$@"
		sleep 1
		kill -INT $pid
		wait $pid || { cat $BT/blktrace.out >&2; fail "blktrace failed"; }
		ok=1
		for d in hdd ssd; do
			marker=$hdd_marker
			[[ $d == ssd ]] && marker=$ssd_marker
			blkparse -i $d -D $BT -f 'EV %a %d %S %n\n' 2>/dev/null |
				awk '$1 == "EV" { print $2, $3, $4, $5 }' >"$BT/$d.all"
			grep -q "^Q R[A-Z]* $marker 8\$" "$BT/$d.all" || ok=0
			awk -v m="$marker" '!($3 == m && $4 == 8)' "$BT/$d.all" >"$BT/$name-$d.ev"
		done
		((ok)) && return 0
		log "trace $name: blktrace was not live in time (try $try), again"
	done
	fail "blktrace did not trace the marker reads in 3 tries"
}

# reads FILE ACTION: sectors of that action's read events; events: how many
reads() { awk -v a="$2" '$1 == a && $2 ~ /R/ { n += $4 } END { print n + 0 }' "$1"; }
events() { awk -v a="$2" '$1 == a && $2 ~ /R/' "$1" | wc -l; }

reread() {
	dd if="$dev" of=/dev/null bs=64k skip=$((A / 65536)) count=$((R / 65536)) iflag=direct status=none
	dd if="$dev" of=/dev/null bs=64k skip=$((B / 65536)) count=$((R / 65536)) iflag=direct status=none
}
cold() {
	dd if="$dev" of=/dev/null bs=64k skip=$((C / 65536)) count=$((R / 65536)) iflag=direct status=none
}

# udev reads the device too (blkid after a writer closes it), and copies of
# what it read may take clean frames of A or B (a frame serves one origin
# set at a time). Reread both until a pass misses nothing: all cached again.
for pass in 1 2 3 4 5; do
	m0=$(status_get sp read_misses)
	reread
	(($(status_get sp read_misses) == m0)) && break
	((pass < 5)) || fail "A and B still not all cached after $pass passes"
	sleep 2
done

h0=$(status_get sp read_hits)
trace hot reread
log "hot reread: ssd Q/C read sectors $(reads $BT/hot-ssd.ev Q)/$(reads $BT/hot-ssd.ev C)," \
	"hdd Q/C read sectors $(reads $BT/hot-hdd.ev Q)/$(reads $BT/hot-hdd.ev C), read hits +$(($(status_get sp read_hits) - h0))"
assert_eq "$(reads $BT/hot-ssd.ev Q)" $((2 * R / 512)) "sectors read from the SSD (Q) for the rereads"
assert_eq "$(reads $BT/hot-ssd.ev C)" $((2 * R / 512)) "sectors read from the SSD (C) for the rereads"
assert_eq "$(events $BT/hot-hdd.ev Q)" 0 "origin reads (Q) during the rereads"
assert_eq "$(events $BT/hot-hdd.ev C)" 0 "origin reads (C) during the rereads"
assert_ge "$(($(status_get sp read_hits) - h0))" $((2 * R / 65536)) "read hits counted"

m0=$(status_get sp read_misses)
trace cold cold
log "cold read: hdd Q/C read sectors $(reads $BT/cold-hdd.ev Q)/$(reads $BT/cold-hdd.ev C)," \
	"ssd Q/C read sectors $(reads $BT/cold-ssd.ev Q)/$(reads $BT/cold-ssd.ev C)," \
	"ssd write sectors $(awk '$1 == "Q" && $2 ~ /W/ { n += $4 } END { print n + 0 }' $BT/cold-ssd.ev) (promotion)"
assert_eq "$(reads $BT/cold-hdd.ev Q)" $((R / 512)) "sectors read from the origin (Q) for the cold range"
assert_eq "$(reads $BT/cold-hdd.ev C)" $((R / 512)) "sectors read from the origin (C) for the cold range"
awk -v lo=$((C / 512)) -v hi=$(((C + R) / 512)) '$2 ~ /R/ && ($3 < lo || $3 + $4 > hi)' \
	$BT/cold-hdd.ev | grep -q . && fail "origin reads outside the cold range: $(head -3 $BT/cold-hdd.ev)"
assert_eq "$(events $BT/cold-ssd.ev Q)" 0 "SSD reads (Q) for the cold range"
assert_ge "$(($(status_get sp read_misses) - m0))" $((R / 65536)) "read misses counted"

dm_remove sp
log "ok"
