"""The declarative site file: users, projects, members, queues and quotas, and the rate table.

``parse_site`` reads and validates one; ``SiteService``
(``gateway.services.site.apply``) makes the database match it, idempotently,
and exports the current state in the same format; ``slurm_accounts``
(``gateway.services.site.slurm_sync``) turns the projects into the Slurm
associations that ``gw admin sync-slurm`` (and apply) push with sacctmgr.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.core import names
from gateway.core.described import Account, GpuType, Name, OsUser, documented
from gateway.core.projects import Member, Project, Queue, Quota
from gateway.core.retention.policy import RetentionSpec
from gateway.core.runs.failure_classes import CLASSES as FAILURE_CLASSES
from gateway.core.runs.failure_classes import DEFAULT_RETRIED
from gateway.core.site.cluster_spec import ClusterSpec
from gateway.core.site.rates import AccountingSpec
from gateway.core.site.secrets import HeldSecretSpec, SiteSecretSpec
from gateway.core.spec.errors import spec_issues
from gateway.core.yaml_input import SPEC_LIMITS, load_yaml
from gateway.errors import SpecError

ALLOW_ROOT = "allow_root_mapping"
CLUSTERS = "clusters"  # the site option holding the clusters (a list of ClusterSpec dicts)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _name(value: str) -> str:
    if not names.NAME.fullmatch(value):
        raise ValueError(f"not a valid name; use {names.NAME_HELP}")
    return value


class QuotaSpec(_Strict):
    gpus: Annotated[int, Field(ge=0)] | None = None
    gpu_hours_per_month: Annotated[int, Field(ge=0)] | None = None
    jobs_in_queue: Annotated[int, Field(ge=0)] | None = None

    def domain(self) -> Quota:
        """These caps as the domain's ``Quota``."""
        return Quota(self.gpus, self.gpu_hours_per_month, self.jobs_in_queue)


class UserSpec(_Strict):
    name: Name
    os_user: OsUser | None = None
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
    role: Literal["viewer", "reviewer", "member", "lead"] = "member"
    quota: QuotaSpec = QuotaSpec()


class RetrySpec(_Strict):
    """A queue's retry policy (see gateway/core/runs/retry.py)."""

    classes: list[Annotated[str, documented(enum=list(FAILURE_CLASSES))]] = list(DEFAULT_RETRIED)
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
    name: Name
    partition: Name
    # the cluster whose partition it is: one the site file's clusters names; default: the first
    cluster: Name | None = None
    qos: Name | None = None
    gpu_types: list[GpuType] = Field(default_factory=list)
    max_walltime_min: Annotated[int, Field(ge=1)] | None = None
    retry: RetrySpec | None = None
    # --mem=0 (mem_gb 0: all of each node's memory) is allowed on this queue; refused elsewhere
    whole_node_mem: bool = False

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
    name: Name
    description: str = ""
    slurm_account: Account | None = None  # default: the project's name, lower-cased
    quota: QuotaSpec = QuotaSpec()
    members: list[MemberSpec] = Field(default_factory=list)
    queues: list[QueueSpec] = Field(default_factory=list)
    # secrets the project holds, by reference (core/site/secrets.py); runs name them {project: NAME}
    secrets: list[HeldSecretSpec] = Field(default_factory=list)
    # this project's retention policy, field by field over the site's (docs/retention.md)
    retention: RetentionSpec | None = None

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
        """The project's Slurm account: ``slurm_account``, else its name lower-cased."""
        return self.slurm_account or self.name.lower()

    def domain(self) -> Project:
        """This project as the domain's ``Project``, members sorted by user and queues by name."""
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
                        q.whole_node_mem,
                        q.cluster,
                    )
                    for q in self.queues
                ),
                key=lambda q: q.name,
            ),
        )


class SiteConfig(_Strict):
    allow_root_mapping: bool = False
    # the Slurm clusters, the first being the default one; none listed: the one cluster the server
    # reaches as it is set up (named by Slurm's ClusterName), as before clusters existed
    clusters: list[ClusterSpec] = Field(default_factory=list)
    users: list[UserSpec] = Field(default_factory=list)
    projects: list[ProjectSpec] = Field(default_factory=list)
    accounting: AccountingSpec | None = None  # the rate table (core/site/rates.py); None: unchanged
    # secrets the site holds, by reference (core/site/secrets.py); runs name them {site: NAME}
    secrets: list[SiteSecretSpec] = Field(default_factory=list)
    # the site's default retention policy (core/retention/policy.py); with no project's either: unchanged
    retention: RetentionSpec | None = None

    @property
    def retention_given(self) -> bool:
        """Whether the file says anything of retention (else an apply leaves the policies as they are)."""
        return self.retention is not None or any(p.retention is not None for p in self.projects)

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
        _check_clusters(self)
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
            held = [s.name for s in project.secrets]
            if len(set(held)) != len(held):
                raise ValueError(f"project {project.name} lists a secret twice")
        held = [s.name for s in self.secrets]
        if len(set(held)) != len(held):
            raise ValueError("a site secret is listed twice")
        for secret in self.secrets:
            unknown = sorted(set(secret.projects) - set(projects))
            if unknown:
                raise ValueError(f"site secret {secret.name} names unknown projects: {', '.join(unknown)}")
        return self


def _check_clusters(config: SiteConfig) -> None:
    """Cluster names unique; every queue's cluster, and every cluster with rates of its own, one of them
    (none may be named when none is listed)."""
    clusters = [c.name for c in config.clusters]
    if len(set(clusters)) != len(clusters):
        raise ValueError("a cluster is listed twice")
    reached = [
        (c.submit_host and (c.submit_host.host, c.submit_host.port), c.slurm_conf or c.slurm_name or c.name)
        for c in config.clusters
    ]  # a -M name or slurm.conf is another cluster's on another submit host
    if len(set(reached)) != len(reached):
        raise ValueError(
            "two clusters are reached the same way (the same slurm_conf or -M name, on the same submit host)"
        )
    for project in config.projects:
        for queue in project.queues:
            if queue.cluster is not None and queue.cluster not in clusters:
                valid = ", ".join(clusters) if clusters else "none: the site file lists no clusters"
                raise ValueError(
                    f"project {project.name} queue {queue.name} names cluster {queue.cluster!r}, which the "
                    f"site file does not list; clusters are: {valid}"
                )
    priced = sorted(config.accounting.clusters) if config.accounting else []
    for name in priced:
        if name not in clusters:
            valid = ", ".join(clusters) if clusters else "none: the site file lists no clusters"
            raise ValueError(
                f"accounting.clusters has rates for cluster {name!r}, which the site file does not list; "
                f"clusters are: {valid} (the site's own rates price a site without clusters)"
            )


def parse_site(text: str, *, source: str | None = None) -> SiteConfig:
    """A site file's text (YAML or JSON, bounded by ``SPEC_LIMITS``) as a SiteConfig; raises SpecError."""
    data = load_yaml(text, limits=SPEC_LIMITS, what="site file", source=source) or {}
    try:
        return SiteConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(spec_issues(exc, SiteConfig), source, what="site file") from exc
