"""Protection policies of aliases: per model, or the project's default for an alias name.

A policy says which least roles may move the alias (member, lead, admin),
how many distinct approvers besides the requester a move needs, and which
eval suite's gate must pass: on which version of it (pinned: the suite's
newest version when the policy is set, unless it names one; or ``latest``)
and against which alias's release (by default the alias itself). The
gateway decides that gate at the move (``services.releases.policy_gate``).
Leads set them (``release.policy``); each change is audited with the policy
before and after. A policy may also refuse moves while the release's training environment has a known
advisory of a least severity (``advisory_severity``). ``services.promotions`` enforces them.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.clock import utcnow
from gateway.core.releases.domain import ADVISORY_SEVERITIES, POLICY_ROLES, AliasPolicy
from gateway.errors import NotFound, SpecError, SpecIssue
from gateway.services.releases.registry import ReleaseService, alias_issues
from gateway.store.releases.promotions import PromotionStore

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
        gate_version: int | str | None = None,
        gate_baseline: str | None = None,
        allow_imported_results: bool = False,
        advisory_severity: str | None = None,
    ) -> AliasPolicy:
        """Protect ``alias`` of model ``project/model`` (``model`` None: the project's default). Leads.

        ``gate_version``: the suite version the gate is decided on: a number, or ``latest`` (the newest
        version at each move); None pins the suite's newest version now. ``gate_baseline``: the alias
        whose release is the baseline (None: ``alias`` itself). ``allow_imported_results``: the gate may
        count results imported from outside the gateway (default: only its own eval runs' count).
        ``advisory_severity``: refuse a move while the release's training environment has a known
        advisory of this severity or worse (LOW, MODERATE, HIGH, CRITICAL; None: no such rule)."""
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
        pinned, gate_issues = self._gate_rule(gate_suite, gate_version, gate_baseline, allow_imported_results)
        issues.extend(gate_issues)
        if advisory_severity is not None:
            advisory_severity = str(advisory_severity).upper()
            if advisory_severity not in ADVISORY_SEVERITIES:
                issues.append(
                    SpecIssue(
                        "advisory_severity", f"one of {', '.join(ADVISORY_SEVERITIES)}", advisory_severity
                    )
                )
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
            gate_version=pinned,  # None without a gate_suite
            gate_baseline=gate_baseline if gate_suite is not None else None,
            allow_imported_results=bool(allow_imported_results) and gate_suite is not None,
            advisory_severity=advisory_severity,
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

    def _gate_rule(
        self,
        gate_suite: str | None,
        gate_version: int | str | None,
        gate_baseline: str | None,
        allow_imported_results: bool,
    ) -> tuple[int | None, list[SpecIssue]]:
        """The suite version a policy's gate pins (None: ``latest``, or no gate) and the issues of its
        gate fields: the suite must exist, the version be one of its, the baseline an alias name; with
        no ``gate_suite``, none of the others may be given."""
        issues: list[SpecIssue] = []
        pinned: int | None = None
        if gate_suite is None:
            for field, value in (
                ("gate_version", gate_version),
                ("gate_baseline", gate_baseline),
                ("allow_imported_results", allow_imported_results or None),
            ):
                if value is not None:
                    issues.append(SpecIssue(field, "only with gate_suite: the suite whose gate it is", value))
            return None, issues
        suite_project, sep, suite_name = gate_suite.partition("/")
        if not sep or not suite_project or not suite_name or "@" in gate_suite:
            issues.append(SpecIssue("gate_suite", "an eval suite as PROJECT/NAME (any version)", gate_suite))
        else:
            try:
                suite = self.releases.evals.suite(suite_project, suite_name)
            except NotFound:
                issues.append(SpecIssue("gate_suite", "no such eval suite", gate_suite))
            else:
                pinned, issue = _gate_version(gate_version, suite.latest_number, suite.version_count)
                if issue is not None:
                    issues.append(issue)
        if gate_baseline is not None:
            issues.extend(
                SpecIssue("gate_baseline", i.message, gate_baseline) for i in alias_issues(gate_baseline)
            )
        return pinned, issues

    def policies(self, project: str, model: str | None, *, principal: Principal) -> list[AliasPolicy]:
        """The project's default policies and the model's own (``model`` None: defaults only)."""
        if model is None:
            require(principal, "release.read", project, hide=True)
            return self.store.policies(project, None)
        return self.store.policies(project, self.releases.model(project, model, principal=principal).id)


def _gate_version(
    given: int | str | None, latest: int | None, count: int
) -> tuple[int | None, SpecIssue | None]:
    """The version a policy pins (None: ``latest``, the newest at each move) and an issue when ``given``
    is not one of the suite's versions. Nothing given: the suite's newest version now."""
    if given == "latest":
        return None, None
    if given is None:
        if latest is None:
            return None, SpecIssue("gate_suite", "the suite has no version yet: register one first")
        return latest, None
    number = given
    if isinstance(given, str) and given.removeprefix("v").isdigit():
        number = int(given.removeprefix("v"))
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= (latest or 0):
        valid = f"1-{latest}" if latest else "none yet"
        return None, SpecIssue(
            "gate_version",
            f"a version of the suite (its versions: {valid}; {count} in all), or latest",
            given,
        )
    return number, None
