#!/bin/bash
# idle_cgroup: buffered writeback of a task in a cgroup v2 directory named
# idle_cgroup is classified idle (ionice cannot do this: flusher kworkers
# write the pages back as BE/4). Also: the feature arg shows in the table,
# bad paths are rejected, the message form adds one, idle_cgroup_clear
# drops them; a path with white space, or past the paths' budget, is refused,
# so that the table line always reloads as printed.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

cgroup_v2_setup
mkdir -p "$CG/maint" "$CG/other"

load_module
hdd=$(make_hdd hdd 128)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
st() { status_get sp "$1"; }

# A bad path is rejected with an error, not accepted.
if dm_try_create bad "0 $len ssdprio $hdd $ssd 2 idle_cgroup /sys/fs/cgroup/nonexistent" 2>/dev/null; then
	fail "a table with a nonexistent idle_cgroup was accepted"
fi
dmsetup remove bad 2>/dev/null
if dm_try_create bad "0 $len ssdprio $hdd $ssd 2 idle_cgroup /tmp" 2>/dev/null; then
	fail "a table with a non-cgroup idle_cgroup path was accepted"
fi
dmsetup remove bad 2>/dev/null

dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 6 cache off batch_mode_delay 500 idle_cgroup $CG/maint")
table=$(dmsetup table sp)
log "table: $table"
[[ $table == *"idle_cgroup $CG/maint"* ]] || fail "idle_cgroup missing from the table: $table"
# The table line is reloadable as is.
dmsetup reload sp --table "$table" || fail "reloading the emitted table failed"
dmsetup resume sp || fail "resume after reload failed"

# Buffered writer in maint: dd to the page cache, then sync (flusher).
i0=$(st bios_idle)
bash -c "echo \$\$ >$CG/maint/cgroup.procs && exec dd if=/dev/zero of=$dm bs=1M count=8 status=none" ||
	fail "dd in maint failed"
timeout 120 sync || fail "sync hung"
i1=$(st bios_idle)
log "maint writer: bios_idle +$((i1 - i0))"
assert_ge $((i1 - i0)) 4 "writeback of the maint cgroup's pages is idle"

# A writer in another cgroup stays normal.
i0=$(st bios_idle)
n0=$(st bios_normal)
bash -c "echo \$\$ >$CG/other/cgroup.procs && exec dd if=/dev/zero of=$dm bs=1M count=8 seek=16 status=none" ||
	fail "dd in other failed"
timeout 120 sync || fail "sync hung"
i1=$(st bios_idle)
n1=$(st bios_normal)
log "other writer: bios_idle +$((i1 - i0)), bios_normal +$((n1 - n0))"
assert_eq $((i1 - i0)) 0 "writeback of another cgroup is not idle"
assert_ge $((n1 - n0)) 4 "writeback of another cgroup is normal"

# Messages: clear, bad path rejected, add by path relative to the root.
dmsetup message sp 0 idle_cgroup_clear || fail "idle_cgroup_clear failed"
[[ $(dmsetup table sp) != *idle_cgroup* ]] || fail "idle_cgroup still in the table after clear"
dmsetup message sp 0 idle_cgroup /nonexistent-cg 2>/dev/null &&
	fail "message with a bad idle_cgroup path accepted"
dmsetup message sp 0 idle_cgroup other || fail "message idle_cgroup other failed"
[[ $(dmsetup table sp) == *"idle_cgroup other"* ]] || fail "message-added idle_cgroup not in the table"
i0=$(st bios_idle)
bash -c "echo \$\$ >$CG/other/cgroup.procs && exec dd if=/dev/zero of=$dm bs=1M count=8 seek=32 status=none" ||
	fail "dd in other failed"
timeout 120 sync || fail "sync hung"
i1=$(st bios_idle)
assert_ge $((i1 - i0)) 4 "after the message, the other cgroup's writeback is idle"

# The table line gives every path back as one argument, and all of them fit:
# a path with white space (dm's split takes "\ ") is refused, and so is one
# past the paths' budget; what was taken reloads as it is printed.
mkdir -p "$CG/a b"
dmsetup message sp 0 idle_cgroup "$CG/a\\ b" 2>/dev/null &&
	fail "an idle_cgroup path with a space accepted: $(dmsetup table sp)"
rmdir "$CG/a b"
long=$(printf 'c%.0s' $(seq 200))
refused=0
for i in $(seq 10 25); do
	mkdir -p "$CG/$i$long"
	dmesg -C
	if ! dmsetup message sp 0 idle_cgroup "$CG/$i$long" 2>/dev/null; then
		dmesg | grep -q "would not fit in the table line" || fail "refusal of path $i: $(dmesg | grep ssdprio)"
		refused=1
		break
	fi
done
((refused)) || fail "16 paths of 200+ characters taken: the table line cannot hold them"
table=$(dmsetup table sp)
read -r -a words <<<"$table"
for ((k = 0; k < ${#words[@]}; k++)); do [[ ${words[k]} == ssdprio ]] && break; done
# start len ssdprio origin cache N pairs...: N counts what follows.
assert_eq "${words[k + 3]}" $((${#words[@]} - k - 4)) "feature count of the table line"
dmsetup reload sp --table "$table" || fail "reloading a table with many idle_cgroups"
dmsetup resume sp || fail "resume after that reload"
dmsetup message sp 0 idle_cgroup_clear || fail "idle_cgroup_clear"
rmdir "$CG"/[0-9][0-9]"$long"

dm_remove sp

# A file system's own kernel threads write small metadata buffers from slab
# memory (xfs's sector-sized headers, by xfsaild): their pages carry a slab
# object vector, not a memory cgroup; classifying them must not take it for
# one (a wild pointer, then an oops or a random class).
if modprobe xfs 2>/dev/null; then
	xo=$(make_ssd xo 320)
	xc=$(make_ssd xc 32)
	xd=$(dm_create xsp "0 $(sectors "$xo") ssdprio $xo $xc 3 format idle_cgroup $CG/maint")
	mkfs.xfs -q -f "$xd" || fail "mkfs.xfs"
	mkdir -p /mnt/cgx
	mount "$xd" /mnt/cgx || fail "mount xfs"
	bash -c "echo \$\$ >$CG/maint/cgroup.procs && for i in \$(seq 200); do mkdir -p /mnt/cgx/d\$((i % 7)); echo \$i >/mnt/cgx/d\$((i % 7))/f\$i; done; sync" ||
		fail "metadata churn in maint"
	for i in $(seq 200); do rm -f /mnt/cgx/d$((i % 7))/f$i; done
	timeout 120 sync || fail "sync hung"
	# xfsaild writes the headers back within seconds of the log.
	sleep 3
	umount /mnt/cgx || fail "umount xfs"
	xfs_repair -n "$xd" >/tmp/cgx.repair 2>&1 || { cat /tmp/cgx.repair; fail "xfs_repair -n"; }
	log "xfs with idle_cgroup: bios_idle $(status_get xsp bios_idle), bios_normal $(status_get xsp bios_normal)"
	dm_remove xsp
	remove_nullb xo
	remove_nullb xc
else
	log "no xfs: the slab-page case not run"
fi
rmdir "$CG/maint" "$CG/other" 2>/dev/null
log "ok"
