# streamviz: `make run` serves the app on the embedded SQLite store (and installs the client
# lenses beside it, in the background, when they are not installed yet); `make test` installs
# what the tests need (Python packages, Debian's chromium, PostgreSQL's server binaries, the
# upstream npm package, axe-core for the accessibility audit, the client lenses) and runs the
# whole suite, the store tests on SQLite and on a throwaway PostgreSQL.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
DB     ?= data/streamviz.sqlite3
WORKERS ?= 1
UPSTREAM ?=
EMBED_ORIGINS ?=
# UPSTREAM='https://api.openai.com' (or 'NAME=URL ...'): `make run` also records through /proxy/NAME/.
LENS_LOG ?= data/lens-install.log
# Where `make run`'s background install of the client lenses writes its progress (the clients
# page shows it while a library is missing).
PIP_QUIET ?= --quiet
SUBMAKE = $(MAKE)
# `make -n run` must not start the install: make runs recipe lines naming $(MAKE) even under -n.
ALLOWED_HOSTS ?=
# ALLOWED_HOSTS='streamviz.lan *.example.com': host names answered besides localhost (and HOST).
# EMBED_ORIGINS='https://wiki.example.com ...': those sites' pages may frame /embed/... (a slide, a wiki).

.PHONY: run test install install-test compile pure chromium postgres upstream a11y clients lint typecheck pytest bench clean

# DB may be a file path (its folder is created) or a postgresql:// URL.
# The server starts at once; the lenses (`make clients`) install beside it when they are not
# installed yet, their progress in $(LENS_LOG), and each clients page finds them once they are.
# The server runs the core the build made, as the CLI does (compiled where a C compiler is).
run: $(VENV)/.installed compile
	@if $(SUBMAKE) -s -q $(LENSES_READY) 2>/dev/null; then rm -f '$(LENS_LOG)'; else \
	  echo "streamviz: installing the client lenses in the background: $(LENS_LOG)"; \
	  sh scripts/install-lenses.sh '$(LENS_LOG)' $(SUBMAKE) --no-print-directory clients PIP_QUIET= & \
	fi
	$(BIN)/streamviz serve --host $(HOST) --port $(PORT) --db '$(DB)' --workers $(WORKERS) \
	  --lens-install-log '$(LENS_LOG)' \
	  $(foreach u,$(UPSTREAM),--upstream '$(u)') \
	  $(if $(strip $(ALLOWED_HOSTS)),--allowed-hosts '$(strip $(ALLOWED_HOSTS))') \
	  $(if $(strip $(EMBED_ORIGINS)),--embed-origins '$(strip $(EMBED_ORIGINS))')

test: install-test compile lint typecheck pytest

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test chromium postgres upstream a11y clients

# The editable install's build compiles the core (hatch_build.py); the later installs build
# with the venv's own hatchling and mypyc (the `compile` extra), and find the core built.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[compile]'
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet --no-build-isolation -e '.[test]'
	touch $@

# The core's hot modules, compiled with mypyc by the editable install's build (hatch_build.py,
# webapp/compiled.py): built again when the checkout does not hold what its record says, made
# from its sources as they are (an edited source, a module added); then the record's first
# line says what the build made (compiled, or pure Python and why).
CORE_RECORD := webapp/core/compiled.sha256
CURRENT = $(BIN)/python -P -c 'import sys; sys.path.insert(0, "."); import webapp.compiled as c; sys.exit(not c.current())'

compile: $(VENV)/.installed
	@$(CURRENT) || $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@echo "streamviz core: $$(head -n 1 $(CORE_RECORD))"

# The package as its pure-Python wheel installs it (no build hook: nothing compiled), for the
# second pass of the tests.
PURE := build/pure

pure: $(VENV)/.installed
	rm -rf $(PURE)
	HATCH_BUILD_NO_HOOKS=true $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --target $(PURE) .

# Debian's Chromium drives the browser tests (Playwright cannot download its own browser here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# PostgreSQL's server binaries: the tests start a throwaway server of their own from them
# (tests/pgserver.py), as an unprivileged user, in a temporary folder, on a Unix socket.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing Debian's postgresql-15"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && { \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql-15 || \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql; }; }

# The published upstream assembler, the live reference for the exact-key policy.
upstream: tests/upstream/node_modules/.package-lock.json

tests/upstream/node_modules/.package-lock.json: tests/upstream/package.json tests/upstream/package-lock.json
	cd tests/upstream && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# axe-core, which the browser tests inject into pages to audit them (tests/browser/test_a11y.py).
a11y: tests/a11y/node_modules/.package-lock.json

tests/a11y/node_modules/.package-lock.json: tests/a11y/package.json tests/a11y/package-lock.json
	cd tests/a11y && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The client libraries `streamviz clients` runs as lenses (versions: webapp/lenses/pins.py):
# the Python ones as the extra streamviz[clients], the Node ones in the lenses' own npm folder.
LENSES_NODE := webapp/lenses/node
LENSES_READY := $(VENV)/.installed-clients $(LENSES_NODE)/node_modules/.package-lock.json

clients: $(LENSES_READY)

$(VENV)/.installed-clients: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install $(PIP_QUIET) --no-build-isolation -e '.[clients]'
	touch $@

$(LENSES_NODE)/node_modules/.package-lock.json: $(LENSES_NODE)/package.json $(LENSES_NODE)/package-lock.json
	cd $(LENSES_NODE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy --strict webapp

# The whole suite on the compiled core, then the core's tests on the pure-Python wheel's
# package (first on sys.path; the tests themselves appended from the checkout), as a machine
# without a C compiler installs it (STREAMVIZ_CORE: what tests/test_compiled.py checks is loaded).
pytest: compile pure
	STREAMVIZ_CORE=compiled $(BIN)/pytest -q
	STREAMVIZ_CORE=interpreted PYTHONPATH=$(PURE) $(BIN)/pytest -q --import-mode=append tests/core tests/test_compiled.py

bench: compile
	$(BIN)/python bench/bench.py

clean:
	rm -rf build $(CORE_RECORD); find webapp -name '*.so' -delete
	rm -rf $(VENV) tests/upstream/node_modules tests/a11y/node_modules $(LENSES_NODE)/node_modules .mypy_cache .ruff_cache .pytest_cache
