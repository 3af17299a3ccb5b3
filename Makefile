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

# The package is installed editable, so uv's --compile-bytecode leaves its own modules out; with
# PYTHONDONTWRITEBYTECODE set (as on our machines) every `coder-eval` would compile them again at start
# (~0.15 s of a 1.4 s one-row run, docs/performance.md). compileall redoes only files changed since.
install: $(STAMP)
	$(BIN)/python -m compileall -q coder_eval_dagster

run: install
	$(BIN)/coder-eval run tasks/

# Four workers whatever the cores: most of the suite's time is waiting (a daemon's ticks, containers, the agent CLIs'
# start, scripted models' delays), so two workers on a 2-core machine left it idle (22-23 min; 17 min with four).
test: install
	bash scripts/test-services.sh
	$(BIN)/python -m pytest -n 4 --dist loadgroup

# mypy: the package, strict ([tool.mypy] in pyproject.toml); tests are not type-checked.
lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: install
	$(BIN)/python bench/bench_resolution.py
