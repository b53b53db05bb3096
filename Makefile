# Two commands on a fresh machine with only Python 3.11+ and pip:
#   make demo   - create .venv, install roofline, write the lecture report to report/
#   make test   - create .venv with the dev extras, lint (ruff) and type-check (mypy), run the whole test suite
#                 (pytest-xdist: one worker per CPU)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	MPLBACKEND=Agg $(BIN)/roofline report --out report
	@echo "Open report/index.html"

test: lint
	MPLBACKEND=Agg $(BIN)/python -m pytest -n auto --dist worksteal

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy

bench: $(VENV)/.installed
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) report build *.egg-info src/*.egg-info
