"""The run service on the slurmrestd backend (GATEWAY_SLURM_BACKEND=rest), end to end on the real cluster.

The same database and site as the other service tests; only the Slurm backend differs. alice is
mapped to the OS user gwtalice, so her runs go through gwtalice's own slurmrestd.
"""

from __future__ import annotations

import os
import pwd
import shutil
import uuid
from pathlib import Path

import pytest

from gateway.adapters.slurm.rest import SlurmRest
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.wiring import build_services
from tests.service.conftest import refresh_until, unique_tag

pytestmark = pytest.mark.slurm


@pytest.fixture
def rest_services(settings, services):
    directory = Path(f"/tmp/gw-restd-{uuid.uuid4().hex[:8]}")
    built = build_services(
        settings.model_copy(update={"slurm_backend": "rest", "slurmrestd_socket_dir": directory}),
        upgrade=False,
    )
    yield built
    built.close()
    shutil.rmtree(directory, ignore_errors=True)


def spec(command: str, **extra):
    return build_spec(
        {"name": "viarest", "project": "pa", "queue": "cpu", "workdir": "/tmp", "tags": [unique_tag()],
         "command": command, "resources": {"mem_gb": 0.1}, **extra}
    )  # fmt: skip


def test_a_run_goes_through_the_users_own_daemon_and_is_followed_to_its_end(rest_services):
    backend = rest_services.clusters.get().backend
    assert isinstance(backend, SlurmRest)
    alice = rest_services.access.principal("alice", source="pytest")
    run = rest_services.runs.submit(spec('id -un; touch "$GW_RUN_DIR/made-by-job"; exit 4'), principal=alice)
    assert "gwtalice" in backend.daemons.running()
    ended = refresh_until(rest_services, run.id)
    assert ended.state is RunState.FAILED and ended.latest.exit_code == 4, ended.latest
    assert Path(ended.run_dir, f"stdout-{ended.latest.job_id}.log").read_text() == "gwtalice\n"
    assert os.stat(Path(ended.run_dir) / "made-by-job").st_uid == pwd.getpwnam("gwtalice").pw_uid
    (record,) = rest_services.slurm.accounting([ended.latest.job_id])
    assert record.user == "gwtalice" and record.exit_code == 4


def test_cancel_through_the_service_ends_the_job(rest_services):
    alice = rest_services.access.principal("alice", source="pytest")
    run = rest_services.runs.submit(spec("sleep 300"), principal=alice)
    refresh_until(rest_services, run.id, states={RunState.RUNNING, RunState.QUEUED})
    rest_services.runs.cancel(run.id, principal=alice)
    ended = refresh_until(rest_services, run.id)
    assert ended.state is RunState.CANCELLED


def test_a_batch_goes_through_the_users_daemon_over_kept_alive_connections(rest_services, monkeypatch):
    """A batch on slurmrestd: every run one job under the user's own daemon, each run exactly once,
    its job ids recorded together; the batch's sends share the daemon's kept-alive connections:
    12 runs sent 4 at a time open at most 4 connections to it (one per run without them)."""
    from gateway.adapters.slurm import rest_http
    from gateway.services.runs.batch_items import BatchItem

    opened: list[str] = []
    connect = rest_http._UnixConnection.connect

    def counted(conn: rest_http._UnixConnection) -> None:  # the real connect, counted
        opened.append(str(conn.path))
        connect(conn)

    alice = rest_services.access.principal("alice", source="pytest")
    warm = rest_services.runs.submit(spec("true", hold=True), principal=alice)  # starts the daemon
    rest_services.slurm.cancel(warm.latest.job_id)
    monkeypatch.setattr(rest_http._UnixConnection, "connect", counted)  # the daemon is up: count now
    monkeypatch.setattr(
        rest_services.runs, "settings", rest_services.settings.model_copy(update={"batch_submit_parallel": 4})
    )
    tag = unique_tag()
    items = [BatchItem(spec("true", hold=True, tags=[tag], params={"i": i})) for i in range(12)]
    outcome = rest_services.runs.submit_batch(items, principal=alice)
    try:
        assert outcome.failed == 0
        jobs = [o.run.latest.job_id for o in outcome.items]
        assert all(jobs) and len(set(jobs)) == 12
        for o in outcome.items:
            assert rest_services.slurm.find_by_tag(o.run.latest.tag) == [o.run.latest.job_id]
            assert o.run.latest.events[-1].to_state is RunState.QUEUED
        assert "gwtalice" in rest_services.clusters.get().backend.daemons.running()
        assert 1 <= len(opened) <= 4, f"{len(opened)} connections opened for 12 sends 4 at a time"
    finally:
        for o in outcome.items:
            if o.run and o.run.latest.job_id:
                rest_services.slurm.cancel(o.run.latest.job_id)
