# Two commands on a fresh machine (Python 3.11 and the package registries):
#   make run    set up if needed, then run the shipped tasks
#   make test   set up if needed (Python packages, and the system packages the tests'
#               services need: scripts/test-services.sh), then run the test suite (.ci/run calls this)
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[dev,docker,codex]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/coder-eval run tasks/

test: $(STAMP)
	bash scripts/test-services.sh
	$(BIN)/python -m pytest -n auto --dist loadgroup

# mypy: the package, strict ([tool.mypy] in pyproject.toml); tests are not type-checked.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/bench_resolution.py
