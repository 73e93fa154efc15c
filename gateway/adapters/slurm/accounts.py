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
import time
from collections.abc import Collection, Sequence

from gateway.adapters.runner import CommandResult, CommandRunner
from gateway.adapters.slurm.associations import (
    ACCOUNT_FORMAT,
    ADD_ACCOUNT,
    ADD_USER,
    ASSOC_FORMAT,
    ERROR_TEXT,
    MANAGED_ORGANIZATION,
    MODIFY_ACCOUNT,
    MODIFY_USER,
    NOTHING,
    REMOVE_ACCOUNT,
    REMOVE_USER,
    AccountSpec,
    Change,
    Limits,
    check_change,
    diff,
    kind_order,
    managed_specs,
    parse_accounts,
    parse_associations,
    settings,
)
from gateway.adapters.slurm.cli import _UNAVAILABLE, SLURM_ENV
from gateway.adapters.slurm.clusters import configured_cluster_name
from gateway.adapters.slurm.writelock import LOCK_PATH, sacctmgr_writes
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

__all__ = ["AccountSpec", "Change", "Limits", "SlurmAccounts"]


class SlurmAccounts:
    """Gateway-managed Slurm accounts and associations, read and changed through ``sacctmgr``.

    One instance per Slurm cluster: every association it reads or writes is
    ``cluster=<cluster>``'s (accounts themselves are shared by the clusters of
    one slurmdbd). ``cluster`` defaults to the ClusterName of the slurm.conf
    in use (asked of ``scontrol`` once); ``slurm_conf`` is that file for a
    cluster reached through its own (``SLURM_CONF`` for every command). The
    queue check before a removal asks that cluster's ``squeue`` (``-M
    cluster`` when the cluster was named). Every method raises ``SlurmError``
    with sacctmgr's message when it refuses, ``SlurmUnavailable`` when it does
    not answer. Writes hold the host's sacctmgr write lock (``write_lock``, the
    file of ``writelock.py``).
    """

    def __init__(
        self,
        runner: CommandRunner,
        *,
        cluster: str | None = None,
        timeout_s: float = 30.0,
        slurm_conf: str | None = None,
        write_lock: str = LOCK_PATH,
    ) -> None:
        if cluster is not None and not names.NAME.fullmatch(cluster):
            raise SpecError(
                [SpecIssue("cluster", f"not a valid cluster name; use {names.NAME_HELP}", cluster)]
            )
        self.runner = runner
        self.timeout_s = timeout_s
        self._cluster = cluster
        self._named = cluster is not None and slurm_conf is None  # reach its squeue with -M
        self.env = {**SLURM_ENV, **({"SLURM_CONF": slurm_conf} if slurm_conf else {})}
        self._conf = slurm_conf
        self._write_lock = write_lock  # the host's; tests of a fake runner give one of their own

    @property
    def cluster(self) -> str:
        """The Slurm cluster name, asked of ``scontrol show config`` on first use unless given.

        SlurmOutputError when scontrol prints no ClusterName.
        """
        if self._cluster is None and self._conf:
            # the file names it: sacctmgr talks to slurmdbd, so a controller that is down stops nothing here
            self._cluster = configured_cluster_name(self._conf)
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
            check_change(change)
        leaving = {(c.account, c.user) for c in changes if c.kind == REMOVE_USER}
        leaving |= {(c.account, None) for c in changes if c.kind == REMOVE_ACCOUNT}
        with sacctmgr_writes(self._write_lock):
            for change in sorted(changes, key=lambda c: kind_order(c.kind)):
                self._apply_one(change, leaving)

    def _apply_one(self, change: Change, leaving: set) -> None:
        """The sacctmgr commands of one change (see ``apply``)."""
        acct, user = change.account, change.user
        if user is None:
            where = ["where", f"name={acct}", f"cluster={self.cluster}"]
            modify = ["modify", "account", *where, "set"]
        else:
            where = ["where", f"name={user}", f"account={acct}", f"cluster={self.cluster}"]
            modify = ["modify", "user", *where, "set"]
        if change.kind in (ADD_ACCOUNT, ADD_USER):
            extra = settings(change.after, clear=False)
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
            if change.kind == ADD_ACCOUNT:
                self._ensure_account(acct, [*add, *extra])
        elif change.kind in (MODIFY_ACCOUNT, MODIFY_USER):
            self._write([*modify, *settings(change.after, clear=True)])
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

    def _ensure_account(self, account: str, add: list[str], tries: int = 3) -> None:
        """Add ``account`` again until Slurm lists it (a concurrent add elsewhere can lose it)."""
        for _ in range(tries):
            listed = self._read_text("show", "account", "where", f"name={account}", "format=Account")
            if account in listed.split():
                return
            time.sleep(0.2)
            self._write(add)
        raise SlurmError(f"sacctmgr add account {account}: Slurm does not list it after {tries} tries")

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
        argv = ["squeue", "--noheader", f"--account={account}", "--format=%i|%u"]
        if self._named:
            argv.insert(1, f"--clusters={self.cluster}")
        text = self._run(argv).stdout
        jobs = sorted(
            job
            for job, _, owner in (line.strip().partition("|") for line in live_lines(text))
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
        return not any(text in result.stdout for text in NOTHING)

    def _run(self, argv: list[str]) -> CommandResult:
        command = " ".join([a for a in argv if not a.startswith("-")][:3])  # e.g. "sacctmgr modify user"
        try:
            result = self.runner.run(argv, timeout_s=self.timeout_s, env=self.env)
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
        nothing = any(text in stdout for text in NOTHING)
        if stderr and (result.returncode != 0 or ERROR_TEXT.search(stderr)):
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


def live_lines(text: str) -> list[str]:
    """squeue's job lines, without the ``CLUSTER: name`` header ``squeue -M`` may print before each
    cluster's jobs (Slurm 22.05 prints it unless ``--noheader``; older ones always), nor blank lines."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("CLUSTER: ")]
