# hatlab — the two commands a fresh machine needs:
#   make demo   installs everything, builds the frontend, creates a SQLite database with sample studies
#               and serves the app on http://127.0.0.1:8000 (jobs run in-process)
#   make test   installs everything and runs the whole test suite (PostgreSQL, Redis, Chromium)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
HOST   ?= 127.0.0.1
PORT   ?= 8000
DEMO_ENV := DATABASE_URL=sqlite:///$(CURDIR)/demo.sqlite3 CELERY_TASK_ALWAYS_EAGER=1 DJANGO_DEBUG=1 \
            HATLAB_MEDIA_ROOT=$(CURDIR)/media HATLAB_PUBLIC_URL=http://$(HOST):$(PORT)
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/hatlab

.PHONY: demo test install frontend lint bench services clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

frontend/node_modules/.installed: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	touch $@

frontend: frontend/node_modules/.installed
	cd frontend && npm run build

demo: install frontend
	$(DEMO_ENV) $(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py seed_demo
	$(DEMO_ENV) $(PY) manage.py runserver $(HOST):$(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

services:
	bash .ci/services

test: install frontend services lint
	cd frontend && npm test
	DATABASE_URL=$(TEST_DATABASE_URL) $(VENV)/bin/pytest -p no:cacheprovider

bench: install
	$(PY) bench/metrics.py
	$(PY) bench/train_infer.py
	$(PY) bench/explain.py
	$(PY) bench/annotate_load.py

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist staticfiles demo.sqlite3
