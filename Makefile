# Quickstart: `make demo` and `make test`, each sets up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: demo test bench setup clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,demo]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) demo.py

test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -n $(JOBS) tests

bench: $(STAMP)
	$(PY) bench/eager_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache
