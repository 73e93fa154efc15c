"""A new run's sbatch starts before the run is recorded, and gets its script only after the commit.

``RunService`` starts ``sbatch`` once the run is admitted (``SlurmBackend.prepare_submit``) so
that sbatch's own start-up overlaps the gateway's recording; exactly-once still holds because
sbatch can queue nothing until it has the script, which it gets after the attempt is committed.
Here a runner looks at the database from its own connection at both moments, on the real
cluster and both databases; and a submission that fails in between leaves no sbatch behind.
"""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.errors import StoreUnavailable
from gateway.wiring import build_services
from tests.service.conftest import unique_tag
from tests.service.test_watchers import held_spec

pytestmark = pytest.mark.slurm


class Watching(LocalRunner):
    """The real runner; at sbatch's start and before its script, reads the attempt's state elsewhere."""

    def __init__(self, database_url: str) -> None:
        self.engine = create_engine(database_url)
        self.seen: list[tuple[str, str | None]] = []
        self.started: list = []

    def state(self, argv) -> str | None:
        tag = next(a for a in argv if a.startswith("--comment=")).removeprefix("--comment=").split()[0]
        with self.engine.connect() as conn:
            return conn.execute(text("SELECT state FROM attempts WHERE tag = :t"), {"t": tag}).scalar()

    def start(self, argv, **kwargs):
        self.seen.append(("started", self.state(argv)))
        started = super().start(argv, **kwargs)
        self.started.append(started)
        runner = self

        class Watched:
            def finish(self, stdin):
                runner.seen.append(("script sent", runner.state(argv)))
                return started.finish(stdin)

            def abandon(self):
                runner.seen.append(("abandoned", runner.state(argv)))
                started.abandon()

        return Watched()


@pytest.fixture
def watched(settings):
    runner = Watching(settings.database_url)
    built = build_services(settings, slurm=SlurmCLI(runner), upgrade=False)
    yield built, runner
    built.close()
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
