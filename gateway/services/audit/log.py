"""The audit log: reading it, verifying it, and checkpointing its head outside the database.

``verify`` recomputes the hash chain (edits, deletions, broken links) and
judges it against the checkpoints in the anchor file (a log cut at its end,
rewritten anchored history, a lost or damaged anchor file); see
``gateway/core/audit/anchors.py``. ``checkpoint`` appends the chain's head to the
anchor file when it moved: ``gw serve`` calls it once per refresh cycle,
``gw admin audit checkpoint`` on demand. It never runs on a request's path.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.audit.anchors import (
    ANCHOR_ACTION,
    AnchorRead,
    AuditVerdict,
    Checkpoint,
    CheckpointOutcome,
    judge,
    plan_checkpoint,
)
from gateway.core.audit.entry import AuditEntry
from gateway.core.audit.event import AuditEvent
from gateway.errors import Conflict
from gateway.store.audit.audit import AuditStore


class AnchorLog(Protocol):
    """Where checkpoints are kept, outside the database (``gateway.adapters.anchor.AnchorFile``).

    ``read`` and ``read_last`` never raise (a missing, unreadable or
    malformed file is described in the ``AnchorRead``); ``prepare``,
    ``append`` and ``retire`` raise ``AnchorError``.
    """

    @property
    def path(self) -> str:
        """Where the checkpoints are kept, for messages."""
        ...

    def read(self) -> AnchorRead:
        """Every checkpoint kept, and every line that is not one."""
        ...

    def read_last(self) -> AnchorRead:
        """Only the last checkpoint, read without reading them all (for every cycle)."""
        ...

    def prepare(self) -> None:
        """Make the (empty, private) place for checkpoints unless it is there."""
        ...

    def append(self, checkpoint: Checkpoint) -> None:
        """Add ``checkpoint`` durably (on disk before this returns)."""
        ...

    def retire(self) -> str | None:
        """Move the checkpoints aside, kept as evidence; where they went, or None when there were none."""
        ...


@dataclass(frozen=True)
class AuditPage:
    items: list[AuditEvent]
    next_after: int | None  # the seq to pass as ``after`` for the next page; None on the last


class AuditService:
    def __init__(self, store: AuditStore, anchors: AnchorLog) -> None:
        self.store = store
        self.anchors = anchors

    def events(
        self,
        principal: Principal,
        *,
        project: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        target: str | None = None,
        after: int | None = None,
        limit: int = 100,
    ) -> AuditPage:
        """Events in order (seq), after ``after``, at most ``limit``, narrowed by the filters.

        Site admins see every event; a project lead sees the events of the
        projects they lead. Naming a project the caller has no role in answers
        NotFound; anyone else (no project led) gets Forbidden.
        """
        if project is not None:
            require(principal, "audit.read", project, hide=True)
            projects: list[str] | None = [project]
        elif principal.is_admin:
            projects = None
        else:
            projects = sorted(p for p, role in principal.roles.items() if role == "lead")
            if not projects:
                require(principal, "site.admin")
        events = self.store.events(
            projects=projects, actor=actor, action=action, target_id=target, after_seq=after, limit=limit
        )
        return AuditPage(events, events[-1].seq if len(events) == limit else None)

    def verify(self, principal: Principal) -> AuditVerdict:
        """Recompute the chain and judge it against every checkpoint (site admins only); never raises
        for a bad anchor file.

        The anchor file is read before the chain, so a checkpoint written
        meanwhile cannot look like one past the log's end.
        """
        require(principal, "site.admin")
        read = self.anchors.read()
        chain = self.store.check({c.seq for c in read.checkpoints})
        anchor_problems = judge(
            read, head_seq=chain.head_seq, recorded=chain.recorded, start=chain.anchor_start
        )
        return AuditVerdict(
            problems=(*(str(p) for p in chain.problems), *anchor_problems),
            events=chain.head_seq,
            checkpoints=len(read.checkpoints),
            last_checkpoint=read.newest,
            anchor_path=self.anchors.path,
        )

    def checkpoint(
        self, *, actor: str = "gateway", source: str = "scheduler", new_file: bool = False
    ) -> CheckpointOutcome:
        """Append the chain's head to the anchor file, if it moved since the last checkpoint.

        The first checkpoint starts the file: an ``audit.anchor`` event naming
        it is chained, and that event is the file's first checkpoint. With
        ``new_file`` the current file is first renamed aside (kept) and a new
        one started: for an operator, after a loss or a legitimate cut such as
        a database restore. Raises Conflict when the file or the log is
        damaged (a checkpoint then would hide it), AnchorError when the file
        cannot be written.
        """
        if new_file:
            return self._start(actor, source, retired=self.anchors.retire())
        last = self.anchors.read_last()
        newest = last.newest
        tip = self.store.tip(newest.seq if newest else None)
        plan = plan_checkpoint(last, head_seq=tip.seq, recorded_at_last=tip.hash_at, start=tip.anchor_start)
        if plan.action == "refuse":
            raise Conflict(plan.reason)
        if plan.action == "none":
            return CheckpointOutcome(None, plan.reason)
        if plan.action == "start":
            return self._start(actor, source, retired=None)
        checkpoint = Checkpoint(tip.seq, tip.hash, datetime.now(UTC))
        self.anchors.append(checkpoint)
        return CheckpointOutcome(checkpoint, f"{plan.reason}: wrote {checkpoint} to {self.anchors.path}")

    def _start(self, actor: str, source: str, *, retired: str | None) -> CheckpointOutcome:
        # Make the file before chaining the event that says checkpoints go there: a path that
        # cannot be written then fails here, and the log never claims a file that was never made.
        self.anchors.prepare()
        entry = AuditEntry(
            actor=actor,
            action=ANCHOR_ACTION,
            target_type="audit",
            target_id="anchor",
            source=source,
            after={"path": self.anchors.path, "previous_file": retired},
        )
        seq, digest = self.store.record_hashed(entry)
        checkpoint = Checkpoint(seq, digest, datetime.now(UTC))
        self.anchors.append(checkpoint)
        moved = f"; the old file is now {retired}" if retired else ""
        return CheckpointOutcome(checkpoint, f"started {self.anchors.path} with {checkpoint}{moved}")
