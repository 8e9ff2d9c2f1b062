# fattorus: every target sets up .venv from the project's own files first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test run bench sweep report clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(PY) -m pytest

run: setup
	$(PY) -m fattorus.montecarlo

bench: setup
	$(PY) -m fattorus.bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
