"""The site apply's checks and values: a stored project as the file writes it, the site the apply
leaves checked as a site file, no apply that locks its caller or every admin out, and each change's
audit entry and diff line (``apply.SiteService``)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from gateway.core.access.values import Principal, User
from gateway.core.audit.entry import AuditEntry
from gateway.core.projects import Project
from gateway.core.site.schema import (
    MemberSpec,
    ProjectSpec,
    QueueSpec,
    QuotaSpec,
    RetrySpec,
    SiteConfig,
    UserSpec,
)
from gateway.core.spec.errors import spec_issues
from gateway.errors import Conflict, SpecError, SpecIssue


def project_dict(project: Project) -> dict[str, Any]:
    """A stored project as the site file writes it (defaults left out)."""
    spec = ProjectSpec(
        name=project.name,
        description=project.description,
        slurm_account=project.slurm_account,
        quota=QuotaSpec(**project.quota.__dict__),
        members=[
            # a stored role is one of ROLES; MemberSpec checks it again
            MemberSpec(user=m.user, role=m.role, quota=QuotaSpec(**m.quota.__dict__))  # type: ignore[arg-type]  # str, checked
            for m in project.members
        ],
        queues=[
            QueueSpec(
                name=q.name,
                partition=q.partition,
                qos=q.qos,
                gpu_types=q.gpu_types,
                max_walltime_min=q.max_walltime_min,
                retry=RetrySpec(**q.retry) if q.retry else None,
                whole_node_mem=q.whole_node_mem,
                cluster=q.cluster,
            )
            for q in project.queues
        ],
    )
    return spec.model_dump(mode="json", exclude_defaults=True)


def audit_entry(
    actor: Principal,
    action: str,
    target_type: str,
    target_id: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    project: str | None = None,
) -> AuditEntry:
    """The audit entry of one change the apply makes, by ``actor``."""
    return AuditEntry(actor.user, action, target_type, target_id, project, actor.source, before, after)


def check_with_kept(config: SiteConfig, users: dict[str, User], projects: dict[str, Project]) -> None:
    """SpecError unless the site the apply leaves (the file plus what it keeps) is a valid site file.

    A kept user who maps to root under a file that turns allow_root_mapping
    off, or a kept project whose Slurm account a new one takes, would be
    refused in a file: so they are here.
    """
    try:
        SiteConfig(
            allow_root_mapping=config.allow_root_mapping,
            clusters=config.clusters,
            users=[
                UserSpec(name=u.name, os_user=u.os_user, admin=u.is_admin, disabled=u.disabled)
                for u in users.values()
            ],
            projects=[ProjectSpec.model_validate(project_dict(p)) for p in projects.values()],
        )
    except ValidationError as exc:
        issues = [
            SpecIssue(
                i.path, f"{i.message} (counting the users and projects kept: pass prune to remove them)"
            )
            for i in spec_issues(exc, SiteConfig)
        ]
        raise SpecError(issues, what="site file") from exc


def refuse_lockout(actor: Principal, users_now: dict[str, User], users_after: dict[str, User]) -> None:
    """Conflict when the apply would remove its caller, or leave a site that had an admin without one."""
    if actor.user in users_now and actor.user not in users_after:
        raise Conflict(
            f"the site file leaves out {actor.user}, who is applying it: a site apply never removes its "
            "caller; list them in the file, or have another admin remove them"
        )
    admins_now = sorted(n for n, u in users_now.items() if u.is_admin and not u.disabled)
    admins_after = [n for n, u in users_after.items() if u.is_admin and not u.disabled]
    if admins_now and not admins_after:
        raise Conflict(
            f"the site file would leave no enabled admin (now: {', '.join(admins_now)}); "
            "keep at least one user with admin: true (and not disabled)"
        )


def flat_option(option: dict[str, Any]) -> dict[str, Any]:
    """The retention option as one level of keys (``default.logs_days``, ``project.p.logs_days``)."""
    flat = {f"default.{k}": v for k, v in (option.get("default") or {}).items()}
    for name, fields in (option.get("projects") or {}).items():
        flat.update({f"project.{name}.{k}": v for k, v in fields.items()})
    return flat


def diff_line(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The fields that changed, ``key old -> new`` (a new key: ``key new``), for a change's line."""
    parts = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            parts.append(f"{key} {_short(old)} -> {_short(new)}" if key in before else f"{key} {_short(new)}")
    return ", ".join(parts) or "no field changed"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
