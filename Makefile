# Two commands: `make run` serves the app (the UI and the analysts' API), `make test` runs the whole test suite.
# `make docs` serves the docs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501
# The analysts' HTTP API (dpcore/api): the front door through which they ask, on the same HOST.
API_PORT ?= 8502
# 127.0.0.1: only this machine. `make run HOST=0.0.0.0` serves a LAN demo (anyone on the network can connect).
HOST   ?= 127.0.0.1
DOCS_PORT ?= 8000

.PHONY: run test test-fast lint format install-test bench bench-quick clean-venv screenshots docs

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when the requirements file changed (stamp files).
$(VENV)/.requirements.stamp: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.requirements-dev.stamp: requirements-dev.txt $(VENV)/.requirements.stamp
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# The package itself, editable: `dpcore` imports from any folder (an exported script or notebook runs with
# .venv/bin/python run.py wherever it lies) and `dp-explorer` is on the venv's PATH. --no-deps: the pins above.
$(VENV)/.package.stamp: pyproject.toml $(VENV)/.requirements.stamp
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# Optional Ray executor: tests install it (make run does not need it).
$(VENV)/.requirements-ray.stamp: requirements-ray.txt $(VENV)/.requirements.stamp
	$(PY) -m pip install --quiet -r requirements-ray.txt
	touch $@

run: $(VENV)/.package.stamp
	@if [ "$(HOST)" != "127.0.0.1" ] && [ "$(HOST)" != "localhost" ]; then \
	  echo "WARNING: serving on $(HOST):$(PORT) - anyone who can reach this machine can use the app, its query"; \
	  echo "WARNING: console and its background jobs. Admin actions need the token set by 'python -m dpcore admin init'."; fi
	@echo "UI:  http://$(HOST):$(PORT)   analysts' API: http://$(HOST):$(API_PORT) (docs/api.md)"
	@$(PY) -m dpcore api --host $(HOST) --port $(API_PORT) & api=$$!; \
	  trap 'kill $$api 2>/dev/null' EXIT INT TERM; \
	  $(PY) -m streamlit run app.py --server.address $(HOST) --server.port $(PORT) --server.headless true --browser.gatherUsageStats false

# Everything the tests need, installed (CI runs this with the machine's HOME, then the tests with an empty one).
install-test: $(VENV)/.requirements-dev.stamp $(VENV)/.requirements-ray.stamp $(VENV)/.package.stamp

# The whole suite on one pytest-xdist worker per core, each test file whole on one worker (--dist loadfile: a
# browser module's server and surveys start once), the real-browser and Ray files handed out first
# (tests/conftest.py). 10 min 27 s on 2 cores in a fresh clone's .ci/run (2026-12-04; 26 min in one process); four
# workers on 2 cores were no faster (a Ray sweep ran past its 150 s). `make test PYTEST_WORKERS=0`: one process.
PYTEST_WORKERS ?= auto
PYTEST_DIST ?= --dist loadfile --no-loadscope-reorder
FAST_WORKERS ?= auto

test: install-test
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_DIST)

# The fast lane: everything but the real-browser, Ray and slow tests (1 min 50 s on 2 cores).
test-fast: install-test
	$(PY) -m pytest -n $(FAST_WORKERS) -m "not e2e and not slow and not ray"

# ruff (lint and format check) and mypy (its settings in pyproject.toml: strict for the privacy maths and the
# statements, the default level elsewhere in dpcore); CI runs it before the tests.
lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Every bench script, each to the end even when one fails (the failures are listed, and make fails after).
bench: $(VENV)/.package.stamp
	@failed=""; for f in bench/*.py; do echo "== $$f"; $(PY) $$f $(BENCH_ARGS) || failed="$$failed $$f"; done; \
	if [ -n "$$failed" ]; then echo "bench failed:$$failed"; exit 1; fi

# The same scripts at a small size: a smoke test that each still runs (CI runs it after the tests).
bench-quick:
	@$(MAKE) --no-print-directory bench BENCH_ARGS=--quick

clean-venv:
	rm -rf $(VENV)

# Refresh the README's and the docs' tour images from a real-browser run.
screenshots: $(VENV)/.requirements-dev.stamp
	$(PY) -m pytest -q tests/e2e
	$(PY) tests/e2e/update_readme_screenshots.py

# The documentation site (docs/, mkdocs.yml), served on this machine only: http://127.0.0.1:$(DOCS_PORT).
docs: $(VENV)/.requirements-dev.stamp
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)
