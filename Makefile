# Two entry points for a newcomer: `make run` (set up, run the main job) and
# `make test` (set up, lint, type-check, run the test suite). Both create .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= outputs
PARAMS ?= workspace/parameters/energy_params.yaml
# Extra pip options for the test stack, e.g. the CPU build of torch:
# make test PIP_EXTRA="--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple"
PIP_EXTRA ?=

.PHONY: run test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.core-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml requirements-test.txt | $(BIN)/python
	$(BIN)/python -m pip install -q $(PIP_EXTRA) -r requirements-test.txt
	touch $@ $(VENV)/.core-installed

run: $(VENV)/.core-installed
	$(BIN)/ecocompute energy_estimate --parameters_file $(PARAMS) --output_dir $(OUT)
	$(BIN)/ecocompute validate $(OUT)/energy.json

lint: $(VENV)/.test-installed
	$(BIN)/ruff check ecocompute tests benchmarks
	$(BIN)/ruff format --check ecocompute tests benchmarks
	$(BIN)/mypy

# Two workers a core, at most 8 (pytest-xdist): about a quarter of the suite's time is
# tests waiting on real time (fake GPUs' power traces, signals), which another worker fills.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$((2 * n)))

test: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
