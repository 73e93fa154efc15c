"""Protection policies of aliases: per model, or the project's default for an alias name.

A policy says which least roles may move the alias (member, lead, admin),
how many distinct approvers besides the requester a move needs, and which
eval suite's newest gate decision on the release's artifact must have
passed. Leads set them (``release.policy``); each change is audited with the
policy before and after. ``services.promotions`` enforces them.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.access.policy import require
from gateway.core.audit.entry import AuditEntry
from gateway.core.clock import utcnow
from gateway.core.domain import Principal
from gateway.core.releases.domain import POLICY_ROLES, AliasPolicy
from gateway.errors import NotFound, SpecError, SpecIssue
from gateway.services.releases.promotions import alias_issues
from gateway.services.releases.registry import ReleaseService
from gateway.store.promotions import PromotionStore

MAX_APPROVALS = 10


class AliasPolicyService:
    def __init__(self, store: PromotionStore, releases: ReleaseService) -> None:
        self.store = store
        self.releases = releases

    def set_policy(
        self,
        project: str,
        model: str | None,
        alias: str,
        *,
        principal: Principal,
        roles: Sequence[str] = ("member",),
        approvals: int = 0,
        gate_suite: str | None = None,
    ) -> AliasPolicy:
        """Protect ``alias`` of model ``project/model`` (``model`` None: the project's default). Leads."""
        model_id = self.releases.model(project, model, principal=principal).id if model else None
        if model is None:
            require(principal, "release.read", project, hide=True)
        require(principal, "release.policy", project)
        issues = alias_issues(alias)
        bad_roles = [r for r in roles if r not in POLICY_ROLES]
        if not roles or bad_roles:
            issues.append(SpecIssue("roles", f"one or more of {', '.join(POLICY_ROLES)}", list(roles)))
        if (
            not isinstance(approvals, int)
            or isinstance(approvals, bool)
            or not 0 <= approvals <= MAX_APPROVALS
        ):
            issues.append(SpecIssue("approvals", f"a whole number from 0 to {MAX_APPROVALS}", approvals))
        if gate_suite is not None:
            suite_project, sep, suite_name = gate_suite.partition("/")
            if not sep or not suite_project or not suite_name or "@" in gate_suite:
                issues.append(
                    SpecIssue("gate_suite", "an eval suite as PROJECT/NAME (any version)", gate_suite)
                )
            else:
                try:
                    self.releases.evals.suite(suite_project, suite_name)
                except NotFound:
                    issues.append(SpecIssue("gate_suite", "no such eval suite", gate_suite))
        if issues:
            raise SpecError(issues, what="alias policy")
        policy = AliasPolicy(
            project=project,
            alias=alias,
            model_id=model_id,
            roles=tuple(dict.fromkeys(roles)),
            approvals=approvals,
            gate_suite=gate_suite,
            updated_by=principal.user,
            updated_at=utcnow(),
        )
        target = f"{project}/{model}:{alias}" if model else f"{project}/*:{alias}"
        return self.store.set_policy(
            policy,
            audit=AuditEntry(
                actor=principal.user,
                action="release.policy",
                target_type="alias_policy",
                target_id=target,
                project=project,
                source=principal.source,
            ),
        )

    def policies(self, project: str, model: str | None, *, principal: Principal) -> list[AliasPolicy]:
        """The project's default policies and the model's own (``model`` None: defaults only)."""
        if model is None:
            require(principal, "release.read", project, hide=True)
            return self.store.policies(project, None)
        return self.store.policies(project, self.releases.model(project, model, principal=principal).id)
