"""Exactly-once submission across a crash of the submitting process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.slurm.tags import attempt_tag
from gateway.core.spec.run_spec import build_spec
from tests.service.conftest import PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


def crash(settings, when: str, what: str, note: Path | None = None) -> None:
    """Run the driver on ``what`` (a spec's JSON, or ``retry``) until it kills itself at ``when``."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.service.crash_driver",
            settings.database_url,
            str(settings.runs_dir),
            when,
            what,
            *([str(note)] if note else []),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def crash_submit(settings, when: str, note: Path | None = None) -> str:
    """Run the driver on a new run until it kills itself; return the (gateway) tag of its run."""
    tag = unique_tag()
    spec = {
        "name": "crash",
        "project": PROJECT,
        "queue": "cpu",
        "command": "sleep 1",
        "workdir": "/tmp",
        "tags": [tag],
    }
    crash(settings, when, json.dumps(spec), note)
    return tag


def orphaned_sbatch(note: Path) -> str:
    """The attempt tag of the sbatch the driver left when it died (from ``note``), once that sbatch
    (or the runuser before it) has ended: it had its stdin cut, so it read no script. A submission
    from the script's file has no sbatch before its send (pid None): nothing to wait for."""
    written = json.loads(note.read_text())
    if written["pid"] is None:
        return written["comment"].split()[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _gone(written["pid"]):
        time.sleep(0.1)
    assert _gone(written["pid"]), f"the orphaned sbatch {written['pid']} is still running"
    return written["comment"].split()[0]


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie nobody reaps counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


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


def test_killed_after_sbatch_started_before_the_commit_leaves_nothing(settings, services, slurm, tmp_path):
    note = tmp_path / "sbatch.json"
    tag = crash_submit(settings, "started", note)
    assert services.runs.store.list_runs(RunFilter(tag=tag)).items == [], "nothing was committed"
    sbatch_tag = orphaned_sbatch(note)
    assert slurm.find_by_tag(sbatch_tag) == [], "the sbatch got no script, so it queued nothing"


def due_retry(services, principal):
    """A run whose first attempt failed and whose retry is due now; returns the run."""
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
    return run


def due(services, run):
    """The attempts of ``run`` whose retry is due now."""
    return [a for a in services.runs.store.due_retries(datetime.now(UTC)) if a.run_id == run.id]


@pytest.mark.parametrize("when", ["started", "before", "after"])
def test_a_retry_killed_at_any_point_of_its_submission_yields_one_job_and_one_record(
    settings, services, principal, slurm, tmp_path, when
):
    run = due_retry(services, principal)
    tag = attempt_tag(run.id, 2)
    note = tmp_path / "sbatch.json"
    crash(settings, when, "retry", note)
    assert orphaned_sbatch(note) == tag
    attempts = services.runs.store.get_run(run.id).attempts
    if when == "started":
        # sbatch was running, the retry's attempt not yet committed: no record, no job; still due
        assert [a.number for a in attempts] == [1]
        assert slurm.find_by_tag(tag) == []
        assert [a.number for a in due(services, run)] == [1]
        assert tag in services.retries.process_due()  # the next cycle submits it, once
        retry = services.runs.store.get_run(run.id).latest
        assert retry.number == 2 and retry.state is RunState.QUEUED and retry.job_id
        assert slurm.find_by_tag(tag) == [retry.job_id]
        return
    retry = attempts[-1]
    assert len(attempts) == 2 and retry.tag == tag and retry.origin == "retry"
    assert retry.state is RunState.SUBMITTING and retry.job_id is None
    jobs = slurm.find_by_tag(tag)
    assert len(jobs) == (1 if when == "after" else 0), "sbatch queued the job only if it had the script"
    past_grace(settings, retry)
    services.refresher.reconcile()
    settled = services.runs.store.get_run(run.id)
    assert len(settled.attempts) == 2
    if when == "after":
        assert settled.latest.job_id == jobs[0] and settled.latest.events[-1].source == "reconcile"
    else:
        assert settled.latest.state is RunState.NEVER_SUBMITTED and settled.latest.job_id is None
    assert slurm.find_by_tag(tag) == jobs, "nothing was submitted again"
    assert due(services, run) == []  # nothing left to retry twice
