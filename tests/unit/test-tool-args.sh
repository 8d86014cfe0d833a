#!/bin/bash
# ssdprio-tool's command line: the overall usage lists every command of the
# table but the test-only ones; `CMD --help` prints that command's usage
# alone on stdout (exit 0); a wrong call names what is wrong (the missing
# argument, the unknown option, the extra word) and prints only that
# command's usage on stderr (exit 1, docs/tools.md); an unknown command
# prints the overall usage.  No device is touched, and dmsetup is never run
# (libdevmapper is the tool's one way to device-mapper).  Run by make
# tools-test.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=${TOOL:-build/ssdprio-tool}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-tool-args: FAIL: $*" >&2; exit 1; }

# run RC ARGS...: the tool's exit status must be RC; its output in $D/out, $D/err.
run() {
	local want=$1 rc=0
	shift
	"$TOOL" "$@" >"$D/out" 2>"$D/err" || rc=$?
	((rc == want)) || fail "'$*' exited $rc, not $want: $(cat "$D/out" "$D/err")"
}

# usage_only CMD FILE: FILE holds CMD's usage and no other command's.
usage_only() {
	local cmd=$1 f=$2
	grep -q "^usage: ssdprio-tool $cmd\b" "$f" || fail "$cmd: no usage in $(cat "$f")"
	if grep -E "ssdprio-tool [a-z]" "$f" | grep -v "ssdprio-tool $cmd\b" | grep -q .; then
		fail "$cmd: another command's usage: $(cat "$f")"
	fi
}

# error CMD "MESSAGE" ARGS...: `ssdprio-tool CMD ARGS...` exits 1 saying
# "ssdprio-tool CMD: MESSAGE" first, then CMD's usage only.
error() {
	local cmd=$1 msg=$2
	shift 2
	run 1 "$cmd" "$@"
	[[ $(head -n1 "$D/err") == "ssdprio-tool $cmd: $msg" ]] ||
		fail "'$cmd $*': said '$(head -n1 "$D/err")', not 'ssdprio-tool $cmd: $msg'"
	usage_only "$cmd" "$D/err"
	[[ ! -s $D/out ]] || fail "'$cmd $*': output on stdout: $(cat "$D/out")"
}

run 0 --help
grep -q '^usage:$' "$D/out" || fail "--help: $(cat "$D/out")"
mapfile -t cmds < <(awk '$1 == "ssdprio-tool" && $2 !~ /^-/ { print $2 }' "$D/out" | uniq)
((${#cmds[@]} >= 18)) || fail "--help lists ${#cmds[@]} commands: $(cat "$D/out")"
grep -q debug- "$D/out" && fail "--help lists the test-only commands"
for cmd in "${cmds[@]}" debug-record debug-placement; do
	run 0 "$cmd" --help
	usage_only "$cmd" "$D/out"
	[[ ! -s $D/err ]] || fail "$cmd --help: on stderr: $(cat "$D/err")"
	# Options after the arguments count too (GNU style).
	run 0 "$cmd" x --help
done
# Two forms, both shown.
run 0 status --help
grep -q "^       ssdprio-tool status --prometheus" "$D/out" || fail "status --help: $(cat "$D/out")"

# Missing arguments, named.
error show "missing the cache device <cache_dev>"
error check "missing the cache device <cache_dev>"
error dirty "missing the cache device <cache_dev>" --
error wipe "missing the cache device <cache_dev>" --force
error table "missing the origin device <origin_dev>"
error table "missing the cache device <cache_dev>" /dev/null
error origin-id "missing the origin device <origin_dev>"
error create "missing the origin device <origin_dev>" --dry-run x
error create "missing the cache device <cache_dev>" x /dev/null
error deactivate "missing a device <name>"
error systemd-generator "missing the output directory <dir>"
error flush "missing the device <name>"
error flush "missing the device <name>" --wait --timeout 5
error wait "missing the device <name>" --until clean
error detach "missing the device <name>"
error attach "missing the device <name>"
error attach "missing the cache device <cache_dev>" fast
error set "missing the device <name>"
error set "missing a <key>" fast
error set "missing its <value>" fast evict_wait
error set "missing the value of dirty_target" fast evict_wait 100 dirty_target
error debug-placement "missing an origin set <oset>" /dev/null
# One too many.
error check "unexpected argument 'b'" a b
error gen-origin-id "unexpected argument 'x'" x
error flush "unexpected argument 'b'" a b
error systemd-generator "unexpected argument 'd'" a b c d
# Options.
error flush "unknown option --foo" --foo x
error show "unknown option -x" -x c
error status "unknown option --bogus" --bogus
error show "option --json takes no value" --json=1 c
error flush "option --timeout needs a value" x --timeout
error set "option --tab needs a value" --tab
error status "--output goes with --prometheus" --output /x
error status "--watch x: not a number of seconds" --watch=x

# An unknown command, or none: the overall usage.
run 1 nosuch
[[ $(head -n1 "$D/err") == "ssdprio-tool: unknown command 'nosuch'" ]] || fail "unknown command: $(cat "$D/err")"
grep -q "^  ssdprio-tool status \[--json\]" "$D/err" || fail "unknown command: no usage: $(cat "$D/err")"
run 1
grep -q "^  ssdprio-tool show " "$D/err" || fail "no command: $(cat "$D/err")"
run 0 --version
grep -Eq '^ssdprio-tool [0-9]' "$D/out" || fail "--version: $(cat "$D/out")"

# No command runs dmsetup: every device-mapper call is libdevmapper's.
mkdir "$D/bin"
printf '#!/bin/sh\ntouch "%s/ran"\nexit 1\n' "$D" >"$D/bin/dmsetup"
chmod +x "$D/bin/dmsetup"
truncate -s 64M "$D/o.img" "$D/c.img"
printf 'x %s %s\n' "$D/o.img" "$D/c.img" >"$D/tab"
for args in "create --dry-run x $D/o.img $D/c.img" "deactivate ssdprio-no-such" \
	"set ssdprio-no-such evict_wait 5" "attach ssdprio-no-such $D/c.img" \
	"activate --dry-run --tab $D/tab"; do
	# shellcheck disable=SC2086 # the words of $args
	PATH=$D/bin:$PATH "$TOOL" $args >/dev/null 2>&1 || true
	[[ ! -e $D/ran ]] || fail "'$args' ran dmsetup"
done

# The man page's synopsis names every command of the usage.
for cmd in "${cmds[@]}"; do
	grep -q "^\.B ssdprio-tool ${cmd//-/\\\\-}\b" man/ssdprio-tool.8 ||
		fail "man/ssdprio-tool.8: no synopsis of $cmd"
done
echo "test-tool-args: ok"
