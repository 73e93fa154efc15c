# One-line developer commands; README and CI use these same targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Both local clusters when the second is set up (the playbook's slurm_second_cluster), else one (docs/poc.md)
POC_SITE ?= $(if $(wildcard /etc/slurm-gwlocal2/slurm.conf),examples/poc-site-two-clusters.yaml,examples/poc-site.yaml)
STAMP  := $(VENV)/.installed

.PHONY: up down poc venv cluster cluster-if-down test test-unit lint bench openapi clean

up: ## venv + local Slurm cluster with accounting + chromium + `gw serve` on 127.0.0.1:8000, each part timed
	@scripts/make-up

down: ## stop the `gw serve` that `make up` started (the cluster keeps running)
	@if [ -f var/gw-serve.pid ] && kill $$(cat var/gw-serve.pid) 2>/dev/null; then echo "gw serve stopped"; fi
	@rm -f var/gw-serve.pid

poc: ## the five acceptance scenarios against the gateway `make up` started (docs/poc.md); evidence in var/poc
	@scripts/poc-ready
	@echo "POC site file: $(POC_SITE)"
	$(BIN)/gw poc run --site $(POC_SITE) --out var/poc

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip "setuptools>=70" wheel
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q -j 0 gateway >/dev/null
	touch $@

cluster: venv ## install, configure and start Slurm 22.05: clusters gwlocal and gwlocal2 on one slurmdbd (idempotent; docs/cluster.md)
	$(BIN)/ansible-playbook -i ansible/inventory.ini ansible/cluster.yml

cluster-if-down: venv
	@scripts/cluster-ready || $(MAKE) cluster

test: cluster-if-down ## the whole suite, against the real local cluster (and PostgreSQL, and an sshd)
	@scripts/postgres-ready
	@scripts/sshd-ready
	@scripts/chromium-ready >/dev/null
	@# bytecode, as an installed wheel has it: under PYTHONDONTWRITEBYTECODE every gw the tests start would compile its modules again
	@$(BIN)/python -m compileall -q -j 0 gateway bench tests examples >/dev/null
	$(BIN)/pytest -n 3 --dist loadfile -m "not exclusive" --durations=20
	$(BIN)/pytest -m exclusive --durations=10

test-unit: venv
	$(BIN)/pytest tests/unit

lint: venv
	$(BIN)/ruff check gateway tests bench examples eval accounting
	$(BIN)/ruff format --check gateway tests bench examples eval accounting
	$(BIN)/lint-imports
	$(BIN)/mypy gateway

bench: cluster-if-down ## gw start-up, submit (service, API in-process and as its own server, mapped user, 1,000-run bursts vs sbatch in three server configurations; gw serve CPU per run one by one and in a 1,000-run batch), over SSH vs local, refresh (10,000 attempts), dataset registration (2 GiB), gate (100,000 samples x 10 tasks), web run list (10,000 runs), accounting ingest (100,000 sacct lines, twice), reports (1,000,000 accounting rows), the hand-off (a move with MLflow and 3 webhooks vs without; deliveries per second)
	@scripts/sshd-ready
	$(BIN)/python -m bench.startup 10
	$(BIN)/python -m bench.submit 50
	$(BIN)/python -m bench.submit_rest 50
	$(BIN)/python -m bench.batch 1000
	$(BIN)/python -m bench.ssh 30
	$(BIN)/python -m bench.refresh 10000 500
	$(BIN)/python -m bench.datasets 2
	$(BIN)/python -m bench.gate 100000 10
	$(BIN)/python -m bench.web 10000
	$(BIN)/python -m bench.accounting 100000
	$(BIN)/python -m bench.reports 1000000
	$(BIN)/python -m bench.handoff 50

openapi: venv ## regenerate docs/openapi.json from the code
	$(BIN)/python -m gateway.api.openapi > docs/openapi.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info var
