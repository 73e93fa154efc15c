"""The gateway's error tree.

Every error the gateway raises on purpose is a ``GatewayError``; adapters
re-raise outside errors as one of these ``from`` the original. Only the
interfaces (API, CLI) map these classes to HTTP statuses or exit codes.

    GatewayError
     ├── SpecError            a run spec (or a value bound for a script) is invalid
     ├── TemplateError        an sbatch template is missing or does not render
     ├── BadRequest           the request itself is malformed (a header that must be single sent twice)
     ├── Unauthorized         no valid credentials (missing, unknown, expired or revoked token)
     ├── Throttled            too many failed sign-ins from this address or for this account: wait
     ├── Forbidden            the caller may not do this (their role does not allow it)
     ├── NotFound             no such run (or attempt, log file ...), or not visible to the caller
     ├── QuotaExceeded        the run can never fit the project's or user's caps
     ├── Conflict             the object is in a state where the action cannot be taken now
     ├── BatchRejected        a batch sent all-or-none had items that would be refused: none was recorded
     ├── StoreError           the gateway's database refused a write or a read
     │    └── StoreUnavailable    the database cannot be reached right now
     ├── AnchorError          the audit anchor file (checkpoints outside the database) cannot be written
     ├── HandoffError         an MLflow server or webhook endpoint refused a hand-off or did not answer
     ├── CommandError         the command runner could not run a program at all
     │    └── CommandTimeout  the program ran past its time limit
     ├── RunHostError         the machine where jobs run refused a file operation (run directory ...)
     │    └── RunHostUnavailable  it did not answer in time; nothing is known to have happened
     └── SlurmError           Slurm answered with an error (message kept)
          ├── SlurmUnavailable    Slurm did not answer (time-out, controller down):
          │                       the state of a job is *unknown*, never failed
          ├── SubmitRejected      sbatch refused the job (bad partition, limits ...)
          └── SlurmOutputError    Slurm's output could not be read
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field


class GatewayError(Exception):
    """Root of every error the gateway raises on purpose."""


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a spec: where (dotted path), what was given, what is valid."""

    path: str
    message: str
    value: object = None

    def __str__(self) -> str:
        where = self.path or "(spec)"
        shown = _short(self.value)
        return f"{where}: {self.message}" + (f" (got {shown})" if shown else "")


_REPR = reprlib.Repr()  # bounded: a value nested 100k deep or a million items long prints in microseconds
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 80, 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 20


def _short(value: object, limit: int = 80) -> str:
    if value is None:
        return ""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - e.g. an int of more digits than Python prints: say what it is
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class SpecError(GatewayError):
    """A run spec, or a value bound for an sbatch script, is not valid."""

    issues: list[SpecIssue] = field(default_factory=list)
    source: str | None = None
    location: str = "body"  # where the issues' paths point in a request: body, query, header
    what: str = "run spec"  # what was invalid, for the message: run spec, site file, sbatch options

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"invalid {self.what}{f' in {self.source}' if self.source else ''}"
        return head + ":\n" + "\n".join(f"  - {issue}" for issue in self.issues)


class TemplateError(GatewayError):
    """An sbatch template is missing, or fails to render."""


class BadRequest(GatewayError):
    """The request itself is malformed in a way no field path names (a header sent twice)."""


class Unauthorized(GatewayError):
    """No valid credentials came with the request."""


class Throttled(GatewayError):
    """Too many failed sign-ins lately from this address or for this account; ``retry_after_s`` to wait."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Forbidden(GatewayError):
    """The caller is known but their role does not allow this action."""


class QuotaExceeded(GatewayError):
    """The run asks for more than a cap allows, so it could never start."""


class NotFound(GatewayError):
    """The named object does not exist (or is not visible to the caller)."""


class Conflict(GatewayError):
    """The object is in a state where this action cannot be taken now."""


class BatchRejected(GatewayError):
    """A batch of runs sent all-or-none (``POST /runs/batch`` without ``partial``) had items that would
    be refused: none of them was recorded or submitted. ``items`` pairs each refused item's index
    with its error; the other items were fine."""

    def __init__(self, items: list[tuple[int, GatewayError]], total: int) -> None:
        self.items = items
        self.total = total
        first_index, first = items[0]
        super().__init__(
            f"{len(items)} of {total} runs in the batch would be refused, so none was submitted "
            f"(the first, item {first_index}: {first}); fix them, drop them, or send the batch with "
            "partial: true to submit the others"
        )


class StoreError(GatewayError):
    """The gateway's database refused an operation; nothing was half-written."""


class StoreUnavailable(StoreError):
    """The gateway's database cannot be reached right now; try again shortly."""


class AnchorError(GatewayError):
    """The audit anchor file on the gateway host cannot be created, written or moved (the OS's reason)."""


class HandoffError(GatewayError):
    """An MLflow server or a webhook endpoint refused a hand-off or did not answer (the outbox retries)."""


class CommandError(GatewayError):
    """The command runner could not start a program (missing binary, no access)."""


class CommandTimeout(CommandError):
    """A program ran past its time limit and was stopped."""


class RunHostError(GatewayError):
    """The machine where jobs run refused or failed a file operation (message says which and why)."""


class RunHostUnavailable(RunHostError):
    """The machine where jobs run did not answer in time; try again shortly."""


class SlurmError(GatewayError):
    """Slurm answered a command with an error; the message is kept verbatim."""

    def __init__(self, message: str, *, command: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.command = command
        self.stderr = stderr


class SlurmUnavailable(SlurmError):
    """Slurm did not answer (time-out, controller unreachable): state is unknown."""


class SubmitRejected(SlurmError):
    """sbatch refused the job; nothing was queued."""


class SlurmOutputError(SlurmError):
    """Slurm's output did not have the expected shape."""
