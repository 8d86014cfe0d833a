#!/bin/bash
# The Python tools that place blocks as the engine does (the bench's
# bench/sim/frame_sim.py, the guest's tests/guest/metacorrupt.py) each carry
# a copy of ssdp_oset_cset() and ssdp_alt_xor(); the format header is the
# one definition.  Both copies must give what the header gives, for every
# format version and set size: a copy that drifts would model or forge
# another placement than the engine's.  Run by make tools-test.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-py-format: FAIL: $*" >&2; exit 1; }

cat >"$D/ref.c" <<'C'
#include <stdio.h>
#include "engine/ssdprio_format.h"

int main(void)
{
	static const uint32_t sizes[] = { 1, 2, 4, 16, 64, 256, 512, 1024, 4096 };
	uint64_t o;
	unsigned int s, v;

	for (v = 3; v <= SSDP_FORMAT_VERSION; v++)
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (o = 0; o < 300; o++)
				printf("x %u %u %llu %u\n", v, sizes[s],
				       (unsigned long long)(o * 7919),
				       ssdp_alt_xor(o * 7919, sizes[s], v));
	for (s = 1; s <= 9; s++)
		for (o = 0; o < 300; o++)
			printf("c %u %llu %u\n", s * s,
			       (unsigned long long)(o * 104729),
			       ssdp_oset_cset(o * 104729, s * s));
	return 0;
}
C
${CC:-cc} -std=gnu11 -Wall -Werror -I. -o "$D/ref" "$D/ref.c"
"$D/ref" >"$D/ref.out"
[[ $(wc -l <"$D/ref.out") -gt 1000 ]] || fail "reference printed too little"

if ! PYTHONDONTWRITEBYTECODE=1 python3 - "$D/ref.out" <<'PY'
import sys
sys.path[:0] = ["bench/sim", "tests/guest"]
import frame_sim
import metacorrupt

bad = 0
with open(sys.argv[1]) as f:
    for line in f:
        w = line.split()
        if w[0] == "x":
            v, s, o, want = map(int, w[1:])
            got = [metacorrupt.alt_xor(o, s, v)]
            if v >= 4:
                got.append(frame_sim.alt_xor(o, s))
        else:
            n, o, want = map(int, w[1:])
            got = [metacorrupt.oset_cset(o, n), frame_sim.oset_cset(o, n)]
        if any(g != want for g in got):
            bad += 1
            if bad <= 5:
                print("mismatch:", line.strip(), "python:", got)
sys.exit(1 if bad else 0)
PY
then
	fail "a Python copy places blocks otherwise than the format header"
fi
echo "test-py-format: frame_sim.py and metacorrupt.py place blocks as the format header does"
