# shellcheck shell=bash
# Scenario 7: RAM for cache metadata per cached 4 KiB block. ssdprio reports
# its own (status: metadata_bytes, valid_blocks, total_sets x set_blocks):
# exact. For every system, also the kernel memory grown by creating the cache
# and filling it (sequential 1 MiB writes of the cache's size, then 4 KiB
# random writes over it, so write-back caches keep it): the change of Slab +
# VmallocUsed + Percpu in /proc/meminfo, at two cache sizes; the slope between
# them (minus a plain null_blk's, the memory-backed devices' own index) is the
# cost per cache block without the fixed costs (bio sets, mempools, workqueues).
# That measurement is coarse (other allocations move it by tens of KiB);
# published figures are in docs/bench.md. Origin: a plain null_blk (no timing).
# title: Memory: RAM for cache metadata per cached 4 KiB block
# order: 70
# status: ready
# minutes: 2
# mem_mb: 900

if ((Q)); then
	SIZES="32" # smoke: no slope
	CONFIGS=${MEMORY_CONFIGS:-ssdprio dmcache}
else
	SIZES="64 256"
	CONFIGS=${MEMORY_CONFIGS:-raw ssdprio ssdprio_set64 dmcache writecache bcache}
fi

kmem_kib() { # Slab + VmallocUsed + Percpu, KiB
	awk '/^(Slab|VmallocUsed|Percpu):/ { s += $2 } END { print s }' /proc/meminfo
}

setup() { # CONFIG: echoes the device
	local hdd ssd meta b
	ORIGIN_MB=$((CACHE_MB * 3 / 2))
	hdd=$(ssd_dev hdd "$ORIGIN_MB")
	ssd=$(ssd_dev ssd "$CACHE_MB")
	case $1 in
	raw) echo "$ssd" ;;
	ssdprio) ssdprio_dev ssdprio "$hdd" "$ssd" ;;
	ssdprio_set64) ssdprio_dev ssdprio "$hdd" "$ssd" set_size 64 ;;
	dmcache)
		meta=$(ssd_dev meta 8)
		dm_try_create dmcache "0 $(sectors "$hdd") cache $meta $ssd $hdd 64 1 writeback smq 0" ;;
	writecache) dm_try_create wcache "0 $(sectors "$hdd") writecache s $hdd $ssd 4096 0" ;;
	bcache)
		b=$(bcache_dev "$hdd" "$ssd" "$CACHE_MB") || return 1
		# Every write cached, sequential too: the metadata is what is measured.
		echo 0 >"/sys/block/${b#/dev/}/bcache/sequential_cutoff"
		echo "$b" ;;
	*) return 1 ;;
	esac
}

for CACHE_MB in $SIZES; do
for config in $CONFIGS; do
	sync
	echo 3 >/proc/sys/vm/drop_caches
	k0=$(kmem_kib)
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		continue
	fi
	k1=$(kmem_kib)
	bfio /tmp/mem.json --filename="$dev" --direct=1 --ioengine=libaio --iodepth=4 \
		--rw=write --bs=1M --size="${CACHE_MB}M" --name=fill
	bfio /tmp/mem.json --filename="$dev" --direct=1 --ioengine=libaio --iodepth=4 \
		--rw=randwrite --bs=4k --size="${CACHE_MB}M" --number_ios=$((CACHE_MB * 16)) \
		--randrepeat=0 --randseed=5 --name=fill_rand
	sleep 1
	k2=$(kmem_kib)
	extra=()
	[[ $config == ssdprio* ]] && extra+=(status="$(status_json ssdprio)")
	record "$config" fill 1 cache_mb="$CACHE_MB" kmem_create_kib=$((k1 - k0)) \
		kmem_filled_kib=$((k2 - k0)) cache_blocks_4k=$((CACHE_MB * 256)) "${extra[@]}"
	log "memory $config $CACHE_MB MiB: kernel memory +$((k1 - k0)) KiB created, +$((k2 - k0)) KiB filled"
	teardown
done
done
