#!/bin/bash
# The systemd generator (ssdprio-tool systemd-generator) turns ssdpriotab
# lines into the right units: an entry without nofail is required by
# local-fs-pre.target and ordered before it, a nofail entry is only wanted
# by local-fs.target and unordered, device_timeout reaches the unit, the
# boot options never reach the kernel's features, and a bad line is
# reported and skipped without failing the generator.  Run by make
# tools-test; the boot itself is tests/crash/systemd.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=${TOOL:-build/ssdprio-tool}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-generator: FAIL: $*" >&2; exit 1; }

cat >"$D/tab" <<'EOF'
# comment
data   /dev/disk/by-id/ata-HDD1 /dev/disk/by-id/nvme-SSD1-part1 write_policy writeback
spare  /dev/disk/by-id/ata-HDD2 /dev/disk/by-id/nvme-SSD1-part2 nofail device_timeout 7 evict_wait 5000
bad1   /dev/disk/by-id/ata-HDD3 /dev/disk/by-id/nvme-SSD1-part3 device_timeout 0
data   /dev/disk/by-id/ata-HDD4 /dev/disk/by-id/nvme-SSD1-part4
my-db+1 /dev/disk/by-id/ata-HDD5 /dev/disk/by-id/nvme-SSD1-part5
fmt    /dev/disk/by-id/ata-HDD6 /dev/disk/by-id/nvme-SSD1-part6 format
range  /dev/disk/by-id/ata-HDD7 /dev/disk/by-id/nvme-SSD1-part7 evict_wait 99999999999
typo   /dev/disk/by-id/ata-HDD8 /dev/disk/by-id/nvme-SSD1-part8 evict_wiat 100
noval  /dev/disk/by-id/ata-HDD9 /dev/disk/by-id/nvme-SSD1-part9 evict_wait
oid    /dev/disk/by-id/ata-HDDa /dev/disk/by-id/nvme-SSD1-parta origin_id 00000000000000000000000000000000
self   /dev/disk/by-id/ata-HDDb /dev/disk/by-id/ata-HDDb
EOF
mkdir "$D/out"
"$TOOL" systemd-generator --tab "$D/tab" "$D/out" "$D/early" "$D/late" 2>"$D/err" ||
	fail "the generator failed: $(cat "$D/err")"
grep -q "tab:4: device_timeout '0'" "$D/err" || fail "bad device_timeout not reported: $(cat "$D/err")"
grep -q "tab:5: 'data' refused: the name is already used" "$D/err" ||
	fail "duplicate name not reported: $(cat "$D/err")"

# Lines that can never activate get no unit, each refused with its reason.
for why in "tab:7: 'fmt' refused: feature 'format': activation never formats" \
	"tab:8: 'range' refused: feature 'evict_wait'" "tab:9: 'typo' refused: feature 'evict_wiat'" \
	"tab:10: 'noval' refused: feature 'evict_wait': needs a value" \
	"tab:11: 'oid' refused: feature 'origin_id': must be 32 hex digits" \
	"tab:12: 'self' refused: the origin and the cache are one disk"; do
	grep -qF "$why" "$D/err" || fail "not reported: $why: $(cat "$D/err")"
done

link=$D/out/local-fs-pre.target.requires/ssdprio@data.service
[[ -L $link && $(readlink "$link") == */ssdprio@.service ]] || fail "data: no requires link"
conf=$D/out/ssdprio@data.service.d/50-ssdpriotab.conf
grep -qx 'Before=local-fs-pre.target' "$conf" || fail "data: not ordered before local-fs-pre: $(cat "$conf")"
grep -qx 'Environment=SSDPRIO_DEVICE_TIMEOUT=90' "$conf" || fail "data: default timeout: $(cat "$conf")"

link=$D/out/local-fs.target.wants/ssdprio@spare.service
[[ -L $link ]] || fail "spare (nofail): no wants link"
[[ ! -e $D/out/local-fs-pre.target.requires/ssdprio@spare.service ]] || fail "spare (nofail) is required"
conf=$D/out/ssdprio@spare.service.d/50-ssdpriotab.conf
! grep -q '^Before=' "$conf" || fail "spare (nofail) is ordered: $(cat "$conf")"
grep -qx 'Environment=SSDPRIO_DEVICE_TIMEOUT=7' "$conf" || fail "spare: timeout: $(cat "$conf")"

# A mount of the device waits as long as the service may take, not 90 s.
grep -qx 'JobRunningTimeoutSec=150' "$D/out/dev-mapper-data.device.d/50-ssdpriotab.conf" ||
	fail "data: device unit timeout: $(cat "$D/out/dev-mapper-data.device.d/50-ssdpriotab.conf")"
grep -qx 'JobRunningTimeoutSec=67' "$D/out/dev-mapper-spare.device.d/50-ssdpriotab.conf" ||
	fail "spare: device unit timeout"

[[ ! -e $D/out/ssdprio@bad1.service.d ]] || fail "a refused line got a unit"
# A name with - and +: escaped as systemd-escape does, so that the unit's %I
# is the name again.
inst='my\x2ddb\x2b1'
if command -v systemd-escape >/dev/null; then
	[[ $(systemd-escape 'my-db+1') == "$inst" ]] || fail "systemd-escape says $(systemd-escape 'my-db+1')"
fi
if command -v systemd-escape >/dev/null; then
	dev=$(systemd-escape --path --suffix=device /dev/mapper/my-db+1)
	[[ -f $D/out/$dev.d/50-ssdpriotab.conf ]] || fail "my-db+1: no drop-in for $dev: $(ls "$D/out")"
fi
[[ -L $D/out/local-fs-pre.target.requires/ssdprio@$inst.service &&
	-f $D/out/ssdprio@$inst.service.d/50-ssdpriotab.conf ]] ||
	fail "my-db+1: no escaped unit: $(ls "$D/out/local-fs-pre.target.requires")"
[[ $(find "$D/out" -name '*.conf' | wc -l) == 6 ]] || fail "units: $(find "$D/out")"
[[ ! -e $D/early && ! -e $D/late ]] || fail "wrote into the early or late dir"

# The boot options are not table features: the line's table has none.
printf 'x %s %s nofail device_timeout 5 evict_wait 100\n' "$D/none1" "$D/none2" >"$D/tab2"
out=$("$TOOL" activate --tab "$D/tab2" --dry-run x 2>&1) && fail "activate of missing disks succeeded"
[[ $out != *"nofail"* && $out != *"device_timeout"* ]] || fail "options reached the table: $out"

# No tab: nothing generated, success (a machine without caches boots).
mkdir "$D/out2"
"$TOOL" systemd-generator --tab "$D/nonexistent" "$D/out2" || fail "no tab: the generator failed"
[[ -z $(ls -A "$D/out2") ]] || fail "no tab: units written"
"$TOOL" systemd-generator 2>/dev/null && fail "no directory: accepted"

# activate --wait: a disk that never comes ends with a message naming it.
start=$SECONDS
out=$("$TOOL" activate --tab "$D/tab2" --wait 1 x 2>&1) && fail "--wait on missing disks succeeded"
[[ $out == *"did not appear within 1 s"* ]] || fail "--wait message: $out"
((SECONDS - start < 30)) || fail "--wait 1 took $((SECONDS - start)) s"
"$TOOL" activate --wait 0 x 2>/dev/null && fail "--wait 0 accepted"
"$TOOL" activate --udev --wait 5 x 2>/dev/null && fail "--udev --wait accepted"
"$TOOL" deactivate ssdprio-test-no-such-device | grep -q 'not active' || fail "deactivate of an absent device"
echo "test-generator: ok"
