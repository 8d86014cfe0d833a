#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dracut module: dm-ssdprio in the initramfs, so that a root file system on
# /dev/mapper/NAME (an ssdpriotab entry) can be mounted (docs/tools.md,
# "Root file system on ssdprio").  Early boot activates the entries marked
# "initramfs" and the root's; dracut's shutdown (dm module) removes the
# device after the root is unmounted.  `make install` rewrites the tool's
# path.

SSDPRIO_TOOL=/usr/local/sbin/ssdprio-tool
# As for the tool: SSDPRIO_TAB names another tab (tests).
SSDPRIO_TABFILE=${SSDPRIO_TAB:-/etc/ssdprio/ssdpriotab}

check() {
	require_binaries "$SSDPRIO_TOOL" dmsetup || return 1
	# Nothing configured: only when asked for (--add ssdprio).
	[[ -f $SSDPRIO_TABFILE ]] || return 255
	return 0
}

depends() {
	echo dm
	return 0
}

installkernel() {
	instmods dm-ssdprio
}

install() {
	local rule

	inst_binary "$SSDPRIO_TOOL" /usr/sbin/ssdprio-tool
	inst_binary dmsetup
	[[ ! -f $SSDPRIO_TABFILE ]] ||
		inst_simple "$SSDPRIO_TABFILE" /etc/ssdprio/ssdpriotab
	# The rule as installed, pointed at the initramfs's tool; under udev
	# it activates only what early boot needs (--initramfs).
	for rule in /etc/udev/rules.d/63-ssdprio.rules /usr/lib/udev/rules.d/63-ssdprio.rules; do
		[[ -f $rule ]] || continue
		mkdir -p "$initdir/usr/lib/udev/rules.d"
		sed -e 's|[^ "]*/ssdprio-tool |/usr/sbin/ssdprio-tool |g' \
			-e 's|ssdprio-tool activate --udev|& --initramfs|' \
			"$rule" >"$initdir/usr/lib/udev/rules.d/63-ssdprio.rules"
		break
	done
	# Run again and again while dracut waits for the root device.
	inst_hook initqueue/settled 50 "$moddir/ssdprio-activate.sh"
}
