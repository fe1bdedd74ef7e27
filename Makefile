# hatlab — the two commands a fresh machine (Debian 12, as root) needs:
#   make demo   installs the app from requirements/runtime.lock, builds the frontend, creates a SQLite database
#               with sample studies and serves the app on http://127.0.0.1:8000 (jobs run in-process)
#   make test   installs what the tests need (.ci/services: PostgreSQL, Redis, Chromium, Node.js, python3-venv,
#               the test role and database; requirements/dev.lock), checks style and types (ruff, mypy), then
#               runs the whole suite on PostgreSQL, and the demo's hand-out, submission, API and page tests
#               again on SQLite
# Both can run again at once: a second run installs nothing. Two `make test` on one host don't collide (each
# run has its own test database and Redis database, named after the run's process id).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
HOST   ?= 127.0.0.1
PORT   ?= 8000
DEMO_ENV := DATABASE_URL=sqlite:///$(CURDIR)/demo.sqlite3 CELERY_TASK_ALWAYS_EAGER=1 DJANGO_DEBUG=1 HATLAB_DEMO_FAST_HASH=1 \
            HATLAB_MEDIA_ROOT=$(CURDIR)/media HATLAB_PUBLIC_URL=http://$(HOST):$(PORT)
# torch is pinned here, not in the locks (see .ci/lock): pip takes torch==2.13.0 from where pip is configured
# to look (on CI's machine, a local CPU wheel). Elsewhere, for the CPU build rather than PyPI's CUDA one:
#   make test TORCH_PIP_ARGS=--index-url=https://download.pytorch.org/whl/cpu
TORCH          := torch==2.13.0
TORCH_PIP_ARGS ?=
# The test database: set TEST_DATABASE_URL, or .ci/services writes one (with its password) to TEST_ENV_FILE.
TEST_DATABASE_URL ?=
TEST_ENV_FILE     ?= /etc/hatlab/test.env
SQLITE_TESTS := tests/annotate/test_assignment.py tests/annotate/test_submission.py \
                tests/annotate/test_api.py tests/annotate/test_pages.py tests/annotate/test_portable_database.py \
                tests/annotate/test_trust_on_submit.py tests/annotate/test_handout_queue.py
PYTEST := $(VENV)/bin/pytest -p no:cacheprovider
TEST_URL = url='$(TEST_DATABASE_URL)'; [ -n "$$url" ] || url=$$(sed -n 's/^HATLAB_TEST_DATABASE_URL=//p' $(TEST_ENV_FILE))

.PHONY: demo test test-postgres test-sqlite mutants mutants-tool mutants-changed install install-dev tools services frontend lint typecheck bench lock clean

# One venv; the lock it was last installed from is recorded by a stamp. --no-deps: the lock lists everything.
$(VENV)/.installed-%: requirements/%.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check --require-hashes --no-deps -r $<
	$(PIP) install --quiet --disable-pip-version-check $(TORCH_PIP_ARGS) '$(TORCH)'
	$(PIP) install --quiet --disable-pip-version-check --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $@

install: tools $(VENV)/.installed-runtime
install-dev: tools $(VENV)/.installed-dev

tools:
	bash .ci/services --tools-only

services:
	bash .ci/services

frontend/node_modules/.installed: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	touch $@

frontend: frontend/node_modules/.installed
	cd frontend && npm run build

demo: install frontend
	$(DEMO_ENV) $(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py seed_demo
	$(DEMO_ENV) HATLAB_JOBS_IN_THREAD=1 $(PY) manage.py runserver $(HOST):$(PORT)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over annotate/ and explain_engine/, as [tool.mypy] in pyproject.toml says
typecheck: install-dev
	$(VENV)/bin/mypy

test: services install-dev frontend lint typecheck
	cd frontend && npm test
	$(MAKE) --no-print-directory test-postgres test-sqlite

test-postgres: install-dev
	$(TEST_URL); DATABASE_URL=$$url HATLAB_TEST_RUN=$$$$ $(PYTEST)

# Hand-made mutants of the hand-out, submission, agreement and forced-choice code: each must be killed.
mutants: install-dev
	$(TEST_URL); DATABASE_URL=$$url HATLAB_TEST_RUN=mutants$$$$ $(PY) tools/mutants/run.py

# Mutation testing by a tool (Cosmic Ray's operators, tools/mutants/tool.py) over the modules of
# tools/mutants/targets.py, each mutant against its module's tests: every mutant is hours on two cores, so
# narrow it with MUTANTS_ARGS (--module PATH, --per-module N --seed S, --sessions DIR to resume).
MUTANTS_ARGS   ?=
# mutants-changed: only the mutants on the lines this change touched (against the merge base with
# origin/main, else HEAD~1), at most MUTANTS_BUDGET seconds; a change that touches no target's lines runs a
# sample of MUTANTS_SAMPLE drawn with MUTANTS_SEED (fixed, so the check does not flip from commit to commit).
MUTANTS_BUDGET ?= 300
MUTANTS_SAMPLE ?= 4
MUTANTS_SEED   ?= 32
mutants-tool: install-dev
	$(TEST_URL); DATABASE_URL=$$url HATLAB_TEST_RUN=mutanttool$$$$ $(PY) tools/mutants/tool.py $(MUTANTS_ARGS)

mutants-changed: install-dev
	$(TEST_URL); DATABASE_URL=$$url HATLAB_TEST_RUN=mutantchanged$$$$ $(PY) tools/mutants/tool.py --changed \
	  --budget $(MUTANTS_BUDGET) --fallback-sample $(MUTANTS_SAMPLE) --seed $(MUTANTS_SEED) $(MUTANTS_ARGS)

# The demo's database: the same modules on SQLite, less the few that are PostgreSQL-only by design.
test-sqlite: install-dev
	DATABASE_URL=sqlite://:memory: $(PYTEST) -m "not postgres_only" $(SQLITE_TESTS)

bench: install-dev
	$(PY) bench/metrics.py
	$(PY) bench/train_infer.py
	$(PY) bench/explain.py
	$(PY) bench/annotate_load.py

lock: install-dev
	UV=$(VENV)/bin/uv bash .ci/lock

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist staticfiles demo.sqlite3
