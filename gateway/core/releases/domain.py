"""Domain values of the model registry: models, releases, alias moves, protection policies, promotions.

Plain frozen dataclasses (ORM rows never leave the store) and the pure rules
over them: naming (``parse_release_ref``), what an alias pointed at when
(``alias_at``), and what a protection policy still misses for a move
(``missing_for_move``). No I/O here.

    RegisteredModel --has--> Release (version N, one artifact sha256, immutable)
                    --has--> AliasEvent (alias, from -> to, who, when, why, approvals, gate, override)
                    --has--> AliasPolicy (per model, or per project default: roles, approvals, gate suite)
    PromotionRequest (alias -> release) --decided by--> PromotionDecision (approve | reject)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from gateway.core.names import NAME

ReleaseStatus = Literal["active", "deprecated", "withdrawn"]
RELEASE_STATUSES: tuple[str, ...] = ("active", "deprecated", "withdrawn")
REQUEST_STATUSES: tuple[str, ...] = ("open", "approved", "rejected", "promoted", "cancelled")
DECISIONS: tuple[str, ...] = ("approve", "reject")
POLICY_ROLES: tuple[str, ...] = ("member", "lead", "admin")
# the severities an advisory rule may name, in rising order (OSV's database_specific.severity)
ADVISORY_SEVERITIES: tuple[str, ...] = ("LOW", "MODERATE", "HIGH", "CRITICAL")

# An alias: lower-case, short, a word people say ("prod", "candidate", "eu-staging").
ALIAS = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# A release number (from 1, no leading zero), as a path or ref selector; or latest.
RELEASE_NUMBER = r"v?[1-9][0-9]{0,8}"
MAX_RELEASE_NUMBER = 999_999_999  # nine digits, as RELEASE_NUMBER allows
VERSION_SELECTOR = rf"latest|{RELEASE_NUMBER}"
# A time ``parse_at`` reads: a real date (leap days included), then [Thh:mm[:ss[.ffffff]][zone]].
_YEAR = r"(?:[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])"  # 1000-9998: any zone stays in range
_LEAP_YEAR = r"(?:[1-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:1[26]|[2468][048]|[3579][26])00)"
_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_CLOCK = r"(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?"
_ZONE = r"[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"
AT = re.compile(rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)(?:[T ]{_CLOCK}(?:{_ZONE})?)?")
ALIAS_HELP = "1-32 characters: lower-case letters, digits, '_' or '-', starting with a letter (e.g. prod)"
MODEL_REF_HELP = "PROJECT/NAME (e.g. demo/tiny-lm)"
RELEASE_REF_HELP = "PROJECT/NAME@VERSION (e.g. demo/tiny-lm@3; VERSION a number, v3, or latest)"
NOTES_MAX = 16 * 1024
REASON_MAX = 4 * 1024


@dataclass(frozen=True)
class RegisteredModel:
    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime

    @property
    def ref(self) -> str:
        """``project/name``."""
        return f"{self.project}/{self.name}"


@dataclass(frozen=True)
class Release:
    """One version of a model: exactly one artifact of a completed run, and the evidence snapshot taken
    when it was created (run, attempts, data versions and digests, code, image, params, evals, gates).

    Its fields never change; ``status`` is derived from its status events (newest wins).
    """

    id: str
    model_id: str
    project: str
    model: str
    version: int
    artifact_sha256: str
    artifact_path: str
    run_id: str
    notes: str
    snapshot: dict[str, Any]
    created_by: str
    created_at: datetime
    status: ReleaseStatus = "active"
    status_events: tuple[StatusEvent, ...] = ()

    @property
    def ref(self) -> str:
        """``project/name@version``."""
        return f"{self.project}/{self.model}@{self.version}"


@dataclass(frozen=True)
class StatusEvent:
    """A release marked deprecated or withdrawn (or active again), with why: an event, never an edit."""

    id: str
    release_id: str
    status: ReleaseStatus
    reason: str
    actor: str
    at: datetime


@dataclass(frozen=True)
class AliasEvent:
    """One move of an alias (append-only). ``to_release`` None: the alias was removed."""

    id: str
    model_id: str
    alias: str
    seq: int  # per (model, alias), from 1
    from_release: str | None
    to_release: str | None
    from_version: int | None
    to_version: int | None
    actor: str
    at: datetime
    reason: str
    request_id: str | None = None
    approvals: tuple[str, ...] = ()  # users whose approvals allowed it
    gate_id: str | None = None  # the gate decision the gateway made for this move (the one that counted)
    override: bool = False  # a failed or missing gate was overridden (reason says why)
    policy: dict[str, Any] | None = None  # the policy in force, as it was then


@dataclass(frozen=True)
class AliasPolicy:
    """Who may move ``alias`` and on what evidence. ``model_id`` None: the project's default.

    ``roles``: the least roles that may move it (member, lead, admin); ``approvals``: distinct approvers
    needed besides the requester; ``gate_suite``: ``project/name`` of an eval suite whose gate, decided
    by the gateway at the move, must pass (None: no gate needed): on version ``gate_version`` of the
    suite (None: its newest version), on the release's artifact, against the release that alias
    ``gate_baseline`` points at then (None: this alias; no baseline only while it points at nothing).
    ``allow_imported_results``: whether that gate may count eval results imported from outside the
    gateway (``gw eval import``); by default only results of the gateway's own eval runs count.
    ``advisory_severity``: the least severity (LOW, MODERATE, HIGH, CRITICAL) of a known advisory in
    the environment version the release's run used that refuses a move (None: no advisory rule).
    """

    project: str
    alias: str
    model_id: str | None
    roles: tuple[str, ...]
    approvals: int
    gate_suite: str | None
    updated_by: str
    updated_at: datetime
    gate_version: int | None = None
    gate_baseline: str | None = None
    allow_imported_results: bool = False
    advisory_severity: str | None = None

    @property
    def baseline_alias(self) -> str:
        """The alias whose release the gate compares with: ``gate_baseline``, else this one."""
        return self.gate_baseline or self.alias

    def as_dict(self) -> dict[str, Any]:
        """The policy as it is recorded in an alias move (JSON-ready)."""
        gate = {}
        if self.gate_suite is not None:
            gate = {
                "gate_version": self.gate_version if self.gate_version is not None else "latest",
                "gate_baseline": self.baseline_alias,
                "allow_imported_results": self.allow_imported_results,
            }
        return {
            "scope": "model" if self.model_id else "project",
            "alias": self.alias,
            "roles": list(self.roles),
            "approvals": self.approvals,
            "gate_suite": self.gate_suite,
            **gate,
            **({"advisory_severity": self.advisory_severity} if self.advisory_severity else {}),
        }


@dataclass(frozen=True)
class PromotionDecision:
    id: str
    request_id: str
    decision: Literal["approve", "reject"]
    decider: str
    note: str
    at: datetime


@dataclass(frozen=True)
class PromotionRequest:
    """A request to point ``alias`` at a release, and the decisions on it (visible to the project)."""

    id: str
    model_id: str
    project: str
    model: str
    alias: str
    release_id: str
    version: int
    requested_by: str
    reason: str
    at: datetime
    status: str  # open | approved | rejected | promoted | cancelled
    decisions: tuple[PromotionDecision, ...] = field(default_factory=tuple)

    def approvers(self) -> list[str]:
        """Distinct users whose newest decision approves, the requester never counted."""
        newest: dict[str, str] = {}
        for d in sorted(self.decisions, key=lambda d: d.at):
            newest[d.decider] = d.decision
        return sorted(u for u, d in newest.items() if d == "approve" and u != self.requested_by)

    def rejected_by(self) -> list[str]:
        """Distinct users whose newest decision rejects."""
        newest: dict[str, str] = {}
        for d in sorted(self.decisions, key=lambda d: d.at):
            newest[d.decider] = d.decision
        return sorted(u for u, d in newest.items() if d == "reject")


# -- naming -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseRef:
    project: str
    name: str
    version: int | None  # None: the latest (or no version named, for a model)


_REF = re.compile(
    rf"(?P<project>{NAME.pattern})/(?P<name>{NAME.pattern})(?:@(?P<version>latest|v?[0-9]{{1,9}}))?"
)


def parse_release_ref(text: str, *, version: bool | None = None) -> ReleaseRef:
    """``PROJECT/NAME[@VERSION]`` -> ReleaseRef; ValueError saying what is valid.

    ``version`` True: a version must be named; False: it must not; None: either.
    """
    match = _REF.fullmatch(text or "")
    help_text = MODEL_REF_HELP if version is False else RELEASE_REF_HELP
    if not match:
        raise ValueError(f"{text!r} is not valid; use {help_text}")
    given = match["version"]
    if version is True and given is None:
        raise ValueError(f"{text!r} names no version; use {RELEASE_REF_HELP}")
    if version is False and given is not None:
        raise ValueError(f"{text!r} names a version; a model is {MODEL_REF_HELP}")
    number = None if given in (None, "latest") else int(given.removeprefix("v"))
    if number == 0:
        raise ValueError(f"{text!r}: versions are numbered from 1")
    return ReleaseRef(match["project"], match["name"], number)


def check_alias(alias: str) -> str:
    """``alias`` if it matches :data:`ALIAS`; ValueError saying what is valid."""
    if not isinstance(alias, str) or not ALIAS.fullmatch(alias):
        raise ValueError(f"alias {alias!r} is not valid: {ALIAS_HELP}")
    return alias


def parse_at(text: str) -> datetime:
    """An ISO 8601 time (``2026-11-03T14:00``, ``...Z`` or ``...+01:00``) as aware UTC; a time without a
    zone is UTC. ValueError saying what is valid."""
    try:
        if not isinstance(text, str) or not AT.fullmatch(text):
            raise ValueError(text)
        at = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"time {text!r} is not valid; use ISO 8601, e.g. 2026-11-03T14:00 (UTC) or 2026-11-03T14:00+01:00"
        ) from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


# -- rules --------------------------------------------------------------------------------------


def alias_at(events: Sequence[AliasEvent], at: datetime) -> AliasEvent | None:
    """The move that set the alias as it stood at ``at`` (the newest one at or before it); None when the
    alias did not exist yet then. ``events`` of one alias, any order."""
    before = [e for e in events if e.at <= at]
    return max(before, key=lambda e: e.seq) if before else None


@dataclass(frozen=True)
class MoveCheck:
    """What a move still misses under a policy; ``ok`` when nothing."""

    missing: tuple[str, ...]
    # all that is missing is what an override can stand in for: a passing gate, and the advisory rule
    gate_failed: bool

    @property
    def ok(self) -> bool:
        """Nothing is missing."""
        return not self.missing


def role_meets(role: str | None, is_admin: bool, roles: Sequence[str]) -> bool:
    """Whether a caller with project ``role`` (admin: site admin) is one of the policy's ``roles``
    (each a least role: ``member`` lets members and leads move it)."""
    if is_admin:
        return True
    rank = {"member": 2, "lead": 3}
    have = rank.get(role or "", 0)
    return any(have >= rank[r] for r in roles if r in rank)


def missing_for_move(
    policy: AliasPolicy | None,
    *,
    role: str | None,
    is_admin: bool,
    approvers: Sequence[str],
    gate_verdict: str | None,
    release_status: str,
    gate_detail: str = "",
    advisories: AdvisoryCheck | None = None,
) -> MoveCheck:
    """What the move of an alias to a release lacks. ``approvers``: distinct approvers besides the
    requester; ``gate_verdict``: the verdict of the gate the gateway decided for this move on the
    policy's terms (None: it could not decide one; ``gate_detail`` says why, or what it decided);
    ``advisories``: the release's training environment checked against the site's advisories (None:
    not checked, so the policy's advisory rule, if any, is missing). A withdrawn release is never
    promoted. An override (a lead's, with a reason) stands in for the gate and the advisory rule."""
    missing: list[str] = []
    if release_status == "withdrawn":
        missing.append("the release is withdrawn: a withdrawn release cannot be promoted")
    if policy is None:
        return MoveCheck(tuple(missing), False)
    if not role_meets(role, is_admin, policy.roles):
        missing.append(
            f"your role ({'admin' if is_admin else role or 'none'}) may not move {policy.alias}: "
            f"it needs {' or '.join(policy.roles)}"
        )
    if len(approvers) < policy.approvals:
        have = f" (have: {', '.join(approvers)})" if approvers else ""
        missing.append(
            f"{policy.approvals} approval(s) by someone other than the requester; {len(approvers)} given"
            f"{have}: `gw release request-promotion`, then `gw release approve`"
        )
    overridable = 0
    if policy.gate_suite is not None and gate_verdict != "pass":
        overridable += 1
        seen = gate_detail or (
            f"the gateway's gate decision is {gate_verdict}" if gate_verdict else "no gate decision recorded"
        )
        missing.append(f"a passing gate of suite {policy.gate_suite} on the release's artifact ({seen})")
    if policy.advisory_severity is not None:
        blocking = advisory_missing(policy.advisory_severity, advisories)
        if blocking is not None:
            overridable += 1
            missing.append(blocking)
    return MoveCheck(tuple(missing), overridable > 0 and len(missing) == overridable)


@dataclass(frozen=True)
class AdvisoryCheck:
    """The release's training environment against the site's advisories, for the advisory rule.

    ``environment``: the version's ref (None: the run named no registered environment);
    ``findings``: (advisory id, severity, package, version) of every advisory that affects it;
    ``unchecked``: why it could not be checked (no advisory directory, the run is gone ...)."""

    environment: str | None
    findings: tuple[tuple[str, str, str, str], ...] = ()
    unchecked: str | None = None

    def at_least(self, severity: str) -> tuple[tuple[str, str, str, str], ...]:
        """The findings of ``severity`` or worse."""
        floor = ADVISORY_SEVERITIES.index(severity)
        return tuple(
            f
            for f in self.findings
            if f[1] in ADVISORY_SEVERITIES and ADVISORY_SEVERITIES.index(f[1]) >= floor
        )


def advisory_missing(severity: str, check: AdvisoryCheck | None) -> str | None:
    """What the advisory rule (``severity`` or worse refuses) misses given ``check``; None: nothing."""
    rule = f"no known advisory of severity {severity} or worse in the training environment"
    if check is None:
        return f"{rule} (not checked)"
    if check.unchecked is not None:
        return f"{rule} ({check.unchecked})"
    found = check.at_least(severity)
    if not found:
        return None
    listed = "; ".join(f"{a} ({sev}) in {pkg} {ver}" for a, sev, pkg, ver in found)
    return f"{rule}: {check.environment} has {len(found)}: {listed} (`gw env scan {check.environment}`)"
