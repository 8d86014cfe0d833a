#!/bin/bash
# Guest side of tests/fstests/run: runs fstests (built on the host into
# build/fstests by tests/fstests/build) on each filesystem, first with
# TEST_DEV and SCRATCH_DEV on the bare emulated disks, then with both on
# ssdprio devices over the same kind of disks, caches much smaller than what
# the tests write (eviction and writeback run throughout). Run by
# tests/vm/run --script; the knobs come through SSDP_* variables:
#   SSDP_FSTESTS_FS       filesystems (default "ext4 xfs")
#   SSDP_FSTESTS_CONFIGS  device setups (default "bare ssdprio")
#   SSDP_FSTESTS_ARGS     what ./check runs (default: the CI selection of
#                         tests/fstests/ci-tests; e.g. "-g quick")
#   SSDP_FSTESTS_LIST     instead, a file of "FS TEST..." lines: each
#                         filesystem runs the tests of its own line
#                         (tests/fstests/check-tests, make check)
#   SSDP_FSTESTS_EXCLUDE  a file of tests not to run (default
#                         tests/fstests/exclude)
# Results: $RESULTS_DIR/fstests/FS-CONFIG/ (fstests' RESULT_BASE: result.xml,
# check.log, each test's .out.bad/.full/.dmesg), compared by the host.
# dmesg-allow: XFS [(][a-z0-9-]+[)]: (Corruption|Metadata corruption|Unmount and run xfs_repair|First [0-9]+ bytes|WARNING: Reset corrupted AGFL)
# dmesg-allow-trace: XFS [(][a-z0-9-]+[)]: Internal error
# (fstests' own tests provoke those on purpose, xfs/348 the stack dump of an
# "Internal error" report, xfs/444 the AGFL reset it must see: the per-test
# dmesg check of fstests fails a test that leaves an unexpected warning anyway.)
# shellcheck source=tests/guest/lib.sh
. "$REPO/tests/guest/lib.sh"

FST=$REPO/build/fstests
OUTDIR=$RESULTS_DIR/fstests
FS_LIST=${SSDP_FSTESTS_FS:-ext4 xfs}
CONFIGS=${SSDP_FSTESTS_CONFIGS:-bare ssdprio}
EXCLUDE=${SSDP_FSTESTS_EXCLUDE:-$REPO/tests/fstests/exclude}

# Sizes (MiB). Origins: 512 MiB each for ext4, 1 GiB for xfs (generic/013's
# fsstress fills a 512 MiB xfs test filesystem, on the bare disk too, and the
# tests after it then fail with ENOSPC). Caches: 24 MiB, smaller than what
# fsstress, fsx and the log-writes tests write, so sets are evicted and
# written back while they run.
origin_mb() { # origin_mb FS
	if [[ -n ${SSDP_FSTESTS_ORIGIN_MB:-} ]]; then
		echo "$SSDP_FSTESTS_ORIGIN_MB"
	elif [[ $1 == xfs ]]; then
		echo 1024
	else
		echo 512
	fi
}
CACHE_MB=${SSDP_FSTESTS_CACHE_MB:-24}
LOG_MB=${SSDP_FSTESTS_LOG_MB:-256}
# evict_wait: writeback starts after 50 ms of quiet (default is longer), so
# it also runs between the steps of a test, not only when the cache is full.
SSDPRIO_ARGS=${SSDP_FSTESTS_SSDPRIO_ARGS:-3 format evict_wait 50}

[[ -x $FST/check && -x $FST/ltp/fsx ]] ||
	fail "no fstests build in $FST (tests/fstests/build on the host)"

# fstests' users (fsgqa, fsgqa2, 123456-fsgqa) and groups (fsgqa, fsgqa2, 123456-fsgqa): the guest's /etc is
# the host's, read-only; bind-mount writable copies of passwd and group.
# The project quota tests (generic/603) write /etc/project and /etc/projid,
# which do not exist there: an overlay over /etc (upper layer in /run) takes
# them, and nothing reaches the host. So does one over /var: xfsdump keeps its
# inventory in /var/xfsdump (xfs/063, 281, ...).
add_users() {
	local f u
	mkdir -p /run/fstests-etc/up /run/fstests-etc/work
	if mount -t overlay fstests-etc -o lowerdir=/etc,upperdir=/run/fstests-etc/up,workdir=/run/fstests-etc/work /etc; then
		ETC_OVERLAY=1
	else
		echo "no writable /etc overlay: project quota tests will fail on every setup"
	fi
	mkdir -p /run/fstests-var/up /run/fstests-var/work
	if mount -t overlay fstests-var -o lowerdir=/var,upperdir=/run/fstests-var/up,workdir=/run/fstests-var/work /var; then
		VAR_OVERLAY=1
	else
		echo "no writable /var overlay: the xfsdump tests will fail on every setup"
	fi
	for f in passwd group shadow; do
		[[ -e /etc/$f ]] || continue
		cp "/etc/$f" "/run/fstests-$f"
		mount -o bind "/run/fstests-$f" "/etc/$f"
	done
	grep -q '^fsgqa:' /etc/group || echo 'fsgqa:x:60000:' >>/etc/group
	# generic/597 and 598 want a group of fsgqa2's own.
	grep -q '^fsgqa2:' /etc/group || echo 'fsgqa2:x:60001:' >>/etc/group
	# generic/381 also wants a group named 123456-fsgqa.
	grep -q '^123456-fsgqa:' /etc/group || echo '123456-fsgqa:x:60002:' >>/etc/group
	grep -q '^fsgqa:' /etc/passwd ||
		echo 'fsgqa:x:60000:60000:fstests:/tmp:/bin/bash' >>/etc/passwd
	grep -q '^fsgqa2:' /etc/passwd ||
		echo 'fsgqa2:x:60001:60000:fstests:/tmp:/bin/bash' >>/etc/passwd
	grep -q '^123456-fsgqa:' /etc/passwd ||
		echo '123456-fsgqa:x:60002:60000:fstests:/tmp:/bin/bash' >>/etc/passwd
	# su as root still asks PAM's account check, which wants a shadow
	# entry: without one fstests says "fsgqa cannot execute commands".
	[[ -e /etc/shadow ]] || return 0
	for u in fsgqa fsgqa2 123456-fsgqa; do
		grep -q "^$u:" /etc/shadow || echo "$u:*:19000:0:99999:7:::" >>/etc/shadow
	done
}

del_users() {
	umount /etc/passwd /etc/group /etc/shadow 2>/dev/null || true
	[[ -z ${ETC_OVERLAY:-} ]] || umount /etc 2>/dev/null || true
	[[ -z ${VAR_OVERLAY:-} ]] || umount /var 2>/dev/null || true
}

# setup_devs FS CONFIG: echo "TEST_DEV SCRATCH_DEV"
setup_devs() {
	local fs=$1 cfg=$2 t s len mb
	mb=$(origin_mb "$fs")
	t=$(NULLB_DISCARD=1 make_hdd hdt "$mb" 100000 4)
	s=$(NULLB_DISCARD=1 make_hdd hds "$mb" 100000 4)
	make_ssd lwd "$LOG_MB" >/dev/null
	case $cfg in
	bare) echo "$t $s" ;;
	ssdprio)
		# Caches without discard: ssdprio offers discard (fstrim, generic/288)
		# as its origin does, whatever the cache device supports.
		make_ssd cht "$CACHE_MB" >/dev/null
		make_ssd chs "$CACHE_MB" >/dev/null
		len=$(sectors "$t")
		dm_create spt "0 $len ssdprio $t /dev/cht $SSDPRIO_ARGS" >/dev/null
		len=$(sectors "$s")
		dm_create sps "0 $len ssdprio $s /dev/chs $SSDPRIO_ARGS" >/dev/null
		echo "/dev/mapper/spt /dev/mapper/sps"
		;;
	*) fail "unknown config '$cfg' (bare, ssdprio)" ;;
	esac
}

teardown_devs() {
	local d
	for d in spt sps; do
		if dmsetup info "$d" >/dev/null 2>&1; then
			log "$d: $(dmsetup status "$d")"
			dm_remove "$d"
		fi
	done
	for d in hdt hds lwd cht chs; do remove_nullb "$d"; done
}

run_one() { # run_one FS CONFIG
	local fs=$1 cfg=$2 devs tdev sdev res=$OUTDIR/$1-$2 conf rc start
	log "=== $fs on $cfg"
	rm -rf "$res"
	mkdir -p "$res" /mnt/test /mnt/scratch
	read -r tdev sdev < <(setup_devs "$fs" "$cfg")
	case $fs in
	ext4) mkfs.ext4 -q -F "$tdev" ;;
	xfs) mkfs.xfs -q -f "$tdev" ;;
	*) fail "unsupported filesystem $fs" ;;
	esac >/dev/null || fail "mkfs.$fs $tdev failed"
	conf=/tmp/fstests-$fs-$cfg.config
	cat >"$conf" <<EOF
export FSTYP=$fs
export TEST_DEV=$tdev
export TEST_DIR=/mnt/test
export SCRATCH_DEV=$sdev
export SCRATCH_MNT=/mnt/scratch
export LOGWRITES_DEV=/dev/lwd
export RESULT_BASE=$res
EOF
	local args
	if [[ -n ${SSDP_FSTESTS_LIST:-} ]]; then
		# shellcheck disable=SC2207 # a list of test names
		args=($(sed 's/#.*//' "$SSDP_FSTESTS_LIST" | awk -v fs="$fs" '$1 == fs { $1 = ""; print }'))
		((${#args[@]})) || fail "$SSDP_FSTESTS_LIST names no test for $fs"
	else
		# shellcheck disable=SC2206 # a list of check's arguments
		args=(${SSDP_FSTESTS_ARGS:-$(sed 's/#.*//' "$REPO/tests/fstests/ci-tests")})
	fi
	[[ -f $EXCLUDE ]] && args=(-E "$EXCLUDE" "${args[@]}")
	start=$SECONDS
	rc=0
	# check cds into its own directory and needs bash; -R xunit writes
	# result.xml with each test's status and the reason of a "not run".
	# The encryption tests add their keys under the session keyring, and
	# the guest's shell has none: keyctl gives ./check a new one.
	local keyring=()
	if command -v keyctl >/dev/null; then keyring=(keyctl session -); fi
	(cd "$FST" && HOST_OPTIONS=$conf "${keyring[@]}" ./check -R xunit "${args[@]}") 2>&1 |
		tee "$res/check.out"
	rc=${PIPESTATUS[0]}
	echo "$((SECONDS - start))" >"$res/seconds"
	log "$fs on $cfg: check exited $rc after $((SECONDS - start)) s"
	umount /mnt/test /mnt/scratch 2>/dev/null || true
	teardown_devs
}

load_module
modprobe -a dm-flakey dm-log-writes dm-thin-pool 2>/dev/null || true
# The guest has no network, not even the loopback: generic/131's lock server
# and client talk TCP to localhost (so does generic/571's).
ip link set lo up 2>/dev/null || echo "no loopback: generic/131 will fail on every setup"
add_users
trap del_users EXIT
for fs in $FS_LIST; do
	for cfg in $CONFIGS; do
		run_one "$fs" "$cfg"
	done
done
