"""Models and releases: a release is one artifact of a completed run, numbered, immutable, with evidence.

``create_release`` finds the artifact by its sha256 (in a run the caller may
read that succeeded; ``run_id`` picks one when several runs wrote the same
content), gives it the model's next version and stores a snapshot of what
makes it evidence: the run's lineage record (attempts and Slurm jobs,
rendered script and its sha256, dataset versions with digests, code commit,
image, params, metrics) and every evaluation of the artifact with its gate
decisions and reviews, as they stood then. A release is never edited or
deleted; ``set_status`` appends a status event (deprecated, withdrawn,
active) with its reason. Every write is audited.

The gate a protected alias counts is not looked up here: the gateway decides
it at the move (``services.releases.policy_gate``).
"""

from __future__ import annotations

from typing import Any

from gateway.core.access.policy import allowed, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.names import NAME, NAME_HELP
from gateway.core.releases.domain import (
    NOTES_MAX,
    REASON_MAX,
    RELEASE_STATUSES,
    RegisteredModel,
    Release,
    check_alias,
)
from gateway.core.slurm.states import RunState
from gateway.errors import Conflict, NotFound, SpecError, SpecIssue
from gateway.services.eval.trace import EvalTraceService
from gateway.services.handoff.outbox import HandoffService
from gateway.services.lineage.walk import LineageService
from gateway.store.eval.evals import EvalStore
from gateway.store.eval.reviews import ReviewStore
from gateway.store.releases.releases import NewRelease, ReleaseStore
from gateway.store.runs.runs import RunStore

SNAPSHOT_VERSION = 1


def text_issue(field: str, value: object, limit: int, *, required: bool = False) -> SpecIssue | None:
    """An issue when ``value`` is not printable text of at most ``limit`` characters (or empty when
    ``required``); None when it is fine."""
    if not isinstance(value, str):
        return SpecIssue(field, "must be text", value)
    if required and not value.strip():
        return SpecIssue(field, "is required: say why")
    if len(value) > limit or "\x00" in value:
        return SpecIssue(field, f"at most {limit} characters, no NUL byte")
    return None


def alias_issues(alias: str) -> list[SpecIssue]:
    """The issue of a bad alias name (empty when it is fine)."""
    try:
        check_alias(alias)
    except ValueError as exc:
        return [SpecIssue("alias", str(exc), alias)]
    return []


class ReleaseService:
    def __init__(
        self,
        store: ReleaseStore,
        lineage: LineageService,
        eval_trace: EvalTraceService,
        evals: EvalStore,
        gates: ReviewStore,
        runs: RunStore,
        *,
        handoff: HandoffService | None = None,
    ) -> None:
        self.store = store
        self.lineage = lineage
        self.eval_trace = eval_trace
        self.evals = evals
        self.gates = gates
        self.runs = runs
        self.handoff = handoff  # what a release hands off to MLflow and webhooks (None: nothing)

    # -- models -----------------------------------------------------------------------------------

    def register_model(
        self, project: str, name: str, *, principal: Principal, description: str = ""
    ) -> RegisteredModel:
        """Register model ``project/name``; SpecError for a bad name, Conflict when it exists."""
        issues = [
            SpecIssue(field, NAME_HELP, value)
            for field, value in (("project", project), ("name", name))
            if not isinstance(value, str) or not NAME.fullmatch(value)
        ]
        if (issue := text_issue("description", description, NOTES_MAX)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="model")
        require(principal, "release.create", project, hide=True)
        return self.store.add_model(
            project,
            name,
            description,
            principal.user,
            audit=self._audit(principal, "model.register", "model", project, {"model": f"{project}/{name}"}),
        )

    def models(self, *, principal: Principal, project: str | None = None) -> list[RegisteredModel]:
        """Models of the projects the caller may read (one project's, with ``project``)."""
        if project is not None:
            require(principal, "release.read", project, hide=True)
            return self.store.models([project])
        return self.store.models(visible_projects(principal))

    def model(self, project: str, name: str, *, principal: Principal) -> RegisteredModel:
        """One model the caller may read, or NotFound."""
        if not allowed(principal, "release.read", project):
            raise NotFound(f"no model {project}/{name}")
        return self.store.model(project, name)

    # -- releases ---------------------------------------------------------------------------------

    def create_release(
        self,
        project: str,
        name: str,
        sha256: str,
        *,
        principal: Principal,
        run_id: str | None = None,
        notes: str = "",
    ) -> Release:
        """The model's next release of the artifact with ``sha256`` (written by a succeeded run the
        caller may read; ``run_id`` picks the run). SpecError for bad fields, NotFound for an unknown
        model or artifact, Conflict when the run did not succeed."""
        model = self.model(project, name, principal=principal)
        require(principal, "release.create", project)
        issues = []
        if (
            not isinstance(sha256, str)
            or len(sha256) != 64
            or any(c not in "0123456789abcdefABCDEF" for c in sha256)
        ):
            issues.append(SpecIssue("artifact_sha256", "an artifact's sha256: 64 hex digits", sha256))
        if (issue := text_issue("notes", notes, NOTES_MAX)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="release")
        sha = sha256.lower()
        artifact, run = self._artifact(sha, run_id, principal)
        snapshot = self._snapshot(run.id, sha, principal)
        return self.store.add_release(
            NewRelease(
                model_id=model.id,
                artifact_sha256=sha,
                artifact_path=artifact.path,
                run_id=run.id,
                notes=notes,
                snapshot=snapshot,
                created_by=principal.user,
            ),
            audit=self._audit(
                principal,
                "release.create",
                "release",
                project,
                {"model": model.ref, "artifact_sha256": sha, "run": run.id, "path": artifact.path},
            ),
            # its MLflow version and webhook events, in the release's own transaction (services/handoff)
            outbox=self.handoff.for_release(project) if self.handoff else (),
        )

    def _artifact(self, sha: str, run_id: str | None, principal: Principal) -> tuple[Any, Any]:
        """The artifact with content ``sha`` (of ``run_id`` when given) and its succeeded run."""
        candidates, states = [], []
        for artifact in self.lineage.store.artifacts_by_sha256(sha):
            if run_id is not None and artifact.run_id != run_id:
                continue
            run = self.runs.get_run(artifact.run_id)
            if not allowed(principal, "run.read", run.project):
                continue
            if run.state is RunState.SUCCEEDED:
                candidates.append((artifact, run))
            else:
                states.append(f"{run.id} ({run.state.value})")
        if candidates:
            return candidates[0]
        if states:
            raise Conflict(
                f"the artifact {sha} was written by run(s) that did not succeed: {', '.join(states)}; "
                "a release is an artifact of a completed run"
            )
        where = f" in run {run_id}" if run_id else ""
        raise NotFound(
            f"no artifact with sha256 {sha}{where} that you may read; `gw show RUN` lists a run's artifacts"
        )

    def _snapshot(self, run_id: str, sha: str, principal: Principal) -> dict[str, Any]:
        """The evidence a release keeps: the run's lineage record and the artifact's evaluations."""
        try:
            evaluations = self.eval_trace.artifact_evals(sha, principal=principal)
        except NotFound:
            evaluations = {"sha256": sha, "eval_runs": [], "gates": [], "reviews": []}
        return {
            "snapshot_version": SNAPSHOT_VERSION,
            "run": self.lineage.trace_run(run_id, principal=principal),
            "evaluations": evaluations,
        }

    def releases(self, project: str, name: str, *, principal: Principal) -> list[Release]:
        """Every release of a model the caller may read, oldest first."""
        return self.store.releases(self.model(project, name, principal=principal).id)

    def release(self, project: str, name: str, version: int | None, *, principal: Principal) -> Release:
        """Version ``version`` (None: the newest) of a model the caller may read, or NotFound."""
        model = self.model(project, name, principal=principal)
        try:
            return self.store.release(model.id, version)
        except NotFound:
            raise NotFound(f"model {model.ref} has no release {version or '(none yet)'}") from None

    def release_by_id(self, release_id: str, *, principal: Principal) -> Release:
        """One release by id, if the caller may read its project (else NotFound)."""
        found = self.store.release_by_id(release_id)
        if not allowed(principal, "release.read", found.project):
            raise NotFound(f"no release {release_id!r}")
        return found

    def set_status(
        self, project: str, name: str, version: int, status: str, *, reason: str, principal: Principal
    ) -> Release:
        """Mark a release deprecated, withdrawn or active again (an event with ``reason``; leads)."""
        release = self.release(project, name, version, principal=principal)
        require(principal, "release.status", project)
        issues = []
        if status not in RELEASE_STATUSES:
            issues.append(SpecIssue("status", f"one of {', '.join(RELEASE_STATUSES)}", status))
        if (issue := text_issue("reason", reason, REASON_MAX, required=True)) is not None:
            issues.append(issue)
        if issues:
            raise SpecError(issues, what="release status")
        if status == release.status:
            raise Conflict(f"release {release.ref} is {status} already")
        self.store.add_status(
            release.id,
            status,
            reason,
            principal.user,
            audit=self._audit(
                principal,
                f"release.{status}" if status != "active" else "release.reactivate",
                "release",
                project,
                {"release": release.ref, "status": status, "reason": reason},
                before={"status": release.status},
            ),
        )
        return self.store.release_by_id(release.id)

    def releases_of_artifact(self, sha256: str, *, principal: Principal) -> list[Release]:
        """Releases of an artifact with this content that the caller may read (the others uncounted)."""
        found = self.store.releases_by_sha256(sha256.lower())
        return [r for r in found if allowed(principal, "release.read", r.project)]

    def readable_artifact(self, sha256: str, principal: Principal) -> bool:
        """Whether the caller may read some run that wrote an artifact with this content."""
        return any(
            allowed(principal, "run.read", self.runs.get_run(a.run_id).project)
            for a in self.lineage.store.artifacts_by_sha256(sha256)
        )

    @staticmethod
    def _audit(
        principal: Principal,
        action: str,
        target_type: str,
        project: str,
        after: dict[str, Any],
        before: dict[str, Any] | None = None,
    ) -> AuditEntry:
        return AuditEntry(
            actor=principal.user,
            action=action,
            target_type=target_type,
            target_id="",
            project=project,
            source=principal.source,
            before=before,
            after=after,
        )
