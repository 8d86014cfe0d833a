# shellcheck shell=bash
# Scenario "cachefull": not implemented yet (see issue 6; it needs features that have
# not landed). To add it: write the body here (devices from bench/lib.sh, one
# `record` line per measurement), set "status: ready" and the estimated
# minutes/mem_mb below, then teach bench/report.py (and bench/plot.py) its table.
# status: pending
# minutes: 0
# mem_mb: 0

record_skip "-" "scenario cachefull is not implemented yet"
