#!/bin/bash
# Metadata fuzzing: a cache holding dirty (and clean) stamped data is
# removed cleanly and its device saved; then, round after round from that
# pristine image, tests/guest/metacorrupt.py damages the superblock or the
# records (bit flips, zeroed sectors and blocks, random bytes, and forged
# values with a correct checksum) and the cache is loaded again. The load
# must either be refused, with a kernel message and the cache device left
# as it was, or succeed; then every readable sector must hold its own
# stamp at a generation that was written to it (old or new): never another
# sector's data, never garbage. No oops (the runner checks the log). The
# first rounds are fixed: the newest copy of each metadata block zeroed.
#
# SSDP_META_ROUNDS (default 12); SSDP_META_SEED repeats one run (printed).
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

ROUNDS=${SSDP_META_ROUNDS:-12}
SEED=${SSDP_META_SEED:-$((($(date +%s) ^ $$) % 100000))}
log "seed $SEED (SSDP_META_SEED=$SEED repeats this run), $ROUNDS rounds"
FIO=$REPO/tests/guest/faultio.py
STATE=/tmp/meta.model
TOOL=$REPO/build/ssdprio-tool

load_module
hdd=$(make_hdd hdd 16 0 16)
ssd=$(make_ssd ssd 8)
len=$(sectors "$hdd")
ssz=$(sectors "$ssd")
WS=$len
FEAT="set_size 16 evict_wait 3600000 seq_cutoff 0"

# Every generation of every sector is remembered (--history): a load that
# lost some dirty blocks may show older ones, never others.
python3 "$FIO" fill "$hdd" "$STATE" --sectors "$WS" --history >/dev/null || fail "fill failed"
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 7 format $FEAT")
# dirty: random overwrites in the first 5 MiB; clean: [8M, 12M) read twice
python3 "$FIO" run "$dev" "$STATE" --ops 1500 --seed "$SEED" --partial 0.1 --read-frac 0.2 \
	--max-blocks 4 --hi-block $((5 * 256)) >/dev/null || fail "stamped writes failed"
for _ in 1 2; do
	dd if="$dev" of=/dev/null bs=64k skip=128 count=64 iflag=direct status=none
	sleep 1
done
log "pristine: $(dmsetup status sp)"
assert_ge "$(status_get sp dirty_blocks)" 1 "dirty blocks in the pristine cache"
dm_remove sp
dd if="$ssd" of=/tmp/pristine.img bs=1M iflag=direct status=none || fail "saving the cache failed"
json=$("$TOOL" show --json "$ssd") || fail "ssdprio-tool show failed"
meta_sectors=$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(8 + 2 * d["rec_sectors"])' "$json")
nr_osets=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["origin_sets"])' "$json")
log "layout: metadata ${meta_sectors} sectors, $nr_osets origin sets"

restore() {
	dd if=/tmp/pristine.img of="$ssd" bs=1M oflag=direct status=none || fail "restoring the cache failed"
}
meta_sum() { dd if="$ssd" bs=512 count="$meta_sectors" iflag=direct status=none | md5sum; }

# The pristine image loads clean and holds exactly what was acknowledged.
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 6 $FEAT")
assert_eq "$(status_get sp meta_state)" clean "pristine load"
python3 "$FIO" check "$dev" "$STATE" --strict-reads --label pristine >/dev/null ||
	fail "the pristine cache does not hold the acknowledged data"
dm_remove sp

# First, without chance: the newest copy of each metadata block lost. The
# other copy is the commit before, whose clean frames may hold other sets'
# data by now: only its dirty blocks may be believed.
nr_mblocks=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["rec_sectors"] // 8)' "$json")
fixed=()
for ((k = 0; k < nr_mblocks; k++)); do fixed+=("--kind rec_zero_newest --block $k"); done
# A record with seq 2^64-1 and a good checksum: no commit could make it, and
# taking it would wrap the sequence (every later load would then believe
# stale copies): refused.
fixed+=("--kind rec_forge --how seq_huge")
refused=0 loaded=0 problems=()
for r in $(seq $((${#fixed[@]} + ROUNDS))); do
	restore
	rseed=$((SEED * 1000 + r))
	# shellcheck disable=SC2086 # the fixed rounds' words
	what=$(python3 "$REPO/tests/guest/metacorrupt.py" "$ssd" --seed "$rseed" --nr-osets "$nr_osets" \
		${fixed[r - 1]:-}) || fail "round $r: metacorrupt failed"
	fmt=""
	nf=6
	# Now and then with "format": a cache of ours is never re-initialised,
	# a blank one (zeroed superblock) is.
	if ((r > ${#fixed[@]} && RANDOM % 5 == 0)); then fmt="format " nf=7; fi
	before=$(meta_sum)
	echo "ssdprio-test: metafuzz round $r" >/dev/kmsg
	if out=$(printf '0 %s ssdprio %s %s %s %s%s\n' "$len" "$hdd" "$ssd" "$nf" "$fmt" "$FEAT" |
		dmsetup create sp 2>&1); then
		_settle
		loaded=$((loaded + 1))
		st=$(status_get sp meta_state)
		res=$(python3 "$FIO" check /dev/mapper/sp "$STATE" --any-gen --label "round $r" 2>/tmp/check.err | tail -1)
		log "round $r ($what; ${fmt}seed $rseed): loaded, meta_state $st, $res"
		[[ $what == *seq_huge* ]] && problems+=("round $r ($what): a record of seq 2^64-1 loaded")
		if [[ ! $res =~ \"bad\":\ 0, ]]; then
			head -5 /tmp/check.err >&2
			problems+=("round $r ($what, seed $rseed): loaded and served wrong data: $res")
		fi
		[[ $res =~ \"read_errors\":\ 0, ]] || log "round $r: read errors on a loaded cache: $res"
		dm_remove sp
	else
		refused=$((refused + 1))
		msg=$(dmesg | sed -n "/ssdprio-test: metafuzz round $r\$/,\$p" | grep -E 'device-mapper: (table|ssdprio): ' | tail -1)
		log "round $r ($what; ${fmt}seed $rseed): refused: ${msg#*] }"
		[[ -n $msg ]] || problems+=("round $r ($what): refused without a kernel message ($out)")
		[[ $(meta_sum) == "$before" ]] || problems+=("round $r ($what): refused, but the cache's metadata changed")
		dmsetup info sp >/dev/null 2>&1 && dmsetup remove sp
	fi
done
log "$((${#fixed[@]} + ROUNDS)) rounds: $loaded loaded, $refused refused"
if ((${#problems[@]})); then
	printf 'problem: %s\n' "${problems[@]}" >&2
	fail "${#problems[@]} round(s) broke the rules (seed $SEED)"
fi
log "ok"
