"""Reading what a run's jobs wrote, through the run host, with the job's OS user's permissions.

``LogService.read`` serves ``GET /runs/{id}/logs`` and ``gw logs``: the
tail of stdout/stderr, or a chunk from a byte offset (follow). ``JobFiles``
is what the other services use (the retry service reads a failed job's steps
file and stderr tail). Every read goes through the run host as the OS user
the job ran as, so a log path pointed at a file that user may not read gives
back nothing of it; only regular files are read, never under /proc, /sys or
/dev, at most ``MAX_CHUNK_BYTES`` per call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gateway.adapters.runhost import FileRead, RunHost
from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.runs.steps import steps_file_name
from gateway.core.runs.values import Attempt, Run
from gateway.core.sbatch.log_paths import Stream, array_indices, default_task, failed_task, log_path
from gateway.core.sbatch.values import compress_indices
from gateway.errors import NotFound, RunHostError
from gateway.store.access.access import AccessStore
from gateway.store.runs.runs import RunStore

MAX_CHUNK_BYTES = 1 << 20  # one log read
STEPS_MAX_BYTES = 1 << 20  # a steps file is a few lines; more is not read
STDERR_TAIL_BYTES = 8 * 1024  # what a diagnosis reads of stderr


@dataclass(frozen=True)
class LogChunk:
    run_id: str
    attempt: int
    job_id: str | None
    task: str | None
    stream: Stream
    path: str
    exists: bool
    size_bytes: int
    offset_bytes: int  # where ``text`` starts in the file
    next_offset_bytes: int  # pass back as ``offset_bytes`` to follow
    text: str
    problem: str | None = None  # why nothing was read (not a regular file, permission denied ...)
    array_tasks: str | None = None  # an array's task indices ("0-2,5"), the one shown being ``task``
    expired: str | None = None  # "files expired on DATE by rule R": a retention sweep deleted it


class JobFiles:
    """The files a run's jobs wrote, read on the run host as the OS user the jobs ran as."""

    def __init__(self, host: RunHost, access: AccessStore) -> None:
        self.host = host
        self.access = access

    def job_user(self, run_id: str, os_user: str | None, submitter: str) -> str:
        """The OS user a run's jobs ran as: as recorded at submission, else (runs from before the
        gateway recorded it) the submitter's mapping now. NotFound when neither names one."""
        if os_user:
            return os_user
        try:
            mapped = self.access.user(submitter).os_user
        except NotFound:
            mapped = None
        if not mapped:
            raise NotFound(f"run {run_id} has no OS user to read its files as ({submitter} maps to none)")
        return mapped

    def with_job_user(self, run: Run) -> Run:
        """``run`` with ``os_user`` filled (see ``job_user``)."""
        if run.os_user:
            return run
        return replace(run, os_user=self.job_user(run.id, run.os_user, run.submitter))

    def read(
        self,
        run: Run,
        path: str,
        *,
        max_bytes: int,
        offset_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> FileRead:
        """Part of one file of ``run``'s jobs, as their OS user may read it."""
        run = self.with_job_user(run)
        assert run.os_user is not None
        return self.host.read_file(
            path, as_user=run.os_user, max_bytes=max_bytes, offset_bytes=offset_bytes, tail_lines=tail_lines
        )

    def failure_evidence(self, run: Run, attempt: Attempt) -> tuple[str, str]:
        """(steps file text, stderr tail) of a failed attempt; empty text for what cannot be read."""
        task = failed_task(attempt)
        # An array task writes its steps under its own job id (sacct's JobIDRaw).
        step_job = (attempt.tasks.get(task) or {}).get("job_id") if task is not None else attempt.job_id
        steps_path = f"{run.run_dir}/{steps_file_name(str(step_job or attempt.job_id))}"
        try:
            run = self.with_job_user(run)
            steps = self.read(run, steps_path, max_bytes=STEPS_MAX_BYTES, offset_bytes=0)
            stderr = self.read(run, log_path(run, attempt, "stderr", task), max_bytes=STDERR_TAIL_BYTES)
        except (NotFound, RunHostError):
            return "", ""
        return steps.text(), stderr.text()


class LogService:
    def __init__(
        self, store: RunStore, files: JobFiles, expired: Callable[[str, str, str], str | None] | None = None
    ) -> None:
        self.store = store
        self.files = files
        # (run id, run dir, path) -> "files expired on DATE by rule R", or None (ExpiredFiles.note)
        self.expired = expired

    def read(
        self,
        run_id: str,
        *,
        principal: Principal,
        stream: Stream = "stdout",
        attempt_number: int | None = None,
        task: str | None = None,
        tail_lines: int = 200,
        offset_bytes: int | None = None,
    ) -> LogChunk:
        """The last ``tail_lines`` lines of a stream, or (with ``offset_bytes``) what follows there.

        NotFound for a run the caller may not read, or an attempt it does not have. A file the job's
        user may not read, or that is not a regular file, comes back empty with ``problem`` saying why.
        RunHostUnavailable when the run host does not answer in time.
        """
        run = self.store.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        attempts = {a.number: a for a in run.attempts}
        if not attempts:
            raise NotFound(f"run {run.id} has no attempts")
        number = attempt_number if attempt_number is not None else max(attempts)
        if number not in attempts:
            raise NotFound(f"run {run.id} has no attempt {number}; it has {sorted(attempts)}")
        attempt = attempts[number]
        indices = array_indices(run, attempt)
        task = str(int(task)) if task is not None and task.isdigit() else task  # 007 is task 7
        if indices is None and task is not None:
            raise NotFound(f"run {run.id} is not an array job: it has no task {task}; leave out the task")
        if indices is not None and task is None:
            task = default_task(run, attempt)
        if indices is not None and task not in [str(i) for i in indices]:
            raise NotFound(
                f"run {run.id} attempt {number} has no array task {task}; its tasks are "
                f"{compress_indices(indices)}"
            )
        run = self.files.with_job_user(run)
        path = log_path(run, attempt, stream, task)
        read = self.files.read(
            run, path, max_bytes=MAX_CHUNK_BYTES, offset_bytes=offset_bytes, tail_lines=tail_lines
        )
        expired = self.expired(run.id, run.run_dir, path) if self.expired and not read.exists else None
        return LogChunk(
            run_id=run.id,
            attempt=number,
            job_id=attempt.job_id,
            task=task,
            stream=stream,
            path=path,
            exists=read.exists,
            size_bytes=read.size_bytes,
            offset_bytes=read.offset_bytes,
            next_offset_bytes=read.end_bytes,
            text=read.text(),
            problem=expired or read.error,
            array_tasks=compress_indices(indices) if indices is not None else None,
            expired=expired,
        )
