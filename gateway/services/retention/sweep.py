"""The retention sweep: what the policies allow to delete, deleted through the run host as the files'
owner, each deletion recorded before and audited after (docs/retention.md).

One pass (``RetentionSweeper.sweep``), in order:

1. Intents a dead pass left (``intent`` rows) are settled first: a path already gone is recorded
   ``done`` (the deletion had completed), a directory is removed the rest of the way, a file whose
   digest changed since the intent is left and reported ``failed``.
2. The plan (``core/retention/plan.py``) over the ended runs: holds and what a release needs keep
   whole runs; the rules list files and directories.
3. Each planned path is measured as its owner (size, sha256; never through a symlink), its intent
   committed, then deleted as its owner, then marked ``done`` with its ``retention.delete`` audit
   event in one transaction (``failed`` with the reason when the run host refuses).
4. The run directories are measured and cached (``StorageService.measure``).

A dry run does step 2 and measures sizes (no digests), writing nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gateway.adapters.runhost import PathMeasure, RunHost
from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.clock import utcnow
from gateway.core.retention.plan import Deletion, Kept, RunFiles, expired_note, plan
from gateway.core.retention.values import DeletionRecord
from gateway.core.runs.values import Run
from gateway.core.sbatch.log_paths import STREAMS, log_path
from gateway.errors import GatewayError, RunHostError
from gateway.services.retention.policies import Policies
from gateway.store.access.access import AccessStore
from gateway.store.retention.retention import RetentionStore

log = logging.getLogger(__name__)
SYSTEM = "gateway"  # the actor of the scheduled sweep's audit events


@dataclass(frozen=True)
class SweepItem:
    run_id: str
    project: str
    path: str  # relative to the run directory; "." is the directory itself
    kind: str
    rule: str
    size_bytes: int
    sha256: str | None
    outcome: str  # would delete | deleted | finished | failed | absent
    note: str | None = None


@dataclass
class SweepReport:
    sweep_id: str
    at: datetime
    dry_run: bool
    items: list[SweepItem] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        """What the pass deleted (a dry run: what it would)."""
        return sum(i.size_bytes for i in self.items if i.outcome in ("deleted", "finished", "would delete"))


class RetentionSweeper:
    def __init__(
        self,
        store: RetentionStore,
        access: AccessStore,
        host: RunHost,
        *,
        clock: Callable[[], datetime] = utcnow,
        measure: Callable[[datetime, str | None], list[str]] | None = None,
    ) -> None:
        self.store = store
        self.access = access
        self.host = host
        self.policies = Policies(access)
        self.clock = clock  # the seam a test jumps (docs/retention.md)
        self.measure = measure  # StorageService.measure_all, after a real pass

    def sweep(
        self,
        principal: Principal,
        *,
        dry_run: bool = False,
        project: str | None = None,
        as_of: datetime | None = None,
    ) -> SweepReport:
        """One pass (see the module docstring); site admins only. ``project``: that project's runs alone.
        ``as_of`` (dry runs only): plan as if it were then."""
        require(principal, "site.admin")
        if project is not None:
            self.access.project(project)  # NotFound for an unknown one
        now = as_of if (dry_run and as_of is not None) else self.clock()
        report = SweepReport(f"sweep-{uuid.uuid4().hex[:12]}", now, dry_run)
        projects = [project] if project else None
        for pending in self.store.pending(projects):
            if dry_run:  # said, not settled: the next real pass finishes it or reports why not
                report.items.append(_pending_item(pending))
            else:
                report.items.append(self._finish(principal, pending, now))
        deletions, kept = self.plan(projects, now)
        report.kept = kept
        for deletion in deletions:
            try:
                report.items.append(self._delete(principal, deletion, report, dry_run))
            except GatewayError as exc:  # the run host did not answer: the rest waits for the next pass
                report.problems.append(f"{deletion.run_id} {deletion.rel}: {exc}")
        if not dry_run and self.measure is not None:
            try:
                report.problems.extend(self.measure(now, project))
            except GatewayError as exc:
                report.problems.append(f"storage not measured: {exc}")
        return report

    def scheduled(self) -> SweepReport:
        """The scheduler's pass, as the gateway itself (``Principal.operator``)."""
        return self.sweep(Principal.operator())

    def plan(self, projects: list[str] | None, now: datetime) -> tuple[list[Deletion], list[Kept]]:
        """What the policies allow to delete at ``now`` over the ended runs of ``projects`` (None: all)."""
        # Only projects whose policy can delete anything are read (no policy: the pass costs nothing).
        every = self.policies.all([p.name for p in self.access.projects()])
        ruled = [
            name
            for name, policy in every.items()
            if policy.deletes() and (projects is None or name in projects)
        ]
        if not ruled:
            return [], []
        runs = self.store.ended_runs(ruled)
        if not runs:
            return [], []
        names = sorted({r.project for r in runs})
        policies = {name: every[name] for name in names}
        holds = self.store.holds(names)
        held = self.store.held_runs(holds)
        project_holds = {h.project: h.words() for h in holds if h.target_type == "project"}
        needed = self.store.needed_by_releases()
        outputs = self.store.unreleased_outputs([r.id for r in runs])
        # done, and in flight (an intent: settled first by a real pass, shown by a dry run)
        done = self.store.deletions([r.id for r in runs], states=("done", "intent"))
        expired: dict[str, set[str]] = {}
        for record in done:
            expired.setdefault(record.run_id, set()).add(record.rel_path)
        left = {(d.project, d.user): d.left_at for d in self.store.departures() if d.action == "expire"}
        files = [
            _run_files(
                run,
                held=held.get(run.id) or project_holds.get(run.project),
                protected=needed.get(run.id),
                outputs=outputs.get(run.id, []),
                expired=expired.get(run.id, set()),
                left_at=left.get((run.project, run.submitter)),
            )
            for run in runs
        ]
        result = plan(files, policies, now)
        return result.deletions, result.kept

    def _delete(
        self, principal: Principal, deletion: Deletion, report: SweepReport, dry_run: bool
    ) -> SweepItem:
        measured = self._measure(deletion, digest=not dry_run)
        if not measured.exists:
            return _item(deletion, measured, "absent", "nothing there to delete")
        if measured.error or measured.kind != deletion.kind:
            note = measured.error or f"{deletion.rel} is a {measured.kind}, not a {deletion.kind}; left alone"
            return _item(deletion, measured, "failed", note)
        if dry_run:
            return _item(deletion, measured, "would delete")
        intent = self.store.record_intent(
            {
                "run_id": deletion.run_id,
                "project": deletion.project,
                "rule": deletion.rule,
                "rel_path": deletion.rel,
                "kind": deletion.kind,
                "run_dir": deletion.run_dir,
                "os_user": deletion.os_user,
                "size_bytes": measured.size_bytes,
                "files": measured.files,
                "sha256": measured.sha256,
                "sweep_id": report.sweep_id,
                "planned_at": report.at,
            }
        )
        removal = self.host.remove_path(
            deletion.run_dir, deletion.rel, kind=deletion.kind, as_user=deletion.os_user
        )
        if removal.error:
            self._settle(principal, intent, "failed", removal.error, report.at)
            return _item(deletion, measured, "failed", removal.error)
        self._settle(principal, intent, "done", None, report.at)
        return _item(deletion, measured, "deleted", expired_note(report.at, deletion.rule))

    def _finish(self, principal: Principal, pending: DeletionRecord, now: datetime) -> SweepItem:
        """Settle an intent a dead pass left: finish it, or report why not."""
        item = SweepItem(
            pending.run_id,
            pending.project,
            pending.rel_path,
            pending.kind,
            pending.rule,
            pending.size_bytes,
            pending.sha256,
            "finished",
        )
        try:
            [measured] = self.host.measure_paths(
                pending.run_dir, [pending.rel_path], as_user=pending.os_user, digest=pending.kind == "file"
            )
        except GatewayError as exc:
            return _replace(item, "failed", f"left for the next pass: {exc}")
        if not measured.exists:
            note = (
                f"finished by a later pass ({now.date()}): it was deleted before the pass that began it ended"
            )
            self._settle(principal, pending, "done", note, now)
            return _replace(item, "finished", note)
        if pending.kind == "file" and measured.sha256 != pending.sha256:
            note = "not deleted: the file changed since the deletion was decided (digest differs)"
            self._settle(principal, pending, "failed", note, now)
            return _replace(item, "failed", note)
        removal = self.host.remove_path(
            pending.run_dir, pending.rel_path, kind=pending.kind, as_user=pending.os_user
        )
        if removal.error:
            self._settle(principal, pending, "failed", removal.error, now)
            return _replace(item, "failed", removal.error)
        note = f"finished by a later pass ({now.date()}) after the pass that began it died"
        self._settle(principal, pending, "done", note, now)
        return _replace(item, "finished", note)

    def _settle(
        self, principal: Principal, record: DeletionRecord, state: str, note: str | None, at: datetime
    ) -> None:
        entry = AuditEntry(
            principal.user if principal.user else SYSTEM,
            "retention.delete" if state == "done" else "retention.delete.failed",
            "run",
            record.run_id,
            record.project,
            principal.source,
            None,
            {
                "path": record.rel_path,
                "run_dir": record.run_dir,
                "kind": record.kind,
                "rule": record.rule,
                "size_bytes": record.size_bytes,
                "files": record.files,
                "sha256": record.sha256,
                "os_user": record.os_user,
                "sweep_id": record.sweep_id,
                "note": note,
            },
        )
        self.store.settle(record.id, state, note, entry, at)

    def _measure(self, deletion: Deletion, *, digest: bool) -> PathMeasure:
        try:
            [measured] = self.host.measure_paths(
                deletion.run_dir, [deletion.rel], as_user=deletion.os_user, digest=digest
            )
        except RunHostError as exc:
            return PathMeasure(deletion.rel, True, None, 0, 0, None, str(exc))
        return measured


def _run_files(
    run: Run,
    *,
    held: str | None,
    protected: str | None,
    outputs: list[tuple[str, str]],
    expired: set[str],
    left_at: datetime | None,
) -> RunFiles:
    logs: list[str] = []
    for attempt in run.attempts:
        tasks = sorted(attempt.tasks) if attempt.array_size is not None else [None]
        for task in tasks or [None]:
            for stream in STREAMS:
                path = log_path(run, attempt, stream, task)
                if path not in logs:
                    logs.append(path)
    ends = [a.end_time for a in run.attempts if a.end_time is not None]
    return RunFiles(
        run_id=run.id,
        project=run.project,
        submitter=run.submitter,
        os_user=run.os_user,
        state=str(run.state),
        run_dir=run.run_dir,
        ended_at=max(ends) if ends else run.updated_at,
        logs=tuple(logs),
        outputs=tuple(outputs),
        held=held,
        protected=protected,
        left_at=left_at,
        expired=frozenset(expired),
    )


def _pending_item(pending: DeletionRecord) -> SweepItem:
    return SweepItem(
        pending.run_id,
        pending.project,
        pending.rel_path,
        pending.kind,
        pending.rule,
        pending.size_bytes,
        pending.sha256,
        "pending",
        f"begun by {pending.sweep_id} on {pending.planned_at.date()}, not finished: the next pass ends it",
    )


def _item(deletion: Deletion, measured: PathMeasure, outcome: str, note: str | None = None) -> SweepItem:
    return SweepItem(
        deletion.run_id,
        deletion.project,
        deletion.rel,
        deletion.kind,
        deletion.rule,
        measured.size_bytes,
        measured.sha256,
        outcome,
        note,
    )


def _replace(item: SweepItem, outcome: str, note: str) -> SweepItem:
    from dataclasses import replace

    return replace(item, outcome=outcome, note=note)
