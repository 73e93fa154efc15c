"""Pushing the projects' caps to Slurm: accounts, users and associations with sacctmgr."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.adapters.slurm.associations import AccountSpec, Change, Limits
from gateway.adapters.slurm.protocol import SlurmAssociations
from gateway.core.access.policy import require, role_allows
from gateway.core.audit.entry import AuditEntry
from gateway.core.domain import Principal, Project, Quota, User
from gateway.store.access import AccessStore

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


@dataclass(frozen=True)
class SlurmPlan:
    """What a sync would change in Slurm, and the managed accounts before and after it."""

    changes: list[Change]
    managed_before: frozenset[str]
    managed_after: frozenset[str]

    @property
    def lines(self) -> list[str]:
        """Each change as one line for people (``sacctmgr``-like)."""
        return [str(c) for c in self.changes]


class SlurmSync:
    """Pushes the projects' caps to Slurm's associations (``gw admin sync-slurm``, and site apply).

    Only accounts this gateway manages are touched: its projects' accounts
    and those it created before (kept in a site option), so two gateways, or
    a gateway and a test suite, on one cluster leave each other alone.
    """

    def __init__(self, access: AccessStore, accounts: SlurmAssociations) -> None:
        self.access = access
        self.accounts = accounts

    def sync(self, actor: Principal, *, dry_run: bool = False) -> list[str]:
        """Make Slurm match the projects as they are now; one line per change, each audited.

        Site admins (and the operator) only: Forbidden otherwise.
        """
        require(actor, "site.admin")
        plan = self.plan(actor, self.access.projects(), self.access.users())
        if not dry_run:
            self.push(actor, plan)
        return plan.lines

    def plan(self, actor: Principal, projects: Sequence[Project], users: Sequence[User]) -> SlurmPlan:
        """What Slurm needs so that it matches ``projects`` and ``users`` (not necessarily the stored
        ones: a site apply plans against the state it is about to write). Reads Slurm, writes nothing.
        """
        require(actor, "site.admin")
        desired = slurm_accounts(projects, users)
        before = frozenset(self.access.option(MANAGED_ACCOUNTS, []) or [])
        wanted = frozenset(spec.account for spec in desired)
        changes = self.accounts.plan(desired, scope=before | wanted)
        return SlurmPlan(changes, before, wanted)

    def push(self, actor: Principal, plan: SlurmPlan) -> None:
        """Make the planned changes in Slurm and audit each; remember the accounts now managed."""
        require(actor, "site.admin")
        self.accounts.apply(plan.changes)
        for change in plan.changes:
            self.access.set_option(
                MANAGED_ACCOUNTS,
                sorted(plan.managed_after),
                AuditEntry(
                    actor.user,
                    f"slurm.{change.kind.replace(' ', '_')}",
                    "slurm_account",
                    change.account if change.user is None else f"{change.account}/{change.user}",
                    None,
                    actor.source,
                    dict(change.before) or None,
                    dict(change.after) or None,
                ),
            )
        if plan.managed_before != plan.managed_after:
            self.access.set_option(MANAGED_ACCOUNTS, sorted(plan.managed_after))
