"""Every "only", "never" and "the one place" of docs/architecture.md is a contract or a test.

A sentence (or table row) of the page that says one of them must match a
fragment of ``CLAIMS``, which names the import-linter contract (its id in
pyproject.toml) or the test file that checks it. A new claim without a check
fails here; so does a mapping whose sentence is gone or whose check does not exist.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
CLAIM = re.compile(r"(?<![-\w])(only|never|alone)\b|\bthe one place\b", re.IGNORECASE)  # not --test-only

# a fragment of the claim's sentence -> the contract id (pyproject.toml) or test file that checks it
CLAIMS = {
    "`core/eval` never imports `core/releases`": "core-eval-not-releases",
    "services never import a concrete runner": "services-protocols",
    "services never import ORM rows": "services-no-orm",
    "ops and audit services never import each other": "services-site-apart",
    "of the adapters only `files`, `provenance`": "client-side",
    "only the interfaces map errors to HTTP statuses": "status-table",
    "`subprocess` is imported by `adapters/runner.py` alone": "subprocess-runner",
    "`paramiko` is imported by `adapters/ssh.py` and `adapters/ssh_login.py` alone": "paramiko-ssh",
    "`prometheus_client` is imported by `adapters/prometheus.py` alone": "prometheus-one-module",
    "`cryptography` is imported by `core/evidence/signing.py` alone": "cryptography-signing",
    "`mlflow` is imported by `adapters/mlflow_registry.py` alone": "mlflow-one-module",
    "is imported by `api/docs_pages.py` alone": "docs-assets-one-module",
    "`scipy` and `statsmodels` are imported by `core/eval` alone": "stats-in-eval",
    "`numpy` is imported by `core/eval` and `store/eval/codec.py` alone": "numpy-eval",
    "SQLAlchemy and Alembic are imported by `gateway.store` alone": "sqlalchemy-store",
    "uvicorn by `cli/server` alone": "web-framework",
    "Typer and Rich by `gateway.cli` alone": "terminal-cli",
    "APScheduler by `gateway/scheduler.py` alone": "apscheduler-scheduler",
    "the three services handed the sbatch environment": "jinja2-templates",
    'says "only", "never" or "the one place" is mapped': "tests/unit/test_architecture_doc.py",
    "is the one place a program\n  starts (`subprocess-runner`)": "subprocess-runner",
    "`send` is the only writer of job ids besides the\nrefresh": "tests/service/test_crash.py",
}


def claim_sentences(text: str) -> list[str]:
    """The table rows and prose sentences (code blocks left out) that say only/never/the one place."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    units: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if all(line.startswith("|") for line in lines if line.strip()):
            units += lines  # a table: each row is one claim
        else:
            units += re.split(r"(?<=[.;:])\s+(?=[A-Z`*(-])", block)
    return [u for u in units if CLAIM.search(u)]


def fragment_of(sentence: str) -> list[str]:
    flat = " ".join(sentence.split())
    return [f for f in CLAIMS if " ".join(f.split()) in flat]


def checks() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"] for c in config["tool"]["importlinter"]["contracts"]}


def test_every_claim_of_the_page_has_its_check():
    unchecked = [s for s in claim_sentences(DOC.read_text()) if not fragment_of(s)]
    assert unchecked == [], "claims without a contract or test: add one, or reword"


def test_every_mapping_names_a_claim_on_the_page_and_an_existing_check():
    sentences = claim_sentences(DOC.read_text())
    contract_ids = checks()
    for fragment, check in CLAIMS.items():
        assert any(fragment in fragment_of(s) for s in sentences), f"no claim on the page says {fragment!r}"
        assert check in contract_ids or (ROOT / check).is_file(), f"{check!r} is no contract id and no test"


def test_a_new_claim_without_a_check_is_found():
    page = "The store never forgets a run.\n\n| x | the web alone renders pages |\n"
    assert [fragment_of(s) for s in claim_sentences(page)] == [[], []]
    assert claim_sentences("Nothing to see here.\n") == []
