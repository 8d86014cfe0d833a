#!/bin/bash
# Crash consistency with dm-log-writes: the test lives with the other crash
# tests, tests/crash/logwrites/guest.sh (tests/crash/README.md); the guest
# suite runs it from here because it needs one boot only.
# timeout: 1800
exec bash "$(dirname "$0")/../crash/logwrites/guest.sh" "$@"
