"""The store on SQLite and PostgreSQL: migrations, records, timeline, paging."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect

from gateway.core.runs.paging import Cursor
from gateway.core.runs.values import AttemptFacts, AttemptUpdate, NewRun, RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.errors import NotFound, StoreError
from gateway.store import Database, RunStore


def project_name() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def store(database_url):
    db = Database(database_url)
    db.upgrade()
    yield RunStore(db)
    db.dispose()


def make_run(store: RunStore, project: str, n: int = 0, tags=("a",)) -> str:
    run_id = f"r-{project}-{n}"
    spec = build_spec(
        {"name": f"run{n}", "project": project, "queue": "cpu", "command": "true", "tags": list(tags)}
    )
    store.create_run(
        NewRun(
            id=run_id,
            spec=spec,
            submitter="alice" if n % 2 else "bob",
            os_user="root",
            script="#!/bin/bash\ntrue\n",
            script_sha256="1" * 64,
            template_name="single.sbatch.j2",
            template_version="abc",
            run_dir=f"/tmp/{run_id}",
            first_tag=f"gw-{run_id}-1",
        )
    )
    return run_id


def test_migrations_create_the_schema_and_are_idempotent(database_url):
    db = Database(database_url)
    db.upgrade()
    db.upgrade()
    tables = set(inspect(db.engine).get_table_names())
    assert {"runs", "attempts", "state_events", "run_tags", "alembic_version"} <= tables
    db.dispose()


def test_create_run_writes_submitting_attempt_and_event(store):
    run_id = make_run(store, project_name())
    run = store.get_run(run_id)
    assert run.state is RunState.SUBMITTING
    (attempt,) = run.attempts
    assert attempt.state is RunState.SUBMITTING and attempt.job_id is None
    assert [e.to_state for e in attempt.events] == [RunState.SUBMITTING]
    assert run.created_at.tzinfo is UTC or run.created_at.utcoffset().total_seconds() == 0


def test_job_id_then_updates_record_each_transition_once(store):
    run_id = make_run(store, project_name())
    attempt = store.get_run(run_id).attempts[0]
    store.record_job_id(attempt.id, "12345")
    started = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    update = AttemptUpdate(attempt.id, RunState.RUNNING, "RUNNING", None, event_at=started, source="squeue")
    assert store.apply_updates([update]) == 1
    assert store.apply_updates([update]) == 0  # same state and reason: no new event
    done = AttemptUpdate(
        attempt.id,
        RunState.FAILED,
        "FAILED",
        None,
        source="sacct",
        facts=AttemptFacts(exit_code=3, alloc_tres={"cpu": "2"}, end_time=started),
    )
    assert store.apply_updates([done]) == 1
    run = store.get_run(run_id)
    assert run.state is RunState.FAILED
    latest = run.latest
    assert latest.exit_code == 3 and latest.alloc_tres == {"cpu": "2"} and latest.end_time == started
    assert [(e.from_state, e.to_state) for e in latest.events] == [
        (None, RunState.SUBMITTING),
        (RunState.SUBMITTING, RunState.QUEUED),
        (RunState.QUEUED, RunState.RUNNING),
        (RunState.RUNNING, RunState.FAILED),
    ]
    assert latest.events[2].at == started


def test_pending_reason_change_is_an_event(store):
    run_id = make_run(store, project_name())
    attempt = store.get_run(run_id).attempts[0]
    store.record_job_id(attempt.id, "1")
    for reason in ["Priority", "Resources", "Resources"]:
        store.apply_updates([AttemptUpdate(attempt.id, RunState.QUEUED, "PENDING", reason, source="squeue")])
    reasons = [e.reason for e in store.get_run(run_id).latest.events]
    assert reasons[-2:] == ["Priority", "Resources"]


def test_stale_keeps_state(store):
    run_id = make_run(store, project_name())
    attempt = store.get_run(run_id).attempts[0]
    store.record_job_id(attempt.id, "2")
    store.mark_stale([attempt.id])
    latest = store.get_run(run_id).latest
    assert latest.stale and latest.state is RunState.QUEUED


def test_list_filters_and_cursor_paging(store):
    project = project_name()
    ids = [make_run(store, project, n, tags=("x", f"n{n}")) for n in range(7)]
    seen, cursor = [], None
    while True:
        page = store.list_runs(RunFilter(project=project, limit=3, cursor=cursor))
        seen += [r.id for r in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    assert [r.id for r in store.list_runs(RunFilter(project=project, tag="n3")).items] == [ids[3]]
    assert {r.submitter for r in store.list_runs(RunFilter(project=project, submitter="alice")).items} == {
        "alice"
    }
    assert store.list_runs(RunFilter(project=project, state=RunState.RUNNING)).items == []
    with pytest.raises(ValueError, match="cursor"):
        Cursor.decode("not-a-cursor")
    last = Cursor(page.items[0].created_at, "r-x")
    assert Cursor.decode(last.encode()) == last


def test_unknown_run_and_duplicate_tag(store):
    with pytest.raises(NotFound):
        store.get_run("r-nope")
    project = project_name()
    make_run(store, project, 1)
    with pytest.raises(StoreError):
        make_run(store, project, 1)  # same run id and attempt tag: refused, nothing half-written
