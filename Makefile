# fattorus: every target sets up .venv from the project's own files first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test run montecarlo bench sweep report tune clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(PY) -m pytest

run: setup
	$(PY) -m fattorus.sweep +topo=pinot +speedup=v2

montecarlo: setup
	$(PY) -m fattorus.kernels.montecarlo pinot

sweep: setup
	$(PY) -m fattorus.study sweeps/fattree_paper.yaml

report: setup
	$(PY) -m fattorus.report results/sweeps/fattree_paper

tune: setup
	$(PY) -m fattorus.tune --name atlas2x_cab --topo cab --workload atlas --scale 2 --train 0:14,14:28,28:42 --test 42:56,56:70 --trials 200 --jobs 2

bench: setup
	$(PY) -m fattorus.bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
