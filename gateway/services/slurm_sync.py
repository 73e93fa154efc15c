"""Pushing the projects' caps to Slurm: accounts, users and associations with sacctmgr."""

from __future__ import annotations

from gateway.adapters.slurm.accounts import AccountSpec, Limits, SlurmAccounts
from gateway.domain import Principal, Project, Quota, User
from gateway.services.policy import require
from gateway.store.access import AccessStore
from gateway.store.audit import AuditEntry

MANAGED_ACCOUNTS = "slurm_accounts_managed"


def slurm_accounts(projects: list[Project], users: list[User]) -> list[AccountSpec]:
    """The Slurm accounts and associations the projects call for.

    Members and leads get an association (viewers do not submit); a user
    without an OS user, or disabled, gets none. Two gateway users on one OS
    user share its association, with the first one's caps.
    """
    os_users = {u.name: u.os_user for u in users if u.os_user and not u.disabled}
    specs = []
    for project in projects:
        members: dict[str, Limits] = {}
        for member in project.members:
            os_user = os_users.get(member.user)
            if member.role == "viewer" or os_user is None or os_user in members:
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


class SlurmSync:
    """Pushes the projects' caps to Slurm's associations (``gw admin sync-slurm``, and apply)."""

    def __init__(self, access: AccessStore, accounts: SlurmAccounts) -> None:
        self.access = access
        self.accounts = accounts

    def sync(self, actor: Principal | None, *, dry_run: bool = False) -> list[str]:
        """Make Slurm match the projects; returns one line per change, each audited.

        Only accounts this gateway manages are touched: its projects' accounts
        and those it created before (kept in a site option), so two gateways,
        or a gateway and a test suite, on one cluster leave each other alone.
        """
        if actor is not None:
            require(actor, "site.admin")
        desired = slurm_accounts(self.access.projects(), self.access.users())
        before = set(self.access.option(MANAGED_ACCOUNTS, []) or [])
        wanted = {spec.account for spec in desired}
        scope = before | wanted
        changes = self.accounts.plan(desired, scope=scope)
        if not dry_run:
            self.accounts.apply(changes)
            who = actor.user if actor else "operator"
            source = actor.source if actor else "gateway host"
            for change in changes:
                self.access.set_option(
                    MANAGED_ACCOUNTS,
                    sorted(wanted),
                    AuditEntry(
                        who,
                        f"slurm.{change.kind.replace(' ', '_')}",
                        "slurm_account",
                        change.account if change.user is None else f"{change.account}/{change.user}",
                        None,
                        source,
                        dict(change.before) or None,
                        dict(change.after) or None,
                    ),
                )
            if before != wanted:
                self.access.set_option(MANAGED_ACCOUNTS, sorted(wanted))
        return [str(c) for c in changes]
