"""An attempt's sbatch starts before it is recorded, and gets its script only after the commit.

``Submission`` (the one submission path: new runs, reruns, retries) starts ``sbatch`` before the
attempt is committed (``SlurmBackend.prepare_submit``; a new run once it is admitted) so
that sbatch's own start-up overlaps the gateway's recording; exactly-once still holds because
sbatch can queue nothing until it has the script, which it gets after the attempt is committed.
Here a runner looks at the database from its own connection at both moments, on the real
cluster and both databases; and a submission that fails in between leaves no sbatch behind. A
retry goes the same way, and ends as a first attempt does when Slurm refuses it.

That overlap is the script-on-stdin mode (``slurm_submit_by_path`` false). Given the script's file
(the default, so that Slurm records it as the job's Command), sbatch reads it at once, so it starts
only after the commit; the last test checks that order.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, text

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.slurm.tags import attempt_tag
from gateway.errors import Conflict, StoreUnavailable
from gateway.wiring import build_services
from tests.service.conftest import unique_tag
from tests.service.test_crash import due_retry
from tests.service.test_watchers import held_spec

pytestmark = pytest.mark.slurm


class Watching(LocalRunner):
    """The real runner; at sbatch's start and before its script, reads the attempt's state elsewhere."""

    def __init__(self, database_url: str) -> None:
        self.engine = create_engine(database_url)
        self.seen: list[tuple[str, str | None]] = []
        self.argvs: list[str] = []  # the sbatch command line of each moment in ``seen``
        self.started: list = []
        self.started_argvs: list[str] = []

    def state(self, argv) -> str | None:
        tag = next(a for a in argv if a.startswith("--comment=")).removeprefix("--comment=").split()[0]
        with self.engine.connect() as conn:
            return conn.execute(text("SELECT state FROM attempts WHERE tag = :t"), {"t": tag}).scalar()

    def saw(self, moment: str, argv) -> None:
        self.seen.append((moment, self.state(argv)))
        self.argvs.append(" ".join(argv))

    def run(self, argv, **kwargs):
        if argv[0] == "sbatch" and "--test-only" not in argv:
            self.saw("ran with the script's file", argv)
        return super().run(argv, **kwargs)

    def start(self, argv, **kwargs):
        self.saw("started", argv)
        started = super().start(argv, **kwargs)
        self.started.append(started)
        self.started_argvs.append(" ".join(argv))
        runner = self

        class Watched:
            def finish(self, stdin):
                runner.saw("script sent", argv)
                return started.finish(stdin)

            def abandon(self):
                runner.saw("abandoned", argv)
                started.abandon()

        return Watched()


@pytest.fixture
def watched(settings):
    runner = Watching(settings.database_url)
    on_stdin = settings.model_copy(update={"slurm_submit_by_path": False})
    built = build_services(on_stdin, slurm=SlurmCLI(runner), upgrade=False)
    yield built, runner
    built.close()
    runner.engine.dispose()


def test_sbatch_given_the_scripts_file_runs_after_the_commit(settings, principal):
    runner = Watching(settings.database_url)
    services = build_services(settings, slurm=SlurmCLI(runner), upgrade=False)
    try:
        run = services.runs.submit(held_spec(unique_tag()), principal=principal)
        try:
            assert runner.seen == [("ran with the script's file", "submitting")]
            assert runner.argvs[0].endswith(f" {run.run_dir}/job.sbatch")
            assert run.latest.job_id and run.state.value == "queued"
        finally:
            services.runs.cancel(run.id, principal=principal)
    finally:
        services.close()
        runner.engine.dispose()


def test_sbatch_starts_before_the_commit_and_reads_the_script_after_it(watched, principal):
    services, runner = watched
    run = services.runs.submit(held_spec(unique_tag()), principal=principal)
    try:
        assert runner.seen == [("started", None), ("script sent", "submitting")]
        assert run.latest.job_id and run.state.value == "queued"
    finally:
        services.runs.cancel(run.id, principal=principal)


def test_a_submission_that_fails_before_its_script_kills_its_sbatch(watched, principal, monkeypatch):
    services, runner = watched

    def down(*args, **kwargs):
        raise StoreUnavailable("the database is unavailable: (a test)")

    monkeypatch.setattr(services.runs.store, "create_run", down)
    tag = unique_tag()
    with pytest.raises(StoreUnavailable):
        services.runs.submit(held_spec(tag), principal=principal)
    assert [moment for moment, _ in runner.seen] == ["started", "abandoned"]
    (sbatch,) = runner.started
    assert sbatch.proc.returncode == -9  # killed before it had a script, and reaped
    assert services.slurm.find_by_tag(tag) == []


def test_a_refused_submission_starts_no_sbatch(watched, principal):
    services, runner = watched
    spec = held_spec(unique_tag()).model_copy(update={"queue": "no-such-queue"})
    with pytest.raises(Exception, match="queue"):
        services.runs.submit(spec, principal=principal)
    assert runner.seen == []


def retry_due(services, principal, *, exclude_nodes=()):
    """``tests.service.test_crash.due_retry``, with ``exclude_nodes`` in the policy's decision."""
    run = due_retry(services, principal)
    first = services.runs.store.get_run(run.id).attempts[0]
    failure = {**first.failure, "retry": {**first.failure["retry"], "exclude_nodes": list(exclude_nodes)}}
    services.runs.store.set_failure(first.id, failure, retry_at=first.retry_at)
    return run


def test_a_retrys_sbatch_starts_before_its_attempt_is_committed_too(watched, principal):
    services, runner = watched
    run = retry_due(services, principal)
    tag = attempt_tag(run.id, 2)
    assert tag in services.retries.process_due()
    assert [seen for seen, argv in zip(runner.seen, runner.argvs, strict=True) if tag in argv] == [
        ("started", None),
        ("script sent", "submitting"),
    ]
    retry = services.runs.store.get_run(run.id).latest
    assert retry.tag == tag and retry.state.value == "queued"
    events = [(e.to_state.value, e.source) for e in retry.events]
    assert events == [("submitting", "retry"), ("queued", "retry")]
    assert services.slurm.find_by_tag(tag) == [retry.job_id]


def test_a_retry_another_process_made_first_kills_its_sbatch(watched, principal, monkeypatch):
    services, runner = watched
    run = retry_due(services, principal)

    def taken(*args, **kwargs):
        raise Conflict("attempt 1 is not the latest; nothing added (a test)")

    monkeypatch.setattr(services.runs.store, "add_attempt", taken)
    tag = attempt_tag(run.id, 2)
    try:
        assert tag not in services.retries.process_due()
        assert [seen for seen, argv in zip(runner.seen, runner.argvs, strict=True) if tag in argv] == [
            ("started", None),
            ("abandoned", None),
        ]
        (sbatch,) = [s for s, argv in zip(runner.started, runner.started_argvs, strict=True) if tag in argv]
        assert sbatch.proc.returncode == -9
        assert services.slurm.find_by_tag(tag) == []
    finally:  # the retry stays due (nothing was added): no later test's cycle should send it
        first = services.runs.store.get_run(run.id).attempts[0]
        services.runs.store.set_failure(first.id, first.failure, retry_at=None)


def test_a_retry_slurm_refuses_is_never_submitted_with_slurms_message(watched, principal):
    services, runner = watched
    run = retry_due(services, principal, exclude_nodes=["nosuchnode"])
    assert attempt_tag(run.id, 2) not in services.retries.process_due()
    retry = services.runs.store.get_run(run.id).latest
    assert retry.number == 2 and retry.state.value == "never_submitted" and retry.job_id is None
    assert "Invalid node name specified" in retry.reason
    assert retry.events[-1].source == "sbatch"
    assert not [a for a in services.runs.store.due_retries(datetime.now(UTC)) if a.run_id == run.id]


def test_a_retry_that_cannot_be_prepared_is_never_submitted_not_retried_each_cycle(watched, principal):
    services, runner = watched
    run = retry_due(services, principal, exclude_nodes=["not a node;"])
    tag = attempt_tag(run.id, 2)
    assert tag not in services.retries.process_due()
    assert not any(tag in argv for argv in runner.argvs), "no sbatch was started"
    retry = services.runs.store.get_run(run.id).latest
    assert retry.number == 2 and retry.state.value == "never_submitted"
    assert retry.reason.startswith("cannot submit the retry:") and "--exclude" in retry.reason
    assert not [a for a in services.runs.store.due_retries(datetime.now(UTC)) if a.run_id == run.id]
