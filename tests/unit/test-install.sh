#!/bin/bash
# make install-tools into a DESTDIR puts every file where it belongs (the
# udev rule under /usr/lib with PREFIX=/usr, naming the installed tool),
# the man pages format without warnings, the completion loads, and
# make uninstall-tools takes everything away again.  Run by make unit.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }

for m in man/*.[0-9]; do
	w=$(groff -man -Tutf8 -ww "$m" 2>&1 >/dev/null) || fail "groff $m"
	[[ -z $w ]] || fail "groff warnings in $m: $w"
done

make -s install-tools DESTDIR="$D" PREFIX=/usr >/dev/null
want=(
	usr/sbin/ssdprio-tool
	usr/lib/udev/rules.d/63-ssdprio.rules
	usr/share/man/man8/ssdprio-tool.8
	usr/share/man/man4/dm-ssdprio.4
	usr/share/man/man5/ssdpriotab.5
	usr/share/bash-completion/completions/ssdprio-tool
	usr/lib/systemd/system/ssdprio@.service
	usr/lib/systemd/system/ssdprio-metrics.service
	usr/lib/systemd/system/ssdprio-metrics.timer
	usr/lib/systemd/system-generators/ssdprio-generator
	usr/share/initramfs-tools/hooks/ssdprio
	usr/share/initramfs-tools/scripts/local-top/ssdprio
	usr/share/initramfs-tools/scripts/local-block/ssdprio
	usr/share/initramfs-tools/scripts/init-bottom/ssdprio
	usr/share/initramfs-tools/scripts/ssdprio-shutdown
	usr/lib/dracut/modules.d/90ssdprio/module-setup.sh
	usr/lib/dracut/modules.d/90ssdprio/ssdprio-activate.sh
)
for f in "${want[@]}"; do
	[[ -f $D/$f ]] || fail "not installed: /$f"
done
got=$(cd "$D" && find . -type f | sort | sed 's|^\./||')
[[ $got == "$(printf '%s\n' "${want[@]}" | sort)" ]] || fail "installed files: $got"
[[ -x $D/usr/sbin/ssdprio-tool ]] || fail "the tool is not executable"
grep -q 'RUN+="/usr/sbin/ssdprio-tool activate --udev' "$D/usr/lib/udev/rules.d/63-ssdprio.rules" ||
	fail "the rule does not name /usr/sbin/ssdprio-tool"
for f in usr/lib/systemd/system/ssdprio@.service usr/lib/systemd/system/ssdprio-metrics.service \
	usr/lib/systemd/system-generators/ssdprio-generator usr/share/initramfs-tools/hooks/ssdprio \
	usr/lib/dracut/modules.d/90ssdprio/module-setup.sh; do
	grep -q /usr/sbin/ssdprio-tool "$D/$f" && ! grep -q /usr/local "$D/$f" ||
		fail "/$f does not name /usr/sbin/ssdprio-tool"
done
[[ -x $D/usr/lib/systemd/system-generators/ssdprio-generator ]] || fail "the generator is not executable"
# The units as systemd reads them (man pages are not looked up: none here).
if command -v systemd-analyze >/dev/null; then
	u=$D/usr/lib/systemd/system
	sed -i "s|/usr/sbin/ssdprio-tool|$D/usr/sbin/ssdprio-tool|" "$u"/*.service
	w=$(systemd-analyze verify --man=no "$u/ssdprio@x.service" "$u/ssdprio-metrics.service" \
		"$u/ssdprio-metrics.timer" 2>&1) || fail "systemd-analyze verify: $w"
	[[ -z $w ]] || fail "systemd-analyze verify: $w"
	sed -i "s|$D/usr/sbin/ssdprio-tool|/usr/sbin/ssdprio-tool|" "$u"/*.service
fi
"$D/usr/sbin/ssdprio-tool" --version | grep -q '^ssdprio-tool ' || fail "--version"
bash -c ". '$D/usr/share/bash-completion/completions/ssdprio-tool' 2>/dev/null; declare -F _ssdprio_tool" >/dev/null ||
	fail "the completion does not define _ssdprio_tool"

# The default prefix keeps the rule in /etc.
make -s install-tools DESTDIR="$D/local" >/dev/null
[[ -f $D/local/etc/udev/rules.d/63-ssdprio.rules && -f $D/local/usr/local/sbin/ssdprio-tool &&
	-f $D/local/usr/local/lib/systemd/system/ssdprio@.service &&
	-x $D/local/usr/local/lib/systemd/system-generators/ssdprio-generator &&
	-x $D/local/etc/initramfs-tools/hooks/ssdprio &&
	-x $D/local/etc/initramfs-tools/scripts/local-top/ssdprio ]] ||
	fail "PREFIX=/usr/local: $(cd "$D/local" && find . -type f)"

make -s uninstall-tools DESTDIR="$D" PREFIX=/usr >/dev/null
make -s uninstall-tools DESTDIR="$D/local" >/dev/null
left=$(find "$D" -type f)
[[ -z $left ]] || fail "left after uninstall: $left"
echo "test-install: ok"
