# Everything the project needs is installed by `make setup` into .venv:
# the Python packages (from PyPI) and the Rust extension (built by maturin).
# Rust itself (stable, 1.87 or later) and Python 3.11 are expected on the
# machine, as on the project's reference machine (Debian 12).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup setup-linux-ref demo test test-rust test-python bench clean

$(STAMP): pyproject.toml Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml) $(shell find python -name '*.py')
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

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
	$(BIN)/xrc run scenarios/paper/fig1-time-varying.toml --out runs/fig1 --force

## Install everything and run the whole test suite (Rust and Python).
test: setup test-rust test-python

test-rust:
	cargo test --release --workspace --exclude xrc-py

test-python: setup
	$(BIN)/python -m pytest -q tests

## Speed: the whole simulator on the bench scenario, and the engine alone.
bench: setup
	$(BIN)/xrc bench scenarios/bench/lte-1ue-20s.toml
	cargo bench --bench engine

clean:
	rm -rf $(VENV) target runs
