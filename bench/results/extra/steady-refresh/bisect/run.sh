#!/bin/bash
# after bench C (pid 7773): build modules of earlier commits, then zipf:0.9:70 ssdprio, 2 reps, one boot per module.
while kill -0 7773 2>/dev/null; do sleep 5; done
echo "C done" >> /tmp/bn/done
mkdir -p /tmp/bn/raw-C && cp -r /tmp/bn2/main/build/bench/raw/. /tmp/bn/raw-C/ && rm -rf /tmp/bn2/main/build/bench/raw
C="1e4f312 f742e25 103561b fca6a45 09bea02"
for c in $C; do
	rm -rf /tmp/bis/$c && mkdir -p /tmp/bis/$c && (cd /work/main && git archive $c) | tar -x -C /tmp/bis/$c
	(cd /tmp/bis/$c && make -j2 modules > /tmp/bis/$c.build 2>&1; echo "build $c rc=$?" >> /tmp/bis/done)
done
cd /tmp/bn/main || exit 1
for c in $C; do
	[[ -f /tmp/bis/$c/dm-ssdprio.ko ]] || continue
	rm -rf build/bench/raw
	STEADY_WORKLOADS="zipf:0.9:70" STEADY_CONFIGS="ssdprio" BENCH_REPS=2 \
		BENCH_MODULE=/tmp/bis/$c/dm-ssdprio.ko BENCH_OUT=/tmp/bis/out-$c VM_OUT=/tmp/bis/vm-$c bench/run steady > /tmp/bis/$c.log 2>&1
	echo "bench $c rc=$?" >> /tmp/bis/done
	mkdir -p /tmp/bis/raw-$c && cp -r build/bench/raw/. /tmp/bis/raw-$c/
done
echo all >> /tmp/bis/done
