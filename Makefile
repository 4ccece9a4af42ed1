# Tally: `make run` starts the whole service, `make test` runs the test suite.
# Both set everything up on a fresh clone (needs only Python 3.11 and a C compiler).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed

.PHONY: run test test-fast lint bench setup clean

run: setup
	$(PY) -m server.runner

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# The suite without the slow and the browser tests: a couple of minutes, for the edit loop.
test-fast: setup
	$(PY) -m pytest -q -m "not slow" --ignore=tests/browser $(PYTEST_ARGS)

# Static checks (pyproject.toml): ruff's lint and format, the layout's import contracts, mypy.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy analytics config dashboard recommendations server team

bench: setup
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk) || echo "wrk missing: HTTP rows skipped"
	$(PY) bench/run.py

setup: $(STAMP)

# bench/requirements-peers.txt: chdb, the ClickHouse the peers section and its test compare
# Tally with; not the product's (bench/peers/).
$(STAMP): requirements.txt bench/requirements-peers.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r bench/requirements-peers.txt
	touch $(STAMP)

clean:
	rm -rf $(VENV) var
