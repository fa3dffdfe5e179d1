# Everything a fresh machine with only Python 3.11 needs: `make run`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	touch $(STAMP)

## Simulate the embedded default trace (traces/default.csv) with fifo.
run: $(STAMP)
	$(BIN)/lucid-sim run --out results/default

## The whole test suite.
test: $(STAMP)
	$(BIN)/python -m pytest

## Benchmarks on ../shared/data (prints figures).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_policies.py

## Style and types (installs ruff and mypy into .venv).
lint: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[lint]'
	$(BIN)/ruff check .
	$(BIN)/mypy simcluster profiler workloads --ignore-missing-imports

clean:
	rm -rf $(VENV) build *.egg-info
