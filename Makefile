# The Makefile builds its own virtual environment: a fresh machine needs only
# Python 3.10+ and make.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-stamp

.PHONY: all install demo test lint bench completions man clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m zapcli.demo

test: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -n 2 tests

lint: $(STAMP)
	$(VENV)/bin/ruff check zapcli tests
	$(VENV)/bin/mypy zapcli

bench: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) tests/bench/run_all.py

completions: $(STAMP)
	$(PY) -m zapcli.cli.gen completions

man: $(STAMP)
	$(PY) -m zapcli.cli.gen man

clean:
	rm -rf $(VENV) build *.egg-info
