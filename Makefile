# forge: `make run` serves the dashboard with demo data, `make test` runs the checks.
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
HOST    ?= 127.0.0.1
PORT    ?= 8000
# Chromium comes from Debian (/usr/bin/chromium); never download Playwright's.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
# Python's bytecode cache (gitignored __pycache__) on, whatever the shell says: each of
# the suite's many processes (pytest workers, servers, commands, bench children) would
# otherwise compile every module again, and pytest rewrite every test module's asserts.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-deep setup migrate lint audit suite

$(PYTHON):
	python3 -m venv $(VENV)

# Reinstall only when the dependencies change. The bench extra (LangGraph) too: the suite
# runs every script in bench/ at a tiny size; and the langgraph extra, whose saver it tests
# with LangGraph's conformance suite. uv installs the same pins as pip would, in a fraction
# of pip's time; pip only brings uv itself. uv compiles the packages' bytecode at install,
# on every core: otherwise the suite's processes, starting side by side on a new venv,
# would each compile the same modules.
$(VENV)/.installed: pyproject.toml constraints.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet --no-compile uv -c constraints.txt
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PYTHON) \
		-e '.[dev,bench,langgraph]' -c constraints.txt
	touch $@

setup: $(VENV)/.installed

migrate: setup
	$(PYTHON) manage.py migrate --noinput

run: migrate
	$(PYTHON) manage.py demo --quiet
	@# Embedded mode: this server is the only executor, so whatever was mid-run when it
	@# last stopped is finished now. (With REDIS_URL, forge_worker hosts run recover_runs.)
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
	$(VENV)/bin/lint-imports

# Known vulnerabilities in the pinned versions (PyPI's advisory data) fail the build.
# Pins the service could not check (offline, or a registry mirror without advisory data)
# are counted in a warning: the audit then proves nothing, and says so.
AUDIT_OUT := $(VENV)/pip-audit.txt
audit: setup
	@$(VENV)/bin/pip-audit --requirement constraints.txt --no-deps --disable-pip \
		--progress-spinner off > $(AUDIT_OUT) 2>&1; status=$$?; \
	if grep -q "known vulnerabilit" $(AUDIT_OUT) && ! grep -q "No known vulnerabilities" $(AUDIT_OUT); then \
		cat $(AUDIT_OUT); exit 1; fi; \
	skipped=$$(grep -c "could not be audited" $(AUDIT_OUT)); \
	if [ "$$skipped" -gt 0 ]; then \
		echo "pip-audit: WARNING: $$skipped pins could not be checked ($(AUDIT_OUT))"; \
	elif [ $$status -ne 0 ]; then echo "pip-audit: WARNING: the audit did not run ($(AUDIT_OUT))"; \
	else echo "pip-audit: no known vulnerabilities"; fi

# One pytest worker per core, and one more: many tests wait on servers, workers and
# subprocesses they started, and the extra worker keeps the cores busy meanwhile.
# worksteal hands each worker a contiguous share of the tests and lets an idle one take
# the rest of another's queue, so the browser and bench modules at the front never leave
# one worker grinding alone at the end (load's first chunks stay with their worker). Not
# loadscope or loadgroup: both key their work by node id, and schemathesis gives all its
# API cases one node id, so all but one would silently not run. A module fixture (a
# browser module's live server, the cluster) may start again on the worker that took
# over part of its module.
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))
PYTEST  := $(VENV)/bin/pytest -n $(WORKERS) --dist worksteal

# The linters and the audit run beside the suite: the audit waits on the network for most
# of its run, and the linters (mypy without a cache, on a fresh clone) use the CPU the
# suite leaves while its tests wait on processes. Any of them failing fails the target.
test: setup
	@$(MAKE) --no-print-directory -j3 lint audit suite

suite: setup
	$(PYTEST)

# The same suite, hunting longer: many more generated examples, the full cluster load.
test-deep: setup
	@FORGE_DEEP=1 $(MAKE) --no-print-directory -j3 lint audit suite
