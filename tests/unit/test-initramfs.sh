#!/bin/bash
# Early boot: the ssdpriotab's "initramfs" option and `activate
# --initramfs` (the marked entries and the named ones; a name not in the
# tab is no error there), the scripts parse, and the dracut module, sourced
# with dracut's functions stubbed, installs the tool, the tab, the rule
# (activating --initramfs) and its hook.  The initramfs-tools side boots
# for real in tests/crash/rootfs (make check-root).  Run by make unit.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=$PWD/build/ssdprio-tool
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-initramfs: FAIL: $*" >&2; exit 1; }

for f in tools/initramfs-tools/hooks/ssdprio tools/initramfs-tools/scripts/*/ssdprio \
	tools/initramfs-tools/scripts/ssdprio-shutdown tools/dracut/90ssdprio/ssdprio-activate.sh; do
	sh -n "$f" || fail "sh -n $f"
	[[ -x $f ]] || fail "$f is not executable"
done
bash -n tools/dracut/90ssdprio/module-setup.sh || fail "bash -n module-setup.sh"

# Entries over disks that do not exist: which ones activate tried shows in
# its messages, one per entry.
cat >"$D/tab" <<TAB
root  $D/none1 $D/none2 initramfs evict_wait 100
data  $D/none3 $D/none4
other $D/none5 $D/none6 nofail
TAB
tried() { "$TOOL" activate --tab "$D/tab" "$@" 2>&1 | sed -n 's/^ssdprio-tool: \([a-z]*\): .*/\1/p' | sort | xargs; }
[[ $(tried) == "data other root" ]] || fail "activate: $(tried)"
[[ $(tried --initramfs) == root ]] || fail "activate --initramfs: $(tried --initramfs)"
[[ $(tried --initramfs data) == "data root" ]] || fail "activate --initramfs data: $(tried --initramfs data)"
out=$("$TOOL" activate --tab "$D/tab" --initramfs /dev/sda1 2>&1) || true
[[ $out != *"no entry"* ]] || fail "--initramfs with a name not in the tab: $out"
out=$("$TOOL" activate --tab "$D/tab" nosuch 2>&1) && fail "a name not in the tab accepted"
[[ $out == *"no entry 'nosuch'"* ]] || fail "no entry message: $out"
# The option never reaches the table.
out=$("$TOOL" activate --tab "$D/tab" --dry-run root 2>&1) || true
[[ $out != *initramfs* ]] || fail "initramfs reached the table: $out"
# The generator makes a unit for it like any entry.
mkdir "$D/gen"
"$TOOL" systemd-generator --tab "$D/tab" "$D/gen"
[[ -L $D/gen/local-fs-pre.target.requires/ssdprio@root.service ]] || fail "no unit for an initramfs entry"

# dracut: module-setup.sh with dracut's functions stubbed, as dracut
# sources it.
mkdir -p "$D/initdir" "$D/etc/udev/rules.d"
log=$D/dracut.log
(
	moddir=$PWD/tools/dracut/90ssdprio
	initdir=$D/initdir
	require_binaries() { echo "require_binaries $*" >>"$log"; }
	inst_binary() { echo "inst_binary $*" >>"$log"; }
	inst_simple() { echo "inst_simple $*" >>"$log"; }
	inst_hook() { echo "inst_hook $*" >>"$log"; }
	instmods() { echo "instmods $*" >>"$log"; }
	# shellcheck source=tools/dracut/90ssdprio/module-setup.sh
	. tools/dracut/90ssdprio/module-setup.sh
	[[ $(depends) == dm ]] || fail "depends: $(depends)"
	# No ssdpriotab: only when asked for (255).
	SSDPRIO_TABFILE=$D/nonexistent
	check && echo "check 0" >>"$log" || echo "check $?" >>"$log"
	SSDPRIO_TABFILE=$D/tab
	check && echo "check 0" >>"$log" || echo "check $?" >>"$log"
	installkernel
	install
) || fail "module-setup.sh"
for want in "check 255" "check 0" "inst_simple $D/tab /etc/ssdprio/ssdpriotab" "require_binaries /usr/local/sbin/ssdprio-tool dmsetup" "instmods dm-ssdprio" \
	"inst_binary /usr/local/sbin/ssdprio-tool /usr/sbin/ssdprio-tool" "inst_binary dmsetup" \
	"inst_hook initqueue/settled 50 $PWD/tools/dracut/90ssdprio/ssdprio-activate.sh"; do
	grep -qxF "$want" "$log" || fail "dracut: no '$want' in: $(cat "$log")"
done
# The activation hook, sourced as dracut does, with getarg stubbed.
mkdir -p "$D/bin"
printf '#!/bin/sh\necho "$@" >>%s/args\n' "$D" >"$D/bin/ssdprio-tool"
chmod 755 "$D/bin/ssdprio-tool"
sed "s|/usr/sbin/ssdprio-tool|$D/bin/ssdprio-tool|g; s|/etc/ssdprio/ssdpriotab|$D/tab|" \
	tools/dracut/90ssdprio/ssdprio-activate.sh >"$D/hook.sh"
(
	getarg() { echo block:/dev/mapper/root; }
	modprobe() { :; }
	vinfo() { cat >>"$D/info"; }
	. "$D/hook.sh"
)
[[ $(cat "$D/args") == "activate --initramfs root" ]] || fail "dracut hook ran: $(cat "$D/args")"
echo "test-initramfs: ok"
