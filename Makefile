# Everything a fresh machine with only Python 3.11 needs: `make run`, `make test`.
# `make run` installs the simulator alone (no PyTorch); `make test` adds the test, Ray, profiler and docs extras.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN_STAMP  := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: run test docs bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# editable_mode=compat: the checkout goes on sys.path as a path entry, so that Python finds the package there
# even where the current folder holds a directory named simcluster (a clone), which would otherwise shadow it as
# an empty namespace package (setuptools' default editable finder comes after Python's path search)
EDITABLE := --config-settings editable_mode=compat

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e . $(EDITABLE)
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,ray,profiler,docs]' $(EDITABLE)
	touch $@ $(RUN_STAMP) $(DOCS_STAMP)

$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]' $(EDITABLE)
	touch $@ $(RUN_STAMP)

## Simulate the embedded default trace (traces/default) with fifo.
run: $(RUN_STAMP)
	$(BIN)/lucid-sim run --out results/default

## The whole test suite (doctests included).
test: $(TEST_STAMP)
	$(BIN)/python -m pytest

## The manual (docs/, mkdocs.yml) as a site in site/; --strict: a broken link or a page left out of the nav fails.
docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

## Benchmarks on ../shared/data (prints figures).
bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/bench_policies.py

## Style, types and the layer rules of [tool.importlinter] (installs ruff, mypy and import-linter into .venv).
lint: $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[lint]' $(EDITABLE)
	$(BIN)/ruff check .
	$(BIN)/mypy simcluster profiler workloads --ignore-missing-imports
	$(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) build site *.egg-info
