#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dracut initqueue/settled hook (sourced, again and again until the root
# device is there): activates the ssdpriotab entries marked "initramfs"
# and the one root=/dev/mapper/NAME names.  Entries whose disks are not
# there yet are tried again at the next round.  What it did goes to the
# kernel log (dracut's vinfo): early boot has no other log that lasts.

if [ -x /usr/sbin/ssdprio-tool ] && [ -f /etc/ssdprio/ssdpriotab ]; then
	ssdprio_root=$(getarg root=)
	ssdprio_root=${ssdprio_root#block:}
	case $ssdprio_root in
	/dev/mapper/*) ssdprio_root=${ssdprio_root#/dev/mapper/} ;;
	*) ssdprio_root= ;;
	esac
	modprobe -q dm_ssdprio
	# shellcheck disable=SC2086 # no name, or one
	/usr/sbin/ssdprio-tool activate --initramfs $ssdprio_root 2>&1 | vinfo
	unset ssdprio_root
fi
