#!/bin/bash
# Guest side of bench/run: runs the scenarios listed in build/bench/plan.sh, each
# from bench/scenarios/NAME.sh, writing raw JSON lines to build/bench/raw/.
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/../tests/guest/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

PLAN=$REPO/build/bench/plan.sh
[[ -f $PLAN ]] || fail "no $PLAN (run bench/run on the host)"
# shellcheck disable=SC1090
. "$PLAN" # SCENARIOS, BENCH_QUICK, REPS
Q=${BENCH_QUICK:-0}
RAW=$REPO/build/bench/raw
mkdir -p "$RAW"
export Q REPS RAW BENCH_QUICK

trap 'bcache_stop; cleanup_all' EXIT
bench_loop_setup
bench_load_modules

{
	printf '{"kernel": "%s", "quick": %s, "reps": %s, "cpus": %s, "mem_mb": %s, "fio": "%s", "date": "%s",\n "model": ' \
		"$(uname -r)" "$Q" "$REPS" "$(nproc)" \
		"$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)" \
		"$(fio --version)" "$(date -u +%FT%TZ)"
	bench_model_json
	echo "}"
} >"$RAW/meta.json"

for SCEN in $SCENARIOS; do
	export SCEN
	rm -f "$RAW/$SCEN.jsonl"
	log "=== scenario $SCEN (quick=$Q, reps=$REPS)"
	start=$SECONDS
	# Each scenario runs in a bash of its own (lib.sh's fail signals its own
	# main shell): a failure there is reported and the next scenario still runs.
	if bash -c '. "$REPO/tests/guest/lib.sh" && . "$REPO/bench/lib.sh" &&
		. "$REPO/bench/scenarios/$SCEN.sh"'; then
		log "=== scenario $SCEN done in $((SECONDS - start)) s"
	else
		echo "{\"scenario\": \"$SCEN\", \"failed\": true}" >>"$RAW/$SCEN.jsonl"
		log "=== scenario $SCEN FAILED after $((SECONDS - start)) s"
		echo "$SCEN" >>"$RAW/failed"
	fi
	teardown
done
[[ ! -s $RAW/failed ]] || fail "scenarios failed: $(tr '\n' ' ' <"$RAW/failed")"
