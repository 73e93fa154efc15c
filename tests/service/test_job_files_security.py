"""Logs are read as the job's OS user: no byte of a file that user may not read comes back.

The attacks of the security review, on the real cluster and the real run host:
a run's ``stdout`` pointed at a root-only file, at ``/proc/self/environ``, at
another project's run output, or at a FIFO (one request must never hold a
thread hostage). ``alice`` maps to the real OS user ``gwtalice``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.access.values import Principal
from tests.conftest import JOB_ROOT
from tests.service.conftest import refresh_until, unique_tag
from tests.service.gw_serve import gw_serve

pytestmark = pytest.mark.slurm
SECRET = "the root-only secret 7f3a\n"


@pytest.fixture(scope="module")
def api(services, tokens):
    with TestClient(create_app(services=services)) as client:
        yield client


@pytest.fixture
def shared_dir() -> Path:
    """A world-writable directory (like /tmp) holding a root-only file and a FIFO."""
    path = JOB_ROOT / f"sec-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    path.chmod(0o1777)
    secret = path / "secret.txt"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    os.mkfifo(path / "fifo", 0o666)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def held(project: str, **changes) -> dict:
    base = {
        "name": "sec",
        "project": project,
        "queue": "cpu",
        "command": "true",
        "workdir": "/tmp",
        "hold": True,
        "tags": [unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 2},
    }
    return {**base, **changes}


def auth(tokens: dict[str, str], user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[user]}"}


def test_a_root_only_file_as_stdout_gives_its_reader_nothing(api, services, tokens, shared_dir):
    response = api.post(
        "/runs", json=held("pa", stdout=str(shared_dir / "secret.txt")), headers=auth(tokens, "alice")
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    try:
        for reader in ("alice", "admin"):  # even an admin reads a log as the job's user
            chunk = api.get(f"/runs/{run_id}/logs", headers=auth(tokens, reader)).json()
            assert chunk["text"] == "" and "ermission denied" in chunk["problem"], chunk
            assert "secret" not in str(chunk).replace("secret.txt", "")
        viewer = Principal(user="pa-viewer", is_admin=False, roles={"pa": "viewer"}, source="pytest")
        chunk = services.logs.read(run_id, principal=viewer, offset_bytes=0)
        assert chunk.text == "" and chunk.problem and "7f3a" not in chunk.text
    finally:
        api.post(f"/runs/{run_id}/cancel", headers=auth(tokens, "alice"))


@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/1/environ", "/dev/zero", "/sys/kernel/x"])
def test_pseudo_files_are_refused_at_submission(api, tokens, target):
    response = api.post("/runs", json=held("test", stdout=target), headers=auth(tokens, "tester"))
    assert response.status_code == 422, response.text
    (issue,) = response.json()["detail"]
    assert issue["loc"] == ["body", "stdout"] and "not a place for job output" in issue["msg"]


def test_a_directory_the_job_user_cannot_write_is_refused(api, tokens):
    response = api.post("/runs", json=held("pa", stderr="/root/out-%j.log"), headers=auth(tokens, "alice"))
    assert response.status_code == 422
    (issue,) = response.json()["detail"]
    assert issue["loc"] == ["body", "stderr"] and "gwtalice" in issue["msg"] and "/root" in issue["msg"]


def test_another_projects_run_output_stays_out_of_reach(api, services, tokens):
    bob = api.post(
        "/runs",
        json={**held("pb", command="echo bob-private-42", hold=False)},
        headers=auth(tokens, "bob"),
    ).json()
    refresh_until(services, bob["id"])
    bob_log = api.get(f"/runs/{bob['id']}/logs", headers=auth(tokens, "bob")).json()
    assert "bob-private-42" in bob_log["text"]
    assert Path(bob["run_dir"]).stat().st_mode & 0o077 == 0  # run directories are private to their user
    response = api.post("/runs", json=held("pa", stdout=bob_log["path"]), headers=auth(tokens, "alice"))
    assert response.status_code == 422 and "gwtalice" in response.text
    assert api.get(f"/runs/{bob['id']}/logs", headers=auth(tokens, "alice")).status_code == 404


def test_a_fifo_as_stdout_is_refused_without_blocking(api, tokens, shared_dir):
    response = api.post(
        "/runs", json=held("pa", stdout=str(shared_dir / "fifo")), headers=auth(tokens, "alice")
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    try:
        started = time.monotonic()
        chunk = api.get(f"/runs/{run_id}/logs", headers=auth(tokens, "alice")).json()
        assert time.monotonic() - started < 5
        assert chunk["text"] == "" and "not a regular file" in chunk["problem"]
    finally:
        api.post(f"/runs/{run_id}/cancel", headers=auth(tokens, "alice"))


@pytest.mark.exclusive
def test_forty_fifo_log_reads_do_not_freeze_the_server(tmp_path, shared_dir):
    """A real gw serve (uvicorn, its thread pools): /healthz answers within 1 s throughout."""
    with gw_serve(tmp_path, prefix="fifo", users=("alice",)) as serve:
        headers = {"Authorization": f"Bearer {serve.tokens['alice']}"}
        with httpx.Client(base_url=serve.url, headers=headers, timeout=30) as client:
            created = client.post("/runs", json=held("pa", stdout=str(shared_dir / "fifo")))
            assert created.status_code == 201, created.text
            run_id = created.json()["id"]
            results: list[int] = []

            def read() -> None:
                with httpx.Client(base_url=serve.url, headers=headers, timeout=60) as own:
                    results.append(own.get(f"/runs/{run_id}/logs").status_code)

            readers = [threading.Thread(target=read) for _ in range(40)]
            for thread in readers:
                thread.start()
            health_s = []
            for _ in range(5):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                health_s.append(time.monotonic() - started)
            for thread in readers:
                thread.join(timeout=60)
            client.post(f"/runs/{run_id}/cancel")
        assert max(health_s) < 1.0, health_s
        assert len(results) == 40 and set(results) <= {200, 503}, results
        assert results.count(200) >= 1
