# Quick start: `make run` (index + inspect the sample folder), `make test` (the whole suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DOCS ?= $(if $(wildcard ../shared/data/docs),../shared/data/docs,docs)
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/lorebase chunk $(DOCS)

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/extract.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
