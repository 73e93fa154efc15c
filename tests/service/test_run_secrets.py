"""A run's ``secrets`` (docs/run-spec.md#secrets; issue 26, item 1): the job reads each value at start
from a file only its user can read; the value reaches the job and none of the database (every
table), the rendered script, the audit log, the logs the gateway shows or the evidence bundles.
Real cluster, both database backends."""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import subprocess
import uuid
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import MetaData, select

from gateway.api import create_app
from gateway.core.slurm.states import RunState
from tests.conftest import JOB_ROOT
from tests.service.conftest import PROJECT, refresh_until, unique_tag


@pytest.fixture(scope="module")
def api(services):
    with TestClient(create_app(services=services)) as client:
        yield client


def _auth(tokens, user):
    return {"Authorization": f"Bearer {tokens[user]}"}


@pytest.fixture
def secret_file():
    """A root-owned 0600 file with a fresh value (the tests' jobs run as root), and the value."""
    value = f"s3cr3t-{secrets.token_hex(16)}"
    path = JOB_ROOT / f"secret-{uuid.uuid4().hex[:10]}"
    JOB_ROOT.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    yield path, value
    path.unlink(missing_ok=True)


def _database_text(services) -> str:
    """Every row of every table, as text."""
    metadata = MetaData()
    metadata.reflect(services.db.engine)
    with services.db.engine.connect() as conn:
        return "\n".join(
            repr(tuple(row)) for table in metadata.sorted_tables for row in conn.execute(select(table))
        )


def test_a_secret_reaches_the_job_and_nothing_the_gateway_keeps_or_shows(api, services, tokens, secret_file):
    path, value = secret_file
    expected = hashlib.sha256(value.encode()).hexdigest()
    # the job compares a digest of what it got, and prints only the verdict
    command = (
        f'[ "$(printf %s "$HF_TOKEN" | sha256sum | cut -d" " -f1)" = {expected} ] '
        "&& echo secret-ok || echo secret-wrong; env | grep -c HF_TOKEN= ; exit 0"
    )
    spec = {
        "name": "secret",
        "project": PROJECT,
        "queue": "cpu",
        "command": command,
        "workdir": "/tmp",
        "secrets": {"HF_TOKEN": {"file": str(path)}},
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1},
    }
    tester = _auth(tokens, "tester")
    made = api.post("/runs", json=spec, headers=tester)
    assert made.status_code == 201, made.text
    run = refresh_until(services, made.json()["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    logs = api.get(f"/runs/{run.id}/logs", headers=tester).json()["text"]
    assert logs == "secret-ok\n1\n", logs
    errors = api.get(f"/runs/{run.id}/logs", params={"stream": "stderr"}, headers=tester).json()["text"]

    script = run.script
    assert str(path) in script and "HF_TOKEN" in script  # the script names the file, not the value
    on_disk = "\n".join(p.read_text(errors="replace") for p in Path(run.run_dir).iterdir() if p.is_file())
    bundles = []
    for redact in ("false", "true"):
        response = api.get(f"/evidence/runs/{run.id}", params={"redact": redact}, headers=tester)
        assert response.status_code == 200, response.text
        with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
            bundles += [bundle.read(name).decode() for name in bundle.namelist()]
    assert any(run.id in text for text in bundles)
    audit = api.get("/audit", params={"limit": 1000}, headers=_auth(tokens, "admin"))
    assert audit.status_code == 200, audit.text
    places = {
        "database (all tables)": _database_text(services),
        "rendered script": script,
        "audit log": audit.text,
        "gw logs (stdout, stderr)": logs + errors,
        "run directory": on_disk,
        "evidence bundles (plain and redacted)": "\n".join(bundles),
        "run as the API shows it": api.get(f"/runs/{run.id}", headers=tester).text,
    }
    leaked = [where for where, text in places.items() if value in text]
    assert not leaked, f"the secret's value is in: {', '.join(leaked)}"


def test_the_script_does_not_depend_on_the_value(services, principal, secret_file):
    from gateway.core.spec.run_spec import build_spec

    path, _value = secret_file
    spec = build_spec(
        {
            "name": "secret",
            "project": PROJECT,
            "queue": "cpu",
            "command": "true",
            "secrets": {"HF_TOKEN": {"file": str(path)}},
        }
    )
    before = spec.spec_hash()
    path.write_text("another value\n")
    assert build_spec(spec.model_dump(mode="json")).spec_hash() == before


def test_a_file_the_jobs_user_cannot_read_is_refused_at_submission(api, tokens, secret_file):
    path, value = secret_file  # root's, 0600: alice's jobs run as gwtalice
    spec = {
        "name": "secret",
        "project": "pa",
        "queue": "cpu",
        "command": "true",
        "secrets": {"HF_TOKEN": {"file": str(path)}},
        "tags": [unique_tag()],
    }
    response = api.post("/runs", json=spec, headers=_auth(tokens, "alice"))
    assert response.status_code == 422, response.text
    (issue,) = response.json()["detail"]
    assert issue["loc"][-3:] == ["secrets", "HF_TOKEN", "file"], issue
    assert (
        "gwtalice, who cannot read this secret's file" in issue["msg"] and "Permission denied" in issue["msg"]
    )
    missing = {**spec, "secrets": {"HF_TOKEN": {"file": f"{path}-missing"}}}
    response = api.post("/runs", json=missing, headers=_auth(tokens, "alice"))
    assert response.status_code == 422 and "No such file" in response.text, response.text
    assert value not in response.text


def test_a_secret_name_must_be_a_free_variable(api, tokens):
    base = {"name": "secret", "project": PROJECT, "queue": "cpu", "command": "true"}
    for secrets_field, env, words in (
        ({"GW_TOKEN": {"file": "/etc/hostname"}}, {}, "reserved"),
        ({"HF_TOKEN": {"file": "relative/path"}}, {}, "absolute path"),
        ({"HF_TOKEN": {"file": "/etc/hostname"}}, {"HF_TOKEN": "x"}, "both env and secrets"),
    ):
        spec = {**base, "secrets": secrets_field, "env": env}
        response = api.post("/runs", json=spec, headers=_auth(tokens, "tester"))
        assert response.status_code == 422 and words in response.text, response.text


def test_a_secret_file_gone_by_the_start_fails_the_environment_step(api, services, tokens, secret_file):
    path, value = secret_file
    spec = {
        "name": "secret",
        "project": PROJECT,
        "queue": "cpu",
        "command": "echo command-ran",
        "workdir": "/tmp",
        "secrets": {"HF_TOKEN": {"file": str(path)}},
        "hold": True,
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1},
    }
    tester = _auth(tokens, "tester")
    made = api.post("/runs", json=spec, headers=tester)
    assert made.status_code == 201, made.text
    run = refresh_until(services, made.json()["id"], states={RunState.QUEUED, RunState.HELD})
    path.unlink()
    subprocess.run(["scontrol", "release", run.latest.job_id], check=True, timeout=30)
    run = refresh_until(services, run.id)
    assert run.state is RunState.FAILED, run.latest
    logs = api.get(f"/runs/{run.id}/logs", headers=tester).json()["text"]
    errors = api.get(f"/runs/{run.id}/logs", params={"stream": "stderr"}, headers=tester).json()["text"]
    assert "command-ran" not in logs
    assert "pre-flight step environment failed: the file of secret HF_TOKEN" in errors, errors
    steps = (Path(run.run_dir) / f"steps-{run.latest.job_id}.jsonl").read_text()
    assert '"step":"environment","status":"failed","detail":"secret file not readable: HF_TOKEN"' in steps
