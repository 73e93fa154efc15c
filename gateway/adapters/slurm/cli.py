"""The Slurm backend over Slurm's command-line tools.

Specs become argv lists (``cli_argv``), output becomes values (``gateway.core.slurm.parse``);
the injected ``CommandRunner`` does the process call, locally or over SSH, and ``cli_outcome``
reads each result (worked, refused, or Slurm did not answer). Values are checked before any
command runs (``cli_checks``).

Besides the quirks ``cli_outcome`` reads: ``squeue --jobs`` with ids that have all left the queue
exits 1 with "Invalid job id specified": that means "none of them is live".

One cluster among several (docs/clusters.md) is reached with ``-M NAME`` on
every command (``cluster``) or with ``SLURM_CONF`` in its environment
(``slurm_conf``); with neither, the commands reach the cluster this host's
Slurm configuration names, as they always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from gateway.adapters.runner import CommandResult, CommandRunner, StartedCommand
from gateway.adapters.slurm.cli_argv import (
    SLURM_ENV,
    TAG_LOOKBACK,
    ended_comments_argv,
    ledger_argv,
    live_comments_argv,
    sacct_argv,
    squeue_argv,
    usage_argv,
)
from gateway.adapters.slurm.cli_checks import (
    check_comment,
    check_job_ids,
    check_mail_user,
    check_names,
    check_submission,
)
from gateway.adapters.slurm.cli_outcome import checked, refused, submitted
from gateway.adapters.slurm.protocol import PreparedSubmit
from gateway.core.accounting.parse import LedgerRead, parse_ledger
from gateway.core.slurm.parse import (
    SQUEUE_FORMAT,
    US,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_squeue,
)
from gateway.core.slurm.records import AccountingRecord, JobStatus, NodeInfo, PartitionInfo
from gateway.core.slurm.tags import slurm_comment, tag_of
from gateway.errors import SlurmError

_INVALID_JOB = "Invalid job id specified"
_ALREADY_DONE = "already completing or completed"


class SlurmCLI:
    """``SlurmBackend`` over sbatch, scancel, squeue, sacct and scontrol."""

    def __init__(
        self,
        runner: CommandRunner,
        *,
        query_timeout_s: float = 30.0,
        submit_timeout_s: float = 60.0,
        cluster: str | None = None,
        slurm_conf: str | None = None,
    ) -> None:
        self.runner = runner
        self.query_timeout_s = query_timeout_s
        self.submit_timeout_s = submit_timeout_s
        self.cluster = cluster  # -M on every command; None: the configured cluster
        self.env = {**SLURM_ENV, "SLURM_CONF": slurm_conf} if slurm_conf else SLURM_ENV

    def _on_cluster(self, argv: list[str]) -> list[str]:
        """``argv`` aimed at this backend's cluster: ``-M NAME`` after the program's name."""
        return [argv[0], f"--clusters={self.cluster}", *argv[1:]] if self.cluster else argv

    # -- the one call path -------------------------------------------------

    def _run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout_s: float | None = None,
        ok_errors: tuple[str, ...] = (),
        as_user: str | None = None,
    ) -> CommandResult:
        timeout = timeout_s or self.query_timeout_s
        argv = self._on_cluster(argv)
        return checked(
            argv,
            timeout,
            lambda: self.runner.run(argv, stdin=stdin, timeout_s=timeout, env=self.env, as_user=as_user),
            ok_errors=ok_errors,
        )

    def prepare_submit(
        self,
        *,
        tag: str,
        as_user: str | None = None,
        exclude_nodes: Sequence[str] = (),
        comment: str | None = None,
        mail_user: str | None = None,
        script_path: str | None = None,
    ) -> PreparedSubmit:
        """``SlurmBackend.prepare_submit``: ``sbatch --parsable --comment=TAG[ COMMENT]`` starts now and
        waits for the script on stdin (``send``); with ``script_path``, sbatch is given that file at
        ``send`` instead (nothing starts before), so that Slurm records it as the job's Command.

        SpecError for a malformed tag, node name, comment or path. ``send``: SubmitRejected when
        sbatch refuses the job or cannot start (nothing was queued); SlurmUnavailable when it does
        not answer within ``submit_timeout_s``; SlurmOutputError when it prints no job id.
        """
        check_submission(tag, exclude_nodes, comment, mail_user, script_path)
        argv = ["sbatch", "--parsable", f"--comment={slurm_comment(tag, comment)}"]
        if mail_user is not None:
            argv.append(f"--mail-user={mail_user}")  # one argv word: sbatch takes it as given, no shell
        if exclude_nodes:
            argv.append(f"--exclude={','.join(exclude_nodes)}")
        argv = self._on_cluster(argv)
        if script_path is not None:
            return _SbatchFile(self, [*argv, script_path], as_user)
        started = self.runner.start(argv, timeout_s=self.submit_timeout_s, env=self.env, as_user=as_user)
        return _Sbatch(self, argv, started)

    def test_only(
        self,
        script: str,
        *,
        as_user: str | None = None,
        comment: str | None = None,
        mail_user: str | None = None,
    ) -> str:
        """``SlurmBackend.test_only`` with ``sbatch --test-only``, the script on stdin: Slurm's answer,
        such as ``Job 394 to start at 2026-12-01T13:50:55 using 1 processors on nodes c1 in
        partition cpu``. SubmitRejected when sbatch refuses the job; SlurmUnavailable when it does
        not answer."""
        check_comment(comment)
        check_mail_user(mail_user)
        argv = ["sbatch", "--test-only", f"--comment={slurm_comment('gw-check', comment)}"]
        if mail_user is not None:
            argv.append(f"--mail-user={mail_user}")
        try:
            result = self._run(argv, stdin=script, timeout_s=self.submit_timeout_s, as_user=as_user)
        except SlurmError as exc:
            raise refused(exc) from exc
        lines = [line.removeprefix("sbatch: ").strip() for line in result.stderr.splitlines()]
        return "\n".join(line for line in lines if line) or result.stdout.strip()

    def cancel(self, job_id: str) -> None:
        """``SlurmBackend.cancel`` with ``scancel``; SpecError for a malformed job id."""
        check_job_ids([job_id])
        self._run(["scancel", job_id], ok_errors=(_ALREADY_DONE,))

    def status(self, job_ids: Sequence[str]) -> list[JobStatus]:
        """``SlurmBackend.status`` with one ``squeue --array --jobs=...``; SpecError for a malformed id."""
        if not job_ids:
            return []
        check_job_ids(job_ids)
        result = self._run(squeue_argv(job_ids), ok_errors=(_INVALID_JOB,))
        if _INVALID_JOB in result.stderr:
            return []
        return parse_squeue(result.stdout)

    def accounting(self, job_ids: Sequence[str]) -> list[AccountingRecord]:
        """``SlurmBackend.accounting`` with one ``sacct`` (``sacct_argv``); SpecError for a malformed id."""
        if not job_ids:
            return []
        check_job_ids(job_ids)
        return parse_sacct(self._run(sacct_argv(job_ids)).stdout)

    def jobs(
        self, *, accounts: Sequence[str] = (), partitions: Sequence[str] = (), users: Sequence[str] = ()
    ) -> list[JobStatus]:
        """Every live job (pending, running, suspended ...) on the cluster, narrowed by the filters."""
        argv = ["squeue", "--noheader", "--array", f"--format={SQUEUE_FORMAT}"]
        for option, values in (("--accounts", accounts), ("--partition", partitions), ("--user", users)):
            if values:
                check_names(values, option)
                argv.append(f"{option}={','.join(values)}")
        return parse_squeue(self._run(argv).stdout)

    def comments(self) -> list[tuple[str, str]]:
        """``SlurmBackend.comments`` with one ``squeue --all --states=all`` (base ids: an array once)."""
        live = self._run(live_comments_argv()).stdout
        found: dict[str, str] = {}
        for line in live.splitlines():
            base, _, comment = line.partition(US)
            found.setdefault(base.strip(), comment.strip())
        return list(found.items())

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """Allocations (no steps) charged to ``accounts`` since ``since``, requeued ones included."""
        if not accounts:
            return []
        check_names(accounts, "--accounts")
        argv = usage_argv(accounts, since)
        return parse_sacct(self._run(argv).stdout)

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """``SlurmLedger.ledger``: every record of the cluster (all users, every requeued attempt,
        all states, steps) that was eligible, running or ended in [start, end), in one ``sacct``.

        Times are UTC (``SLURM_ENV``). SlurmUnavailable when sacct does not answer, SlurmError when
        it fails; lines it cannot read are in ``problems``.
        """
        return parse_ledger(self._run(ledger_argv(start, end)).stdout)

    def find_by_tag(self, tag: str, *, since: datetime | None = None) -> list[str]:
        """``SlurmBackend.find_by_tag``: one ``squeue`` of every live job, one ``sacct`` since ``since``.

        ``since`` defaults to :data:`TAG_LOOKBACK` ago. Base job ids (an array once), in numeric order.
        """
        found: set[str] = set()
        live = self._run(live_comments_argv()).stdout
        for line in live.splitlines():
            base, _, comment = line.partition(US)
            if tag_of(comment) == tag:
                found.add(base.strip())
        start = (since or datetime.now(UTC) - TAG_LOOKBACK).astimezone(UTC)
        done = self._run(ended_comments_argv(start)).stdout
        for line in done.splitlines():
            job, _, comment = line.partition(US)
            if tag_of(comment) == tag:
                found.add(job.strip().split("_")[0])
        return sorted(found, key=int)

    def partitions(self) -> list[PartitionInfo]:
        """``SlurmBackend.partitions`` from ``scontrol show partition``."""
        return parse_partitions(self._run(["scontrol", "show", "partition", "--oneliner"]).stdout)

    def nodes(self) -> list[NodeInfo]:
        """``SlurmBackend.nodes`` from ``scontrol show node``."""
        return parse_nodes(self._run(["scontrol", "show", "node", "--oneliner"]).stdout)


class _Sbatch:
    """An ``sbatch`` started and waiting for its script (``SlurmCLI.prepare_submit``)."""

    def __init__(self, cli: SlurmCLI, argv: list[str], started: StartedCommand) -> None:
        self.cli = cli
        self.argv = argv
        self.started = started

    def send(self, script: str) -> str:
        """``PreparedSubmit.send``: the script on sbatch's stdin; the job id."""
        return submitted(self.argv, self.cli.submit_timeout_s, lambda: self.started.finish(script))

    def abandon(self) -> None:
        """``PreparedSubmit.abandon``: sbatch is killed before it read a script, so it queued nothing."""
        self.started.abandon()


class _SbatchFile:
    """An ``sbatch`` to be given the script's file at ``send`` (``SlurmCLI.prepare_submit`` with a
    ``script_path``): Slurm then records the path as the job's Command, and a job can resubmit it."""

    def __init__(self, cli: SlurmCLI, argv: list[str], as_user: str | None) -> None:
        self.cli = cli
        self.argv = argv
        self.as_user = as_user

    def send(self, script: str) -> str:
        """``PreparedSubmit.send``: sbatch reads the file (which the caller wrote with ``script``, as
        the job's user); the job id."""
        del script  # the file holds it; sbatch reads it there
        cli = self.cli
        return submitted(
            self.argv,
            cli.submit_timeout_s,
            lambda: cli.runner.run(
                self.argv, timeout_s=cli.submit_timeout_s, env=cli.env, as_user=self.as_user
            ),
        )

    def abandon(self) -> None:
        """``PreparedSubmit.abandon``: nothing was started, so nothing is queued."""
