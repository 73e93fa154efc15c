"""Holds: a lead or admin stops every deletion of a run, a model's runs or a whole project (audited)."""

from __future__ import annotations

from gateway.core.access.policy import require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.retention.values import HOLD_TARGETS, Hold
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.store.access.access import AccessStore
from gateway.store.retention.retention import RetentionStore
from gateway.store.runs.runs import RunStore

MAX_REASON = 1000


class HoldService:
    def __init__(self, store: RetentionStore, runs: RunStore, access: AccessStore) -> None:
        self.store = store
        self.runs = runs
        self.access = access

    def place(self, principal: Principal, target_type: str, target_id: str, reason: str) -> Hold:
        """Hold ``target`` (a run id, a model ``project/name``, a project name) with ``reason``.

        SpecError for an unknown kind or an empty reason; NotFound for a target the caller cannot see;
        Forbidden below a lead of its project. Audited (``retention.hold``).
        """
        project = self._project_of(principal, target_type, target_id)
        require(principal, "retention.hold", project, hide=True)
        reason = _reason(reason, "reason")
        entry = AuditEntry(
            principal.user,
            "retention.hold",
            "hold",
            "",
            project,
            principal.source,
            None,
            {"target_type": target_type, "target_id": target_id, "reason": reason},
        )
        return self.store.add_hold(target_type, target_id, project, reason, principal.user, entry)

    def lift(self, principal: Principal, hold_id: str, reason: str) -> Hold:
        """Lift a hold; Conflict when it was lifted already. Audited (``retention.hold.lift``)."""
        hold = self.store.hold(hold_id)
        require(principal, "retention.hold", hold.project, hide=True)
        reason = _reason(reason, "reason")
        if not hold.active:
            raise Conflict(f"hold {hold_id} was lifted already, by {hold.lifted_by} on {hold.lifted_at}")
        entry = AuditEntry(
            principal.user,
            "retention.hold.lift",
            "hold",
            hold_id,
            hold.project,
            principal.source,
            {"target_type": hold.target_type, "target_id": hold.target_id, "reason": hold.reason},
            {"lifted": True, "reason": reason},
        )
        return self.store.lift_hold(hold_id, principal.user, reason, entry)

    def list(
        self, principal: Principal, project: str | None = None, *, include_lifted: bool = False
    ) -> list[Hold]:
        """The holds the caller may see (of ``project`` only, when given), newest first."""
        if project is not None:
            require(principal, "retention.read", project, hide=True)
            projects: list[str] | None = [project]
        else:
            projects = visible_projects(principal)
        return self.store.holds(projects, active=not include_lifted)

    def _project_of(self, principal: Principal, target_type: str, target_id: str) -> str:
        if target_type not in HOLD_TARGETS:
            raise SpecError(
                [SpecIssue("target_type", f"must be one of {', '.join(HOLD_TARGETS)}", target_type)],
                what="hold",
            )
        if target_type == "run":
            try:
                project = self.runs.get_run(target_id).project
            except NotFound:
                raise NotFound(f"no run {target_id!r}") from None
        elif target_type == "model":
            project, slash, name = target_id.partition("/")
            if not slash or self.store.model_project(project, name) is None:
                raise NotFound(f"no model {target_id!r} (name a model as PROJECT/NAME)")
        else:
            project = target_id
            self.access.project(project)  # NotFound when there is none
        if principal.role(project) is None and not principal.is_admin:
            raise NotFound(f"no {target_type} {target_id!r}")
        return project


def _reason(text: str, field: str) -> str:
    text = (text or "").strip()
    if not text:
        raise SpecError([SpecIssue(field, "say why (a reason is required and audited)", text)], what="hold")
    if len(text) > MAX_REASON:
        raise SpecError([SpecIssue(field, f"at most {MAX_REASON} characters", text[:40])], what="hold")
    return text
