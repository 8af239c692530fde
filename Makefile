# Two entry points for a fresh machine (see README):
#   make demo   — set up, start the local fleet, validate, compile and apply examples/
#   make test   — set up and run every test on 4 workers (the e2e tests build a local
#                 Kubernetes fleet once; each run starts two fleets, side by side)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
#: what outlives a clone: the fleet's binaries, the scanner, mypy's cache (as pincompile's)
CACHE  := $(or $(PINCOMPILE_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pincompile)

.PHONY: demo test setup packages scanner lint schemas openapi console-assets screenshots fleet-up fleet-down promtool clean

$(BIN)/pincompile: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# uv installs the same requirements as pip does, in a sixth of the time (9 s, not 59 s)
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test]'
	@# bytecode now, once: where PYTHONDONTWRITEBYTECODE is set nothing else writes it, and
	@# every command would compile its imports again (--help took 1.6-2.3 s)
	$(BIN)/python -m compileall -q -j 0 pincompile reconciler $(VENV)/lib > /dev/null
	@touch $@

setup: $(BIN)/pincompile

demo: setup
	$(BIN)/pincompile fleet up --profile default
	$(BIN)/pincompile validate examples
	$(BIN)/pincompile compile examples --out-dir out
	$(BIN)/pincompile apply examples
	@echo "manifests in out/; status any time: .venv/bin/pincompile status --live (fleet: make fleet-down)"
	@$(BIN)/python -m reconciler.fleet.demo examples

lint: setup
	$(BIN)/ruff check pincompile reconciler tests bench
	MYPY_CACHE_DIR=$(CACHE)/mypy $(BIN)/mypy pincompile reconciler

packages:
	sh hack/packages.sh

scanner: setup
	PYTHON=$(BIN)/python sh hack/scanner.sh >/dev/null

test: setup packages scanner lint
	$(BIN)/python -m pytest -q -n 4 --dist loadgroup

schemas: setup
	$(BIN)/pincompile schema --out-dir schemas

openapi: setup
	$(BIN)/python -m reconciler.api.openapi > docs/api/openapi.json

console-assets:
	sh hack/console-assets.sh

screenshots: setup packages
	$(BIN)/python hack/console_screenshots.py

# Prometheus's own promtool (hack/promtool), cached for the SLO rule tests (long: its
# service-discovery plugins pull in every cloud SDK; the tests always run hack/promrules)
promtool: setup
	PINCOMPILE_PROMTOOL=build $(BIN)/python -m pytest -q tests/reconciler/slo/test_rules.py

fleet-up: setup
	$(BIN)/pincompile fleet up

fleet-down: setup
	$(BIN)/pincompile fleet down

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
