#!/bin/bash
# Soak: a normal fio and an ionice -c3 fio, both verifying what they write,
# loop over a working set larger than the cache while a control loop
# suspends and resumes, reloads the table with changed knobs, sends knob
# messages, flush_dirty and reset_stats, for SSDP_SOAK_SECS (default 60;
# up to 3600 for a long soak, within the timeout). Then a last verified
# pass, flush_dirty, and the origin alone must hold that pass; the kernel
# log must be clean (the runner checks) and slab usage stable (kmalloc,
# bio and dm caches compared before and after with a generous margin: a
# leak per I/O shows as many MiB, noise as a few hundred KiB). No timing is
# asserted: the hang guards are minutes.
# timeout: 4500
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

SOAK=${SSDP_SOAK_SECS:-60}
SEED=${SSDP_SOAK_SEED:-$((($(date +%s) ^ $$) % 100000))}
RANDOM=$SEED
log "seed $SEED, soak ${SOAK}s"

load_module
hdd=$(make_hdd hdd 96 200000 8)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")
# null_blk allocates its pages (and small kmalloc'd descriptors) on first
# write: touch every page now so that the slab comparison sees only us.
dd if=/dev/zero of="$hdd" bs=1M count=96 oflag=direct status=none
dd if=/dev/zero of="$ssd" bs=1M count=24 oflag=direct status=none

BASE="set_size 64 seq_cutoff 0"
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 9 format $BASE evict_wait 200 idle_dispatch_interval 20")
log "cache: $(status_get sp total_sets) sets of 256 KiB; working set 80 MiB"

G=(--filename="$dev" --direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1
	--randrepeat=0 --norandommap)
N_JOB=(--name=normal --rw=randwrite --bs=4k --offset=0 --size=48M --io_size=4M)
I_JOB=(--name=idle --rw=randwrite --bs=16k --offset=48M --size=32M --io_size=2M)

slab_kb() { # kmalloc, bio and dm slab caches, in KiB
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '$1 ~ /^(kmalloc-|kmalloc-cg-|bio|biovec|dm_|dm-|ssdp)/ { s += $3 * $4 }
		END { printf "%d\n", s / 1024 }' /proc/slabinfo
}
slab_detail() {
	awk '$1 ~ /^(kmalloc-|kmalloc-cg-|bio|biovec|dm_|dm-|ssdp)/ { printf "%s=%d ", $1, $3 * $4 / 1024 }' /proc/slabinfo
}

# A warm-up round of both jobs: caches and pools reach their working size.
fio_run "${G[@]}" "${N_JOB[@]}" --randseed=1 >/dev/null
fio_run "${G[@]}" "${I_JOB[@]}" --randseed=2 >/dev/null
slab0=$(slab_kb)
detail0=$(slab_detail)
log "slab before: ${slab0} KiB"

END=$((SECONDS + SOAK))
# loop_fio NAME IONICE-CLASS JOB...: rounds of write + verify until END; the
# first failure stops the loop and leaves its output in /tmp/NAME.fail
loop_fio() {
	local name=$1 cls=$2 i=0 out
	shift 2
	while ((SECONDS < END)); do
		i=$((i + 1))
		out=$(ionice -c "$cls" fio "${G[@]}" "$@" --randseed=$((SEED + i * 7)) 2>&1)
		if (($? != 0)) || grep -Eq 'err= *[1-9]|verify:|bad magic' <<<"$out"; then
			printf '%s\n' "$out" >/tmp/"$name".fail
			return 1
		fi
	done
	echo "$i" >/tmp/"$name".rounds
}
rm -f /tmp/normal.fail /tmp/idle.fail
loop_fio normal 2 "${N_JOB[@]}" &
npid=$!
loop_fio idle 3 "${I_JOB[@]}" &
ipid=$!

WP=(writeback writethrough writearound)
BUDGET=(0 10 100)
table_line() { # a valid table with random knobs (geometry unchanged)
	echo "0 $len ssdprio $hdd $ssd 16 $BASE evict_wait $((RANDOM % 3000)) \
idle_dispatch_interval $((RANDOM % 300)) write_policy ${WP[RANDOM % 3]} \
batch_mode_delay $((RANDOM % 8000)) read_alloc $([[ $((RANDOM % 2)) == 0 ]] && echo on || echo off) \
idle_budget ${BUDGET[RANDOM % 3]}"
}
declare -A did=()
while ((SECONDS < END)); do
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	case $((RANDOM % 6)) in
	0)
		timeout 300 dmsetup suspend sp || fail "suspend hung (300 s) or failed: $(dmsetup status sp)"
		sleep "0.$((RANDOM % 10))"
		dmsetup resume sp || fail "resume failed"
		did[suspend]=$((${did[suspend]:-0} + 1))
		;;
	1)
		t=$(table_line)
		printf '%s\n' "$t" | dmsetup reload sp || fail "reload refused: $t"
		timeout 300 dmsetup resume sp || fail "resume of the reload hung (300 s) or failed: $t"
		did[reload]=$((${did[reload]:-0} + 1))
		;;
	2)
		case $((RANDOM % 7)) in
		0) m="evict_wait $((RANDOM % 2000))" ;;
		1) m="idle_dispatch_interval $((RANDOM % 200))" ;;
		2) m="write_policy ${WP[RANDOM % 3]}" ;;
		3) m="evict_inflight $((1 + RANDOM % 8))" ;;
		4) m="batch_mode_delay $((RANDOM % 5000))" ;;
		5) m="idle_alloc $([[ $((RANDOM % 2)) == 0 ]] && echo on || echo off)" ;;
		6) m="idle_budget ${BUDGET[RANDOM % 3]}" ;;
		esac
		# shellcheck disable=SC2086 # key and value are two words
		dmsetup message sp 0 $m || fail "message refused: $m"
		did[message]=$((${did[message]:-0} + 1))
		;;
	3)
		dmsetup message sp 0 flush_dirty || fail "flush_dirty refused"
		did[flush_dirty]=$((${did[flush_dirty]:-0} + 1))
		;;
	4)
		dmsetup message sp 0 reset_stats || fail "reset_stats refused"
		did[reset_stats]=$((${did[reset_stats]:-0} + 1))
		;;
	5) dmsetup status sp >/dev/null || fail "status failed" ;;
	esac
	[[ -s /tmp/normal.fail || -s /tmp/idle.fail ]] && break
done
rc=0
wait $npid || rc=1
wait $ipid || rc=1
for n in normal idle; do
	if [[ -s /tmp/$n.fail ]]; then
		grep -E 'err=|verify|fio:' /tmp/$n.fail | head -20 >&2
		fail "the $n fio failed during the soak"
	fi
done
((rc == 0)) || fail "a fio loop failed"
log "soak done: normal $(cat /tmp/normal.rounds) rounds, idle $(cat /tmp/idle.rounds) rounds; $(for k in "${!did[@]}"; do printf '%s %s ' "$k" "${did[$k]}"; done)"
log "status: $(dmsetup status sp)"

# The last pass: everything written and verified through the target, then
# the origin alone after flush_dirty.
LAST=(--filename="$dev" --direct=1 --ioengine=psync --verify=crc32c --verify_fatal=1
	--name=last --rw=write --bs=128k --offset=0 --size=80M)
fio_run "${LAST[@]}" >/dev/null
dmsetup message sp 0 flush_dirty || fail "flush_dirty refused"
wait_status sp dirty_blocks == 0 600
slab1=$(slab_kb)
detail1=$(slab_detail)
log "slab after: ${slab1} KiB (before ${slab0} KiB)"
dm_remove sp
LAST[0]=--filename=$hdd
fio_run "${LAST[@]}" --verify_only=1 >/dev/null

# A leak per bio over the soak's ~100k bios would be many MiB.
allow=$((8192 + slab0 / 4))
if ((slab1 - slab0 > allow)); then
	python3 - "$detail0" "$detail1" <<'PY' >&2
import sys
a = dict(kv.split("=") for kv in sys.argv[1].split())
b = dict(kv.split("=") for kv in sys.argv[2].split())
grow = sorted(((int(b[k]) - int(a.get(k, 0)), k) for k in b), reverse=True)[:8]
print("grew most (KiB):", ", ".join("%s +%d" % (k, d) for d, k in grow))
PY
	fail "slab usage grew by $((slab1 - slab0)) KiB over the soak (allowed $allow KiB)"
fi
log "ok"
