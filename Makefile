# forge: `make run` serves the dashboard with demo data, `make test` runs the checks.
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
HOST    ?= 127.0.0.1
PORT    ?= 8000
# Chromium comes from Debian (/usr/bin/chromium); never download Playwright's.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

.PHONY: run test setup migrate lint

$(PYTHON):
	python3 -m venv $(VENV)

# Reinstall only when the dependencies change.
$(VENV)/.installed: pyproject.toml constraints.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[dev]' -c constraints.txt
	touch $@

setup: $(VENV)/.installed

migrate: setup
	$(PYTHON) manage.py migrate --noinput

run: migrate
	$(PYTHON) manage.py demo --quiet
	@# Embedded mode: this server is the only executor, so whatever was mid-run when it
	@# last stopped is finished now. (With REDIS_URL, rqworker hosts run recover_runs.)
	$(if $(REDIS_URL),,$(PYTHON) manage.py recover_runs --older-than 0)
	@echo
	@echo "  forge is running at http://$(HOST):$(PORT)/   (admin: http://$(HOST):$(PORT)/admin/)"
	@echo "  demo accounts (user / password):"
	@echo "    reviewer   / forge-reviewer"
	@echo "    supervisor / forge-supervisor"
	@echo "    auditor    / forge-auditor"
	@echo "    admin      / forge-admin      (superuser)"
	@echo
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) forgeui.asgi:application

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest
