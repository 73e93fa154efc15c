"""The Slurm backend over Slurm's command-line tools.

Specs become argv lists, output becomes values (``gateway.core.slurm.parse``);
the injected ``CommandRunner`` does the process call, locally or over SSH.

Slurm quirks handled here:
- commands can print ``error:`` on stderr and still exit 0; that is an error;
- a time-out or an unreachable controller is ``SlurmUnavailable`` (unknown),
  never a failed job;
- ``squeue --jobs`` with ids that have all left the queue exits 1 with
  "Invalid job id specified": that means "none of them is live";
- ``-M NAME`` of a cluster whose controller is down, or that slurmdbd does not
  know, says "can't be reached now": unknown, as a controller that does not answer.

One cluster among several (docs/clusters.md) is reached with ``-M NAME`` on
every command (``cluster``) or with ``SLURM_CONF`` in its environment
(``slurm_conf``); with neither, the commands reach the cluster this host's
Slurm configuration names, as they always did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from gateway.adapters.runner import CommandResult, CommandRunner, StartedCommand
from gateway.adapters.slurm.protocol import PreparedSubmit
from gateway.core import names
from gateway.core.accounting.parse import LEDGER_FORMAT, LedgerRead, parse_ledger
from gateway.core.slurm.parse import (
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    US,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_sbatch_parsable,
    parse_squeue,
)
from gateway.core.slurm.records import AccountingRecord, JobStatus, NodeInfo, PartitionInfo
from gateway.core.slurm.tags import slurm_comment, tag_of
from gateway.core.spec.slurm_fields import COMMENT, MAIL_USER
from gateway.errors import (
    CommandError,
    CommandTimeout,
    SlurmError,
    SlurmOutputError,
    SlurmUnavailable,
    SpecError,
    SpecIssue,
    SubmitRejected,
)

# Every Slurm command runs with these, so times come back in UTC, ISO-like.
SLURM_ENV = {"TZ": "UTC", "SLURM_TIME_FORMAT": "standard"}

_UNAVAILABLE = re.compile(
    r"Socket timed out|Unable to contact slurm controller|Connection refused"
    r"|Zero Bytes were transmitted|Communication connection failure"
    r"|Problem talking to the database|slurmdbd.{0,40}(down|not responding)"
    r"|Transport endpoint is not connected|can't be reached now",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"(^|:\s)error:", re.IGNORECASE | re.MULTILINE)
# sbatch prints this as an "error:" line while slurmctld is busy, then retries by itself and may
# succeed (exit 0, a job id): the line is a notice, never the outcome (sbatch's _retry_submit).
_RETRY_NOTICE = re.compile(r"^.*temporarily unable to accept job, sleeping and retrying.*$\n?", re.I | re.M)
_INVALID_JOB = "Invalid job id specified"
_ALREADY_DONE = "already completing or completed"
_JOB_ID = re.compile(r"\d+(_\d+)?")
TAG_LOOKBACK = timedelta(days=14)


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
        return self._checked(
            argv,
            timeout,
            lambda: self.runner.run(argv, stdin=stdin, timeout_s=timeout, env=self.env, as_user=as_user),
            ok_errors=ok_errors,
        )

    def _checked(
        self,
        argv: list[str],
        timeout: float,
        call: Callable[[], CommandResult],
        *,
        ok_errors: tuple[str, ...] = (),
    ) -> CommandResult:
        """``call()``'s result when the command worked; its failure as the gateway's error."""
        command = " ".join(argv[:2])
        try:
            result = call()
        except CommandTimeout as exc:
            raise SlurmUnavailable(
                f"{argv[0]} did not answer within {timeout:g} s; job states are unknown until it does",
                command=command,
            ) from exc
        except CommandError as exc:
            raise SlurmUnavailable(f"cannot run {argv[0]}: {exc}", command=command) from exc
        stderr = result.stderr.strip()
        if any(text in stderr for text in ok_errors):
            return result
        if _UNAVAILABLE.search(stderr):
            raise SlurmUnavailable(
                f"{argv[0]}: Slurm did not answer: {stderr}", command=command, stderr=stderr
            )
        if result.returncode != 0:
            detail = stderr or result.stdout.strip() or "no message"
            raise SlurmError(
                f"{argv[0]} failed with exit status {result.returncode}: {detail}",
                command=command,
                stderr=stderr,
            )
        if _ERROR_LINE.search(_RETRY_NOTICE.sub("", stderr)):
            # Slurm exits 0 on some failures; an error line on stderr wins.
            raise SlurmError(
                f"{argv[0]} reported an error (exit status 0): {stderr}", command=command, stderr=stderr
            )
        return result

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

    def _submitted(self, argv: list[str], call: Callable[[], CommandResult]) -> str:
        """The job id sbatch (``call``) printed; raises as ``_Sbatch.send``."""
        try:
            result = self._checked(argv, self.submit_timeout_s, call)
        except SlurmUnavailable as exc:
            cause = exc.__cause__
            if isinstance(cause, CommandError) and not isinstance(cause, CommandTimeout):
                # sbatch never started, so nothing can have been queued
                raise SubmitRejected(f"could not run sbatch: {cause}", command="sbatch") from exc
            raise
        except SlurmError as exc:
            message = exc.stderr or str(exc)
            message = message.replace("sbatch: error: ", "").strip()
            raise SubmitRejected(
                f"Slurm refused the job: {message}", command="sbatch", stderr=exc.stderr
            ) from exc
        job_id = parse_sbatch_parsable(result.stdout)
        if job_id is None:
            raise SlurmOutputError(
                f"sbatch printed no job id: stdout {result.stdout.strip()!r}, "
                f"stderr {result.stderr.strip()!r}",
                command="sbatch",
                stderr=result.stderr,
            )
        return job_id

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
        _check_comment(comment)
        _check_mail_user(mail_user)
        argv = ["sbatch", "--test-only", f"--comment={slurm_comment('gw-check', comment)}"]
        if mail_user is not None:
            argv.append(f"--mail-user={mail_user}")
        try:
            result = self._run(argv, stdin=script, timeout_s=self.submit_timeout_s, as_user=as_user)
        except SlurmError as exc:
            message = (exc.stderr or str(exc)).replace("sbatch: error: ", "").strip()
            raise SubmitRejected(
                f"Slurm refused the job: {message}", command="sbatch", stderr=exc.stderr
            ) from exc
        lines = [line.removeprefix("sbatch: ").strip() for line in result.stderr.splitlines()]
        return "\n".join(line for line in lines if line) or result.stdout.strip()

    def cancel(self, job_id: str) -> None:
        """``SlurmBackend.cancel`` with ``scancel``; SpecError for a malformed job id."""
        _check_job_ids([job_id])
        self._run(["scancel", job_id], ok_errors=(_ALREADY_DONE,))

    def status(self, job_ids: Sequence[str]) -> list[JobStatus]:
        """``SlurmBackend.status`` with one ``squeue --array --jobs=...``; SpecError for a malformed id."""
        if not job_ids:
            return []
        _check_job_ids(job_ids)
        result = self._run(squeue_argv(job_ids), ok_errors=(_INVALID_JOB,))
        if _INVALID_JOB in result.stderr:
            return []
        return parse_squeue(result.stdout)

    def accounting(self, job_ids: Sequence[str]) -> list[AccountingRecord]:
        """``SlurmBackend.accounting`` with one ``sacct`` (``sacct_argv``); SpecError for a malformed id."""
        if not job_ids:
            return []
        _check_job_ids(job_ids)
        return parse_sacct(self._run(sacct_argv(job_ids)).stdout)

    def jobs(
        self, *, accounts: Sequence[str] = (), partitions: Sequence[str] = (), users: Sequence[str] = ()
    ) -> list[JobStatus]:
        """Every live job (pending, running, suspended ...) on the cluster, narrowed by the filters."""
        argv = ["squeue", "--noheader", "--array", f"--format={SQUEUE_FORMAT}"]
        for option, values in (("--accounts", accounts), ("--partition", partitions), ("--user", users)):
            if values:
                _check_names(values, option)
                argv.append(f"{option}={','.join(values)}")
        return parse_squeue(self._run(argv).stdout)

    def comments(self) -> list[tuple[str, str]]:
        """``SlurmBackend.comments`` with one ``squeue --all --states=all`` (base ids: an array once)."""
        live = self._run(["squeue", "--noheader", "--all", "--states=all", f"--format=%F{US}%k"]).stdout
        found: dict[str, str] = {}
        for line in live.splitlines():
            base, _, comment = line.partition(US)
            found.setdefault(base.strip(), comment.strip())
        return list(found.items())

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """Allocations (no steps) charged to ``accounts`` since ``since``, requeued ones included."""
        if not accounts:
            return []
        _check_names(accounts, "--accounts")
        argv = [
            "sacct",
            "--noheader",
            "--parsable2",
            f"--delimiter={US}",
            "--allocations",
            "--duplicates",
            "--allusers",
            "--units=K",
            f"--accounts={','.join(accounts)}",
            f"--starttime={since.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
            "--endtime=now",
            f"--format={SACCT_FORMAT}",
        ]
        return parse_sacct(self._run(argv).stdout)

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """``SlurmLedger.ledger``: every record of the cluster (all users, every requeued attempt,
        all states, steps) that was eligible, running or ended in [start, end), in one ``sacct``.

        Times are UTC (``SLURM_ENV``). SlurmUnavailable when sacct does not answer, SlurmError when
        it fails; lines it cannot read are in ``problems``.
        """
        argv = [
            "sacct",
            "--noheader",
            "--parsable2",
            f"--delimiter={US}",
            "--allusers",
            "--duplicates",
            "--units=K",
            f"--starttime={start.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
            f"--endtime={end.astimezone(UTC):%Y-%m-%dT%H:%M:%S}",
            f"--format={LEDGER_FORMAT}",
        ]
        return parse_ledger(self._run(argv).stdout)

    def find_by_tag(self, tag: str, *, since: datetime | None = None) -> list[str]:
        """``SlurmBackend.find_by_tag``: one ``squeue`` of every live job, one ``sacct`` since ``since``.

        ``since`` defaults to :data:`TAG_LOOKBACK` ago. Base job ids (an array once), in numeric order.
        """
        found: set[str] = set()
        live = self._run(["squeue", "--noheader", "--all", "--states=all", f"--format=%F{US}%k"]).stdout
        for line in live.splitlines():
            base, _, comment = line.partition(US)
            if tag_of(comment) == tag:
                found.add(base.strip())
        start = (since or datetime.now(UTC) - TAG_LOOKBACK).astimezone(UTC)
        done = self._run(
            [
                "sacct",
                "--noheader",
                "--parsable2",
                f"--delimiter={US}",
                "--allusers",
                "--allocations",
                "--duplicates",
                f"--starttime={start:%Y-%m-%dT%H:%M:%S}",
                "--format=JobID,Comment",
            ]
        ).stdout
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


def squeue_argv(job_ids: Sequence[str]) -> list[str]:
    """The one squeue command a refresh runs for live jobs (array tasks one by one)."""
    return ["squeue", "--noheader", "--array", f"--format={SQUEUE_FORMAT}", f"--jobs={','.join(job_ids)}"]


def sacct_argv(job_ids: Sequence[str]) -> list[str]:
    """The one sacct command a refresh runs for jobs that left the queue (requeues included)."""
    return [
        "sacct",
        "--noheader",
        "--parsable2",
        f"--delimiter={US}",
        "--duplicates",
        "--allusers",
        "--units=K",
        f"--format={SACCT_FORMAT}",
        f"--jobs={','.join(job_ids)}",
    ]


def _check_names(values: Sequence[str], option: str) -> None:
    bad = [v for v in values if not names.NAME.fullmatch(v)]
    if bad:
        raise SpecError([SpecIssue(option, f"not a valid Slurm name; use {names.NAME_HELP}", bad[0])])


def _check_job_ids(job_ids: Sequence[str]) -> None:
    bad = [j for j in job_ids if not _JOB_ID.fullmatch(j)]
    if bad:
        raise SpecError([SpecIssue("job_id", "not a Slurm job id (digits, or digits_digits)", bad[0])])


def check_submission(
    tag: str,
    exclude_nodes: Sequence[str],
    comment: str | None,
    mail_user: str | None = None,
    script_path: str | None = None,
) -> None:
    """What every backend refuses before submitting: a malformed tag, node name, comment, mail user
    or script path (SpecError)."""
    if script_path is not None and not names.SAFE_PATH.fullmatch(script_path):
        raise SpecError([SpecIssue("script_path", names.SAFE_PATH_HELP, script_path)])
    if not names.TAG.fullmatch(tag):
        raise SpecError([SpecIssue("tag", f"not a valid submission tag; use {names.TAG_HELP}", tag)])
    if exclude_nodes:
        _check_names(exclude_nodes, "--exclude")
    _check_comment(comment)
    _check_mail_user(mail_user)


def _check_mail_user(mail_user: str | None) -> None:
    if mail_user is not None and not MAIL_USER.fullmatch(mail_user):
        raise SpecError([SpecIssue("mail_user", "must be one line of 1-1024 characters", mail_user)])


def _check_comment(comment: str | None) -> None:
    if comment is not None and not COMMENT.fullmatch(comment):
        raise SpecError([SpecIssue("comment", "must be one line of at most 1024 characters", comment)])


class _Sbatch:
    """An ``sbatch`` started and waiting for its script (``SlurmCLI.prepare_submit``)."""

    def __init__(self, cli: SlurmCLI, argv: list[str], started: StartedCommand) -> None:
        self.cli = cli
        self.argv = argv
        self.started = started

    def send(self, script: str) -> str:
        """``PreparedSubmit.send``: the script on sbatch's stdin; the job id."""
        return self.cli._submitted(self.argv, lambda: self.started.finish(script))

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
        return cli._submitted(
            self.argv,
            lambda: cli.runner.run(
                self.argv, timeout_s=cli.submit_timeout_s, env=cli.env, as_user=self.as_user
            ),
        )

    def abandon(self) -> None:
        """``PreparedSubmit.abandon``: nothing was started, so nothing is queued."""
