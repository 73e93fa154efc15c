"""Slurm accounts and associations that carry project quotas, kept in step with ``sacctmgr``.

The gateway checks quotas before it submits; this module pushes the same caps
to Slurm associations, so jobs sent around the gateway (plain ``sbatch -A``)
are held to them too. ``SlurmAccounts.sync(desired)`` reads what Slurm has,
diffs it against ``desired`` (``plan``) and runs ``sacctmgr`` for the
differences (``apply``), grouped into few commands and processes
(``assoc_commands.py``); a second sync returns no changes.

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
  stdout with exit status 1: not errors (the read back after an add finds an
  association that was there already, and a modify lands its limits);
- commands on sacctmgr's stdin run in one process (each even after one fails) but cost
  slurmdbd as much as as many processes; a list (``name=a,b``) in one command is cheaper;
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
  (once, before any write) and raise ``Conflict`` while an association has jobs
  in the queue;
- ``remove account where name=A cluster=C`` removes only the association and
  leaves the account record, so the record goes too once no cluster uses it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Sequence

from gateway.adapters.runner import CommandResult, CommandRunner
from gateway.adapters.slurm.assoc_commands import (
    account_commands,
    chunks,
    default_commands,
    default_moves,
    queue_blocks,
    removal_commands,
    stdin_line,
    user_commands,
)
from gateway.adapters.slurm.associations import (
    ACCOUNT_FORMAT,
    ADD_ACCOUNT,
    ADD_USER,
    ASSOC_FORMAT,
    ERROR_TEXT,
    KINDS,
    MANAGED_ORGANIZATION,
    MODIFY_ACCOUNT,
    MODIFY_USER,
    NOTHING,
    REMOVE_ACCOUNT,
    REMOVE_USER,
    SLURM_FIELDS,
    AccountSpec,
    Change,
    Limits,
    check_change,
    diff,
    managed_specs,
    parse_accounts,
    parse_associations,
)
from gateway.adapters.slurm.cli_argv import SLURM_ENV
from gateway.adapters.slurm.cli_outcome import UNAVAILABLE
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

BATCH_MAX = (
    20  # sacctmgr commands per process: each costs slurmdbd ~0.2 s, so a process stays well in its timeout
)


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
        """Make ``changes`` in Slurm in ``plan``'s order (accounts added and modified, users added and
        modified, then removals), grouped into few sacctmgr commands (``assoc_commands``).

        Every change is checked, and the queue of every association to be removed looked at, before
        the first write. Added accounts are read back once: a lost one is added again, limits that
        did not land (the association was there already) are set; so are added users when sacctmgr
        said one was there already.
        """
        for change in changes:
            check_change(change)
        if not changes:
            return
        kinds = {kind: [c for c in changes if c.kind == kind] for kind in KINDS}
        removals = [*kinds[REMOVE_USER], *kinds[REMOVE_ACCOUNT]]
        cluster = self.cluster
        with sacctmgr_writes(self._write_lock):
            if removals:
                self._refuse_live_jobs(removals)
            self._batch(account_commands(changes, cluster))
            if kinds[ADD_ACCOUNT]:
                self._settle_accounts(kinds[ADD_ACCOUNT])
            if self._batch(user_commands(changes, cluster)) and kinds[ADD_USER]:
                self._settle_users(kinds[ADD_USER])  # an association was there already
            if removals:
                leaving = {(c.account, c.user) for c in removals}
                moves = self._default_moves(sorted({str(c.user) for c in kinds[REMOVE_USER]}), leaving)
                self._batch([*default_commands(moves, cluster), *removal_commands(changes, cluster)])
            if kinds[REMOVE_ACCOUNT]:
                self._drop_unused_records(sorted(c.account for c in kinds[REMOVE_ACCOUNT]))

    def _assocs(self, accounts: Sequence[str], users: Sequence[str] = ()) -> dict[tuple[str, str], Limits]:
        """{(account, user or ""): limits} of these accounts' associations here without a partition."""
        where = ["where", f"cluster={self.cluster}", f"account={','.join(accounts)}"]
        if users:
            where.append(f"user={','.join(users)}")
        rows = parse_associations(self._read_text("show", "association", *where, f"format={ASSOC_FORMAT}"))
        return {(r.account, r.user): r.limits for r in rows if not r.partition}

    def _settle_accounts(self, added: Sequence[Change], tries: int = 3) -> None:
        """Read the added accounts back: add a lost one again (a concurrent add elsewhere can lose it,
        ``writelock.py``) until Slurm lists it; set limits that did not land."""
        missing = list(added)
        for attempt in range(tries + 1):
            found = self._assocs([c.account for c in missing])
            self._land_limits([c for c in missing if (c.account, "") in found], found, "account")
            missing = [c for c in missing if (c.account, "") not in found]
            if not missing:
                return
            if attempt < tries:
                time.sleep(0.2)
                self._batch(account_commands(missing, self.cluster))
        names = ", ".join(c.account for c in missing)
        raise SlurmError(f"sacctmgr add account {names}: Slurm does not list it after {tries} tries")

    def _settle_users(self, added: Sequence[Change]) -> None:
        """Read the added user associations back; set limits that did not land; SlurmError for one
        Slurm does not list."""
        found = self._assocs(sorted({c.account for c in added}), sorted({str(c.user) for c in added}))
        lost = [f"{c.user} to {c.account}" for c in added if (c.account, str(c.user)) not in found]
        if lost:
            raise SlurmError(f"sacctmgr add user {', '.join(lost)}: Slurm does not list the association")
        self._land_limits(added, found, "user")

    def _land_limits(self, added: Sequence[Change], found: dict[tuple[str, str], Limits], what: str) -> None:
        """Modify the added associations whose limits in Slurm are not the planned ones."""
        fixes = []
        for change in added:
            want = {k: change.after.get(k) for k in SLURM_FIELDS}
            have = found[(change.account, change.user or "")].as_dict()
            if keys := [k for k in want if have[k] != want[k]]:
                kind = MODIFY_ACCOUNT if what == "account" else MODIFY_USER
                before, after = {k: have[k] for k in keys}, {k: want[k] for k in keys}
                fixes.append(Change(kind, change.account, change.user, before, after))
        commands = account_commands if what == "account" else user_commands
        self._batch(commands(fixes, self.cluster))

    def sync(self, desired: Sequence[AccountSpec], *, scope: Collection[str] | None = None) -> list[Change]:
        """Make Slurm match ``desired`` (see ``plan``; ``scope``: module notes); returns the changes."""
        changes = self.plan(desired, scope=scope)
        self.apply(changes)
        return changes

    def remove(self, accounts: Collection[str]) -> list[Change]:
        """Remove these managed accounts (and their user associations); others are left alone."""
        return self.sync([], scope=accounts)

    def _refuse_live_jobs(self, removals: Sequence[Change]) -> None:
        """Raise ``Conflict`` while an association to be removed has jobs in the queue (one ``squeue``).

        sacctmgr itself refuses only for running jobs ("Job(s) active"); it
        removes an association with pending jobs and leaves them held for
        ever with reason InvalidAccount.
        """
        accounts = sorted({c.account for c in removals})
        argv = ["squeue", "--noheader", f"--account={','.join(accounts)}", "--format=%a|%u|%i"]
        if self._named:
            argv.insert(1, f"--clusters={self.cluster}")
        lines = [line.strip().split("|") for line in live_lines(self._run(argv).stdout)]
        if blocked := queue_blocks(removals, [(a, u, j) for a, u, j in (p for p in lines if len(p) == 3)]):
            raise Conflict(
                "; ".join(blocked) + ". Slurm would hold pending ones for ever (InvalidAccount): "
                "cancel them or let them end, then sync again; nothing was changed"
            )

    def _default_moves(self, users: Sequence[str], leaving: set) -> dict[str, str]:
        """{user: new default} for users about to leave their default account (one ``show user``).

        Slurm 22.05 removes a default account's association anyway and leaves
        the user with no default, after which ``sbatch`` without ``-A`` fails.
        """
        if not users:
            return {}
        where = ["where", f"name={','.join(users)}", f"cluster={self.cluster}", "withassoc"]
        text = self._read_text("show", "user", *where, "format=User,DefaultAccount,Account")
        rows = [[p.strip() for p in line.split("|")] for line in text.splitlines() if line.count("|") == 2]
        return default_moves(rows, leaving)

    def _drop_unused_records(self, accounts: Sequence[str]) -> None:
        """``remove account where name=A cluster=C`` leaves the account record: drop the records no
        cluster uses any more (one read, one write)."""
        text = self._read_text(
            "show", "association", "where", f"account={','.join(accounts)}", "format=Account"
        )
        used = {line.strip() for line in text.splitlines()}
        unused = [a for a in accounts if a not in used]
        self._batch([["remove", "account", "where", f"name={names}"] for names in chunks(unused)])

    # -- the one call path -------------------------------------------------------

    def _read_text(self, *args: str) -> str:
        return self._run(["sacctmgr", "--parsable2", "--noheader", *args]).stdout

    def _batch(self, commands: Sequence[Sequence[str]]) -> bool:
        """Run sacctmgr commands in order, up to ``BATCH_MAX`` in one ``sacctmgr -i`` process (on its
        stdin; one alone as arguments). sacctmgr runs every line even after one fails, prints each
        line's output after an echo of it, and exits 1 when any failed or found nothing to do; its
        errors on stderr name what failed ("This account 'x' doesn't exist."). True when a command
        found nothing to do ("Nothing new added.", "Nothing modified" ...)."""
        nothing = False
        for start in range(0, len(commands), BATCH_MAX):
            part = commands[start : start + BATCH_MAX]
            if len(part) == 1:
                result = self._run(["sacctmgr", "-i", *part[0]])
            else:
                label = "sacctmgr " + "; ".join(" ".join(c[:3]) for c in part)
                lines = "".join(stdin_line(c) + "\n" for c in part)
                result = self._run(["sacctmgr", "-i"], stdin=lines, label=label[:300])
            nothing = nothing or any(text in result.stdout for text in NOTHING)
        return nothing

    def _run(self, argv: list[str], *, stdin: str | None = None, label: str = "") -> CommandResult:
        command = label or " ".join([a for a in argv if not a.startswith("-")][:3])  # "sacctmgr modify user"
        try:
            result = self.runner.run(argv, stdin=stdin, timeout_s=self.timeout_s, env=self.env)
        except CommandTimeout as exc:
            raise SlurmUnavailable(
                f"{argv[0]} did not answer within {self.timeout_s:g} s; Slurm's accounts are unknown for now",
                command=command,
            ) from exc
        except CommandError as exc:
            raise SlurmUnavailable(f"cannot run {argv[0]}: {exc}", command=command) from exc
        stderr, stdout = result.stderr.strip(), result.stdout.strip()
        if UNAVAILABLE.search(stderr):
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
