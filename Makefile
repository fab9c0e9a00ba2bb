# Everything the project needs is installed by `make setup` into .venv:
# the Python packages (from PyPI) and the Rust extension (built by maturin).
# Rust itself (stable, 1.87 or later) and Python 3.11 are expected on the
# machine, as on the project's reference machine (Debian 12).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup demo test test-rust test-python bench clean

# maturin develop shows cargo's progress (the first build takes minutes) and
# installs the package editable with its test extras.
$(STAMP): pyproject.toml Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml) $(shell find python -name '*.py')
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "== installing pip and maturin into $(VENV)"
	$(BIN)/python -m pip install --quiet --upgrade pip "maturin>=1.5,<2"
	@echo "== building the Rust core and installing xrc with its dependencies (first time: several minutes)"
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --extras test
	touch $(STAMP)

setup: $(STAMP)

## Install everything and run the XRC paper's Fig. 1 scenario.
demo: setup
	@echo "== running the XRC paper's Fig. 1 scenario into runs/fig1"
	$(BIN)/xrc run scenarios/paper/fig1-time-varying.toml --out runs/fig1 --force

## Install everything and run the whole test suite (Rust and Python).
test: setup test-rust test-python

test-rust:
	cargo test --release --workspace --exclude xrc-py --features xrc-core/schema

test-python: setup
	$(BIN)/python -m pytest -q tests

## Speed: the whole simulator on the bench scenario, and the engine alone.
bench: setup
	$(BIN)/xrc bench
	cargo bench --bench engine

clean:
	rm -rf $(VENV) target runs
