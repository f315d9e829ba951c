# storlab: `make demo` and `make test` work on a fresh Debian 12 machine as root.
# PG=15 (the default), 17 or 18 picks the PostgreSQL major: make test PG=17.
SHELL := /bin/bash
PG ?= 15
# That major's bin folder; any other major stops here, with one line.
PG_BIN := $(shell scripts/pg bindir $(PG) 2>&1)
ifneq ($(.SHELLSTATUS),0)
$(error $(PG_BIN))
endif
PG_CONFIG ?= $(PG_BIN)/pg_config
export PG PG_BIN
# As root, cargo pgrx writes into the system PostgreSQL directly; otherwise through sudo.
SUDO_FLAG := $(if $(filter 0,$(shell id -u)),,--sudo)

.PHONY: all deps build-deps install install-debug package test-package lab lab-studies lab-stop demo test test-fast bench studies study charts clean

all: install

# The lab machine's packages (Debian 12, as root): make demo, test, bench.
deps:
	@scripts/deps

# Only what building into $(PG_CONFIG)'s PostgreSQL needs; installs no
# system package, so it is safe on an existing server's host.
build-deps:
	@scripts/deps --build $(PG_CONFIG)

# Release build: probe figures from a debug build would be wrong.
install: build-deps
	cargo pgrx install --release --pg-config $(PG_CONFIG) $(SUDO_FLAG)

# The debug build `make test` compiled anyway, without the in-server test functions.
install-debug: build-deps
	cargo pgrx install --pg-config $(PG_CONFIG) $(SUDO_FLAG)

# A Debian package of the release build for PG's major, laid out as
# PGDG's: target/package/postgresql-$(PG)-storlab_<version>-1_amd64.deb
# (scripts/package); `apt install ./that.deb` needs no Rust on the server.
package: build-deps
	@PG_CONFIG=$(PG_CONFIG) scripts/package $(PG)

lab:
	@scripts/lab start

lab-stop:
	@scripts/lab stop

# The storage-bound studies lab (root only): the server held to a memory
# limit (page cache included), every loop and zram device throttled to a
# stated disk class; ext4 journal modes, no journal and barrier=0, btrfs RAID
# 0/1/5/6/10 over several images, ext4 on a zram device.
lab-studies:
	@scripts/lab start --studies

demo: deps install lab
	@scripts/demo

test: deps
	@scripts/test

# The release package (make package) on a machine that never saw Rust: a
# minimal Debian root of the suite shipping PG's major (15: bookworm, 17:
# trixie, 18: sid), apt install ./deb, CREATE EXTENSION, a probe, apt
# remove (root, debootstrap; about a minute after the build). make test
# PG=15 runs the same test with its debug build's package.
test-package: package
	@prove -v --exec bash test/package_clean_root.sh

# The inner loop: the core's tests (seconds), then the debug build installed
# into an already running lab (`make lab`) and pg_regress against it.
test-fast:
	@scripts/test-fast

# Release build: probes against fio and pg_test_fsync on the lab's volumes
# (psync and io_uring at depths 1 to 32, and how repeatable each is), the
# standard suite with and without precision_pct, compare_tablespaces() under a fio load (ten calls), regressions() on unchanged
# storage, the benchmark harness against bare pgbench, what the
# experiments' alternating order buys over a fixed one, and the readers and
# the update over years of stored results, and a collector's readers over
# 50 servers' results (about 110 minutes).
bench: deps install lab
	bench/probe_vs_fio
	bench/suite_precision
	bench/compare_under_load
	bench/regressions false-alarms
	bench/harness_overhead
	bench/experiment_order
	bench/scale --small --keep --db storlab_scale_small
	bench/scale
	bench/upgrade_scale --source storlab_scale_small --drop-source
	bench/fleet_scale

# Release build, the storage-bound studies lab, whether its drives behave as
# disks (bench/lab_drives, about 5 minutes), then the five classic
# studies (studies/, about 80 minutes), the power of an experiment there:
# A/A and A/B experiments, five of each (bench/power, about 50 minutes), and
# whether regressions() catches barriers switched on under a baseline taken
# with them off (bench/regressions barriers, about 5 minutes), and sequential
# against fixed experiments on a known A/B and an A/A pair (bench/sequential);
# `make study NAME=raid_iops` runs one study.
studies: deps install lab-studies
	bench/lab_drives
	scripts/studies
	bench/power
	bench/regressions barriers
	bench/sequential

study: deps install lab-studies
	scripts/studies $(NAME)

# The README's charts (docs/*.svg), measured on the lab (about 2 minutes).
charts: deps install lab
	scripts/charts docs

clean: lab-stop
	cargo clean
	rm -rf results regression.diffs regression.out
