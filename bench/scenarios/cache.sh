# shellcheck shell=bash
# Scenario 4 (the dm-ssd paper's table 3): w3g, r3g, wrand, rrand on raw HDD,
# raw SSD, ssdprio and the in-kernel peers. Scaled down: the paper's 2 GB cache
# and 3 GB workloads become a 64 MiB cache and 96 MiB workloads (same 1.5x
# ratio); quick: 16 MiB / 24 MiB. Fresh (cold) devices for every config and
# repetition; within one repetition the workloads run in order on the same
# devices (r3g reads what w3g wrote, as in the paper), back to back in one
# fio run (stonewall): no quiet time between them, so ssdprio's deferred
# eviction (which waits for evict_wait of quiet) cannot run in between.
# ssdprio's status counters are recorded after each workload.
# status: ready
# minutes: 9
# mem_mb: 320

if ((Q)); then
	CACHE_MB=16 WS_MB=24 NRAND=150
else
	CACHE_MB=64 WS_MB=96 NRAND=1000
fi
HDD_MB=$((WS_MB + 32))
CONFIGS=${CACHE_CONFIGS:-raw_hdd raw_ssd ssdprio dmcache writecache bcache}

# setup CONFIG: echoes the device to measure.
setup() {
	local hdd ssd meta b
	case $1 in
	raw_hdd) hddsim_dev hdd "$HDD_MB" ;;
	raw_ssd) ssd_dev rawssd "$HDD_MB" ;;
	ssdprio)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" ;;
	dmcache)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		meta=$(ssd_dev meta 8)
		dm_try_create dmcache "0 $(sectors "$hdd") cache $meta $ssd $hdd 64 1 writeback smq 0" ;;
	writecache)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		dm_try_create wcache "0 $(sectors "$hdd") writecache s $hdd $ssd 4096 0" ;;
	bcache)
		command -v make-bcache >/dev/null || return 1
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		# bcache wants >= 1024 buckets ("nbuckets is too small"): 2048 of them.
		make-bcache --bucket "$((CACHE_MB / 2))k" --writeback -B "$hdd" -C "$ssd" >/dev/null 2>&1 || return 1
		_settle
		# udev may have registered them already; errors then are harmless.
		echo "$ssd" >/sys/fs/bcache/register 2>/dev/null
		readlink -f "$hdd" >/sys/fs/bcache/register 2>/dev/null
		for _ in $(seq 100); do
			b=$(compgen -G '/sys/block/bcache*' | head -1)
			[[ -n $b && -e $b/bcache/state && $(<"$b/bcache/state") != "no cache" ]] && break
			sleep 0.1
		done
		[[ -n $b && $(<"$b/bcache/state") != "no cache" ]] || return 1
		echo writeback >"$b/bcache/cache_mode"
		_settle
		echo "/dev/$(basename "$b")" ;;
	*) return 1 ;;
	esac
}

for rep in $(seq "$REPS"); do
	for config in $CONFIGS; do
		if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
			record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
			teardown
			continue
		fi
		common=(--filename="$dev" --direct=1 --size="${WS_MB}M")
		rm -f /tmp/cache_st.log
		# ssdprio's counters after each workload (where the I/O went):
		# fio runs this right after each job, before the next one starts.
		[[ $config == ssdprio ]] &&
			common+=(--exec_postrun="sh -c 'dmsetup status ssdprio >>/tmp/cache_st.log'")
		# The four workloads in one fio run, each waiting for the previous
		# one (stonewall): back to back, whatever fio's start-up costs.
		bfio /tmp/cache.json "${common[@]}" \
			--name=w3g --rw=write --bs=1M --ioengine=libaio --iodepth=4 \
			--name=r3g --stonewall --rw=read --bs=1M --ioengine=libaio --iodepth=4 \
			--name=wrand --stonewall --rw=randwrite --bs=4k --ioengine=psync --number_ios="$NRAND" \
			--randrepeat=0 --randseed=$((100 + rep)) \
			--name=rrand --stonewall --rw=randread --bs=4k --ioengine=psync --number_ios="$NRAND" \
			--randrepeat=0 --randseed=$((200 + rep))
		i=0
		for w in w3g r3g wrand rrand; do
			i=$((i + 1))
			read -r rmb wmb riops wiops secs < <(fio_sum /tmp/cache.json "$w")
			extra=()
			if [[ -s /tmp/cache_st.log ]]; then
				extra+=(status="$(sed -n "${i}p" /tmp/cache_st.log | status_json -)")
			fi
			record "$config" "$w" "$rep" seconds="$secs" read_mbps="$rmb" write_mbps="$wmb" \
				iops="$(awk -v a="$riops" -v b="$wiops" 'BEGIN { print a + b }')" "${extra[@]}"
			log "cache rep $rep $config $w: ${secs}s"
		done
		teardown
	done
done
