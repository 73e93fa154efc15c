"""Secrets the site or a project holds, named by reference (docs/access.md#site-and-project-secrets;
issue 26, item 1): the site file says where a value lives (a file gw serve's user can read, or an
environment variable of gw serve), a run names the secret, and the value reaches the job's
environment, as the job's user, without being in the database, the script, the audit log, the logs
the gateway shows, the run directory once the run ended, or evidence bundles (their index.html
included). Real cluster, both database backends."""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import subprocess
import time
import uuid
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.site.schema import SiteConfig, parse_site
from gateway.core.site.secrets import delivered_path
from gateway.core.slurm.states import RunState
from gateway.errors import SpecError
from tests.conftest import JOB_ROOT
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag
from tests.service.test_run_secrets import _database_text

ENV_VAR = f"GWTEST_WANDB_{uuid.uuid4().hex[:8].upper()}"


@pytest.fixture(scope="module")
def api(services):
    with TestClient(create_app(services=services)) as client:
        yield client


def _auth(tokens, user):
    return {"Authorization": f"Bearer {tokens[user]}"}


def _with_secrets(
    site: SiteConfig, site_secrets: list[dict], project_secrets: dict[str, list[dict]]
) -> SiteConfig:
    data = site.model_dump(mode="json", exclude_defaults=True)
    data["secrets"] = site_secrets
    for project in data["projects"]:
        project["secrets"] = project_secrets.get(project["name"], [])
    return SiteConfig.model_validate(data)


@pytest.fixture(scope="module")
def held(services):
    """A site secret in a root-only file (for projects pa and test), a project secret of ``test`` in
    an environment variable of this process (gw serve's, here), leads only; the values."""
    site_value = f"site-{secrets.token_hex(16)}"
    env_value = f"env-{secrets.token_hex(16)}"
    JOB_ROOT.mkdir(parents=True, exist_ok=True)
    path = JOB_ROOT / f"held-{uuid.uuid4().hex[:10]}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # root:root 0600
    with os.fdopen(fd, "w") as handle:
        handle.write(site_value + "\n")
    os.environ[ENV_VAR] = env_value
    before = services.site.export(OPERATOR)
    wanted = _with_secrets(
        before,
        [{"name": "hf-token", "file": str(path), "projects": ["pa", PROJECT]}],
        {PROJECT: [{"name": "wandb", "env": ENV_VAR, "roles": ["lead"]}]},
    )
    services.site.apply(OPERATOR, wanted, sync_slurm=False)
    yield {"path": path, "site": site_value, "env": env_value}
    services.site.apply(OPERATOR, _with_secrets(services.site.export(OPERATOR), [], {}), sync_slurm=False)
    os.environ.pop(ENV_VAR, None)
    path.unlink(missing_ok=True)


def _check_command(var: str, value: str) -> str:
    """A job command that compares a digest of ``$var`` with ``value``'s and prints only the verdict."""
    expected = hashlib.sha256(value.encode()).hexdigest()
    return (
        f'[ "$(printf %s "${var}" | sha256sum | cut -d" " -f1)" = {expected} ] '
        f"&& echo {var}-ok || echo {var}-wrong; exit 0"
    )


def _spec(project: str, command: str, secrets_field: dict, **more) -> dict:
    return {
        "name": "held-secret",
        "project": project,
        "queue": "cpu",
        "command": command,
        "workdir": "/tmp",
        "secrets": secrets_field,
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1},
        **more,
    }


def _places(api, services, tokens, run, user) -> dict[str, str]:
    """Every place the gateway keeps or shows a run, as text."""
    headers = _auth(tokens, user)
    logs = api.get(f"/runs/{run.id}/logs", headers=headers).json()["text"]
    errors = api.get(f"/runs/{run.id}/logs", params={"stream": "stderr"}, headers=headers).json()["text"]
    bundles = []
    for redact in ("false", "true"):
        response = api.get(f"/evidence/runs/{run.id}", params={"redact": redact}, headers=headers)
        assert response.status_code == 200, response.text
        with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
            names = bundle.namelist()
            assert "index.html" in names, names
            bundles += [bundle.read(name).decode() for name in names]
    audit = api.get("/audit", params={"limit": 1000}, headers=_auth(tokens, "admin"))
    assert audit.status_code == 200, audit.text
    return {
        "database (all tables)": _database_text(services),
        "rendered script": run.script,
        "audit log": audit.text,
        "gw logs (stdout, stderr)": logs + errors,
        "evidence bundles (plain and redacted, index.html included)": "\n".join(bundles),
        "run as the API shows it": api.get(f"/runs/{run.id}", headers=headers).text,
    }


def _ended_and_harvested(services, run_id):
    run = refresh_until(services, run_id)
    services.harvester.harvest_due()
    return run


def test_a_site_secret_reaches_a_job_whose_user_cannot_read_its_file(api, services, tokens, held):
    # alice's jobs run as gwtalice, who cannot read the root-only file: the gateway delivers the value
    spec = _spec("pa", _check_command("HF_TOKEN", held["site"]), {"HF_TOKEN": {"site": "hf-token"}})
    made = api.post("/runs", json=spec, headers=_auth(tokens, "alice"))
    assert made.status_code == 201, made.text
    run = _ended_and_harvested(services, made.json()["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    places = _places(api, services, tokens, run, "alice")
    assert places["gw logs (stdout, stderr)"].startswith("HF_TOKEN-ok\n"), places["gw logs (stdout, stderr)"]
    assert delivered_path(run.run_dir, "HF_TOKEN") in run.script and str(held["path"]) not in run.script
    # once the run ended, the delivered file is gone from the run directory
    assert not Path(delivered_path(run.run_dir, "HF_TOKEN")).exists()
    places["run directory"] = "\n".join(
        p.read_text(errors="replace") for p in Path(run.run_dir).iterdir() if p.is_file()
    )
    leaked = [where for where, text in places.items() if held["site"] in text]
    assert not leaked, f"the secret's value is in: {', '.join(leaked)}"
    assert '"site": "hf-token"' in api.get(f"/runs/{run.id}", headers=_auth(tokens, "alice")).text.replace(
        '":"', '": "'
    )

    # a rerun keeps the reference, and the value is delivered again
    again = api.post(f"/runs/{run.id}/rerun", json={}, headers=_auth(tokens, "alice"))
    assert again.status_code == 201, again.text
    rerun = _ended_and_harvested(services, again.json()["id"])
    assert rerun.spec.secrets["HF_TOKEN"].site == "hf-token"
    assert rerun.state is RunState.SUCCEEDED, rerun.latest
    logs = api.get(f"/runs/{rerun.id}/logs", headers=_auth(tokens, "alice")).json()["text"]
    assert logs.startswith("HF_TOKEN-ok\n"), logs


def test_a_project_secret_from_gw_serves_environment_for_its_roles_only(api, services, tokens, held):
    spec = _spec(
        PROJECT, _check_command("WANDB_API_KEY", held["env"]), {"WANDB_API_KEY": {"project": "wandb"}}
    )
    made = api.post("/runs", json=spec, headers=_auth(tokens, "tester"))  # a lead of test
    assert made.status_code == 201, made.text
    run = _ended_and_harvested(services, made.json()["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    places = _places(api, services, tokens, run, "tester")
    assert places["gw logs (stdout, stderr)"].startswith("WANDB_API_KEY-ok\n")
    leaked = [where for where, text in places.items() if held["env"] in text]
    assert not leaked, f"the secret's value is in: {', '.join(leaked)}"

    # mia is a member of test, and the secret is for leads
    refused = api.post("/runs", json={**spec, "tags": [unique_tag()]}, headers=_auth(tokens, "mia"))
    assert refused.status_code == 422, refused.text
    (issue,) = refused.json()["detail"]
    assert issue["loc"][-3:] == ["secrets", "WANDB_API_KEY", "project"], issue
    assert "may be used by roles lead; your role in test is member" in issue["msg"], issue


def test_references_that_cannot_be_used_are_refused_at_submission(api, services, tokens, held):
    cases = [
        # a name nobody holds: the answer lists what the holder has
        ("alice", "pa", {"X": {"site": "nope"}}, "the site holds no secret 'nope'; it holds: hf-token"),
        # project pb is not among hf-token's projects
        ("bob", "pb", {"X": {"site": "hf-token"}}, "site secret hf-token is for projects pa, test, not pb"),
        # pa holds no project secrets (wandb is test's)
        ("alice", "pa", {"X": {"project": "wandb"}}, "project pa holds no secret 'wandb'; it holds: none"),
    ]
    for user, project, field, words in cases:
        response = api.post("/runs", json=_spec(project, "true", field), headers=_auth(tokens, user))
        assert response.status_code == 422 and words in response.text, (field, response.text)
    # the value's source is gone: gw serve's variable unset
    os.environ.pop(ENV_VAR)
    try:
        spec = _spec(PROJECT, "true", {"W": {"project": "wandb"}})
        response = api.post("/runs", json=spec, headers=_auth(tokens, "tester"))
        assert response.status_code == 422, response.text
        assert f"gw serve has no (or an empty) environment variable {ENV_VAR}" in response.text
    finally:
        os.environ[ENV_VAR] = held["env"]
    both = _spec(PROJECT, "true", {"W": {"project": "wandb", "site": "hf-token"}})
    response = api.post("/runs", json=both, headers=_auth(tokens, "tester"))
    assert response.status_code == 422 and "give exactly one of file" in response.text, response.text


def test_apply_checks_the_references_and_export_shows_them(services, held, tmp_path):
    exported = services.site.export(OPERATOR)
    (site_secret,) = exported.secrets
    assert site_secret.file == str(held["path"]) and site_secret.projects == ["pa", PROJECT]
    (project,) = [p for p in exported.projects if p.name == PROJECT]
    assert [(s.name, s.env, s.roles) for s in project.secrets] == [("wandb", ENV_VAR, ["lead"])]
    text = exported.model_dump_json()
    assert held["site"] not in text and held["env"] not in text
    # a file that is not there, or is no regular file: refused, naming the entry; nothing changes
    for bad, words in ((tmp_path / "missing", "No such file"), (tmp_path, "is not a regular file")):
        wanted = _with_secrets(exported, [{"name": "broken", "file": str(bad)}], {})
        with pytest.raises(SpecError) as caught:
            services.site.apply(OPERATOR, wanted, sync_slurm=False)
        assert caught.value.issues[0].path == "secrets.0.file", caught.value.issues
        assert words in str(caught.value), caught.value
    assert services.site.export(OPERATOR).secrets == exported.secrets


def _stdout_files(run) -> list[str]:
    return sorted(p.read_text() for p in Path(run.run_dir).glob("stdout-*.log"))


def test_a_retry_gets_the_value_again_and_the_file_goes_after_the_last_attempt(api, services, tokens, held):
    command = _check_command("HF_TOKEN", held["site"]).replace("exit 0", "exit 1")
    spec = _spec(
        "pa",
        command,
        {"HF_TOKEN": {"site": "hf-token"}},
        retry={"classes": ["user_code"], "max_attempts": 2, "backoff_s": 0},
    )
    made = api.post("/runs", json=spec, headers=_auth(tokens, "alice"))
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    run = refresh_until(services, run_id)
    delivered = Path(delivered_path(run.run_dir, "HF_TOKEN"))
    services.harvester.harvest_due()  # attempt 1 ended, a retry is due: the file stays for it
    assert delivered.exists() and oct(delivered.stat().st_mode & 0o777) == "0o600"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        services.retries.process_due()
        services.refresher.refresh()
        run = services.runs.store.get_run(run_id)
        if len(run.attempts) == 2 and run.latest.failure:
            break
        time.sleep(0.5)
    assert len(run.attempts) == 2 and run.latest.origin == "retry", run.attempts
    services.harvester.harvest_due()
    assert not delivered.exists()
    assert _stdout_files(run) == ["HF_TOKEN-ok\n", "HF_TOKEN-ok\n"], _stdout_files(run)


def test_a_slurm_requeue_runs_with_the_value_too(api, services, tokens, held):
    command = _check_command("HF_TOKEN", held["site"]).replace("; exit 0", "; sleep 6")
    spec = _spec("pa", command, {"HF_TOKEN": {"site": "hf-token"}})
    made = api.post("/runs", json=spec, headers=_auth(tokens, "alice"))
    assert made.status_code == 201, made.text
    body = made.json()
    refresh_until(services, body["id"], states={RunState.RUNNING})
    subprocess.run(["scontrol", "requeue", body["job_id"]], check=True, timeout=30)
    run = refresh_until(services, body["id"], timeout_s=180)
    services.harvester.harvest_due()
    assert [a.origin for a in run.attempts][-1] == "requeue" and run.state is RunState.SUCCEEDED, run.attempts
    logs = api.get(f"/runs/{run.id}/logs", headers=_auth(tokens, "alice")).json()["text"]
    assert logs.startswith("HF_TOKEN-ok\n"), logs
    assert not Path(delivered_path(run.run_dir, "HF_TOKEN")).exists()


def test_a_value_where_a_reference_goes_is_refused_and_never_echoed(api, services, tokens, held):
    value = f"pasted-{secrets.token_hex(8)}"
    spec = _spec(PROJECT, "true", {"HF_TOKEN": {"value": value}})
    response = api.post("/runs", json=spec, headers=_auth(tokens, "tester"))
    assert response.status_code == 422, response.text
    assert "value is no field of a secret's reference" in response.text and value not in response.text
    site = _with_secrets(services.site.export(OPERATOR), [], {})
    data = site.model_dump(mode="json", exclude_defaults=True)
    data["secrets"] = [{"name": "pasted", "value": value}]
    with pytest.raises(SpecError) as caught:
        parse_site(json.dumps(data))  # gw admin apply reads the file so
    assert "never the value" in str(caught.value) and value not in str(caught.value)
    assert all(value not in repr(i.value) for i in caught.value.issues)
