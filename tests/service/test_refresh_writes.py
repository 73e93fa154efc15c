"""A refresh cycle writes only the attempts that moved: a job waiting in the queue is read, not rewritten.

On the real cluster: three held runs are refreshed once (their state and Slurm's reason are
stored), then again with nothing changed in Slurm (the store is handed no update for them),
then one of them is cancelled around the gateway (only that one is written, and it ends).
"""

from __future__ import annotations

import subprocess

import pytest

from gateway.core.slurm.states import RunState
from tests.service.conftest import refresh_until, unique_tag
from tests.service.test_watchers import held_spec

pytestmark = pytest.mark.slurm


def test_an_unchanged_queue_is_not_written_again(services, principal, monkeypatch):
    tag = unique_tag()
    runs = [services.runs.submit(held_spec(tag), principal=principal) for _ in range(3)]
    attempts = {r.latest.id: r for r in runs}
    handed: list[list[int]] = []
    apply_updates = services.refresher.store.apply_updates

    def recording(updates):
        updates = list(updates)
        handed.append([u.attempt_id for u in updates if u.attempt_id in attempts])
        return apply_updates(updates)

    monkeypatch.setattr(services.refresher.store, "apply_updates", recording)
    try:
        services.refresher.refresh()
        assert sorted(handed[-1]) == sorted(attempts), "the first cycle stores each held job's reason"
        for run in runs:
            stored = services.runs.store.get_run(run.id).latest
            assert stored.state is RunState.HELD and stored.reason == "JobHeldUser", stored

        services.refresher.refresh()
        assert handed[-1] == [], "nothing changed in Slurm, so nothing of these runs is written"

        gone = runs[0]
        subprocess.run(["scancel", gone.latest.job_id], check=True)  # around the gateway
        ended = refresh_until(services, gone.id)
        assert ended.state is RunState.CANCELLED
        written = {a for cycle in handed[2:] for a in cycle}
        assert written == {gone.latest.id}, "only the cancelled run's attempt moved"
    finally:
        for run in runs[1:]:
            services.runs.cancel(run.id, principal=principal)
