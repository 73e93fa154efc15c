# One-line developer commands; README and CI use these same targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: up down venv cluster cluster-if-down test test-unit lint bench openapi clean

up: cluster ## venv + local Slurm cluster with accounting + `gw serve` on 127.0.0.1:8000
	@sinfo
	@scripts/gw-up

down: ## stop the `gw serve` that `make up` started (the cluster keeps running)
	@if [ -f var/gw-serve.pid ] && kill $$(cat var/gw-serve.pid) 2>/dev/null; then echo "gw serve stopped"; fi
	@rm -f var/gw-serve.pid

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

cluster: venv ## install, configure and start Slurm 22.05 (idempotent)
	$(BIN)/ansible-playbook -i ansible/inventory.ini ansible/cluster.yml

cluster-if-down: venv
	@scripts/cluster-ready || $(MAKE) cluster

test: cluster-if-down ## the whole suite, against the real local cluster (and PostgreSQL)
	@scripts/postgres-ready
	$(BIN)/pytest

test-unit: venv
	$(BIN)/pytest tests/unit

lint: venv
	$(BIN)/ruff check gateway tests bench examples
	$(BIN)/ruff format --check gateway tests bench examples

bench: cluster-if-down ## submit (service, API vs sbatch), refresh (10,000 attempts), dataset registration (2 GiB)
	$(BIN)/python -m bench.submit 50
	$(BIN)/python -m bench.refresh 10000 500
	$(BIN)/python -m bench.datasets 2

openapi: venv ## regenerate docs/openapi.json from the code
	$(BIN)/python -m gateway.api.openapi > docs/openapi.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info var
