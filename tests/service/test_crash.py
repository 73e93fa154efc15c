"""Exactly-once submission across a crash of the submitting process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.domain import RunFilter
from gateway.core.slurm.states import RunState
from tests.service.conftest import PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


def crash_submit(settings, when: str) -> str:
    """Run the driver until it kills itself; return the tag of its run."""
    tag = unique_tag()
    spec = {
        "name": "crash",
        "project": PROJECT,
        "queue": "cpu",
        "command": "sleep 1",
        "workdir": "/tmp",
        "tags": [tag],
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.service.crash_driver",
            settings.database_url,
            str(settings.runs_dir),
            when,
            json.dumps(spec),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return tag


def test_killed_after_sbatch_is_adopted_exactly_once(settings, services, slurm):
    tag = crash_submit(settings, "after")
    (run,) = services.runs.store.list_runs(RunFilter(tag=tag)).items
    attempt = run.attempts[0]
    assert attempt.state is RunState.SUBMITTING and attempt.job_id is None
    jobs = slurm.find_by_tag(attempt.tag)
    assert len(jobs) == 1, "sbatch ran once before the kill"
    past_grace(settings, attempt)
    with TestClient(create_app(services=services)):  # a restart: start-up reconciliation runs
        pass
    adopted = services.runs.store.get_run(run.id).latest
    assert adopted.job_id == jobs[0] and adopted.state is RunState.QUEUED
    assert adopted.events[-1].source == "reconcile"
    assert slurm.find_by_tag(attempt.tag) == jobs, "nothing was submitted again"
    assert refresh_until(services, run.id).state is RunState.SUCCEEDED


def test_killed_before_sbatch_is_marked_never_submitted(settings, services, slurm):
    tag = crash_submit(settings, "before")
    (run,) = services.runs.store.list_runs(RunFilter(tag=tag)).items
    attempt = run.attempts[0]
    assert attempt.state is RunState.SUBMITTING
    past_grace(settings, attempt)
    with TestClient(create_app(services=services)):
        pass
    latest = services.runs.store.get_run(run.id).latest
    assert latest.state is RunState.NEVER_SUBMITTED and "never submitted" in latest.reason
    assert slurm.find_by_tag(attempt.tag) == []


def test_periodic_reconcile_leaves_young_submissions_alone(settings, services):
    tag = crash_submit(settings, "before")
    (run,) = services.runs.store.list_runs(RunFilter(tag=tag)).items
    report = services.refresher.reconcile()  # younger than the grace period: its sbatch may be in flight
    assert run.attempts[0].tag not in report.never_submitted
    assert services.runs.store.get_run(run.id).state is RunState.SUBMITTING
    past_grace(settings, run.attempts[0])
    services.refresher.reconcile()
    assert services.runs.store.get_run(run.id).state is RunState.NEVER_SUBMITTED


def past_grace(settings, attempt) -> None:
    """Wait until ``attempt`` is older than the submit grace period."""
    left = settings.submit_grace_s - (datetime.now(UTC) - attempt.created_at).total_seconds()
    time.sleep(max(left, 0) + 0.2)


def test_killed_after_a_retrys_sbatch_the_retry_is_adopted_exactly_once(settings, services, principal, slurm):
    from datetime import timedelta

    from gateway.core.spec.run_spec import build_spec

    run = services.runs.submit(
        build_spec(
            {
                "name": "retrycrash",
                "project": PROJECT,
                "queue": "cpu",
                "command": "exit 1",
                "workdir": "/tmp",
                "tags": [unique_tag()],
            }
        ),
        principal=principal,
    )
    failed = refresh_until(services, run.id).latest
    # The policy's decision, due now (as for a node failure); the retry's submission is the real path.
    services.runs.store.set_failure(
        failed.id,
        {
            "class": "node_failure",
            "summary": "test",
            "action": "none",
            "evidence": {},
            "retry": {"retry": True, "why": "test", "exclude_nodes": []},
        },
        retry_at=datetime.now(UTC) - timedelta(seconds=1),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.service.crash_driver",
            settings.database_url,
            str(settings.runs_dir),
            "after",
            "retry",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    retry = services.runs.store.get_run(run.id).latest
    assert retry.number == 2 and retry.origin == "retry" and retry.state is RunState.SUBMITTING
    jobs = slurm.find_by_tag(retry.tag)
    assert len(jobs) == 1
    past_grace(settings, retry)
    services.refresher.reconcile()
    adopted = services.runs.store.get_run(run.id).latest
    assert adopted.job_id == jobs[0] and slurm.find_by_tag(retry.tag) == jobs
    assert services.runs.store.due_retries(datetime.now(UTC)) == []  # nothing left to retry twice
