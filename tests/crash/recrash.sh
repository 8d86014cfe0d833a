#!/bin/bash
# A second power cut during the recovery: boot 1 as in powercut (killed
# during writes and eviction); boot 2 loads the cache (recovered: every valid
# block dirty), B's writer goes on (a new session of its log) and flush_dirty
# writes the recovered blocks back; QEMU is killed again in the middle of it;
# boot 3 loads once more and checks A and B as powercut's boot 2 does.
#
# targets: ssdprio linear
# boots: 3
# crash-boots: 1 2
# kill-after: 0.3-4 0.1-2
# rounds: 1
# disks: hdd:256M ssd:64M
# timeout: 420
PC_RECRASH=1
# shellcheck source=tests/crash/powercut.sh
. "$(dirname "$0")/powercut.sh"
