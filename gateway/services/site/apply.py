"""Applying a site file (and exporting the current site as one).

``SiteService.apply`` makes the database match a site file, idempotently,
then pushes the caps to Slurm (``SlurmSync``). It plans every change and
checks it before the first write: removals need ``prune``, and no apply
removes its caller or the last enabled admin. Each change is audited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from gateway.adapters import secret_source
from gateway.core.access.policy import require
from gateway.core.access.values import OPERATOR, Principal, User
from gateway.core.accounting.cost import table_sha256
from gateway.core.clock import utcnow
from gateway.core.projects import Project
from gateway.core.retention.policy import effective, project_overrides, site_default, stored
from gateway.core.retention.values import Departure
from gateway.core.site.rates import AccountingSpec, spec_of
from gateway.core.site.schema import (
    ALLOW_ROOT,
    CLUSTERS,
    ClusterSpec,
    ProjectSpec,
    SiteConfig,
    UserSpec,
)
from gateway.core.site.secrets import OPTION as SECRETS
from gateway.core.site.secrets import HeldSecret, SiteSecretSpec, definitions
from gateway.errors import SpecError, SpecIssue
from gateway.services.accounting.ledger import AccountingService
from gateway.services.site.apply_checks import (
    audit_entry,
    check_with_kept,
    diff_line,
    flat_option,
    project_dict,
    refuse_lockout,
)
from gateway.services.site.slurm_sync import SlurmSync
from gateway.store.access.access import AccessStore
from gateway.store.retention.retention import RetentionStore

RETENTION = "retention"  # the site option holding the retention policies (services/retention/policies.py)

RESERVED = "is reserved: audit events call the operator on the gateway host (gw admin) so; pick another name"


@dataclass(frozen=True)
class SiteChanges:
    """What a site apply changed (or, in a dry run, would change); one line each."""

    changes: list[str]  # users, projects and site options in the gateway
    slurm: list[str]  # Slurm accounts and associations
    kept: list[str]  # users and projects the file leaves out, kept because prune was not asked for


@dataclass(frozen=True)
class _Step:
    line: str
    write: Callable[[], object]  # what it returns is not used


class SiteService:
    """Export the site file, and apply one: the gateway's users and projects, then Slurm's caps."""

    def __init__(
        self,
        access: AccessStore,
        slurm_sync: SlurmSync,
        accounting: AccountingService | None = None,
        retention: RetentionStore | None = None,
    ) -> None:
        self.access = access
        self.slurm_sync = slurm_sync
        self.accounting = accounting  # keeps the rate table versions (the accounting section)
        self.retention = retention  # members who left a project, and what became of their runs' files

    def export(self, actor: Principal) -> SiteConfig:
        """The current site as a site file; site admins (and the operator) only."""
        require(actor, "site.admin")
        held = self._held()
        option = self.access.option(RETENTION, {}) or {}
        return SiteConfig(
            allow_root_mapping=bool(self.access.option(ALLOW_ROOT, False)),
            clusters=[ClusterSpec.model_validate(c) for c in self.access.option(CLUSTERS, []) or []],
            users=[
                UserSpec(name=u.name, os_user=u.os_user, admin=u.is_admin, disabled=u.disabled)
                for u in self.access.users()
            ],
            projects=[
                ProjectSpec.model_validate(
                    {
                        **project_dict(p),
                        "secrets": [h.spec() for h in held if h.owner == p.name],
                        "retention": project_overrides(option, p.name),
                    }
                )
                for p in self.access.projects()
            ],
            accounting=self._current_rates(),
            secrets=[SiteSecretSpec.model_validate(h.spec()) for h in held if h.owner == "site"],
            retention=site_default(option),
        )

    def apply(
        self,
        actor: Principal,
        config: SiteConfig,
        *,
        dry_run: bool = False,
        sync_slurm: bool = True,
        prune: bool = False,
    ) -> SiteChanges:
        """Make the gateway match ``config``, then (``sync_slurm``) Slurm's associations; idempotent.

        Users and projects the file leaves out are removed only with ``prune``;
        without it they are kept and listed in ``kept``. Everything is planned
        and checked before the first write: Forbidden unless ``actor`` is a site
        admin (or the operator); Conflict, with nothing changed, when the apply
        would remove ``actor`` themself or leave the site without an enabled
        admin, or when Slurm refuses the plan (an account that is not the
        gateway's). Each change is audited. ``dry_run`` plans and checks only.
        """
        require(actor, "site.admin")
        if any(u.name == OPERATOR for u in config.users):
            raise SpecError([SpecIssue("users", RESERVED, OPERATOR)], what="site file")
        users_now = {u.name: u for u in self.access.users()}
        projects_now = {p.name: p for p in self.access.projects()}
        users_after = {u.name: User(u.name, u.os_user, u.admin, u.disabled) for u in config.users}
        projects_after = {p.name: p.domain() for p in config.projects}
        kept = []
        if not prune:
            for name in sorted(set(projects_now) - set(projects_after)):
                kept.append(f"would remove project {name} (pass prune to remove)")
                projects_after[name] = projects_now[name]
            for name in sorted(set(users_now) - set(users_after)):
                kept.append(f"would remove user {name} (pass prune to remove)")
                users_after[name] = users_now[name]
        if kept:
            check_with_kept(config, users_after, projects_after)
        refuse_lockout(actor, users_now, users_after)
        steps = self._steps(actor, config.allow_root_mapping, users_now, users_after)
        steps += self._cluster_steps(actor, config)
        steps += self._project_steps(actor, projects_now, projects_after)
        steps += self._rate_steps(actor, config)
        steps += self._secret_steps(actor, config, projects_after)
        steps += self._retention_steps(actor, config, projects_now, projects_after)
        steps += [
            _Step(f"remove user {name}", self._remover(actor, "user", name, have.__dict__))
            for name, have in users_now.items()
            if name not in users_after
        ]
        slurm = (
            self.slurm_sync.plan(
                actor,
                list(projects_after.values()),
                list(users_after.values()),
                clusters=[c.domain() for c in config.clusters],
            )
            if sync_slurm
            else None
        )
        if not dry_run:
            for step in steps:
                step.write()
            if slurm is not None:
                self.slurm_sync.push(actor, slurm)
        return SiteChanges([s.line for s in steps], slurm.lines if slurm else [], kept)

    def _steps(
        self, actor: Principal, allow_root: bool, users_now: dict[str, User], users_after: dict[str, User]
    ) -> list[_Step]:
        """The site option and the users to add or change."""
        steps = []
        current_root = bool(self.access.option(ALLOW_ROOT, False))
        if current_root != allow_root:
            entry = audit_entry(
                actor, "site.option", "site", ALLOW_ROOT, {"value": current_root}, {"value": allow_root}
            )
            steps.append(
                _Step(
                    f"set allow_root_mapping: {current_root} -> {allow_root}",
                    partial(self.access.set_option, ALLOW_ROOT, allow_root, entry),
                )
            )
        for name, wanted in users_after.items():
            have = users_now.get(name)
            if have == wanted:
                continue
            verb = "add" if have is None else "change"
            before = have.__dict__ if have else None
            entry = audit_entry(actor, f"user.{verb}", "user", name, before, wanted.__dict__)
            steps.append(
                _Step(
                    f"{verb} user {name}: {diff_line(before or {}, wanted.__dict__)}",
                    partial(self.access.put_user, wanted, entry),
                )
            )
        return steps

    def _cluster_steps(self, actor: Principal, config: SiteConfig) -> list[_Step]:
        """The clusters (the ``clusters`` site option), when the file's differ from the current ones."""
        now = self.access.option(CLUSTERS, []) or []
        after = [c.model_dump(exclude_none=True) for c in config.clusters]
        if now == after:
            return []
        entry = audit_entry(actor, "site.clusters", "site", CLUSTERS, {"clusters": now}, {"clusters": after})
        line = f"set clusters: {', '.join(c.name for c in config.clusters) or 'none (the one cluster)'}"
        return [_Step(line, partial(self.access.set_option, CLUSTERS, after, entry))]

    def _project_steps(
        self, actor: Principal, projects_now: dict[str, Project], projects_after: dict[str, Project]
    ) -> list[_Step]:
        """The projects to add, change or remove."""
        steps = []
        for name, wanted in projects_after.items():
            have = projects_now.get(name)
            if have == wanted:
                continue
            before = project_dict(have) if have else {}
            after = project_dict(wanted)
            verb = "add" if have is None else "change"
            entry = audit_entry(actor, f"project.{verb}", "project", name, before or None, after, name)
            steps.append(
                _Step(
                    f"{verb} project {name}: {diff_line(before, after)}",
                    partial(self.access.put_project, wanted, entry),
                )
            )
        for name, have in projects_now.items():
            if name not in projects_after:
                steps.append(
                    _Step(f"remove project {name}", self._remover(actor, "project", name, project_dict(have)))
                )
        return steps

    def _held(self) -> list[HeldSecret]:
        return [HeldSecret.from_record(d) for d in self.access.option(SECRETS, []) or []]

    def _secret_steps(
        self, actor: Principal, config: SiteConfig, projects_after: dict[str, Project]
    ) -> list[_Step]:
        """The site's and projects' secret definitions (references, never values), each file source
        checked: SpecError naming the entry when gw's user cannot open it. Projects the file leaves out
        but the apply keeps keep theirs."""
        in_file = {p.name: list(p.secrets) for p in config.projects}
        wanted = definitions(list(config.secrets), in_file)
        wanted += [
            h
            for h in self._held()
            if h.owner != "site" and h.owner not in in_file and h.owner in projects_after
        ]
        issues = []
        where = {("site", s.name): f"secrets.{i}" for i, s in enumerate(config.secrets)}
        for i, project in enumerate(config.projects):
            where.update(
                {(project.name, s.name): f"projects.{i}.secrets.{j}" for j, s in enumerate(project.secrets)}
            )
        for held in wanted:
            why = secret_source.problem(held, check_env=False)
            if why is not None:
                path = where.get((held.owner, held.name), "secrets")
                issues.append(SpecIssue(f"{path}.file", f"secret {held.name}: {why}", held.file))
        if issues:
            raise SpecError(issues, what="site file")
        now = [h.record() for h in self._held()]
        after = [h.record() for h in wanted]
        if now == after:
            return []
        entry = audit_entry(actor, "site.secrets", "site", SECRETS, {"secrets": now}, {"secrets": after})
        line = f"set secrets: {', '.join(f'{h.owner}/{h.name} ({h.source})' for h in wanted) or 'none'}"
        return [_Step(line, partial(self.access.set_option, SECRETS, after, entry))]

    def _current_rates(self) -> AccountingSpec | None:
        current = self.accounting.current_rates() if self.accounting else None
        return spec_of(current.table) if current else None

    def _rate_steps(self, actor: Principal, config: SiteConfig) -> list[_Step]:
        """A new rate table version, when the file's accounting section differs from the newest one."""
        wanted = config.accounting
        if wanted is None or self.accounting is None:
            return []
        current = self.accounting.current_rates()
        # the stored table's content, not the digest its row keeps: an export gives that table back
        if current is not None and table_sha256(current.table) == wanted.sha256:
            return []
        version = (current.version if current else 0) + 1
        before = {"version": current.version, "sha256": current.sha256} if current else None
        after = {"version": version, "sha256": wanted.sha256, "currency": wanted.currency}
        entry = audit_entry(actor, "accounting.rates", "rate_table", str(version), before, after)
        line = f"set rate table version {version}: {len(wanted.rates)} rates in {wanted.currency}"
        if wanted.clusters:
            own = ", ".join(f"{name} {len(c.rates)}" for name, c in sorted(wanted.clusters.items()))
            line += f"; clusters' own rates: {own}"
        write = partial(self.accounting.set_rates, actor.user, wanted.table(), entry)
        return [_Step(line, write)]

    def _retention_steps(
        self,
        actor: Principal,
        config: SiteConfig,
        projects_now: dict[str, Project],
        projects_after: dict[str, Project],
    ) -> list[_Step]:
        """The retention policies (when the file has any), then each member who leaves a project (or
        comes back): what becomes of their runs' files, by the project's ``on_member_leave``."""
        steps: list[_Step] = []
        current = self.access.option(RETENTION, {}) or {}
        option = current
        if config.retention_given:
            wanted = {p.name: p.retention for p in config.projects if p.retention is not None}
            kept = {
                name: spec
                for name in projects_after
                if name not in {p.name for p in config.projects}
                and (spec := project_overrides(current, name)) is not None
            }
            option = stored(config.retention, {**kept, **wanted})
            if option != current:
                entry = audit_entry(actor, "retention.policy", "site", RETENTION, current or None, option)
                steps.append(
                    _Step(
                        f"set retention policies: {diff_line(flat_option(current), flat_option(option))}",
                        partial(self.access.set_option, RETENTION, option, entry),
                    )
                )
        if self.retention is None:
            return steps
        departed = {(d.project, d.user) for d in self.retention.departures()}
        for name, after in sorted(projects_after.items()):
            before = projects_now.get(name)
            if before is None:
                continue
            members_after = {m.user for m in after.members}
            policy = effective(option, name)
            for user in sorted({m.user for m in before.members} - members_after):
                steps.append(self._departure_step(actor, name, user, policy.on_member_leave, after))
            for user in sorted(members_after):
                if (name, user) in departed:
                    back = {"user": user}
                    entry = audit_entry(actor, "retention.return", "project", name, back, None, name)
                    steps.append(
                        _Step(
                            f"member {user} is back in project {name}: their runs' files are theirs again",
                            partial(self.retention.drop_departure, name, user, entry),
                        )
                    )
        return steps

    def _departure_step(
        self, actor: Principal, project: str, user: str, action: str, after: Project
    ) -> _Step:
        assert self.retention is not None
        steward = None
        if action == "lead":
            leads = sorted(m.user for m in after.members if m.role == "lead" and m.user != user)
            steward = leads[0] if leads else None
        words = {
            "keep": "stay under the project (the ordinary retention rules apply)",
            "lead": f"are handed to lead {steward}" if steward else "stay under the project (it has no lead)",
            "expire": "expire by rule member-left",
        }[action]
        departure = Departure(project, user, utcnow(), action, steward)
        entry = audit_entry(
            actor,
            "retention.departure",
            "project",
            project,
            None,
            {"user": user, "on_member_leave": action, "steward": steward},
            project,
        )
        return _Step(
            f"member {user} leaves project {project}: their runs' files {words}",
            partial(self.retention.put_departure, departure, entry),
        )

    def _remover(self, actor: Principal, kind: str, name: str, before: dict[str, Any]) -> Callable[[], None]:
        remove = self.access.delete_project if kind == "project" else self.access.delete_user
        project = name if kind == "project" else None
        return partial(remove, name, audit_entry(actor, f"{kind}.remove", kind, name, before, None, project))
