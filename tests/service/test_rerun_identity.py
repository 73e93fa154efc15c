"""A rerun never borrows another person's identity (issue 26, item 2), on the real cluster and both
databases: someone else's rerun runs as the run's owner (the caller recorded as the one who asked),
only a lead may ask for it and only resources and scheduling may change; running the owner's code
under one's own OS user is the explicit, audited "as me" rerun, with the command on record.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from tests.service.conftest import OPERATOR, PROJECT, SITE, refresh_until, unique_tag

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def project(services):
    """A project of its own with a Slurm account of its own (the site file's apply, as an admin
    would): alice (OS user gwtalice) a member, mia (root) its lead, tester (root) a member."""
    name = f"rr{uuid.uuid4().hex[:8]}"
    account = services.access.project(PROJECT).slurm_account
    site = SITE.format(account=account) + (
        f"  - name: {name}\n"
        f"    slurm_account: {account}r\n"
        "    members: [{user: alice, role: member}, {user: mia, role: lead}, {user: tester, role: member}]\n"
        "    queues: [{name: cpu, partition: cpu}]\n"
    )
    services.site.apply(OPERATOR, parse_site(site))
    return name


@pytest.fixture(scope="module")
def api(services, tokens):
    with TestClient(create_app(services=services)) as client:
        yield lambda user: {"Authorization": f"Bearer {tokens[user]}"}, client


def alices_run(api, project) -> dict:
    headers, client = api
    spec = {
        "name": "whoami",
        "project": project,
        "queue": "cpu",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "command": "id -un",
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }
    response = client.post("/runs", json=spec, headers=headers("alice"))
    assert response.status_code == 201, response.text
    return response.json()


def test_a_leads_rerun_of_a_members_run_runs_as_the_member(services, api, project):
    headers, client = api
    parent = alices_run(api, project)
    response = client.post(
        f"/runs/{parent['id']}/rerun", json={"set": ["resources.mem_gb=0.2"]}, headers=headers("mia")
    )
    assert response.status_code == 201, response.text
    child = response.json()
    assert (child["os_user"], child["submitter"], child["requested_by"]) == ("gwtalice", "alice", "mia")
    assert child["parent_run_id"] == parent["id"]
    run = refresh_until(services, child["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    assert client.get(f"/runs/{run.id}/logs", headers=headers("mia")).json()["text"] == "gwtalice\n"
    (record,) = services.slurm.accounting([run.latest.job_id])
    assert record.user == "gwtalice"  # Slurm ran it as the owner, not as mia's root
    (event,) = [
        e
        for e in services.audit.events(services.access.principal("mia"), project=project).items
        if e.target_id == run.id
    ]
    assert event.actor == "mia" and event.action == "run.rerun"
    assert (event.after["runs_as"], event.after["requested_by"], event.after["os_user"]) == (
        "alice",
        "mia",
        "gwtalice",
    )


def test_a_rerun_as_the_owner_may_not_change_what_runs(api, project):
    headers, client = api
    parent = alices_run(api, project)
    for change in ("command=id -un; cat /etc/shadow", "env.X=one", "venv=/tmp/v", "workdir=/root"):
        response = client.post(f"/runs/{parent['id']}/rerun", json={"set": [change]}, headers=headers("mia"))
        assert response.status_code == 403, (change, response.text)
        detail = response.json()["detail"]
        assert "would run code of your choosing as alice" in detail and "as_me" in detail, detail


def test_a_member_may_not_rerun_as_another_member_and_as_me_runs_as_themselves_audited(
    services, api, project
):
    headers, client = api
    parent = alices_run(api, project)
    refused = client.post(f"/runs/{parent['id']}/rerun", json={"set": []}, headers=headers("tester"))
    assert refused.status_code == 403, refused.text
    assert "runs as alice (gwtalice), which needs lead" in refused.json()["detail"]
    assert "--as-me" in refused.json()["detail"]
    response = client.post(
        f"/runs/{parent['id']}/rerun", json={"set": [], "as_me": True}, headers=headers("tester")
    )
    assert response.status_code == 201, response.text
    child = response.json()
    assert (child["os_user"], child["submitter"], child["requested_by"]) == ("root", "tester", None)
    (event,) = [
        e
        for e in services.audit.events(services.access.principal("mia"), project=project).items
        if e.target_id == child["id"]
    ]
    assert event.actor == "tester"
    assert (
        event.after["as_me"] is True
        and event.after["owner"] == "alice"
        and event.after["runs_as"] == "tester"
    )
    assert event.after["command"] == "id -un"
    run = refresh_until(services, child["id"])
    assert run.state is RunState.SUCCEEDED, run.latest
    assert client.get(f"/runs/{run.id}/logs", headers=headers("tester")).json()["text"] == "root\n"


def test_the_owners_own_rerun_runs_as_the_owner(api, project):
    headers, client = api
    parent = alices_run(api, project)
    response = client.post(
        f"/runs/{parent['id']}/rerun", json={"set": ["command=id -un; true"]}, headers=headers("alice")
    )
    assert response.status_code == 201, response.text
    child = response.json()
    assert (child["os_user"], child["submitter"], child["requested_by"]) == ("gwtalice", "alice", None)


def test_an_owner_who_left_the_project_is_not_run_as(services, api, project):
    headers, client = api
    parent = alices_run(api, project)
    found = services.access.project(project)
    services.access.put_project(replace(found, members=[m for m in found.members if m.user != "alice"]))
    try:
        response = client.post(f"/runs/{parent['id']}/rerun", json={"set": []}, headers=headers("mia"))
        assert response.status_code == 403, response.text
        assert "owner alice may no longer submit" in response.json()["detail"]
    finally:
        services.access.put_project(found)
