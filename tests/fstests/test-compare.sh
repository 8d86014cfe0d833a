#!/bin/bash
# compare.py on made-up reports: a regression, a test a stopped run never
# reached, a run without the bare baseline.  Host only (make unit).
set -euo pipefail
cd "$(dirname "$0")"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
report() { # DIR TEST:STATUS...
	mkdir -p "$1"
	local t out=$1/result.xml
	echo '<testsuite>' >"$out"
	for t in "${@:2}"; do
		case ${t#*:} in
		pass) echo "<testcase name=\"${t%:*}\"/>" ;;
		fail) echo "<testcase name=\"${t%:*}\"><failure message=\"output mismatch\"/></testcase>" ;;
		notrun) echo "<testcase name=\"${t%:*}\"><skipped message=\"no reflink\"/></testcase>" ;;
		esac >>"$out"
	done
	echo '</testsuite>' >>"$out"
}
check() { # WANT_RC PATTERN ARGS...: compare.py ARGS exits WANT_RC and says PATTERN
	local rc=0 out
	out=$(python3 compare.py "${@:3}") || rc=$?
	[[ $rc == "$1" ]] || { echo "FAIL: compare.py ${*:3}: exit $rc, want $1"; echo "$out"; exit 1; }
	grep -q -- "$2" <<<"$out" || { echo "FAIL: compare.py ${*:3}: no '$2' in:"; echo "$out"; exit 1; }
}
echo "ext4 generic/001 generic/002 generic/003" >"$d/asked"
report "$d/a/ext4-bare" generic/001:pass generic/002:pass generic/003:notrun
report "$d/a/ext4-ssdprio" generic/001:pass generic/002:fail generic/003:notrun
check 1 "REGRESSION ext4 generic/002" "$d/a" ext4 -- bare ssdprio
report "$d/b/ext4-ssdprio" generic/001:pass generic/002:fail
check 1 "NOT-REACHED ext4 generic/003: ssdprio" --asked "$d/asked" "$d/b" ext4 -- ssdprio
check 0 "no bare baseline in this run" "$d/b" ext4 -- ssdprio
report "$d/c/ext4-bare" generic/001:pass generic/002:fail generic/003:pass
report "$d/c/ext4-ssdprio" generic/001:pass generic/002:fail generic/003:pass
check 0 "no test that passes on the bare device fails on ssdprio" --asked "$d/asked" "$d/c" ext4 -- bare ssdprio
check 1 "no result.xml" "$d/c" ext4 xfs -- bare
echo "PASS tests/fstests/test-compare.sh"
