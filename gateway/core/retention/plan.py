"""Which files of ended runs a sweep may delete now, and why the others stay (pure: values in, values out).

``plan(runs, policies, now)`` walks each ended run the store describes
(``RunFiles``) and, by its project's policy (``core/retention/policy.py``),
lists ``Deletion``s, each naming its rule, and ``Kept`` runs, each naming why
nothing of it goes. The order of precedence:

1. A run under a hold (on the run, its project, or a model it was released
   as) keeps everything, as does a run a release needs (``protected``: the
   run a release points at, an eval run of a released artifact, a run that
   made a dataset version a release's run read).
2. A run whose whole directory is due (``failed-runs``, ``member-left``) loses
   the directory, and nothing else is listed for it.
3. Otherwise its logs (``logs``) and its outputs no release uses
   (``outputs``) go one by one.

Only paths inside the run directory are ever listed: a log a spec sent
elsewhere is the user's, not the gateway's to delete.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gateway.core.retention.policy import RetentionSpec

FAILED_STATES = frozenset(
    {"failed", "cancelled", "timed_out", "out_of_memory", "node_failed", "preempted", "never_submitted"}
)
WHOLE_DIR = "."  # a deletion's ``rel`` for the run directory itself


@dataclass(frozen=True)
class RunFiles:
    """What the store knows of one ended run's files."""

    run_id: str
    project: str
    submitter: str
    os_user: str | None
    state: str
    run_dir: str
    ended_at: datetime | None  # the end of its last attempt (None: never ran)
    logs: tuple[str, ...] = ()  # absolute paths of its attempts' stdout/stderr
    outputs: tuple[tuple[str, str], ...] = ()  # (path relative to run_dir, sha256) of harvested outputs
    held: str | None = None  # the hold that stops every deletion ("hold h-1 on project p: reason")
    protected: str | None = None  # why a release needs it
    left_at: datetime | None = None  # when its submitter left the project, where on_member_leave is expire
    expired: frozenset[str] = frozenset()  # paths (relative) already deleted, "." for the directory


@dataclass(frozen=True)
class Deletion:
    run_id: str
    project: str
    os_user: str
    run_dir: str
    rel: str  # relative to run_dir; "." is the directory itself
    kind: str  # file | dir
    rule: str


@dataclass(frozen=True)
class Kept:
    run_id: str
    reason: str


@dataclass(frozen=True)
class Plan:
    deletions: list[Deletion] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)


def inside(run_dir: str, path: str) -> str | None:
    """``path`` relative to ``run_dir`` when it lies below it (lexically); else None."""
    if not path.startswith("/") or not run_dir.startswith("/"):
        return None
    rel = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(run_dir))
    if rel == "." or rel == ".." or rel.startswith("../"):
        return None
    return rel


def _due(ended_at: datetime | None, days: int | None, now: datetime) -> bool:
    return days is not None and ended_at is not None and ended_at + timedelta(days=days) <= now


def plan_run(run: RunFiles, policy: RetentionSpec, now: datetime) -> tuple[list[Deletion], Kept | None]:
    """The deletions due for one ended run now, or why it keeps everything."""
    if WHOLE_DIR in run.expired:
        return [], None
    if run.held:
        return [], Kept(run.run_id, run.held)
    if run.protected:
        return [], Kept(run.run_id, run.protected)
    if not run.os_user:
        return [], Kept(run.run_id, "no OS user is recorded to delete its files as")

    def deletion(rel: str, kind: str, rule: str) -> Deletion:
        assert run.os_user is not None
        return Deletion(run.run_id, run.project, run.os_user, run.run_dir, rel, kind, rule)

    if run.state in FAILED_STATES and _due(run.ended_at, policy.failed_run_days, now):
        return [deletion(WHOLE_DIR, "dir", "failed-runs")], None
    if (
        policy.on_member_leave == "expire"
        and run.left_at is not None
        and run.left_at + timedelta(days=policy.left_member_days) <= now
    ):
        return [deletion(WHOLE_DIR, "dir", "member-left")], None
    found: dict[str, Deletion] = {}
    if _due(run.ended_at, policy.logs_days, now):
        for path in run.logs:
            rel = inside(run.run_dir, path)
            if rel is not None and rel not in run.expired:
                found.setdefault(rel, deletion(rel, "file", "logs"))
    if _due(run.ended_at, policy.unreleased_outputs_days, now):
        for rel, _sha in run.outputs:
            clean = inside(run.run_dir, posixpath.join(run.run_dir, rel))
            if clean is not None and clean not in run.expired:
                found.setdefault(clean, deletion(clean, "file", "outputs"))
    return sorted(found.values(), key=lambda d: d.rel), None


def plan(runs: list[RunFiles], policies: dict[str, RetentionSpec], now: datetime) -> Plan:
    """Every deletion due now over ``runs`` (ended runs), by their project's policy, and the runs kept."""
    result = Plan()
    for run in runs:
        policy = policies.get(run.project) or RetentionSpec()
        deletions, kept = plan_run(run, policy, now)
        result.deletions.extend(deletions)
        if kept is not None:
            result.kept.append(kept)
    return result


def expired_note(at: datetime, rule: str) -> str:
    """The words a run's record and a read of a deleted file carry."""
    return f"files expired on {at.date().isoformat()} by rule {rule}"
