# SPDX-License-Identifier: GPL-2.0
#
# dm-ssdprio: out-of-tree device-mapper target.
#
#   make            build dm-ssdprio.ko against KDIR
#
# Kernel: KVER=<release> or a series (KVER=6.12: its newest installed
# release); default the 6.1 series (scripts/kernel). KDIR=<build dir> overrides
# the headers. Every target below builds for, and boots, that one kernel; the
# objects of one kernel are in the tree at a time, switching kernels rebuilds.
#   make lint       W=1 build, sparse (C=1) and checkpatch
#   make unit       user-space unit tests of the pure engine logic (and tools)
#   make tools      build/ssdprio-tool (inspect, check, activate caches) and the
#                   test tools in build/tools (replay-log, stampio)
#   make check      unit tests, then the guest suite under QEMU, then a few
#                   fstests on ssdprio (make check-fstests), then the
#                   multi-boot crash/restart scenarios (make crash);
#                   T=<test>... runs only those guest tests
#   make check-subset  the part of the suite CI also runs on its other
#                   kernels (CHECK_SUBSET, CRASH_SUBSET; docs/kernels.md)
#   make check-subsets  that part on 6.12 and 7.3 at once (SUBSET_KERNELS)
#   make crash      only the multi-boot scenarios (S=<scenario>...)
#   make check-fstests  only make check's fstests: tests/fstests/check-tests
#                   on ssdprio devices, each must pass (~10 min)
#   make check-xfstests  fstests' CI selection on ext4 and xfs, on ssdprio
#                   devices and on the bare devices as the baseline
#                   (docs/fstests.md; ~30 min)
#   make xfstests   the same with fstests' whole "quick" group (hours)
#   make demo       boot the bench and show the target at work
#   make bench      benchmarks (S=<scenario>, BENCH_QUICK=1)
#   make rpm        the RPM packages (rpm/), built into build/rpm/; make
#                   rpm-check also lints them and compares them with the debs
#   make install    modules_install + depmod, the tool, its man pages, bash
#                   completion, udev rule, systemd units (the metrics
#                   timer not enabled), the initramfs-tools hook and
#                   scripts and the dracut module (make uninstall removes
#                   them)
#   make check-root  boot a guest whose root is on ssdprio, through real
#                   initramfs images (initramfs-tools, dracut), twice each
#                   (tests/crash/rootfs; make check runs it)

# The engine units, one concern each: engine/units lists them.  Read
# relative to this file, which Kbuild reads from another directory.
SSDP_TOP := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
SSDP_ENGINE_SRCS := $(shell awk 'NF && $$1 !~ /^[^a-z]/ && $$1 != "dm-ssdprio-target" \
	{ print "engine/" $$1 ".c" }' $(SSDP_TOP)/engine/units)

ifneq ($(KERNELRELEASE),)
# ---- Kbuild half -------------------------------------------------------
obj-m := dm-ssdprio.o

# The glue is dm-ssdprio-target.c: a composite module cannot contain an
# object of its own name (dm-cache-target.c's reason).
dm-ssdprio-y := dm-ssdprio-target.o $(patsubst %.c,%.o,$(SSDP_ENGINE_SRCS))
ccflags-y := -I$(src)/engine

else
# ---- user half ---------------------------------------------------------
KVER ?=
# Deferred: `make check` on a fresh machine installs the headers first (deps).
KDIR ?= $(shell ./scripts/kernel kdir $(KVER))
# Scripts (tests/vm/run, tests/crash/run, bench/run) resolve KVER the same way.
export KVER
# A kernel whose headers are in a build root (7.x: build/trixie-root, made by
# scripts/trixie-root.sh) is built in there, with the compiler it was built
# with: KRUN runs kbuild in the root, where the headers are at KBUILD_DIR.
# KROOT is a physical path: build/trixie-root may be a link to a shared root.
KROOT = $(shell ./scripts/kernel root-of $(KDIR))
KRUN = $(if $(KROOT),$(CURDIR)/scripts/in-root $(KROOT))
KBUILD_DIR = $(if $(KROOT),$(patsubst $(KROOT)/%,/%,$(realpath $(KDIR))),$(KDIR))
CHECKPATCH ?= $(firstword $(wildcard /opt/linux-src/scripts/checkpatch.pl \
	build/linux-src/scripts/checkpatch.pl))
VM_ARGS ?=
T ?=

# ssdprio-tool: user space, shares the on-SSD codec with the module.
TOOL := build/ssdprio-tool
TOOL_SRCS := tools/ssdprio-tool.c tools/cmd_inspect.c tools/cmd_table.c tools/cmd_activate.c \
	tools/cmd_admin.c tools/cmd_debug.c tools/util.c tools/tab.c tools/boot.c tools/cache_scan.c \
	tools/origin_ident.c tools/signature.c engine/meta_codec.c \
	engine/config.c tools/live.c tools/dm_status.c tools/events.c tools/metrics.c
TOOL_HDRS := tools/cmd.h tools/util.h tools/cache_scan.h tools/msg.h tools/tab.h tools/origin_ident.h \
	tools/signature.h engine/meta_codec.h engine/ssdprio_format.h \
	engine/ssdp_compat.h engine/config.h tools/live.h tools/dm_status.h tools/events.h tools/metrics.h
# Every device-mapper call goes through libdevmapper (libdevmapper-dev);
# a device is probed for signatures before a format with libblkid (libblkid-dev).
TOOL_LIBS := -ldevmapper -lblkid -lm
TOOL_CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# A distribution's rules live in /usr/lib; a local install's in /etc.
ifeq ($(PREFIX),/usr)
UDEVRULESDIR ?= /usr/lib/udev/rules.d
else
UDEVRULESDIR ?= /etc/udev/rules.d
endif
# initramfs-tools reads its own directory and /etc/initramfs-tools.
ifeq ($(PREFIX),/usr)
INITRAMFSDIR ?= /usr/share/initramfs-tools
else
INITRAMFSDIR ?= /etc/initramfs-tools
endif
# dracut reads /usr/lib/dracut only.
DRACUTMODDIR ?= /usr/lib/dracut/modules.d
INITRAMFS_SCRIPTS := local-top/ssdprio local-block/ssdprio init-bottom/ssdprio ssdprio-shutdown
# systemd searches both /usr/lib and /usr/local/lib for units and generators.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSTEMDGENDIR ?= $(PREFIX)/lib/systemd/system-generators
MANPAGES := man/ssdprio-tool.8 man/dm-ssdprio.4 man/ssdpriotab.5

.PHONY: all modules hddsim lint unit check check-subset check-subsets crash check-root demo bench deb debs rpm rpm-check install install-tools clean \
	deps checkpatch tools tools-test uninstall uninstall-tools xfstests check-xfstests check-fstests

all: modules

# Objects left from another kernel (KVER changed): clean, then build. The
# stamp names the kernel the directory's objects are for; it is written
# before the build, so an interrupted build is still cleaned on a switch, and
# objects from an unknown kernel (no stamp) are never linked into a module.
define stale-clean
	@rel=$$(./scripts/kernel release-of $(KDIR)) && stamp=$(abspath $(dir $(1)))/.built-for && \
	if [ "$$(cat $$stamp 2>/dev/null)" != "$$rel" ]; then \
		if [ -f $(1) ]; then echo "$(1) was built for another kernel: rebuilding for $$rel"; fi; \
		$(KRUN) $(MAKE) -s -C $(KBUILD_DIR) M=$(abspath $(dir $(1))) clean && echo "$$rel" >$$stamp; \
	fi
endef

modules:
	@test -n "$(KDIR)" || { echo "no kernel build dir: make deps, or KVER=/KDIR=..."; exit 1; }
	$(call stale-clean,dm-ssdprio.ko)
	$(KRUN) $(MAKE) -C $(KBUILD_DIR) M=$(CURDIR) modules

# The bench's HDD model (tests/hddsim), for the same kernel.
hddsim:
	$(call stale-clean,tests/hddsim/dm-hddsim.ko)
	$(MAKE) -C tests/hddsim KDIR=$(KDIR) modules

deps:
	./scripts/install-deps.sh

checkpatch:
	@test -n "$(CHECKPATCH)" || ./scripts/install-deps.sh --checkpatch
	./scripts/checkpatch.sh

# From scratch, in a copy of the sources (scripts/module-for --lint): the
# tree's own objects stay as they are, for guests that run beside it.
lint:
	@test -n "$(KDIR)" || { echo "no kernel build dir: make deps, or KVER=/KDIR=..."; exit 1; }
	@mkdir -p build
	@echo "lint: against $(KDIR)"
	./scripts/module-for --lint $(KDIR) 2>&1 | tee build/lint.log
	@! grep -E 'warning:|error:' build/lint.log
	@! grep -E 'is not available or not up to date' build/lint.log	# kbuild skipped sparse
	./scripts/checkpatch.sh

# The units' calls keep to the layers (tests/depgraph.py), then the pure
# units' tests in user space.
unit: tools-test
	@mkdir -p build
	@python3 tests/depgraph.py --check >build/depgraph.txt || \
		{ cat build/depgraph.txt; exit 1; }; tail -n1 build/depgraph.txt
	$(MAKE) -C tests/unit run

# User-space tools, also run by guest tests (the guest uses the host's root).
TOOLS_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g
TOOLS := build/tools/replay-log build/tools/stampio build/tools/dmstatus

tools: $(TOOL) $(TOOLS)

$(TOOL): $(TOOL_SRCS) $(TOOL_HDRS) Makefile
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra $(TOOL_CFLAGS) -Iengine -Itools \
		-o $@ $(TOOL_SRCS) $(TOOL_LIBS)

build/tools/replay-log: tests/crash/logwrites/replay-log.c
	@mkdir -p $(@D)
	$(CC) $(TOOLS_CFLAGS) -o $@ $<

build/tools/stampio: tests/crash/logwrites/stampio.c
	@mkdir -p $(@D)
	$(CC) $(TOOLS_CFLAGS) -o $@ $<

# Static: the guest tests poll status with it (tests/guest/dmstatus.c).
build/tools/dmstatus: tests/guest/dmstatus.c
	@mkdir -p $(@D)
	$(CC) $(TOOLS_CFLAGS) -static -o $@ $<

tools-test: tools
	python3 tests/crash/logwrites/test-replay-log.py build/tools/replay-log
	./tests/unit/test-install.sh
	./tests/unit/test-generator.sh
	./tests/unit/test-initramfs.sh
	./tests/unit/test-example-tab.sh
	./tests/unit/test-tool-signature.sh
	./tests/unit/test-tool-args.sh
	./tests/unit/test-completion.sh
	./tests/fstests/test-compare.sh
	./tests/unit/test-py-format.sh

# `make check T=name` runs one guest test (two vCPUs). Without T, the guest
# suite runs in two one-vCPU guests at once (tests/vm/run-parallel says why),
# then the fstests selection (two vCPUs: a file system's concurrent I/O on
# two CPUs) and the root file system's boots (check-root) beside the
# multi-boot scenarios (tests/crash/run, one vCPU: the
# two guests' three vCPUs on two cores cost each ~1.2x its time alone, half
# the time of one after the other); their outputs follow each other, whole.
# Each part runs even if another failed; the status is non-zero if any failed.
check: deps modules hddsim tools unit debs
ifeq ($(T),)
	@rc=0; ./tests/vm/run-parallel $(VM_ARGS) || rc=$$?; \
	out=$${VM_OUT:-build/vm}; mkdir -p "$$out"; \
	{ $(MAKE) --no-print-directory check-fstests; s=$$?; \
	  $(MAKE) --no-print-directory check-root || s=$$?; exit $$s; } >"$$out/check-fstests.out" 2>&1 & f=$$!; \
	./tests/crash/run --smp 1 $(VM_ARGS) >"$$out/check-crash.out" 2>&1 & c=$$!; \
	wait $$f || rc=$$?; wait $$c || rc=$$?; \
	cat "$$out/check-fstests.out" "$$out/check-crash.out"; exit $$rc
else
	./tests/vm/run $(VM_ARGS) $(T)
endif

# CI's other kernels (.ci/run: `make check-subsets`, 6.12 and 7.3 at once):
# what touches the kernel interfaces that changed from 6.1 to 6.12 and 7.3
# (queue limits, bio ioprio, blkcg, flush/FUA, discard, suspend, hrtimers,
# workqueues, the bio iterator) plus the data paths (fio verify and file
# systems, reads into the cache's own pages) and one power-cut scenario;
# the origin's identity (partition and dm metadata), ext4's journal waiting
# on idle I/O. 11-target-io runs its writeback run only: the cache-off run
# is a plain remap, and 14-kernel-compat checks its limits. Table parsing,
# the cache engine's own logic and error handling, the tools and warm
# restart (the power cut covers the metadata's flushes) depend on no kernel
# interface that differs: 6.1's run has them, and its crosskernel scenario
# loads 7.3's caches under 6.1 and back (docs/kernels.md).
CHECK_SUBSET ?= 00-smoke 11-target-io 14-kernel-compat \
	22-cache-discard 36-persist-origin 90-cache-input-scribble \
	40-sched-throttle 41-sched-nohold 42-sched-cgroup 43-sched-suspend 47-sched-journal \
	95-cache-concurrency
# 6.12 has no code path of its own: each of its API forms is 6.1's or 7.3's
# (docs/kernels.md), so it runs the data paths, its limits and a power cut.
CHECK_SUBSET_6_12 ?= 00-smoke 11-target-io 14-kernel-compat 22-cache-discard 90-cache-input-scribble
CRASH_SUBSET ?= powercut
SUBSET_IO_POLICIES ?= writeback
# Kernel and vCPUs of each guest: the newest kernel keeps two (code that
# runs on two CPUs at once), three vCPUs in all on CI's two cores.
SUBSET_KERNELS ?= 6.12:1 7.3:2

# One kernel (KVER), the module built in the tree.
check-subset: deps modules hddsim tools debs
	@rc=0; SSDP_IO_POLICIES="$(SUBSET_IO_POLICIES)" ./tests/vm/run $(VM_ARGS) $(CHECK_SUBSET) || rc=$$?; \
	./tests/crash/run $(VM_ARGS) $(CRASH_SUBSET) || rc=$$?; exit $$rc

# SUBSET_KERNELS at once, each module built apart (tests/vm/run-subsets):
# the tree is free meanwhile for `make lint` (.ci/run runs them side by side).
check-subsets: tools
	@for k in $(SUBSET_KERNELS); do KVER=$${k%%:*} ./scripts/install-deps.sh || exit; done
	CHECK_SUBSET="$(CHECK_SUBSET)" CHECK_SUBSET_6_12="$(CHECK_SUBSET_6_12)" CRASH_SUBSET="$(CRASH_SUBSET)" \
		SSDP_IO_POLICIES="$(SUBSET_IO_POLICIES)" ./tests/vm/run-subsets $(SUBSET_KERNELS)

# fstests (xfstests), built from FSTESTS_SRC or the pinned snapshot in
# ../shared/fstests into build/fstests; FSTESTS_ARGS for tests/fstests/run
# (--fs xfs, --configs ssdprio, --tests "generic/013").
FSTESTS_ARGS ?=

# make check's part (after the guest suite): tests/fstests/check-tests on
# ssdprio only, every test listed must pass. Its own output dir, beside the
# guest suite's (VM_OUT), whose results it would otherwise replace.
check-fstests: modules
	./scripts/install-deps.sh
	VM_OUT=$${VM_OUT:-build/vm}-fstests-check ./tests/fstests/run --check $(VM_ARGS)

check-xfstests: modules
	./scripts/install-deps.sh
	./tests/fstests/run $(FSTESTS_ARGS) $(VM_ARGS)

xfstests: modules
	./scripts/install-deps.sh
	./tests/fstests/run --quick $(FSTESTS_ARGS) $(VM_ARGS)

# Debian packages (debian/): built from a clean copy into build/deb/ and
# checked, with the DKMS build of the packaged source (scripts/deb-check).
deb:
	./scripts/deb-check

# The packages alone (build/deb/): the systemd boot scenario
# (tests/crash/systemd.sh) installs them in the guest.
debs:
	./scripts/deb-check --build-only

# RPM packages for Fedora and RHEL 10 (rpm/dm-ssdprio.spec), built with
# Debian's rpmbuild into build/rpm/; rpm-check also runs rpmlint and compares
# their files with the debs' (scripts/rpm-check).
rpm:
	./scripts/rpm-check --build-only

rpm-check:
	./scripts/rpm-check

# Warm restart across reboots and power cuts (QEMU killed), see
# tests/crash/README.md; `make crash S="powercut fsck"` runs some.
crash: deps modules tools debs
	./tests/crash/run $(VM_ARGS) $(S)

# The root file system on ssdprio, two boots through Debian's
# initramfs-tools, then two through dracut from the same setup boot's
# disks (tests/crash/rootfs). make check runs it after the fstests.
check-root: deps modules tools
	@rc=0; ./tests/crash/rootfs || rc=$$?; \
	d=$${VM_OUT:-build/vm}/rootfs/setup-disks; [ -f "$$d/rssd.img" ] || d=; \
	ROOTFS_SETUP_DISKS=$$d ./tests/crash/rootfs --dracut || rc=$$?; exit $$rc

demo: deps modules tools
	./tests/vm/run $(VM_ARGS) --script tests/guest/demo.sh

bench: deps modules hddsim
	./bench/run $(if $(S),$(S))

# A build root's kernel would get the module in the root's /lib/modules.
# With DESTDIR, the module goes under it too, and depmod is the packager's.
install: modules install-tools
	@test -z "$(KROOT)" || { echo "install: $(KDIR) is in a build root; install the DKMS package"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(if $(DESTDIR),INSTALL_MOD_PATH=$(abspath $(DESTDIR))) modules_install
	test -n "$(DESTDIR)" || depmod -a $$(./scripts/kernel release-of $(KDIR))

# The rule names the tool by absolute path: point it at SBINDIR.
install-tools: $(TOOL)
	install -D -m 0755 $(TOOL) $(DESTDIR)$(SBINDIR)/ssdprio-tool
	install -d $(DESTDIR)$(UDEVRULESDIR)
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/udev/63-ssdprio.rules >$(DESTDIR)$(UDEVRULESDIR)/63-ssdprio.rules
	chmod 0644 $(DESTDIR)$(UDEVRULESDIR)/63-ssdprio.rules
	rm -f $(DESTDIR)$(UDEVRULESDIR)/60-ssdprio.rules  # its name before
	for m in $(MANPAGES); do \
		install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit; \
	done
	install -D -m 0644 tools/bash-completion/ssdprio-tool \
		$(DESTDIR)$(BASHCOMPDIR)/ssdprio-tool
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSTEMDGENDIR)
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/systemd/ssdprio@.service >$(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio@.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio@.service
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/systemd/ssdprio-metrics.service >$(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio-metrics.service
	install -m 0644 tools/systemd/ssdprio-metrics.timer $(DESTDIR)$(SYSTEMDUNITDIR)/
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio-metrics.service
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/systemd/ssdprio-generator >$(DESTDIR)$(SYSTEMDGENDIR)/ssdprio-generator
	chmod 0755 $(DESTDIR)$(SYSTEMDGENDIR)/ssdprio-generator
	install -d $(DESTDIR)$(INITRAMFSDIR)/hooks
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/initramfs-tools/hooks/ssdprio >$(DESTDIR)$(INITRAMFSDIR)/hooks/ssdprio
	chmod 0755 $(DESTDIR)$(INITRAMFSDIR)/hooks/ssdprio
	for f in $(INITRAMFS_SCRIPTS); do \
		install -D -m 0755 tools/initramfs-tools/scripts/$$f \
			$(DESTDIR)$(INITRAMFSDIR)/scripts/$$f || exit; \
	done
	install -d $(DESTDIR)$(DRACUTMODDIR)/90ssdprio
	sed 's|/usr/local/sbin/ssdprio-tool|$(SBINDIR)/ssdprio-tool|' \
		tools/dracut/90ssdprio/module-setup.sh >$(DESTDIR)$(DRACUTMODDIR)/90ssdprio/module-setup.sh
	chmod 0755 $(DESTDIR)$(DRACUTMODDIR)/90ssdprio/module-setup.sh
	install -m 0755 tools/dracut/90ssdprio/ssdprio-activate.sh $(DESTDIR)$(DRACUTMODDIR)/90ssdprio/

uninstall-tools:
	rm -f $(DESTDIR)$(SBINDIR)/ssdprio-tool \
		$(DESTDIR)$(UDEVRULESDIR)/63-ssdprio.rules \
		$(DESTDIR)$(UDEVRULESDIR)/60-ssdprio.rules \
		$(DESTDIR)$(BASHCOMPDIR)/ssdprio-tool \
		$(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio@.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio-metrics.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/ssdprio-metrics.timer \
		$(DESTDIR)$(SYSTEMDGENDIR)/ssdprio-generator \
		$(DESTDIR)$(INITRAMFSDIR)/hooks/ssdprio \
		$(foreach f,$(INITRAMFS_SCRIPTS),$(DESTDIR)$(INITRAMFSDIR)/scripts/$(f)) \
		$(DESTDIR)$(DRACUTMODDIR)/90ssdprio/module-setup.sh \
		$(DESTDIR)$(DRACUTMODDIR)/90ssdprio/ssdprio-activate.sh \
		$(foreach m,$(MANPAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	rmdir $(DESTDIR)$(DRACUTMODDIR)/90ssdprio 2>/dev/null || true

# modules_install puts an external module in extra/ (6.1) or updates/
# (6.12), compressed where the kernel's config says so.
uninstall: uninstall-tools
	rel=$$(./scripts/kernel release-of $(KDIR)) && \
	rm -f $(DESTDIR)/lib/modules/$$rel/extra/dm-ssdprio.ko* \
		$(DESTDIR)/lib/modules/$$rel/updates/dm-ssdprio.ko* && \
	{ test -n "$(DESTDIR)" || depmod -a $$rel || true; }

clean:
	$(KRUN) $(MAKE) -C $(KBUILD_DIR) M=$(CURDIR) clean
	rm -f .built-for
	$(MAKE) -C tests/unit clean
	rm -rf build
endif
