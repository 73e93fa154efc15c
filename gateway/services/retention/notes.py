"""What expired of a run: the notes its record carries, and the words a read of a deleted file gets."""

from __future__ import annotations

from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.retention.plan import WHOLE_DIR, expired_note, inside
from gateway.core.retention.values import DeletionRecord
from gateway.errors import NotFound
from gateway.store.retention.retention import RetentionStore
from gateway.store.runs.runs import RunStore


class ExpiredFiles:
    def __init__(self, store: RetentionStore, runs: RunStore) -> None:
        self.store = store
        self.runs = runs

    def of_run(self, principal: Principal, run_id: str) -> list[DeletionRecord]:
        """The deletions recorded for a run the caller may read (done, failed and pending), oldest first."""
        run = self.runs.get_run(run_id)
        try:
            require(principal, "retention.read", run.project, hide=True)
        except NotFound:
            raise NotFound(f"no run {run_id!r}") from None
        return self.store.deletions([run_id], states=("done", "failed", "intent"))

    def note(self, run_id: str, run_dir: str, path: str) -> str | None:
        """ "files expired on DATE by rule R" when ``path`` (or its whole run directory) was deleted by a
        sweep; None otherwise."""
        rel = inside(run_dir, path)
        for record in reversed(self.store.deletions([run_id])):
            if record.rel_path == WHOLE_DIR or (rel is not None and record.rel_path == rel):
                assert record.done_at is not None
                return expired_note(record.done_at, record.rule)
        return None
