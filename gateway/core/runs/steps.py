"""The steps file a job writes, its exit codes, and reading it back (no I/O).

Before the user's command, every rendered script checks its inputs (dataset
paths and digests), its environment (container image, modules, venv) and its
outputs (the run directory is writable). Each step appends one JSON line to
``$GW_RUN_DIR/steps-$SLURM_JOB_ID.jsonl`` (for an array task, the task's own
job id, sacct's ``JobIDRaw``)::

    {"step": "inputs", "status": "ok", "detail": "checked 2 dataset paths", "at": 1718000000}
    {"step": "environment", "status": "failed", "detail": "venv has no bin/activate: /opt/venv", "at": ...}

Steps are ``inputs``, ``environment``, ``outputs`` and ``user_command``;
statuses ``ok``, ``failed`` and ``started``. ``user_command`` writes
``started`` before the command and, when the script ends, ``ok``/``failed``
with ``"detail": "exit N"``, or ``failed`` with ``"killed by a signal while
running"`` when Slurm's SIGTERM ends the batch shell (scancel, time limit);
a SIGKILL leaves no end line. A failed pre-flight step ends the job with its
exit code below, before the user's command starts.

Not to be confused with ``slurm_records.StepRecord``, a Slurm job step from
sacct: ``StepRecord`` here is one line of the steps file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

EXIT_DATA_ACCESS = 80  # a dataset path is missing, unreadable, or its digest does not match
EXIT_ENVIRONMENT = 81  # container image, container runtime, module or venv not usable
EXIT_OUTPUT = 82  # the run directory cannot be written

STEPS = ("inputs", "environment", "outputs", "user_command")
STATUSES = ("ok", "failed", "started")

_EXIT_DETAIL = re.compile(r"exit (\d+)")


@dataclass(frozen=True)
class StepRecord:
    """One line of a job's steps file."""

    step: str  # inputs | environment | outputs | user_command
    status: str  # ok | failed | started
    detail: str
    at: int | None  # epoch seconds, as the job's clock had it

    @property
    def exit_code(self) -> int | None:
        """The user command's exit code, from an ended ``user_command`` line ("exit N")."""
        if self.step != "user_command":
            return None
        match = _EXIT_DETAIL.fullmatch(self.detail)
        return int(match.group(1)) if match else None


def steps_file_name(job_id: str) -> str:
    """Name of the steps file in the run directory (``job_id``: the numeric id, JobIDRaw for a task)."""
    return f"steps-{job_id}.jsonl"


def parse_steps(text: str) -> list[StepRecord]:
    """Read a steps file, in order. Garbage lines and a truncated last line are skipped."""
    records = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        step, status, detail, at = (data.get(k) for k in ("step", "status", "detail", "at"))
        if step not in STEPS or status not in STATUSES:
            continue
        records.append(
            StepRecord(
                step=step,
                status=status,
                detail=detail if isinstance(detail, str) else "",
                at=at if isinstance(at, int) and not isinstance(at, bool) else None,
            )
        )
    return records


def failed_step(steps: Iterable[StepRecord]) -> StepRecord | None:
    """The first step that reported ``failed`` (a pre-flight step, or the user command), else None."""
    return next((s for s in steps if s.status == "failed"), None)


def command_started(steps: Iterable[StepRecord]) -> bool:
    """Whether the user's command was started (so a job's exit code is the command's own)."""
    return any(s.step == "user_command" and s.status == "started" for s in steps)
