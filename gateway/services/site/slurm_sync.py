"""Pushing the projects' caps to Slurm: accounts, users and associations with sacctmgr, per cluster.

A project's account and its limits go to every cluster where the project has
a queue (a project without queues: the default cluster, the first one the
site file lists), and leave the clusters where it has none any more. A site
that lists no clusters has the one it reaches, as before clusters existed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.adapters.slurm.associations import AccountSpec, Change, Limits
from gateway.adapters.slurm.protocol import SlurmAssociations
from gateway.core.access.policy import require, role_allows
from gateway.core.access.values import Principal, User
from gateway.core.audit.entry import AuditEntry
from gateway.core.projects import Project, Quota
from gateway.core.site.clusters import Cluster
from gateway.store.access.access import AccessStore

MANAGED_ACCOUNTS = "slurm_accounts_managed"


def slurm_accounts(projects: Sequence[Project], users: Sequence[User]) -> list[AccountSpec]:
    """The Slurm accounts and associations the projects call for.

    Members and leads get an association (viewers and reviewers do not submit); a user
    without an OS user, or disabled, gets none. Two gateway users on one OS
    user share its association, with the first one's caps.
    """
    os_users = {u.name: u.os_user for u in users if u.os_user and not u.disabled}
    specs = []
    for project in projects:
        members: dict[str, Limits] = {}
        for member in project.members:
            os_user = os_users.get(member.user)
            if not role_allows(member.role, "run.submit") or os_user is None or os_user in members:
                continue
            members[os_user] = _limits(member.quota)
        specs.append(
            AccountSpec(
                account=project.slurm_account,
                description=_description(project),
                limits=_limits(project.quota),
                users=members,
            )
        )
    return specs


def _limits(quota: Quota) -> Limits:
    minutes = quota.gpu_hours_per_month * 60 if quota.gpu_hours_per_month is not None else None
    return Limits(gpus=quota.gpus, gpu_minutes=minutes, submit_jobs=quota.jobs_in_queue)


def _description(project: Project) -> str:
    text = "".join(c if c.isalnum() or c in " ._-" else " " for c in (project.description or project.name))
    return " ".join(text.split())[:60] or project.name


def on_cluster(projects: Sequence[Project], cluster: str | None, default: str | None) -> list[Project]:
    """The projects with a queue on ``cluster`` (a queue naming none is on ``default``; a project with no
    queue at all is on ``default`` too); every project when ``cluster`` is None (one unnamed cluster)."""
    if cluster is None:
        return list(projects)
    return [
        p
        for p in projects
        if any((q.cluster or default) == cluster for q in p.queues) or (not p.queues and cluster == default)
    ]


@dataclass(frozen=True)
class SlurmPlan:
    """What a sync would change in Slurm, cluster by cluster, and the managed accounts before and after.

    ``by_cluster`` holds (cluster, its changes) in the site file's order; the cluster is None for a
    site that lists none (its one cluster).
    """

    by_cluster: tuple[tuple[Cluster | None, list[Change]], ...]
    managed_before: frozenset[str]
    managed_after: frozenset[str]

    @property
    def changes(self) -> list[Change]:
        """Every change, cluster after cluster."""
        return [c for _, changes in self.by_cluster for c in changes]

    @property
    def lines(self) -> list[str]:
        """Each change as one line for people (``sacctmgr``-like), after its cluster's name and a colon
        when the site names clusters (``gwlocal2: add account vision: GrpTRES gres/gpu=4``)."""
        return [
            str(c) if cluster is None else f"{cluster.name}: {c}"
            for cluster, changes in self.by_cluster
            for c in changes
        ]


class SlurmSync:
    """Pushes the projects' caps to Slurm's associations (``gw admin sync-slurm``, and site apply).

    Only accounts this gateway manages are touched: its projects' accounts
    and those it created before (kept in a site option), so two gateways, or
    a gateway and a test suite, on one cluster leave each other alone.
    ``accounts_for(cluster)`` gives a cluster's associations (None: the one
    cluster of a site that lists none, ``accounts``); ``clusters()`` the
    clusters the site file lists now.
    """

    def __init__(
        self,
        access: AccessStore,
        accounts: SlurmAssociations,
        *,
        accounts_for: Callable[[Cluster], SlurmAssociations] | None = None,
        clusters: Callable[[], Sequence[Cluster]] = lambda: (),
    ) -> None:
        self.access = access
        self.accounts = accounts
        self.accounts_for = accounts_for
        self.clusters = clusters

    def sync(self, actor: Principal, *, dry_run: bool = False) -> list[str]:
        """Make Slurm match the projects as they are now; one line per change, each audited.

        Site admins (and the operator) only: Forbidden otherwise.
        """
        require(actor, "site.admin")
        plan = self.plan(actor, self.access.projects(), self.access.users())
        if not dry_run:
            self.push(actor, plan)
        return plan.lines

    def plan(
        self,
        actor: Principal,
        projects: Sequence[Project],
        users: Sequence[User],
        *,
        clusters: Sequence[Cluster] | None = None,
    ) -> SlurmPlan:
        """What Slurm needs so that it matches ``projects`` and ``users`` on each of ``clusters`` (default:
        the stored ones; none: the one cluster); not necessarily the stored projects: a site apply plans
        against the state it is about to write. Reads Slurm, writes nothing.
        """
        require(actor, "site.admin")
        listed = list(self.clusters() if clusters is None else clusters)
        before = frozenset(self.access.option(MANAGED_ACCOUNTS, []) or [])
        wanted = frozenset(spec.account for spec in slurm_accounts(projects, users))
        default = listed[0].name if listed else None
        by_cluster = []
        targets: list[Cluster | None] = [*listed] or [None]
        for cluster in targets:
            name = cluster.name if cluster is not None else None
            desired = slurm_accounts(on_cluster(projects, name, default), users)
            changes = self._accounts(cluster).plan(desired, scope=before | wanted)
            by_cluster.append((cluster, changes))
        return SlurmPlan(tuple(by_cluster), before, wanted)

    def _accounts(self, cluster: Cluster | None) -> SlurmAssociations:
        if cluster is None or self.accounts_for is None:
            return self.accounts
        return self.accounts_for(cluster)

    def push(self, actor: Principal, plan: SlurmPlan) -> None:
        """Make the planned changes in Slurm, cluster by cluster, and audit each; remember the accounts
        now managed. Each cluster's changes are all checked before its first one runs."""
        require(actor, "site.admin")
        for cluster, changes in plan.by_cluster:
            self._accounts(cluster).apply(changes)
            name = cluster.name if cluster is not None else None
            for change in changes:
                target = change.account if change.user is None else f"{change.account}/{change.user}"
                self.access.set_option(
                    MANAGED_ACCOUNTS,
                    sorted(plan.managed_after),
                    AuditEntry(
                        actor.user,
                        f"slurm.{change.kind.replace(' ', '_')}",
                        "slurm_account",
                        target if name is None else f"{name}:{target}",
                        None,
                        actor.source,
                        dict(change.before) or None,
                        dict(change.after) or None,
                    ),
                )
        if plan.managed_before != plan.managed_after:
            self.access.set_option(MANAGED_ACCOUNTS, sorted(plan.managed_after))
