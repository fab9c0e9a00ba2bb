# Everything the project needs is installed by `make setup`: the Debian
# packages it builds and runs with (setup-deps, as root), then into .venv
# the Python packages (from PyPI) and the Rust extension (built by maturin,
# with the kernel XRC's BPF programs compiled by clang). Rust itself (stable,
# 1.87 or later) and Python 3.11 are expected on the machine, as on the
# project's reference machine (Debian 12).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup setup-deps setup-linux-ref demo test test-rust test-rust-debug test-python bench bench-ns3 golden golden-check clean

# maturin develop shows cargo's progress (the first build takes minutes) and
# installs the package editable with its test extras.
$(STAMP): pyproject.toml Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml -o -name '*.c' -o -name '*.h') $(shell find python -name '*.py')
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "== installing pip, maturin and uv (which installs the dependencies) into $(VENV)"
	$(BIN)/python -m pip install --quiet --upgrade pip "maturin>=1.5,<2" "uv>=0.4"
	@echo "== building the Rust core and installing xrc with its dependencies (first time: several minutes)"
	PATH=$(abspath $(BIN)):$$PATH VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --uv --extras test
	touch $(STAMP)

setup: setup-deps $(STAMP)

## The Debian packages: clang and libelf-dev (the kernel XRC's BPF programs,
## and libbpf, which the Rust build compiles), pkg-config and zlib1g-dev
## (libbpf), util-linux (setpriv, for the tests run as an unprivileged user)
## and what the emulator's runs use (LINUX_REF_PKGS). Installed with apt-get
## when missing (as root); without root the missing ones are named.
DEB_PKGS = clang libelf-dev zlib1g-dev pkg-config util-linux $(LINUX_REF_PKGS)
setup-deps:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "setup: missing Debian packages:" $$missing"; install them as root: sudo make setup-deps" >&2; exit 1; fi; \
	echo "== installing Debian packages:" $$missing; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

## What `xrc validate-linux` and the emulator tests need besides the kernel
## (root, TUN, network namespaces): iperf3 for the traffic, ping, ip, ss,
## nstat and sysctl for the set-up and the checks, tcpdump for inspecting
## captures. Debian packages, installed with apt-get when missing (as root).
## `make test` does not need them: the emulator's tests skip, naming what
## is missing.
LINUX_REF_PKGS := iperf3 iputils-ping iproute2 procps tcpdump
setup-linux-ref:
	@missing=$$(for p in $(LINUX_REF_PKGS); do 		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; done); 	if [ -z "$$missing" ]; then echo "setup-linux-ref: $(LINUX_REF_PKGS) already installed"; exit 0; fi; 	if [ "$$(id -u)" != 0 ]; then echo "setup-linux-ref: missing $$missing; installing needs root: sudo make setup-linux-ref" >&2; exit 1; fi; 	echo "setup-linux-ref: installing" $$missing; 	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

## Install everything and run the XRC paper's Fig. 1 scenario.
demo: setup
	@echo "== running the XRC paper's Fig. 1 scenario into runs/fig1"
	$(BIN)/xrc run scenarios/paper/fig1-time-varying.toml --out runs/fig1 --force

## Install everything and run the whole test suite (Rust and Python): the
## Rust tests beside the realtime Python tests, then the others on every
## core (scripts/run_tests.py says why in that order).
test: setup
	$(BIN)/python scripts/run_tests.py

## The Rust tests, optimized and with a debug build's checks (the
## release-test profile of Cargo.toml: debug assertions, the simulator's
## invariants every 64 events and at the end of every run, overflow panics).
test-rust:
	cargo test --profile release-test --workspace --exclude xrc-py --features xrc-core/schema

## The Rust tests unoptimized (what `cargo test` does): the long property
## sweeps run a few cases only. Not part of `make test`, whose optimized
## build checks the same assertions on every case.
test-rust-debug:
	cargo test --workspace --exclude xrc-py

## The Python tests alone: all but the realtime ones on every core
## (pytest-xdist; tests that share an expensive module fixture stay on one
## worker), then the realtime ones (real traffic through network
## namespaces, the kernel's congestion controls) one at a time on an
## otherwise idle host. Both print their skip reasons.
test-python: setup
	$(BIN)/python -m pytest -q -rs -n auto --dist loadgroup -m "not realtime" tests
	$(BIN)/python -m pytest -q -rs -m realtime tests

## Speed: the whole simulator on the bench scenario, the Gymnasium
## environment's steps/s on it (beside Aurora's), and the engine alone;
## one cell with 1, 10, 100, 400 and 1,000 UEs (wall, events/s, peak RSS),
## LTE 20 MHz then NR 50 MHz at mu = 0 and mu = 3 with their cost ratio
## (about 4 minutes); then the emulator's timing on this host (needs root:
## skips otherwise); then ns-3's LTE module against xrc (bench-ns3).
bench: setup
	$(BIN)/xrc bench
	$(BIN)/xrc bench --gym
	cargo bench --bench engine
	$(BIN)/xrc bench --cell
	$(BIN)/xrc bench --memory
	$(BIN)/python -m xrc.emulation.bench
	$(MAKE) bench-ns3

## ns-3.44's LTE module and xrc on the same 10- and 40-UE cells, timed side by
## side in one run (installs ns-3 into .venv-ns3 on first use, ~500 MB;
## about 3 minutes).
bench-ns3: setup
	$(BIN)/python scripts/bench_ns3_lte.py

## Rewrite the golden digests of the simulator's outputs (tests/golden/).
## Only on purpose: when a change is meant to alter results; say so in the
## commit. `make test` checks them (tests/test_golden.py).
golden: setup
	$(BIN)/python scripts/golden.py --update

## Check the golden digests alone (what tests/test_golden.py does), case by case.
golden-check: setup
	$(BIN)/python scripts/golden.py

clean:
	rm -rf $(VENV) target runs
