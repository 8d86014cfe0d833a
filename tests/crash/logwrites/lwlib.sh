# shellcheck shell=bash
# What the dm-log-writes crash tests share (guest.sh, tests/guest/63-*):
# the marks of a log and an incremental replay.  Needs REPLAY (replay-log),
# LOGDEV (the log) and REP (the device replayed onto) set, and lib.sh's fail.

declare -a MARK_AT MARK_NAME
REPLAYED=-1

# lw_load_marks LIST: the marks of a `replay-log --list` output, in log order.
lw_load_marks() {
	mapfile -t MARK_AT < <(awk '$4 == "MARK" { print $1 }' "$1")
	mapfile -t MARK_NAME < <(awk '$4 == "MARK" { print $5 }' "$1")
}

# acked ENTRY PREFIX: the highest N of the marks PREFIX<N> at or before ENTRY.
acked() {
	local e=$1 p=$2 i n best=0
	for i in "${!MARK_AT[@]}"; do
		((MARK_AT[i] <= e)) || break
		n=${MARK_NAME[i]}
		[[ $n =~ ^$p([0-9]+)$ ]] || continue
		n=${BASH_REMATCH[1]}
		((n > best)) && best=$n
	done
	echo "$best"
}

# mark_entry NAME: the entry number of mark NAME (empty if none).
mark_entry() {
	local i
	for i in "${!MARK_NAME[@]}"; do
		[[ ${MARK_NAME[i]} == "$1" ]] && echo "${MARK_AT[i]}" && return
	done
}

# replay_to ENTRY: continue the replay onto $REP up to ENTRY (inclusive);
# REPLAYED=-1 starts it afresh.
replay_to() {
	"$REPLAY" --log "$LOGDEV" --replay "$REP" --discard-zeroes \
		--start-entry $((REPLAYED + 1)) --limit "$1" || fail "replay-log to entry $1 failed"
	REPLAYED=$1
}
