# Quickstart: `make demo` and `make test`; each creates .venv and installs what it needs first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JOBS ?= 2

.PHONY: demo test bench setup clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# One stamp per extra, redone when pyproject.toml changes.
$(VENV)/.installed-%: $(PY) pyproject.toml
	$(PY) -m pip install -q -e ".[$*]"
	touch $@

setup: $(VENV)/.installed-test

demo: $(VENV)/.installed-demo
	$(PY) demo.py

test: $(VENV)/.installed-test
	OMP_NUM_THREADS=1 $(PY) -m pytest -n $(JOBS) tests

bench: $(VENV)/.installed-test
	$(PY) bench/eager_overhead.py
	$(PY) bench/import_time.py
	$(PY) bench/train_step.py

clean:
	rm -rf $(VENV) .pytest_cache
