# Everything the project needs is installed by `make setup` into .venv:
# the Python packages (from PyPI) and the Rust extension (built by maturin).
# Rust itself (stable, 1.87 or later) and Python 3.11 are expected on the
# machine, as on the project's reference machine (Debian 12).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup demo test test-rust test-python bench golden golden-check clean

$(STAMP): pyproject.toml Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml) $(shell find python -name '*.py')
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

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
