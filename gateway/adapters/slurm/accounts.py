"""Slurm accounts and associations that carry project quotas, kept in step with ``sacctmgr``.

The gateway checks quotas before it submits; this module pushes the same caps
to Slurm associations, so jobs sent around the gateway (plain ``sbatch -A``)
are held to them too. ``SlurmAccounts.sync(desired)`` reads what Slurm has,
diffs it against ``desired`` (``plan``) and runs ``sacctmgr`` for each
difference (``apply``); a second sync returns no changes.

What the gateway manages, and nothing else:
- accounts it created, marked ``Organization=gateway`` (``MANAGED_ORGANIZATION``);
  an account with another organisation (``root``, an admin's) is never
  modified or removed, and asking for one by name raises ``Conflict``;
- on each of them, the account association and the (account, user)
  associations without a partition;
- in each association only ``GrpTRES=gres/gpu``, ``GrpTRESMins=gres/gpu`` and
  ``GrpSubmitJobs``: other TRES an admin put in GrpTRES (``cpu=64``) are kept.

How Slurm holds jobs to the caps (checked by tests/slurm/test_accounts.py):
- ``gpus``: jobs beyond the cap pend with reason AssocGrpGRES;
- ``submit_jobs``: sbatch refuses the extra job at submission
  ("AssocGrpSubmitJobsLimit"), nothing is queued;
- ``gpu_minutes``: a per-calendar-month budget, since slurm.conf has
  PriorityDecayHalfLife=0 and PriorityUsageResetPeriod=MONTHLY; with
  AccountingStorageEnforce=...,safe a job starts only if GPUs x time limit fits
  what is left, else it pends with AssocGrpGRESMinutes (without ``safe`` Slurm
  starts it and kills it, state TIMEOUT, once the budget is spent).

``scope`` (plan / sync) names the managed accounts a caller owns: only those,
plus the accounts in ``desired``, are compared, so ``sync([], scope={"a"})``
removes account ``a`` and nothing else. Without a scope every managed account
absent from ``desired`` is removed.

sacctmgr quirks (Slurm 22.05, seen on the test cluster):
- "Nothing new added." / "Nothing modified" / "Nothing deleted" are printed on
  stdout with exit status 1: not errors (an add that finds the association
  already there is followed by a modify, so the limits still land);
- real errors come on stderr, often without "error:" ("This account 'x'
  doesn't exist.", "Error with request: Job(s) active, cancel job(s) before
  remove"), usually with exit status 1;
- ``-1`` clears a limit (``GrpTRES=gres/gpu=-1``); setting ``gres/gpu`` in
  GrpTRES leaves the other TRES there alone;
- names, descriptions and organisations are lower-cased, and ``'`` in a
  description becomes a backquote, so descriptions are compared lower-cased and
  limited to a plain character set;
- removing a user's default account (directly, or by removing the account)
  succeeds and leaves the user with *no* default account, so the default moves
  to another of its accounts first; removing a user's last association deletes
  the user record too;
- removing an association with *running* jobs fails ("Job(s) active, cancel
  job(s) before remove"), but one with only pending jobs is removed and the
  jobs stay pending for ever (InvalidAccount): removals check ``squeue`` first
  and raise ``Conflict`` while the association has jobs in the queue;
- ``remove account where name=A cluster=C`` removes only the association and
  leaves the account record, so the record goes too once no cluster uses it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, fields

from gateway.adapters.runner import CommandResult, CommandRunner
from gateway.adapters.slurm.cli import _UNAVAILABLE, SLURM_ENV
from gateway.core import names
from gateway.errors import (
    CommandError,
    CommandTimeout,
    Conflict,
    SlurmError,
    SlurmOutputError,
    SlurmUnavailable,
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

_NOTHING = ("Nothing new added.", "Nothing modified", "Nothing deleted")
_ERROR_TEXT = re.compile(r"^\s*(sacctmgr:\s*)?(error|fatal)\b|doesn't exist|not valid|unknown", re.I | re.M)

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
    return sorted(changes, key=lambda c: _kind_order(c.kind))  # stable: names stay sorted per kind


def _kind_order(kind: str) -> int:
    if kind not in KINDS:
        raise SpecError([SpecIssue("kind", f"unknown change kind; valid kinds are {', '.join(KINDS)}", kind)])
    return KINDS.index(kind)


def _check_change(change: Change) -> None:
    """Names and values in a change must be safe in a sacctmgr argument (no ',', '=', spaces ...)."""
    issues = []
    _kind_order(change.kind)
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


def _settings(values: dict, *, clear: bool) -> list[str]:
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


class SlurmAccounts:
    """Gateway-managed Slurm accounts and associations, read and changed through ``sacctmgr``.

    ``cluster`` defaults to the ClusterName of the local slurm.conf (asked of
    ``scontrol`` once). Every method raises ``SlurmError`` with sacctmgr's
    message when it refuses, ``SlurmUnavailable`` when it does not answer.
    """

    def __init__(self, runner: CommandRunner, *, cluster: str | None = None, timeout_s: float = 30.0) -> None:
        if cluster is not None and not names.NAME.fullmatch(cluster):
            raise SpecError(
                [SpecIssue("cluster", f"not a valid cluster name; use {names.NAME_HELP}", cluster)]
            )
        self.runner = runner
        self.timeout_s = timeout_s
        self._cluster = cluster

    @property
    def cluster(self) -> str:
        if self._cluster is None:
            config = self._run(["scontrol", "show", "config"]).stdout
            match = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.M)
            if match is None:
                raise SlurmOutputError("scontrol show config printed no ClusterName", command="scontrol show")
            self._cluster = match.group(1)
        return self._cluster

    # -- reads -----------------------------------------------------------------

    def _read(self) -> tuple[dict[str, tuple[str, str]], list[AccountSpec]]:
        accounts = parse_accounts(self._read_text("show", "account", f"format={ACCOUNT_FORMAT}"))
        managed = sorted(a for a, (org, _) in accounts.items() if org.lower() == MANAGED_ORGANIZATION)
        if not managed:
            return accounts, []
        text = self._read_text(
            "show",
            "association",
            "where",
            f"cluster={self.cluster}",
            f"account={','.join(managed)}",
            f"format={ASSOC_FORMAT}",
        )
        return accounts, managed_specs(accounts, parse_associations(text))

    def current(self) -> list[AccountSpec]:
        """The gateway-managed accounts on this cluster, sorted by name, with their user associations."""
        return self._read()[1]

    def plan(self, desired: Sequence[AccountSpec], *, scope: Collection[str] | None = None) -> list[Change]:
        """What ``apply`` would change so Slurm matches ``desired``; ``Conflict`` for an unmanaged name."""
        accounts, current = self._read()
        foreign = sorted(
            s.account
            for s in desired
            if s.account in accounts and accounts[s.account][0].lower() != MANAGED_ORGANIZATION
        )
        if foreign:
            raise Conflict(
                f"Slurm account(s) {', '.join(foreign)} exist but were not created by the gateway "
                f"(Organization is not {MANAGED_ORGANIZATION!r}), so the gateway will not change them; "
                f"pick another account name, or hand one over with "
                f"`sacctmgr modify account {foreign[0]} set Organization={MANAGED_ORGANIZATION}`"
            )
        return diff(current, desired, scope=scope)

    # -- writes ----------------------------------------------------------------

    def apply(self, changes: Sequence[Change]) -> None:
        """Run sacctmgr for each change, in the order ``plan`` gives (adds, modifies, then removals)."""
        for change in changes:  # all checked before the first command runs
            _check_change(change)
        leaving = {(c.account, c.user) for c in changes if c.kind == REMOVE_USER}
        leaving |= {(c.account, None) for c in changes if c.kind == REMOVE_ACCOUNT}
        for change in sorted(changes, key=lambda c: _kind_order(c.kind)):
            acct, user = change.account, change.user
            if user is None:
                where = ["where", f"name={acct}", f"cluster={self.cluster}"]
                modify = ["modify", "account", *where, "set"]
            else:
                where = ["where", f"name={user}", f"account={acct}", f"cluster={self.cluster}"]
                modify = ["modify", "user", *where, "set"]
            if change.kind in (ADD_ACCOUNT, ADD_USER):
                extra = _settings(change.after, clear=False)
                if change.kind == ADD_ACCOUNT:
                    add = [
                        "add",
                        "account",
                        acct,
                        f"cluster={self.cluster}",
                        f"Organization={MANAGED_ORGANIZATION}",
                    ]
                else:
                    add = ["add", "user", str(user), f"account={acct}", f"cluster={self.cluster}"]
                if not self._write([*add, *extra]) and extra:
                    self._write([*modify, *extra])  # it was there already: its limits still have to land
            elif change.kind in (MODIFY_ACCOUNT, MODIFY_USER):
                self._write([*modify, *_settings(change.after, clear=True)])
            elif change.kind == REMOVE_USER:
                self._refuse_live_jobs(acct, user)
                self._keep_default_account(str(user), acct, leaving)
                self._write(["remove", "user", *where])
            else:  # REMOVE_ACCOUNT
                self._refuse_live_jobs(acct, None)
                self._write(["remove", "account", *where])
                left = self._read_text("show", "association", "where", f"account={acct}", "format=Cluster")
                if not left.strip():  # no cluster uses it any more: drop the account record too
                    self._write(["remove", "account", "where", f"name={acct}"])

    def sync(self, desired: Sequence[AccountSpec], *, scope: Collection[str] | None = None) -> list[Change]:
        """Make Slurm match ``desired`` (see ``plan``; ``scope``: module notes); returns the changes."""
        changes = self.plan(desired, scope=scope)
        self.apply(changes)
        return changes

    def remove(self, accounts: Collection[str]) -> list[Change]:
        """Remove these managed accounts (and their user associations); others are left alone."""
        return self.sync([], scope=accounts)

    def _refuse_live_jobs(self, account: str, user: str | None) -> None:
        """Raise ``Conflict`` while the association has jobs in the queue.

        sacctmgr itself refuses only for running jobs ("Job(s) active"); it
        removes an association with pending jobs and leaves them held for
        ever with reason InvalidAccount.
        """
        text = self._run(["squeue", "--noheader", f"--account={account}", "--format=%i|%u"]).stdout
        jobs = sorted(
            job
            for job, _, owner in (line.strip().partition("|") for line in text.splitlines() if line.strip())
            if user is None or owner == user
        )
        if jobs:
            who = f"user {user} in account {account}" if user else f"account {account}"
            shown = ", ".join(jobs[:10]) + (" ..." if len(jobs) > 10 else "")
            scancel = f"scancel --account={account}" + (f" --user={user}" if user else "")
            raise Conflict(
                f"{who} still has jobs in the queue ({shown}); Slurm would hold pending ones for ever "
                f"(InvalidAccount): cancel them ({scancel}) or let them end, then sync again"
            )

    def _keep_default_account(self, user: str, account: str, leaving: set) -> None:
        """Before ``user`` leaves ``account``: if it is the default, make another of its accounts the default.

        Slurm 22.05 removes a default account's association anyway and leaves
        the user with no default, after which ``sbatch`` without ``-A`` fails.
        """
        text = self._read_text(
            "show",
            "user",
            "where",
            f"name={user}",
            f"cluster={self.cluster}",
            "withassoc",
            "format=User,DefaultAccount,Account",
        )
        rows = [
            [part.strip() for part in line.split("|")] for line in text.splitlines() if line.count("|") == 2
        ]
        if not rows or rows[0][1] != account:
            return
        others = sorted({row[2] for row in rows} - {account, ""})
        if not others:
            return  # its last association: Slurm deletes the user record with it
        staying = [a for a in others if (a, user) not in leaving and (a, None) not in leaving]
        new_default = (staying or others)[0]
        self._write(
            [
                "modify",
                "user",
                "where",
                f"name={user}",
                f"cluster={self.cluster}",
                "set",
                f"DefaultAccount={new_default}",
            ]
        )

    # -- the one call path -------------------------------------------------------

    def _read_text(self, *args: str) -> str:
        return self._run(["sacctmgr", "--parsable2", "--noheader", *args]).stdout

    def _write(self, args: list[str]) -> bool:
        """Run ``sacctmgr -i ARGS``; False when it said "Nothing new added." (or modified, deleted)."""
        result = self._run(["sacctmgr", "-i", *args])
        return not any(text in result.stdout for text in _NOTHING)

    def _run(self, argv: list[str]) -> CommandResult:
        command = " ".join([a for a in argv if not a.startswith("-")][:3])  # e.g. "sacctmgr modify user"
        try:
            result = self.runner.run(argv, timeout_s=self.timeout_s, env=SLURM_ENV)
        except CommandTimeout as exc:
            raise SlurmUnavailable(
                f"{argv[0]} did not answer within {self.timeout_s:g} s; Slurm's accounts are unknown for now",
                command=command,
            ) from exc
        except CommandError as exc:
            raise SlurmUnavailable(f"cannot run {argv[0]}: {exc}", command=command) from exc
        stderr, stdout = result.stderr.strip(), result.stdout.strip()
        if _UNAVAILABLE.search(stderr):
            raise SlurmUnavailable(
                f"{command}: Slurm did not answer: {stderr}", command=command, stderr=stderr
            )
        nothing = any(text in stdout for text in _NOTHING)
        if stderr and (result.returncode != 0 or _ERROR_TEXT.search(stderr)):
            # sacctmgr exits 0 on some refusals; an error on stderr wins.
            raise SlurmError(f"{command} failed: {' '.join(stderr.split())}", command=command, stderr=stderr)
        if result.returncode != 0 and not nothing:
            detail = stderr or stdout or "no message"
            raise SlurmError(
                f"{command} failed with exit status {result.returncode}: {detail}",
                command=command,
                stderr=stderr,
            )
        return result
