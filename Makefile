# Two commands do all the set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-fast lint format clean screenshots

$(STAMP): pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	$(VENV)/bin/pip install --quiet -e ./client
	touch $(STAMP)

install: $(STAMP)

# DEBUG=1: a laptop, where the development SECRET_KEY is allowed (explorer/settings.py).
# The database (db.sqlite3, or DATABASE_URL) is kept between runs: the demo is loaded only
# when absent, so its ids, and links to it, stay the same.
run: install
	DEBUG=1 $(PY) manage.py migrate --noinput
	DEBUG=1 $(PY) manage.py load_demo --if-absent
	@echo "Serving on http://$(HOST):$(PORT)/ (log in as demo / demo; admin at /admin/)"
	@# The search worker beside the server (PostgreSQL; on SQLite it says so and exits),
	@# stopped when the server ends, Ctrl-C included.
	DEBUG=1 $(PY) manage.py search_worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	DEBUG=1 $(PY) manage.py runserver $(HOST):$(PORT)

# The tests themselves run with DEBUG off and a test key (pyproject.toml, pytest's env).
# On both cores, a file to a worker (a file's module-scoped data is made once): one
# process took over ten minutes once the Explorer API's and OpenTelemetry's live-server
# tests were added.
test: install
	DEBUG=1 $(PY) manage.py collectstatic --noinput --verbosity 0
	$(VENV)/bin/ruff check .
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --dist loadfile

# The quick tests only, on both cores: no browser, slow or PostgreSQL-only test (markers in
# pyproject.toml; the policy matrix walks each route once for each role, its full cross
# product is `slow`). Compiled modules are kept (__pycache__, ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set: each worker otherwise compiles the project and rewrites
# every test module's asserts again, ~5 s of CPU each. `--dist loadfile` keeps a module on one
# worker, so data written once for a module (written_for_the_module) is written once.
# The SQLite test database is migrated once and copied for each worker (tests/db_template.py).
# The live server answers without Nagle's delay (tests/live_server.py): its 45 ms a request
# were most of the client, OTLP and browser tests' time.
# Measured 27 Nov 2026 in a fresh clone on an idle 2-core machine: ~2,150 tests in 20.6-21.7 s
# (wall 21.8-23.2 s, 35-37 s of user CPU); before the live server's change, 27-31 s on the
# same machine. `make test` still runs everything.
test-fast: install
	DEBUG=1 $(PY) manage.py collectstatic --noinput --verbosity 0
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "not browser and not slow and not postgres"

screenshots: install
	UPDATE_SCREENSHOTS=1 $(PY) -m pytest tests/e2e/test_screenshots.py -q

lint: install
	$(VENV)/bin/ruff check .

format: install
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) staticfiles db.sqlite3* test-db.sqlite3*
