# One-line developer commands; README and CI use these same targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: up venv cluster cluster-if-down test test-unit lint bench clean

up: cluster ## venv + local Slurm cluster with accounting
	@echo
	@echo "The local Slurm cluster is up:"
	@sinfo
	@echo
	@echo "Next: make test"

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

test: cluster-if-down ## the whole suite, against the real local cluster
	$(BIN)/pytest

test-unit: venv
	$(BIN)/pytest tests/unit

lint: venv
	$(BIN)/ruff check gateway tests bench examples
	$(BIN)/ruff format --check gateway tests bench examples

bench: cluster-if-down
	$(BIN)/python -m bench.submit

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
