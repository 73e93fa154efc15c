"""Who a caller is: users without an OS user, root mapping, tokens that expire or are revoked, and
jobs that run as their user's OS account (tests/service/test_access.py: the permission matrix)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.services.site.auth import digest
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag


def test_users_without_an_os_user_cannot_submit(services):
    spec = build_spec({"name": "x", "project": PROJECT, "queue": "cpu", "command": "true"})
    with pytest.raises(Exception, match="no OS user"):
        services.runs.submit(spec, principal=services.access.principal("nomap"))


def test_root_mapping_needs_the_site_to_allow_it(database_url):
    with pytest.raises(Exception, match="allow_root_mapping"):
        parse_site("users: [{name: x, os_user: root}]")


def test_tokens_expire_and_revoke(app, services):
    secret, token = services.auth.issue_token(OPERATOR, "mia", name="short")
    headers = {"Authorization": f"Bearer {secret}"}
    assert app.get("/runs", headers=headers).status_code == 200
    services.auth.revoke(services.access.principal("mia"), token.id)
    response = app.get("/runs", headers=headers)
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    old = "gwt_" + "x" * 43
    services.access.add_token(
        user="mia",
        name="old",
        prefix=old[:12],
        token_sha256=digest(old),
        expires_at=datetime.now(UTC) - timedelta(1),
    )
    response = app.get("/runs", headers={"Authorization": f"Bearer {old}"})
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    stored = [t.prefix for t in services.access.tokens("mia")]
    assert secret not in str(stored) and secret[:12] in stored  # only a prefix and a digest are kept


def test_jobs_run_as_the_users_os_account(app, services, tokens):
    def submit(user, project):
        spec = {
            "name": "whoami",
            "project": project,
            "queue": "cpu",
            "workdir": "/tmp",
            "tags": [unique_tag()],
            "command": 'id -un; touch "$GW_RUN_DIR/made-by-job"',
            "resources": {"mem_gb": 0.1},
        }
        response = app.post("/runs", json=spec, headers={"Authorization": f"Bearer {tokens[user]}"})
        assert response.status_code == 201, response.text
        return response.json()

    alice_run = submit("alice", "pa")
    run = refresh_until(services, alice_run["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    assert app.get(f"/runs/{run.id}/logs", headers=alice).json()["text"] == "gwtalice\n"
    (record,) = services.slurm.accounting([run.latest.job_id])
    assert record.user == "gwtalice"
    import pwd

    uid = pwd.getpwnam("gwtalice").pw_uid
    assert os.stat(Path(run.run_dir) / "made-by-job").st_uid == uid
    assert os.stat(Path(run.run_dir) / f"stdout-{run.latest.job_id}.log").st_uid == uid
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    for path in (f"/runs/{run.id}", f"/runs/{run.id}/logs"):
        assert app.get(path, headers=bob).status_code == 404
    assert run.id not in [r["id"] for r in app.get("/runs", headers=bob).json()["items"]]
    response = app.post(
        "/runs", headers=bob, json={"name": "x", "project": "pa", "queue": "cpu", "command": "true"}
    )
    assert response.status_code == 404
