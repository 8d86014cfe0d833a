#!/bin/bash
# The bash completion (tools/bash-completion/ssdprio-tool) offers what each
# word may be: after `set` a device name, then the run-time keys (from
# `ssdprio-tool set --list-keys`, the module's key table), and nothing for a
# value; after `status --prometheus --output` a file. It follows the
# tool's command table: every command of the usage, each with the options
# its usage names. bash-completion's
# _init_completion is stubbed: only the split of the command line into words
# is taken from it.  Run by make tools-test.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=${TOOL:-build/ssdprio-tool}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-completion: FAIL: $*" >&2; exit 1; }

# The tool under its own name, and a dmsetup that lists one ssdprio device.
ln -s "$(realpath "$TOOL")" "$D/ssdprio-tool"
printf '#!/bin/sh\necho "fast\t(254:3)"\n' >"$D/dmsetup"
chmod +x "$D/dmsetup"
PATH=$D:$PATH

_init_completion() {
	words=("${COMP_WORDS[@]}")
	cword=$COMP_CWORD
	cur=${words[cword]}
	prev=${words[cword - 1]:-}
}
_filedir() { COMPREPLY=(FILES); }
complete() { :; }
# shellcheck source=/dev/null
. tools/bash-completion/ssdprio-tool

# offers "WORD ..." EXPECTED: what completing the last word offers.
offers() {
	local line=$1 want=$2
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_ssdprio_tool
	[[ "${COMPREPLY[*]}" == "$want" ]] || fail "'$line': offered '${COMPREPLY[*]}', expected '$want'"
}

keys=$("$TOOL" set --list-keys | tr '\n' ' ')
keys=${keys% }
[[ " $keys " == *" evict_wait "* && " $keys " != *" block_size "* ]] ||
	fail "set --list-keys: $keys (block_size is a table-only key)"
offers "ssdprio-tool set " "fast"
offers "ssdprio-tool set --persist " "fast"
offers "ssdprio-tool set fast " "$keys"
offers "ssdprio-tool set --tab /etc/x fast evict_w" "evict_wait"
offers "ssdprio-tool set fast evict_wait " ""
offers "ssdprio-tool set fast evict_wait 100 dirty_t" "dirty_target"
offers "ssdprio-tool status " "fast"
offers "ssdprio-tool set --tab " "FILES"
offers "ssdprio-tool wa" "wait"
offers "ssdprio-tool activate --init" "--initramfs"
offers "ssdprio-tool wait " "fast"
offers "ssdprio-tool wait --until " "clean degraded failed flushed"
offers "ssdprio-tool wait --until d" "degraded"
offers "ssdprio-tool wait --until clean --t" "--timeout"
offers "ssdprio-tool wait --timeout " ""
offers "ssdprio-tool status --p" "--prometheus"
offers "ssdprio-tool status --prometheus --o" "--output"
offers "ssdprio-tool status --prometheus --output " "FILES"
offers "ssdprio-tool status --prometheus --output /x/y.prom " "fast"

# completes "WORD ...": what completing the last word offers, sorted.
completes() {
	read -ra COMP_WORDS <<<"$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_ssdprio_tool
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
# The commands of the usage, but those systemd and udev run.
mapfile -t cmds < <("$TOOL" --help |
	awk '$1 == "ssdprio-tool" && $2 !~ /^-/ { print $2 }' | uniq |
	grep -vx -e systemd-generator -e udev-role)
want=$(printf '%s\n' "${cmds[@]}" --help --version | sort | tr '\n' ' ')
got=$(completes "ssdprio-tool ")
[[ $got == "$want" ]] || fail "commands: offered '$got', the usage has '$want'"
for cmd in "${cmds[@]}"; do
	# --udev: for udev's rule only.
	want=$({
		"$TOOL" "$cmd" --help | grep -E '^(usage: | +)ssdprio-tool' |
			grep -oE -- '--[a-z-]+' | grep -vx -- --udev
		echo --help
	} | sort -u | tr '\n' ' ')
	got=$(completes "ssdprio-tool $cmd --")
	[[ $got == "$want" ]] || fail "$cmd: offered '$got', its usage has '$want'"
done
echo "test-completion: ok"
