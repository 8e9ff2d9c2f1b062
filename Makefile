# fattorus: every target sets up .venv from the project's own files first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: help setup sysdeps precompile test run montecarlo bench sweep report tune clean

help:
	@echo "make setup       .venv from pyproject.toml (every target below but sysdeps and clean does this first)"
	@echo "make run         the main command: python -m fattorus.sweep +topo=pinot +speedup=v2"
	@echo "make test        the test suite (kernels precompiled first; system packages it drives installed when root)"
	@echo "make precompile  compile the numba kernels once (before a first prism or speedup=model study)"
	@echo "make bench       the benchmark tables (results/bench/)"
	@echo "make sweep       the fat-tree paper's study (sweeps/fattree_paper.yaml); make report: its report"
	@echo "make tune        tune ta's heuristics on Atlas x2 on Cab (Optuna)"
	@echo "make montecarlo  APH of random (topology-oblivious) allocations against the ideal on pinot"
	@echo "make sysdeps     the Debian packages the tests drive (postgresql, chromium), installed when root"
	@echo "make clean       remove .venv, the compiled kernels and the test caches (.pytest_cache, .hypothesis)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# numba compiles each kernel at its first call and caches it beside its module; this compiles
# them all once (python -m fattorus.precompile: ~1-2 min on 2 cores), again only when a module
# with kernels changes. `make test` runs it first, so that no test worker compiles a kernel; run
# it alone before a first prism or speedup=model study (else that run compiles what it needs).
KERNEL_SRC := $(shell grep -rl --include='*.py' numba fattorus)
# The stamp lives with the caches (deleting __pycache__ folders deletes both).
PRECOMPILED := fattorus/__pycache__/precompiled.stamp
$(PRECOMPILED): $(STAMP) $(KERNEL_SRC)
	$(PY) -m fattorus.precompile && mkdir -p $(@D) && touch $(PRECOMPILED)

precompile: $(PRECOMPILED)

# System packages some tests drive for real: a PostgreSQL server (distributed tuning) and
# Chromium (the report page in a headless browser, tests/test_report_browser.py). Each entry is
# binary:Debian-package; a binary counts as present when it is on PATH or (PostgreSQL keeps its
# server tools off PATH) in /usr/lib/postgresql/*/bin. Installed from Debian's packages when
# missing and we are root (CI, fresh machines); otherwise say what to install.
SYSDEPS_BIN := initdb:postgresql chromium:chromium
sysdeps:
	@for pair in $(SYSDEPS_BIN); do bin=$${pair%%:*}; pkg=$${pair##*:}; \
	  if ! command -v $$bin >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/$$bin >/dev/null 2>&1; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "installing $$pkg (Debian package) for the tests"; \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null) || exit 1; \
	    else echo "make: tests need $$bin: install the Debian package $$pkg (sudo apt-get install $$pkg)"; exit 1; fi; \
	  fi; done

# A failed precompile does not stop the tests: they report what is broken (test_precompile too).
test: setup sysdeps
	@$(MAKE) --no-print-directory precompile || echo "make: precompile failed (above); going on: each kernel compiles at its first use"
	$(PY) -m pytest -n auto --dist loadfile

run: setup
	$(PY) -m fattorus.sweep +topo=pinot +speedup=v2

montecarlo: setup
	$(PY) -m fattorus.kernels.montecarlo pinot

sweep: setup
	$(PY) -m fattorus.study sweeps/fattree_paper.yaml

report: setup
	$(PY) -m fattorus.report results/sweeps/fattree_paper

# The shipped study's command under its own name: a study never replaces another's tuned config
# (conf/policy/ta_tuned_atlas2x_cab.yaml is the shipped atlas2x_cab's; docs/tuning.md).
tune: setup
	$(PY) -m fattorus.tune --name atlas2x_cab_rerun --topo cab --workload atlas --scale 2 --train 0:14,14:28,28:42 --test 42:56,56:70 --trials 200 --jobs 2

bench: setup
	$(PY) -m fattorus.bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
	find fattorus \( -name '*.nbi' -o -name '*.nbc' \) -delete
	rm -f $(PRECOMPILED)
