"""The declarative site file: users, projects, members, queues and quotas.

``apply`` makes the database match a site file, idempotently, and returns
what it changed (each change audited); ``export`` writes the current state in
the same format. ``slurm_accounts`` turns the projects into the Slurm
associations that ``gw admin sync-slurm`` (and apply) push with sacctmgr.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.core import names
from gateway.core.failures import CLASSES as FAILURE_CLASSES
from gateway.core.spec_errors import spec_issues
from gateway.domain import Member, Principal, Project, Queue, Quota, User
from gateway.errors import SpecError, SpecIssue
from gateway.services.policy import require
from gateway.store.access import AccessStore
from gateway.store.audit import AuditEntry

ALLOW_ROOT = "allow_root_mapping"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _name(value: str) -> str:
    if not names.NAME.fullmatch(value):
        raise ValueError(f"not a valid name; use {names.NAME_HELP}")
    return value


class QuotaSpec(_Strict):
    gpus: Annotated[int, Field(ge=0)] | None = None
    gpu_hours_per_month: Annotated[int, Field(ge=0)] | None = None
    jobs_in_queue: Annotated[int, Field(ge=0)] | None = None

    def domain(self) -> Quota:
        return Quota(self.gpus, self.gpu_hours_per_month, self.jobs_in_queue)


class UserSpec(_Strict):
    name: str
    os_user: str | None = None
    admin: bool = False
    disabled: bool = False

    @field_validator("name")
    @classmethod
    def _user_name(cls, value: str) -> str:
        return _name(value)

    @field_validator("os_user")
    @classmethod
    def _os_user(cls, value: str | None) -> str | None:
        if value is not None and not names.OS_USER.fullmatch(value):
            raise ValueError(f"not a valid OS user name; use {names.OS_USER_HELP}")
        return value


class MemberSpec(_Strict):
    user: str
    role: Literal["viewer", "member", "lead"] = "member"
    quota: QuotaSpec = QuotaSpec()


class RetrySpec(_Strict):
    """A queue's retry policy (see gateway/core/retry.py)."""

    classes: list[str] = ["preempted", "node_failure"]
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 3
    backoff_s: Annotated[float, Field(ge=0, le=86_400)] = 30.0
    exclude_failed_nodes: bool = True

    @field_validator("classes")
    @classmethod
    def _classes(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in FAILURE_CLASSES]
        if unknown:
            raise ValueError(
                f"unknown failure class {unknown[0]!r}; classes are: {', '.join(FAILURE_CLASSES)}"
            )
        return value


class QueueSpec(_Strict):
    name: str
    partition: str
    qos: str | None = None
    gpu_types: list[str] = Field(default_factory=list)
    max_walltime_min: Annotated[int, Field(ge=1)] | None = None
    retry: RetrySpec | None = None

    @field_validator("name", "partition", "qos")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else _name(value)

    @field_validator("gpu_types")
    @classmethod
    def _gpu_types(cls, value: list[str]) -> list[str]:
        for item in value:
            if not names.GPU_TYPE.fullmatch(item):
                raise ValueError(f"GPU type {item!r} is not valid; use {names.GPU_TYPE_HELP}")
        return value


class ProjectSpec(_Strict):
    name: str
    description: str = ""
    slurm_account: str | None = None  # default: the project's name, lower-cased
    quota: QuotaSpec = QuotaSpec()
    members: list[MemberSpec] = Field(default_factory=list)
    queues: list[QueueSpec] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _project_name(cls, value: str) -> str:
        return _name(value)

    @field_validator("slurm_account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not names.ACCOUNT.fullmatch(value):
            raise ValueError(f"not a valid Slurm account; use {names.ACCOUNT_HELP}")
        return value

    @property
    def account(self) -> str:
        return self.slurm_account or self.name.lower()

    def domain(self) -> Project:
        return Project(
            name=self.name,
            description=self.description,
            slurm_account=self.account,
            quota=self.quota.domain(),
            members=sorted(
                (Member(m.user, m.role, m.quota.domain()) for m in self.members), key=lambda m: m.user
            ),
            queues=sorted(
                (
                    Queue(
                        q.name,
                        q.partition,
                        q.qos,
                        list(q.gpu_types),
                        q.max_walltime_min,
                        q.retry.model_dump() if q.retry else None,
                    )
                    for q in self.queues
                ),
                key=lambda q: q.name,
            ),
        )


class SiteConfig(_Strict):
    allow_root_mapping: bool = False
    users: list[UserSpec] = Field(default_factory=list)
    projects: list[ProjectSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> SiteConfig:
        users = [u.name for u in self.users]
        if len(set(users)) != len(users):
            raise ValueError("a user is listed twice")
        projects = [p.name for p in self.projects]
        if len(set(projects)) != len(projects):
            raise ValueError("a project is listed twice")
        accounts = [p.account for p in self.projects]
        if len(set(accounts)) != len(accounts):
            raise ValueError("two projects share one Slurm account")
        for user in self.users:
            if user.os_user == "root" and not self.allow_root_mapping:
                raise ValueError(
                    f"user {user.name} maps to root; set allow_root_mapping: true to allow that explicitly"
                )
        for project in self.projects:
            members = [m.user for m in project.members]
            if len(set(members)) != len(members):
                raise ValueError(f"project {project.name} lists a member twice")
            unknown = sorted(set(members) - set(users))
            if unknown:
                raise ValueError(f"project {project.name} names unknown users: {', '.join(unknown)}")
            queue_names = [q.name for q in project.queues]
            if len(set(queue_names)) != len(queue_names):
                raise ValueError(f"project {project.name} lists a queue twice")
        return self


def parse_site(text: str, *, source: str | None = None) -> SiteConfig:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue("", f"not valid YAML: {exc}")], source, what="site file") from exc
    try:
        return SiteConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(spec_issues(exc, SiteConfig), source, what="site file") from exc


def _project_dict(project: Project) -> dict[str, Any]:
    spec = ProjectSpec(
        name=project.name,
        description=project.description,
        slurm_account=project.slurm_account,
        quota=QuotaSpec(**project.quota.__dict__),
        members=[
            MemberSpec(user=m.user, role=m.role, quota=QuotaSpec(**m.quota.__dict__)) for m in project.members
        ],
        queues=[
            QueueSpec(
                name=q.name,
                partition=q.partition,
                qos=q.qos,
                gpu_types=q.gpu_types,
                max_walltime_min=q.max_walltime_min,
                retry=RetrySpec(**q.retry) if q.retry else None,
            )
            for q in project.queues
        ],
    )
    return spec.model_dump(mode="json", exclude_defaults=True)


class SiteService:
    def __init__(self, access: AccessStore) -> None:
        self.access = access

    def export(self, actor: Principal | None) -> SiteConfig:
        if actor is not None:
            require(actor, "site.admin")
        return SiteConfig(
            allow_root_mapping=bool(self.access.option(ALLOW_ROOT, False)),
            users=[
                UserSpec(name=u.name, os_user=u.os_user, admin=u.is_admin, disabled=u.disabled)
                for u in self.access.users()
            ],
            projects=[ProjectSpec.model_validate(_project_dict(p)) for p in self.access.projects()],
        )

    def apply(self, actor: Principal | None, config: SiteConfig, *, dry_run: bool = False) -> list[str]:
        """Make the database match ``config``; returns one line per change (none when it already does)."""
        if actor is not None:
            require(actor, "site.admin")
        who = actor.user if actor else "operator"
        source = actor.source if actor else "gateway host"
        changes: list[str] = []

        def audit(action: str, target_type: str, target_id: str, before, after, project=None) -> AuditEntry:
            return AuditEntry(who, action, target_type, target_id, project, source, before, after)

        current_root = bool(self.access.option(ALLOW_ROOT, False))
        if current_root != config.allow_root_mapping:
            changes.append(f"set allow_root_mapping: {current_root} -> {config.allow_root_mapping}")
            if not dry_run:
                self.access.set_option(
                    ALLOW_ROOT,
                    config.allow_root_mapping,
                    audit(
                        "site.option",
                        "site",
                        ALLOW_ROOT,
                        {"value": current_root},
                        {"value": config.allow_root_mapping},
                    ),
                )

        users_now = {u.name: u for u in self.access.users()}
        for spec in config.users:
            wanted = User(spec.name, spec.os_user, spec.admin, spec.disabled)
            have = users_now.get(spec.name)
            if have == wanted:
                continue
            verb = "add" if have is None else "change"
            changes.append(
                f"{verb} user {spec.name}: {_diff(have.__dict__ if have else {}, wanted.__dict__)}"
            )
            if not dry_run:
                self.access.put_user(
                    wanted,
                    audit(
                        f"user.{verb}", "user", spec.name, have.__dict__ if have else None, wanted.__dict__
                    ),
                )

        projects_now = {p.name: p for p in self.access.projects()}
        wanted_projects = {p.name: p.domain() for p in config.projects}
        for name, wanted in wanted_projects.items():
            have = projects_now.get(name)
            if have == wanted:
                continue
            before = _project_dict(have) if have else {}
            after = _project_dict(wanted)
            verb = "add" if have is None else "change"
            changes.append(f"{verb} project {name}: {_diff(before, after)}")
            if not dry_run:
                self.access.put_project(
                    wanted, audit(f"project.{verb}", "project", name, before or None, after, name)
                )
        for name, have in projects_now.items():
            if name not in wanted_projects:
                changes.append(f"remove project {name}")
                if not dry_run:
                    self.access.delete_project(
                        name, audit("project.remove", "project", name, _project_dict(have), None, name)
                    )

        wanted_users = {u.name for u in config.users}
        for name, have in users_now.items():
            if name not in wanted_users:
                changes.append(f"remove user {name}")
                if not dry_run:
                    self.access.delete_user(name, audit("user.remove", "user", name, have.__dict__, None))
        return changes


def _diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    parts = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            parts.append(f"{key} {_short(old)} -> {_short(new)}" if key in before else f"{key} {_short(new)}")
    return ", ".join(parts) or "no field changed"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
