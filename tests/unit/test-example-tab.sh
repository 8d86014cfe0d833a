#!/bin/bash
# The example ssdpriotab the package ships (examples/ssdpriotab) is one the
# tool takes: as shipped it activates nothing and draws no message; with
# the leading '#' of its entries removed, the systemd generator makes a unit
# of every entry and refuses none (the same parser and checks as activate:
# the features against the kernel's key table).  Run by make tools-test.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=${TOOL:-build/ssdprio-tool}
EX=examples/ssdpriotab
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-example-tab: FAIL: $*" >&2; exit 1; }

mkdir "$D/as-is" "$D/out"
"$TOOL" systemd-generator --tab "$EX" "$D/as-is" 2>"$D/err" || fail "generator: $(cat "$D/err")"
[[ ! -s $D/err ]] || fail "the example as shipped: $(cat "$D/err")"
[[ -z $(ls -A "$D/as-is") ]] || fail "the example as shipped makes units: $(ls "$D/as-is")"

# An entry is a '#' followed at once by a name; the prose has "# ".
sed -n 's/^#\([A-Za-z0-9_.+-]\+[[:blank:]]\)/\1/p' "$EX" >"$D/tab"
names=$(awk '{ print $1 }' "$D/tab")
[[ $(wc -l <"$D/tab") -ge 3 ]] || fail "expected at least 3 entries, got: $(cat "$D/tab")"
"$TOOL" systemd-generator --tab "$D/tab" "$D/out" 2>"$D/err" || fail "generator: $(cat "$D/err")"
[[ ! -s $D/err ]] || fail "entries refused: $(cat "$D/err")"
for n in $names; do
	[[ -f $D/out/ssdprio@$n.service.d/50-ssdpriotab.conf ]] || fail "$n: no unit"
	[[ -L $D/out/local-fs-pre.target.requires/ssdprio@$n.service ||
		-L $D/out/local-fs.target.wants/ssdprio@$n.service ]] || fail "$n: not pulled in"
done
# What the comments say of the boot options holds.
[[ -L $D/out/local-fs.target.wants/ssdprio@usb.service ]] || fail "usb: nofail is not honoured"
grep -qx 'Environment=SSDPRIO_DEVICE_TIMEOUT=30' "$D/out/ssdprio@usb.service.d/50-ssdpriotab.conf" ||
	fail "usb: device_timeout: $(cat "$D/out/ssdprio@usb.service.d/50-ssdpriotab.conf")"
# activate takes every entry too: only the example's disks are missing.
"$TOOL" activate --dry-run --tab "$D/tab" >/dev/null 2>"$D/err" && fail "activate found the example's disks"
for n in $names; do
	grep -q "^ssdprio-tool: $n: .* is not there" "$D/err" || fail "$n: activate: $(cat "$D/err")"
done
echo "test-example-tab: ok"
