"""What a Slurm command's result means: worked, refused, or Slurm did not answer.

Slurm quirks read here:
- commands can print ``error:`` on stderr and still exit 0; that is an error;
- a time-out or an unreachable controller is ``SlurmUnavailable`` (unknown),
  never a failed job;
- ``-M NAME`` of a cluster whose controller is down, or that slurmdbd does not
  know, says "can't be reached now": unknown, as a controller that does not answer;
- sbatch's "temporarily unable to accept job, sleeping and retrying" is a notice, not the outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.adapters.runner import CommandResult
from gateway.core.slurm.parse import parse_sbatch_parsable
from gateway.errors import (
    CommandError,
    CommandTimeout,
    SlurmError,
    SlurmOutputError,
    SlurmUnavailable,
    SubmitRejected,
)

UNAVAILABLE = re.compile(
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


def checked(
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
    if UNAVAILABLE.search(stderr):
        raise SlurmUnavailable(f"{argv[0]}: Slurm did not answer: {stderr}", command=command, stderr=stderr)
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


def refused(exc: SlurmError) -> SubmitRejected:
    """sbatch's failure as the job refused, in Slurm's words without sbatch's prefix."""
    message = (exc.stderr or str(exc)).replace("sbatch: error: ", "").strip()
    return SubmitRejected(f"Slurm refused the job: {message}", command="sbatch", stderr=exc.stderr)


def submitted(argv: list[str], timeout_s: float, call: Callable[[], CommandResult]) -> str:
    """The job id sbatch (``call``) printed.

    SubmitRejected when sbatch refuses the job or cannot start (nothing was queued);
    SlurmUnavailable when it does not answer within ``timeout_s``; SlurmOutputError when it
    prints no job id.
    """
    try:
        result = checked(argv, timeout_s, call)
    except SlurmUnavailable as exc:
        cause = exc.__cause__
        if isinstance(cause, CommandError) and not isinstance(cause, CommandTimeout):
            # sbatch never started, so nothing can have been queued
            raise SubmitRejected(f"could not run sbatch: {cause}", command="sbatch") from exc
        raise
    except SlurmError as exc:
        raise refused(exc) from exc
    job_id = parse_sbatch_parsable(result.stdout)
    if job_id is None:
        raise SlurmOutputError(
            f"sbatch printed no job id: stdout {result.stdout.strip()!r}, stderr {result.stderr.strip()!r}",
            command="sbatch",
            stderr=result.stderr,
        )
    return job_id
