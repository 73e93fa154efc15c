"""Slurm accounts and associations as values: parsing sacctmgr's output and planning changes.

Pure: the sacctmgr calls are in ``gateway.adapters.slurm.accounts``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, fields

from gateway.core import names
from gateway.errors import (
    SlurmOutputError,
    SpecError,
    SpecIssue,
)

MANAGED_ORGANIZATION = "gateway"
DESCRIPTION = re.compile(r"[A-Za-z0-9 ._,:()/+-]{0,200}")
DESCRIPTION_HELP = "up to 200 characters: letters, digits, spaces and . _ , : ( ) / + -"
# Names read back from Slurm (users such as john.doe) that apply may have to remove.
SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@-]{0,127}")
GPU_TRES = "gres/gpu"
CLEAR = -1  # sacctmgr's "no limit"

# Gateway limit name -> (sacctmgr option, the TRES inside it or None); also the labels of change lines.
SLURM_FIELDS: dict[str, tuple[str, str | None]] = {
    "gpus": ("GrpTRES", GPU_TRES),
    "gpu_minutes": ("GrpTRESMins", GPU_TRES),
    "submit_jobs": ("GrpSubmitJobs", None),
}
ASSOC_FORMAT = "Account,User,Partition,GrpTRES,GrpTRESMins,GrpSubmitJobs"
ACCOUNT_FORMAT = "Account,Organization,Description"  # Description last: it may hold '|'

NOTHING = ("Nothing new added.", "Nothing modified", "Nothing deleted")
ERROR_TEXT = re.compile(r"^\s*(sacctmgr:\s*)?(error|fatal)\b|doesn't exist|not valid|unknown", re.I | re.M)

ADD_ACCOUNT, MODIFY_ACCOUNT, REMOVE_ACCOUNT = "add account", "modify account", "remove account"
ADD_USER, MODIFY_USER, REMOVE_USER = "add user", "modify user", "remove user"
KINDS = (ADD_ACCOUNT, MODIFY_ACCOUNT, ADD_USER, MODIFY_USER, REMOVE_USER, REMOVE_ACCOUNT)  # apply order


@dataclass(frozen=True)
class Limits:
    """Caps on one association; ``None`` is "no limit" (cleared in Slurm)."""

    gpus: int | None = None  # GPUs in use at once -> GrpTRES=gres/gpu=N
    gpu_minutes: int | None = None  # GPU-minutes per period -> GrpTRESMins=gres/gpu=M
    submit_jobs: int | None = None  # jobs queued + running -> GrpSubmitJobs=N

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise SpecError(
                    [SpecIssue(f"limits.{item.name}", "must be a whole number >= 0, or None", value)]
                )

    def as_dict(self) -> dict[str, int | None]:
        """The caps by field name (``gpus``, ``gpu_minutes``, ``submit_jobs``), None for no cap."""
        return {name: getattr(self, name) for name in SLURM_FIELDS}


@dataclass(frozen=True)
class AccountSpec:
    """One Slurm account the gateway wants, with its caps and its users' caps (OS user name -> caps)."""

    account: str
    description: str = ""  # "" leaves Slurm's (the account name when created)
    limits: Limits = Limits()
    users: dict[str, Limits] = field(default_factory=dict)

    def issues(self) -> list[SpecIssue]:
        """What is wrong with this spec as a *desired* account (values read from Slurm are not checked)."""
        issues = []
        if not names.ACCOUNT.fullmatch(self.account):
            issues.append(
                SpecIssue("account", f"not a valid Slurm account; use {names.ACCOUNT_HELP}", self.account)
            )
        if not DESCRIPTION.fullmatch(self.description):
            issues.append(SpecIssue("description", f"use {DESCRIPTION_HELP}", self.description))
        if not isinstance(self.limits, Limits):
            issues.append(SpecIssue("limits", "must be a Limits value", self.limits))
        for user, limits in self.users.items():
            if not names.OS_USER.fullmatch(user):
                issues.append(SpecIssue("users", f"not a valid OS user name; use {names.OS_USER_HELP}", user))
            if not isinstance(limits, Limits):
                issues.append(SpecIssue(f"users.{user}", "must be a Limits value", limits))
        return issues


@dataclass(frozen=True)
class Change:
    """One difference between Slurm and what the gateway wants, and the sacctmgr step that removes it.

    ``before`` / ``after`` map limit names (``gpus``, ``gpu_minutes``,
    ``submit_jobs``, and ``description`` for accounts) to values; a modify
    holds only the names that change, ``None`` meaning "no limit".
    """

    kind: str
    account: str
    user: str | None
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)

    def __str__(self) -> str:
        if self.user is None:
            head = f"{self.kind} {self.account}"
        else:
            link = {ADD_USER: "to", REMOVE_USER: "from"}.get(self.kind, "in")
            head = f"{self.kind} {self.user} {link} {self.account}"
        if self.kind.startswith("modify"):
            keys = [k for k in (*SLURM_FIELDS, "description") if k in self.after]
            parts = [
                f"{_label(k)} {_shown(k, self.before.get(k))} -> {_shown(k, self.after[k])}" for k in keys
            ]
            return f"{head}: " + ", ".join(parts)
        values = self.after if self.kind.startswith("add") else self.before
        parts = [f"{_label(k)}={_shown(k, v)}" for k, v in values.items() if v not in (None, "")]
        if self.kind.startswith("add"):
            return f"{head}: " + (", ".join(parts) if parts else "no limits")
        return head + (f" (had {', '.join(parts)})" if parts else "")


def _label(key: str) -> str:
    if key not in SLURM_FIELDS:
        return key.capitalize()
    option, tres = SLURM_FIELDS[key]
    return f"{option} {tres}" if tres else option


def _shown(key: str, value: object) -> str:
    if key == "description":
        return repr(value or "")
    return "unlimited" if value is None else str(value)


# -- parsing sacctmgr output (pure) ---------------------------------------------


def parse_tres(text: str) -> dict[str, str]:
    """``"cpu=4,gres/gpu=2"`` -> ``{"cpu": "4", "gres/gpu": "2"}``; empty text -> ``{}``."""
    out: dict[str, str] = {}
    for item in text.strip().split(","):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SlurmOutputError(f"cannot read TRES item {item!r} in {text!r}", command="sacctmgr")
        out[name.strip()] = value.strip()
    return out


def _count(text: str, what: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise SlurmOutputError(
            f"sacctmgr printed {what} {text!r}; expected a whole number", command="sacctmgr"
        )
    return int(text)


def parse_accounts(text: str) -> dict[str, tuple[str, str]]:
    """``show account format=Account,Organization,Description`` -> {account: (organization, description)}."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3:
            raise SlurmOutputError(f"unexpected sacctmgr account line {line!r}", command="sacctmgr")
        out[parts[0].strip()] = (parts[1].strip(), parts[2].strip())
    return out


@dataclass(frozen=True)
class AssocRow:
    account: str
    user: str  # "" for the account's own association
    partition: str
    limits: Limits


def parse_associations(text: str) -> list[AssocRow]:
    """``show association format=ASSOC_FORMAT`` lines -> rows; of the TRES lists only ``gres/gpu`` is read."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 6:
            raise SlurmOutputError(f"unexpected sacctmgr association line {line!r}", command="sacctmgr")
        account, user, partition, grp_tres, grp_tres_mins, grp_submit = (p.strip() for p in parts)
        limits = Limits(
            gpus=_count(parse_tres(grp_tres).get(GPU_TRES, ""), "GrpTRES gres/gpu"),
            gpu_minutes=_count(parse_tres(grp_tres_mins).get(GPU_TRES, ""), "GrpTRESMins gres/gpu"),
            submit_jobs=_count(grp_submit, "GrpSubmitJobs"),
        )
        rows.append(AssocRow(account, user, partition, limits))
    return rows


def managed_specs(accounts: dict[str, tuple[str, str]], assocs: Sequence[AssocRow]) -> list[AccountSpec]:
    """The gateway-managed accounts that have an association here, with their user associations."""
    specs: dict[str, AccountSpec] = {}
    for row in assocs:
        organization, description = accounts.get(row.account, ("", ""))
        if row.user or row.partition or organization.lower() != MANAGED_ORGANIZATION:
            continue
        specs[row.account] = AccountSpec(row.account, description, row.limits, {})
    for row in assocs:
        if row.user and not row.partition and row.account in specs:
            specs[row.account].users[row.user] = row.limits
    return [specs[name] for name in sorted(specs)]


# -- the diff (pure) ------------------------------------------------------------


def diff(
    current: Sequence[AccountSpec], desired: Sequence[AccountSpec], *, scope: Collection[str] | None = None
) -> list[Change]:
    """Changes that turn ``current`` (managed accounts in Slurm) into ``desired``, in apply order.

    With ``scope``, current accounts outside ``scope`` and ``desired`` are left out.
    """
    for spec in desired:
        if issues := spec.issues():
            raise SpecError(issues, source=f"Slurm account {spec.account!r}")
    wanted = {spec.account: spec for spec in desired}
    if len(wanted) != len(desired):
        dup = sorted({s.account for s in desired if sum(d.account == s.account for d in desired) > 1})
        raise SpecError([SpecIssue("account", "named more than once in the desired accounts", dup)])
    have = {s.account: s for s in current if scope is None or s.account in scope or s.account in wanted}
    changes: list[Change] = []
    for name in sorted(wanted.keys() | have.keys()):
        new, old = wanted.get(name), have.get(name)
        if old is None and new is not None:
            after = {**({"description": new.description} if new.description else {}), **new.limits.as_dict()}
            changes.append(Change(ADD_ACCOUNT, name, None, {}, after))
        elif new is None and old is not None:
            changes.append(Change(REMOVE_ACCOUNT, name, None, old.limits.as_dict(), {}))
        elif new is not None and old is not None:
            before, after = _changed(old.limits, new.limits)
            if new.description and new.description.lower() != old.description.lower():
                before["description"], after["description"] = old.description, new.description
            if after:
                changes.append(Change(MODIFY_ACCOUNT, name, None, before, after))
        old_users = old.users if old else {}
        new_users = new.users if new else {}
        for user in sorted(old_users.keys() | new_users.keys()):
            if user not in old_users:
                changes.append(Change(ADD_USER, name, user, {}, new_users[user].as_dict()))
            elif user not in new_users:
                changes.append(Change(REMOVE_USER, name, user, old_users[user].as_dict(), {}))
            else:
                before, after = _changed(old_users[user], new_users[user])
                if after:
                    changes.append(Change(MODIFY_USER, name, user, before, after))
    return sorted(changes, key=lambda c: kind_order(c.kind))  # stable: names stay sorted per kind


def kind_order(kind: str) -> int:
    """Where a change of ``kind`` comes in the apply order (:data:`KINDS`); SpecError for an unknown kind."""
    if kind not in KINDS:
        raise SpecError([SpecIssue("kind", f"unknown change kind; valid kinds are {', '.join(KINDS)}", kind)])
    return KINDS.index(kind)


def check_change(change: Change) -> None:
    """Names and values in a change must be safe in a sacctmgr argument (no ',', '=', spaces ...)."""
    issues = []
    kind_order(change.kind)
    if not SLURM_NAME.fullmatch(change.account):
        issues.append(SpecIssue("account", "not a Slurm account name", change.account))
    if change.user is not None and not SLURM_NAME.fullmatch(change.user):
        issues.append(SpecIssue("user", "not a Slurm user name", change.user))
    if (change.user is None) != change.kind.endswith("account"):
        issues.append(
            SpecIssue("user", f"a {change.kind!r} change needs {'a' if change.user is None else 'no'} user")
        )
    for key, value in change.after.items():
        if key == "description" and not (isinstance(value, str) and DESCRIPTION.fullmatch(value)):
            issues.append(SpecIssue("description", f"use {DESCRIPTION_HELP}", value))
        elif key != "description" and key not in SLURM_FIELDS:
            issues.append(SpecIssue(key, f"not a limit; valid limits are {', '.join(SLURM_FIELDS)}", value))
        elif key in SLURM_FIELDS and value is not None:
            Limits(**{key: value})  # raises SpecError for a bad number
    if issues:
        raise SpecError(issues, source=f"change {change.kind} {change.account}")


def _changed(old: Limits, new: Limits) -> tuple[dict, dict]:
    before, after = old.as_dict(), new.as_dict()
    keys = [k for k in before if before[k] != after[k]]
    return {k: before[k] for k in keys}, {k: after[k] for k in keys}


def settings(values: dict, *, clear: bool) -> list[str]:
    """``{"gpus": 2, "submit_jobs": None}`` -> ``["GrpTRES=gres/gpu=2", "GrpSubmitJobs=-1"]``.

    ``None`` becomes ``-1`` (clear) when ``clear``, else it is left out.
    """
    out = []
    for key, value in values.items():
        if key == "description":
            if value:
                out.append(f"Description={value}")
            continue
        if value is None and not clear:
            continue
        option, tres = SLURM_FIELDS[key]
        number = CLEAR if value is None else value
        out.append(f"{option}={tres}={number}" if tres else f"{option}={number}")
    return out


# -- the adapter ------------------------------------------------------------------
